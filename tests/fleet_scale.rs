//! `--state redis://...` at fleet scale, measured from outside: the real binary, a real
//! redis-server, and between them, where round trips are counted, a loopback proxy
//! (tests/support/round_trips.rs). Exact counts when the store is given time
//! (successes and failures of 512 runs, 128 at once; the retries granted to 200 runs at
//! once), the same invariant at the default `--state-timeout`, and the round trips a run
//! costs, alone and at 128 at once, with a password and a database number too. The tests
//! of this file run one at a time.
//!
//! What the store holds is read back with `retry-http --explain` (the circuit's failures
//! in a row, the budget's successes and retries left), not from the key's text, so these
//! tests hold whatever form the store gives a record.
//!
//! Exactness is tested twice. Given a patient bound (`--state-timeout 10s`), no run may
//! give up on the store and the store must hold every outcome exactly once: an outcome
//! lost under contention fails it whatever the machine's load. At the default bound
//! (250 ms), a run may give up on the store when the machine is loaded (128 processes on
//! two cores wait for the CPU between a command and its answer); such a run says so (one
//! warning, "cannot use the state store" or "cannot record the run") and its write may
//! still have been applied, so the store holds between the silent runs and all the runs:
//! never fewer (an outcome lost in silence), never more (one counted twice).

// This file is a test binary of its own, not one of `it`'s files: cargo runs test binaries
// one after the other, so its batches of 128 and 200 processes never share the 2 cores with
// the rest of the suite (whose own processes made runs here miss the store's 250 ms bound).
// The helpers it does not use are the other binaries'.
#[allow(dead_code)]
#[path = "it/common.rs"]
mod common;
// The steps of the scripted server it does not use are the other binaries'.
#[path = "support/redis_cluster.rs"]
mod redis_cluster;
#[path = "support/redis_server.rs"]
mod redis_server;
#[allow(dead_code)]
#[path = "support/scripted.rs"]
mod scripted;

use crate::common::*;
use crate::redis_cluster::RedisCluster;
use crate::redis_server::RedisServer;
use std::net::SocketAddr;
use std::process::Output;
use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::time::Duration;

#[path = "support/round_trips.rs"]
mod round_trips;
use round_trips::{Counts, RoundTripProxy};

/// The bound given to the store in the exact-count batches: far beyond what a loaded
/// machine's scheduling adds to a round trip, so that a run that gives up on the store is
/// the store's failure, not the machine's.
const PATIENT: [&str; 2] = ["--state-timeout", "10s"];

/// At the default bound, the least share of a batch that must use the store throughout
/// for the invariant to say anything: one run in `SILENT_AT_LEAST`. Measured: 0 of 512
/// runs warned on an idle machine, 66 of 512 on a slower one running the suite; the
/// compare-and-set retried on a hot key until its bound made a sixth to a half give up.
const SILENT_AT_LEAST: usize = 4;

/// Runs at once in the exact-count batches, and how many each of those runs one after the
/// other: 512 runs, 128 at a time, so that the store is contended for the whole batch
/// rather than only while the first runs start.
const AT_ONCE: usize = 128;
const EACH: usize = 4;

/// The most round trips a run may cost on the common path: a closed circuit, a success.
const SUCCESS_ROUND_TRIPS: f64 = 3.0;
/// The most round trips a run with one retry may cost.
const RETRY_ROUND_TRIPS: f64 = 4.0;

/// The time the proxy is given to see every connection of a batch closed.
const SETTLE: Duration = Duration::from_secs(20);

/// Held by every test of this file while it runs: a batch of 128 processes on a machine of
/// two cores must not overlap another batch, nor a run measured alone.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Waits for the other tests of this file to end (a test that failed still lets the next in).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs the binary `n` times at once, each on a thread of its own, released together.
fn run_batch(n: usize, args: &[String]) -> Vec<Output> {
    run_pool(n, 1, args)
}

/// Runs the binary `each` times on each of `n` threads released together, one run after
/// the other on a thread: `n` at once, `n` x `each` in all.
fn run_pool(n: usize, each: usize, args: &[String]) -> Vec<Output> {
    let start = Arc::new(Barrier::new(n));
    let runs: Vec<_> = (0..n)
        .map(|_| {
            let (args, start) = (args.to_vec(), start.clone());
            std::thread::spawn(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                start.wait();
                (0..each).map(|_| run(&args).0).collect::<Vec<_>>()
            })
        })
        .collect();
    runs.into_iter()
        .flat_map(|r| r.join().expect("a run's thread"))
        .collect()
}

