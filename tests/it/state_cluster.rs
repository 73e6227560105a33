//! `--state redis+cluster://...`: the shared state on a real Redis Cluster (three primaries,
//! three replicas) started by each test: records land on the node that owns the target's
//! slot, whichever seed is asked first; a dead seed gives way to the next; a primary that
//! dies in the middle of a fleet costs each run no more than its bound, and the store is
//! used again once its replica is promoted; exact counts under 128 concurrent runs.
//!
//! Each run is given a cache folder of the test's own (`XDG_CACHE_HOME`), where the owners
//! of slots are remembered between runs. The store's round trips are counted as the kernel
//! sees them, under strace(1).

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[path = "../support/redis_cluster.rs"]
pub(crate) mod redis_cluster;
use redis_cluster::RedisCluster;

/// The store timeout of the failover test.
const STORE_TIMEOUT: &str = "300ms";
/// The most a run with that timeout may take (generous: the store's bound twice, start-up
/// and one loopback request on busy cores).
const WITHIN: Duration = Duration::from_secs(5);
/// How long a replica may take to be promoted and known by all (generous: a loaded machine).
const FAILOVER: Duration = Duration::from_secs(60);

/// Runs the binary with `args`, its cache folder in `cache`; its output and time.
fn run_cached(cache: &Path, args: &[&str]) -> (Output, Duration) {
    let mut cmd = command();
    cmd.env("XDG_CACHE_HOME", cache)
        .args(args)
        .timeout(Duration::from_secs(60));
    let t = Instant::now();
    let out = cmd.output().expect("binary runs");
    (out, t.elapsed())
}

/// Runs the binary `n` times at once (each on a thread of its own, released together).
fn run_many(cache: &Path, n: usize, args: &[&str]) -> Vec<(Output, Duration)> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let start = Arc::new(Barrier::new(n));
    let runs: Vec<_> = (0..n)
        .map(|_| {
            let (args, start, cache) = (args.clone(), start.clone(), cache.to_path_buf());
            std::thread::spawn(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                start.wait();
                run_cached(&cache, &args)
            })
        })
        .collect();
    runs.into_iter()
        .map(|r| r.join().expect("a run's thread"))
        .collect()
}

/// The key of `target` on a cluster, under the default prefix: the target hash-tagged.
fn key(target: &str) -> String {
    format!("retry-http:{{{target}}}")
}

/// The record of `target` on the node at `port`, checked to be ours; `Null` if none.
fn record_on(cluster: &RedisCluster, port: u16, target: &str) -> Value {
    let text = cluster.get(port, &key(target));
    if text.is_empty() {
        return Value::Null;
    }
    let v: Value = serde_json::from_str(&text).expect("the key holds JSON");
    assert_eq!(v["format"], "retry-http-state", "{v}");
    v["target"].clone()
}

/// Asserts that a run succeeded without a word about the store.
fn assert_quiet_success(out: &Output) {
    assert_eq!(code(out), 0, "{}", stderr(out));
    assert!(warnings(out).is_empty(), "{}", stderr(out));
}

/// Runs with every node as a seed succeed, and their record is on the primary that owns the
/// target's slot, under the hash-tagged key that `--explain` names.
#[test]
fn runs_record_on_the_node_that_owns_the_slot() {
    let cluster = RedisCluster::start();
    let cache = tempfile::tempdir().expect("a temporary folder");
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let (url, target, state) = (s.url("/"), s.url(""), cluster.url());
    for _ in 0..3 {
        let (out, _) = run_cached(cache.path(), &["--state", &state, &url]);
        assert_quiet_success(&out);
    }
    let owner = cluster.owner_of(&key(&target));
    let record = record_on(&cluster, owner, &target);
    assert_eq!(counted(&record, 1), 3, "{record}");
    for other in cluster.primaries().into_iter().filter(|p| *p != owner) {
        let said = cluster.get(other, &key(&target));
        assert!(said.contains("MOVED"), "only the owner holds it: {said}");
    }
    let (out, _) = run_cached(cache.path(), &["--state", &state, "--explain", &url]);
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains(&format!("key {}", key(&target))), "{shown}");
    assert!(
        shown.contains(&format!("redis+cluster://{}", cluster.seeds())),
        "{shown}"
    );
}

/// The only seed given is a primary that does not own the slot: the run follows its
/// `MOVED`, the record lands on the owner, and the owner is remembered in the cache folder.
#[test]
fn a_seed_that_is_not_the_owner_redirects_the_run() {
    let cluster = RedisCluster::start();
    let cache = tempfile::tempdir().expect("a temporary folder");
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let (url, target) = (s.url("/"), s.url(""));
    let owner = cluster.owner_of(&key(&target));
    let seed = cluster.primaries().into_iter().find(|p| *p != owner);
    let state = format!("redis+cluster://127.0.0.1:{}", seed.expect("a primary"));
    for _ in 0..2 {
        let (out, _) = run_cached(cache.path(), &["--state", &state, &url]);
        assert_quiet_success(&out);
    }
    assert_eq!(counted(&record_on(&cluster, owner, &target), 1), 2);
    let folder = cache.path().join("retry-http");
    let files = std::fs::read_dir(&folder).expect("the cache folder was made");
    let texts: Vec<String> = files
        .map(|f| std::fs::read_to_string(f.expect("an entry").path()).expect("readable"))
        .collect();
    assert_eq!(texts.len(), 1, "one cache file: {texts:?}");
    assert!(
        texts[0].contains(&format!(" 127.0.0.1 {owner}\n")),
        "{}",
        texts[0]
    );
}

