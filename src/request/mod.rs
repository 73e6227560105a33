//! One URL's run. `prepare` holds the [`Request`] value and the checks and reads that build
//! it from the frozen configuration (nothing is sent on a usage error); `run` performs it
//! with what the session lends it: the wait of `--splay`, admission through `--state`, then
//! `attempt`, the attempt loop, which asks `policy::decision` what to do after each attempt
//! and performs the verdict (its state between attempts is `carry`'s, in one place), with
//! `answer` (sending, classifying the answer's head, delivering a success),
//! `line` (the attempt's log line), `pause` (the waits before a send, as the run's
//! `gate::Gate` says them) and `countdown` (sleeping visibly); `http::carrier` is
//! the trait the loop and the delivery reach the transport through (a scripted one,
//! `scripted`, in unit tests). `delivery` gets a body to its destination; `leftover` keeps
//! a broken download's bytes for the next run under `-C -`; `ending` holds what a run came
//! to (`Ended`, which the session sums up) and writes what the end of a request writes
//! (`-D`, `--etag-save`, `-w`); `write_out` formats `-w`; `explain` prints
//! the policy instead of sending; `job` is the request's job and the Idempotency-Key
//! `--state` keeps for it; `prior` reads the files the conditional flags name (the -o
//! file to resume, the ETag, -z's file, cookies) and saves the ETag.

mod answer;
pub mod attempt;
mod carry;
#[cfg(test)]
mod clock_tests;
mod countdown;
pub mod delivery;
pub mod ending;
pub mod explain;
pub mod job;
pub mod leftover;
mod line;
#[cfg(test)]
mod loop_tests;
mod pause;
pub mod prepare;
pub mod prior;
pub mod run;
#[cfg(test)]
mod scripted;
pub mod shared_files;
pub mod write_out;

pub use prepare::{Lent, Request};
