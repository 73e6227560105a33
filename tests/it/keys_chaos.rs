//! An idempotency key kept across runs, tested as cron uses it: many jobs, each run again
//! and again (`--state S --idempotency-key auto -X POST --data BODY --deadline 2s`) until a
//! run exits 0, against a server that implements the Idempotency-Key draft and loses its
//! answers after committing (tests/support/idempotent_server.rs): before the head, in the
//! middle of the head or the body, with a reset, by silence past the deadline, or by
//! processing slowly (409 meanwhile); or answers 503 first. The state is on a file in one
//! test, on a real redis-server in the other.
//!
//! Once a job's run succeeded, the job runs again as a new instance, as a heartbeat POSTed
//! every minute would. Most jobs name their instance in the body (`job=J;instance=I`): the
//! server counts side effects per body. Some send the same body every time (`beat=J`): the
//! server cannot tell their instances apart, so only a key retired after the success keeps
//! the next instance from being answered with the previous one's stored result; there the
//! runs label themselves (`X-Chaos-Run`) and each side effect is counted for the run whose
//! request made it.
//!
//! The figures (runs, exit codes, faults played, replays, 409s) are printed to stderr:
//! `cargo test --test it keys_chaos -- --nocapture`. The faults follow a seed, printed too,
//! and taken from `RETRY_HTTP_CHAOS_SEED` when it is set (it replays the sequence of faults,
//! not the order in which the threads' requests meet them).

// The figures are the test's report: they go to stderr.
#![allow(clippy::print_stderr)]

use crate::common::*;
use crate::state_redis::redis_server::RedisServer;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[path = "../support/idempotent_server.rs"]
mod idempotent_server;
use idempotent_server::{Counts, Faults, IdempotentServer};

/// Jobs whose body names their instance, and how many instances each runs.
const JOBS_APART: usize = 32;
const INSTANCES_APART: usize = 3;
/// Jobs whose body is the same on every instance, and how many instances each runs.
const JOBS_SAME: usize = 8;
const INSTANCES_SAME: usize = 4;
/// Jobs run at once (each job's runs one after the other).
const THREADS: usize = 6;
/// The most runs an instance is given to succeed: at 37% of answers lost, far beyond need.
const RUNS_AT_MOST: usize = 30;

/// One job: its name, and how many attempts each of its runs makes (1 to 3, so some runs
/// end at the first lost answer and some retry within the run).
struct Job {
    name: String,
    same_body: bool,
    instances: usize,
    attempts: usize,
}

impl Job {
    /// The body of `instance` (counted from 1).
    fn body(&self, instance: usize) -> String {
        if self.same_body {
            format!("beat={}", self.name)
        } else {
            format!("job={};instance={instance}", self.name)
        }
    }
}

/// How one instance fared: its runs' exit codes and the last run's stdout.
struct Instance {
    job: String,
    instance: usize,
    body: String,
    codes: Vec<i32>,
    stdout: String,
    /// Store warnings of its runs.
    warnings: Vec<String>,
}

impl Instance {
    fn succeeded(&self) -> bool {
        self.codes.last() == Some(&0)
    }

    /// The label of its run `run` (counted from 1).
    fn label(job: &str, instance: usize, run: usize) -> String {
        format!("{job}/{instance}/{run}")
    }
}

fn jobs() -> Vec<Job> {
    let apart = (0..JOBS_APART).map(|j| Job {
        name: format!("a{j}"),
        same_body: false,
        instances: INSTANCES_APART,
        attempts: 1 + j % 3,
    });
    let same = (0..JOBS_SAME).map(|j| Job {
        name: format!("s{j}"),
        same_body: true,
        instances: INSTANCES_SAME,
        attempts: 1 + j % 3,
    });
    apart.chain(same).collect()
}

/// The seed of the faults: `RETRY_HTTP_CHAOS_SEED`, else the clock's.
fn seed() -> u64 {
    std::env::var("RETRY_HTTP_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map(|d| d.as_nanos() as u64).unwrap_or(1)
        })
}

