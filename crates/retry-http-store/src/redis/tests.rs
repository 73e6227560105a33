//! The Redis store's tests, against a real redis-server each test starts (see
//! `tests/support/redis_server.rs`): the store contract, concurrency, the property test that
//! feeds the file store and this one the same events, failures, expiry, URLs.

use super::quoting_redis::{LONG_PASSWORD, password_start};
use super::redis_cluster::RedisCluster;
use super::redis_server::RedisServer;
use super::*;
use crate::file::FileStore;
use crate::store::contract;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use retry_http_policy::breaker::{Admission, Breaker, RunResult};
use retry_http_policy::job::{Digest, Job, Sent};
use retry_http_policy::op::{Op, Reply};
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
    fn apply(
        &self,
        key: &str,
        op: &Op,
        bound: Duration,
        warn: &dyn Fn(&str),
    ) -> std::io::Result<(Reply, Millis)> {
        self.store.apply(key, op, bound, warn)
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

crate::store::store_contract!(redis_store);

/// `Store::apply` on a concrete store, expecting no warning: the reply.
fn apply(store: &dyn Store, key: &str, op: Op) -> std::io::Result<Reply> {
    store.apply(key, &op, BOUND, &quiet).map(|(reply, _)| reply)
}

/// The operation that records a failed run.
fn fail() -> Op {
    Op::Record {
        result: RunResult::Failure,
        probe: None,
        hint: None,
        retire: None,
    }
}

/// The operation that shares a Retry-After of `wait` (and asks whether one holds).
fn hold(wait: Option<Duration>) -> Op {
    Op::Ask {
        hint: wait,
        charge: false,
        run: 1,
    }
}

/// Writes `t` as the record of `target`, behind the store's back, as a run would have.
fn put(server: &RedisServer, target: &str, t: &Target) {
    let text = serde_json::json!({
        "format": retry_http_policy::record::FORMAT,
        "rev": 1,
        "target": retry_http_policy::record::target_json(t),
    });
    let key = format!("{DEFAULT_PREFIX}{target}");
    assert_eq!(server.cli(&["SET", &key, &text.to_string()]), "OK");
}

/// A connection of the test's own to the server at `url`, to look at the keys behind the
/// store's back: the store's own `wire`, one command at a time.
struct Connection(wire::Wire);

impl Connection {
    fn open(url: &str) -> Connection {
        let location = RedisLocation::parse(url).expect("the server's URL is valid");
        let dial = Dial {
            location: location.clone(),
            cacert: None,
            trips: Arc::default(),
            cache: None,
        };
        let wire = wire::Wire::connect(&dial, &location.endpoint, Instant::now() + BOUND)
            .expect("the test connects to its server");
        Connection(wire)
    }

    /// The answer to the command `name` with `args`.
    fn run(&mut self, name: &str, args: &[&[u8]]) -> std::io::Result<resp::Value> {
        let mut cmd = resp::Command::new(name);
        for a in args {
            cmd.arg(a);
        }
        self.0.query(
            &[&cmd.packed()],
            Instant::now() + BOUND,
            "the test's command",
        )
    }
}

/// A connection of the test's own, to look at the keys behind the store's back.
fn connection(server: &RedisServer) -> Connection {
    Connection::open(&server.url())
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

/// 64 runs, each on its own connection, record a failure at the same moment: each is
/// counted once, none lost, none retried.
#[test]
fn sixty_four_concurrent_updates_lose_none() {
    let server = RedisServer::start();
    let l = Limits {
        threshold: 1000,
        ..contract::limits()
    };
    let replies = race(&server, &l, |_, store| {
        apply(store, "http://down:80", fail()).expect("the update succeeds within its bound")
    });
    assert!(replies.iter().all(|r| *r == Reply::Recorded), "{replies:?}");
    let (t, _) = open_on(&server, &l, Clock::own())
        .peek("http://down:80", BOUND)
        .expect("the store answers");
    assert_eq!(t.breaker.failures, RUNS as u32);
    // Every script (the peek that connects a run, its operation, the peek above) measures
    // the key once: 2 x 64 + 1 scripts ran, and 64 writes, so no operation ran twice.
    let calls = server.cli(&["INFO", "commandstats"]);
    let ran = format!("cmdstat_strlen:calls={},", 2 * RUNS + 1);
    assert!(calls.contains(&ran), "{calls}");
    assert!(
        calls.contains(&format!("cmdstat_set:calls={RUNS},")),
        "{calls}"
    );
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
        let now = Clock::own().host_time();
        let open = Target {
            breaker: Breaker {
                failures: 3,
                opened_at: Some(now - 60_000),
                probe_until: None,
                probe_id: None,
            },
            seen: now,
            ..Target::default()
        };
        put(&server, key, &open);
        let answers = race(&server, &l, |i, store| {
            let op = Op::Admit {
                lease: Duration::from_secs(60),
                id: i as u64 + 1,
                job: None,
            };
            match apply(store, key, op).expect("the admission succeeds within its bound") {
                Reply::Admitted { admission, .. } => admission,
                other => panic!("{other:?}"),
            }
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
    let answers = race(&server, &l, |i, store| {
        let run = i as u64 + 1;
        apply(store, "http://busy:80", Op::Send { charge: true, run })
            .expect("the budget answers within its bound")
    });
    let granted = answers
        .iter()
        .filter(|a| matches!(a, Reply::Told { budget: Ok(()), .. }))
        .count();
    assert_eq!(granted, 10);
    let (t, _) = open_on(&server, &l, Clock::own())
        .peek("http://busy:80", BOUND)
        .expect("the store answers");
    assert_eq!(t.budget.counts(), (0, 10));
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
        apply(store, "t", fail()).expect("the update succeeds");
        let (t, _) = store.peek("t", BOUND).expect("the store answers");
        assert_eq!(t.breaker.failures, 1, "{}", server.url());
        let text = server.cli(&["-n", db, "GET", key]);
        assert!(text.contains("\"failures\":1"), "{}: {text}", server.url());
    }
    let no_ca = RedisStore::open(&location, &l, Clock::own(), None, BOUND).expect("opens");
    let e = apply(&no_ca, "t", fail()).expect_err("an unknown CA is refused");
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
    let e = fails_in_time(|b| store.apply("t", &fail(), b, &quiet));
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
    apply(&warm, "t", fail()).expect("the server answers");
    server.stop_signal();
    let fresh = open_on(&server, &l, Clock::own());
    for store in [&warm, &fresh] {
        let e = fails_in_time(|b| store.apply("t", &fail(), b, &quiet));
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("--state-timeout"), "{e}");
    }
    server.cont_signal();
    apply(&warm, "t", fail()).expect("the store reconnects");
    let (t, _) = fresh.peek("t", BOUND).expect("the store reconnects");
    // The two failures answered are counted; each of the two that were sent to the frozen
    // server and never answered is counted at most once: the server may still run what it
    // had received when it wakes (an answer lost, not an operation made twice).
    assert!(
        (2..=4).contains(&t.breaker.failures),
        "{}",
        t.breaker.failures
    );
    server.cli(&["CLIENT", "PAUSE", "10000", "ALL"]);
    let e = fails_in_time(|b| warm.apply("t", &fail(), b, &quiet));
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
    let e = apply(&store, "t", fail()).expect_err("a hash is not a record");
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
            .apply("t", &fail(), BOUND, &warn)
            .expect("the record is replaced");
        let warnings = warnings.into_inner().expect("one thread");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("retry-http:t"), "{warnings:?}");
        apply(&store, "t", fail()).expect("no warning the second time");
        let (t, _) = store.peek("t", BOUND).expect("the store answers");
        assert_eq!(t.breaker.failures, 2, "{garbage}: afresh");
        let text = server.cli(&["GET", "retry-http:t"]);
        let v: Value = serde_json::from_str(&text).expect("a record of ours is JSON");
        assert_eq!(v["format"], retry_http_policy::record::FORMAT);
    }
}

