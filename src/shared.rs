//! A run's side of `--state`: asks the circuit breaker before the first attempt, the retry
//! budget before each retry, and records how the run ended. The decisions are in `state`.

use crate::exit::Outcome;
use crate::report::Reporter;
use crate::state::{Admission, Limits, RunResult, StateFile};
use std::time::{Duration, SystemTime};
use url::Url;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

/// The key of a target: scheme, host and port.
pub fn target_key(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// One run's use of the state file.
pub struct Shared<'a> {
    file: StateFile,
    key: String,
    limits: Limits,
    reporter: &'a Reporter,
    /// This run is the half-open circuit's probe.
    pub probe: bool,
}

impl<'a> Shared<'a> {
    /// Asks the breaker whether the run may start. `Err` holds the reason for the refusal
    /// (exit 7), for the summary line. A state file that cannot be used is reported and the run goes on
    /// without it (`Ok(None)`): shared state must never stop a request by accident.
    ///
    /// `lease` is how long a probe may hold the half-open circuit: as long as the probe can
    /// run (its deadline or attempt timeout), and never less than the cooldown.
    pub fn admit(
        path: &std::path::Path,
        limits: Limits,
        lease: Duration,
        url: &Url,
        reporter: &'a Reporter,
    ) -> Result<Option<Self>, String> {
        let file = StateFile::new(path);
        let key = target_key(url);
        let warn = |m: &str| reporter.warn(m);
        let now = now_ms();
        let admission = file.update(&warn, |s| {
            s.targets
                .entry(key.clone())
                .or_default()
                .admit(now, &limits, lease)
        });
        match admission {
            Err(e) => {
                reporter.warn(&format!(
                    "cannot use the state file {}: {e}; going on without it",
                    path.display()
                ));
                Ok(None)
            }
            Ok(Admission::Refuse { until, why }) => {
                let when =
                    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_millis(until));
                let wait = Duration::from_millis(until.saturating_sub(now));
                Err(format!(
                    "nothing sent: {why} for {key}; the next probe may start in {} ({when})",
                    crate::report::fmt_duration(wait)
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
                    file,
                    key,
                    limits,
                    reporter,
                    probe,
                }))
            }
        }
    }

    /// Takes one retry from the budget, or says why not.
    pub fn take_retry(&self) -> Result<(), String> {
        let warn = |m: &str| self.reporter.warn(m);
        let now = now_ms();
        match self.file.update(&warn, |s| {
            s.targets
                .entry(self.key.clone())
                .or_default()
                .take_retry(now, &self.limits)
        }) {
            Ok(decision) => decision,
            Err(e) => {
                self.reporter.warn(&format!(
                    "cannot use the state file: {e}; retrying without the budget"
                ));
                Ok(())
            }
        }
    }

    /// Records how the run ended. A run that the retry budget stopped failed as much as one
    /// that ran out of attempts: it counts toward opening the circuit, or a target that
    /// stays down would be hit once per run for ever.
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
        let recorded = self.file.update(&warn, |s| {
            let t = s.targets.entry(self.key.clone()).or_default();
            t.prune(now, self.limits.window);
            t.finish(now, result, probe, &self.limits);
        });
        if let Err(e) = recorded {
            self.reporter
                .warn(&format!("cannot record the run in the state file: {e}"));
        }
    }
}
