//! The shared state of `--state`: one record per target (scheme, host, port) holding its
//! circuit breaker, its retry budget and the Idempotency-Keys of its jobs whose outcome
//! is unknown (`job`), so that cron jobs and CI steps that run again and
//! again act as one careful client; the settings of both (`Limits`); the JSON form the
//! records are kept in (see docs/fleet.md, "`--state FILE`: one host"); and what bounds the memory:
//!
//! - a target with no event for `--state-ttl` is forgotten unless its circuit is open, and
//!   a job's key `--state-ttl` after it was made; at most `job::MAX_JOBS` keys per target;
//! - at most `MAX_TARGETS` targets are kept, and the JSON form never grows past
//!   `MAX_FILE_BYTES`, the most a run reads.
//!
//! All of it is pure: the decisions are in `breaker` and `budget`, where the records live
//! is a `store`'s business (`file` for a `--state` file).

use crate::Millis;
use crate::breaker::{Admission, Breaker, RunResult};
use crate::budget::{Bucket, Budget, MAX_BUCKETS, MAX_RUNS, RunRetries};
use crate::job::{self, Pending};
use crate::units::millis;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// The marker that begins every state file written by this version: the value of the
/// first key, `format`.
pub const FORMAT: &str = "retry-http-state";

/// The format's version. Changes that only add keys keep it: older readers ignore them.
/// Version 2 holds the retry budget in buckets, the shared Retry-After and the probe's
/// number (and, optionally, `jobs`: the pending Idempotency-Keys, added without a new
/// version since older readers ignore it); version 1 files (timestamp lists) are still read.
pub const VERSION: u64 = 2;

/// The largest state file read, in bytes (4 MiB). What this tool writes stays below it
/// (`State::bound`); a larger file of ours is replaced, anyone else's left untouched.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// The most targets kept; beyond it, those with the oldest event are forgotten.
pub const MAX_TARGETS: usize = 1000;

/// Room kept in `MAX_FILE_BYTES` for what surrounds the targets.
const FRAME_BYTES: usize = 256;

/// The latest timestamp accepted: the end of year 9999, as far as HTTP dates go.
pub const MAX_STAMP: Millis = 253_402_300_799_000;

/// The breaker's settings and the budget's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Consecutive failed runs that open the circuit.
    pub threshold: u32,
    /// How long an open circuit refuses before a probe (also the probe's lease).
    pub cooldown: Duration,
    /// Retries allowed, in percent of successful requests in the window.
    pub budget_pct: f64,
    /// The sliding window of the budget.
    pub window: Duration,
    /// Retries always allowed per window.
    pub floor: u32,
    /// How long a target with no event is remembered, unless its circuit is open.
    pub ttl: Duration,
}

/// Everything kept for one target.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Target {
    /// The circuit breaker.
    pub breaker: Breaker,
    /// The retry budget.
    pub budget: Budget,
    /// The shared Retry-After: until when the target asked every run to stay away (a 429 or
    /// 503 with Retry-After, clamped by the `--max-retry-after` of the run that was told).
    pub hold_until: Option<Millis>,
    /// When a run last asked about the target or told how it went: what `--state-ttl`
    /// counts from.
    pub seen: Millis,
    /// The keys of jobs whose outcome is unknown, oldest first (see `job`).
    pub jobs: Vec<Pending>,
}

/// The whole state: targets by "scheme://host:port".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    /// Per-target state.
    pub targets: BTreeMap<String, Target>,
}

impl Target {
    /// Asks the circuit breaker whether a run may start at `now`, taking the probe lease
    /// (for `lease`, at least the cooldown) under the run's number `id` when it is the probe.
    pub fn admit(&mut self, now: Millis, limits: &Limits, lease: Duration, id: u64) -> Admission {
        self.seen = now;
        self.breaker.admit(now, limits.cooldown, lease, id)
    }

