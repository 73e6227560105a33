//! One run of the main command: `run` prepares it (nothing is sent on a usage error),
//! executes it and finishes it; `attempt` is the attempt loop, which asks `policy` what
//! to do after each attempt; `delivery` gets a body to its destination; `explain` prints
//! the policy instead of sending; `write_out` formats `-w`.

pub mod attempt;
pub mod delivery;
pub mod explain;
pub mod run;
pub mod write_out;
