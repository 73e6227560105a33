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

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

const HOUR_MS: u64 = 3600 * 1000;

/// A state file as retry-http 0.1.0 wrote it, byte for byte: one target failed once.
const LEGACY: &str = "{\n  \"targets\": {\n    \"http://127.0.0.1:1\": {\n      \"breaker\": {\n        \"failures\": 1,\n        \"opened_at\": null,\n        \"probe_until\": null\n      },\n      \"retries\": [],\n      \"successes\": []\n    }\n  },\n  \"version\": 1\n}\n";

/// Runs against `url` with `--state file` and asserts that the file was left exactly as it
/// was, that nothing was created beside it, and that one warning said why.
fn assert_left_untouched(state: &std::path::Path, real: &std::path::Path, url: &str, why: &str) {
    let before = std::fs::read(real).unwrap();
    let folder = real.parent().unwrap();
    let listing = names_in(folder);
    let (out, _) = run(&["--state", state.to_str().unwrap(), url]);
    assert_eq!(code(&out), 0, "the request still runs: {}", stderr(&out));
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{}", stderr(&out));
    assert!(
        w[0].contains(why)
            && w[0].contains("left untouched")
            && w[0].ends_with("going on without it"),
        "{}",
        w[0]
    );
    assert_eq!(std::fs::read(real).unwrap(), before, "the file was changed");
    assert_eq!(names_in(folder), listing, "something was created beside it");
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
    // The refusal's closing line says "nothing sent" once, and counts no attempts.
    let last = stderr(&out).lines().last().unwrap_or("").to_string();
    assert!(last.starts_with("retry-http: error: refused in "), "{last}");
    assert!(
        last.contains(", nothing sent: the circuit is open"),
        "{last}"
    );
    assert_eq!(last.matches("nothing sent").count(), 1, "{last}");
    assert!(!last.contains("attempt"), "{last}");
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
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(
        s.requests().len(),
        5,
        "a run's own retries do not count against it: all 4, past the floor of 2"
    );
    let (out, _) = run(&args);
    assert_eq!(code(&out), 7);
    assert_eq!(
        s.requests().len(),
        6,
        "the first run's 4 retries are the second's other runs': no retry left"
    );
    assert!(
        stderr(&out).contains("retry budget is spent: 4 retries by other runs"),
        "{}",
        stderr(&out)
    );
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
            // The lock is what this checks, not its bound: under a load of 15 and more a run
            // may wait more than the default bound for its turn, and its outcome is then not
            // recorded.
            std::thread::spawn(move || run(&["--state", &f, "--state-timeout", "10s", &u]).0)
        })
        .collect();
    for r in runs {
        assert_eq!(code(&r.join().unwrap()), 0);
    }
    let state = read_state(&file);
    let target = only_target(&state);
    assert_eq!(counted(&target, 1), 16, "lost updates: {state}");
}

