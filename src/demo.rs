//! `retry-http demo`: a loopback server that fails a few times (503 with Retry-After, 429,
//! a reset) and then answers, with the real client run against it, so a newcomer sees the
//! per-attempt log and the exit code with nothing else installed.

use crate::exit::Outcome;
use crate::scripted::{Server, Step};
use std::time::Instant;

/// Runs the demo and returns the client's outcome.
pub fn run(start: Instant) -> Outcome {
    let script = vec![
        Step::with_header(503, "Retry-After", "1"),
        Step::status(429, ""),
        Step::Reset,
        Step::status(
            200,
            "{\"status\":\"ok\",\"message\":\"hello from the demo server\"}\n",
        ),
    ];
    let server = match Server::start(script) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("retry-http: error: cannot start the demo server on 127.0.0.1: {e}");
            return Outcome::Local;
        }
    };
    let url = server.url("/v1/status");
    eprintln!(
        "retry-http: demo: a server on {url} answers 503 (Retry-After: 1), 429, a reset, then 200."
    );
    eprintln!(
        "retry-http: demo: running: retry-http --attempts 6 --base 200ms --deadline 20s {url}"
    );
    let args = [
        "retry-http",
        "--attempts",
        "6",
        "--base",
        "200ms",
        "--deadline",
        "20s",
        &url,
    ];
    let outcome = crate::run_from(args.iter().map(|s| s.into()), start);
    eprintln!(
        "retry-http: demo: exit code {} ({})",
        outcome.code(),
        outcome.meaning()
    );
    outcome
}
