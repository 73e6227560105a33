//! One run of the main command: `run` prepares it (nothing is sent on a usage error),
//! executes it and finishes it. `attempt` is the attempt loop, which asks
//! `policy::decision` what to do after each attempt and performs the verdict, with `answer`
//! (sending, classifying the answer's head, delivering a success), `line` (the attempt's
//! log line) and `pause` (the waits between attempts); `carrier` is the trait the loop and
//! the delivery reach the transport through (a scripted one, `scripted`, in unit tests).
//! `delivery` gets a body to its destination; `leftover` keeps a broken download's bytes
//! for the next run under `-C -`; `explain` prints the policy instead of sending;
//! `write_out` formats `-w`; `cron` reads the files the cron flags name (the -o file to
//! resume, the ETag, -z's file, cookies) and saves the ETag.

mod answer;
pub mod attempt;
pub mod carrier;
pub mod cron;
pub mod delivery;
pub mod explain;
pub mod leftover;
mod line;
#[cfg(test)]
mod loop_tests;
mod pause;
pub mod run;
#[cfg(test)]
mod scripted;
pub mod write_out;