/// The first seed does not answer (nothing listens): the next one is asked, and the run
/// neither warns nor waits past its bound.
#[test]
fn a_dead_first_seed_gives_way_to_the_next() {
    let cluster = RedisCluster::start();
    let cache = tempfile::tempdir().expect("a temporary folder");
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let (url, target) = (s.url("/"), s.url(""));
    let closed = closed_port();
    let state = format!("redis+cluster://127.0.0.1:{closed},{}", cluster.seeds());
    let args = ["--state", &state, "--state-timeout", STORE_TIMEOUT, &url];
    let (out, took) = run_cached(cache.path(), &args);
    assert_quiet_success(&out);
    assert!(took < WITHIN, "{took:?}");
    let owner = cluster.owner_of(&key(&target));
    assert_eq!(counted(&record_on(&cluster, owner, &target), 1), 1);
}

/// Runs `n` runs at once with `policy` while the store cannot serve the target: each ends
/// within `WITHIN`; `open` runs succeed with one warning about the store, `closed` runs end
/// 7 without sending. Returns how many requests they sent.
fn runs_during_the_outage(cache: &Path, state: &str, url: &str, policy: &str, n: usize) {
    let args = [
        "--state",
        state,
        "--state-timeout",
        STORE_TIMEOUT,
        "--state-on-error",
        policy,
        url,
    ];
    for (out, took) in run_many(cache, n, &args) {
        let err = stderr(&out);
        assert!(took < WITHIN, "{policy}: {took:?}: {err}");
        if policy == "open" {
            assert_eq!(code(&out), 0, "{err}");
            let w = warnings(&out);
            assert_eq!(w.len(), 1, "{err}");
            assert!(w[0].contains("the state store redis+cluster://"), "{err}");
        } else {
            assert_eq!(code(&out), 7, "{err}");
            assert!(err.contains("--state-on-error is closed"), "{err}");
        }
    }
}

/// The primary owning the target's slot is killed in the middle of a fleet's runs, and its
/// replica is kept frozen meanwhile (so that the outage lasts): every run ends within its
/// bound, `open` runs going on with a warning, `closed` runs ending 7 without a request.
/// Once the replica is thawed and promoted, runs use the store again, on the new primary.
#[test]
fn a_primary_killed_mid_fleet_costs_no_run_more_than_its_bound() {
    let mut cluster = RedisCluster::start();
    let cache = tempfile::tempdir().expect("a temporary folder");
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let (url, target, state) = (s.url("/"), s.url(""), cluster.url());
    let args = ["--state", &state, "--state-timeout", STORE_TIMEOUT, &url];
    for (out, _) in run_many(cache.path(), 8, &args) {
        assert_quiet_success(&out);
    }
    let owner = cluster.owner_of(&key(&target));
    let replica = cluster.replica_of(owner);
    cluster.stop(replica);
    cluster.kill(owner);

    let sent = s.requests().len();
    runs_during_the_outage(cache.path(), &state, &url, "open", 8);
    assert_eq!(s.requests().len(), sent + 8, "open runs went on");
    runs_during_the_outage(cache.path(), &state, &url, "closed", 4);
    assert_eq!(s.requests().len(), sent + 8, "closed runs sent nothing");

    cluster.cont(replica);
    let promoted = cluster.wait_for_owner(&key(&target), FAILOVER);
    assert_eq!(promoted, replica, "the replica took over");
    // The new primary may answer slowly for a moment after its promotion on a loaded
    // machine (a run then warns that the store timed out and goes on, as it should): the
    // runs below start once one run has used the store quietly.
    let settled = std::time::Instant::now();
    while !warnings(&run_cached(cache.path(), &args).0).is_empty() {
        assert!(
            settled.elapsed() < FAILOVER,
            "the new primary never answered in time"
        );
    }
    for (out, took) in run_many(cache.path(), 4, &args) {
        assert_quiet_success(&out);
        assert!(took < WITHIN, "{took:?}");
    }
    let record = record_on(&cluster, promoted, &target);
    assert!(
        counted(&record, 1) >= 4,
        "the new primary keeps records: {record}"
    );
}

