//! SIGHUP, SIGINT, SIGUSR1, SIGUSR2, SIGALRM and SIGTERM: prompt exit with 128 + the signal's
//! number, temporary files removed, one summary. A signal ignored at start stays ignored.

use crate::common::*;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every signal the client handles, with its exit status and its `outcome` in the JSON log.
const HANDLED: [(i32, i32, &str); 6] = [
    (libc::SIGHUP, 129, "hangup"),
    (libc::SIGINT, 130, "interrupted"),
    (libc::SIGUSR1, 138, "user_signal_1"),
    (libc::SIGUSR2, 140, "user_signal_2"),
    (libc::SIGALRM, 142, "alarm"),
    (libc::SIGTERM, 143, "terminated"),
];

/// The client, with every handled signal at its default action (as [`std_command`] sets
/// it), or `ignore` ignored.
fn signal_command(ignore: Option<i32>) -> Command {
    let mut cmd = std_command();
    if let Some(sig) = ignore {
        // SAFETY: signal() is async-signal-safe, the only kind of call allowed after fork.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(sig, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    cmd
}

fn spawn(args: &[&str]) -> std::process::Child {
    signal_command(None)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// A download that sends 1000 of its 5000 bytes, then stalls.
fn stalling_server() -> Server {
    Server::start(vec![Step::Stall {
        body: vec![b'a'; 1000],
        declared: 5000,
        pause: Duration::from_secs(20),
    }])
    .unwrap()
}

/// Waits for the `-o` temporary file to appear in `dir`, so the signal lands mid-body.
fn wait_for_part_file(dir: &std::path::Path) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let parts = std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().ends_with(".part")
            })
            .count();
        if parts > 0 {
            return;
        }
        assert!(Instant::now() < until, "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The JSON log's summary objects.
fn summaries(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .filter(|v| v["type"] == "summary")
        .collect()
}

fn send(child: &std::process::Child, sig: i32) {
    // SAFETY: kill only sends a signal to the child we spawned.
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0);
}

#[test]
fn sigint_during_a_wait_exits_130_at_once() {
    let s = Server::start(vec![Step::with_header(503, "Retry-After", "30")]).unwrap();
    let mut child = spawn(&[&s.url("/")]);
    s.wait_for_requests(1, Duration::from_secs(10));
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
    s.wait_for_requests(1, Duration::from_secs(10));
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
    let mut child = std_command()
        .args(["--log-format", "json", &s.url("/big")])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let _unread = child.stdout.take();
    s.wait_for_requests(1, Duration::from_secs(10));
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

#[test]
fn every_handled_signal_mid_body_exits_at_once_and_leaves_no_temp_file() {
    for (sig, code, outcome) in HANDLED {
        let s = stalling_server();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        std::fs::write(&path, b"the previous download").unwrap();
        let child = signal_command(None)
            .args(["--log-format", "json", "-o", path.to_str().unwrap()])
            .arg(s.url("/"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        s.wait_for_requests(1, Duration::from_secs(10));
        wait_for_part_file(dir.path());
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        send(&child, sig);
        let out = child.wait_with_output().unwrap();
        let took = t.elapsed();
        let log = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{outcome}: {log}");
        assert!(took < Duration::from_secs(1), "{outcome}: {took:?}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["out.bin"], "{outcome}: temporary file left behind");
        assert_eq!(std::fs::read(&path).unwrap(), b"the previous download");
        let summaries = summaries(&out.stderr);
        assert_eq!(summaries.len(), 1, "{outcome}: {log}");
        assert_eq!(summaries[0]["outcome"], outcome, "{log}");
        assert_eq!(summaries[0]["exit_code"], code, "{log}");
    }
}

#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    // `nohup retry-http -o FILE URL &` must survive the terminal closing.
    let s = stalling_server();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bin");
    let mut child = signal_command(Some(libc::SIGHUP))
        .args(["-o", path.to_str().unwrap(), &s.url("/")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    s.wait_for_requests(1, Duration::from_secs(10));
    wait_for_part_file(dir.path());
    send(&child, libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(800));
    assert!(child.try_wait().unwrap().is_none(), "SIGHUP ended the run");
    send(&child, libc::SIGTERM);
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_write_past_the_file_size_limit_fails_cleanly() {
    // SIGXFSZ would kill the process and leave the temporary file; ignored, the write fails.
    let s = Server::start(vec![Step::Generate { len: 1 << 20 }]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bin");
    let mut cmd = signal_command(None);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: 64 << 10,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            Ok(())
        });
    }
    let out = cmd
        .args(["-o", path.to_str().unwrap(), &s.url("/")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_signal_while_the_body_is_read_from_stdin_ends_with_one_summary() {
    // stdin stays open and empty: the run is still reading its inputs.
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let mut child = std_command()
        .args(["--log-format", "json", "-d", "@-", &s.url("/")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let _open = child.stdin.take();
    std::thread::sleep(Duration::from_millis(500));
    send(&child, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    let text = String::from_utf8_lossy(&out.stderr);
    let summaries = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "summary")
        .count();
    assert_eq!(summaries, 1, "{text}");
    assert!(s.requests().is_empty(), "nothing is sent");
}
