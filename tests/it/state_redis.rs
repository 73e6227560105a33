//! `--state redis://...`: the shared state on a real redis-server started by each test (and,
//! where a guarantee holds for both stores, on a state file too): exact counts under 64
//! concurrent runs, one probe fleet-wide, the shared Retry-After, rate limiting that is not
//! an outage, keys that expire, `--explain`, and every way the store can fail, each ending
//! within the store timeout with one warning.

use crate::common::*;
use crate::silent::Silent;
use serde_json::Value;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[path = "../support/redis_server.rs"]
pub(crate) mod redis_server;
use redis_server::RedisServer;

/// The password the tests put in URLs: it must never be printed.
const SECRET: &str = "s3cret";

/// A store timeout long enough that 64 runs on two shared cores agree on one record without
/// any of them giving up (a run that gives up warns, and the test says so).
const PATIENT: &str = "20s";

/// Where a test's runs share their state: a redis-server of its own, or a state file in a
/// folder of its own (the shared-rules tests use it too).
pub(crate) enum Backend {
    Redis(RedisServer),
    File(tempfile::TempDir),
}

impl Backend {
    pub(crate) fn redis() -> Backend {
        Backend::Redis(RedisServer::start())
    }

    pub(crate) fn file() -> Backend {
        Backend::File(tempfile::tempdir().expect("a temporary folder"))
    }

    /// The value of `--state`.
    pub(crate) fn state(&self) -> String {
        match self {
            Backend::Redis(r) => r.url(),
            Backend::File(d) => d.path().join("state.json").display().to_string(),
        }
    }

    /// The record the store holds for `target` (`http://127.0.0.1:PORT`); `Null` if none.
    pub(crate) fn record(&self, target: &str) -> Value {
        match self {
            Backend::Redis(r) => redis_record(r, target),
            Backend::File(d) => {
                let text = std::fs::read_to_string(d.path().join("state.json"))
                    .expect("the state file was written");
                let state: Value = serde_json::from_str(&text).expect("the state file is JSON");
                state["targets"][target].clone()
            }
        }
    }
}

/// The Redis key of `target` under the default prefix.
fn key(target: &str) -> String {
    format!("retry-http:{target}")
}

/// The record of `target` in `r`, checked to be `{"format":..,"rev":N,"target":{...}}`;
/// `Null` when there is no key.
fn redis_record(r: &RedisServer, target: &str) -> Value {
    let text = r.cli(&["GET", &key(target)]);
    if text.is_empty() {
        return Value::Null;
    }
    let v: Value = serde_json::from_str(&text).expect("the key holds JSON");
    assert_eq!(v["format"], "retry-http-state", "{v}");
    assert!(v["rev"].is_u64(), "{v}");
    v["target"].clone()
}

/// The key of a target as records are filed: `http://127.0.0.1:PORT`.
fn target_of(s: &Server) -> String {
    s.url("")
}

/// Runs the binary `n` times at once (each on a thread of its own, released together).
fn run_many(n: usize, args: &[&str]) -> Vec<Output> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let start = Arc::new(Barrier::new(n));
    let runs: Vec<_> = (0..n)
        .map(|_| {
            let (args, start) = (args.clone(), start.clone());
            std::thread::spawn(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                start.wait();
                run(&args).0
            })
        })
        .collect();
    runs.into_iter()
        .map(|r| r.join().expect("a run's thread"))
        .collect()
}

/// The exit codes of `outs`, sorted.
fn codes(outs: &[Output]) -> Vec<i32> {
    let mut v: Vec<i32> = outs.iter().map(code).collect();
    v.sort();
    v
}

/// A 200 whose status line comes at once and the rest `pause` later: a slow success.
fn slow_ok(pause: Duration) -> Step {
    Step::RawPaced {
        parts: vec![
            b"HTTP/1.1 200 OK\r\n".to_vec(),
            b"Content-Length: 2\r\nConnection: close\r\n\r\nok".to_vec(),
        ],
        pause,
    }
}

// ---------------------------------------------------------------------------------------
// No lost update, and the budget grants exactly what its rule allows.

/// 64 concurrent runs against a server that always fails: every run's failure is counted,
/// and the fleet gets the 20 retries of the floor (the budget's share of no successes is
/// none), or one more (a run's own retry does not count against its second: at most
/// floor + 2 - 1, docs/fleet.md), the same on the server, in the logs and in the record.
fn sixty_four_runs_are_counted_exactly(backend: &Backend) {
    let s = Server::start(vec![Step::status(500, "")]).expect("server");
    let (url, target, state) = (s.url("/"), target_of(&s), backend.state());
    let args = [
        "--state",
        &state,
        "--state-timeout",
        PATIENT,
        "--attempts",
        "3",
        "--base",
        "10ms",
        "--breaker-threshold",
        "1000",
        "--budget-floor",
        "20",
        "--retry-budget",
        "0%",
        &url,
    ];
    let outs = run_many(64, &args);
    let mut attempts_logged = 0;
    for out in &outs {
        let err = stderr(out);
        assert!(warnings(out).is_empty(), "the store gave up: {err}");
        let attempts = attempt_lines(out).len();
        attempts_logged += attempts;
        match code(out) {
            4 => assert_eq!(attempts, 3, "exit 4 used both retries: {err}"),
            7 => {
                assert!(attempts < 3, "{err}");
                assert!(err.contains("retry budget is spent"), "{err}");
            }
            other => panic!("exit {other}: {err}"),
        }
    }
    let retries = s.requests().len() - 64;
    assert!((20..=21).contains(&retries), "{retries} retries fleet-wide");
    assert_eq!(
        attempts_logged,
        64 + retries,
        "the runs' logs agree with the server"
    );
    let record = backend.record(&target);
    assert_eq!(record["breaker"]["failures"], 64, "a lost update: {record}");
    assert!(record["breaker"]["opened_at"].is_null(), "{record}");
    assert_eq!(
        counted(&record, 2),
        retries as u64,
        "retries charged: {record}"
    );
    assert_eq!(counted(&record, 1), 0, "{record}");
}

#[test]
fn sixty_four_runs_are_counted_exactly_on_redis() {
    sixty_four_runs_are_counted_exactly(&Backend::redis());
}

#[test]
fn sixty_four_runs_are_counted_exactly_in_a_file() {
    sixty_four_runs_are_counted_exactly(&Backend::file());
}

// ---------------------------------------------------------------------------------------
// A half-open circuit lets exactly one run probe, fleet-wide.

