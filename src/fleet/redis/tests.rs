//! The Redis store's tests, against a real redis-server each test starts (see
//! `tests/support/redis_server.rs`): the store contract, concurrency, the property test that
//! feeds the file store and this one the same events, failures, expiry, URLs.

use super::redis_cluster::RedisCluster;
use super::redis_server::RedisServer;
use super::*;
use crate::fleet::breaker::{Admission, Breaker, RunResult};
use crate::fleet::file::FileStore;
use crate::fleet::store::contract;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};

/// The bound of the operations that must succeed: generous, so a loaded machine does
/// not fail them.
const BOUND: Duration = Duration::from_secs(10);

/// The bound of the operations that must fail, and how late past it they may end.
const SHORT: Duration = Duration::from_millis(300);
const LATE: Duration = Duration::from_millis(200);

/// A time of the manual clocks: some day in 2023, in milliseconds.
const T0: Millis = 1_700_000_000_000;

fn quiet(m: &str) {
    panic!("no warning expected, got: {m}");
}

fn open_url(url: &str, limits: &Limits, clock: Clock) -> RedisStore {
    let location = RedisLocation::parse(url).expect("the server's URL is valid");
    RedisStore::open(&location, limits, clock, None, Duration::from_secs(2))
        .expect("opening connects to nothing")
}

fn open_on(server: &RedisServer, limits: &Limits, clock: Clock) -> RedisStore {
    open_url(&server.url(), limits, clock)
}

/// A Redis store with the server it talks to, which lives as long as the store (the
/// store is dropped first, then the server is killed).
struct Served {
    store: RedisStore,
    _server: RedisServer,
}

impl Store for Served {
    fn update(
        &self,
        key: &str,
        bound: Duration,
        warn: &dyn Fn(&str),
        change: &mut dyn FnMut(&mut Target, Millis),
    ) -> std::io::Result<()> {
        self.store.update(key, bound, warn, change)
    }

    fn peek(&self, key: &str, bound: Duration) -> std::io::Result<(Target, Millis)> {
        self.store.peek(key, bound)
    }
}

/// The contract's store: a server of its own for each test.
fn redis_store(_: &Path, limits: &Limits, clock: Clock) -> Box<dyn Store> {
    let server = RedisServer::start();
    let store = open_on(&server, limits, clock);
    Box::new(Served {
        store,
        _server: server,
    })
}

crate::fleet::store::store_contract!(redis_store);

/// `Store::decide` on a concrete store.
fn decide<T>(
    store: &dyn Store,
    key: &str,
    decide: impl FnMut(&mut Target, Millis) -> T,
) -> std::io::Result<T> {
    store.decide(key, BOUND, &quiet, decide)
}

/// The decision that records a failed run.
fn fail(l: &Limits) -> impl Fn(&mut Target, Millis) + '_ {
    move |t, now| t.finish(now, RunResult::Failure, None, l)
}

/// A connection of the test's own, to look at the keys behind the store's back.
fn connection(server: &RedisServer) -> redis::Connection {
    redis::Client::open(server.url().as_str())
        .expect("the server's URL is valid")
        .get_connection_with_timeout(BOUND)
        .expect("the test connects to its server")
}

/// How many runs race in the concurrency tests.
const RUNS: usize = 64;

/// Runs `each(i, store)` on `RUNS` threads at once, each with a store (and so a
/// connection) of its own on `server`, connected before they all start; their answers
/// in the order of `i`.
fn race<T: Send>(
    server: &RedisServer,
    limits: &Limits,
    each: impl Fn(usize, &dyn Store) -> T + Sync,
) -> Vec<T> {
    let url = server.url();
    let start = Barrier::new(RUNS);
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..RUNS)
            .map(|i| {
                let (url, start, each) = (&url, &start, &each);
                s.spawn(move || {
                    let store = open_url(url, limits, Clock::own());
                    store.peek("warm-up", BOUND).expect("the store connects");
                    start.wait();
                    each(i, &store)
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().expect("a run panicked"))
            .collect()
    })
}

/// 64 runs, each on its own connection, record a failure at the same moment: the
/// compare-and-set loses none of them.
#[test]
fn sixty_four_concurrent_updates_lose_none() {
    let server = RedisServer::start();
    let l = Limits {
        threshold: 1000,
        ..contract::limits()
    };
    let calls = AtomicUsize::new(0);
    let seen = race(&server, &l, |_, store| {
        decide(store, "http://down:80", |t, now| {
            calls.fetch_add(1, Ordering::SeqCst);
            t.finish(now, RunResult::Failure, None, &l);
            t.breaker.failures
        })
        .expect("the update succeeds within its bound")
    });
    let (t, _) = open_on(&server, &l, Clock::own())
        .peek("http://down:80", BOUND)
        .expect("the store answers");
    assert_eq!(t.breaker.failures, RUNS as u32);
    let mut seen = seen;
    seen.sort_unstable();
    let each: Vec<u32> = (1..=RUNS as u32).collect();
    assert_eq!(seen, each, "each run saw its own failure counted last");
    assert!(calls.load(Ordering::SeqCst) >= RUNS);
}

