//! One URL's run. `prepare` holds the [`Request`] value and the checks and reads that build
//! it from the frozen configuration (nothing is sent on a usage error); `run` performs it
//! with what the session lends it: admission through `--state`, then `attempt`, the attempt
//! loop, which asks `policy` what to do after each attempt; `delivery` gets a body to its
//! destination; `ending` writes what the end of a request writes (`-D`, `--etag-save`,
//! `-w`); `write_out` formats `-w`; `explain` prints the policy instead of sending; `cron`
//! reads the files the cron flags name (the -o file to resume, the ETag, -z's file,
//! cookies) and saves the ETag.

pub mod attempt;
pub mod cron;
pub mod delivery;
pub mod ending;
pub mod explain;
pub mod leftover;
pub mod prepare;
pub mod run;
pub mod write_out;

pub use prepare::{Lent, Request};
