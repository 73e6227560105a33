//! The shared state of `--state`: one record per target (scheme, host, port) holding its
//! circuit breaker and its retry budget, so that cron jobs and CI steps that run again and
//! again act as one careful client; the settings of both (`Limits`); the JSON form the
//! records are kept in (see README, "State file"); and what bounds the memory:
//!
//! - a target with no event for `--state-ttl` is forgotten unless its circuit is open;
//! - at most `MAX_TARGETS` targets are kept, and the JSON form never grows past
//!   `MAX_FILE_BYTES`, the most a run reads.
//!
//! All of it is pure: the decisions are in `breaker` and `budget`, where the records live
//! is a `store`'s business (`file` for a `--state` file).

use crate::fleet::Millis;
use crate::fleet::breaker::{Admission, Breaker, RunResult};
use crate::fleet::budget::Budget;
use crate::units::millis;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// The marker that begins every state file written by this version: the value of the
/// first key, `format`.
pub const FORMAT: &str = "retry-http-state";

/// The format's version. Changes that only add keys keep it: older readers ignore them.
pub const VERSION: u64 = 1;

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
    /// When a run last asked about the target or told how it went: what `--state-ttl`
    /// counts from.
    pub seen: Millis,
}

/// The whole state: targets by "scheme://host:port".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    /// Per-target state.
    pub targets: BTreeMap<String, Target>,
}

impl Target {
    /// Asks the circuit breaker whether a run may start at `now`, taking the probe lease
    /// (for `lease`, at least the cooldown) when it is the probe.
    pub fn admit(&mut self, now: Millis, limits: &Limits, lease: Duration) -> Admission {
        self.seen = now;
        self.breaker.admit(now, limits.cooldown, lease)
    }

    /// Records how a run ended at `now`: in the breaker, and a success in the budget.
    pub fn finish(&mut self, now: Millis, result: RunResult, probe: bool, limits: &Limits) {
        self.seen = now;
        if result == RunResult::Success {
            self.budget.success(now);
        }
        self.breaker.finish(now, result, probe, limits.threshold);
    }

    /// Takes one retry from the retry budget at `now`, or says how it is spent.
    pub fn take_retry(&mut self, now: Millis, limits: &Limits) -> Result<(), String> {
        self.seen = now;
        self.budget
            .take_retry(now, limits.budget_pct, limits.window, limits.floor)
    }

