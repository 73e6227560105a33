//! `--health-exit`: Docker's rule for a health check's exit status (0 healthy, 1 unhealthy,
//! 2 reserved). Every way a run can end other than success exits 1 under it — usage errors
//! that clap or `-K` refuse, a status not retried, attempts exhausted, a refused
//! connection, the deadline, a signal — and the documented codes stay as they are without
//! it.

use crate::common::*;
use crate::scripted::{Server, Step};
use std::time::Duration;

/// Runs the binary with `args`, and with `RETRY_HTTP_HEALTH_EXIT` set to `env` when given.
fn exit_of(args: &[&str], env: Option<&str>) -> (i32, String) {
    let mut cmd = command();
    cmd.args(args).timeout(Duration::from_secs(60));
    if let Some(v) = env {
        cmd.env("RETRY_HTTP_HEALTH_EXIT", v);
    }
    let out = cmd.output().expect("binary runs");
    (code(&out), stderr(&out))
}

/// Each failure class, with its documented code: under the flag (and under the variable)
/// each exits 1, without it each keeps its own.
#[test]
fn every_failure_exits_1_and_only_under_the_rule() {
    let ok = Server::start(vec![Step::status(200, "up")]).unwrap();
    let down = Server::start(vec![Step::status(503, "down")]).unwrap();
    let gone = Server::start(vec![Step::status(404, "gone")]).unwrap();
    let slow = Server::start(vec![Step::Hang]).unwrap();
    let refused = closed_port_url();
    let (ok, down, gone, slow) = (ok.url("/"), down.url("/"), gone.url("/"), slow.url("/"));
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec![&ok], 0),
        (vec!["--no-such-flag", &ok], 2),
        (vec!["--attempts", "zero", &ok], 2),
        (vec!["not a url"], 2),
        (vec!["-o", "/nonexistent-folder/x/f", &ok], 2),
        (vec![&gone], 3),
        (vec!["--attempts", "2", "--base", "1ms", &down], 4),
        (vec!["--deadline", "300ms", &slow], 5),
        (vec!["--attempts", "1", &refused], 4),
    ];
    for (args, plain) in &cases {
        let (c, err) = exit_of(args, None);
        assert_eq!(c, *plain, "without the rule, {args:?}: {err}");
        assert!(!err.contains("--health-exit"), "{args:?}: {err}");
        let mut with = vec!["--health-exit"];
        with.extend(args.iter().copied());
        let (c, err) = exit_of(&with, None);
        assert_eq!(c, i32::from(*plain != 0), "--health-exit {args:?}: {err}");
        // The summary (a usage error: its one line) keeps the documented code and says
        // which status the process ended with.
        if *plain >= 2 {
            assert!(
                err.contains(&format!("; exit {plain} (status 1, --health-exit)")),
                "{args:?}: {err}"
            );
        }
        let (c, err) = exit_of(args, Some("1"));
        assert_eq!(
            c,
            i32::from(*plain != 0),
            "RETRY_HTTP_HEALTH_EXIT=1 {args:?}: {err}"
        );
    }
}

/// The flag after the URL, in a `-K` file, and the variable's false values.
#[test]
fn the_rule_is_read_wherever_a_flag_is() {
    let s = Server::start(vec![Step::status(503, "down")]).unwrap();
    let url = s.url("/");
    let (c, _) = exit_of(&["--attempts", "1", &url, "--health-exit"], None);
    assert_eq!(c, 1);
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("probe.conf");
    std::fs::write(&k, "health-exit\nattempts = 1\n").unwrap();
    let (c, err) = exit_of(&["-K", k.to_str().unwrap(), &url], None);
    assert_eq!(c, 1, "{err}");
    // A -K file clap cannot read is a usage error, which the rule also maps to 1.
    std::fs::write(&k, "health-exit\nno-such-flag\n").unwrap();
    let (c, err) = exit_of(&["-K", k.to_str().unwrap(), &url], None);
    assert_eq!(c, 1, "{err}");
    for off in ["0", "false", "no", "off", ""] {
        let (c, err) = exit_of(&["--attempts", "1", &url], Some(off));
        assert_eq!(c, 4, "RETRY_HTTP_HEALTH_EXIT={off:?}: {err}");
    }
    // After `--`, the word is a URL (a host that does not resolve), not the flag.
    let (c, err) = exit_of(&["--attempts", "1", "--", "--health-exit"], None);
    assert_eq!(c, 4, "{err}");
}

/// A signal ends the run with 1 under the rule, not with 128 + the signal's number.
#[test]
fn a_signal_exits_1_under_the_rule() {
    let s = Server::start(vec![Step::Hang]).unwrap();
    let mut child = std_command()
        .args(["--health-exit", &s.url("/")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while s.requests().is_empty() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill only sends a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
}