/// `args` as owned strings.
fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// How a run fared with the store, from its warning lines: `None` if it used the store
/// throughout, else its warning; any other warning fails the test.
fn store_warning(out: &Output) -> Option<String> {
    let err = stderr(out);
    let mut found = None;
    for line in err
        .lines()
        .filter(|l| l.starts_with("retry-http: warning:"))
    {
        assert!(
            line.contains("cannot use the state store")
                || line.contains("cannot record the run in the state store"),
            "an unexpected warning: {err}"
        );
        found = Some(line.to_string());
    }
    found
}

/// The warnings of the runs of `outs` that warned about the store, one per such run.
fn warned(outs: &[Output]) -> Vec<String> {
    outs.iter().filter_map(store_warning).collect()
}

/// What `retry-http --explain` says the store holds for `url`'s target, given `flags`
/// (the breaker's threshold and the budget's, so the figures are read against them).
struct Shown {
    /// Failed runs in a row, from "circuit closed (N of T failed runs in a row)".
    failures: u64,
    /// Retries left and allowed, from "retry budget: X of Y left in ...".
    left: u64,
    allowed: u64,
    /// Successes in the budget's window, from "(S successes)" (or "(1 success)").
    successes: u64,
}

/// The number in `text` after `before` and up to `after`.
fn number_between(text: &str, before: &str, after: &str) -> u64 {
    let from = text
        .find(before)
        .unwrap_or_else(|| panic!("{before:?} in:\n{text}"));
    let rest = &text[from + before.len()..];
    let to = rest
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} after {before:?} in:\n{text}"));
    rest[..to]
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("a number after {before:?} ({e}) in:\n{text}"))
}

fn explain(state: &str, flags: &[&str], url: &str) -> Shown {
    let args = [&["--explain", "--state", state][..], flags, &[url]].concat();
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!text.contains("cannot be read now"), "{text}");
    let budget = text
        .lines()
        .find(|l| l.contains("retry budget: "))
        .unwrap_or_else(|| panic!("a retry budget in:\n{text}"));
    Shown {
        failures: number_between(&text, "circuit closed (", " of "),
        left: number_between(budget, "retry budget: ", " of "),
        allowed: number_between(budget, " of ", " left in the last "),
        successes: number_between(budget, " (", " success"),
    }
}

/// Asserts that the store holds, as `recorded`, between the runs of `outs` that used it
/// throughout and all of them, and that the runs that warned are rare.
/// Asserts the invariant of a batch at the default bound: every silent run's outcome is in
/// `recorded`, none twice, and enough runs were silent for that to mean something.
fn assert_reported(what: &str, recorded: u64, outs: &[Output]) {
    let warned = warned(outs);
    let runs = outs.len();
    let silent = (runs - warned.len()) as u64;
    let first = warned.first();
    assert!(
        recorded >= silent,
        "{what}: {recorded} recorded of {runs} runs, {} of which warned: {} lost in silence; the first warning: {first:?}",
        warned.len(),
        silent - recorded
    );
    assert!(
        recorded <= runs as u64,
        "{what}: {recorded} recorded of {runs} runs: counted twice"
    );
    let least = (runs / SILENT_AT_LEAST) as u64;
    assert!(
        silent >= least,
        "{what}: only {silent} of {runs} runs used the store throughout, fewer than {least}; the first warning: {first:?}"
    );
}

/// Asserts a patient batch: no run gave up on the store, and it holds each outcome once.
fn assert_exact(what: &str, recorded: u64, outs: &[Output]) {
    let warned = warned(outs);
    assert!(
        warned.is_empty(),
        "{what}: {} of {} runs gave up on a store given 10 s; the first: {:?}",
        warned.len(),
        outs.len(),
        warned.first()
    );
    assert_eq!(recorded, outs.len() as u64, "{what}: recorded of runs");
}

/// The address of a TCP redis-server.
fn address(r: &RedisServer) -> SocketAddr {
    let port = r.port().expect("a TCP server");
    SocketAddr::from(([127, 0, 0, 1], port))
}

// ---------------------------------------------------------------------------------------
// Every outcome recorded, at 128 and 200 at once.