/// Opens the circuit (threshold 1, one failed run), waits for the cooldown to pass, then
/// starts 64 runs at once against a server that answers slowly: one probes (and closes the
/// circuit), the 63 others are refused while its lease holds and send nothing.
fn one_probe_for_the_fleet(backend: &Backend) {
    // Long enough for all 64 runs to be admitted or refused while the probe is in flight:
    // 4 s once let 13 runs start after it on a machine at a load of 25; the others end at
    // once, so only the probe's run waits this long.
    let s = Server::start(vec![
        Step::status(500, ""),
        slow_ok(Duration::from_secs(15)),
    ])
    .expect("server");
    let (url, target, state) = (s.url("/"), target_of(&s), backend.state());
    let breaker = [
        "--state",
        &state,
        "--state-timeout",
        PATIENT,
        "--breaker-threshold",
        "1",
        "--breaker-cooldown",
        "1s",
    ];
    let with = |extra: &[&'static str]| [&breaker[..], extra, &[url.as_str()]].concat();
    let (out, _) = run(&with(&["--attempts", "1"]));
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let record = backend.record(&target);
    assert!(record["breaker"]["opened_at"].is_u64(), "{record}");

    // The cooldown passes; --explain says so (and takes no lease).
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let (out, _) = run(&with(&["--explain"]));
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        if shown.contains("circuit half-open: the next run probes") {
            break;
        }
        assert!(shown.contains("circuit open: refusing"), "{shown}");
        assert!(
            Instant::now() < give_up,
            "the cooldown never passed: {shown}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let outs = run_many(64, &with(&[]));
    assert_eq!(codes(&outs), [&[0][..], &[7; 63][..]].concat());
    for out in &outs {
        let err = stderr(out);
        if code(out) == 0 {
            assert!(
                err.contains("this run probes with a single attempt"),
                "{err}"
            );
        } else {
            assert!(err.contains("a probe is in flight"), "{err}");
            assert!(attempt_lines(out).is_empty(), "{err}");
        }
    }
    assert_eq!(
        s.requests().len(),
        2,
        "the failure that opened it, then one probe"
    );
    let record = backend.record(&target);
    let b = &record["breaker"];
    assert!(b["opened_at"].is_null(), "the probe closed it: {record}");
    assert!(
        b["probe_id"].is_null() && b["probe_until"].is_null(),
        "{record}"
    );
    assert_eq!(b["failures"], 0, "{record}");
}

#[test]
fn one_probe_for_the_fleet_on_redis() {
    one_probe_for_the_fleet(&Backend::redis());
}

#[test]
fn one_probe_for_the_fleet_in_a_file() {
    one_probe_for_the_fleet(&Backend::file());
}

// ---------------------------------------------------------------------------------------
// A Retry-After told to one run holds back the others.

/// Run A is told 429 with Retry-After: 2 (and has no attempt left); B, whose deadline
/// cannot cover the wait, sends nothing (exit 7); C waits it out, then is served. Then the
/// clamp: A' told Retry-After: 30 under `--max-retry-after 1s` shares 1 s only, so B' with
/// a deadline of 3 s waits about a second and is served instead of being refused.
fn a_retry_after_is_shared(backend: &Backend) {
    let state = backend.state();
    let runs = |extra: &[&str], url: &str| {
        let args = [
            &["--state", state.as_str(), "--retry-after-spread", "0"][..],
            extra,
            &[url],
        ]
        .concat();
        run(&args)
    };
    let s = Server::start(vec![
        Step::with_header(429, "Retry-After", "2"),
        Step::status(200, "ok"),
    ])
    .expect("server");
    let (url, target) = (s.url("/"), target_of(&s));
    let (a, _) = runs(&["--attempts", "1"], &url);
    assert_eq!(code(&a), 4, "{}", stderr(&a));
    let record = backend.record(&target);
    assert!(
        record["hold_until"].is_u64(),
        "the hint is shared: {record}"
    );
    assert_eq!(
        record["breaker"]["failures"], 0,
        "a 429 is no outage: {record}"
    );

    let (b, _) = runs(&["--deadline", "1s"], &url);
    assert_eq!(code(&b), 7, "{}", stderr(&b));
    let err = stderr(&b);
    assert!(
        err.contains("nothing sent") && err.contains("Retry-After") && err.contains("deadline"),
        "{err}"
    );
    assert_eq!(s.requests().len(), 1, "B sent nothing");

    let (c, _) = runs(&["--deadline", "10s"], &url);
    assert_eq!(code(&c), 0, "{}", stderr(&c));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    let waited = reqs[1].at.duration_since(reqs[0].at);
    assert!(
        waited >= Duration::from_millis(1900) && waited < Duration::from_secs(8),
        "C sent {waited:?} after A's request"
    );

    let s = Server::start(vec![
        Step::with_header(429, "Retry-After", "30"),
        Step::status(200, "ok"),
    ])
    .expect("server");
    let url = s.url("/");
    let (a, _) = runs(&["--attempts", "1", "--max-retry-after", "1s"], &url);
    assert_eq!(code(&a), 4, "{}", stderr(&a));
    let (b, _) = runs(&["--deadline", "3s"], &url);
    assert_eq!(code(&b), 0, "the shared hint was clamped: {}", stderr(&b));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    let waited = reqs[1].at.duration_since(reqs[0].at);
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(3),
        "B sent {waited:?} after A's request"
    );
}

#[test]
fn a_retry_after_is_shared_on_redis() {
    a_retry_after_is_shared(&Backend::redis());
}

#[test]
fn a_retry_after_is_shared_in_a_file() {
    a_retry_after_is_shared(&Backend::file());
}

// ---------------------------------------------------------------------------------------
// Rate limiting is not an outage.

/// 20 concurrent runs against a server that rate limits every request (429, Retry-After:
/// 1), with the default threshold of 5 and the default floor of 3 retries: a retry after a
/// 429 is not charged to the budget, so every run makes its second attempt (exit 4, none
/// refused with 7), and none of it counts as a failed run: the circuit stays closed, and
/// the next run is let through.
fn rate_limiting_is_not_an_outage(backend: &Backend) {
    let s = Server::start(vec![Step::with_header(429, "Retry-After", "1")]).expect("server");
    let (url, target, state) = (s.url("/"), target_of(&s), backend.state());
    let common = [
        "--state",
        &state,
        "--state-timeout",
        PATIENT,
        "--base",
        "10ms",
        "--retry-after-spread",
        "0",
    ];
    let with = |extra: &[&'static str]| [&common[..], extra, &[url.as_str()]].concat();
    let outs = run_many(20, &with(&["--attempts", "2"]));
    for out in &outs {
        assert!(warnings(out).is_empty(), "{}", stderr(out));
    }
    assert_eq!(codes(&outs), [4; 20]);
    assert_eq!(s.requests().len(), 20 * 2);
    let record = backend.record(&target);
    assert_eq!(record["breaker"]["failures"], 0, "{record}");
    assert!(record["breaker"]["opened_at"].is_null(), "{record}");

    let (out, _) = run(&with(&["--explain"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("circuit closed (0 of 5 failed runs in a row)"),
        "{shown}"
    );
    let (out, _) = run(&with(&["--attempts", "1"]));
    assert_eq!(
        code(&out),
        4,
        "let through, and rate limited: {}",
        stderr(&out)
    );
    assert_eq!(s.requests().len(), 41);
}

#[test]
fn rate_limiting_is_not_an_outage_on_redis() {
    rate_limiting_is_not_an_outage(&Backend::redis());
}

#[test]
fn rate_limiting_is_not_an_outage_in_a_file() {
    rate_limiting_is_not_an_outage(&Backend::file());
}

// ---------------------------------------------------------------------------------------
// A store that cannot be used: one warning within the store timeout, then as
// --state-on-error says.

/// The store timeout the failure tests give.
const STORE_TIMEOUT: &str = "300ms";
/// The most a run with that timeout may take against a healthy server (generous: the
/// store's bound, start-up and one loopback request on busy cores).
const WITHIN: Duration = Duration::from_secs(3);

/// Runs against `s` (healthy) with `--state state`, a store that can be read but not
/// written: a closed circuit's admission only reads (it has nothing worth writing), so the
/// request is sent, under either policy, and recording its end fails with one warning.
fn assert_record_fails(s: &Server, state: &str, shown: &str, why: &str) {
    for policy in ["open", "closed"] {
        let sent = s.requests().len();
        let args = [
            "--state",
            state,
            "--state-timeout",
            STORE_TIMEOUT,
            "--state-on-error",
            policy,
        ];
        let (out, took) = run(&[&args[..], &[s.url("/").as_str()]].concat());
        let err = stderr(&out);
        assert_eq!(code(&out), 0, "{policy}: {err}");
        assert!(took < WITHIN, "{took:?}: {err}");
        assert_eq!(
            warnings(&out),
            [format!(
                "retry-http: warning: cannot record the run in the state store {shown}: {why}"
            )],
            "{policy}: {err}"
        );
        assert_eq!(
            s.requests().len(),
            sent + 1,
            "{policy}: the request is sent"
        );
    }
}

/// Runs against `s` (healthy) with `--state state`, which cannot be used: with the default
/// policy the run ends 0 within the bound, its one warning naming the store as `shown`
/// (password masked) and saying why (one of `why`, in any case); with `--state-on-error
/// closed` it ends 7 in one line, and `s` gets nothing.
fn assert_store_fails(s: &Server, state: &str, shown: &str, why: &[&str]) {
    let url = s.url("/");
    let sent = s.requests().len();
    let base = ["--state", state, "--state-timeout", STORE_TIMEOUT];
    let (out, took) = run(&[&base[..], &[url.as_str()]].concat());
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(took < WITHIN, "{took:?}: {err}");
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "one warning: {err}");
    let lower = w[0].to_lowercase();
    assert!(
        w[0].starts_with(&format!(
            "retry-http: warning: cannot use the state store {shown}: "
        )) && why.iter().any(|y| lower.contains(&y.to_lowercase()))
            && w[0].ends_with("; going on without it"),
        "{}",
        w[0]
    );
    assert!(!err.contains(SECRET), "{err}");
    assert_eq!(
        s.requests().len(),
        sent + 1,
        "the run went on without the store"
    );

    let (out, took) = run(&[&base[..], &["--state-on-error", "closed", &url]].concat());
    let err = stderr(&out);
    assert_eq!(code(&out), 7, "{err}");
    assert!(took < WITHIN, "{took:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "nothing sent: the state store {shown} cannot be used ("
        )) && err.contains("--state-on-error is closed"),
        "{err}"
    );
    assert!(!err.contains(SECRET), "{err}");
    assert_eq!(s.requests().len(), sent + 1, "closed sent a request");
}

/// A healthy server.
fn healthy() -> Server {
    Server::start(vec![Step::status(200, "ok")]).expect("server")
}

#[test]
fn a_refused_connection() {
    let s = healthy();
    let port = closed_port();
    let state = format!("redis://u:{SECRET}@127.0.0.1:{port}");
    let shown = format!("redis://u:***@127.0.0.1:{port}/0");
    assert_store_fails(&s, &state, &shown, &["refused"]);

    // Under --log-format json the one warning is a JSON line, as every line is.
    let (out, _) = run(&["--state", &state, "--log-format", "json", &s.url("/")]);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    for line in err.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        assert!(v["type"].is_string(), "{line}");
    }
    let w = json_lines(&out, "warning");
    assert_eq!(w.len(), 1, "{err}");
    assert_eq!(
        w[0],
        serde_json::json!({
            "type": "warning",
            "message": format!(
                "cannot use the state store {shown}: the connection was refused; going on without it"
            ),
        })
    );
    assert!(!err.contains(SECRET), "{err}");
    assert_eq!(s.requests().len(), 2);
}

#[test]
fn a_black_holed_port() {
    let s = healthy();
    let hole = Silent::start();
    let port = hole.port;
    // With a password the connection's AUTH gets no answer; without one, the first read.
    let state = format!("redis://u:{SECRET}@127.0.0.1:{port}");
    let shown = format!("redis://u:***@127.0.0.1:{port}/0");
    assert_store_fails(&s, &state, &shown, &["timed out"]);
    let plain = format!("redis://127.0.0.1:{port}");
    assert_store_fails(&s, &plain, &format!("{plain}/0"), &["timed out"]);

    // The default store timeout, well inside a deadline of 1 s: the run is served in time.
    let (out, took) = run(&["--state", &state, "--deadline", "1s", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert_eq!(warnings(&out).len(), 1, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 3);
    // A store timeout longer than the deadline is cut to half of what is left: the store
    // is given up on, said once, and the request is served in the other half.
    let (out, took) = run(&[
        "--state",
        &state,
        "--state-timeout",
        "5s",
        "--deadline",
        "1s",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert_eq!(warnings(&out).len(), 1, "{}", stderr(&out));
    assert!(!stderr(&out).contains(SECRET), "{}", stderr(&out));
    assert_eq!(s.requests().len(), 4);
}

#[test]
fn a_frozen_server() {
    let s = healthy();
    let r = RedisServer::start();
    let shown = format!("{}/0", r.url());
    r.stop_signal();
    assert_store_fails(&s, &r.url(), &shown, &["timed out"]);
    r.cont_signal();
    // Thawed, it is used again.
    let (out, _) = run(&["--state", &r.url(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(counted(&redis_record(&r, &target_of(&s)), 1), 1);
}

/// The bound is on each operation, not on each command of it: a frozen server given
/// `--state-timeout 1s` inside a deadline of 3 s is given up on after 1 s (not once per
/// command, which was 2 s), and the run is served in the time left.
#[test]
fn a_frozen_server_costs_no_more_than_the_store_timeout() {
    let s = healthy();
    let r = RedisServer::start();
    r.stop_signal();
    let (out, took) = run(&[
        "--state",
        &r.url(),
        "--state-timeout",
        "1s",
        "--deadline",
        "3s",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{took:?}: {}", stderr(&out));
    assert!(took < Duration::from_millis(1900), "{took:?}");
    assert_eq!(warnings(&out).len(), 1, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn a_paused_server() {
    let s = healthy();
    let r = RedisServer::start();
    let paused = Instant::now();
    r.cli(&["CLIENT", "PAUSE", "20000", "ALL"]);
    assert_store_fails(&s, &r.url(), &format!("{}/0", r.url()), &["timed out"]);
    assert!(
        paused.elapsed() < Duration::from_secs(20),
        "both runs ended while the server was paused"
    );
}

#[test]
fn a_wrong_password_or_none() {
    let s = healthy();
    let r = RedisServer::start_with(&["--requirepass", "the-right-one"]);
    let port = r.port().expect("a port");
    assert_store_fails(
        &s,
        &format!("redis://u:{SECRET}@127.0.0.1:{port}"),
        &format!("redis://u:***@127.0.0.1:{port}/0"),
        &["password"],
    );
    assert_store_fails(
        &s,
        &format!("redis://:{SECRET}@127.0.0.1:{port}"),
        &format!("redis://:***@127.0.0.1:{port}/0"),
        &["password"],
    );
    assert_store_fails(
        &s,
        &r.url(),
        &format!("{}/0", r.url()),
        &["password", "authentication"],
    );
    assert_eq!(r.cli(&["DBSIZE"]), "0");
}

/// A server holding the record of `s`'s target, written by one run: a run writes only once
/// there is something to remember, so a store that refuses writes fails a run's first
/// step only when the record is there.
fn with_a_record(s: &Server) -> (RedisServer, String) {
    let r = RedisServer::start();
    let (out, _) = run(&["--state", &r.url(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = r.cli(&["GET", &key(&target_of(s))]);
    assert!(!text.is_empty(), "the key was written");
    (r, text)
}

#[test]
fn a_server_out_of_memory() {
    let s = healthy();
    let (r, before) = with_a_record(&s);
    r.cli(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    r.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    assert!(
        r.cli(&["SET", "other", "x"]).starts_with("OOM"),
        "writes fail"
    );
    let shown = format!("{}/0", r.url());
    assert_record_fails(
        &s,
        &r.url(),
        &shown,
        "the server is out of memory (maxmemory)",
    );
    assert_eq!(r.cli(&["GET", &key(&target_of(&s))]), before, "unchanged");
}

#[test]
fn a_read_only_replica() {
    let s = healthy();
    let (r, before) = with_a_record(&s);
    // A replica of a primary that is not there keeps its data and refuses writes.
    r.cli(&["REPLICAOF", "127.0.0.1", &closed_port().to_string()]);
    let shown = format!("{}/0", r.url());
    assert_record_fails(&s, &r.url(), &shown, "the server is a read-only replica");
    assert_eq!(r.cli(&["GET", &key(&target_of(&s))]), before, "unchanged");
}

#[test]
fn flushed_scripts_are_loaded_again() {
    let s = healthy();
    let (r, _) = with_a_record(&s);
    r.cli(&["SCRIPT", "FLUSH"]);
    let (out, _) = run(&["--state", &r.url(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .lines()
            .all(|l| l.starts_with("retry-http: attempt ")),
        "{}",
        stderr(&out)
    );
    assert_eq!(counted(&redis_record(&r, &target_of(&s)), 1), 2);
}

#[test]
fn a_key_of_another_type() {
    let s = healthy();
    let r = RedisServer::start();
    let k = key(&target_of(&s));
    r.cli(&["HSET", &k, "a", "b"]);
    let shown = format!("{}/0", r.url());
    assert_store_fails(&s, &r.url(), &shown, &["type"]);
    assert_eq!(r.cli(&["TYPE", &k]), "hash", "left alone");
    assert_eq!(r.cli(&["HGET", &k, "a"]), "b");
}

#[test]
fn a_key_that_is_not_a_record_is_started_afresh() {
    let s = healthy();
    let r = RedisServer::start();
    let k = key(&target_of(&s));
    r.cli(&["SET", &k, "not a record"]);
    let (out, _) = run(&["--state", &r.url(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        warnings(&out),
        [format!(
            "retry-http: warning: the key {k} in the state store is not a record of retry-http's; starting it afresh"
        )]
    );
    assert_eq!(counted(&redis_record(&r, &target_of(&s)), 1), 1);
}

#[test]
fn a_state_file_that_cannot_be_used_follows_the_same_policy() {
    let s = healthy();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "buy milk\n").expect("write");
    let f = notes.display().to_string();
    let (out, _) = run(&["--state", &f, &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(warnings(&out).len(), 1, "{}", stderr(&out));
    let (out, _) = run(&["--state", &f, "--state-on-error", "closed", &s.url("/")]);
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--state-on-error is closed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.requests().len(), 1, "closed sent a request");
    assert_eq!(std::fs::read_to_string(&notes).expect("read"), "buy milk\n");
}

// ---------------------------------------------------------------------------------------
// TLS, Unix sockets, the prefix and the database.

#[test]
fn tls_with_the_servers_ca() {
    // A TLS handshake of a debug build on a loaded machine can take longer than the default
    // --state-timeout (250ms): the bound here is the test's, not the product's.
    let s = healthy();
    let r = RedisServer::start_tls();
    let ca = r.ca_file().expect("a CA");
    let ca = ca.display().to_string();
    let (out, _) = run(&[
        "--state",
        &r.url(),
        "--state-timeout",
        "3s",
        "--state-cacert",
        &ca,
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(counted(&redis_record(&r, &target_of(&s)), 1), 1);

    // Without the CA the certificate is not trusted: one warning, and the run goes on.
    let (out, _) = run(&["--state", &r.url(), "--state-timeout", "3s", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{}", stderr(&out));
    assert!(
        w[0].contains(&format!("the state store {}/0", r.url()))
            && w[0].to_lowercase().contains("certificate"),
        "{}",
        w[0]
    );
    assert_eq!(s.requests().len(), 2);
    assert_eq!(
        counted(&redis_record(&r, &target_of(&s)), 1),
        1,
        "not recorded"
    );

    // --state-cacert is for rediss:// only: a usage error, nothing sent.
    let port = closed_port();
    for state in [format!("redis://127.0.0.1:{port}"), dir_file()] {
        let (out, _) = run(&["--state", &state, "--state-cacert", &ca, &s.url("/")]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains("--state-cacert"), "{}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 2);
}

/// A state file's path in a folder that is never created (the run must not get that far).
fn dir_file() -> String {
    std::env::temp_dir()
        .join(format!("retry-http-never-{}", std::process::id()))
        .join("state.json")
        .display()
        .to_string()
}

#[test]
fn a_unix_socket_a_prefix_and_a_database() {
    let s = healthy();
    let target = target_of(&s);
    let r = RedisServer::start_unix();
    let url = r.url();
    assert!(url.starts_with("redis+unix:///"), "{url}");
    let (out, _) = run(&["--state", &url, &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(counted(&redis_record(&r, &target), 1), 1);

    let (out, _) = run(&["--state", &format!("{url}?db=2&prefix=ci:"), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(r.cli(&["-n", "2", "KEYS", "*"]), format!("ci:{target}"));
    assert_eq!(r.cli(&["KEYS", "*"]), key(&target), "db 0 is as it was");

    let r = RedisServer::start();
    let (out, _) = run(&["--state", &format!("{}/3?prefix=ci:", r.url()), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(r.cli(&["-n", "3", "KEYS", "*"]), format!("ci:{target}"));
    assert_eq!(r.cli(&["DBSIZE"]), "0");
}

// ---------------------------------------------------------------------------------------
// Keys expire; --explain reads and writes nothing.

#[test]
fn keys_expire_by_the_state_ttl() {
    let s = healthy();
    let r = RedisServer::start();
    let k = key(&target_of(&s));
    let (out, _) = run(&["--state", &r.url(), "--state-ttl", "5s", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let pttl: i64 = r.cli(&["PTTL", &k]).parse().expect("a number");
    assert!(pttl > 0 && pttl <= 5000, "PTTL {pttl}");
    // The default: a day.
    let (out, _) = run(&["--state", &r.url(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let pttl: i64 = r.cli(&["PTTL", &k]).parse().expect("a number");
    let day = 24 * 3600 * 1000;
    assert!(pttl > day - 60_000 && pttl <= day, "PTTL {pttl}");
}

#[test]
fn explain_reads_the_store_and_changes_nothing() {
    let s = Server::start(vec![Step::with_header(503, "Retry-After", "30")]).expect("server");
    let r = RedisServer::start();
    let target = target_of(&s);
    let (out, _) = run(&["--state", &r.url(), "--attempts", "1", &s.url("/")]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let before = r.cli(&["GET", &key(&target)]);
    assert!(!before.is_empty());

    let (out, _) = run(&["--state", &r.url(), "--explain", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    for line in [
        format!("state:        {}/0 (key retry-http:{target})", r.url()),
        "on error: open".to_string(),
        "now:          circuit closed (1 of 5 failed runs in a row)".to_string(),
        "retry budget: 3 of 3 left in the last 10m (0 successes)".to_string(),
        "Retry-After shared by the runs: holds for ".to_string(),
    ] {
        assert!(shown.contains(&line), "{line:?} in:\n{shown}");
    }
    assert_eq!(s.requests().len(), 1, "--explain sent a request");
    assert_eq!(r.cli(&["GET", &key(&target)]), before, "--explain wrote");

    // A target the store knows nothing of: shown as fresh, and no key is made for it.
    let other = healthy();
    let (out, _) = run(&["--state", &r.url(), "--explain", &other.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        shown.contains("circuit closed (0 of 5 failed runs in a row)")
            && shown.contains("Retry-After shared by the runs: none"),
        "{shown}"
    );
    assert_eq!(r.cli(&["KEYS", "*"]), key(&target), "no key made");
    assert!(other.requests().is_empty());

    // A store that cannot be read is shown as such; still exit 0, still nothing sent.
    let state = format!("redis://u:{SECRET}@127.0.0.1:{}", closed_port());
    let (out, _) = run(&["--state", &state, "--explain", &other.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains("cannot be read now: "), "{shown}");
    assert!(
        !shown.contains(SECRET) && !stderr(&out).contains(SECRET),
        "{shown}"
    );
    assert!(other.requests().is_empty());
}

// ---------------------------------------------------------------------------------------
// What --state refuses.

#[test]
fn a_bad_store_url_is_a_usage_error_that_hides_the_password() {
    let s = healthy();
    for state in [
        format!("redis://u:{SECRET}@h/notadb"),
        format!("memcached://u:{SECRET}@h/"),
        format!("redis://u:{SECRET}@h/0?x=1"),
        format!("redis://u:{SECRET}@h/0?prefix="),
        format!("redis://u:{SECRET}@h/0?prefix=%20"),
        format!("redis+unix:///tmp/r.sock?password={SECRET}&prefix="),
    ] {
        let (out, _) = run(&["--state", &state, &s.url("/")]);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{state}: {err}");
        assert_eq!(err.lines().count(), 1, "{state}: {err}");
        assert!(err.starts_with("retry-http: error: --state"), "{err}");
        assert!(!err.contains(SECRET), "{err}");
        // The same through the environment.
        let out = command()
            .env("RETRY_HTTP_STATE", &state)
            .arg(s.url("/"))
            .output()
            .expect("runs");
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{state}: {err}");
        assert!(!err.contains(SECRET), "{err}");
    }
    assert!(s.requests().is_empty(), "a usage error sent a request");
}

// ---------------------------------------------------------------------------------------
// Hostile stores and runs: a server that trickles its answer, a stopped one inside a
// deadline, a Retry-After longer than a run allows, one that appears during a backoff,
// mistyped URLs, and errors that name the variable that set them.

/// A port whose server answers each connection with a reply that never ends: `head`, then
/// `byte` once every `pause` until the client goes away. A byte always comes before any
/// socket timeout would fire: only a bound on the whole answer ends the wait.
struct Trickler {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Trickler {
    fn start(head: &'static [u8], byte: u8, pause: Duration) -> Trickler {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let stopping = stopping.clone();
                std::thread::spawn(move || {
                    // Ends when the client has closed the connection (the write fails).
                    let mut sent = conn.write_all(head);
                    while sent.is_ok() && !stopping.load(Ordering::SeqCst) {
                        std::thread::sleep(pause);
                        sent = conn.write_all(&[byte]).and_then(|()| conn.flush());
                    }
                });
            }
        });
        Trickler { port, stop }
    }
}

impl Drop for Trickler {
    /// Stops accepting, and stops every trickle at its next byte.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// The most a run may take beyond its store's bound against a healthy server: start-up and
/// one loopback request on busy cores, generously.
const MARGIN: Duration = Duration::from_secs(2);

/// A server that trickles its answer cannot hold a run: an array reply whose 1 MB string
/// comes a byte every 50 ms, and a simple string that comes a byte every 200 ms (each byte
/// inside the 300 ms a socket timeout would allow). Each run gives up on the store at its
/// bound, says so once, and is served (or, closed, sends nothing); --explain ends too.
#[test]
fn a_server_that_trickles_its_answer() {
    let s = healthy();
    let url = s.url("/");
    let bound = Duration::from_millis(300);
    for (hole, what) in [
        (
            Trickler::start(b"*1\r\n$1000000\r\n", b'x', Duration::from_millis(50)),
            "an array a byte every 50ms",
        ),
        (
            Trickler::start(b"+", b'x', Duration::from_millis(200)),
            "a string a byte every 200ms",
        ),
    ] {
        let state = format!("redis://127.0.0.1:{}", hole.port);
        let timed = ["--state", state.as_str(), "--state-timeout", STORE_TIMEOUT];
        let one_warning = |out: &Output| {
            let err = stderr(out);
            let w = warnings(out);
            assert_eq!(w.len(), 1, "{what}: {err}");
            assert!(
                w[0].starts_with(&format!(
                    "retry-http: warning: cannot use the state store {state}/0: "
                )) && w[0].contains("timed out"),
                "{what}: {}",
                w[0]
            );
        };

        let sent = s.requests().len();
        let (out, took) = run(&[&timed[..], &[url.as_str()]].concat());
        assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
        assert!(took < bound + MARGIN, "{what}: {took:?}");
        one_warning(&out);
        assert_eq!(s.requests().len(), sent + 1, "{what}: sent once");

        // Inside a deadline, with the default store timeout and with one longer than the
        // deadline (cut to half of what is left).
        for store in [
            vec!["--state", state.as_str()],
            vec!["--state", state.as_str(), "--state-timeout", "5s"],
        ] {
            let sent = s.requests().len();
            let (out, took) = run(&[&store[..], &["--deadline", "2s", url.as_str()]].concat());
            assert_eq!(code(&out), 0, "{what} {store:?}: {}", stderr(&out));
            assert!(took < Duration::from_secs(2) + MARGIN, "{what}: {took:?}");
            one_warning(&out);
            assert_eq!(s.requests().len(), sent + 1, "{what}: sent once");
        }

        let sent = s.requests().len();
        let (out, took) = run(&[&timed[..], &["--state-on-error", "closed", &url]].concat());
        let err = stderr(&out);
        assert_eq!(code(&out), 7, "{what}: {err}");
        assert!(took < bound + MARGIN, "{what}: {took:?}");
        assert!(err.contains("--state-on-error is closed"), "{what}: {err}");
        assert_eq!(s.requests().len(), sent, "{what}: closed sent a request");

        let (out, took) = run(&[&timed[..], &["--explain", &url]].concat());
        assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
        assert!(took < bound + MARGIN, "{what}: {took:?}");
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(shown.contains("cannot be read now: "), "{what}: {shown}");
        assert_eq!(s.requests().len(), sent, "{what}: --explain sent a request");
    }
}

/// A stopped server (SIGSTOP: the kernel still accepts connections, nothing answers) with
/// the default store timeout inside a deadline of 1 s: the store is given at most half of
/// what is left, said once, and the request is served in the rest.
#[test]
fn a_stopped_server_inside_a_short_deadline() {
    let s = healthy();
    let r = RedisServer::start();
    r.stop_signal();
    let (out, took) = run(&["--state", &r.url(), "--deadline", "1s", &s.url("/")]);
    r.cont_signal();
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{took:?}: {err}");
    assert!(took < Duration::from_secs(1) + MARGIN, "{took:?}: {err}");
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{err}");
    assert!(
        w[0].starts_with(&format!(
            "retry-http: warning: cannot use the state store {}/0: ",
            r.url()
        )) && w[0].contains("timed out"),
        "{}",
        w[0]
    );
    assert_eq!(s.requests().len(), 1, "served");
}

/// Milliseconds since the Unix epoch, as the stores date their records.
fn epoch_millis() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970");
    u64::try_from(since.as_millis()).expect("in range")
}

/// Run A, allowed any Retry-After (`--max-retry-after 3650d`), is told 999999 s (about 11.6
/// days) and shares it; run B, which allows 1 s, waits about 1 s for it, not 11 days (and
/// is not refused for a hold past its deadline), then is served.
fn one_runs_limit_holds_back_no_other(backend: &Backend) {
    let s = Server::start(vec![
        Step::with_header(503, "Retry-After", "999999"),
        Step::status(200, "ok"),
    ])
    .expect("server");
    let (url, target, state) = (s.url("/"), target_of(&s), backend.state());
    let told = epoch_millis();
    let (a, _) = run(&[
        "--state",
        &state,
        "--max-retry-after",
        "3650d",
        "--attempts",
        "1",
        &url,
    ]);
    assert_eq!(code(&a), 4, "{}", stderr(&a));
    let record = backend.record(&target);
    let hold = record["hold_until"].as_u64().expect("a hold is shared");
    let ahead = 999_999_000;
    assert!(
        hold >= told + ahead - 60_000 && hold <= epoch_millis() + ahead + 60_000,
        "{record}"
    );

    let started = std::time::Instant::now();
    let (b, took) = run(&[
        "--state",
        &state,
        "--max-retry-after",
        "1s",
        "--retry-after-spread",
        "0s",
        "--deadline",
        "5s",
        &url,
    ]);
    assert_eq!(code(&b), 0, "clamped to B's own limit: {}", stderr(&b));
    assert!(took < Duration::from_secs(4), "{took:?}: {}", stderr(&b));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2, "{}", stderr(&b));
    let waited = reqs[1].at.duration_since(started);
    assert!(
        waited >= Duration::from_millis(900),
        "B honoured the hold up to its limit: sent {waited:?} after it started"
    );
}

#[test]
fn one_runs_limit_holds_back_no_other_on_redis() {
    one_runs_limit_holds_back_no_other(&Backend::redis());
}

#[test]
fn one_runs_limit_holds_back_no_other_in_a_file() {
    one_runs_limit_holds_back_no_other(&Backend::file());
}

/// Run A fails (503, no Retry-After) and waits 2 s to retry; meanwhile run B is told 429
/// with Retry-After: 3 and shares it. A, its wait over, sees the hold and waits it out
/// before its retry: the retry comes about 3 s after B's request, not 2 s after A's first.
fn a_hold_shared_during_a_backoff_is_honoured(backend: &Backend) {
    let s = Server::start(vec![
        Step::status(503, ""),
        Step::with_header(429, "Retry-After", "3"),
        Step::status(200, "ok"),
    ])
    .expect("server");
    let (url, state) = (s.url("/"), backend.state());
    let a = std_command()
        .args([
            "--state",
            &state,
            "--attempts",
            "2",
            "--base",
            "2s",
            "--cap",
            "2s",
            "--jitter",
            "none",
            "--retry-after-spread",
            "0s",
            &url,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run A starts");
    let give_up = Instant::now() + Duration::from_secs(10);
    while s.requests().is_empty() {
        assert!(Instant::now() < give_up, "A sent nothing");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (b, _) = run(&["--state", &state, "--attempts", "1", &url]);
    assert_eq!(code(&b), 4, "{}", stderr(&b));
    let a = a.wait_with_output().expect("run A ends");
    let err = stderr(&a);
    assert_eq!(code(&a), 0, "{err}");
    let reqs = s.requests();
    assert_eq!(reqs.len(), 3, "A, B, A's retry: {err}");
    let after_b = reqs[2].at.duration_since(reqs[1].at);
    assert!(
        after_b >= Duration::from_millis(2500) && after_b < Duration::from_secs(10),
        "A retried {after_b:?} after B was told Retry-After: 3: {err}"
    );
}

#[test]
fn a_hold_shared_during_a_backoff_is_honoured_on_redis() {
    a_hold_shared_during_a_backoff_is_honoured(&Backend::redis());
}

#[test]
fn a_hold_shared_during_a_backoff_is_honoured_in_a_file() {
    a_hold_shared_during_a_backoff_is_honoured(&Backend::file());
}

/// Runs the binary in `dir` with the store `state` given by `--state` or, `by_env`, by
/// `RETRY_HTTP_STATE`, then `url`.
fn run_in(dir: &std::path::Path, state: &str, by_env: bool, url: &str) -> Output {
    let mut cmd = command();
    cmd.current_dir(dir).timeout(Duration::from_secs(60));
    if by_env {
        cmd.env("RETRY_HTTP_STATE", state);
    } else {
        cmd.args(["--state", state]);
    }
    cmd.arg(url).output().expect("binary runs")
}

/// A Redis URL mistyped is a usage error in one line, never a state file named after it
/// (password and all) in the current folder; a URL with a space before it is a URL, and
/// `redis://SECRET@HOST` holds a password: neither is ever printed.
#[test]
fn a_mistyped_store_url_is_refused_and_its_password_never_shown() {
    let s = healthy();
    let url = s.url("/");
    for state in [
        format!("redis:/u:{SECRET}@127.0.0.1:1"),
        format!("rediss:/u:{SECRET}@h"),
        format!("redis//u:{SECRET}@h"),
        format!("redis:u:{SECRET}@h"),
    ] {
        for by_env in [false, true] {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let out = run_in(dir.path(), &state, by_env, &url);
            let (err, shown) = (stderr(&out), String::from_utf8_lossy(&out.stdout));
            assert_eq!(code(&out), 2, "{state} (env {by_env}): {err}");
            assert_eq!(err.lines().count(), 1, "{state}: {err}");
            assert!(err.starts_with("retry-http: error: --state"), "{err}");
            assert!(
                !err.contains(SECRET) && !shown.contains(SECRET),
                "{err}{shown}"
            );
            if by_env {
                assert!(err.ends_with("(set by $RETRY_HTTP_STATE)\n"), "{err}");
            }
            assert_eq!(names_in(dir.path()), Vec::<String>::new(), "{state}");
        }
    }
    assert!(s.requests().is_empty(), "a usage error sent a request");

    for (state, shown) in [
        (
            format!(" redis://u:{SECRET}@127.0.0.1:1"),
            "redis://u:***@127.0.0.1:1/0",
        ),
        (
            format!("redis://{SECRET}@127.0.0.1:1"),
            "redis://:***@127.0.0.1:1/0",
        ),
    ] {
        for by_env in [false, true] {
            let sent = s.requests().len();
            let dir = tempfile::tempdir().expect("a temporary folder");
            let out = run_in(dir.path(), &state, by_env, &url);
            let (err, body) = (stderr(&out), String::from_utf8_lossy(&out.stdout));
            assert_eq!(code(&out), 0, "{state:?} (env {by_env}): {err}");
            assert_eq!(
                warnings(&out),
                [format!(
                    "retry-http: warning: cannot use the state store {shown}: the connection was refused; going on without it"
                )],
                "{state:?}: {err}"
            );
            assert!(
                !err.contains(SECRET) && !body.contains(SECRET),
                "{err}{body}"
            );
            assert_eq!(names_in(dir.path()), Vec::<String>::new(), "{state:?}");
            assert_eq!(s.requests().len(), sent + 1, "{state:?}: served");
        }
    }
}

/// A bad value from the environment is named as such: the command line does not show it.
#[test]
fn a_bad_state_variable_is_named() {
    let s = healthy();
    let out = command()
        .env("RETRY_HTTP_STATE", "redis://u:pw@h/x")
        .arg(s.url("/"))
        .output()
        .expect("runs");
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("retry-http: error: --state")
            && err.ends_with("(set by $RETRY_HTTP_STATE)\n")
            && !err.contains(":pw@"),
        "{err}"
    );

    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("state.json").display().to_string();
    let out = command()
        .env("RETRY_HTTP_STATE_TIMEOUT", "0")
        .args(["--state", &file, &s.url("/")])
        .output()
        .expect("runs");
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--state-timeout") && err.contains("$RETRY_HTTP_STATE_TIMEOUT"),
        "{err}"
    );
    assert_eq!(names_in(dir.path()), Vec::<String>::new());
    assert!(s.requests().is_empty(), "a usage error sent a request");
}

/// A record written by a clock a year fast (or by hand): its circuit opened a year from now
/// and its budget spent by retries dated then. Written as version 2 of the format, with no
/// field this version added. The run is neither refused nor stopped by the budget: it
/// warns once that the record lies in the future, discards those times, retries and is
/// served; the record is written back without them.
fn a_record_from_a_fast_clock_refuses_nothing(backend: &Backend) {
    let s =
        Server::start(vec![Step::status(503, "busy"), Step::status(200, "ok")]).expect("server");
    let (url, target, state) = (s.url("/"), target_of(&s), backend.state());
    let ahead = epoch_millis() + 365 * 24 * 3600 * 1000;
    let record = serde_json::json!({
        "breaker": {"failures": 9, "opened_at": ahead, "probe_until": null},
        "budget": [[ahead, 0, 50]],
        "seen": epoch_millis(),
    });
    match backend {
        Backend::Redis(r) => {
            let value =
                serde_json::json!({"format": "retry-http-state", "rev": 4, "target": record});
            r.cli(&["SET", &key(&target), &value.to_string()]);
        }
        Backend::File(d) => {
            let file = serde_json::json!({
                "format": "retry-http-state",
                "version": 2,
                "targets": {target.clone(): record},
            });
            std::fs::write(d.path().join("state.json"), file.to_string()).expect("written");
        }
    }
    let (out, _) = run(&[
        "--state",
        &state,
        "--attempts",
        "2",
        "--budget-floor",
        "1",
        "--base",
        "1ms",
        "--cap",
        "2ms",
        &url,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2, "retried: {}", stderr(&out));
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{}", stderr(&out));
    assert!(
        w[0].contains(&target)
            && w[0].contains("lies in the future")
            && w[0].contains("in the future, more than the cooldown (30s) ahead")
            && w[0].contains("1 of its retry budget's buckets"),
        "{}",
        w[0]
    );
    let after = backend.record(&target);
    assert_eq!(after["breaker"]["opened_at"], Value::Null, "{after}");
    assert!(
        after["budget"]
            .as_array()
            .expect("a budget")
            .iter()
            .all(|b| b[0].as_u64().expect("a start") < ahead),
        "{after}"
    );
    // The next run hears nothing of it.
    let (out, _) = run(&["--state", &state, &url]);
    assert_eq!(warnings(&out), Vec::<String>::new(), "{}", stderr(&out));
}

#[test]
fn a_record_from_a_fast_clock_refuses_nothing_on_redis() {
    a_record_from_a_fast_clock_refuses_nothing(&Backend::redis());
}

#[test]
fn a_record_from_a_fast_clock_refuses_nothing_in_a_file() {
    a_record_from_a_fast_clock_refuses_nothing(&Backend::file());
}

// ---------------------------------------------------------------------------------------
// Bounded reads: what a store may answer is read up to a bound, whatever it sends.

/// A port whose "Redis" answers every command with `head` and then `filler` over and over,
/// as fast as the client takes it, until the client goes away; it counts what it sent.
struct Flood {
    port: u16,
    sent: Arc<std::sync::atomic::AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Flood {
    fn start(head: &'static [u8], filler: &'static [u8]) -> Flood {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let sent = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (counted, stopped) = (sent.clone(), stop.clone());
        std::thread::spawn(move || {
            let chunk: Vec<u8> = filler.iter().copied().cycle().take(64 << 10).collect();
            while !stopped.load(Ordering::SeqCst) {
                let Ok((mut c, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let (counted, stopped, chunk) = (counted.clone(), stopped.clone(), chunk.clone());
                std::thread::spawn(move || {
                    c.set_nonblocking(false).expect("blocking");
                    let mut command = [0u8; 4096];
                    if c.read(&mut command).unwrap_or(0) == 0 {
                        return;
                    }
                    if c.write_all(head).is_err() {
                        return;
                    }
                    while !stopped.load(Ordering::SeqCst) && c.write_all(&chunk).is_ok() {
                        counted.fetch_add(chunk.len() as u64, Ordering::SeqCst);
                    }
                });
            }
        });
        Flood { port, sent, stop }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Runs the binary with its address space limited to `mib` MiB (as `prlimit --as` does).
fn run_limited(args: &[&str], mib: u64) -> (Output, Duration) {
    use std::os::unix::process::CommandExt;
    let mut cmd = std_command();
    cmd.args(args);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: mib << 20,
                rlim_max: mib << 20,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let t = Instant::now();
    let out = cmd.output().expect("runs");
    (out, t.elapsed())
}

/// The address space a run is given in these tests (MiB): several times what a run
/// needs, far less than the answers the floods announce.
const ROOM_MIB: u64 = 256;

/// {a bulk string of 512 MiB, an array of 2^31 - 1 elements, a line that never ends,
/// arrays nested without end, a bulk string that is exactly one byte too long} sent as the
/// answer to the store's first command, as fast as the run takes it: each run, in an
/// address space of 256 MiB, warns once, goes on without state, writes its -o file whole
/// and leaves no temporary file, within the store timeout; and the store stopped reading
/// (the flood got no further than a few MiB the kernel buffers).
#[test]
fn a_store_that_answers_without_end_is_read_up_to_a_bound() {
    let floods: [(&str, &'static [u8], &'static [u8]); 5] = [
        ("bulk", b"$536870912\r\n", b"\0"),
        ("array", b"*2147483647\r\n", b":0\r\n"),
        ("line", b"+", b"x"),
        ("nested", b"*1\r\n", b"*1\r\n"),
        (
            "one too long",
            b"*3\r\n$1\r\n1\r\n$1\r\n1\r\n$1048570\r\n",
            b"y",
        ),
    ];
    for (name, head, filler) in floods {
        let s = healthy();
        let flood = Flood::start(head, filler);
        let dir = tempfile::tempdir().expect("a folder");
        let file = dir.path().join("out.txt");
        let state = format!("redis://127.0.0.1:{}", flood.port);
        let (out, took) = run_limited(
            &[
                "--state",
                &state,
                "--state-timeout",
                "3s",
                "-o",
                file.to_str().expect("UTF-8"),
                &s.url("/"),
            ],
            ROOM_MIB,
        );
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        assert!(took < Duration::from_secs(6), "{name}: {took:?}");
        let w = warnings(&out);
        assert_eq!(w.len(), 1, "{name}: {}", stderr(&out));
        assert!(
            w[0].contains(&format!("the state store {state}/0"))
                && w[0].ends_with("going on without it"),
            "{name}: {}",
            w[0]
        );
        assert_eq!(
            std::fs::read_to_string(&file).expect("written"),
            "ok",
            "{name}"
        );
        assert_eq!(
            names_in(dir.path()),
            ["out.txt"],
            "{name}: a temporary file left"
        );
        assert_eq!(s.requests().len(), 1, "{name}");
        // The run is gone; what the flood could still push is what the kernel buffered.
        std::thread::sleep(Duration::from_millis(200));
        let sent = flood.sent.load(Ordering::SeqCst);
        assert!(sent < 64 << 20, "{name}: {} MiB were read", sent >> 20);
    }
}

/// A real key of 32 MiB under the prefix, where a record would be: the server measures it
/// and does not send it (the run, in an address space of 256 MiB, never holds it); the run
/// warns once, counts its request as on a fresh record, and replaces the key with one.
#[test]
fn an_oversized_key_under_the_prefix_is_measured_not_read() {
    let s = healthy();
    let r = RedisServer::start();
    let key = key(&target_of(&s));
    r.cli(&[
        "EVAL",
        "redis.call('SET', KEYS[1], string.rep('x', tonumber(ARGV[1])))",
        "1",
        &key,
        &(32u64 << 20).to_string(),
    ]);
    assert_eq!(r.cli(&["STRLEN", &key]), (32u64 << 20).to_string());
    let (out, took) = run_limited(
        &["--state", &r.url(), "-o", "/dev/null", &s.url("/")],
        ROOM_MIB,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "{took:?}");
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{}", stderr(&out));
    assert!(
        w[0].contains(&format!(
            "the key {key} in the state store holds 33554432 bytes, more than the 64 KiB a record may have; starting it afresh"
        )),
        "{}",
        w[0]
    );
    assert_eq!(
        counted(&redis_record(&r, &target_of(&s)), 1),
        1,
        "replaced by a record"
    );
    let (out, _) = run(&["--state", &r.url(), &s.url("/")]);
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
}

/// A store that stops answering while the run's request is in flight: the run's record of
/// its end is not confirmed within its bound, and its one warning says it may still be
/// counted (the command was sent, at most once), not that it was lost; once the server
/// wakes, it is counted once.
#[test]
fn a_record_not_confirmed_in_time_may_still_count_once() {
    let r = RedisServer::start();
    // The answer comes in two parts, a second apart: the test freezes the store between.
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n".to_vec();
    let parts = vec![head, b"ok".to_vec()];
    let pause = Duration::from_millis(1500);
    let s = Server::start(vec![Step::RawPaced { parts, pause }]).expect("server");
    let state = r.url();
    let args = [
        "--state",
        &state,
        "--state-timeout",
        "300ms",
        "-o",
        "/dev/null",
    ];
    let url = s.url("/");
    let run = std::thread::spawn({
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        move || {
            let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
            all.push(&url);
            run(&all).0
        }
    });
    let until = Instant::now() + Duration::from_secs(20);
    while s.requests().is_empty() {
        assert!(Instant::now() < until, "the request never came");
        std::thread::sleep(Duration::from_millis(5));
    }
    r.stop_signal();
    let out = run.join().expect("the run");
    r.cont_signal();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{}", stderr(&out));
    assert!(w[0].contains("cannot record the run"), "{}", w[0]);
    assert!(
        w[0].ends_with("timed out after 300ms (--state-timeout, and at most half the time left before the deadline); if the store received it late, it may still count it (once)"),
        "{}",
        w[0]
    );
    assert_eq!(
        counted(&redis_record(&r, &target_of(&s)), 1),
        1,
        "counted once"
    );
}