/// 64 runs ask a half-open circuit at the same moment: exactly one is the probe, and
/// the record holds its number. Ten rounds, each on a circuit opened afresh, since a
/// store that loses updates may still hand out one probe in a given round.
#[test]
fn sixty_four_runs_race_for_one_probe() {
    let server = RedisServer::start();
    let l = contract::limits();
    let key = "http://flaky:80";
    let opener = open_on(&server, &l, Clock::own());
    for round in 0..10 {
        decide(&opener, key, |t, now| {
            t.seen = now;
            t.breaker = Breaker {
                failures: 3,
                opened_at: Some(now - 60_000),
                probe_until: None,
                probe_id: None,
            };
        })
        .expect("the record is written");
        let answers = race(&server, &l, |i, store| {
            decide(store, key, |t, now| {
                t.admit(now, &l, Duration::from_secs(60), i as u64 + 1)
            })
            .expect("the admission succeeds within its bound")
        });
        let probes: Vec<usize> = (0..RUNS)
            .filter(|i| answers[*i] == Admission::Probe)
            .collect();
        assert_eq!(probes.len(), 1, "round {round}: {answers:?}");
        for a in &answers {
            assert!(
                *a == Admission::Probe
                    || matches!(a, Admission::Refuse { why, .. } if why.contains("probe is in flight")),
                "round {round}: {a:?}"
            );
        }
        let (t, _) = opener.peek(key, BOUND).expect("the store answers");
        assert_eq!(
            t.breaker.probe_id,
            Some(probes[0] as u64 + 1),
            "round {round}"
        );
    }
}

/// 64 runs ask for a retry at the same moment from a budget that allows its floor of
/// 10: exactly 10 are granted.
#[test]
fn sixty_four_runs_share_one_budget_exactly() {
    let server = RedisServer::start();
    let l = Limits {
        budget_pct: 0.0,
        floor: 10,
        ..contract::limits()
    };
    let answers = race(&server, &l, |_, store| {
        decide(store, "http://busy:80", |t, now| t.take_retry(now, &l))
            .expect("the budget answers within its bound")
    });
    assert_eq!(answers.iter().filter(|a| a.is_ok()).count(), 10);
    let (t, _) = open_on(&server, &l, Clock::own())
        .peek("http://busy:80", BOUND)
        .expect("the store answers");
    assert_eq!(t.budget.counts(), (0, 10));
}

/// A write by another run between the read and the compare-and-set makes the decision
/// again, on the record that run wrote: both updates count.
#[test]
fn a_conflicting_write_makes_the_decision_again_on_the_new_record() {
    let server = RedisServer::start();
    let l = contract::limits();
    let ours = open_on(&server, &l, Clock::own());
    let theirs = open_on(&server, &l, Clock::own());
    let mut calls = 0;
    let failures = decide(&ours, "t", |t, now| {
        calls += 1;
        if calls == 1 {
            decide(&theirs, "t", fail(&l)).expect("the other run writes");
        }
        t.finish(now, RunResult::Failure, None, &l);
        t.breaker.failures
    })
    .expect("the update succeeds after the conflict");
    assert_eq!((calls, failures), (2, 2));
    let (t, _) = theirs.peek("t", BOUND).expect("the store answers");
    assert_eq!(t.breaker.failures, 2);
}

/// The store over a Unix socket, over TLS with `--state-cacert`, and in another
/// database under another prefix: each keeps the record where the URL says. Without
/// the CA, the TLS server's certificate is refused.
#[test]
fn every_kind_of_endpoint_keeps_records() {
    let l = contract::limits();
    let unix = RedisServer::start_unix();
    let tls = RedisServer::start_tls();
    let tcp = RedisServer::start();
    let ca = tls.ca_file().expect("a TLS server has a CA");
    let location = RedisLocation::parse(&tls.url()).expect("valid");
    let stores = [
        (&unix, open_on(&unix, &l, Clock::own()), "0", "retry-http:t"),
        (
            &tls,
            RedisStore::open(&location, &l, Clock::own(), Some(&ca), BOUND)
                .expect("the CA is read"),
            "0",
            "retry-http:t",
        ),
        (
            &tcp,
            open_url(&format!("{}/3?prefix=ci:", tcp.url()), &l, Clock::own()),
            "3",
            "ci:t",
        ),
    ];
    for (server, store, db, key) in &stores {
        decide(store, "t", fail(&l)).expect("the update succeeds");
        let (t, _) = store.peek("t", BOUND).expect("the store answers");
        assert_eq!(t.breaker.failures, 1, "{}", server.url());
        let text = server.cli(&["-n", db, "GET", key]);
        assert!(text.contains("\"failures\":1"), "{}: {text}", server.url());
    }
    let no_ca = RedisStore::open(&location, &l, Clock::own(), None, BOUND).expect("opens");
    let e = decide(&no_ca, "t", fail(&l)).expect_err("an unknown CA is refused");
    assert!(e.to_string().contains("certificate"), "{e}");
}

/// Asserts that `op` fails within `SHORT` plus `LATE`, and returns its error.
fn fails_in_time<T: std::fmt::Debug>(
    op: impl FnOnce(Duration) -> std::io::Result<T>,
) -> std::io::Error {
    let t0 = Instant::now();
    let e = op(SHORT).expect_err("the store cannot be used");
    let took = t0.elapsed();
    assert!(took <= SHORT + LATE, "{took:?}: {e}");
    e
}

/// Nothing listens on the port: the update fails at once, saying so.
#[test]
fn a_port_with_nothing_listening_fails_within_the_bound() {
    let l = contract::limits();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port();
    let store = open_url(&format!("redis://127.0.0.1:{port}"), &l, Clock::own());
    let e = fails_in_time(|b| store.update("t", b, &quiet, &mut fail(&l)));
    assert!(e.to_string().contains("refused"), "{e}");
    let e = fails_in_time(|b| store.peek("t", b));
    assert!(e.to_string().contains("refused"), "{e}");
}

