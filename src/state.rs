//! State shared by runs through `--state FILE`: a circuit breaker and a retry budget per
//! target (scheme, host, port), so cron jobs and CI steps that run again and again act as
//! one careful client.
//!
//! - Circuit breaker: closed, counting consecutive failed runs (exit 4, 5 or 6); open after
//!   `--breaker-threshold` of them, refusing at once (exit 7) for `--breaker-cooldown`; then
//!   half-open: one run probes with a single attempt under a lease (so a probe that dies does
//!   not hold the circuit), while the others keep getting exit 7. Success closes it, failure
//!   reopens it.
//! - Retry budget (Google SRE book, "Handling Overload"; gRPC retry throttling; Finagle's
//!   RetryBudget): retries within `--budget-window` are limited to `--retry-budget` percent of
//!   the successful requests in that window, with a floor of `--budget-floor` retries.
//!
//! The decisions are pure functions of the state and "now"; `StateFile` does the I/O: an
//! exclusive lock on a companion `FILE.lock` (the state file itself is replaced by rename,
//! so locking it would lose updates), then read, change, write to a temporary file, rename.
//! A corrupt or unreadable file is reported and replaced, never a crash or a refusal.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Timestamps in the state are milliseconds since the Unix epoch.
pub type Millis = u64;

/// The most timestamps kept per list, so the file stays small under heavy use.
const MAX_STAMPS: usize = 10_000;

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
}

/// The circuit breaker's state for one target.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Breaker {
    /// Consecutive failed runs.
    pub failures: u32,
    /// When the circuit opened, if it is open (or half-open).
    pub opened_at: Option<Millis>,
    /// Until when a probe holds the half-open circuit.
    pub probe_until: Option<Millis>,
}

/// Everything kept for one target.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Target {
    /// The breaker.
    pub breaker: Breaker,
    /// When successful requests ended (within the window).
    pub successes: Vec<Millis>,
    /// When retries were sent (within the window).
    pub retries: Vec<Millis>,
}

/// The whole file: targets by "scheme://host:port".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    /// Per-target state.
    pub targets: BTreeMap<String, Target>,
}

/// What the breaker says before a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Closed: run as configured.
    Run,
    /// Half-open: this run is the probe, with a single attempt.
    Probe,
    /// Open (or a probe is in flight): refuse until then.
    Refuse {
        /// When the next probe may start.
        until: Millis,
        /// Why, for the log.
        why: String,
    },
}

/// How a run ended, as far as the breaker cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunResult {
    /// Exit 0.
    Success,
    /// Exit 4, 5 or 6: the target failed.
    Failure,
    /// Anything else (a 404, a usage error, an interrupt): says nothing about the target.
    Neutral,
}

