//! `--state FILE`: the circuit breaker and the retry budget, shared by runs through a file.

use crate::common::*;
use std::os::unix::fs::FileTypeExt;
use std::time::Duration;

fn state_args<'a>(file: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["--state", file, "--base", "1ms", "--cap", "2ms"];
    v.extend_from_slice(extra);
    v
}

/// The one target a test's state file holds.
fn only_target(state: &serde_json::Value) -> serde_json::Value {
    state["targets"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone()
}

fn read_state(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn breaker_opens_refuses_then_probes_and_closes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let f = file.to_str().unwrap();
    let down = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = down.url("/");
    let flags = [
        "--breaker-threshold",
        "2",
        "--breaker-cooldown",
        "1s",
        "--attempts",
        "1",
    ];
    for _ in 0..2 {
        let mut args = state_args(f, &flags);
        args.push(&url);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 4, "{}", stderr(&out));
    }
    let mut args = state_args(f, &flags);
    args.push(&url);
    let (out, took) = run(&args);
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the circuit is open after 2 failed runs"),
        "{}",
        stderr(&out)
    );
    assert_eq!(down.requests().len(), 2, "an open circuit sent a request");
    assert!(took < Duration::from_secs(1));

    std::thread::sleep(Duration::from_millis(1100));
    // Same target key (127.0.0.1 and the same port), now healthy: the probe closes it.
    drop(down);
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .to_string();
    let up = std::net::TcpListener::bind(format!("127.0.0.1:{port}"));
    if up.is_err() {
        return; // The port was taken meanwhile; the rest is covered by the unit tests.
    }
    drop(up);
    let healthy = Server::start_on(&port, vec![Step::status(200, "back")]).unwrap();
    let mut args = state_args(
        f,
        &[
            "--breaker-threshold",
            "2",
            "--breaker-cooldown",
            "1s",
            "--attempts",
            "5",
        ],
    );
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("half-open"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("attempt 1/1"),
        "the probe has a single attempt: {}",
        stderr(&out)
    );
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0);
    assert!(
        !stderr(&out).contains("half-open"),
        "a successful probe closes the circuit"
    );
    assert_eq!(healthy.requests().len(), 2);
}

#[test]
fn only_one_probe_while_half_open() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let f = file.to_str().unwrap();
    let s = Server::start(vec![Step::status(503, ""), Step::Hang]).unwrap();
    let url = s.url("/");
    let flags = [
        "--breaker-threshold",
        "1",
        "--breaker-cooldown",
        "300ms",
        "--attempts",
        "1",
        "--timeout",
        "3s",
    ];
    let mut args = state_args(f, &flags);
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 4);
    std::thread::sleep(Duration::from_millis(400));
    let probe_args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let probe = std::thread::spawn(move || {
        let a: Vec<&str> = probe_args.iter().map(String::as_str).collect();
        run(&a)
    });
    std::thread::sleep(Duration::from_millis(300));
    let (other, _) = run(&args);
    assert_eq!(code(&other), 7, "a second probe ran: {}", stderr(&other));
    assert!(
        stderr(&other).contains("probe is in flight"),
        "{}",
        stderr(&other)
    );
    let (probe_out, _) = probe.join().unwrap();
    assert_eq!(code(&probe_out), 4, "{}", stderr(&probe_out));
}

#[test]
fn retry_budget_limits_retries_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let f = file.to_str().unwrap();
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/");
    let mut args = state_args(f, &["--budget-floor", "2", "--attempts", "5"]);
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 3, "the floor allows two retries");
    assert!(
        stderr(&out).contains("retry budget is spent"),
        "{}",
        stderr(&out)
    );
    let (out, _) = run(&args);
    assert_eq!(code(&out), 7);
    assert_eq!(s.requests().len(), 4, "no retry left for the second run");
    assert_eq!(read_state(&file)["targets"].as_object().unwrap().len(), 1);
}