/// A frozen server (SIGSTOP: the kernel still accepts, nothing answers) or a paused one
/// (`CLIENT PAUSE`): the update gives up at its bound, on a connection made before and
/// on a new one; the store reconnects once the server answers again.
#[test]
fn a_frozen_or_paused_server_fails_within_the_bound_and_is_used_again() {
    let server = RedisServer::start();
    let l = contract::limits();
    let warm = open_on(&server, &l, Clock::own());
    decide(&warm, "t", fail(&l)).expect("the server answers");
    server.stop_signal();
    let fresh = open_on(&server, &l, Clock::own());
    for store in [&warm, &fresh] {
        let e = fails_in_time(|b| store.update("t", b, &quiet, &mut fail(&l)));
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("--state-timeout"), "{e}");
    }
    server.cont_signal();
    decide(&warm, "t", fail(&l)).expect("the store reconnects");
    let (t, _) = fresh.peek("t", BOUND).expect("the store reconnects");
    assert_eq!(t.breaker.failures, 2, "the frozen attempts changed nothing");
    server.cli(&["CLIENT", "PAUSE", "10000", "ALL"]);
    let e = fails_in_time(|b| warm.update("t", b, &quiet, &mut fail(&l)));
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
}

/// A key of the record's name holding a hash: the update fails, says why, and leaves
/// the key alone.
#[test]
fn a_key_of_another_type_is_an_error_and_left_alone() {
    let server = RedisServer::start();
    let l = contract::limits();
    server.cli(&["HSET", "retry-http:t", "f", "v"]);
    let store = open_on(&server, &l, Clock::own());
    let e = decide(&store, "t", fail(&l)).expect_err("a hash is not a record");
    assert!(e.to_string().contains("another type"), "{e}");
    let e = store.peek("t", BOUND).expect_err("nor for a peek");
    assert!(e.to_string().contains("another type"), "{e}");
    assert_eq!(server.cli(&["TYPE", "retry-http:t"]), "hash");
}

/// A string that is not a record of ours (garbage, another format's JSON) is replaced
/// by a fresh record, with one warning that names the key; the next update has none.
#[test]
fn a_key_holding_garbage_is_replaced_with_one_warning() {
    let server = RedisServer::start();
    let l = contract::limits();
    let store = open_on(&server, &l, Clock::own());
    for garbage in ["garbage", "{\"format\":\"other\",\"rev\":1,\"target\":{}}"] {
        server.cli(&["SET", "retry-http:t", garbage]);
        let warnings = Mutex::new(Vec::new());
        let warn = |m: &str| warnings.lock().expect("one thread").push(m.to_string());
        store
            .update("t", BOUND, &warn, &mut fail(&l))
            .expect("the record is replaced");
        let warnings = warnings.into_inner().expect("one thread");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("retry-http:t"), "{warnings:?}");
        decide(&store, "t", fail(&l)).expect("no warning the second time");
        let (t, _) = store.peek("t", BOUND).expect("the store answers");
        assert_eq!(t.breaker.failures, 2, "{garbage}: afresh");
        let text = server.cli(&["GET", "retry-http:t"]);
        let v: Value = serde_json::from_str(&text).expect("a record of ours is JSON");
        assert_eq!(v["format"], crate::fleet::record::FORMAT);
    }
}

/// `SCRIPT FLUSH` between updates: the script is loaded again, nothing is lost.
#[test]
fn flushed_scripts_are_loaded_again() {
    let server = RedisServer::start();
    let l = contract::limits();
    let store = open_on(&server, &l, Clock::own());
    decide(&store, "t", fail(&l)).expect("the first update");
    assert_eq!(server.cli(&["SCRIPT", "FLUSH"]), "OK");
    decide(&store, "t", fail(&l)).expect("the script is loaded again");
    let (t, _) = store.peek("t", BOUND).expect("the store answers");
    assert_eq!(t.breaker.failures, 2);
}

/// A server that wants a password (set after it started): a store without one is told
/// so, a wrong one is refused, and neither message quotes the URL or the password; the
/// right one works.
#[test]
fn a_password_the_server_wants_is_asked_for_without_the_url() {
    let server = RedisServer::start();
    let l = contract::limits();
    assert_eq!(server.cli(&["CONFIG", "SET", "requirepass", "x"]), "OK");
    let url = server.url();
    let port = server.port().expect("TCP").to_string();
    let without = open_on(&server, &l, Clock::own());
    let e = decide(&without, "t", fail(&l)).expect_err("a password is wanted");
    let e = e.to_string();
    assert!(e.contains("wants a password"), "{e}");
    assert!(!e.contains(&url) && !e.contains(&port), "{e}");
    let wrong = open_url(&url.replace("//", "//:s3cret@"), &l, Clock::own());
    let e = decide(&wrong, "t", fail(&l)).expect_err("a wrong password");
    let e = e.to_string();
    assert!(e.contains("refused the user or password"), "{e}");
    assert!(!e.contains("s3cret") && !e.contains(&port), "{e}");
    let right = open_url(&url.replace("//", "//:x@"), &l, Clock::own());
    decide(&right, "t", fail(&l)).expect("the right password works");
}

/// A server out of memory, and a read-only replica: the update fails and says which.
#[test]
fn a_server_that_refuses_writes_says_why() {
    let server = RedisServer::start();
    let l = contract::limits();
    let store = open_on(&server, &l, Clock::own());
    server.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    let e = decide(&store, "t", fail(&l)).expect_err("out of memory");
    assert!(e.to_string().contains("out of memory"), "{e}");
    server.cli(&["CONFIG", "SET", "maxmemory", "0"]);
    decide(&store, "t", fail(&l)).expect("memory again");
    // A replica of a primary that is not there: it serves reads, refuses writes.
    server.cli(&["REPLICAOF", "127.0.0.1", "1"]);
    let e = decide(&store, "t", fail(&l)).expect_err("a replica");
    assert!(e.to_string().contains("read-only replica"), "{e}");
    let (t, _) = store.peek("t", BOUND).expect("a replica answers a peek");
    assert_eq!(t.breaker.failures, 1);
}

