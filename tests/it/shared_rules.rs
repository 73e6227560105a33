//! The shared state keeps its own rules across a run: an answer that is not ready proves
//! the target up (a success for the breaker in every state, nothing for the budget), and a
//! retry is charged to the budget only when it is sent. Each test runs on a state file and
//! on a real redis-server.

use crate::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

use crate::state_redis::redis_server::RedisServer;

/// Where a test's runs share their state.
enum Backend {
    Redis(RedisServer),
    File(tempfile::TempDir),
}

impl Backend {
    fn redis() -> Backend {
        Backend::Redis(RedisServer::start())
    }

    fn file() -> Backend {
        Backend::File(tempfile::tempdir().expect("a temporary folder"))
    }

    /// The value of `--state`.
    fn state(&self) -> String {
        match self {
            Backend::Redis(r) => r.url(),
            Backend::File(d) => d.path().join("state.json").display().to_string(),
        }
    }

    /// The record the store holds for `s`'s target; `Null` if none.
    fn record(&self, s: &Server) -> Value {
        let target = s.url("");
        match self {
            Backend::Redis(r) => {
                let text = r.cli(&["GET", &format!("retry-http:{target}")]);
                if text.is_empty() {
                    return Value::Null;
                }
                let v: Value = serde_json::from_str(&text).expect("the key holds JSON");
                v["target"].clone()
            }
            Backend::File(d) => {
                let text = std::fs::read_to_string(d.path().join("state.json"))
                    .expect("the state file was written");
                let state: Value = serde_json::from_str(&text).expect("the state file is JSON");
                state["targets"][target.as_str()].clone()
            }
        }
    }
}

/// The successes (`column` 1) or retries (2) counted in a record's budget buckets.
fn counted(record: &Value, column: usize) -> u64 {
    record["budget"]
        .as_array()
        .map(|buckets| {
            buckets
                .iter()
                .map(|b| b[column].as_u64().expect("a count"))
                .sum()
        })
        .unwrap_or(0)
}

/// An answer that is not ready for `--until-json /status=green`, and one that is.
fn yellow() -> Step {
    Step::status(200, r#"{"status":"yellow"}"#)
}

fn green() -> Step {
    Step::status(200, r#"{"status":"green"}"#)
}

/// The circuit of `s`'s target is open (threshold 1, cooldown 1 s) after one run that
/// failed on the script's first step; returns once the cooldown has passed, when the next
/// run is the probe.
fn open_then_half_open(backend: &Backend, s: &Server, breaker: &[&str]) {
    let url = s.url("/");
    let (out, _) = run(&[breaker, &["--attempts", "1", &url]].concat());
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(backend.record(s)["breaker"]["opened_at"].is_u64());
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let (out, _) = run(&[breaker, &["--explain", &url]].concat());
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        if shown.contains("circuit half-open: the next run probes") {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "the cooldown never passed: {shown}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------
// An answer that is not ready proves the target up.

/// For every state the breaker can be in when a run meets a service still starting
/// (half-open with this run as the probe, then closed with failures counted): the not-ready
/// answer closes the circuit and resets the count, the run goes on polling (the probe is no
/// longer held to one attempt) within its attempts, and nothing is charged to the budget.
fn an_answer_not_ready_is_a_success_for_the_breaker(backend: &Backend) {
    let state = backend.state();
    let breaker = [
        "--state",
        state.as_str(),
        "--breaker-threshold",
        "1",
        "--breaker-cooldown",
        "1s",
        "--base",
        "1ms",
        "--cap",
        "5ms",
    ];
    let until = ["--until-json", "/status=green"];

    // Half-open; the probe meets "yellow" twice, then "green": it polls on and is served.
    let s =
        Server::start(vec![Step::status(500, ""), yellow(), yellow(), green()]).expect("server");
    open_then_half_open(backend, &s, &breaker);
    let url = s.url("/");
    let (probe, _) = run(&[&breaker[..], &until, &["--attempts", "5", &url]].concat());
    let err = stderr(&probe);
    assert_eq!(code(&probe), 0, "the probe polled on: {err}");
    assert!(
        err.contains("this run probes with a single attempt"),
        "{err}"
    );
    assert!(err.contains("goes on polling"), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&probe.stdout),
        r#"{"status":"green"}"#
    );
    assert_eq!(s.requests().len(), 4, "{err}");
    let record = backend.record(&s);
    let b = &record["breaker"];
    assert!(
        b["opened_at"].is_null() && b["probe_id"].is_null(),
        "{record}"
    );
    assert_eq!(b["failures"], 0, "{record}");
    assert_eq!(counted(&record, 2), 0, "polls charged as retries: {record}");
    assert_eq!(counted(&record, 1), 1, "one request served: {record}");

    // Half-open; the probe never sees "green": it uses all its attempts and ends not ready,
    // the circuit closed, so the next run is an ordinary one (no probe, all its attempts).
    let s = Server::start(vec![Step::status(500, ""), yellow()]).expect("server");
    open_then_half_open(backend, &s, &breaker);
    let url = s.url("/");
    let polls = [&breaker[..], &until, &["--attempts", "3", &url]].concat();
    let (probe, _) = run(&polls);
    let err = stderr(&probe);
    assert_eq!(code(&probe), 8, "{err}");
    assert_eq!(
        s.requests().len(),
        4,
        "the failure, then three polls: {err}"
    );
    let record = backend.record(&s);
    assert!(record["breaker"]["opened_at"].is_null(), "{record}");
    assert_eq!(counted(&record, 2), 0, "{record}");
    assert_eq!(
        counted(&record, 1),
        0,
        "not ready is no request served: {record}"
    );
    let (next, _) = run(&polls);
    let err = stderr(&next);
    assert_eq!(code(&next), 8, "{err}");
    assert!(!err.contains("half-open"), "{err}");
    assert!(attempt_lines(&next)[2].contains("attempt 3/3"), "{err}");

    // Closed with one failure counted (threshold 2): a run that meets "yellow" then fails
    // on 503s counts one failure, not two (the answer reset the count): still closed.
    let breaker2 = [&breaker[..2], &["--breaker-threshold", "2"], &breaker[4..]].concat();
    let s = Server::start(vec![Step::status(503, ""), yellow(), Step::status(503, "")])
        .expect("server");
    let url = s.url("/");
    let (out, _) = run(&[&breaker2[..], &["--attempts", "1", &url]].concat());
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(backend.record(&s)["breaker"]["failures"], 1);
    let (out, _) = run(&[&breaker2[..], &until, &["--attempts", "3", &url]].concat());
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let record = backend.record(&s);
    assert_eq!(record["breaker"]["failures"], 1, "{record}");
    assert!(record["breaker"]["opened_at"].is_null(), "{record}");
}

#[test]
fn an_answer_not_ready_is_a_success_for_the_breaker_in_a_file() {
    an_answer_not_ready_is_a_success_for_the_breaker(&Backend::file());
}

#[test]
fn an_answer_not_ready_is_a_success_for_the_breaker_on_redis() {
    an_answer_not_ready_is_a_success_for_the_breaker(&Backend::redis());
}