#[test]
fn corrupt_state_file_of_ours_is_replaced_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    // Cut short, and of the right shape but with an impossible value; one of retry-http
    // 0.1.0, cut short.
    let legacy_cut = &LEGACY[..LEGACY.len() - 30];
    for corrupt in [
        "{\"format\": \"retry-http-state\", \"version\": 1, \"targets\": {\"http://h:80\": {\"brea",
        "{\"format\":\"retry-http-state\",\"version\":1,\"targets\":{\"x\":{\"breaker\":{\"failures\":-3}}}}",
        legacy_cut,
    ] {
        std::fs::write(&file, corrupt).unwrap();
        let (out, _) = run(&["--state", file.to_str().unwrap(), &s.url("/")]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        // A file that is not whole is replaced; a whole one with a target's record spoiled
        // loses that record only.
        let why = match corrupt.contains("-3") {
            true => {
                ": the record of x is not valid; starting it afresh (the other targets are kept)"
            }
            false => " is not valid; starting afresh",
        };
        assert_eq!(
            warnings(&out),
            [format!(
                "retry-http: warning: the state file {}{why}",
                file.display()
            )],
            "{corrupt}"
        );
        assert_eq!(read_state(&file)["format"], "retry-http-state");
        assert_eq!(counted(&only_target(&read_state(&file)), 1), 1);
    }
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
        vec![4, 7, 7, 7],
        "the first run uses its attempts, the next end on the budget, then the circuit refuses"
    );
    // Three attempts in the first run (its own retries do not count against it), one in
    // each of the next two (the first run's retries spent the floor of one); the third
    // failed run in a row opens the circuit, so the fourth sends nothing.
    assert_eq!(s.requests().len(), 5);
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
    // A folder, or a file in a folder that does not exist, is a mistake of the setup that
    // every run would make: a usage error before anything is sent, as for -o.
    let missing = dir.path().join("no-such-folder/jobs.state");
    let unsent = Server::start(vec![Step::status(200, "ok")]).unwrap();
    for (state, says) in [
        (
            dir.path().to_path_buf(),
            "is a directory: expected a file path".to_string(),
        ),
        (
            missing.clone(),
            format!(
                "the folder {} does not exist: create it first",
                dir.path().join("no-such-folder").display()
            ),
        ),
    ] {
        let (out, _) = run(&[
            "--state",
            state.to_str().unwrap(),
            "-d",
            "x",
            &unsent.url("/"),
        ]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(stderr(&out).contains(&says), "{}", stderr(&out));
    }
    assert!(unsent.requests().is_empty(), "a request was sent");
    assert!(!missing.parent().unwrap().exists());
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
    assert_eq!(read_state(&real)["format"], "retry-http-state");
    // A device is refused before anything is opened or created.
    let (out, _) = run(&["--state", "/dev/null", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/dev/null is not a regular file"),
        "{}",
        stderr(&out)
    );
    assert!(!std::path::Path::new("/dev/null.lock").exists());
    // A date past year 9999 is no reason to crash: a file of ours that is invalid.
    let far = dir.path().join("far.json");
    std::fs::write(
        &far,
        r#"{"format":"retry-http-state","version":1,"targets":{"x":{"breaker":{"failures":9,"opened_at":300000000000000,"probe_until":null},"successes":[],"retries":[]}}}"#,
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
    assert!(stderr(&out).contains(": the record of x is not valid; starting it afresh"));
    assert!(read_state(&far)["targets"].get("x").is_none());
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
    assert_eq!(counted(&target, 2), 0, "{state}");
}

#[test]
fn a_file_that_is_not_state_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "buy milk\ncall the plumber\n").unwrap();
    assert_left_untouched(&notes, &notes, &url, "was not written by retry-http");
    let package = r#"{
  "name": "left-pad",
  "version": "1.3.0",
  "main": "index.js"
}
"#;
    for json in [
        "{\"a\":1}",
        package,
        // Looks like a state file, but retry-http never wrote this layout.
        "{\"version\":1,\"targets\":{}}",
        "{\n  \"targets\": {\n    \"build\": {\"command\": \"make\"}\n  }\n}\n",
        " \n",
    ] {
        std::fs::write(&notes, json).unwrap();
        assert_left_untouched(&notes, &notes, &url, "was not written by retry-http");
    }
    // A newer retry-http's file is not replaced by an older one.
    std::fs::write(
        &notes,
        r#"{"format": "retry-http-state", "version": 3, "targets": []}"#,
    )
    .unwrap();
    assert_left_untouched(&notes, &notes, &url, "newer retry-http (format version 3)");
    assert_eq!(s.requests().len(), 7, "every run sent its request");
}

#[test]
fn through_a_link_the_target_is_judged_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let config = other.path().join("config.toml");
    std::fs::write(&config, "[server]\nport = 8080\n").unwrap();
    let link = dir.path().join("state.json");
    std::os::unix::fs::symlink(&config, &link).unwrap();
    assert_left_untouched(&link, &config, &s.url("/"), "its link target");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        names_in(dir.path()),
        ["state.json"],
        "no lock beside the link either"
    );
}