    /// Records how a run ended at `now`: in the breaker (`probe`: the number of the lease
    /// it took as the probe), and a success in the budget (an answer that was not ready is
    /// one for the breaker only: the budget counts requests served).
    pub fn finish(&mut self, now: Millis, result: RunResult, probe: Option<u64>, limits: &Limits) {
        self.seen = now;
        if result == RunResult::Success {
            self.budget.success(now, limits.window);
        }
        self.breaker.finish(now, result, probe, limits.threshold);
    }

    /// Takes one retry for the run numbered `run` from the retry budget at `now`, or says
    /// how it is spent (by the other runs: see `Budget::take_retry`).
    pub fn take_retry(&mut self, now: Millis, limits: &Limits, run: u64) -> Result<(), String> {
        self.seen = now;
        self.budget
            .take_retry(now, limits.budget_pct, limits.window, limits.floor, run)
    }

    /// Whether the retry budget would grant the run `run` a retry at `now`, charging
    /// nothing (what `take_retry` would answer).
    pub fn may_retry(&self, now: Millis, limits: &Limits, run: u64) -> Result<(), String> {
        self.budget
            .clone()
            .take_retry(now, limits.budget_pct, limits.window, limits.floor, run)
    }

    /// Shares a Retry-After: no run is to send to the target for `wait` from `now` (a later
    /// hold already there stands).
    pub fn hold(&mut self, now: Millis, wait: Duration) {
        self.seen = now;
        let until = now.saturating_add(millis(wait)).min(MAX_STAMP);
        self.hold_until = Some(self.hold_until.map_or(until, |h| h.max(until)));
    }

    /// How long the shared Retry-After still holds at `now`, if it does.
    pub fn held(&self, now: Millis) -> Option<Duration> {
        self.hold_until
            .filter(|h| *h > now)
            .map(|h| Duration::from_millis(h - now))
    }

    /// Until when the record must be kept, as of now: `--state-ttl` after its last event,
    /// and never while it still refuses runs or holds them back (an open circuit in its
    /// cooldown, a probe's lease, a shared Retry-After). A store forgets it after that (the
    /// file store at its next update, Redis by the key's expiry).
    pub fn expires_at(&self, limits: &Limits) -> Millis {
        let b = &self.breaker;
        [
            Some(self.seen.saturating_add(millis(limits.ttl))),
            b.opened_at
                .map(|o| o.saturating_add(millis(limits.cooldown))),
            b.probe_until,
            self.hold_until,
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0)
    }

    /// Whether a decision that turned `before` into this record must be written back: it
    /// changed something other than `seen`, or moved `seen` by a tenth of the TTL or more
    /// (so the record's expiry is refreshed often enough). A closed circuit's admission,
    /// the commonest decision, then writes nothing, which keeps a busy fleet's store from
    /// being rewritten (and its writers from colliding) once per run for nothing. The price:
    /// a record may be forgotten up to a tenth of the TTL early.
    pub fn worth_writing(&self, before: &Target, limits: &Limits) -> bool {
        let moved = self.seen.saturating_sub(before.seen);
        let mut unseen = self.clone();
        unseen.seen = before.seen;
        unseen != *before || moved >= millis(limits.ttl) / 10
    }

