//! An optional feature costs nothing when it is not used: a run without `--state` touches
//! no state, and a plain-http URL reads no certificate. Seen from outside, as the kernel
//! sees it: the binary runs under strace(1), and the files it names and the locks it takes
//! are read from the trace. strace is a test dependency (`.ci/run` installs it); without
//! it these tests fail rather than pass unchecked.

use crate::common::*;
use std::path::Path;

/// The file and lock system calls of one run of the binary with `args`, one per line.
fn traced(args: &[&str], dir: &Path) -> (i32, String) {
    let log = dir.join("trace.log");
    let mut cmd = command_for(Path::new("strace"));
    cmd.args(["-f", "-qq", "-e", "trace=%file,flock,fcntl", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_retry-http"))
        .args(args);
    let out = cmd
        .output()
        .expect("strace must be installed (Debian package strace)");
    let trace = std::fs::read_to_string(&log).unwrap_or_default();
    (out.status.code().unwrap_or(-1), trace)
}

/// The lines of `trace` that name a certificate store or a TLS file.
fn certificate_lines(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .filter(|l| {
            ["ssl", "cert", "pki", ".pem", ".crt"]
                .iter()
                .any(|w| l.contains(w))
        })
        .collect()
}

/// The lines of `trace` that take a lock (the state file is locked while it is read).
fn lock_lines(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .filter(|l| l.contains("flock(") || l.contains("F_SETLK") || l.contains("F_OFD_SETLK"))
        .collect()
}

#[test]
fn a_plain_run_touches_no_state_and_no_certificate() {
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let dir = tempfile::tempdir().expect("dir");
    let (c, trace) = traced(&["-s", "-o", "/dev/null", &s.url("/")], dir.path());
    assert_eq!(c, 0, "{trace}");
    assert!(trace.contains("execve("), "the trace is empty: {trace}");
    assert_eq!(certificate_lines(&trace), Vec::<&str>::new());
    assert_eq!(lock_lines(&trace), Vec::<&str>::new());
}

/// The same trace sees what the features do when they are used: the state file and its
/// lock with `--state`, the system's certificates for an https URL. (Without these, the
/// test above could pass on a trace that sees nothing.)
#[test]
fn the_trace_sees_the_features_when_they_are_used() {
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let dir = tempfile::tempdir().expect("dir");
    let state = dir.path().join("breaker-state.json");
    let st = state.to_str().expect("utf-8");
    let (c, trace) = traced(
        &["-s", "--state", st, "-o", "/dev/null", &s.url("/")],
        dir.path(),
    );
    assert_eq!(c, 0, "{trace}");
    assert!(trace.contains("breaker-state.json"), "{trace}");
    assert!(!lock_lines(&trace).is_empty(), "{trace}");

    // Nothing listens there: the certificates are read before the connection fails.
    let closed = closed_port_url().replace("http://", "https://");
    let (_, trace) = traced(&["-s", "--attempts", "1", &closed], dir.path());
    assert!(!certificate_lines(&trace).is_empty(), "{trace}");
}