#[test]
fn concurrent_runs_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    let runs: Vec<_> = (0..16)
        .map(|_| {
            let (f, u) = (file.to_str().unwrap().to_string(), url.clone());
            std::thread::spawn(move || run(&["--state", &f, &u]).0)
        })
        .collect();
    for r in runs {
        assert_eq!(code(&r.join().unwrap()), 0);
    }
    let state = read_state(&file);
    let target = only_target(&state);
    assert_eq!(
        target["successes"].as_array().unwrap().len(),
        16,
        "lost updates: {state}"
    );
}

#[test]
fn corrupt_state_file_is_replaced_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    std::fs::write(&file, "{ this is not json").unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let (out, _) = run(&["--state", file.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: the state file"),
        "{}",
        stderr(&out)
    );
    assert_eq!(read_state(&file)["version"], 1);
}

#[test]
fn runs_stopped_by_the_budget_still_open_the_circuit() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let f = file.to_str().unwrap();
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/");
    let mut args = state_args(
        f,
        &[
            "--budget-floor",
            "1",
            "--breaker-threshold",
            "3",
            "--attempts",
            "3",
        ],
    );
    args.push(&url);
    let mut codes = Vec::new();
    for _ in 0..4 {
        codes.push(code(&run(&args).0));
    }
    assert_eq!(
        codes,
        vec![7, 7, 7, 7],
        "the first runs end on the budget, then the circuit refuses"
    );
    // Two attempts in the first run (the floor allows one retry), one in each of the next
    // two; the third budget-stopped run opens the circuit, so the fourth sends nothing.
    assert_eq!(s.requests().len(), 4);
    let (out, _) = run(&args);
    assert!(stderr(&out).contains("circuit is open"), "{}", stderr(&out));
}

#[test]
fn a_refusal_under_silent_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let f = file.to_str().unwrap();
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/");
    let mut args = state_args(f, &["--breaker-threshold", "1", "--attempts", "1", "-s"]);
    args.push(&url);
    assert_eq!(code(&run(&args).0), 4);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 7);
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn special_files_links_and_far_future_dates_are_handled() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    // A FIFO is neither replaced nor waited on.
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (out, took) = run(&["--state", fifo.to_str().unwrap(), "--deadline", "2s", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < Duration::from_secs(2));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo(),
        "the FIFO was replaced"
    );
    // A folder is refused the same way.
    let (out, _) = run(&["--state", dir.path().to_str().unwrap(), &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // A link is followed: the target is updated, the link stays.
    let real = dir.path().join("real.json");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (out, _) = run(&["--state", link.to_str().unwrap(), &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(read_state(&real)["version"], 1);
    // A date past year 9999 is no reason to crash.
    let far = dir.path().join("far.json");
    std::fs::write(
        &far,
        r#"{"version":1,"targets":{"x":{"breaker":{"failures":9,"opened_at":300000000000000,"probe_until":null},"successes":[],"retries":[]}}}"#,
    )
    .unwrap();
    let (out, _) = run(&["--state", far.to_str().unwrap(), &url]);
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert_eq!(
        code(&out),
        0,
        "an invalid file is replaced: {}",
        stderr(&out)
    );
}

#[test]
fn a_held_lock_cannot_hold_a_run_past_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let lock = std::fs::File::create(dir.path().join("state.json.lock")).unwrap();
    lock.lock().unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let (out, took) = run(&[
        "--state",
        file.to_str().unwrap(),
        "--deadline",
        "1s",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert!(
        stderr(&out).contains("going on without it"),
        "{}",
        stderr(&out)
    );
    drop(lock);
}

#[test]
fn the_budget_is_charged_only_for_retries_that_are_sent() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let s = Server::start(vec![Step::with_header(503, "Retry-After", "100")]).unwrap();
    let (out, _) = run(&[
        "--state",
        file.to_str().unwrap(),
        "--deadline",
        "2s",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let state = read_state(&file);
    let target = only_target(&state);
    assert_eq!(target["retries"].as_array().unwrap().len(), 0, "{state}");
}
