//! Entry point: run, then turn the outcome into the process exit status.

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let start = Instant::now();
    retry_http::process::interrupt::clean_up_on_panic();
    let outcome = retry_http::run_from(std::env::args_os(), start);
    // Large spools are freed by a detached child after the exit, not by this process.
    retry_http::process::release::release_at_exit();
    ExitCode::from(outcome.code())
}