/// `SCRIPT FLUSH` between updates: the script is sent whole each time, nothing is lost.
#[test]
fn flushed_scripts_are_loaded_again() {
    let server = RedisServer::start();
    let l = contract::limits();
    let store = open_on(&server, &l, Clock::own());
    apply(&store, "t", fail()).expect("the first update");
    assert_eq!(server.cli(&["SCRIPT", "FLUSH"]), "OK");
    apply(&store, "t", fail()).expect("the script is loaded again");
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
    let e = apply(&without, "t", fail()).expect_err("a password is wanted");
    let e = e.to_string();
    assert!(e.contains("wants a password"), "{e}");
    assert!(!e.contains(&url) && !e.contains(&port), "{e}");
    let wrong = open_url(&url.replace("//", "//:s3cret@"), &l, Clock::own());
    let e = apply(&wrong, "t", fail()).expect_err("a wrong password");
    let e = e.to_string();
    assert!(e.contains("refused the user or password"), "{e}");
    assert!(!e.contains("s3cret") && !e.contains(&port), "{e}");
    let right = open_url(&url.replace("//", "//:x@"), &l, Clock::own());
    apply(&right, "t", fail()).expect("the right password works");
}

/// An ACL user (Redis 6) allowed only some of what the store runs is told what it needs,
/// naming both ways the script is called; one allowed all of it keeps records.
#[test]
fn an_acl_user_is_told_what_the_store_needs() {
    let server = RedisServer::start();
    let l = contract::limits();
    let rules = "on >pw ~retry-http:* +time +strlen +get +set +del";
    for (user, extra) in [("short", "+eval"), ("full", "+eval +evalsha")] {
        let mut acl = vec!["ACL", "SETUSER", user];
        acl.extend(rules.split(' ').chain(extra.split(' ')));
        assert_eq!(server.cli(&acl), "OK");
    }
    let url = |user: &str| server.url().replace("//", &format!("//{user}:pw@"));
    let short = open_url(&url("short"), &l, Clock::own());
    let e = apply(&short, "t", fail()).expect_err("EVALSHA is not allowed");
    assert!(e.to_string().contains("EVALSHA and EVAL"), "{e}");
    let full = open_url(&url("full"), &l, Clock::own());
    apply(&full, "t", fail()).expect("everything the store needs is allowed");
    let (t, _) = full.peek("t", BOUND).expect("the store answers");
    assert_eq!(t.breaker.failures, 1);
}

