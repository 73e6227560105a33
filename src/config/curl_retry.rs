//! curl's retry flags (`--retry`, `--retry-delay`, `--retry-max-time`,
//! `--retry-connrefused`, `--retry-all-errors`), each turned into this tool's policy flag
//! that comes closest to curl's meaning without being less safe:
//!
//! | curl's flag | here | why |
//! |---|---|---|
//! | `--retry N` | `--attempts N+1` | curl counts retries, this tool attempts; an explicit count |
//! | `--retry-delay 0` | nothing | curl's 0 is its own default backoff; this tool's stays |
//! | `--retry-delay S` | `--base S --cap S --jitter +S` | at least curl's wait, spread up to S more, so a fleet does not return together |
//! | `--retry-max-time S` | `--deadline S` (0: none) | the run's time bound; it also ends an attempt under way |
//! | `--retry-connrefused` | nothing | a refused connection is retried already (nothing was sent) |
//! | `--retry-all-errors` | `--retry-on 4xx,5xx` | the replay rule stays: a request not safe to repeat is not repeated blindly (RFC 9110 section 9.2.2) |
//!
//! The mapping writes the policy's own fields ([`PolicyFlags`]), so everything after it
//! sees `--retry 3` exactly as `--attempts 4` (an attempt count given explicitly). A flag
//! of this tool given on the command line for the same thing is a usage error ("give
//! one"); one that only comes from its `RETRY_HTTP_*` variable gives way, as variables do to
//! flags. [`map`] is pure; [`fold`] reads the environment and applies it.

use super::UsageError;
use crate::cli::{self, CurlRetryFlags, PolicyFlags, RequestArgs, values};
use crate::policy::{Jitter, StatusSet};
use crate::units::{curl_seconds, fmt_duration};
use std::time::Duration;

/// Which of the policy's values were given as flags (not only by a `RETRY_HTTP_*` variable,
/// nor by default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Given {
    /// `--attempts`.
    pub attempts: bool,
    /// `--deadline`.
    pub deadline: bool,
    /// `--base`, `--cap` or `--jitter`.
    pub backoff: bool,
}

/// `--base`, `--cap` and `--jitter`, as a mapping sets them.
pub type BackoffValues = (Duration, Duration, Jitter);

/// What curl's retry flags set: each field `Some` replaces the policy's value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mapping {
    /// `--attempts` (from `--retry N`: N+1).
    pub attempts: Option<u32>,
    /// `--base`, `--cap` and `--jitter` (from `--retry-delay S`, S above 0).
    pub backoff: Option<BackoffValues>,
    /// `--deadline` (from `--retry-max-time`; zero: no limit).
    pub deadline: Option<Duration>,
    /// `--retry-on` (from `--retry-all-errors`).
    pub retry_on: Option<StatusSet>,
    /// Each flag given and what it became, `; `-separated on one line (`None`: none given).
    pub notice: Option<String>,
}

/// The statuses `--retry-all-errors` retries: every client and server error.
const ALL_ERRORS: &str = "4xx,5xx";

/// Maps curl's retry flags `c`, with `given` the policy flags typed on the command line.
/// Errors: one of curl's flags and this tool's flag for the same value, both given.
pub fn map(c: &CurlRetryFlags, given: Given) -> Result<Mapping, UsageError> {
    let mut m = Mapping::default();
    let mut said = Vec::new();
    if let Some(n) = c.retry {
        if given.attempts {
            return Err(both("--retry", "--attempts", "--retry N is --attempts N+1"));
        }
        m.attempts = Some(n + 1);
        said.push(format!("--retry {n} is --attempts {}", n + 1));
    }
    if let Some(d) = c.retry_delay {
        let (backoff, line) = retry_delay(d, given)?;
        m.backoff = backoff;
        said.push(line);
    }
    if let Some(t) = c.retry_max_time {
        m.deadline = Some(retry_max_time(t, given)?);
        said.push(if t.is_zero() {
            "--retry-max-time 0 is no deadline, as in curl".into()
        } else {
            format!(
                "--retry-max-time {} is --deadline {} (which also ends an attempt under way)",
                curl_seconds(t),
                fmt_duration(t)
            )
        });
    }
    if c.retry_connrefused {
        said.push(
            "--retry-connrefused changes nothing: a refused connection is retried already".into(),
        );
    }
    if c.retry_all_errors {
        m.retry_on = Some(values::status_set(ALL_ERRORS).map_err(UsageError)?);
        said.push(format!(
            "--retry-all-errors is --retry-on {ALL_ERRORS} (a request not safe to replay still is not replayed: see --idempotency-key)"
        ));
    }
    if !said.is_empty() {
        m.notice = Some(said.join("; "));
    }
    Ok(m)
}