#[test]
fn an_unreadable_file_is_left_untouched() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    std::fs::write(&file, State::EMPTY).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o200)).unwrap();
    if std::fs::File::open(&file).is_ok() {
        return; // Running as root: permissions do not stop reading.
    }
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    assert_left_untouched(&file, &file, &s.url("/"), "cannot be read");
}

/// What an empty state written by this version looks like.
struct State;
impl State {
    const EMPTY: &'static str =
        "{\n  \"format\": \"retry-http-state\",\n  \"version\": 1,\n  \"targets\": {}\n}\n";
}

#[test]
fn an_empty_or_missing_file_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let missing = dir.path().join("missing.json");
    for file in [&empty, &missing] {
        let (out, _) = run(&["--state", file.to_str().unwrap(), &s.url("/")]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(warnings(&out).is_empty(), "{}", stderr(&out));
        let state = read_state(file);
        assert_eq!(state["format"], "retry-http-state");
        assert_eq!(state["version"], 2);
        assert_eq!(counted(&only_target(&state), 1), 1);
        assert!(
            std::fs::read_to_string(file)
                .unwrap()
                .starts_with("{\n  \"format\": \"retry-http-state\","),
            "the marker comes first"
        );
    }
}

#[test]
fn a_file_of_retry_http_0_1_is_read_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    // Four failed runs recorded by the previous version; the fifth opens the circuit.
    let dead = closed_port_url();
    let key = dead.trim_end_matches('/');
    std::fs::write(
        &file,
        LEGACY
            .replace("http://127.0.0.1:1", key)
            .replace("\"failures\": 1", "\"failures\": 4"),
    )
    .unwrap();
    let mut args = state_args(file.to_str().unwrap(), &["--attempts", "1"]);
    args.push(&dead);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    let state = read_state(&file);
    assert_eq!(state["format"], "retry-http-state");
    let t = &state["targets"][key];
    assert_eq!(t["breaker"]["failures"], 5, "{state}");
    assert!(t["breaker"]["opened_at"].is_u64(), "{state}");
}