/// The milliseconds the key of `target` has left to live (`PTTL`: -2 when there is no
/// key).
fn pttl(server: &RedisServer, target: &str) -> i64 {
    let key = format!("{DEFAULT_PREFIX}{target}");
    let text = server.cli(&["PTTL", &key]);
    text.parse()
        .unwrap_or_else(|_| panic!("PTTL answered {text}"))
}

/// The key lives until the record expires: `--state-ttl` after its last event, or
/// longer while its circuit refuses or a Retry-After holds.
#[test]
fn a_key_lives_until_its_record_expires() {
    let server = RedisServer::start();
    let l = Limits {
        cooldown: Duration::from_secs(48 * 3600),
        ..contract::limits()
    };
    let clock = Clock::manual(T0);
    let store = open_on(&server, &l, clock.clone());
    let hour: Millis = 3600 * 1000;
    type Change<'a> = &'a dyn Fn(&mut Target, Millis);
    let cases: [(&str, Change, Millis); 3] = [
        (
            "failed",
            &|t, now| t.finish(now, RunResult::Failure, None, &l),
            24 * hour,
        ),
        (
            "open",
            &|t, now| {
                for _ in 0..3 {
                    t.finish(now, RunResult::Failure, None, &l);
                }
            },
            48 * hour,
        ),
        (
            "held",
            &|t, now| t.hold(now, Duration::from_secs(30 * 3600)),
            30 * hour,
        ),
    ];
    for (target, change, lives) in cases {
        decide(&store, target, change).expect("the update succeeds");
        let (t, now) = store.peek(target, BOUND).expect("the store answers");
        assert_eq!(t.expires_at(&l) - now, lives, "{target}");
        let left = pttl(&server, target);
        let lives = lives as i64;
        assert!(
            left <= lives && left > lives - 10_000,
            "{target}: {left} of {lives}"
        );
    }
}

/// A record left with nothing to remember deletes its key; one that never held
/// anything makes none.
#[test]
fn a_record_with_nothing_to_remember_deletes_its_key() {
    let server = RedisServer::start();
    let l = contract::limits();
    let clock = Clock::manual(T0);
    let store = open_on(&server, &l, clock.clone());
    let exists = |target: &str| server.cli(&["EXISTS", &format!("{DEFAULT_PREFIX}{target}")]);
    decide(&store, "admitted", |t, now| {
        t.admit(now, &l, Duration::ZERO, 1)
    })
    .expect("admitted");
    assert_eq!(
        exists("admitted"),
        "0",
        "a closed circuit's admission keeps nothing"
    );
    decide(&store, "held", |t, now| t.hold(now, Duration::from_secs(5))).expect("held");
    decide(&store, "failed", fail(&l)).expect("failed");
    assert_eq!((exists("held"), exists("failed")), ("1".into(), "1".into()));
    clock.set(T0 + 6_000);
    let held = decide(&store, "held", |t, now| t.held(now)).expect("read");
    assert_eq!(
        (held, exists("held")),
        (None, "0".into()),
        "the hold passed"
    );
    clock.set(T0 + 24 * 3600 * 1000);
    decide(&store, "failed", |_, _| {}).expect("read");
    assert_eq!(exists("failed"), "0", "idle for the TTL: forgotten");
}

/// One event of the property test, on one of the targets.
#[derive(Debug, Clone)]
enum Event {
    /// A run asks to start, with a lease of this many ms, as run number `id`.
    Admit { key: usize, lease: u64, id: u64 },
    /// A run ends (`probe`: the lease number it says it took).
    Finish {
        key: usize,
        result: RunResult,
        probe: Option<u64>,
    },
    /// A run asks for a retry.
    TakeRetry { key: usize },
    /// A run was told Retry-After: this many ms.
    Hold { key: usize, wait: u64 },
    /// A run asks whether a Retry-After holds.
    Held { key: usize },
    /// Time passes: this many ms.
    Advance(u64),
}

const HOUR: u64 = 3600 * 1000;

fn event() -> impl Strategy<Value = Event> {
    let key = 0usize..3;
    let result = prop_oneof![
        1 => Just(RunResult::Success),
        3 => Just(RunResult::Failure),
        1 => Just(RunResult::Neutral)
    ];
    prop_oneof![
        4 => (key.clone(), 0u64..=120_000, 1u64..=4)
            .prop_map(|(key, lease, id)| Event::Admit { key, lease, id }),
        4 => (key.clone(), result, proptest::option::of(1u64..=4))
            .prop_map(|(key, result, probe)| Event::Finish { key, result, probe }),
        2 => key.clone().prop_map(|key| Event::TakeRetry { key }),
        1 => (key.clone(), prop_oneof![0u64..=60_000, 0u64..=30 * HOUR])
            .prop_map(|(key, wait)| Event::Hold { key, wait }),
        1 => key.prop_map(|key| Event::Held { key }),
        // Mostly within a cooldown or two, so that circuits get probed; now and then
        // up to 30 hours, past windows and TTLs.
        3 => prop_oneof![3 => 0u64..=1_000, 4 => 0u64..=120_000, 1 => 0u64..=30 * HOUR]
            .prop_map(Event::Advance),
    ]
}

fn limits_strategy() -> impl Strategy<Value = Limits> {
    (
        1u32..=4,
        1_000u64..=60_000,
        1_000u64..=600_000,
        0u32..=3,
        0u32..=2_000,
        1_000u64..=48 * HOUR,
    )
        .prop_map(|(threshold, cooldown, window, floor, pct, ttl)| Limits {
            threshold,
            cooldown: Duration::from_millis(cooldown),
            budget_pct: f64::from(pct) / 10.0,
            window: Duration::from_millis(window),
            floor,
            ttl: Duration::from_millis(ttl),
        })
}