    /// Forgets what the record no longer needs at `now`: budget timestamps older than
    /// `window`, and a `seen` in the future (a clock set back), which then counts from now.
    /// Returns whether the record is still worth keeping: its circuit is open (or half-open),
    /// so that sparse failures still add up to an open circuit within the TTL; or it had an
    /// event within `ttl` and has something to remember (recent requests, failures).
    pub fn tidy(&mut self, now: Millis, window: Duration, ttl: Duration) -> bool {
        self.seen = self.seen.min(now);
        self.budget.prune(now, window);
        let idle = now - self.seen >= millis(ttl);
        let empty = self.budget.is_empty() && self.breaker == Breaker::default();
        self.breaker.is_open() || !(idle || empty)
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
    /// Forgets what is no longer worth keeping: every target's timestamps older than the
    /// budget window; targets with no event for `ttl`, unless their circuit is open (or
    /// half-open), so that sparse failures still add up to an open circuit within the TTL
    /// while a target that failed once is not remembered for ever; and targets left with
    /// nothing to remember (no recent requests, a closed circuit without failures).
    pub fn prune(&mut self, now: Millis, window: Duration, ttl: Duration) {
        self.targets.retain(|_, t| t.tidy(now, window, ttl));
    }

    /// Keeps the JSON form within `MAX_TARGETS` targets and `MAX_FILE_BYTES` bytes, forgetting the
    /// targets with the oldest event first (the current run's target is the newest). Cheap
    /// when there is nothing to cut.
    pub fn bound(&mut self) {
        let mut order: Vec<(Millis, &String, usize)> = self
            .targets
            .iter()
            .map(|(k, t)| (t.seen, k, target_entry(k, t).len() + 6))
            .collect();
        let total: usize = order.iter().map(|(_, _, n)| n).sum();
        if order.len() <= MAX_TARGETS && total <= MAX_FILE_BYTES as usize - FRAME_BYTES {
            return;
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
        for key in cut {
            self.targets.remove(&key);
        }
    }

    /// Reads the JSON form (see README, "State file"); `None` when it does not match. The
    /// `format` marker may be absent (files of retry-http 0.1.0); a target without `seen`
    /// (the same files) counts as seen `now`.
    pub fn from_json(text: &str, now: Millis) -> Option<State> {
        let v: Value = serde_json::from_str(text).ok()?;
        match v.get("format") {
            None => {}
            Some(f) if f == FORMAT => {}
            Some(_) => return None,
        }
        if v.get("version")?.as_u64()? != VERSION {
            return None;
        }
        let mut state = State::default();
        for (key, t) in v.get("targets")?.as_object()? {
            state.targets.insert(key.clone(), target_from_json(t, now)?);
        }
        Some(state)
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

/// One target of the JSON form; `None` when it does not match.
fn target_from_json(t: &Value, now: Millis) -> Option<Target> {
    let b = t.get("breaker")?;
    let breaker = Breaker {
        failures: u32::try_from(b.get("failures")?.as_u64()?).ok()?,
        opened_at: optional_stamp(b.get("opened_at"))?,
        probe_until: optional_stamp(b.get("probe_until"))?,
    };
    let budget = Budget {
        successes: stamps(t.get("successes")?)?,
        retries: stamps(t.get("retries")?)?,
    };
    Some(Target {
        breaker,
        budget,
        seen: optional_stamp(t.get("seen"))?.unwrap_or(now),
    })
}

/// One target as `"key": {...}`, on one line.
fn target_entry(key: &str, t: &Target) -> String {
    let v = json!({
        "breaker": {
            "failures": t.breaker.failures,
            "opened_at": t.breaker.opened_at,
            "probe_until": t.breaker.probe_until,
        },
        "seen": t.seen,
        "successes": t.budget.successes,
        "retries": t.budget.retries,
    });
    format!("{}: {v}", Value::String(key.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::budget::MAX_STAMPS;

    const DAY: Millis = 24 * 3600 * 1000;
    const WINDOW: Duration = Duration::from_secs(600);
    const TTL: Duration = Duration::from_secs(24 * 3600);

    #[test]
    fn json_round_trips_and_rejects_garbage() {
        let mut s = State::default();
        s.targets.insert(
            "http://h:80".into(),
            Target {
                breaker: Breaker {
                    failures: 2,
                    opened_at: Some(5),
                    probe_until: None,
                },
                budget: Budget {
                    successes: vec![1, 2],
                    retries: vec![3],
                },
                seen: 7,
            },
        );
        s.targets
            .insert("https://\"odd\\key:443".into(), Target::default());
        let text = s.to_json();
        assert_eq!(State::from_json(&text, 0), Some(s));
        assert!(
            text.starts_with("{\n  \"format\": \"retry-http-state\",\n  \"version\": 1,"),
            "{text}"
        );
        assert!(
            text.contains("\n    \"http://h:80\": {\"breaker\":{\"failures\":2,\"opened_at\":5,\"probe_until\":null},\"retries\":[3],\"seen\":7,\"successes\":[1,2]},\n"),
            "{text}"
        );
        assert_eq!(
            State::default().to_json(),
            "{\n  \"format\": \"retry-http-state\",\n  \"version\": 1,\n  \"targets\": {}\n}\n"
        );
        for bad in [
            "",
            "{",
            "[]",
            "{\"version\":2,\"targets\":{}}",
            "{\"version\":1}",
            "{\"format\":\"other\",\"version\":1,\"targets\":{}}",
        ] {
            assert_eq!(State::from_json(bad, 0), None, "{bad}");
        }
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
    fn targets_idle_past_the_ttl_are_forgotten_unless_open() {
        let now = 10 * DAY;
        let mut s = State::default();
        s.targets.insert("idle".into(), failed_once(now - DAY));
        s.targets
            .insert("recent".into(), failed_once(now - 23 * DAY / 24));
        s.targets
            .insert("future".into(), failed_once(now + 100 * DAY));
        let mut open = failed_once(now - 9 * DAY);
        open.breaker.opened_at = Some(now - 9 * DAY);
        s.targets.insert("open".into(), open);
        s.prune(now, WINDOW, TTL);
        let kept: Vec<&str> = s.targets.keys().map(String::as_str).collect();
        assert_eq!(kept, ["future", "open", "recent"]);
        assert_eq!(
            s.targets["future"].seen, now,
            "a future date counts from now"
        );
        s.prune(now + DAY, WINDOW, TTL);
        let kept: Vec<&str> = s.targets.keys().map(String::as_str).collect();
        assert_eq!(kept, ["open"], "an open circuit outlives the TTL");
    }

    #[test]
    fn the_bound_keeps_the_newest_targets_and_the_file_small() {
        let mut s = State::default();
        for i in 0..(MAX_TARGETS as u64 + 5) {
            s.targets
                .insert(format!("http://h{i:05}:80"), failed_once(i));
        }
        s.bound();
        assert_eq!(s.targets.len(), MAX_TARGETS);
        assert!(!s.targets.contains_key("http://h00004:80"));
        assert!(s.targets.contains_key("http://h00005:80"));
        // Busy targets: the largest timestamp lists allowed, more than the file may hold.
        let mut s = State::default();
        for i in 0..20u64 {
            let busy = Target {
                budget: Budget {
                    successes: vec![MAX_STAMP; MAX_STAMPS],
                    retries: vec![MAX_STAMP; MAX_STAMPS],
                },
                ..failed_once(i)
            };
            s.targets.insert(format!("http://busy{i:02}:80"), busy);
        }
        s.bound();
        let text = s.to_json();
        assert!(text.len() as u64 <= MAX_FILE_BYTES, "{}", text.len());
        assert!(s.targets.len() < 20 && s.targets.contains_key("http://busy19:80"));
        assert!(!s.targets.contains_key("http://busy00:80"));
    }

    #[test]
    fn a_record_reports_to_breaker_and_budget_and_dates_itself() {
        let limits = Limits {
            threshold: 1,
            cooldown: Duration::from_secs(30),
            budget_pct: 10.0,
            window: WINDOW,
            floor: 1,
            ttl: TTL,
        };
        let mut t = Target::default();
        assert_eq!(t.admit(5, &limits, Duration::ZERO), Admission::Run);
        assert_eq!(t.seen, 5);
        assert_eq!(t.take_retry(6, &limits), Ok(()));
        assert!(t.take_retry(7, &limits).is_err(), "a floor of 1");
        assert_eq!(t.seen, 7);
        t.finish(8, RunResult::Success, false, &limits);
        assert_eq!((t.budget.successes.as_slice(), t.seen), (&[8][..], 8));
        t.finish(9, RunResult::Failure, false, &limits);
        assert_eq!(t.breaker.opened_at, Some(9), "a threshold of 1");
        assert!(t.tidy(9 + 2 * DAY, WINDOW, TTL), "an open circuit is kept");
        assert!(t.budget.is_empty(), "the window slid");
    }
}
