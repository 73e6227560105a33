//! A run's side of `--state`: asks the circuit breaker before the first attempt, the retry
//! budget before each retry, and records how the run ended, each a decision on the
//! target's record made through the `Store` seam (whatever the store is). The decisions
//! themselves are in `breaker` and `budget`, reached through `record::Target`.

use crate::exit::Outcome;
use crate::fleet::breaker::{Admission, RunResult};
use crate::fleet::record::{Limits, MAX_STAMP};
use crate::fleet::store::{self, Store};
use crate::report::Reporter;
use crate::units::millis;
use std::time::{Duration, Instant, SystemTime};
use url::Url;

fn now_ms() -> u64 {
    millis(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO),
    )
}

/// The key of a target: scheme, host and port, and the Unix socket the requests go
/// through, if any (two daemons behind two sockets are two targets).
pub fn target_key(url: &Url, socket: Option<&std::path::Path>) -> String {
    let key = format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    );
    match socket {
        Some(s) => format!("{key} via unix:{}", s.display()),
        None => key,
    }
}

/// How long a run waits for another run's lock on the state file, at most (less when the
/// deadline is nearer). Updates take milliseconds; a lock held longer belongs to a run that
/// is stuck or stopped, and waiting for it would only spread the stall.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// One run's use of the shared state.
pub struct Shared<'a> {
    store: Box<dyn Store>,
    key: String,
    limits: Limits,
    reporter: &'a Reporter,
    deadline: Option<Instant>,
    /// This run is the half-open circuit's probe.
    pub probe: bool,
}

/// The lock wait allowed: a fifth of the time left before `deadline` at most, so the
/// request itself keeps most of it (with `grace` past it, for the final record).
fn lock_wait(deadline: Option<Instant>, grace: Duration) -> Duration {
    match deadline {
        Some(d) => LOCK_WAIT.min(d.saturating_duration_since(Instant::now()) / 5 + grace),
        None => LOCK_WAIT,
    }
}

impl<'a> Shared<'a> {
    /// Asks the breaker whether the run may start. `Err` holds the reason for the refusal
    /// (exit 7), for the summary line. A state file that cannot be used (not a regular file,
    /// not written by retry-http, unreadable, locked too long, unwritable) is reported once
    /// and the run goes on without it (`Ok(None)`), the file untouched: shared state must
    /// never stop a request by accident, nor destroy a file that is not its own.
    ///
    /// `lease` is how long a probe may hold the half-open circuit: as long as the probe can
    /// run (its deadline or attempt timeout), and never less than the cooldown.
    pub fn admit(
        path: &std::path::Path,
        limits: Limits,
        lease: Duration,
        target: (&Url, Option<&std::path::Path>),
        reporter: &'a Reporter,
        deadline: Option<Instant>,
    ) -> Result<Option<Self>, String> {
        let unusable = |why: &str| {
            reporter.warn(&format!(
                "cannot use the state file {}: {why}; going on without it",
                path.display()
            ));
            Ok(None)
        };
        let store = match store::open(path, &limits) {
            Ok(s) => s,
            Err(why) => return unusable(&why),
        };
        let key = target_key(target.0, target.1);
        let warn = |m: &str| reporter.warn(m);
        let now = now_ms();
        let wait = lock_wait(deadline, Duration::ZERO);
        let admission = store.decide(&key, now, wait, &warn, |t| t.admit(now, &limits, lease));
        match admission {
            Err(e) => unusable(&e.to_string()),
            Ok(Admission::Refuse { until, why }) => {
                let until = until.min(MAX_STAMP);
                let when =
                    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_millis(until));
                let wait = Duration::from_millis(until.saturating_sub(now));
                Err(format!(
                    "nothing sent: {why} for {key}; the next probe may start in {} ({when})",
                    crate::units::fmt_duration(wait)
                ))
            }
            Ok(admission) => {
                let probe = admission == Admission::Probe;
                if probe {
                    reporter.info(&format!(
                        "the circuit for {key} is half-open: this run probes with a single attempt"
                    ));
                }
                Ok(Some(Shared {
                    store,
                    key,
                    limits,
                    reporter,
                    deadline,
                    probe,
                }))
            }
        }
    }

    /// Takes one retry from the budget, or says why not.
    pub fn take_retry(&self) -> Result<(), String> {
        let warn = |m: &str| self.reporter.warn(m);
        let now = now_ms();
        let wait = lock_wait(self.deadline, Duration::ZERO);
        let taken = self.store.decide(&self.key, now, wait, &warn, |t| {
            t.take_retry(now, &self.limits)
        });
        taken.unwrap_or_else(|e| {
            self.reporter.warn(&format!(
                "cannot use the state file: {e}; retrying without the budget"
            ));
            Ok(())
        })
    }

    /// Records how the run ended. A run that the retry budget stopped failed as much as one
    /// that ran out of attempts: it counts toward opening the circuit, or a target that
    /// stays down would be hit once per run for ever. Like every update, it prunes old
    /// entries of every target and forgets targets idle past `--state-ttl`.
    pub fn finish(&self, outcome: Outcome) {
        let result = match outcome {
            Outcome::Success => RunResult::Success,
            Outcome::AttemptsExhausted
            | Outcome::Deadline
            | Outcome::NonRetryableTransport
            | Outcome::Refused => RunResult::Failure,
            _ => RunResult::Neutral,
        };
        let warn = |m: &str| self.reporter.warn(m);
        let now = now_ms();
        let probe = self.probe;
        // A little past the deadline is allowed here: the record is worth 50 ms.
        let wait = lock_wait(self.deadline, Duration::from_millis(50));
        let recorded = self.store.decide(&self.key, now, wait, &warn, |t| {
            t.finish(now, result, probe, &self.limits)
        });
        if let Err(e) = recorded {
            self.reporter
                .warn(&format!("cannot record the run in the state file: {e}"));
        }
    }
}