fn ms(d: Duration) -> Millis {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

impl Target {
    /// Drops timestamps older than the window.
    pub fn prune(&mut self, now: Millis, window: Duration) {
        let since = now.saturating_sub(ms(window));
        self.successes.retain(|t| *t >= since);
        self.retries.retain(|t| *t >= since);
        for list in [&mut self.successes, &mut self.retries] {
            if list.len() > MAX_STAMPS {
                list.drain(..list.len() - MAX_STAMPS);
            }
        }
    }

    /// Decides whether a run may start, taking the probe lease (for `lease`, at least the
    /// cooldown) when it is the probe.
    pub fn admit(&mut self, now: Millis, limits: &Limits, lease: Duration) -> Admission {
        let Some(opened) = self.breaker.opened_at else {
            return Admission::Run;
        };
        let reopen = opened.saturating_add(ms(limits.cooldown));
        if now < reopen {
            return Admission::Refuse {
                until: reopen,
                why: format!(
                    "the circuit is open after {} failed runs in a row",
                    self.breaker.failures
                ),
            };
        }
        if let Some(lease) = self.breaker.probe_until.filter(|l| now < *l) {
            return Admission::Refuse {
                until: lease,
                why: "the circuit is half-open and a probe is in flight".into(),
            };
        }
        self.breaker.probe_until = Some(now.saturating_add(ms(lease.max(limits.cooldown))));
        Admission::Probe
    }

    /// Records how a run ended.
    pub fn finish(&mut self, now: Millis, result: RunResult, probe: bool, limits: &Limits) {
        match result {
            RunResult::Success => {
                self.successes.push(now);
                self.breaker = Breaker::default();
            }
            RunResult::Failure => {
                self.breaker.failures = self.breaker.failures.saturating_add(1);
                self.breaker.probe_until = None;
                if probe || self.breaker.failures >= limits.threshold {
                    self.breaker.opened_at = Some(now);
                }
            }
            RunResult::Neutral => {
                if probe {
                    self.breaker.probe_until = None;
                }
            }
        }
    }

    /// Takes one retry from the budget, or says how it is spent.
    pub fn take_retry(&mut self, now: Millis, limits: &Limits) -> Result<(), String> {
        self.prune(now, limits.window);
        let earned = (self.successes.len() as f64 * limits.budget_pct / 100.0).floor() as u64;
        let allowed = earned.max(u64::from(limits.floor));
        if self.retries.len() as u64 >= allowed {
            return Err(format!(
                "the retry budget is spent: {} retries in the last {} (allowed: {}% of {} successes, at least {})",
                self.retries.len(),
                humantime::format_duration(limits.window),
                limits.budget_pct,
                self.successes.len(),
                limits.floor
            ));
        }
        self.retries.push(now);
        Ok(())
    }
}

/// The latest timestamp accepted: the end of year 9999, as far as HTTP dates go.
pub const MAX_STAMP: Millis = 253_402_300_799_000;

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
    /// Drops every target's timestamps older than the window, and targets left with
    /// nothing to remember (no recent requests, a closed circuit), so the file stays small.
    pub fn prune(&mut self, now: Millis, window: Duration) {
        self.targets.retain(|_, t| {
            t.prune(now, window);
            !(t.successes.is_empty() && t.retries.is_empty() && t.breaker == Breaker::default())
        });
    }

    /// Reads the JSON form (see README, "State file"); `None` when it does not match.
    pub fn from_json(text: &str) -> Option<State> {
        let v: Value = serde_json::from_str(text).ok()?;
        if v.get("version")?.as_u64()? != 1 {
            return None;
        }
        let mut state = State::default();
        for (key, t) in v.get("targets")?.as_object()? {
            let b = t.get("breaker")?;
            let breaker = Breaker {
                failures: u32::try_from(b.get("failures")?.as_u64()?).ok()?,
                opened_at: optional_stamp(b.get("opened_at"))?,
                probe_until: optional_stamp(b.get("probe_until"))?,
            };
            let target = Target {
                breaker,
                successes: stamps(t.get("successes")?)?,
                retries: stamps(t.get("retries")?)?,
            };
            state.targets.insert(key.clone(), target);
        }
        Some(state)
    }

    /// The JSON form.
    pub fn to_json(&self) -> String {
        let targets: serde_json::Map<String, Value> = self
            .targets
            .iter()
            .map(|(k, t)| {
                let v = json!({
                    "breaker": {
                        "failures": t.breaker.failures,
                        "opened_at": t.breaker.opened_at,
                        "probe_until": t.breaker.probe_until,
                    },
                    "successes": t.successes,
                    "retries": t.retries,
                });
                (k.clone(), v)
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&json!({"version": 1, "targets": targets}))
            .unwrap_or_default();
        text.push('\n');
        text
    }
}

/// The state file on disk, with its lock.
#[derive(Debug, Clone)]
pub struct StateFile {
    path: PathBuf,
}

impl StateFile {
    /// A state file at `path` (created on first write). A symbolic link is followed, so
    /// runs naming the link and runs naming its target share one state. Anything but a
    /// regular file (or none yet) is refused: a device, a FIFO or a folder would be
    /// destroyed by the rename, or block.
    pub fn new(path: &Path) -> Result<StateFile, String> {
        let resolved = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)
                .or_else(|_| {
                    std::fs::read_link(path)
                        .map(|t| path.parent().unwrap_or(Path::new(".")).join(t))
                })
                .map_err(|e| format!("cannot follow the link {}: {e}", path.display()))?,
            _ => path.to_path_buf(),
        };
        if resolved.file_name().is_none() || path.as_os_str().to_string_lossy().ends_with('/') {
            return Err(format!("{} names a folder, not a file", path.display()));
        }
        match std::fs::metadata(&resolved) {
            Ok(m) if !m.is_file() => Err(format!("{} is not a regular file", path.display())),
            _ => Ok(StateFile { path: resolved }),
        }
    }

    /// Takes the lock, waiting at most `wait`: a run that holds it for ever (stopped with
    /// Ctrl-Z, say) must not hang the others past their deadlines.
    fn lock(&self, wait: Duration) -> std::io::Result<std::fs::File> {
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.lock_path())?;
        let until = std::time::Instant::now() + wait;
        loop {
            match lock.try_lock() {
                Ok(()) => return Ok(lock),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "another run held the lock {} too long",
                            self.lock_path().display()
                        ),
                    ));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self
            .path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        name.push(".lock");
        self.path.with_file_name(name)
    }

    /// Locks (waiting at most `wait`), reads, lets `change` edit the state, writes it back
    /// atomically, unlocks.
    /// `warn` hears about a corrupt file (which is then replaced). Errors are I/O errors on
    /// the lock or the write.
    pub fn update<T>(
        &self,
        wait: Duration,
        warn: &dyn Fn(&str),
        change: impl FnOnce(&mut State) -> T,
    ) -> std::io::Result<T> {
        let lock = self.lock(wait)?;
        let mut state = match std::fs::read_to_string(&self.path) {
            Ok(text) => State::from_json(&text).unwrap_or_else(|| {
                warn(&format!(
                    "the state file {} is not valid; starting afresh",
                    self.path.display()
                ));
                State::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State::default(),
            Err(e) => {
                warn(&format!(
                    "cannot read the state file {} ({e}); starting afresh",
                    self.path.display()
                ));
                State::default()
            }
        };
        let out = change(&mut state);
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        // A new file gets 0666 less the umask; an existing one keeps its mode, so other
        // users' runs that share it can still read it.
        use std::os::unix::fs::PermissionsExt;
        let existing = std::fs::metadata(&self.path)
            .ok()
            .map(|m| m.permissions().mode());
        let mut tmp = tempfile::Builder::new()
            .prefix(".retry-http-state")
            .permissions(std::fs::Permissions::from_mode(existing.unwrap_or(0o666)))
            .tempfile_in(dir)?;
        if let Some(mode) = existing {
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        tmp.write_all(state.to_json().as_bytes())?;
        tmp.as_file().sync_all()?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
        drop(lock);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            threshold: 3,
            cooldown: Duration::from_secs(30),
            budget_pct: 10.0,
            window: Duration::from_secs(600),
            floor: 2,
        }
    }

    #[test]
    fn breaker_opens_after_threshold_then_probes_once() {
        let l = limits();
        let mut t = Target::default();
        for i in 0..3 {
            assert_eq!(t.admit(i, &l, Duration::ZERO), Admission::Run);
            t.finish(i, RunResult::Failure, false, &l);
        }
        assert!(matches!(
            t.admit(1_000, &l, Duration::ZERO),
            Admission::Refuse { until: 30_002, .. }
        ));
        assert_eq!(t.admit(40_000, &l, Duration::ZERO), Admission::Probe);
        assert!(
            matches!(
                t.admit(40_001, &l, Duration::ZERO),
                Admission::Refuse { .. }
            ),
            "one probe at a time"
        );
        t.finish(41_000, RunResult::Failure, true, &l);
        assert!(
            matches!(
                t.admit(42_000, &l, Duration::ZERO),
                Admission::Refuse { until: 71_000, .. }
            ),
            "a failed probe reopens"
        );
        assert_eq!(t.admit(80_000, &l, Duration::ZERO), Admission::Probe);
        t.finish(80_500, RunResult::Success, true, &l);
        assert_eq!(
            t.admit(80_600, &l, Duration::ZERO),
            Admission::Run,
            "a successful probe closes"
        );
    }

    #[test]
    fn a_dead_probe_frees_the_circuit_after_its_lease() {
        let l = limits();
        let mut t = Target {
            breaker: Breaker {
                failures: 5,
                opened_at: Some(0),
                probe_until: None,
            },
            ..Target::default()
        };
        assert_eq!(t.admit(30_000, &l, Duration::ZERO), Admission::Probe);
        assert!(matches!(
            t.admit(59_999, &l, Duration::ZERO),
            Admission::Refuse { .. }
        ));
        assert_eq!(
            t.admit(60_000, &l, Duration::ZERO),
            Admission::Probe,
            "the lease expired"
        );
    }

    #[test]
    fn budget_has_a_floor_and_grows_with_successes() {
        let l = limits();
        let mut t = Target::default();
        assert!(t.take_retry(1, &l).is_ok());
        assert!(t.take_retry(2, &l).is_ok());
        assert!(t.take_retry(3, &l).is_err(), "floor of 2 spent");
        t.successes = (0..50).map(|i| 10 + i).collect();
        for i in 0..3 {
            assert!(t.take_retry(100 + i, &l).is_ok(), "10% of 50 is 5");
        }
        assert!(t.take_retry(200, &l).is_err());
        assert!(
            t.take_retry(700_000, &l).is_ok(),
            "the window slid past the old retries"
        );
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
                    probe_until: None,
                },
                successes: vec![1, 2],
                retries: vec![3],
            },
        );
        assert_eq!(State::from_json(&s.to_json()), Some(s));
        for bad in [
            "",
            "{",
            "[]",
            "{\"version\":2,\"targets\":{}}",
            "{\"version\":1}",
        ] {
            assert_eq!(State::from_json(bad), None, "{bad}");
        }
    }
}