#[test]
fn targets_idle_past_the_ttl_are_forgotten_but_refusing_circuits_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let now = now_ms();
    let closed = |seen: u64| {
        serde_json::json!({"breaker": {"failures": 3, "opened_at": null, "probe_until": null},
            "successes": [], "retries": [], "seen": seen})
    };
    let crafted = serde_json::json!({
        "format": "retry-http-state",
        "version": 1,
        "targets": {
            "http://idle.test:80": closed(now - 25 * HOUR_MS),
            "http://recent.test:80": closed(now - 23 * HOUR_MS),
            "http://two-hours.test:80": closed(now - 2 * HOUR_MS),
            "http://open.test:80": {
                "breaker": {"failures": 5, "opened_at": now - 72 * HOUR_MS, "probe_until": null},
                "successes": [], "retries": [], "seen": now - 72 * HOUR_MS
            },
            "http://opened-long-ago.test:80": {
                "breaker": {"failures": 5, "opened_at": now - 200 * HOUR_MS, "probe_until": null},
                "successes": [], "retries": [], "seen": now - 200 * HOUR_MS
            },
        }
    });
    std::fs::write(&file, crafted.to_string()).unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    // A cooldown of 100 hours: the circuit opened 72 hours ago still refuses, the one
    // opened 200 hours ago no longer does and is forgotten with the idle ones.
    let cooldown = ["--breaker-cooldown", "100h"];
    let (out, _) = run(&[
        &cooldown[..],
        &["--state", file.to_str().unwrap(), &s.url("/")],
    ]
    .concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let state = read_state(&file);
    let targets = state["targets"].as_object().unwrap();
    assert!(!targets.contains_key("http://idle.test:80"), "{state}");
    assert!(
        !targets.contains_key("http://opened-long-ago.test:80"),
        "{state}"
    );
    for kept in [
        "http://recent.test:80",
        "http://two-hours.test:80",
        "http://open.test:80",
    ] {
        assert!(targets.contains_key(kept), "{kept}: {state}");
    }
    assert_eq!(targets.len(), 4, "{state}");
    // A shorter TTL forgets more; the circuit that still refuses stays.
    let (out, _) = run(&[
        &cooldown[..],
        &[
            "--state",
            file.to_str().unwrap(),
            "--state-ttl",
            "1h",
            &s.url("/"),
        ],
    ]
    .concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let state = read_state(&file);
    let mut kept: Vec<&String> = state["targets"].as_object().unwrap().keys().collect();
    kept.sort();
    assert_eq!(kept.len(), 2, "{state}");
    assert_eq!(kept[1], "http://open.test:80");
}

#[test]
fn the_ttl_flag_is_checked_and_explained() {
    let (out, _) = run(&["--state-ttl", "0", "http://127.0.0.1:1/"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--state-ttl must be at least 1s"),
        "{}",
        stderr(&out)
    );
    let out = command()
        .env("RETRY_HTTP_STATE_TTL", "500ms")
        .arg("http://127.0.0.1:1/")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("$RETRY_HTTP_STATE_TTL"),
        "{}",
        stderr(&out)
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let f = file.to_str().unwrap();
    for (args, shown) in [
        (&["--state", f][..], "no run for 24h is forgotten"),
        (
            &["--state", f, "--state-ttl", "90m"],
            "no run for 1h30m is forgotten",
        ),
    ] {
        let mut args = args.to_vec();
        args.extend(["--explain", "http://127.0.0.1:1/"]);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().find(|l| l.contains("shared state")).unwrap();
        assert!(line.contains(shown), "{line}");
    }
}

#[test]
fn a_big_file_is_not_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    // Someone else's 64 GiB (sparse) file: judged from its first bytes, in no time.
    let big = dir.path().join("disk.img");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(64 << 30).unwrap();
    drop(f);
    let (out, took) = run(&["--state", big.to_str().unwrap(), &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(stderr(&out).contains("left untouched"), "{}", stderr(&out));
    assert_eq!(std::fs::metadata(&big).unwrap().len(), 64 << 30);
    assert_eq!(names_in(dir.path()), ["disk.img"]);
    std::fs::remove_file(&big).unwrap();
    // Files of ours past the 4 MiB read: one of this version, one of 0.1.0 (as the 38 MB
    // files it could grow to), replaced with a warning.
    let marked = "{\"format\": \"retry-http-state\", \"version\": 1, \"targets\": {";
    for (name, head) in [("marked.json", marked), ("legacy.json", LEGACY)] {
        let file = dir.path().join(name);
        std::fs::write(&file, head).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        f.set_len(40 << 20).unwrap();
        drop(f);
        let (out, took) = run(&["--state", file.to_str().unwrap(), &url]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert_eq!(
            warnings(&out),
            [format!(
                "retry-http: warning: the state file {} is larger than 4 MiB, the most read; starting afresh",
                file.display()
            )]
        );
        let state = read_state(&file);
        assert_eq!(state["format"], "retry-http-state");
        assert_eq!(state["targets"].as_object().unwrap().len(), 1);
    }
}

#[test]
fn the_file_keeps_at_most_a_thousand_targets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let now = now_ms();
    let targets: serde_json::Map<String, serde_json::Value> = (0..1000u64)
        .map(|i| {
            let v = serde_json::json!({"breaker": {"failures": 1, "opened_at": null,
                "probe_until": null}, "successes": [], "retries": [], "seen": now - 1000 + i});
            (format!("http://h{i:04}.test:80"), v)
        })
        .collect();
    let crafted =
        serde_json::json!({"format": "retry-http-state", "version": 1, "targets": targets});
    std::fs::write(&file, crafted.to_string()).unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let (out, _) = run(&["--state", file.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let state = read_state(&file);
    let targets = state["targets"].as_object().unwrap();
    assert_eq!(targets.len(), 1000);
    assert!(
        !targets.contains_key("http://h0000.test:80"),
        "the oldest went"
    );
    assert!(targets.contains_key("http://h0001.test:80"));
    assert!(targets.keys().any(|k| k.starts_with("http://127.0.0.1:")));
}

/// The state file cannot also be where the body or the head goes: the run would write one
/// over the other.
#[test]
fn the_state_file_is_not_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.json");
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    for flag in ["-o", "-D", "--etag-save"] {
        let f = file.to_str().unwrap();
        let (out, _) = run(&["--state", f, flag, f, &s.url("/")]);
        assert_eq!(code(&out), 2, "{flag}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("are the same file"),
            "{flag}: {}",
            stderr(&out)
        );
        assert!(!file.exists(), "{flag}: nothing written");
    }
    assert!(s.requests().is_empty(), "nothing sent");
}

/// What may lie at a path the file store opens, other than a regular file.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Special {
    Fifo,
    DanglingLink,
    LinkToAFileElsewhere,
    Folder,
    Socket,
    CharDevice,
}

impl Special {
    const ALL: [Special; 6] = [
        Special::Fifo,
        Special::DanglingLink,
        Special::LinkToAFileElsewhere,
        Special::Folder,
        Special::Socket,
        Special::CharDevice,
    ];

    /// Makes it at `path` (`elsewhere`: a folder for what a link points to). `None` when
    /// this system does not let the test make it (a device needs privileges); the listener
    /// keeps a socket alive.
    fn make(
        self,
        path: &std::path::Path,
        elsewhere: &std::path::Path,
    ) -> Option<Option<std::os::unix::net::UnixListener>> {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        match self {
            Special::Fifo => {
                // SAFETY: mkfifo reads the path we own.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            }
            Special::DanglingLink => {
                std::os::unix::fs::symlink(elsewhere.join("nothing-here"), path).unwrap();
            }
            Special::LinkToAFileElsewhere => {
                let target = elsewhere.join("someone-elses");
                std::fs::write(&target, "").unwrap();
                std::os::unix::fs::symlink(&target, path).unwrap();
            }
            Special::Folder => std::fs::create_dir(path).unwrap(),
            Special::Socket => {
                return Some(Some(std::os::unix::net::UnixListener::bind(path).unwrap()));
            }
            Special::CharDevice => {
                // SAFETY: mknod reads the path we own; /dev/null's numbers (1, 3).
                let made =
                    unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 3)) };
                if made != 0 {
                    return None;
                }
            }
        }
        Some(None)
    }

    /// What the message calls it when it lies at the lock's path (which is not followed).
    fn as_lock(self) -> &'static str {
        match self {
            Special::Fifo => "a FIFO",
            Special::DanglingLink | Special::LinkToAFileElsewhere => "a symbolic link",
            Special::Folder => "a folder",
            Special::Socket => "a socket",
            Special::CharDevice => "a character device",
        }
    }
}