/// `--retry-delay S`: the backoff it sets (none for 0, which keeps this tool's), and what
/// it became, in words. Error: `--base`, `--cap` or `--jitter` given too.
fn retry_delay(d: Duration, given: Given) -> Result<(Option<BackoffValues>, String), UsageError> {
    if d.is_zero() {
        return Ok((
            None,
            "--retry-delay 0 keeps this tool's backoff (curl's 0 is its own)".into(),
        ));
    }
    if given.backoff {
        return Err(both(
            "--retry-delay",
            "--base, --cap or --jitter",
            "--retry-delay S is --base S --cap S --jitter +S",
        ));
    }
    let s = fmt_duration(d);
    let line = format!(
        "--retry-delay {} is --base {s} --cap {s} --jitter +{s} (each wait from {s} to {}, a Retry-After still honoured)",
        curl_seconds(d),
        fmt_duration(d.saturating_mul(2))
    );
    Ok((Some((d, d, Jitter::Additive(d))), line))
}

/// `--retry-max-time S`: the deadline it sets (zero: none). Error: `--deadline` given too.
fn retry_max_time(t: Duration, given: Given) -> Result<Duration, UsageError> {
    if given.deadline {
        return Err(both(
            "--retry-max-time",
            "--deadline",
            "--retry-max-time S is --deadline S",
        ));
    }
    Ok(t)
}

/// "FLAG and OTHER both set ...: give one (HOW)".
fn both(flag: &str, other: &str, how: &str) -> UsageError {
    UsageError(format!(
        "{flag} and {other} set the same thing ({how}): give one"
    ))
}

/// Applies [`map`] to `a`'s policy flags, and keeps the notice in `a.curl_retry.mapped`. A policy
/// value counts as given unless it is its default or its `RETRY_HTTP_*` variable's value.
pub fn fold(a: &mut RequestArgs) -> Result<(), UsageError> {
    let c = &a.curl_retry;
    let any = c.retry.is_some()
        || c.retry_delay.is_some()
        || c.retry_max_time.is_some()
        || c.retry_connrefused
        || c.retry_all_errors;
    if !any {
        return Ok(());
    }
    let p = &a.policy;
    let given = Given {
        attempts: p
            .attempts
            .is_some_and(|n| !from_env("ATTEMPTS", &n, values::attempts_or_unlimited)),
        deadline: p
            .deadline
            .is_some_and(|d| !from_env("DEADLINE", &d, values::duration)),
        backoff: typed(p.base, cli::DEFAULT_BASE, "BASE", values::duration)
            || typed(p.cap, cli::DEFAULT_CAP, "CAP", values::duration)
            || typed(p.jitter, cli::DEFAULT_JITTER, "JITTER", values::jitter),
    };
    let m = map(c, given)?;
    apply(&mut a.policy, &m);
    a.curl_retry.mapped = m.notice;
    Ok(())
}

/// Sets the policy's values `m` gives.
fn apply(p: &mut PolicyFlags, m: &Mapping) {
    if let Some(n) = m.attempts {
        p.attempts = Some(n);
    }
    if let Some((base, cap, jitter)) = m.backoff {
        p.base = base;
        p.cap = cap;
        p.jitter = jitter;
    }
    if let Some(d) = m.deadline {
        p.deadline = Some(d);
    }
    if let Some(set) = &m.retry_on {
        p.retry_on = set.clone();
    }
}

/// Whether `$RETRY_HTTP_<var>` holds `value` (then the flag may not have been typed).
fn from_env<T: PartialEq>(var: &str, value: &T, parse: fn(&str) -> Result<T, String>) -> bool {
    std::env::var(format!("RETRY_HTTP_{var}"))
        .ok()
        .and_then(|t| parse(&t).ok())
        .as_ref()
        == Some(value)
}