/// 128 runs at once against one target, all successes, at the default `--state-timeout`: a
/// run that could not reach the store in time says so, and every other run's success is
/// counted: none is lost in silence. A run whose write was sent but whose answer came after
/// its bound cannot know whether the write landed: it warns, and may still be counted, so
/// the count lies between the runs that did not warn and those plus the late writes.
#[test]
fn a_hundred_and_twenty_eight_runs_are_counted_exactly_on_a_cluster() {
    let cluster = RedisCluster::start();
    let cache = tempfile::tempdir().expect("a temporary folder");
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let (url, target, state) = (s.url("/"), s.url(""), cluster.url());
    let outs = run_many(cache.path(), 128, &["--state", &state, &url]);
    let (mut quiet, mut late) = (0, 0);
    for (out, _) in &outs {
        assert_eq!(code(out), 0, "{}", stderr(out));
        match warnings(out).as_slice() {
            [] => quiet += 1,
            // A record sent whose answer came late (its line says it may still count).
            [w] if w.contains("writing to the store timed out")
                || w.contains("it may still count it (once)") =>
            {
                late += 1
            }
            [_] => {}
            more => panic!("more than one warning: {more:?}"),
        }
    }
    let owner = cluster.owner_of(&key(&target));
    let recorded = counted(&record_on(&cluster, owner, &target), 1);
    assert!(
        (quiet..=quiet + late).contains(&recorded),
        "{recorded} successes recorded, {quiet} runs did not warn, {late} wrote late"
    );
}

/// The store's round trips in one run of the binary with `args` (cache folder `cache`), as
/// the kernel sees them under strace(1): each connection to one of `ports`, and each write on
/// such a connection (commands written together count once).
fn store_round_trips(cache: &Path, ports: &[u16], args: &[&str]) -> usize {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let log = dir.path().join("trace.log");
    let calls = "trace=connect,write,sendto,writev,sendmsg,close";
    let strace = ["-f", "-qq", "-e", calls, "-o"];
    let mut traced = command_for(Path::new("strace"));
    traced
        .args(strace)
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_retry-http"));
    traced.args(args).env("XDG_CACHE_HOME", cache);
    let out = traced
        .output()
        .expect("strace must be installed (Debian package strace)");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        warnings(&out).is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = std::fs::read_to_string(&log).expect("strace wrote its log");
    let mut open = std::collections::HashSet::new();
    let mut trips = 0;
    for line in trace.lines() {
        let Some((_, call)) = line.split_once(' ') else {
            continue;
        };
        let Some((name, rest)) = call.trim_start().split_once('(') else {
            continue;
        };
        let Some(fd) = rest
            .split([',', ')', ' '])
            .next()
            .and_then(|f| f.parse::<u32>().ok())
        else {
            continue;
        };
        match name {
            "connect" => {
                let to_store = ports.iter().any(|p| rest.contains(&format!("htons({p})")));
                if to_store {
                    open.insert(fd);
                    trips += 1;
                } else {
                    open.remove(&fd);
                }
            }
            "close" => {
                open.remove(&fd);
            }
            _ if open.contains(&fd) => trips += 1,
            _ => {}
        }
    }
    trips
}

/// A successful run costs as many round trips on a cluster as on one server once the
/// owner of its slot is known (the cache folder), and two more (a connection to a seed that
/// is not the owner, and its `MOVED`) before, or whenever the cache cannot be written.
#[test]
fn a_run_on_a_cluster_costs_what_it_costs_on_one_server_once_the_owner_is_known() {
    let cluster = RedisCluster::start();
    let single = crate::state_redis::redis_server::RedisServer::start();
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let (url, target) = (s.url("/"), s.url(""));
    let owner = cluster.owner_of(&key(&target));
    let seed = cluster.primaries().into_iter().find(|p| *p != owner);
    let state = format!("redis+cluster://127.0.0.1:{}", seed.expect("a primary"));
    let cache = tempfile::tempdir().expect("a temporary folder");
    let ports = [cluster.ports(), vec![single.port().expect("TCP")]].concat();
    let trips = |state: &str, cache: &Path| {
        // Patient: strace slows the run, and the other tests load the machine.
        let patient = ["--state-timeout", "20s"];
        store_round_trips(
            cache,
            &ports,
            &[&patient[..], &["--state", state, &url]].concat(),
        )
    };
    // Each server is asked once first, so that it has the store's script (the first run
    // after a server lost its script cache sends it whole: one more round trip).
    let warm = tempfile::tempdir().expect("a temporary folder");
    trips(&single.url(), warm.path());
    trips(&state, warm.path());
    let one = trips(&single.url(), cache.path());
    assert!(one >= 2, "a connection and a command at least: {one}");
    assert_eq!(trips(&state, cache.path()), one + 2, "the first run: MOVED");
    assert_eq!(trips(&state, cache.path()), one, "the owner is known");
    // A job whose key the state keeps (taken at the admission, retired at the end) costs
    // nothing more.
    let job = [
        "--state-timeout",
        "20s",
        "--idempotency-key",
        "auto",
        "-d",
        "job",
    ];
    let with_job = [&job[..], &["--state", &state, &url]].concat();
    assert_eq!(
        store_round_trips(cache.path(), &ports, &with_job),
        one,
        "a job"
    );
    let unwritable = cache.path().join("a-file");
    std::fs::write(&unwritable, "").expect("a file");
    assert_eq!(
        trips(&state, &unwritable),
        one + 2,
        "no cache: MOVED each time"
    );
}
