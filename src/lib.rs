//! retry-http: an HTTP client for scripts, cron jobs and CI that retries transient
//! failures without making an outage worse. This file wires the modules together:
//! flags -> configuration -> attempt loop (policy + transport) -> output/report -> outcome.

pub mod cli;
pub mod config;
pub mod demo;
pub mod exit;
pub mod files;
pub mod fleet;
pub mod http;
pub mod output;
pub mod policy;
pub mod process;
pub mod report;
pub mod request;
pub mod units;

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
        Err(e) => return cli::usage::clap_error(&e, &args, start),
    };
    match cli.command {
        Some(cli::Command::Demo) => demo::run(start),
        Some(cli::Command::Simulate(args)) => fleet::simulate::command::run(&args),
        None => request::run::request(&cli.request, start),
    }
}
