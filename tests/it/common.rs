//! Helpers shared by the integration tests.

use std::process::Output;
use std::time::{Duration, Instant};

pub use crate::scripted::{Recorded, Server, Step};

/// Runs the binary with `args`; returns its output and how long it took.
pub fn run(args: &[&str]) -> (Output, Duration) {
    run_with_stdin(args, None)
}

/// Runs the binary with `args`, feeding `stdin` when given.
pub fn run_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> (Output, Duration) {
    let mut cmd = assert_cmd::Command::cargo_bin("retry-http").expect("binary built");
    cmd.args(args)
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(60));
    if let Some(input) = stdin {
        cmd.write_stdin(input.to_vec());
    }
    let t = Instant::now();
    let out = cmd.output().expect("binary runs");
    (out, t.elapsed())
}

/// The exit code (panics on death by signal, which no test expects).
pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exited normally")
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The per-attempt lines of a text log.
pub fn attempt_lines(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.starts_with("retry-http: attempt "))
        .map(String::from)
        .collect()
}

/// JSON log objects of the given type.
pub fn json_lines(out: &Output, kind: &str) -> Vec<serde_json::Value> {
    stderr(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == kind)
        .collect()
}

/// Time between consecutive requests, as the server saw them.
pub fn gaps(reqs: &[Recorded]) -> Vec<Duration> {
    reqs.windows(2)
        .map(|w| w[1].at.duration_since(w[0].at))
        .collect()
}

/// Fast retry flags, so tests that do not test waiting do not wait.
pub const FAST: [&str; 6] = ["--base", "1ms", "--cap", "5ms", "--retry-after-spread", "0"];

/// A loopback port with nothing listening on it.
pub fn closed_port_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    format!("http://127.0.0.1:{port}/")
}

/// Runs the binary with `extra` flags, the fast retry flags, then `url`.
pub fn run_fast(extra: &[&str], url: &str) -> (Output, Duration) {
    let mut args = extra.to_vec();
    args.extend(FAST);
    args.push(url);
    run(&args)
}