/// Runs 512 successful runs, 128 at once, with `flags`, and returns their outputs and the
/// successes the store holds afterwards; the server saw each run once.
fn successes_of_512(flags: &[&str]) -> (Vec<Output>, u64) {
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let r = RedisServer::start();
    let (url, state) = (s.url("/"), r.url());
    let args = [flags, &["--state", &state, &url]].concat();
    let outs = run_pool(AT_ONCE, EACH, &owned(&args));
    for out in &outs {
        assert_eq!(code(out), 0, "{}", stderr(out));
    }
    assert_eq!(s.requests().len(), outs.len());
    let recorded = explain(&state, &[], &url).successes;
    (outs, recorded)
}

/// 512 successful runs, 128 at once, the store given time: it counts every one, once.
#[test]
fn successes_of_128_runs_at_once_are_all_recorded() {
    let _alone = one_at_a_time();
    let (outs, recorded) = successes_of_512(&PATIENT);
    assert_exact("successes", recorded, &outs);
}

/// The same at the default bound: every run that did not warn is counted, none twice.
#[test]
fn successes_at_the_default_bound_are_recorded_or_reported() {
    let _alone = one_at_a_time();
    let (outs, recorded) = successes_of_512(&[]);
    assert_reported("successes", recorded, &outs);
}

/// 512 failing runs, 128 at once (one attempt each, a threshold the count stays under):
/// the store given time, the breaker counts every one, once.
#[test]
fn failures_of_128_runs_at_once_are_all_recorded() {
    let _alone = one_at_a_time();
    let s = Server::start(vec![Step::status(500, "")]).expect("server");
    let r = RedisServer::start();
    let (url, state) = (s.url("/"), r.url());
    let breaker = ["--breaker-threshold", "1000"];
    let args = [
        &["--state", &state, "--attempts", "1"][..],
        &PATIENT,
        &breaker,
        &[&url],
    ]
    .concat();
    let outs = run_pool(AT_ONCE, EACH, &owned(&args));
    for out in &outs {
        assert_eq!(code(out), 4, "{}", stderr(out));
    }
    let shown = explain(&state, &breaker, &url);
    assert_exact("failures in a row", shown.failures, &outs);
    assert_eq!(s.requests().len(), outs.len());
}

/// 200 failing runs at once, each allowed one retry by its flags, share a budget that
/// allows the fleet only its floor of 20: the store given time, the server gets 200 first
/// tries and exactly 20 retries.
#[test]
fn retries_granted_to_200_runs_at_once_are_exactly_the_floor() {
    let _alone = one_at_a_time();
    let s = Server::start(vec![Step::status(500, "")]).expect("server");
    let r = RedisServer::start();
    let (url, state) = (s.url("/"), r.url());
    let flags = [
        "--retry-budget",
        "0%",
        "--budget-floor",
        "20",
        "--breaker-threshold",
        "1000",
    ];
    let fast = ["--retry", "1", "--base", "1ms", "--cap", "5ms"];
    let args = [&["--state", &state][..], &PATIENT, &flags, &fast, &[&url]].concat();
    let outs = run_batch(200, &owned(&args));
    let mut attempts = 0;
    for out in &outs {
        let err = stderr(out);
        assert!(matches!(code(out), 4 | 7), "{err}");
        attempts += attempt_lines(out).len();
    }
    let warned = warned(&outs);
    assert!(
        warned.is_empty(),
        "{} of 200 runs gave up on a store given 10 s; the first: {:?}",
        warned.len(),
        warned.first()
    );
    let shown = explain(&state, &flags, &url);
    assert_eq!(shown.allowed, 20, "the floor, with no success");
    assert_eq!(shown.left, 0, "200 runs want a retry: the floor is spent");
    assert_eq!(
        s.requests().len(),
        200 + 20,
        "200 first tries and the floor"
    );
    assert_eq!(
        attempts,
        s.requests().len(),
        "the logs agree with the server"
    );
}

// ---------------------------------------------------------------------------------------
// The fleet's bound: a run's own retries do not count against it, and yet 100 failing runs
// at once get at most `allowed + r - 1` retries (docs/fleet.md, "The fleet's bound").

/// The floor of the default budget, and the retries a run of `--attempts 4` makes.
const DEFAULT_FLOOR: usize = 3;
const OWN: usize = 3;