/// Runs one instance of `job` until a run exits 0, at most [`RUNS_AT_MOST`] runs.
fn run_instance(job: &Job, instance: usize, state: &str, url: &str) -> Instance {
    let body = job.body(instance);
    let attempts = job.attempts.to_string();
    let mut result = Instance {
        job: job.name.clone(),
        instance,
        body: body.clone(),
        codes: Vec::new(),
        stdout: String::new(),
        warnings: Vec::new(),
    };
    for n in 1..=RUNS_AT_MOST {
        let label = format!("X-Chaos-Run: {}", Instance::label(&job.name, instance, n));
        #[rustfmt::skip]
        let args = [
            "--state", state, "--state-timeout", "1s", "--idempotency-key", "auto",
            "-X", "POST", "--data", &body, "-H", &label, "--deadline", "2s",
            "--attempts", &attempts, "--base", "20ms", "--cap", "100ms",
            "--breaker-threshold", "1000000", "--budget-floor", "1000000", url,
        ];
        let (out, _) = run(&args);
        let exit = code(&out);
        result.warnings.extend(warnings(&out));
        result.codes.push(exit);
        assert!(
            [0, 3, 4, 5, 6].contains(&exit),
            "{label}: exit {exit}: {}",
            stderr(&out)
        );
        if exit == 0 {
            result.stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            break;
        }
    }
    result
}

/// Runs every job on [`THREADS`] threads, each job's instances and runs one after the other.
fn run_jobs(state: &str, url: &str) -> Vec<Instance> {
    let queue = Mutex::new(jobs());
    let done = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                while let Some(job) = queue.lock().ok().and_then(|mut q| q.pop()) {
                    for instance in 1..=job.instances {
                        let fared = run_instance(&job, instance, state, url);
                        let succeeded = fared.succeeded();
                        done.lock().expect("the results").push(fared);
                        if !succeeded {
                            break;
                        }
                    }
                }
            });
        }
    });
    done.into_inner().expect("the results")
}

/// The side effects of each instance, as the server counted them: per body for the jobs
/// that name their instance; for the others, per run, by the label of the request that
/// made each (an instance answered with an earlier one's stored result made none). Also
/// the keys that the runs of more than one instance sent.
fn effects(instances: &[Instance], counts: &Counts) -> (Vec<u32>, Vec<String>) {
    let mut instance_of_label = BTreeMap::new();
    for (i, inst) in instances.iter().enumerate() {
        for run in 1..=inst.codes.len() {
            instance_of_label.insert(Instance::label(&inst.job, inst.instance, run), i);
        }
    }
    let mut per_instance = vec![0u32; instances.len()];
    for (label, effects) in &counts.effects_by_run {
        if let Some(&i) = instance_of_label.get(label) {
            per_instance[i] += effects;
        }
    }
    for (i, inst) in instances.iter().enumerate() {
        if !inst.body.starts_with("beat=") {
            per_instance[i] = counts.effects_by_body.get(&inst.body).copied().unwrap_or(0);
        }
    }
    let mut shared_keys = Vec::new();
    for (key, labels) in &counts.runs_by_key {
        let owners: BTreeSet<usize> = labels
            .iter()
            .filter_map(|l| instance_of_label.get(l).copied())
            .collect();
        if owners.len() > 1 {
            shared_keys.push(format!("{key}: {labels:?}"));
        }
    }
    (per_instance, shared_keys)
}

/// The test's figures, printed to stderr.
fn report(what: &str, seed: u64, instances: &[Instance], counts: &Counts, took: Duration) {
    let runs: usize = instances.iter().map(|i| i.codes.len()).sum();
    let mut exits = BTreeMap::new();
    for code in instances.iter().flat_map(|i| &i.codes) {
        *exits.entry(*code).or_insert(0) += 1;
    }
    let longest = instances.iter().max_by_key(|i| i.codes.len());
    let (most, longest) = longest.map_or((0, String::new()), |i| {
        (i.codes.len(), format!("{}: exits {:?}", i.body, i.codes))
    });
    let keys: usize = counts.requests_by_key.len();
    eprintln!(
        "keys chaos on {what} (seed {seed}): {} instances of {} jobs, {runs} runs (at most {most} \
         for one instance, {longest}), exits {exits:?}; the server: {} requests with {keys} keys, {} replays, \
         statuses {:?}, faults {:?}; {:.1} s",
        instances.len(),
        JOBS_APART + JOBS_SAME,
        counts.requests,
        counts.replays,
        counts.statuses,
        counts.faults,
        took.as_secs_f64()
    );
}