/// The file type at `path`, not followed, and the folder's names: what a run must leave
/// as it found them.
fn snapshot(path: &std::path::Path) -> (std::fs::FileType, Vec<String>) {
    (
        std::fs::symlink_metadata(path).unwrap().file_type(),
        names_in(path.parent().unwrap()),
    )
}

/// {the state file's path, its lock's path} x {a FIFO, a dangling link, a link to a file
/// elsewhere, a folder, a socket, a character device}: no run hangs on what lies there. At
/// the lock's path each is refused as a foreign state file is: one warning, the request
/// sent, nothing created or changed, and under `--state-on-error closed` exit 7 with
/// nothing sent. At the state file's path a link is followed (docs/fleet.md: a link to an empty
/// file, or to none yet, becomes the state), a folder or a socket is a usage error (exit 2,
/// nothing sent), and the rest are refused as at the lock's path.
#[test]
fn special_files_at_the_state_and_lock_paths_never_hang() {
    let mut cells = 0;
    let mut skipped = Vec::new();
    for at_lock in [false, true] {
        for special in Special::ALL {
            let dir = tempfile::tempdir().unwrap();
            let elsewhere = tempfile::tempdir().unwrap();
            let state = dir.path().join("state.json");
            let lock = dir.path().join("state.json.lock");
            let odd = if at_lock { &lock } else { &state };
            let Some(_listener) = special.make(odd, elsewhere.path()) else {
                skipped.push(format!("{special:?} at_lock={at_lock}"));
                continue;
            };
            let before = snapshot(odd);
            let elsewhere_before = names_in(elsewhere.path());
            let s = Server::start(vec![Step::status(200, "ok"), Step::status(200, "ok")]).unwrap();
            let url = s.url("/");
            let (out, took) = run(&["--state", state.to_str().unwrap(), "--deadline", "5s", &url]);
            let what = format!(
                "{special:?} at the {} path",
                if at_lock { "lock" } else { "state" }
            );
            cells += 1;
            assert!(took < Duration::from_secs(5), "{what}: {took:?}");
            if !at_lock && matches!(special, Special::Folder | Special::Socket) {
                // No run could ever write a state file there: a usage error, nothing sent.
                assert_eq!(code(&out), 2, "{what}: {}", stderr(&out));
                assert!(
                    stderr(&out).contains(&format!("--state {}", state.display())),
                    "{what}: {}",
                    stderr(&out)
                );
                assert!(s.requests().is_empty(), "{what}");
                assert_eq!(snapshot(odd), before, "{what}: changed");
                continue;
            }
            assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
            assert_eq!(s.requests().len(), 1, "{what}");
            let followed = !at_lock
                && matches!(
                    special,
                    Special::DanglingLink | Special::LinkToAFileElsewhere
                );
            if followed {
                assert!(warnings(&out).is_empty(), "{what}: {}", stderr(&out));
                let real = std::fs::canonicalize(elsewhere.path()).unwrap().join(
                    if special == Special::DanglingLink {
                        "nothing-here"
                    } else {
                        "someone-elses"
                    },
                );
                assert_eq!(read_state(&real)["format"], "retry-http-state", "{what}");
                assert!(snapshot(&state).0.is_symlink(), "{what}: the link stays");
                continue;
            }
            let w = warnings(&out);
            assert_eq!(w.len(), 1, "{what}: {}", stderr(&out));
            let why = if at_lock {
                format!(
                    "has a lock file {} that is {}, not a regular file, so it is left untouched",
                    lock.display(),
                    special.as_lock()
                )
            } else if special == Special::Folder {
                "is not a regular file".to_string()
            } else {
                format!("{} is not a regular file", state.display())
            };
            assert!(
                w[0].starts_with(&format!(
                    "retry-http: warning: cannot use the state file {}: ",
                    state.display()
                )) && w[0].contains(&why)
                    && w[0].ends_with("going on without it"),
                "{what}: {}",
                w[0]
            );
            assert_eq!(
                snapshot(odd),
                before,
                "{what}: changed, or something made beside it"
            );
            assert_eq!(
                names_in(elsewhere.path()),
                elsewhere_before,
                "{what}: made elsewhere"
            );
            // The same refusal under --state-on-error closed: exit 7, nothing sent.
            let (out, took) = run(&[
                "--state",
                state.to_str().unwrap(),
                "--state-on-error",
                "closed",
                "--deadline",
                "5s",
                &url,
            ]);
            assert_eq!(code(&out), 7, "{what}: {}", stderr(&out));
            assert!(took < Duration::from_secs(5), "{what}: {took:?}");
            assert!(stderr(&out).contains(&why), "{what}: {}", stderr(&out));
            assert_eq!(s.requests().len(), 1, "{what}: sent under closed");
            assert_eq!(snapshot(odd), before, "{what}");
        }
    }
    // A device needs privileges to make: without them its two cells are skipped.
    assert!(
        cells + skipped.len() == 12 && cells >= 10,
        "{cells} run; skipped: {skipped:?}"
    );
}

