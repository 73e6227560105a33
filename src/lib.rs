//! retry-http: an HTTP client for scripts, cron jobs and CI that retries transient
//! failures without making an outage worse. This file wires the modules together:
//! flags -> configuration -> attempt loop (policy + transport) -> output/report -> outcome.

pub mod attempt;
pub mod body;
pub mod cli;
pub mod config;
pub mod delivery;
pub mod demo;
pub mod exit;
pub mod explain;
pub mod interrupt;
pub mod output;
pub mod policy;
pub mod proxy;
pub mod redact;
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
pub mod values;
pub mod write_out;

use clap::Parser;
use exit::Outcome;
use std::ffi::OsString;
use std::time::Instant;

/// Parses `args` (program name first) and runs the command; `start` is when the process
/// started, from which `--deadline` counts. Returns the outcome that sets the exit status.
pub fn run_from(args: impl IntoIterator<Item = OsString>, start: Instant) -> Outcome {
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return clap_error(&e),
    };
    match cli.command {
        Some(cli::Command::Demo) => demo::run(start),
        Some(cli::Command::Simulate(args)) => simulate_report::run(&args),
        None => run::request(&cli.request, start),
    }
}

/// Help and version go to stdout with exit 0; anything else is one usage line (exit 2).
fn clap_error(e: &clap::Error) -> Outcome {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return Outcome::Success;
    }
    let mut text = e.to_string();
    // clap quotes the rejected value: a header's secret must not be printed.
    if let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) && arg.starts_with("--header")
    {
        text = text.replace(value.as_str(), &redact::header_arg(value));
    }
    // clap writes paragraphs: the error, an optional tip, usage, a pointer to --help.
    let mut paragraphs = text.split("\n\n");
    let first = paragraphs.next().unwrap_or("invalid command line");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // A value may itself hold CR or LF; keep the message on one line.
    // clap breaks its own lines with an indent; join those. A value holding CR or LF is
    // escaped, so the message stays on one line.
    let first = first
        .replace("\n  ", " ")
        .replace('\r', "\\r")
        .replace('\n', "\\n");
    let first = match env_source(e) {
        Some(var) => format!("{first} (the value comes from ${var})"),
        None => first,
    };
    let tip = paragraphs.map(str::trim).find(|p| p.starts_with("tip:"));
    match tip {
        Some(tip) => eprintln!("retry-http: error: {first} ({tip}); see --help"),
        None => eprintln!("retry-http: error: {first}; see --help"),
    }
    Outcome::Usage
}

/// The `RETRY_HTTP_*` variable a bad value came from, if it came from one.
fn env_source(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) else {
        return None;
    };
    let flag = arg.strip_prefix("--")?.split([' ', '=']).next()?;
    let var = format!("RETRY_HTTP_{}", flag.to_ascii_uppercase().replace('-', "_"));
    (std::env::var(&var).ok().as_deref() == Some(value.as_str())).then_some(var)
}
