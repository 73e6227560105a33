//! retry-http: an HTTP client for scripts, cron jobs and CI that retries transient
//! failures without making an outage worse. This file wires the modules together:
//! flags -> configuration -> attempt loop (policy + transport) -> output/report -> outcome.

pub mod attempt;
pub mod body;
pub mod cli;
pub mod config;
pub mod deadline;
pub mod delivery;
pub mod demo;
pub mod exit;
pub mod explain;
pub mod interrupt;
pub mod output;
pub mod policy;
pub mod proxy;
pub mod redact;
pub mod release;
pub mod report;
pub mod resume;
pub mod retry_after;
pub mod run;
pub mod scripted;
pub mod shared;
pub mod simulate;
pub mod simulate_report;
pub mod state;
pub mod transport;
pub mod usage;
pub mod values;
pub mod write_out;

use clap::Parser;
use exit::Outcome;
use std::ffi::OsString;
use std::time::Instant;

/// Parses `args` (program name first) and runs the command; `start` is when the process
/// started, from which `--deadline` counts. Returns the outcome that sets the exit status.
pub fn run_from(args: impl IntoIterator<Item = OsString>, start: Instant) -> Outcome {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match cli::Cli::try_parse_from(args.iter().cloned()) {
        Ok(c) => c,
        Err(e) => return usage::clap_error(&e, &args, start),
    };
    match cli.command {
        Some(cli::Command::Demo) => demo::run(start),
        Some(cli::Command::Simulate(args)) => simulate_report::run(&args),
        None => run::request(&cli.request, start),
    }
}
