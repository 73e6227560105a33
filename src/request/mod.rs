//! One run of the main command: `run` prepares it (nothing is sent on a usage error),
//! executes it and finishes it; `attempt` is the attempt loop, which asks `policy` what
//! to do after each attempt; `delivery` gets a body to its destination; `explain` prints
//! the policy instead of sending; `write_out` formats `-w`; `cron` reads the files the cron
//! flags name (the -o file to resume, the ETag, -z's file, cookies) and saves the ETag.

pub mod attempt;
pub mod cron;
pub mod delivery;
pub mod explain;
pub mod leftover;
pub mod run;
pub mod write_out;
