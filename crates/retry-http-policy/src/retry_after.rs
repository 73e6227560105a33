//! Retry-After (RFC 9110 section 10.2.3), read relative to a given "now" and clamped to the
//! user's maximum. Pure: the caller supplies the clock.
//!
//! The header is either delta-seconds (a non-negative integer) or an HTTP-date. A recipient
//! must accept the IMF-fixdate and the obsolete RFC 850 and asctime forms (RFC 9110 section
//! 5.6.7); httpdate parses all three. A delta-seconds too large to hold is read as the
//! largest value, as RFC 9111 section 1.2.2 says for delta-seconds. A date in the past asks
//! for no wait. A value that cannot be parsed is reported and ignored: never read as zero.

use crate::Hint;
use std::time::{Duration, SystemTime};

/// The largest delta-seconds kept; anything above reads as this, then gets clamped.
const HUGE_SECONDS: u64 = 2_147_483_648; // 2^31, the value RFC 9111 section 1.2.2 names.

/// A Retry-After value that could not be read. Holds the raw value, for the warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ignoring Retry-After {:?}: expected delta-seconds (e.g. 120) or an HTTP-date \
             (e.g. Wed, 21 Oct 2015 07:28:00 GMT)",
            self.0
        )
    }
}

/// Reads one Retry-After value as a wait from `now` (seconds; a past date is zero).
pub fn parse(value: &str, now: SystemTime) -> Result<Duration, Invalid> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        let secs = v.parse::<u64>().unwrap_or(HUGE_SECONDS).min(HUGE_SECONDS);
        return Ok(Duration::from_secs(secs));
    }
    match httpdate::parse_http_date(v) {
        Ok(when) => Ok(when.duration_since(now).unwrap_or(Duration::ZERO)),
        Err(_) => Err(Invalid(value.to_string())),
    }
}

/// The outcome of reading every Retry-After header of a response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    /// The largest valid wait, clamped; `None` when there was no valid value.
    pub hint: Option<Hint>,
    /// The wait the server asked for before clamping (for the log).
    pub asked: Option<Duration>,
    /// Values that could not be read.
    pub invalid: Vec<Invalid>,
}

/// Reads all Retry-After values of a response: the largest valid one wins (two headers
/// are a server's mistake; the longer wait is the safe reading), clamped to `max`.
pub fn read_all<'a>(
    values: impl IntoIterator<Item = &'a str>,
    now: SystemTime,
    max: Duration,
) -> Reading {
    let mut reading = Reading::default();
    for v in values {
        match parse(v, now) {
            Ok(d) => reading.asked = Some(reading.asked.map_or(d, |a| a.max(d))),
            Err(e) => reading.invalid.push(e),
        }
    }
    reading.hint = reading.asked.map(|asked| Hint {
        wait: asked.min(max),
        clamped: asked > max,
    });
    reading
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        // Sun, 06 Nov 1994 08:49:37 GMT, the example date of RFC 9110.
        SystemTime::UNIX_EPOCH + Duration::from_secs(784111777)
    }

    #[test]
    fn delta_seconds() {
        assert_eq!(parse("120", now()), Ok(Duration::from_secs(120)));
        assert_eq!(parse(" 0 ", now()), Ok(Duration::ZERO));
    }

    #[test]
    fn huge_delta_saturates() {
        let d = parse("99999999999999999999", now()).unwrap();
        assert_eq!(d, Duration::from_secs(HUGE_SECONDS));
    }

    #[test]
    fn three_date_forms() {
        let later = Ok(Duration::from_secs(60));
        assert_eq!(parse("Sun, 06 Nov 1994 08:50:37 GMT", now()), later);
        assert_eq!(parse("Sunday, 06-Nov-94 08:50:37 GMT", now()), later);
        assert_eq!(parse("Sun Nov  6 08:50:37 1994", now()), later);
    }

    #[test]
    fn past_date_is_no_wait() {
        assert_eq!(
            parse("Sun, 06 Nov 1994 08:00:00 GMT", now()),
            Ok(Duration::ZERO)
        );
    }

    #[test]
    fn invalid_values_are_errors_not_zero() {
        for v in [
            "",
            "-1",
            "1.5",
            "soon",
            "Sun, 32 Nov 1994 08:00:00 GMT",
            "+5",
        ] {
            assert!(parse(v, now()).is_err(), "{v:?}");
        }
    }

    #[test]
    fn largest_valid_wins_and_is_clamped() {
        let r = read_all(["5", "junk", "30"], now(), Duration::from_secs(10));
        assert_eq!(r.asked, Some(Duration::from_secs(30)));
        assert_eq!(
            r.hint,
            Some(Hint {
                wait: Duration::from_secs(10),
                clamped: true
            })
        );
        assert_eq!(r.invalid.len(), 1);
        let r = read_all(["5"], now(), Duration::from_secs(10));
        assert_eq!(
            r.hint,
            Some(Hint {
                wait: Duration::from_secs(5),
                clamped: false
            })
        );
        let r = read_all(["x"], now(), Duration::from_secs(10));
        assert_eq!(r.hint, None);
    }
}