/// First a lone failing run with `--attempts 11` on `state`: it makes all 10 of its retries,
/// past the floor of 3, as without `--state`. Then 100 failing runs at once with
/// `--attempts 4` and the default budget flags (the breaker's threshold out of reach, so
/// that every run sends its first try), sharing `state`, against another target: the store
/// given time, the server gets 100 first tries and between the floor (3) and
/// floor + 3 - 1 = 5 retries, as the runs' logs and the record say.
fn retries_of_100_failing_runs(state: &str) {
    let breaker = ["--breaker-threshold", "1000"];
    let lone = Server::start(vec![Step::status(503, "")]).expect("server");
    let alone = ["--attempts", "11", "--base", "1ms", "--cap", "5ms"];
    let (out, _) = run(&[&["--state", state][..], &PATIENT, &alone, &[&lone.url("/")]].concat());
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(lone.requests().len(), 11, "a lone run: {}", stderr(&out));
    let s = Server::start(vec![Step::status(503, "")]).expect("server");
    let url = s.url("/");
    let fast = ["--attempts", "4", "--base", "1ms", "--cap", "5ms"];
    let args = [&["--state", state][..], &PATIENT, &breaker, &fast, &[&url]].concat();
    let outs = run_batch(100, &owned(&args));
    let mut attempts = 0;
    for out in &outs {
        assert!(matches!(code(out), 4 | 7), "{}", stderr(out));
        attempts += attempt_lines(out).len();
    }
    let warned = warned(&outs);
    assert!(
        warned.is_empty(),
        "{} of 100 runs gave up on a store given 10 s; the first: {:?}",
        warned.len(),
        warned.first()
    );
    let retries = s.requests().len() - 100;
    assert!(
        (DEFAULT_FLOOR..=DEFAULT_FLOOR + OWN - 1).contains(&retries),
        "{retries} retries from 100 runs: the bound is 3 + 3 - 1"
    );
    assert_eq!(
        attempts,
        s.requests().len(),
        "the logs agree with the server"
    );
    let shown = explain(state, &breaker, &url);
    assert_eq!((shown.allowed, shown.left), (3, 0), "the floor, spent");
}

#[test]
fn a_hundred_failing_runs_stay_within_the_bound_in_a_file() {
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().expect("a folder");
    let state = dir.path().join("state.json");
    retries_of_100_failing_runs(&state.display().to_string());
}

#[test]
fn a_hundred_failing_runs_stay_within_the_bound_on_redis() {
    let _alone = one_at_a_time();
    let r = RedisServer::start();
    retries_of_100_failing_runs(&r.url());
}

#[test]
fn a_hundred_failing_runs_stay_within_the_bound_on_a_cluster() {
    let _alone = one_at_a_time();
    let cluster = RedisCluster::start();
    retries_of_100_failing_runs(&cluster.url());
}

// ---------------------------------------------------------------------------------------
// Round trips, counted by a proxy between the runs and the store.

/// Runs `n` successful runs at once against a fresh healthy target, through a proxy in
/// front of `r` given as `state(proxy_port)`, and asserts that they cost at most `most`
/// round trips each; then that the runs used the store (every success recorded, few
/// warnings: a run that gave up on the store costs fewer round trips).
fn successes_through_proxy(r: &RedisServer, state: impl Fn(u16) -> String, n: usize, most: f64) {
    successes_through_proxy_with(r, state, n, most, &[]);
}

/// `successes_through_proxy` with `extra` flags on every run.
fn successes_through_proxy_with(
    r: &RedisServer,
    state: impl Fn(u16) -> String,
    n: usize,
    most: f64,
    extra: &[&str],
) {
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let proxy = RoundTripProxy::start(address(r));
    let (url, through) = (s.url("/"), state(proxy.port()));
    // Patient: the proxy's own threads, two a connection, add their scheduling delays to
    // every round trip on a loaded machine; a run that gave up would cost fewer round
    // trips. (Exactness at the default bound is tested above, without the proxy.)
    let patient = ["--state-timeout", "10s"];
    let outs = run_batch(
        n,
        &owned(&[&patient[..], extra, &["--state", &through, &url]].concat()),
    );
    for out in &outs {
        assert_eq!(code(out), 0, "{}", stderr(out));
    }
    let counts = proxy.settle(SETTLE);
    assert!(
        counts.connections >= 1,
        "the runs used the proxy: {counts:?}"
    );
    let warned = warned(&outs).len();
    let what = format!("{n} successes at once ({warned} warned)");
    assert_at_most(&what, counts, n, most);
    let shown = explain(&through, &[], &url);
    assert_exact("successes", shown.successes, &outs);
}

