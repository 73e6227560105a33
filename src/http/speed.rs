//! curl's `-Y`/`-y`: a body that arrives slower than a speed, over a span of time, fails the
//! attempt as a stall. The speed is measured over consecutive spans from the first read of
//! the body: a span of at least `-y` in which fewer than `-Y` bytes per second arrived
//! fails. Pure: the caller gives the clock.

use crate::config::network::SpeedLimit;
use crate::http::failure::Failure;
use crate::policy::FailureKind;
use std::time::{Duration, Instant};

/// The speed of one body, span by span.
pub(crate) struct SpeedCheck {
    limit: SpeedLimit,
    since: Instant,
    bytes: u64,
}

impl SpeedCheck {
    /// A check of `limit` whose first span starts `now`.
    pub(crate) fn new(limit: SpeedLimit, now: Instant) -> Self {
        SpeedCheck {
            limit,
            since: now,
            bytes: 0,
        }
    }

    /// `n` more bytes arrived by `now` (0: a read that timed out): the stall, when the span
    /// that has just ended was too slow.
    pub(crate) fn observe(&mut self, n: u64, now: Instant) -> Result<(), Failure> {
        self.bytes += n;
        let span = now.saturating_duration_since(self.since);
        if span < self.limit.span {
            return Ok(());
        }
        let rate = self.bytes as f64 / span.as_secs_f64();
        if rate < self.limit.bytes_per_sec as f64 {
            return Err(too_slow(self.limit, self.bytes, span));
        }
        self.since = now;
        self.bytes = 0;
        Ok(())
    }

    /// A read that failed with `f` by `now`: a read timeout (a stall) that ended a span is
    /// told in the speed limit's words; a shorter `--stall-timeout` keeps its own.
    pub(crate) fn timed_out(&self, f: Failure, now: Instant) -> Failure {
        let span = now.saturating_duration_since(self.since);
        if f.kind == FailureKind::Stall && span >= self.limit.span {
            too_slow(self.limit, self.bytes, span)
        } else {
            f
        }
    }
}

/// The stall of a transfer slower than `limit`: `bytes` in `span`.
pub(crate) fn too_slow(limit: SpeedLimit, bytes: u64, span: Duration) -> Failure {
    Failure::new(
        FailureKind::Stall,
        format!(
            "slower than --speed-limit {} bytes/s over --speed-time {} ({bytes} bytes in {})",
            limit.bytes_per_sec,
            crate::units::fmt_duration(limit.span),
            crate::units::fmt_duration(span)
        ),
    )
}

/// A read that timed out (`f`, a stall) under `-Y`: the speed limit's span is the read
/// timeout when it is the shorter (see `config::network::timeouts`), so the span passed
/// with no byte at all, and the failure says so in the speed limit's words.
pub(crate) fn silent(f: Failure, limit: Option<SpeedLimit>, stall: Option<Duration>) -> Failure {
    match limit {
        Some(l) if f.kind == FailureKind::Stall && stall.is_none_or(|s| l.span <= s) => {
            too_slow(l, 0, l.span)
        }
        _ => f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: SpeedLimit = SpeedLimit {
        bytes_per_sec: 100,
        span: Duration::from_secs(2),
    };

    #[test]
    fn a_slow_span_fails_and_a_fast_one_starts_the_next() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut c = SpeedCheck::new(LIMIT, t0);
        assert!(c.observe(10, at(1000)).is_ok(), "the span is not over");
        assert!(c.observe(300, at(2000)).is_ok(), "310 bytes in 2 s");
        assert!(c.observe(50, at(3000)).is_ok());
        let f = c.observe(50, at(4000)).unwrap_err();
        assert_eq!(f.kind, FailureKind::Stall);
        assert!(f.detail.contains("100 bytes in 2s"), "{}", f.detail);
        let mut c = SpeedCheck::new(LIMIT, t0);
        assert!(c.observe(200, at(2000)).is_ok(), "exactly the limit");
    }

    #[test]
    fn a_read_timeout_is_told_in_the_limit_s_words_when_it_was_the_limit_s() {
        let stall = Failure::new(FailureKind::Stall, "no byte within --stall-timeout");
        let secs = |s| Some(Duration::from_secs(s));
        let own = silent(stall.clone(), Some(LIMIT), secs(30));
        assert!(
            own.detail.starts_with("slower than --speed-limit"),
            "{}",
            own.detail
        );
        assert_eq!(silent(stall.clone(), Some(LIMIT), secs(1)), stall);
        assert_eq!(silent(stall.clone(), None, secs(30)), stall);
    }
}
