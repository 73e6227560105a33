//! A stdout whose reader is gone: every stdout writer (the body, spooled and streamed, `-I`,
//! `--explain`, `simulate`'s table, JSON and search, `-w`, `-D -`, `--help`, `--version`)
//! ends quietly: no panic, no death by SIGPIPE, no error line about the write, and the exit
//! code the run earned.
//!
//! Why the run's own code and not 1 (local failure): docs/output.md says "A broken pipe on stdout
//! (`retry-http URL | head -1`) ends quietly, with the exit code the request earned", and
//! every writer in the code treats a broken pipe as "nothing more to say to the reader". A
//! reader that leaves has chosen to stop reading; what happened to the request is still
//! the truest answer, and a script under `set -o pipefail` that keeps only the first line
//! must not see a failure that did not happen. Any other write error (a full disk,
//! `>/dev/full`) is a local failure: exit 1, with the error named on stderr.
//!
//! The binary gets SIGPIPE at its default action from `std::process::Command` (which resets
//! it in the child); the Rust runtime of the binary ignores it at start, so a write to the
//! closed pipe fails with EPIPE instead of killing the process.

use crate::common::*;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};

/// Runs the binary with stdout the write end of a pipe whose read end is already closed;
/// returns how it ended and its stderr.
fn run_into_closed_pipe(args: &[&str]) -> (ExitStatus, String) {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two descriptors we own; the read end is closed at once.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    assert_eq!(unsafe { libc::close(fds[0]) }, 0);
    // SAFETY: the write end is ours alone, handed to the child as its stdout.
    let write_end = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[1]) };
    let out = std_command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .output()
        .expect("runs");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts that the run into a closed pipe ended by itself with `want`, without a panic
/// and without a word about the failed write.
fn assert_quiet(args: &[&str], want: i32) {
    let (status, err) = run_into_closed_pipe(args);
    assert_eq!(status.signal(), None, "{args:?}: killed by a signal\n{err}");
    assert_eq!(status.code(), Some(want), "{args:?}\n{err}");
    for word in ["panicked", "Broken pipe", "os error 32", "cannot write"] {
        assert!(!err.contains(word), "{args:?}: {word:?} on stderr\n{err}");
    }
}

/// `retry-http URL | head -c 10`: the reader leaves early; the run ends quietly with the
/// code the request earned.
fn broken_pipe_exit_code(extra: &[&str]) -> (Option<i32>, String) {
    use std::io::Read;
    let s = Server::start(vec![Step::Generate { len: 20 << 20 }]).unwrap();
    let mut child = std_command()
        .args(extra)
        .arg(s.url("/"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn broken_pipe_is_quiet_when_buffered_and_when_streaming() {
    for extra in [&[][..], &["--no-buffer"][..]] {
        let (code, err) = broken_pipe_exit_code(extra);
        assert_eq!(code, Some(0), "{extra:?}: {err}");
        assert!(!err.contains("error"), "{extra:?}: {err}");
    }
}

#[test]
fn the_body_is_quiet_on_a_closed_pipe_spooled_and_streamed() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    assert_quiet(&[&url], 0);
    assert_quiet(&["-N", &url], 0);
}

#[test]
fn head_is_quiet_on_a_closed_pipe() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    assert_quiet(&["-I", &s.url("/")], 0);
}

#[test]
fn explain_is_quiet_on_a_closed_pipe() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    assert_quiet(&["--explain", &s.url("/")], 0);
    assert!(s.requests().is_empty(), "--explain sent a request");
}

#[test]
fn simulate_table_is_quiet_on_a_closed_pipe() {
    assert_quiet(&["simulate", "--clients", "20"], 0);
}

#[test]
fn simulate_json_is_quiet_on_a_closed_pipe() {
    assert_quiet(&["simulate", "--clients", "20", "--format", "json"], 0);
}

#[test]
fn simulate_search_is_quiet_on_a_closed_pipe() {
    assert_quiet(&["simulate", "--clients", "20", "--search"], 0);
}

#[test]
fn write_out_is_quiet_on_a_closed_pipe_with_the_runs_own_code() {
    let ok = Server::start(vec![Step::status(200, "ok")]).unwrap();
    assert_quiet(
        &["-o", "/dev/null", "-w", "%{http_code}\n", &ok.url("/")],
        0,
    );
    let gone = Server::start(vec![Step::status(404, "")]).unwrap();
    assert_quiet(
        &["-o", "/dev/null", "-w", "%{http_code}\n", &gone.url("/")],
        3,
    );
}

#[test]
fn dump_header_to_stdout_is_quiet_on_a_closed_pipe_with_the_runs_own_code() {
    let ok = Server::start(vec![Step::status(200, "ok")]).unwrap();
    assert_quiet(&["-o", "/dev/null", "-D", "-", &ok.url("/")], 0);
    let gone = Server::start(vec![Step::status(404, "")]).unwrap();
    assert_quiet(&["-o", "/dev/null", "-D", "-", &gone.url("/")], 3);
}

#[test]
fn help_and_version_are_quiet_on_a_closed_pipe() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["--version"],
        &["simulate", "--help"],
    ] {
        assert_quiet(args, 0);
    }
}

/// Runs with stdout on /dev/full (every write fails with ENOSPC); returns the exit code
/// and stderr.
fn run_into_full_disk(args: &[&str]) -> (Option<i32>, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = std_command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn text_that_cannot_be_written_is_a_local_failure() {
    let s = Server::start(vec![Step::status(404, "gone")]).unwrap();
    let url = s.url("/");
    let cases: [&[&str]; 4] = [
        &["--explain", "http://127.0.0.1:9/"],
        &["simulate"],
        &["simulate", "--format", "json"],
        &["-w", "%{http_code}\n", &url],
    ];
    for args in cases {
        let (code, err) = run_into_full_disk(args);
        assert_eq!(code, Some(1), "{args:?}\n{err}");
        assert!(
            err.contains("cannot write to stdout: No space left on device"),
            "{args:?}\n{err}"
        );
        assert!(!err.contains("panicked"), "{args:?}\n{err}");
    }
}