/// Ages `path` (not followed) by `age`.
fn age(path: &std::path::Path, age: Duration) {
    let when = std::time::SystemTime::now() - age;
    let secs = when
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as _;
    let t = libc::timespec {
        tv_sec: secs,
        tv_nsec: 0,
    };
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: utimensat reads the path and the two times we own.
    let done = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            [t, t].as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
}

/// Temporary files that runs killed while writing left beside the state file (named as
/// the store names them, last changed more than 5 minutes ago) are removed by the next run
/// that takes the lock; a young one (another state file's writer in the same folder may
/// own it), links, folders and files merely named alike are left.
#[test]
fn stale_temporary_files_beside_the_state_file_are_collected() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let stale = [
        ".retry-http-stateAb12Cd",
        ".retry-http-state000000",
        ".retry-http-statezzzzzz",
    ];
    let kept = [
        ".retry-http-stateYoung1",
        ".retry-http-stateLinked",
        ".retry-http-stateFolder",
        ".retry-http-state.json",
        ".retry-http-stateToolong1",
        "retry-http-stateAb12Cd",
    ];
    for name in stale.iter().chain(&kept) {
        let path = dir.path().join(name);
        match *name {
            ".retry-http-stateLinked" => {
                std::os::unix::fs::symlink(dir.path().join(stale[0]), &path).unwrap()
            }
            ".retry-http-stateFolder" => std::fs::create_dir(&path).unwrap(),
            _ => std::fs::write(&path, "{\"format\": \"retry-http-state\", \"vers").unwrap(),
        }
        if *name != ".retry-http-stateYoung1" {
            age(&path, Duration::from_secs(3600));
        }
    }
    // Just past the bound counts as stale too.
    age(&dir.path().join(stale[2]), Duration::from_secs(301));
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let (out, _) = run(&["--state", state.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    let mut expected: Vec<String> = kept.iter().map(|n| n.to_string()).collect();
    expected.extend(["state.json".into(), "state.json.lock".into()]);
    expected.sort();
    assert_eq!(names_in(dir.path()), expected);
}

/// A run killed (SIGKILL) between writing its temporary file and renaming it over the state
/// file leaves that file behind; the next run that takes the lock once it is stale removes
/// it. The run is held at the rename by strace(1), which delays the call (strace is a test
/// dependency: `.ci/run` installs it).
#[test]
fn a_run_killed_while_writing_leaves_a_file_the_next_run_collects() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let st = state.to_str().unwrap();
    let s = Server::start(vec![Step::status(200, "ok"), Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    let renames = "rename,renameat,renameat2";
    let mut traced = command_for(std::path::Path::new("strace"))
        .args(["-f", "-qq", "-o", "/dev/null", "-e"])
        .arg(format!("trace={renames}"))
        .arg("-e")
        .arg(format!("inject={renames}:delay_enter=30000000"))
        .arg(env!("CARGO_BIN_EXE_retry-http"))
        .args(["--state", st, "-o", "/dev/null", &url])
        .spawn()
        .expect("strace must be installed (Debian package strace)");
    let temps = |dir: &std::path::Path| -> Vec<String> {
        names_in(dir)
            .into_iter()
            .filter(|n| n.starts_with(".retry-http-state") && n.len() == 23)
            .collect()
    };
    let t0 = std::time::Instant::now();
    while temps(dir.path()).is_empty() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = temps(dir.path());
    assert_eq!(
        left.len(),
        1,
        "the run got to its rename: {:?}",
        names_in(dir.path())
    );
    // The traced run is strace's child.
    let children =
        std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", traced.id())).unwrap();
    let pid: libc::pid_t = children.split_whitespace().next().unwrap().parse().unwrap();
    // SAFETY: kill sends a signal to the process this test started (through strace).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    // strace would sit out the delay it injected: it is stopped too, once its run is gone.
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z"))
        && t0.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    traced.kill().unwrap();
    traced.wait().unwrap();
    assert_eq!(temps(dir.path()), left, "the killed run's file stays");
    assert!(s.requests().is_empty(), "killed before it sent");
    // Young, it is spared (a live writer of another state file may own it); stale, taken.
    let (out, _) = run(&["--state", st, &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(temps(dir.path()), left, "spared while young");
    age(&dir.path().join(&left[0]), Duration::from_secs(600));
    let (out, _) = run(&["--state", st, &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    assert!(temps(dir.path()).is_empty(), "{:?}", names_in(dir.path()));
    assert_eq!(counted(&only_target(&read_state(&state)), 1), 2);
}