/// What a decision answered, to compare the stores'.
#[derive(Debug, PartialEq)]
enum Answer {
    Admission(Admission),
    Done,
    Retry(Result<(), String>),
    Held(Option<Duration>),
}

fn store_error(e: std::io::Error) -> TestCaseError {
    TestCaseError::fail(format!("the store failed: {e}"))
}

/// The same events, fed to a file store and to a Redis store with clocks that agree,
/// get the same answers, and leave the same records.
#[test]
fn the_file_and_redis_stores_decide_alike() {
    let server = RedisServer::start();
    let conn = Mutex::new(connection(&server));
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let cases = (
        limits_strategy(),
        T0..T0 + 100 * 24 * HOUR,
        1usize..=3,
        proptest::collection::vec(event(), 8..=40),
    );
    let result = runner.run(&cases, |(l, start, targets, events)| {
        let dir = tempfile::tempdir().map_err(store_error)?;
        let (file_clock, redis_clock) = (Clock::manual(start), Clock::manual(start));
        let file = FileStore::open(&dir.path().join("state.json"), &l, file_clock.clone())
            .map_err(TestCaseError::fail)?;
        redis::cmd("FLUSHALL")
            .exec(&mut *conn.lock().expect("one thread"))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let redis = open_on(&server, &l, redis_clock.clone());
        let (file, redis): (&dyn Store, &dyn Store) = (&file, &redis);
        let name = |key: usize| format!("http://t{}:80", key % targets);
        let mut now = start;
        // The text of each key after the last event that touched it: a decision that
        // wrote nothing leaves the key (and its expiry, taken off below) as it was.
        let mut texts: std::collections::HashMap<usize, Option<String>> =
            std::collections::HashMap::new();
        for (i, event) in events.iter().enumerate() {
            let both = |key: usize, d: &dyn Fn(&mut Target, Millis) -> Answer| {
                let f = decide(file, &name(key), d).map_err(store_error)?;
                let r = decide(redis, &name(key), d).map_err(store_error)?;
                prop_assert_eq!(&f, &r, "event {} {:?}", i, event);
                Ok(Some(key))
            };
            let touched = match *event {
                Event::Admit { key, lease, id } => both(key, &|t, now| {
                    Answer::Admission(t.admit(now, &l, Duration::from_millis(lease), id))
                })?,
                Event::Finish { key, result, probe } => both(key, &|t, now| {
                    t.finish(now, result, probe, &l);
                    Answer::Done
                })?,
                Event::TakeRetry { key } => {
                    both(key, &|t, now| Answer::Retry(t.take_retry(now, &l)))?
                }
                Event::Hold { key, wait } => both(key, &|t, now| {
                    t.hold(now, Duration::from_millis(wait));
                    Answer::Held(t.held(now))
                })?,
                Event::Held { key } => both(key, &|t, now| Answer::Held(t.held(now)))?,
                Event::Advance(by) => {
                    now += by;
                    file_clock.set(now);
                    redis_clock.set(now);
                    None
                }
            };
            if let Some(key) = touched {
                // The key lives until the record expires; then its expiry is taken
                // off, since the server's clock does not follow the test's.
                let k = format!("{DEFAULT_PREFIX}{}", name(key));
                let (text, left, _): (Option<String>, i64, i64) = redis::pipe()
                    .cmd("GET")
                    .arg(&k)
                    .cmd("PTTL")
                    .arg(&k)
                    .cmd("PERSIST")
                    .arg(&k)
                    .query(&mut *conn.lock().expect("one thread"))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let unwritten = texts.insert(key % targets, text.clone()) == Some(text);
                let (t, at) = redis.peek(&name(key), BOUND).map_err(store_error)?;
                if unwritten {
                    // Written earlier, its expiry already checked and taken off.
                } else if t == Target::default() {
                    prop_assert_eq!(left, -2, "event {} {:?}: a key for nothing", i, event);
                } else {
                    let lives = (t.expires_at(&l) - at) as i64;
                    let late = left == -2 && lives <= 10_000;
                    prop_assert!(
                        late || (left <= lives && left > lives - 10_000),
                        "event {} {:?}: PTTL {} of {}",
                        i,
                        event,
                        left,
                        lives
                    );
                }
            }
            for key in 0..targets {
                let f = file.peek(&name(key), BOUND).map_err(store_error)?;
                let r = redis.peek(&name(key), BOUND).map_err(store_error)?;
                prop_assert_eq!(&f, &r, "after event {} {:?}, {}", i, event, name(key));
                prop_assert_eq!(f.1, now);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn redis_urls_are_read_and_shown_masked() {
    let r =
        RedisLocation::parse("redis://u:p%40ss@cache.example:6380/3?prefix=ci:").expect("valid");
    assert_eq!(
        r.endpoint,
        Endpoint::Tcp {
            host: "cache.example".into(),
            port: 6380,
            tls: false
        }
    );
    assert_eq!(
        (
            r.db,
            r.user.as_deref(),
            r.password.as_deref(),
            r.prefix.as_str()
        ),
        (3, Some("u"), Some("p@ss"), "ci:")
    );
    assert_eq!(r.display(), "redis://u:***@cache.example:6380/3?prefix=ci:");
    let r = RedisLocation::parse("redis://s3cret@h").expect("valid");
    assert_eq!(
        (r.user.as_deref(), r.password.as_deref()),
        (None, Some("s3cret"))
    );
    assert_eq!(r.display(), "redis://:***@h:6379/0");
    let r = RedisLocation::parse("rediss://:tok@[::1]").expect("valid");
    assert_eq!(r.display(), "rediss://:***@[::1]:6379/0");
    let r = RedisLocation::parse("redis+unix:///run/redis.sock?db=2&password=pw").expect("valid");
    assert_eq!(r.endpoint, Endpoint::Unix("/run/redis.sock".into()));
    assert_eq!(
        r.display(),
        "redis+unix:///run/redis.sock?db=2&password=***"
    );
    assert_eq!(
        RedisLocation::parse("redis://h").expect("valid").prefix,
        DEFAULT_PREFIX
    );
}

#[test]
fn bad_redis_urls_say_why_without_the_password() {
    for (bad, why) in [
        ("redis://u:s3cret@h/notadb", "database number"),
        ("redis://u:s3cret@h/0?pfx=a", "pfx="),
        ("redis://u:s3cret@h:99999/0", "not a valid URL"),
        ("redis://u:s3cret@/0", "host"),
        ("redis+unix://h/sock?password=s3cret", "three slashes"),
        ("redis+unix://?password=s3cret", "path"),
        ("redis://u:s3cret@h/0#x", "fragment"),
        ("redis://u:s3cret@h/0?prefix=a&prefix=b", "prefix="),
        ("redis://u:s3cret@h/-1", "database number"),
        ("redis://u:s3cret@h/0?prefix=", "prefix is empty"),
        ("redis://u:s3cret@h/0?prefix=%20%09", "prefix is empty"),
        ("redis://u:s3cret@h/0?prefix=+", "prefix is empty"),
        ("redis+unix:///s?prefix=&password=s3cret", "prefix is empty"),
    ] {
        let e = RedisLocation::parse(bad).expect_err(bad);
        assert!(e.contains(why), "{bad}: {e}");
        assert!(!e.contains("s3cret"), "{bad}: {e}");
        assert!(e.starts_with("--state: "), "{e}");
    }
}

/// `--state-cacert` naming what is not a file: a FIFO whose writer never writes, one with
/// no writer, a device without end, a folder. Each is refused (or read empty) within the
/// bound, never a hang; a pipe that does write is read.
#[test]
fn a_cacert_that_is_not_a_file_is_read_within_the_bound() {
    let l = contract::limits();
    let location = RedisLocation::parse("rediss://127.0.0.1:1").expect("valid");
    let dir = tempfile::tempdir().expect("a folder");
    let fifo = dir.path().join("ca.pem");
    let c = std::ffi::CString::new(fifo.to_str().expect("UTF-8")).expect("no NUL");
    // SAFETY: mkfifo reads the path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let bound = Duration::from_millis(300);
    let open = |p: &Path| {
        let t0 = Instant::now();
        let r = RedisStore::open(&location, &l, Clock::own(), Some(p), bound).map(|_| ());
        assert!(
            t0.elapsed() < bound + Duration::from_secs(3),
            "{p:?}: {:?}",
            t0.elapsed()
        );
        r
    };
    // No writer yet: read as empty at once (the TLS set-up then finds no certificate).
    open(&fifo).expect("an empty read");
    // A writer that never writes: given up at the bound. (A reader of the test's own lets
    // the writer open without waiting.)
    use std::os::unix::fs::OpenOptionsExt;
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .expect("a reader");
    let writer = std::fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .expect("a writer");
    let e = open(&fifo).expect_err("nothing came");
    assert!(e.contains("nothing more came within 300ms"), "{e}");
    drop((writer, reader));
    let e = open(Path::new("/dev/zero")).expect_err("no end");
    assert!(e.contains("larger than 1 MiB"), "{e}");
    let e = open(dir.path()).expect_err("a folder");
    assert!(e.starts_with("cannot read --state-cacert"), "{e}");
}

/// A "server" that answers its first command with a bulk string of `length` bytes, one
/// byte every 10 ms, so that no socket timeout fires; it reports when the client has gone
/// (a write fails) on `gone`.
fn trickle(length: u64, gone: std::sync::mpsc::Sender<Instant>) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let Ok((mut c, _)) = listener.accept() else {
            return;
        };
        let mut command = [0u8; 4096];
        if c.read(&mut command).unwrap_or(0) == 0 {
            return;
        }
        let mut answer = format!("${length}\r\n").into_bytes();
        answer.extend(std::iter::repeat_n(b'x', length as usize));
        for byte in answer.chunks(1) {
            if c.write_all(byte).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        gone.send(Instant::now()).ok();
    });
    port
}

/// A store the run gave up on stops reading: the connection of an operation that ran out
/// of time, while its server kept trickling a long answer, is closed soon after the bound,
/// not when the answer ends (here 3 hours later).
#[test]
fn a_store_given_up_on_stops_reading() {
    let l = contract::limits();
    let (tx, gone) = std::sync::mpsc::channel();
    let port = trickle(1_000_000, tx);
    let store = open_url(&format!("redis://127.0.0.1:{port}"), &l, Clock::own());
    let bound = Duration::from_millis(300);
    let t0 = Instant::now();
    let e = store
        .update("t", bound, &quiet, &mut fail(&l))
        .expect_err("it cannot answer in time");
    assert!(e.to_string().contains("timed out"), "{e}");
    // The server notices the client gone once a write of its fails, a little after the
    // socket closed: allow for that and a loaded machine.
    let at = gone
        .recv_timeout(Duration::from_secs(20))
        .expect("the connection was closed");
    assert!(at - t0 < Duration::from_secs(10), "{:?}", at - t0);
}

// ---------------------------------------------------------------------------------------
// Round trips, and Redis Cluster.

/// `AUTH` and `SELECT` go in the same write as the first command: a run on one server pays
/// one round trip to connect and one per command, password and database or not. A wrong
/// password is still refused in those words, without what the server said.
#[test]
fn connecting_costs_one_round_trip_with_auth_and_select() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let l = contract::limits();
    let url = server.url().replace("//", "//:s3cret@") + "/2";
    let store = open_url(&url, &l, Clock::own());
    store.peek("t", BOUND).expect("the store answers");
    assert_eq!(store.round_trips(), 2, "a connection, then one write");
    store.peek("t", BOUND).expect("the store answers");
    assert_eq!(store.round_trips(), 3, "one more write");
    decide(&store, "t", fail(&l)).expect("the update succeeds");
    assert_eq!(server.cli(&["-n", "2", "EXISTS", "retry-http:t"]), "1");

    let wrong = open_url(&url.replace("s3cret", "wrong"), &l, Clock::own());
    let e = wrong
        .peek("t", BOUND)
        .expect_err("a wrong password")
        .to_string();
    assert!(e.contains("refused the user or password"), "{e}");
    assert!(!e.contains("WRONGPASS") && !e.contains("wrong"), "{e}");
    let unix_server = RedisServer::start_unix();
    let unix = open_url(&format!("{}?db=70000", unix_server.url()), &l, Clock::own());
    let e = unix
        .peek("t", BOUND)
        .expect_err("no such database")
        .to_string();
    assert!(e.contains("DB index is out of range"), "{e}");
}

/// Cluster URLs: the seeds, TLS, the credentials and the prefix read as in `redis://`, the
/// password masked; the key of a target is hash-tagged on a cluster only.
#[test]
fn cluster_urls_are_read_and_shown_masked() {
    let r = RedisLocation::parse("redis+cluster://u:p%40ss@a:7000,[::1]:7001,b?prefix=ci:")
        .expect("valid");
    let seeds = vec![
        ("a".to_string(), 7000),
        ("::1".to_string(), 7001),
        ("b".to_string(), 6379),
    ];
    assert_eq!(r.endpoint, Endpoint::Cluster { seeds, tls: false });
    assert_eq!(
        (r.user.as_deref(), r.password.as_deref()),
        (Some("u"), Some("p@ss"))
    );
    assert_eq!(
        r.display(),
        "redis+cluster://u:***@a:7000,[::1]:7001,b:6379?prefix=ci:"
    );
    assert_eq!(r.key("http://h:80"), "ci:{http://h:80}");
    assert!(!r.uses_tls() && r.is_cluster());
    let r = RedisLocation::parse("REDISS+CLUSTER://:tok@h:1/0").expect("valid");
    assert_eq!(r.display(), "rediss+cluster://:***@h:1");
    assert!(r.uses_tls());
    assert_eq!(r.key("http://h:80"), "retry-http:{http://h:80}");
    let one = RedisLocation::parse("redis://h/0?prefix=ci:").expect("valid");
    assert_eq!(
        one.key("http://h:80"),
        "ci:http://h:80",
        "as older versions wrote it"
    );
}

#[test]
fn bad_cluster_urls_say_why_without_the_password() {
    for (bad, why) in [
        ("redis+cluster://u:s3cret@h:1/2", "only database 0"),
        ("redis+cluster://u:s3cret@h:1,,h:2", "seed node 2"),
        ("redis+cluster://u:s3cret@h:1,", "seed node 2"),
        ("redis+cluster://u:s3cret@h:1,h:99999", "seed node 2"),
        ("redis+cluster://u:s3cr/et@h:1", "seed node 1"),
        ("redis+cluster://u:s3cret@", "seed node 1"),
        ("redis+cluster://u:s3cret@h:1?db=1", "db="),
        ("redis+cluster://u:s3cret@h:1?prefix=", "prefix is empty"),
        ("redis+cluster://u:s3cret@h:1#x", "fragment"),
    ] {
        let e = RedisLocation::parse(bad).expect_err(bad);
        assert!(e.contains(why), "{bad}: {e}");
        assert!(!e.contains("s3cr"), "{bad}: {e}");
        assert!(
            e.starts_with("--state: ") && e.contains("redis+cluster://"),
            "{e}"
        );
    }
}

/// The slots computed here are the cluster's (`CLUSTER KEYSLOT`), hash tags included.
#[test]
fn slots_are_the_clusters() {
    let cluster = RedisCluster::start();
    let location = RedisLocation::parse(&cluster.url()).expect("valid");
    let tagged = location.key("https://api.example.test:443");
    for key in [
        "a",
        "foo{bar}x",
        "{}",
        "x{}y",
        "{{a}}",
        "retry-http:h",
        tagged.as_str(),
    ] {
        assert_eq!(cluster::slot(key.as_bytes()), cluster.slot_of(key), "{key}");
    }
    let job = format!("{tagged}:job:0123abcd");
    assert_eq!(
        cluster.slot_of(&job),
        cluster.slot_of(&tagged),
        "one target, one slot"
    );
}

/// A store given only a seed that does not own the target's slot: the first operation is
/// redirected (`MOVED`: a connection and a write to the seed, then to the owner) and the
/// record lands on the owner; the owner is remembered in the cache, so the next store (the
/// next run) goes straight there: a connection and a write. Without the cache it pays the
/// redirection again.
#[test]
fn a_cluster_store_follows_moved_and_remembers_the_owner() {
    let cluster = RedisCluster::start();
    let l = contract::limits();
    let cache = tempfile::tempdir().expect("a temporary folder");
    let target = "http://127.0.0.1:1";
    let location = RedisLocation::parse(&cluster.url()).expect("valid");
    let key = location.key(target);
    let owner = cluster.owner_of(&key);
    let seed = cluster.primaries().into_iter().find(|p| *p != owner);
    let url = format!(
        "redis+cluster://127.0.0.1:{}",
        seed.expect("another primary")
    );
    let open = |cached: Option<&Path>| open_url(&url, &l, Clock::own()).caching_in(cached);

    let first = open(Some(cache.path()));
    first.peek(target, BOUND).expect("the cluster answers");
    assert_eq!(
        first.round_trips(),
        4,
        "seed: connect, MOVED; owner: connect, answer"
    );
    decide(&first, target, fail(&l)).expect("the update succeeds");
    let text = cluster.get(owner, &key);
    assert!(
        text.contains("\"failures\":1"),
        "the owner holds it: {text}"
    );

    let next = open(Some(cache.path()));
    let (t, _) = next.peek(target, BOUND).expect("the cluster answers");
    assert_eq!(t.breaker.failures, 1);
    assert_eq!(next.round_trips(), 2, "straight to the owner");

    let uncached = open(None);
    uncached.peek(target, BOUND).expect("the cluster answers");
    assert_eq!(uncached.round_trips(), 4, "the redirection again");
}

/// A slot being migrated: the owner answers `-ASK` for a key it does not hold, and the
/// command goes to the importing node after `ASKING`; the owner is not remembered as moved.
#[test]
fn a_cluster_store_follows_ask_during_a_migration() {
    let cluster = RedisCluster::start();
    let l = contract::limits();
    let target = "http://127.0.0.1:2";
    let location = RedisLocation::parse(&cluster.url()).expect("valid");
    let key = location.key(target);
    let (owner, slot) = (cluster.owner_of(&key), cluster.slot_of(&key).to_string());
    let dest = cluster.primaries().into_iter().find(|p| *p != owner);
    let dest = dest.expect("another primary");
    let id = |port| cluster.cli(port, &["CLUSTER", "MYID"]);
    let (owner_id, dest_id) = (id(owner), id(dest));
    assert_eq!(
        cluster.cli(dest, &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &owner_id]),
        "OK"
    );
    assert_eq!(
        cluster.cli(owner, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &dest_id]),
        "OK"
    );
    let store = open_url(
        &format!("redis+cluster://127.0.0.1:{owner}"),
        &l,
        Clock::own(),
    )
    .caching_in(None);
    decide(&store, target, fail(&l)).expect("the update succeeds");
    let (t, _) = store.peek(target, BOUND).expect("the cluster answers");
    assert_eq!(t.breaker.failures, 1);
    assert_eq!(
        cluster.cli(dest, &["CLUSTER", "COUNTKEYSINSLOT", &slot]),
        "1"
    );
    assert_eq!(
        cluster.cli(owner, &["CLUSTER", "COUNTKEYSINSLOT", &slot]),
        "0"
    );
}

