//! The deadline holds whatever the run is blocked on: a request body, a `-H @FILE` or a `-K`
//! file from a pipe that never closes, an `-o` FIFO that nobody opens for reading.

use crate::common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn a_body_from_a_pipe_that_never_closes_cannot_outlive_the_deadline() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let mut child = std_command()
        .args(["--deadline", "1s", "--data-binary", "@-", &s.url("/")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin_kept_open = child.stdin.take();
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(5));
    assert!(
        t.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(s.requests().len(), 0);
}

#[test]
fn a_fifo_without_a_reader_cannot_outlive_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let (out, took) = run(&[
        "--deadline",
        "1s",
        "-o",
        fifo.to_str().unwrap(),
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(took < Duration::from_millis(2500), "{took:?}");
}

#[test]
fn header_and_config_files_that_never_close_cannot_outlive_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let at = format!("@{}", fifo.display());
    let path = fifo.to_str().unwrap();
    for args in [
        vec!["--deadline", "1s", "-H", &at, &s.url("/")],
        vec!["-K", path, "--deadline=1s", &s.url("/")],
    ] {
        let (out, took) = run(&args);
        assert_eq!(code(&out), 5, "{args:?}: {}", stderr(&out));
        assert!(took < Duration::from_millis(2500), "{args:?}: {took:?}");
        assert!(
            stderr(&out).contains("was still being read"),
            "{}",
            stderr(&out)
        );
    }
    // From the environment too, for a header file on stdin that never closes.
    let mut child = std_command()
        .args(["-H", "@-", &s.url("/")])
        .env("RETRY_HTTP_DEADLINE", "1s")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _stdin_kept_open = child.stdin.take();
    let t = Instant::now();
    assert_eq!(child.wait().unwrap().code(), Some(5));
    assert!(
        t.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(s.requests().len(), 0);
}