/// A server out of memory, and a read-only replica: the update fails and says which.
#[test]
fn a_server_that_refuses_writes_says_why() {
    let server = RedisServer::start();
    let l = contract::limits();
    let store = open_on(&server, &l, Clock::own());
    server.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    let e = apply(&store, "t", fail()).expect_err("out of memory");
    assert!(e.to_string().contains("out of memory"), "{e}");
    server.cli(&["CONFIG", "SET", "maxmemory", "0"]);
    apply(&store, "t", fail()).expect("memory again");
    // A replica of a primary that is not there: it serves reads, refuses writes.
    server.cli(&["REPLICAOF", "127.0.0.1", "1"]);
    let e = apply(&store, "t", fail()).expect_err("a replica");
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
    let cases: [(&str, Vec<Op>, Millis); 3] = [
        ("failed", vec![fail()], 24 * hour),
        ("open", vec![fail(), fail(), fail()], 48 * hour),
        (
            "held",
            vec![hold(Some(Duration::from_secs(30 * 3600)))],
            30 * hour,
        ),
    ];
    for (target, ops, lives) in cases {
        for op in ops {
            apply(&store, target, op).expect("the update succeeds");
        }
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
    let admit = Op::Admit {
        lease: Duration::ZERO,
        id: 1,
        job: None,
    };
    apply(&store, "admitted", admit).expect("admitted");
    assert_eq!(
        exists("admitted"),
        "0",
        "a closed circuit's admission keeps nothing"
    );
    apply(&store, "held", hold(Some(Duration::from_secs(5)))).expect("held");
    apply(&store, "failed", fail()).expect("failed");
    assert_eq!((exists("held"), exists("failed")), ("1".into(), "1".into()));
    clock.set(T0 + 6_000);
    let held = apply(&store, "held", hold(None)).expect("read");
    assert_eq!(
        (held, exists("held")),
        (
            Reply::Told {
                held: None,
                budget: Ok(()),
                next: Ok(())
            },
            "0".into()
        ),
        "the hold passed"
    );
    clock.set(T0 + 24 * 3600 * 1000);
    apply(&store, "failed", hold(None)).expect("read");
    assert_eq!(exists("failed"), "0", "idle for the TTL: forgotten");
}

/// One event of the property test, on one of the targets.
#[derive(Debug, Clone)]
enum Event {
    /// A run asks to start, with a lease of this many ms, as run number `id`, bringing
    /// job number `job` (its key proposed from `id` and `job`).
    Admit {
        key: usize,
        lease: u64,
        id: u64,
        job: Option<u8>,
    },
    /// A run ends (`probe`: the lease number it says it took; `hint`: a Retry-After of
    /// this many ms it shares).
    Finish {
        key: usize,
        result: RunResult,
        probe: Option<u64>,
        hint: Option<u64>,
        retire: Option<(u8, u64)>,
    },
    /// A retry of run `run` is sent (`charge`: charged to the budget).
    Send { key: usize, charge: bool, run: u64 },
    /// A run was told Retry-After: this many ms, and asks about a retry before its wait.
    Hold { key: usize, wait: u64, run: u64 },
    /// A run asks about a retry before its wait, with nothing to share.
    Ask { key: usize, charge: bool, run: u64 },
    /// Time passes: this many ms.
    Advance(u64),
}

impl Event {
    /// The target and the operation of the event (`None` for time passing).
    fn op(&self) -> Option<(usize, Op)> {
        let ms = Duration::from_millis;
        Some(match *self {
            Event::Admit {
                key,
                lease,
                id,
                job,
            } => (
                key,
                Op::Admit {
                    lease: ms(lease),
                    id,
                    job: job.map(|n| Job {
                        digest: Digest([n; 32]),
                        fresh: uuid::Uuid::from_u128(u128::from(id) << 8 | u128::from(n)),
                        renew: id == 4,
                    }),
                },
            ),
            Event::Finish {
                key,
                result,
                probe,
                hint,
                retire,
            } => (
                key,
                Op::Record {
                    result,
                    probe,
                    hint: hint.map(ms),
                    // The key a run `id` would have made for job `n` (see Admit above).
                    retire: retire.and_then(|(n, id)| {
                        let key = uuid::Uuid::from_u128(u128::from(id) << 8 | u128::from(n));
                        Sent::new(Digest([n; 32]), &key.to_string())
                    }),
                },
            ),
            Event::Send { key, charge, run } => (key, Op::Send { charge, run }),
            Event::Hold { key, wait, run } => (
                key,
                Op::Ask {
                    hint: Some(ms(wait)),
                    charge: true,
                    run,
                },
            ),
            Event::Ask { key, charge, run } => (
                key,
                Op::Ask {
                    hint: None,
                    charge,
                    run,
                },
            ),
            Event::Advance(_) => return None,
        })
    }
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
        4 => (key.clone(), 0u64..=120_000, 1u64..=4, proptest::option::weighted(0.5, 0u8..4))
            .prop_map(|(key, lease, id, job)| Event::Admit { key, lease, id, job }),
        4 => (
            key.clone(),
            result,
            proptest::option::of(1u64..=4),
            proptest::option::weighted(0.2, 0u64..=60_000),
            proptest::option::weighted(0.3, (0u8..4, 1u64..=4))
        )
            .prop_map(|(key, result, probe, hint, retire)| Event::Finish {
                key,
                result,
                probe,
                hint,
                retire
            }),
        // Runs 1 to 4, the numbers the admissions use: a run's own retries are told apart
        // from the others' in both languages.
        3 => (key.clone(), proptest::bool::weighted(0.8), 1u64..=4)
            .prop_map(|(key, charge, run)| Event::Send { key, charge, run }),
        1 => (key.clone(), prop_oneof![0u64..=60_000, 0u64..=30 * HOUR], 1u64..=4)
            .prop_map(|(key, wait, run)| Event::Hold { key, wait, run }),
        1 => (key, proptest::bool::ANY, 1u64..=4)
            .prop_map(|(key, charge, run)| Event::Ask { key, charge, run }),
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

fn store_error(e: std::io::Error) -> TestCaseError {
    TestCaseError::fail(format!("the store failed: {e}"))
}

/// The same events, fed to a file store, a store in memory, a Redis store and a store on
/// a Redis Cluster (both decide in their script), with clocks that agree, get the same
/// answers, and leave the same records.
#[test]
fn the_file_memory_redis_and_cluster_stores_decide_alike() {
    let server = RedisServer::start();
    let cluster = RedisCluster::start();
    let conn = Mutex::new(connection(&server));
    // A connection to the owner of each cluster key the test touched (slots do not move).
    let owners: Mutex<std::collections::HashMap<String, Connection>> = Mutex::default();
    let mut runner = TestRunner::new(Config {
        cases: 32,
        failure_persistence: None,
        ..Config::default()
    });
    let cases = (
        limits_strategy(),
        T0..T0 + 100 * 24 * HOUR,
        1usize..=3,
        proptest::collection::vec(event(), 8..=48),
    );
    let result = runner.run(&cases, |(l, start, targets, events)| {
        let dir = tempfile::tempdir().map_err(store_error)?;
        let clock = Clock::manual(start);
        let file = FileStore::open(&dir.path().join("state.json"), &l, clock.clone())
            .map_err(TestCaseError::fail)?;
        let memory = crate::store::memory::memory_store(dir.path(), &l, clock.clone());
        conn.lock()
            .expect("one thread")
            .run("FLUSHALL", &[])
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let redis = open_on(&server, &l, clock.clone());
        for port in cluster.primaries() {
            cluster.cli(port, &["FLUSHALL"]);
        }
        let on_cluster = open_url(&cluster.url(), &l, clock.clone()).caching_in(None);
        let stores: [&dyn Store; 4] = [&file, memory.as_ref(), &redis, &on_cluster];
        let name = |key: usize| format!("http://t{}:80", key % targets);
        let mut now = start;
        // The text of each key after the last event that touched it: a decision that
        // wrote nothing leaves the key (and its expiry, taken off below) as it was.
        let mut texts: std::collections::HashMap<usize, Option<String>> =
            std::collections::HashMap::new();
        for (i, event) in events.iter().enumerate() {
            let touched = match (event, event.op()) {
                (Event::Advance(by), _) => {
                    now += by;
                    clock.set(now);
                    None
                }
                (_, Some((key, op))) => {
                    let replies: Vec<Reply> = stores
                        .iter()
                        .map(|s| apply(*s, &name(key), op))
                        .collect::<Result<_, _>>()
                        .map_err(store_error)?;
                    for other in &replies[1..] {
                        prop_assert_eq!(&replies[0], other, "event {} {:?}", i, event);
                    }
                    // The cluster's clock does not follow the test's either: its key's
                    // expiry is taken off as the single server's is below.
                    let k = on_cluster.location.key(&name(key));
                    let mut owners = owners.lock().expect("one thread");
                    let owner = owners.entry(k.clone()).or_insert_with(|| {
                        Connection::open(&format!("redis://127.0.0.1:{}", cluster.owner_of(&k)))
                    });
                    owner
                        .run("PERSIST", &[k.as_bytes()])
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    Some(key)
                }
                (_, None) => None,
            };
            if let Some(key) = touched {
                // The key lives until the record expires; then its expiry is taken
                // off, since the server's clock does not follow the test's.
                let k = format!("{DEFAULT_PREFIX}{}", name(key));
                let (text, left) = {
                    let mut conn = conn.lock().expect("one thread");
                    let mut run = |name: &str| {
                        conn.run(name, &[k.as_bytes()])
                            .map_err(|e| TestCaseError::fail(e.to_string()))
                    };
                    let text = match run("GET")? {
                        resp::Value::Nil => None,
                        v => Some(v.text().expect("a record is text")),
                    };
                    let resp::Value::Int(left) = run("PTTL")? else {
                        return Err(TestCaseError::fail("PTTL answered no integer"));
                    };
                    run("PERSIST")?;
                    (text, left)
                };
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
                let m = memory.peek(&name(key), BOUND).map_err(store_error)?;
                let r = redis.peek(&name(key), BOUND).map_err(store_error)?;
                let c = on_cluster.peek(&name(key), BOUND).map_err(store_error)?;
                prop_assert_eq!(&f, &r, "after event {} {:?}, {}", i, event, name(key));
                prop_assert_eq!(&f, &m, "after event {} {:?}, {}", i, event, name(key));
                prop_assert_eq!(&f, &c, "after event {} {:?}, {}", i, event, name(key));
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
        .apply("t", &fail(), bound, &quiet)
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
    apply(&store, "t", fail()).expect("the update succeeds");
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
    apply(&first, target, fail()).expect("the update succeeds");
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
    apply(&store, target, fail()).expect("the update succeeds");
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
    apply(&store, "t", fail()).expect("the next seed answers");
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

/// Values written by hand (or by an older binary) that cjson and serde_json read apart,
/// in the fields of a record and outside them: each is a record to the script exactly
/// when it is one to `target_from_value` (which the file store reads with), and one the
/// script replaces is said to be replaced. Reads that kept it go on from what it held.
#[test]
fn the_script_reads_a_hand_written_record_as_the_file_store_does() {
    let server = RedisServer::start();
    let l = contract::limits();
    let store = open_on(&server, &l, Clock::own());
    let with = |rev: &str, failures: &str, rest: &str| {
        format!(
            "{{\"format\":\"retry-http-state\",\"rev\":{rev},\"target\":{{\"breaker\":{{\"failures\":{failures}{rest}}},\"budget\":[]}}}}"
        )
    };
    let deep = |n: usize| format!(",\"x\":{}{}", "[".repeat(n), "]".repeat(n));
    let mut texts = Vec::new();
    for rev in [
        "1",
        "1.0",
        "1e0",
        "-0",
        "0x1",
        "01",
        "+1",
        "1.",
        "Infinity",
        "NaN",
        "-1",
        "9007199254740992",
        "9007199254740993",
        "18446744073709551615",
        "18446744073709551616",
        "1E+2",
    ] {
        texts.push(with(rev, "2", ""));
    }
    for failures in [
        "2.0",
        "2e0",
        "-0",
        "0x2",
        "\"2\"",
        "4294967295",
        "4294967296",
        "[2]",
        "{}",
    ] {
        texts.push(with("1", failures, ""));
    }
    for rest in [
        ",\"probe_id\":9007199254740992",
        ",\"probe_id\":9007199254740993",
        ",\"probe_id\":18446744073709551615",
        ",\"probe_id\":5.0",
        ",\"x\":1.5",
        ",\"x\":-7",
        ",\"x\":0x1",
        ",\"x\":{}",
        ",\"x\":{ \n}",
        ",\"x\":\"a\\\"1.5\\u0000\"",
        ",\"x\":\"raw\ttab\"",
        ",\"x\":\"\\x\"",
        ",\"x\":[\"a\",1.5,\"b\",-0,\"c\"]",
        ",\"x\":[\"a\",0x1,\"b\"]",
        ",\"x\":[\"}\",{ },\"{[\",01]",
        ",\"x\":[\"]]]\",[[]],\"[[[\"]",
        &deep(100),
        &deep(124),
        &deep(125),
        &deep(126),
        &deep(127),
        &deep(400),
    ] {
        texts.push(with("1", "2", rest));
    }
    let good = with("1", "2", "");
    for (from, to) in [
        ("\"budget\":[]", "\"budget\":{}"),
        ("\"budget\":[]", "\"budget\":{ }"),
        ("\"budget\":[]", "\"budget\":[[5,1.0,0]]"),
        ("\"budget\":[]", "\"budget\":[[5,9007199254740993,0]]"),
        ("\"budget\":[]", "\"budget\":[{}]"),
        ("\"budget\":[]", "\"budget\":[],\"seen\":1e3"),
        ("\"budget\":[]", "\"budget\":[],\"hold_until\":{}"),
        (
            "\"budget\":[]",
            "\"budget\":[],\"jobs\":[[\"abababababababababababababababababababababababababababababababab\",\"k-1\",5]]",
        ),
        ("\"budget\":[]", "\"budget\":[],\"jobs\":[]"),
        ("\"budget\":[]", "\"budget\":[],\"jobs\":{}"),
        ("\"budget\":[]", "\"budget\":[],\"jobs\":null"),
        (
            "\"budget\":[]",
            "\"budget\":[],\"jobs\":[[\"abababababababababababababababababababababababababababababababab\",\"k 1\",5]]",
        ),
        (
            "\"budget\":[]",
            "\"budget\":[],\"jobs\":[[\"abababababababababababababababababababababababababababababababab\",\"\",5]]",
        ),
        (
            "\"budget\":[]",
            "\"budget\":[],\"jobs\":[[\"ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB\",\"k\",5]]",
        ),
        (
            "\"budget\":[]",
            "\"budget\":[],\"jobs\":[[\"abababababababababababababababababababababababababababababababab\",\"k\",5.0]]",
        ),
        (
            "\"budget\":[]",
            "\"budget\":[],\"jobs\":[[\"abababababababababababababababababababababababababababababababab\",\"k\",-5]]",
        ),
        (
            "\"budget\":[]",
            "\"budget\":[],\"jobs\":[[\"abababababababababababababababababababababababababababababababab\",\"\\u006b\",5]]",
        ),
        (
            "\"budget\":[]",
            "\"budget\":[],\"jobs\":[[\"abababababababababababababababababababababababababababababababab\",\"k\"]]",
        ),
        (
            "\"budget\":[]",
            "\"budget\":[],\"jobs\":[[\"abababababababababababababababababababababababababababababababab\",7,5]]",
        ),
        ("\"budget\":[]", "\"budget\":[],\"runs\":[]"),
        ("\"budget\":[]", "\"budget\":[],\"runs\":{}"),
        ("\"budget\":[]", "\"budget\":[],\"runs\":null"),
        ("\"budget\":[]", "\"budget\":[[5,0,1]],\"runs\":[[1,5,1]]"),
        ("\"budget\":[]", "\"budget\":[[5,0,1]],\"runs\":[[1,6,1]]"),
        ("\"budget\":[]", "\"budget\":[[5,0,1]],\"runs\":[[1,5,9]]"),
        ("\"budget\":[]", "\"budget\":[],\"runs\":[[1,5]]"),
        ("\"budget\":[]", "\"budget\":[],\"runs\":[[1.0,5,1]]"),
        ("\"budget\":[]", "\"budget\":[],\"runs\":[[-1,5,1]]"),
        (
            "\"budget\":[]",
            "\"budget\":[],\"runs\":[[9007199254740993,5,1]]",
        ),
        ("\"budget\":[]", "\"budget\":[],\"runs\":[[\"1\",5,1]]"),
    ] {
        texts.push(good.replace(from, to));
    }
    // At most 64 entries of runs are read; one more is not a record of ours.
    for n in [64, 65] {
        let runs = vec!["[1,5,1]"; n].join(",");
        let to = format!("\"budget\":[],\"runs\":[{runs}]");
        texts.push(good.replace("\"budget\":[]", &to));
    }
    for text in texts {
        let said = Mutex::new(Vec::new());
        let warn = |m: &str| said.lock().expect("one thread").push(m.to_string());
        let read = store.parse("k", text.clone(), T0, &warn);
        let ours = said.lock().expect("one thread").is_empty();
        let before = if ours {
            read.target.breaker.failures
        } else {
            0
        };
        server.cli(&["SET", "retry-http:t", &text]);
        let warnings = Mutex::new(Vec::new());
        let warn = |m: &str| warnings.lock().expect("one thread").push(m.to_string());
        store
            .apply("t", &fail(), BOUND, &warn)
            .expect("the record is read or replaced");
        let warnings = warnings.into_inner().expect("one thread");
        if ours {
            assert!(
                warnings.is_empty(),
                "{text}: read as a record: {warnings:?}"
            );
        } else {
            assert_eq!(
                warnings.len(),
                1,
                "{text}: replaced, and said so: {warnings:?}"
            );
            assert!(warnings[0].contains("not a record"), "{text}: {warnings:?}");
        }
        let (t, _) = store.peek("t", BOUND).expect("the store answers");
        assert_eq!(t.breaker.failures, before.saturating_add(1), "{text}");
    }
}

/// A server that quotes what it was sent, the password cut short as Redis cuts what it
/// quotes, in an error line or in a value the read did not expect: no piece of the
/// password is in the error an operation or a peek returns (and so in any warning, JSON
/// log line or `--explain` line made of it).
#[test]
fn a_server_quoting_the_password_cut_short_is_not_repeated() {
    let l = contract::limits();
    let error: fn(&str) -> String = |sent| format!("-ERR you said {}\r\n", password_start(sent));
    let value: fn(&str) -> String = |sent| {
        let quoted = format!("you said {}", password_start(sent));
        format!("${}\r\n{quoted}\r\n", quoted.len())
    };
    for answer in [error, value] {
        let port = quoting_redis::start(answer);
        for url in [
            format!("redis://:{LONG_PASSWORD}@127.0.0.1:{port}"),
            format!("redis://ops:{LONG_PASSWORD}@127.0.0.1:{port}/2"),
        ] {
            let store = open_url(&url, &l, Clock::own());
            let said = [
                apply(&store, "t", fail())
                    .expect_err("not an answer")
                    .to_string(),
                store
                    .peek("t", BOUND)
                    .expect_err("not an answer")
                    .to_string(),
            ];
            for e in said {
                assert!(e.contains("you said") || e.contains("nonsense"), "{e}");
                for piece in LONG_PASSWORD.as_bytes().windows(8) {
                    let piece = std::str::from_utf8(piece).expect("ASCII");
                    assert!(!e.contains(piece), "{piece} in {e}");
                }
            }
        }
    }
}

/// A value that is not UTF-8 (here only in a field retry-http does not read) is no record
/// to a Rust reader, the file store's: the script replaces it with one warning, whatever
/// the bytes (a stray continuation byte, an overlong form, a surrogate, one past U+10FFFF,
/// a sequence cut short); UTF-8 of every length is kept.
#[test]
fn a_record_that_is_not_utf8_is_replaced_as_a_file_would_be() {
    let server = RedisServer::start();
    let l = contract::limits();
    let store = open_on(&server, &l, Clock::own());
    let mut c = connection(&server);
    let record = |x: &[u8]| {
        let mut v = b"{\"format\":\"retry-http-state\",\"rev\":1,\"target\":{\"breaker\":{\"failures\":2},\"budget\":[],\"x\":\"".to_vec();
        v.extend_from_slice(x);
        v.extend_from_slice(b"\"}}");
        v
    };
    let kept: [&[u8]; 4] = [b"plain", "é".as_bytes(), "€".as_bytes(), "😀".as_bytes()];
    let bad: [&[u8]; 6] = [
        b"\x80",
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xe2\x82",
        b"\xff",
    ];
    for (x, valid) in kept
        .iter()
        .map(|x| (x, true))
        .chain(bad.iter().map(|x| (x, false)))
    {
        let text = record(x);
        assert_eq!(std::str::from_utf8(&text).is_ok(), valid, "{x:?}");
        let answer = c.run("SET", &[b"retry-http:t", &text]).expect("SET");
        assert_eq!(answer, resp::Value::Simple("OK".into()));
        let warnings = Mutex::new(Vec::new());
        let warn = |m: &str| warnings.lock().expect("one thread").push(m.to_string());
        store
            .apply("t", &fail(), BOUND, &warn)
            .expect("the record is read or replaced");
        let warnings = warnings.into_inner().expect("one thread");
        assert_eq!(warnings.len(), usize::from(!valid), "{x:?}: {warnings:?}");
        let (t, _) = store.peek("t", BOUND).expect("the store answers");
        assert_eq!(t.breaker.failures, if valid { 3 } else { 1 }, "{x:?}");
    }
}

/// A server that answers an error line of 900 KiB repeating a long password: the
/// error is masked and cut short, in much less than the operation's bound would allow.
#[test]
fn a_long_error_quoting_a_long_password_is_masked_in_time() {
    let l = contract::limits();
    let port = quoting_redis::start(|sent| {
        let at = sent.find("Correct").unwrap_or(0);
        let password = sent[at..].lines().next().unwrap_or("");
        format!(
            "-ERR {}\r\n",
            password.repeat((900 << 10) / password.len().max(1))
        )
    });
    let password = LONG_PASSWORD.repeat(16);
    let store = open_url(
        &format!("redis://:{password}@127.0.0.1:{port}"),
        &l,
        Clock::own(),
    );
    let t0 = Instant::now();
    let e = apply(&store, "t", fail())
        .expect_err("not an answer")
        .to_string();
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(e.len() < 4096, "{}", e.len());
    assert!(!e.contains(&LONG_PASSWORD[..8]), "{e}");
}

/// Which run made which retries, on the file store, Redis and the cluster alike: 99 runs
/// retry once each under a floor of 100; the entries keep only the last 64 runs, so a run
/// dropped from them has its own retry counted against it, while a run still in them does
/// not: the script and the Rust budget give the same answers and keep the same record.
#[test]
fn the_stores_agree_on_whose_retries_past_the_cap() {
    let server = RedisServer::start();
    let cluster = RedisCluster::start();
    let l = Limits {
        budget_pct: 0.0,
        floor: 100,
        ..contract::limits()
    };
    let dir = tempfile::tempdir().expect("a folder");
    let clock = Clock::manual(T0);
    let file = FileStore::open(&dir.path().join("state.json"), &l, clock.clone()).expect("file");
    let redis = open_on(&server, &l, clock.clone());
    let on_cluster = open_url(&cluster.url(), &l, clock.clone()).caching_in(None);
    let stores: [&dyn Store; 3] = [&file, &redis, &on_cluster];
    let mut now = T0;
    let mut send = |run: u64| {
        now += 1;
        clock.set(now);
        let replies: Vec<Reply> = stores
            .iter()
            .map(|s| apply(*s, "http://a:80", Op::Send { charge: true, run }).expect("answers"))
            .collect();
        assert!(replies.windows(2).all(|p| p[0] == p[1]), "{replies:?}");
        let kept: Vec<Target> = stores
            .iter()
            .map(|s| s.peek("http://a:80", BOUND).expect("answers").0)
            .collect();
        assert!(kept.windows(2).all(|p| p[0] == p[1]), "run {run}");
        assert!(kept[0].budget.runs.len() <= retry_http_policy::budget::MAX_RUNS);
        matches!(replies[0], Reply::Told { budget: Ok(()), .. })
    };
    for run in 1..=99 {
        assert!(send(run), "run {run}: fewer than 100 by others");
    }
    assert!(
        send(1),
        "run 1: 99 by others (its own no longer told apart)"
    );
    assert!(send(99), "run 99: 99 by others, its own told apart");
    assert!(!send(2), "run 2: dropped from the entries, 101 by others");
    assert!(send(99), "run 99 again: its own still told apart");
}

/// A record written before runs were told apart (no `runs`) is read with the same meaning
/// by the file store and the script: its retries are other runs', for every run.
#[test]
fn a_record_without_runs_counts_its_retries_as_other_runs() {
    let server = RedisServer::start();
    let l = Limits {
        budget_pct: 0.0,
        floor: 3,
        ..contract::limits()
    };
    let dir = tempfile::tempdir().expect("a folder");
    let start = T0 - T0 % 60_000;
    let target = format!(
        "{{\"breaker\":{{\"failures\":0,\"opened_at\":null,\"probe_id\":null,\"probe_until\":null}},\"budget\":[[{start},0,3]],\"hold_until\":null,\"seen\":{T0}}}"
    );
    let path = dir.path().join("state.json");
    std::fs::write(
        &path,
        format!(
            "{{\n  \"format\": \"retry-http-state\",\n  \"version\": 2,\n  \"targets\": {{\n    \"http://a:80\": {target}\n  }}\n}}\n"
        ),
    )
    .expect("written");
    server.cli(&[
        "SET",
        &format!("{DEFAULT_PREFIX}http://a:80"),
        &format!("{{\"format\":\"retry-http-state\",\"rev\":7,\"target\":{target}}}"),
    ]);
    let clock = Clock::manual(T0 + 1_000);
    let file = FileStore::open(&path, &l, clock.clone()).expect("file");
    let redis = open_on(&server, &l, clock.clone());
    for store in [&file as &dyn Store, &redis] {
        for run in [1, 2, 3] {
            let reply =
                apply(store, "http://a:80", Op::Send { charge: true, run }).expect("answers");
            let Reply::Told { budget, .. } = reply else {
                panic!("{reply:?}");
            };
            let why = budget.expect_err("3 retries by other runs, the floor");
            assert!(why.contains("3 retries by other runs"), "{why}");
        }
        let (t, _) = store.peek("http://a:80", BOUND).expect("answers");
        assert_eq!((t.budget.counts(), t.budget.runs.len()), ((0, 3), 0));
    }
}