    /// Discards what lies further in the future at `now` than any run could have written (a
    /// clock that was wrong, an edit): a breaker whose times do (see `Breaker::damage`) is
    /// reset, budget buckets that begin more than the window ahead are dropped
    /// (`Budget::drop_future`). Believed, such times would refuse the target, or spend its
    /// budget, for as long as they lie ahead. Returns what was discarded, in words, for a
    /// warning; `None` when nothing was. (A shared Retry-After needs no repair: every run
    /// clamps it to its own `--max-retry-after`.)
    pub fn repair(&mut self, now: Millis, limits: &Limits) -> Option<String> {
        let mut why = Vec::new();
        if let Some(damage) = self.breaker.damage(now, limits.cooldown) {
            why.push(format!("{damage}: its circuit breaker is reset"));
            self.breaker = Breaker::default();
        }
        let dropped = self.budget.drop_future(now, limits.window);
        if dropped > 0 {
            why.push(format!(
                "{dropped} of its retry budget's buckets begin more than the window ({}) ahead: dropped",
                crate::units::fmt_given(limits.window)
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// Forgets what the record no longer needs at `now`: buckets older than the window, a
    /// Retry-After that has passed, jobs' keys made a TTL ago or more, and a `seen` in the future (a clock set back), which then
    /// counts from now. Returns whether the record is still worth keeping: it has not
    /// expired (see `expires_at`) and has something to remember (recent requests, failures,
    /// an open circuit, a hold, a job's key).
    pub fn tidy(&mut self, now: Millis, limits: &Limits) -> bool {
        self.seen = self.seen.min(now);
        self.budget.prune(now, limits.window);
        if self.held(now).is_none() {
            self.hold_until = None;
        }
        job::expire(&mut self.jobs, now, limits.ttl);
        let empty = self.budget.is_empty()
            && self.breaker == Breaker::default()
            && self.hold_until.is_none()
            && self.jobs.is_empty();
        !empty && now < self.expires_at(limits)
    }
}

fn stamp(v: &Value) -> Option<Millis> {
    v.as_u64().filter(|t| *t <= MAX_STAMP)
}

fn stamps(v: &Value) -> Option<Vec<Millis>> {
    v.as_array()?.iter().map(stamp).collect()
}

/// A timestamp that may be absent or null; any other type or value makes the file invalid
/// (read as "closed" it would hide an open circuit).
fn optional_stamp(v: Option<&Value>) -> Option<Option<Millis>> {
    match v {
        None | Some(Value::Null) => Some(None),
        Some(other) => stamp(other).map(Some),
    }
}

impl State {
    /// Forgets what is no longer worth keeping (see `Target::tidy`): every target's buckets
    /// older than the budget window; targets with no event for the TTL, unless they still
    /// refuse or hold back runs, so that sparse failures add up to an open circuit within
    /// the TTL while a target that failed once is not remembered for ever; and targets left
    /// with nothing to remember.
    pub fn prune(&mut self, now: Millis, limits: &Limits) {
        self.targets.retain(|_, t| t.tidy(now, limits));
    }

    /// Repairs every target (see `Target::repair`): the keys of those that had times in the
    /// future, and what was discarded, in words.
    pub fn repair(&mut self, now: Millis, limits: &Limits) -> Vec<(String, String)> {
        self.targets
            .iter_mut()
            .filter_map(|(k, t)| Some((k.clone(), t.repair(now, limits)?)))
            .collect()
    }

    /// Keeps the JSON form within `MAX_TARGETS` targets and `MAX_FILE_BYTES` bytes, forgetting the
    /// targets with the oldest event first (the current run's target is the newest). Cheap
    /// when there is nothing to cut. Returns the targets forgotten that held keys of jobs
    /// whose outcome is unknown, with how many, for a warning: those keys are lost.
    pub fn bound(&mut self) -> Vec<(String, usize)> {
        let mut order: Vec<(Millis, &String, usize)> = self
            .targets
            .iter()
            .map(|(k, t)| (t.seen, k, target_entry(k, t).len() + 6))
            .collect();
        let total: usize = order.iter().map(|(_, _, n)| n).sum();
        if order.len() <= MAX_TARGETS && total <= MAX_FILE_BYTES as usize - FRAME_BYTES {
            return Vec::new();
        }
        order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let mut room = MAX_FILE_BYTES as usize - FRAME_BYTES;
        let mut cut = Vec::new();
        for (i, (_, key, len)) in order.into_iter().enumerate() {
            if cut.is_empty() && i < MAX_TARGETS && len <= room {
                room -= len;
            } else {
                cut.push(key.clone());
            }
        }
        cut.into_iter()
            .filter_map(|key| {
                let jobs = self.targets.remove(&key)?.jobs.len();
                (jobs > 0).then_some((key, jobs))
            })
            .collect()
    }

    /// Reads the JSON form (see docs/fleet.md, "`--state FILE`: one host"); `None` when the
    /// file as a whole does not match. A target whose own record does not match is left out,
    /// its key named in the second value: one bad record (a field edited by hand, a bit
    /// flipped) starts that target afresh, not every target of the file, whose kept job
    /// keys would then be lost with it. The `format` marker may be absent (files of
    /// retry-http 0.1.0); a target without `seen` (the same files) counts as seen `now`.
    pub fn from_json(text: &str, now: Millis) -> Option<(State, Vec<String>)> {
        let v: Value = serde_json::from_str(text).ok()?;
        match v.get("format") {
            None => {}
            Some(f) if f == FORMAT => {}
            Some(_) => return None,
        }
        let version = v.get("version")?.as_u64()?;
        if version != VERSION && version != 1 {
            return None;
        }
        let mut state = State::default();
        let mut dropped = Vec::new();
        for (key, t) in v.get("targets")?.as_object()? {
            match target_from_json(t, now, version) {
                Some(target) => {
                    state.targets.insert(key.clone(), target);
                }
                None => dropped.push(key.clone()),
            }
        }
        Some((state, dropped))
    }

    /// The JSON form: the marker first, then one line per target.
    pub fn to_json(&self) -> String {
        let mut text = format!(
            "{{\n  \"format\": \"{FORMAT}\",\n  \"version\": {VERSION},\n  \"targets\": {{"
        );
        for (i, (k, t)) in self.targets.iter().enumerate() {
            text.push_str(if i == 0 { "\n    " } else { ",\n    " });
            text.push_str(&target_entry(k, t));
        }
        if !self.targets.is_empty() {
            text.push_str("\n  ");
        }
        text.push_str("}\n}\n");
        text
    }
}

/// A count of a bucket, or a probe lease's number: a number up to 2^53, as JSON numbers go
/// (every reader, the store's script too, keeps it exact).
fn count(v: &Value) -> Option<u64> {
    v.as_u64().filter(|n| *n <= 1 << 53)
}

/// The buckets of version 2: `[[start, successes, retries], ...]`, in order.
fn buckets(v: &Value) -> Option<Vec<Bucket>> {
    let mut out: Vec<Bucket> = Vec::new();
    for b in v.as_array()? {
        let [start, successes, retries] = b.as_array()?.as_slice() else {
            return None;
        };
        let b = Bucket {
            start: stamp(start)?,
            successes: count(successes)?,
            retries: count(retries)?,
        };
        if out.last().is_some_and(|last| last.start >= b.start) || out.len() >= MAX_BUCKETS {
            return None;
        }
        out.push(b);
    }
    Some(out)
}

/// Which run made which retries: `[[run, bucket start, retries], ...]`, at most `MAX_RUNS`
/// entries, or absent (records written before runs were told apart, or with no retry in
/// the window: their retries count as other runs'). Entries of buckets not kept are
/// forgotten when the budget is next pruned.
fn runs(v: Option<&Value>) -> Option<Vec<RunRetries>> {
    let Some(v) = v else {
        return Some(Vec::new());
    };
    let list = v.as_array()?;
    if list.len() > MAX_RUNS {
        return None;
    }
    list.iter()
        .map(|r| {
            let [run, start, retries] = r.as_array()?.as_slice() else {
                return None;
            };
            Some(RunRetries {
                run: count(run)?,
                start: stamp(start)?,
                retries: count(retries)?,
            })
        })
        .collect()
}

/// The timestamp lists of version 1, put in buckets of `width` (what the version 2 budget
/// would have counted).
fn buckets_of_stamps(successes: &[Millis], retries: &[Millis], width: Millis) -> Vec<Bucket> {
    let mut by_start: BTreeMap<Millis, (u64, u64)> = BTreeMap::new();
    for t in successes {
        by_start.entry(t - t % width).or_default().0 += 1;
    }
    for t in retries {
        by_start.entry(t - t % width).or_default().1 += 1;
    }
    let all: Vec<Bucket> = by_start
        .into_iter()
        .map(|(start, (successes, retries))| Bucket {
            start,
            successes,
            retries,
        })
        .collect();
    all[all.len().saturating_sub(MAX_BUCKETS)..].to_vec()
}

/// The bucket width a version 1 file's timestamps are read into: that of the default
/// window (10 minutes). A run with another window prunes them by its own.
const V1_WIDTH: Millis = 60_000;

/// One target of the JSON form of `version`; `None` when it does not match.
fn target_from_json(t: &Value, now: Millis, version: u64) -> Option<Target> {
    let b = t.get("breaker")?;
    let probe_id = match b.get("probe_id") {
        None | Some(Value::Null) => None,
        Some(id) => Some(count(id)?),
    };
    let breaker = Breaker {
        failures: u32::try_from(b.get("failures")?.as_u64()?).ok()?,
        opened_at: optional_stamp(b.get("opened_at"))?,
        probe_until: optional_stamp(b.get("probe_until"))?,
        probe_id,
    };
    let budget = if version == 1 {
        Budget {
            buckets: buckets_of_stamps(
                &stamps(t.get("successes")?)?,
                &stamps(t.get("retries")?)?,
                V1_WIDTH,
            ),
            runs: Vec::new(),
        }
    } else {
        Budget {
            buckets: buckets(t.get("budget")?)?,
            runs: runs(t.get("runs"))?,
        }
    };
    Some(Target {
        breaker,
        budget,
        hold_until: optional_stamp(t.get("hold_until"))?,
        seen: optional_stamp(t.get("seen"))?.unwrap_or(now),
        jobs: job::from_json(t.get("jobs"), MAX_STAMP)?,
    })
}

/// One target's record as JSON (what a file holds per target, and a Redis key's value).
pub fn target_json(t: &Target) -> Value {
    let budget: Vec<Value> = t
        .budget
        .buckets
        .iter()
        .map(|b| json!([b.start, b.successes, b.retries]))
        .collect();
    let mut v = json!({
        "breaker": {
            "failures": t.breaker.failures,
            "opened_at": t.breaker.opened_at,
            "probe_until": t.breaker.probe_until,
            "probe_id": t.breaker.probe_id,
        },
        "budget": budget,
        "hold_until": t.hold_until,
        "seen": t.seen,
    });
    // Written only when there are some, so that a record without jobs, or without
    // retries, reads as before.
    if let Some(o) = v.as_object_mut() {
        if !t.jobs.is_empty() {
            o.insert("jobs".into(), job::to_json(&t.jobs));
        }
        if !t.budget.runs.is_empty() {
            let runs = t.budget.runs.iter();
            let runs: Vec<Value> = runs.map(|r| json!([r.run, r.start, r.retries])).collect();
            o.insert("runs".into(), Value::Array(runs));
        }
    }
    v
}

/// Reads one target's record as `target_json` writes it; `None` when it does not match.
pub fn target_from_value(v: &Value, now: Millis) -> Option<Target> {
    target_from_json(v, now, VERSION)
}

/// One target as `"key": {...}`, on one line.
fn target_entry(key: &str, t: &Target) -> String {
    format!("{}: {}", Value::String(key.to_string()), target_json(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Millis = 24 * 3600 * 1000;
    const WINDOW: Duration = Duration::from_secs(600);
    const TTL: Duration = Duration::from_secs(24 * 3600);

    fn limits() -> Limits {
        Limits {
            threshold: 1,
            cooldown: Duration::from_secs(30),
            budget_pct: 10.0,
            window: WINDOW,
            floor: 1,
            ttl: TTL,
        }
    }

    #[test]
    fn json_round_trips_and_rejects_garbage() {
        let mut s = State::default();
        s.targets.insert(
            "http://h:80".into(),
            Target {
                breaker: Breaker {
                    failures: 2,
                    opened_at: Some(5),
                    probe_until: Some(9),
                    probe_id: Some(77),
                },
                budget: Budget {
                    buckets: vec![
                        Bucket {
                            start: 0,
                            successes: 2,
                            retries: 0,
                        },
                        Bucket {
                            start: 60_000,
                            successes: 0,
                            retries: 1,
                        },
                    ],
                    runs: vec![RunRetries {
                        run: 9_007_199_254_740_991,
                        start: 60_000,
                        retries: 1,
                    }],
                },
                hold_until: Some(8),
                seen: 7,
                jobs: vec![Pending {
                    digest: "0a".repeat(32),
                    key: "k-1".into(),
                    made: 6,
                }],
            },
        );
        s.targets
            .insert("https://\"odd\\key:443".into(), Target::default());
        let text = s.to_json();
        assert_eq!(State::from_json(&text, 0), Some((s, Vec::new())));
        assert!(
            text.starts_with("{\n  \"format\": \"retry-http-state\",\n  \"version\": 2,"),
            "{text}"
        );
        assert!(
            text.contains("\n    \"http://h:80\": {\"breaker\":{\"failures\":2,\"opened_at\":5,\"probe_id\":77,\"probe_until\":9},\"budget\":[[0,2,0],[60000,0,1]],\"hold_until\":8,\"jobs\":[[\"0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a\",\"k-1\",6]],\"runs\":[[9007199254740991,60000,1]],\"seen\":7},\n"),
            "{text}"
        );
        assert_eq!(
            State::default().to_json(),
            "{\n  \"format\": \"retry-http-state\",\n  \"version\": 2,\n  \"targets\": {}\n}\n"
        );
        for bad in [
            "",
            "{",
            "[]",
            "{\"version\":3,\"targets\":{}}",
            "{\"version\":2}",
            "{\"format\":\"other\",\"version\":2,\"targets\":{}}",
        ] {
            assert_eq!(State::from_json(bad, 0), None, "{bad}");
        }
        // A target's own record that does not match leaves that target out, and only it.
        let good = "\"u\":{\"breaker\":{\"failures\":0},\"budget\":[]}";
        for bad in [
            "{\"version\":2,\"targets\":{\"t\":{\"breaker\":{\"failures\":0},\"budget\":[[5,1,0],[5,1,0]]}}}",
            "{\"version\":2,\"targets\":{\"t\":{\"breaker\":{\"failures\":0},\"budget\":[[5,1]]}}}",
            "{\"version\":2,\"targets\":{\"t\":{\"breaker\":{\"failures\":0},\"budget\":[],\"hold_until\":\"soon\"}}}",
            "{\"version\":2,\"targets\":{\"t\":{\"breaker\":{\"failures\":0},\"budget\":[],\"runs\":null}}}",
            "{\"version\":2,\"targets\":{\"t\":{\"breaker\":{\"failures\":0},\"budget\":[],\"runs\":[[1,2]]}}}",
            "{\"version\":2,\"targets\":{\"t\":{\"breaker\":{\"failures\":0},\"budget\":[],\"runs\":[[9007199254740993,2,1]]}}}",
        ] {
            let both = bad.replacen("\"targets\":{", &format!("\"targets\":{{{good},"), 1);
            let (s, dropped) = State::from_json(&both, 0).expect("the file is read");
            assert_eq!(dropped, ["t"], "{bad}");
            assert!(s.targets.contains_key("u") && s.targets.len() == 1, "{bad}");
        }
    }

    #[test]
    fn a_version_1_file_is_read_into_buckets() {
        let v1 = "{\"format\":\"retry-http-state\",\"version\":1,\"targets\":{\"t\":{\"breaker\":{\"failures\":1,\"opened_at\":null,\"probe_until\":null},\"seen\":3,\"successes\":[1,2,60001],\"retries\":[5]}}}";
        let (s, _) = State::from_json(v1, 0).expect("version 1 is read");
        let t = &s.targets["t"];
        assert_eq!(
            t.budget.buckets,
            [
                Bucket {
                    start: 0,
                    successes: 2,
                    retries: 1
                },
                Bucket {
                    start: 60_000,
                    successes: 1,
                    retries: 0
                }
            ]
        );
        assert_eq!((t.breaker.failures, t.seen, t.hold_until), (1, 3, None));
    }

    fn failed_once(seen: Millis) -> Target {
        Target {
            breaker: Breaker {
                failures: 1,
                ..Breaker::default()
            },
            seen,
            ..Target::default()
        }
    }

    #[test]
    fn targets_idle_past_the_ttl_are_forgotten_unless_they_still_refuse() {
        let l = limits();
        let now = 10 * DAY;
        let mut s = State::default();
        s.targets.insert("idle".into(), failed_once(now - DAY));
        s.targets
            .insert("recent".into(), failed_once(now - 23 * DAY / 24));
        s.targets
            .insert("future".into(), failed_once(now + 100 * DAY));
        let mut open = failed_once(now - 9 * DAY);
        open.breaker.opened_at = Some(now - 9 * DAY);
        s.targets.insert("open long ago".into(), open.clone());
        open.breaker.opened_at = Some(now - 10_000);
        s.targets.insert("open now".into(), open);
        let mut held = Target::default();
        held.hold(now - 2 * DAY, Duration::from_secs(3 * 24 * 3600));
        s.targets.insert("held".into(), held);
        s.prune(now, &l);
        let kept: Vec<&str> = s.targets.keys().map(String::as_str).collect();
        assert_eq!(kept, ["future", "held", "open now", "recent"]);
        assert_eq!(
            s.targets["future"].seen, now,
            "a future date counts from now"
        );
        s.prune(now + 2 * DAY, &l);
        assert!(s.targets.is_empty(), "{:?}", s.targets);
    }

    #[test]
    fn the_bound_keeps_the_newest_targets_and_the_file_small() {
        let mut s = State::default();
        for i in 0..(MAX_TARGETS as u64 + 5) {
            s.targets
                .insert(format!("http://h{i:05}:80"), failed_once(i));
        }
        assert_eq!(s.bound(), Vec::new(), "no keys among the targets cut");
        assert_eq!(s.targets.len(), MAX_TARGETS);
        assert!(!s.targets.contains_key("http://h00004:80"));
        let mut with_keys = failed_once(0);
        with_keys.jobs = vec![Pending {
            digest: "0a".repeat(32),
            key: "k-1".into(),
            made: 0,
        }];
        s.targets.insert("http://h00000:80".into(), with_keys);
        assert_eq!(s.bound(), vec![("http://h00000:80".to_string(), 1)]);
        assert!(s.targets.contains_key("http://h00005:80"));
        // Long keys: more than the file may hold.
        let mut s = State::default();
        for i in 0..20u64 {
            let key = format!("http://{}{i:02}:80", "h".repeat(400_000));
            s.targets.insert(key, failed_once(i));
        }
        s.bound();
        let text = s.to_json();
        assert!(text.len() as u64 <= MAX_FILE_BYTES, "{}", text.len());
        assert!(s.targets.len() < 20 && s.targets.keys().any(|k| k.ends_with("19:80")));
        assert!(!s.targets.keys().any(|k| k.ends_with("00:80")));
    }

    #[test]
    fn a_record_reports_to_breaker_and_budget_and_dates_itself() {
        let l = limits();
        let mut t = Target::default();
        assert_eq!(t.admit(5, &l, Duration::ZERO, 1), Admission::Run);
        assert_eq!(t.seen, 5);
        assert_eq!(t.take_retry(6, &l, 1), Ok(()));
        assert!(
            t.take_retry(7, &l, 2).is_err(),
            "a floor of 1, spent by run 1"
        );
        assert_eq!(t.take_retry(7, &l, 1), Ok(()), "run 1's own do not count");
        assert_eq!(t.seen, 7);
        t.finish(8, RunResult::Success, None, &l);
        assert_eq!((t.budget.counts(), t.seen), ((1, 2), 8));
        t.finish(9, RunResult::Failure, None, &l);
        assert_eq!(t.breaker.opened_at, Some(9), "a threshold of 1");
        assert!(
            t.tidy(10_000, &l),
            "an open circuit in its cooldown is kept"
        );
        assert!(t.tidy(9 + 2 * 60_000 * 10, &l), "and within the TTL");
        assert!(t.budget.is_empty(), "the window slid");
    }

    #[test]
    fn times_in_the_future_are_discarded_never_a_refusal() {
        let l = limits();
        let now = 1_000 * DAY;
        let cooldown = millis(l.cooldown);
        let lease = millis(crate::breaker::MAX_LEASE);
        // Every breaker time and the budget, each set from "just past now" to "centuries
        // ahead": nothing ahead by more than its span is kept, and the record then lets
        // a run in.
        let aheads = [1, 1_000, cooldown, lease, DAY, 365 * DAY, MAX_STAMP - now];
        let mut checked = 0;
        for ahead in aheads {
            for field in 0..3 {
                let mut t = failed_once(now);
                t.breaker.failures = 9;
                match field {
                    0 => t.breaker.opened_at = Some(now + ahead),
                    1 => {
                        t.breaker.opened_at = Some(now - cooldown);
                        t.breaker.probe_until = Some(now + ahead);
                        t.breaker.probe_id = Some(3);
                    }
                    _ => {
                        t.budget.buckets.push(Bucket {
                            start: now + ahead,
                            successes: 0,
                            retries: 100,
                        });
                    }
                }
                let span = [cooldown, lease, millis(l.window)][field];
                let before = t.clone();
                let why = t.repair(now, &l);
                assert_eq!(why.is_some(), ahead > span, "{field} {ahead}: {why:?}");
                if ahead > span {
                    assert_eq!(t.admit(now, &l, Duration::ZERO, 1), Admission::Run);
                    assert!(t.take_retry(now, &l, 1).is_ok(), "{field} {ahead}");
                } else {
                    assert_eq!(t, before, "kept as it was");
                }
                checked += 1;
            }
        }
        assert_eq!(checked, 21);
        // The same through the JSON form of version 2, as a hand or an older binary wrote
        // it: read with the same meaning, then repaired.
        let text = format!(
            "{{\"format\":\"retry-http-state\",\"version\":2,\"targets\":{{\"a\":{{\"breaker\":{{\"failures\":9,\"opened_at\":{},\"probe_until\":null}},\"budget\":[],\"seen\":{now}}},\"b\":{{\"breaker\":{{\"failures\":9,\"opened_at\":{now},\"probe_until\":null}},\"budget\":[],\"seen\":{now}}}}}}}",
            now + 365 * DAY
        );
        let (mut s, _) = State::from_json(&text, now).expect("read");
        assert_eq!(s.targets["a"].breaker.opened_at, Some(now + 365 * DAY));
        let repaired = s.repair(now, &l);
        assert_eq!(repaired.len(), 1, "{repaired:?}");
        assert_eq!(repaired[0].0, "a");
        assert!(
            repaired[0].1.contains("opened 365d in the future") && repaired[0].1.contains("reset"),
            "{repaired:?}"
        );
        assert_eq!(s.targets["a"].breaker, Breaker::default());
        assert_eq!(
            s.targets["b"].breaker.opened_at,
            Some(now),
            "a real open circuit stays"
        );
    }

    #[test]
    fn a_shared_retry_after_holds_until_the_latest_hint() {
        let mut t = Target::default();
        t.hold(1_000, Duration::from_secs(10));
        t.hold(2_000, Duration::from_secs(2));
        assert_eq!(t.hold_until, Some(11_000), "a shorter hint does not cut it");
        assert_eq!(t.held(10_000), Some(Duration::from_secs(1)));
        assert_eq!(t.held(11_000), None);
        assert!(!t.tidy(11_000, &limits()), "nothing left to remember");
    }
}