/// Seeds that cannot be connected to give way to the next, within the bound; when none
/// can, the error names the last one tried.
#[test]
fn a_dead_seed_gives_way_to_the_next() {
    let cluster = RedisCluster::start();
    let l = contract::limits();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").and_then(|s| s.local_addr());
    let closed = closed.expect("a port").port();
    let url = format!("redis+cluster://127.0.0.1:{closed},{}", cluster.seeds());
    let store = open_url(&url, &l, Clock::own()).caching_in(None);
    decide(&store, "t", fail(&l)).expect("the next seed answers");
    let none = open_url(
        &format!("redis+cluster://127.0.0.1:{closed}"),
        &l,
        Clock::own(),
    );
    let e = fails_in_time(|bound| none.peek("t", bound)).to_string();
    assert!(
        e.contains(&format!("127.0.0.1:{closed}")) && e.contains("refused"),
        "{e}"
    );
}

/// A `redis://` URL naming a cluster node that does not serve the key: the error says to
/// name the cluster as such, and nothing is followed.
#[test]
fn a_single_server_url_on_a_cluster_node_says_to_name_the_cluster() {
    let cluster = RedisCluster::start();
    let l = contract::limits();
    let key = RedisLocation::parse("redis://h").expect("valid").key("t");
    let owner = cluster.owner_of(&key);
    let other = cluster.primaries().into_iter().find(|p| *p != owner);
    let url = format!("redis://127.0.0.1:{}", other.expect("another primary"));
    let store = open_url(&url, &l, Clock::own());
    let e = store
        .peek("t", BOUND)
        .expect_err("not the owner")
        .to_string();
    assert!(
        e.contains("Redis Cluster") && e.contains("redis+cluster://"),
        "{e}"
    );
    assert_eq!(store.round_trips(), 2, "no redirection followed");
}

/// A cluster that has lost a slot's primary and its replica answers `CLUSTERDOWN`: the
/// operation fails at once, in words.
#[test]
fn a_cluster_that_is_down_says_so_in_words() {
    let mut cluster = RedisCluster::start();
    let l = contract::limits();
    let location = RedisLocation::parse(&cluster.url()).expect("valid");
    let owner = cluster.owner_of(&location.key("t"));
    let replica = cluster.replica_of(owner);
    cluster.kill(replica);
    cluster.kill(owner);
    let live = cluster.live_ports();
    let down = |p: &u16| {
        cluster
            .cli(*p, &["CLUSTER", "INFO"])
            .contains("cluster_state:fail")
    };
    let give_up = Instant::now() + Duration::from_secs(60);
    while !live.iter().all(down) {
        assert!(
            Instant::now() < give_up,
            "the cluster never said it is down"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let store = open_url(&cluster.url(), &l, Clock::own()).caching_in(None);
    let e = fails_in_time(|bound| store.peek("t", bound)).to_string();
    assert!(e.contains("the cluster cannot serve the key now"), "{e}");
}