/// The whole chaos run against `state`: every instance succeeds, and has exactly one side
/// effect of its own.
fn chaos(what: &str, state: &str, seed: u64) {
    let server = IdempotentServer::start(Faults::Random(seed)).expect("the server starts");
    let url = server.url("/jobs");
    let t = Instant::now();
    let instances = run_jobs(state, &url);
    assert!(server.settle(Duration::from_secs(30)), "slow requests left");
    let counts = server.counts();
    report(what, seed, &instances, &counts, t.elapsed());
    let (effects, shared_keys) = effects(&instances, &counts);
    let describe = |want: fn(u32) -> bool| -> Vec<String> {
        let matching = instances.iter().zip(&effects).filter(|(_, n)| want(**n));
        let text = matching.map(|(i, n)| {
            let (body, instance, codes) = (&i.body, i.instance, &i.codes);
            format!("{body} instance {instance}: {n} (exits {codes:?})")
        });
        text.collect()
    };
    let duplicated = describe(|n| n > 1);
    let lost = describe(|n| n == 0);
    let warned: Vec<_> = instances.iter().flat_map(|i| &i.warnings).collect();
    // A run that warned may rightly have sent a new key: the first few say why.
    let first_warnings = &warned[..warned.len().min(3)];
    eprintln!(
        "keys chaos on {what}: {} duplicated, {} lost, {} keys sent by two instances, {} store warnings",
        duplicated.len(),
        lost.len(),
        shared_keys.len(),
        warned.len()
    );
    let expected = JOBS_APART * INSTANCES_APART + JOBS_SAME * INSTANCES_SAME;
    assert!(
        duplicated.is_empty(),
        "{what}: {} of {expected} job instances have more than one side effect: {duplicated:?}; {} warnings, the first: {first_warnings:?}",
        duplicated.len(),
        warned.len()
    );
    assert!(lost.is_empty(), "{what}: side effects lost: {lost:?}");
    let unfinished: Vec<_> = instances.iter().filter(|i| !i.succeeded()).collect();
    let unfinished: Vec<_> = unfinished.iter().map(|i| (&i.body, &i.codes)).collect();
    assert!(
        unfinished.is_empty(),
        "{what}: no success in {RUNS_AT_MOST} runs: {unfinished:?}"
    );
    assert_eq!(instances.len(), expected, "every instance ran");
    assert!(
        shared_keys.is_empty(),
        "{what}: keys sent by two instances of a job: {shared_keys:?}"
    );
    for inst in &instances {
        // The success is the instance's own effect: the first of its body, or for a body
        // sent by every instance, the instance's own in order.
        let n = if inst.body.starts_with("beat=") {
            inst.instance
        } else {
            1
        };
        let want = format!("effect {n} of {}\n", inst.body);
        assert_eq!(inst.stdout, want, "exits {:?}", inst.codes);
    }
    let refused = [400, 422].map(|s| counts.statuses.get(&s).copied().unwrap_or(0));
    assert_eq!(refused, [0, 0], "400 and 422 from the server: {counts:?}");
    // A store that is slow to answer on a loaded machine may make a run warn that it
    // went on without it (then duplicates would be the store's, and are reported with
    // the warnings above); any other warning is the feature's.
    let other: Vec<_> = warned.iter().filter(|w| !store_unavailable(w)).collect();
    assert!(other.is_empty(), "{what}: warnings: {other:?}");
}

/// Whether a warning says the store could not be used in time (as the fleet-scale tests
/// accept at a store timeout a loaded machine may exceed).
fn store_unavailable(warning: &str) -> bool {
    warning.contains("; going on without it") || warning.contains("cannot record the run in ")
}

#[test]
fn keys_chaos_on_a_state_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let state = dir.path().join("state.json");
    chaos("a state file", &state.display().to_string(), seed());
}

#[test]
fn keys_chaos_on_redis() {
    let redis = RedisServer::start();
    chaos("redis", &redis.url(), seed());
}