/// One run with one retry (a 503, then a 200) through a proxy in front of `r`: a job whose
/// key the state keeps (a POST with `--idempotency-key auto`), taken at the admission and
/// retired by the final record, in the round trips a run makes anyway.
fn one_retry_through_proxy(r: &RedisServer, state: impl Fn(u16) -> String) -> Counts {
    let s =
        Server::start(vec![Step::status(503, "busy"), Step::status(200, "ok")]).expect("server");
    let proxy = RoundTripProxy::start(address(r));
    let (url, through) = (s.url("/"), state(proxy.port()));
    let (out, _) = run(&[
        "--state",
        &through,
        "--attempts",
        "2",
        "--base",
        "1ms",
        "--idempotency-key",
        "auto",
        "-d",
        "job",
        &url,
    ]);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert_eq!(attempt_lines(&out).len(), 2, "{err}");
    assert!(store_warning(&out).is_none(), "{err}");
    let counts = proxy.settle(SETTLE);
    assert!(
        counts.connections >= 1,
        "the run used the proxy: {counts:?}"
    );
    counts
}

/// `redis://127.0.0.1:PORT`.
fn plain(port: u16) -> String {
    format!("redis://127.0.0.1:{port}")
}

/// The password of the server that wants one.
const PASSWORD: &str = "s3cret";

/// `redis://:PASSWORD@127.0.0.1:PORT/3`: AUTH and SELECT on every connection.
fn with_password_and_db(port: u16) -> String {
    format!("redis://:{PASSWORD}@127.0.0.1:{port}/3")
}

fn assert_at_most(what: &str, counts: Counts, runs: usize, most: f64) {
    let per_run = counts.per_run(runs);
    assert!(
        per_run <= most,
        "{what}: {per_run:.2} round trips per run ({} over {} connections for {runs} runs), more than {most}",
        counts.round_trips,
        counts.connections
    );
}

#[test]
fn a_success_alone_costs_at_most_three_round_trips() {
    let _alone = one_at_a_time();
    let r = RedisServer::start();
    successes_through_proxy(&r, plain, 1, SUCCESS_ROUND_TRIPS);
}

#[test]
fn successes_of_128_at_once_cost_at_most_three_round_trips_each() {
    let _alone = one_at_a_time();
    let r = RedisServer::start();
    successes_through_proxy(&r, plain, 128, SUCCESS_ROUND_TRIPS);
}

/// A job whose key the state keeps costs no round trip more: taken at the admission,
/// retired by the final record.
#[test]
fn a_job_s_key_fits_in_the_same_round_trips() {
    let _alone = one_at_a_time();
    let r = RedisServer::start();
    let job = ["--idempotency-key", "auto", "-d", "job"];
    successes_through_proxy_with(&r, plain, 1, SUCCESS_ROUND_TRIPS, &job);
    successes_through_proxy_with(&r, plain, 128, SUCCESS_ROUND_TRIPS, &job);
}

#[test]
fn a_run_with_one_retry_costs_at_most_four_round_trips() {
    let _alone = one_at_a_time();
    let r = RedisServer::start();
    let counts = one_retry_through_proxy(&r, plain);
    assert_at_most("one retry", counts, 1, RETRY_ROUND_TRIPS);
}

/// With a password and a database number, AUTH and SELECT count like any command: they
/// fit in the bound only pipelined with what follows them.
#[test]
fn a_password_and_a_database_fit_in_the_same_round_trips() {
    let _alone = one_at_a_time();
    let r = RedisServer::start_with(&["--requirepass", PASSWORD]);
    successes_through_proxy(&r, with_password_and_db, 1, SUCCESS_ROUND_TRIPS);
    let counts = one_retry_through_proxy(&r, with_password_and_db);
    assert_at_most("one retry, AUTH and SELECT", counts, 1, RETRY_ROUND_TRIPS);
    successes_through_proxy(&r, with_password_and_db, 128, SUCCESS_ROUND_TRIPS);
}
