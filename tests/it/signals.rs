//! SIGINT and SIGTERM: prompt exit with 130 / 143, temporary files removed.

use crate::common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_retry-http"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

fn send(child: &std::process::Child, sig: i32) {
    // SAFETY: kill only sends a signal to the child we spawned.
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0);
}

/// Waits for the first request to arrive, so the signal lands where the test means it to.
fn wait_for_requests(s: &Server, n: usize) {
    let until = Instant::now() + Duration::from_secs(10);
    while s.requests().len() < n {
        assert!(Instant::now() < until, "the client never sent its request");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigint_during_a_wait_exits_130_at_once() {
    let s = Server::start(vec![Step::with_header(503, "Retry-After", "30")]).unwrap();
    let mut child = spawn(&[&s.url("/")]);
    wait_for_requests(&s, 1);
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    send(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[test]
fn sigterm_during_a_transfer_exits_143_and_removes_the_temp_file() {
    let s = Server::start(vec![Step::Stall {
        body: vec![b'a'; 1000],
        declared: 5000,
        pause: Duration::from_secs(20),
    }])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bin");
    let mut child = spawn(&["-o", path.to_str().unwrap(), &s.url("/")]);
    wait_for_requests(&s, 1);
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    send(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "temporary file left behind"
    );
}

#[test]
fn a_run_blocked_on_its_output_ends_on_sigint_with_one_summary() {
    // stdout is a pipe nobody reads: the run is stuck writing, so the handler ends it.
    let s = Server::start(vec![Step::Generate { len: 16 << 20 }]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_retry-http"))
        .args(["--log-format", "json", &s.url("/big")])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let _unread = child.stdout.take();
    wait_for_requests(&s, 1);
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    send(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(sent.elapsed() < Duration::from_secs(3));
    let text = String::from_utf8_lossy(&out.stderr);
    let objects: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let summaries: Vec<_> = objects.iter().filter(|v| v["type"] == "summary").collect();
    assert_eq!(summaries.len(), 1, "{text}");
    assert_eq!(summaries[0]["outcome"], "interrupted");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}