/// Whether `value` was typed: it is neither the default nor its variable's value.
fn typed<T: PartialEq>(
    value: T,
    default: &str,
    var: &str,
    parse: fn(&str) -> Result<T, String>,
) -> bool {
    parse(default).ok().as_ref() != Some(&value) && !from_env(var, &value, parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> CurlRetryFlags {
        CurlRetryFlags {
            retry: None,
            retry_delay: None,
            retry_max_time: None,
            retry_connrefused: false,
            retry_all_errors: false,
            mapped: None,
        }
    }

    #[test]
    fn nothing_given_maps_to_nothing() {
        assert_eq!(map(&flags(), Given::default()), Ok(Mapping::default()));
    }

    #[test]
    fn retry_n_is_n_plus_one_attempts() {
        for n in [0, 1, 5, 999] {
            let c = CurlRetryFlags {
                retry: Some(n),
                ..flags()
            };
            let m = map(&c, Given::default()).expect("maps");
            assert_eq!(m.attempts, Some(n + 1));
            let notice = m.notice.expect("a notice");
            assert!(
                notice.contains(&format!("--retry {n} is --attempts {}", n + 1)),
                "{notice}"
            );
        }
    }

    #[test]
    fn a_delay_is_the_least_wait_with_jitter_above_it() {
        let s = Duration::from_secs(2);
        let c = CurlRetryFlags {
            retry_delay: Some(s),
            ..flags()
        };
        let m = map(&c, Given::default()).expect("maps");
        assert_eq!(m.backoff, Some((s, s, Jitter::Additive(s))));
        // Every wait the backoff can draw is at least curl's fixed delay, and jittered.
        let b = crate::policy::Backoff {
            base: s,
            cap: s,
            jitter: Jitter::Additive(s),
        };
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut seen = std::collections::BTreeSet::new();
        for retry in 0..50 {
            let d = b.draw(retry, s, &mut rng);
            let w = d.floor + d.spread;
            assert!(w >= s && w <= s * 2, "{w:?}");
            seen.insert(w);
        }
        assert!(seen.len() > 40, "jitter stays on: {seen:?}");
        // 0 is curl's default backoff: this tool's stays.
        let zero = CurlRetryFlags {
            retry_delay: Some(Duration::ZERO),
            ..flags()
        };
        let m = map(&zero, Given::default()).expect("maps");
        assert_eq!(m.backoff, None);
        assert!(
            m.notice
                .expect("notice")
                .contains("keeps this tool's backoff")
        );
    }

    #[test]
    fn max_time_is_the_deadline() {
        let c = CurlRetryFlags {
            retry_max_time: Some(Duration::from_secs(60)),
            ..flags()
        };
        let m = map(&c, Given::default()).expect("maps");
        assert_eq!(m.deadline, Some(Duration::from_secs(60)));
        assert!(
            m.notice
                .expect("notice")
                .contains("--retry-max-time 60 is --deadline 1m ")
        );
    }

    #[test]
    fn all_errors_widens_the_statuses_not_the_replay() {
        let c = CurlRetryFlags {
            retry_all_errors: true,
            retry_connrefused: true,
            ..flags()
        };
        let m = map(&c, Given::default()).expect("maps");
        let set = m.retry_on.expect("a status set");
        assert!((400..=599).all(|s| set.contains(s)));
        assert!(!set.contains(399));
        // Nothing else changes: --retry-unsafe is not among the mapping's fields.
        assert_eq!((m.attempts, m.backoff, m.deadline), (None, None, None));
        let notice = m.notice.expect("notice");
        assert!(notice.contains("not replayed"), "{notice}");
        assert!(notice.contains("retried already"), "{notice}");
        assert_eq!(notice.lines().count(), 1);
    }

    #[test]
    fn a_flag_of_this_tool_for_the_same_thing_is_refused() {
        let cases = [
            (
                CurlRetryFlags {
                    retry: Some(3),
                    ..flags()
                },
                Given {
                    attempts: true,
                    ..Given::default()
                },
                "--attempts",
            ),
            (
                CurlRetryFlags {
                    retry_delay: Some(Duration::from_secs(1)),
                    ..flags()
                },
                Given {
                    backoff: true,
                    ..Given::default()
                },
                "--base",
            ),
            (
                CurlRetryFlags {
                    retry_max_time: Some(Duration::from_secs(1)),
                    ..flags()
                },
                Given {
                    deadline: true,
                    ..Given::default()
                },
                "--deadline",
            ),
        ];
        for (c, given, named) in cases {
            let e = map(&c, given).expect_err(named);
            assert!(e.0.contains(named) && e.0.ends_with("give one"), "{}", e.0);
        }
        // Given elsewhere, each maps: only the same value from two flags is refused.
        let all = CurlRetryFlags {
            retry: Some(3),
            retry_delay: Some(Duration::from_secs(1)),
            retry_max_time: Some(Duration::from_secs(9)),
            ..flags()
        };
        assert!(map(&all, Given::default()).is_ok());
        let zero_delay = CurlRetryFlags {
            retry_delay: Some(Duration::ZERO),
            ..flags()
        };
        let backoff = Given {
            backoff: true,
            ..Given::default()
        };
        assert!(map(&zero_delay, backoff).is_ok(), "0 sets no backoff");
    }
}
