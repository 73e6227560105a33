//! Parsers for flag values: durations, jitter modes, status lists, headers, sizes. Pure; each
//! error says what was wrong and what is accepted, so clap can print it as one line.

use crate::policy::{Jitter, StatusSet};
use std::time::Duration;

/// What every duration flag accepts, for error messages.
const DURATION_FORMS: &str =
    "a number with a unit, e.g. 250ms, 8s, 1m30s (units: ms, s, m, h), or 0";

/// The longest duration accepted: far beyond any sensible wait, and far from the limits of
/// the clock arithmetic.
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// The shortest duration accepted but 0: the timers count in milliseconds, so a positive
/// time below one would be rounded to 0, which most flags read as "no limit".
pub const MIN_DURATION: Duration = Duration::from_millis(1);

/// `d` read from `s`, unless it is positive but shorter than [`MIN_DURATION`]: refused,
/// naming the smallest value accepted (`0`, where the flag takes it, is written `0`).
fn at_least_a_millisecond(s: &str, d: Duration) -> Result<Duration, String> {
    if !d.is_zero() && d < MIN_DURATION {
        return Err(format!(
            "duration {s:?} is below 1ms, the shortest accepted (1ms, or 0): the timers count whole milliseconds"
        ));
    }
    Ok(d)
}

/// Parses a duration with a unit (`250ms`, `8s`, `1m30s`); a bare `0` is accepted.
/// A number without a unit is rejected: "5" could mean seconds or milliseconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.starts_with('-') {
        return Err(format!(
            "negative duration {s:?}: expected {DURATION_FORMS}"
        ));
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!("{s:?} has no unit: expected {DURATION_FORMS}"));
    }
    let d = humantime::parse_duration(t).map_err(|e| {
        // humantime's own text lists every unit it knows, which contradicted ours.
        let why = match e {
            humantime::DurationError::UnknownUnit { unit, .. } => format!("unknown unit {unit:?}"),
            other => other.to_string(),
        };
        format!("invalid duration {s:?} ({why}): expected {DURATION_FORMS}")
    })?;
    if d > MAX_DURATION {
        return Err(format!("duration {s:?} is too long: at most 10 years"));
    }
    at_least_a_millisecond(s, d)
}

/// Parses curl's `-m/--max-time`: seconds as a plain, possibly fractional, number
/// (`2`, `0.5`). A value with a unit is accepted too.
pub fn seconds(s: &str) -> Result<Duration, String> {
    seconds_of("--max-time", s)
}

/// Parses `--connect-timeout`: curl's plain seconds (`5`, `2.5`; 0: no limit of its own),
/// or a duration with a unit (`500ms`).
pub fn connect_seconds(s: &str) -> Result<Duration, String> {
    seconds_of("--connect-timeout", s).map_err(|e| {
        if e.contains("below 1ms") {
            return e;
        }
        format!(
            "invalid --connect-timeout {s:?}: expected a number of seconds from 0 to {}, e.g. 5 or 2.5 (or a duration with a unit, e.g. 500ms)",
            MAX_DURATION.as_secs()
        )
    })
}

/// Parses curl's `--retry-delay`: seconds as `-m` takes them (0: this tool's backoff).
pub fn retry_delay(s: &str) -> Result<Duration, String> {
    seconds_of("--retry-delay", s)
}

/// Parses curl's `--retry-max-time`: seconds as `-m` takes them (0: no limit).
pub fn retry_max_time(s: &str) -> Result<Duration, String> {
    seconds_of("--retry-max-time", s)
}

/// Seconds as curl takes them for `flag`: a plain, possibly fractional, number, 0 or from
/// 0.001 (1 ms, the timers' unit) to 10 years (`2`, `0.5`), or a duration with a unit
/// (`2500ms`). Negative, signed, non-numeric, infinite and NaN values are refused, and a
/// positive time below 1 ms (`1e-10`, which would round to 0, no limit), naming `flag`.
pub fn seconds_of(flag: &str, s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let range = || {
        format!(
            "invalid {flag} {s:?}: expected a number of seconds, 0 or from 0.001 to {}, e.g. 2.5",
            MAX_DURATION.as_secs()
        )
    };
    if let Ok(secs) = t.parse::<f64>() {
        if !(0.0..=MAX_DURATION.as_secs_f64()).contains(&secs) || t.starts_with(['+', '-']) {
            return Err(range());
        }
        let d = Duration::from_secs_f64(secs);
        // 1e-10 is positive, though it reads as 0 nanoseconds.
        if secs > 0.0 && d < MIN_DURATION {
            return Err(below_a_millisecond(flag, s));
        }
        return Ok(d);
    }
    match duration(t) {
        Ok(d) => Ok(d),
        Err(_) if humantime::parse_duration(t).is_ok_and(|d| d < MIN_DURATION) => {
            Err(below_a_millisecond(flag, s))
        }
        Err(_) => Err(format!(
            "invalid {flag} {s:?}: expected a number of seconds, e.g. 2.5 (or a duration with a unit, e.g. 2500ms)"
        )),
    }
}

/// The error of a positive time below 1 ms given to `flag` in seconds.
fn below_a_millisecond(flag: &str, s: &str) -> String {
    format!(
        "invalid {flag} {s:?}: below 1ms, the shortest time accepted (0.001 or 1ms; 0 means none)"
    )
}

/// Checks curl's `--keepalive-time SECONDS`, which has no effect here but is a usage error
/// where curl 7.88 makes it one: a whole number of seconds (leading blanks and a `+` taken,
/// as curl's `strtol` takes them), nothing else (`1.5`, `-1`, `NaN`, `5s`). Returns it as given.
pub fn keepalive_time(s: &str) -> Result<String, String> {
    let digits = s.trim_start();
    let digits = digits.strip_prefix('+').unwrap_or(digits);
    if digits.parse::<u64>().is_ok() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(s.to_string());
    }
    Err(format!(
        "invalid --keepalive-time {s:?}: expected a whole number of seconds, as curl takes (the flag has no effect here)"
    ))
}

/// Parses curl's `--retry N`: retries after the first attempt, a whole number from 0 to 999
/// (N+1 attempts, so at most `--attempts`' 1000).
pub fn curl_retries(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n <= 999 && !s.trim().starts_with('+') => Ok(n),
        _ => Err(format!(
            "invalid --retry {s:?}: expected a whole number of retries from 0 to 999 (--retry N makes N+1 attempts)"
        )),
    }
}

/// Parses `--attempts`: a whole number from 1 to 1000 (the first attempt included).
pub fn attempts(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!(
            "invalid attempt count {s:?}: expected a whole number from 1 to 1000 (1 means no retry)"
        )),
    }
}

/// Parses `--attempts`: a count as [`attempts`], or `unlimited` (as
/// [`crate::policy::decision::UNLIMITED`]).
pub fn attempts_or_unlimited(s: &str) -> Result<u32, String> {
    if s.trim() == "unlimited" {
        return Ok(crate::policy::decision::UNLIMITED);
    }
    attempts(s).map_err(|_| {
        format!(
            "invalid attempt count {s:?}: expected a whole number from 1 to 1000 (1 means no retry), or unlimited (with a --deadline)"
        )
    })
}

/// Parses `--until-status`: a list as `--retry-on` takes it, its errors naming this flag.
/// A 1xx is refused: an interim answer is never the final one, so the run could never be
/// ready (RFC 9110 section 15.2).
pub fn until_status(s: &str) -> Result<StatusSet, String> {
    let set = status_list(s, "--until-status")?;
    if set.overlaps(100, 199) {
        return Err(format!(
            "invalid --until-status {s:?}: a 1xx is an interim answer, never the final one, so the run could never be ready; expected codes from 200 to 599, ranges (200-299) or classes (2xx)"
        ));
    }
    Ok(set)
}

/// Parses `--jitter`: full, equal, decorrelated, none, or `+DURATION` (additive).
pub fn jitter(s: &str) -> Result<Jitter, String> {
    match s.trim() {
        "full" => Ok(Jitter::Full),
        "equal" => Ok(Jitter::Equal),
        "decorrelated" => Ok(Jitter::Decorrelated),
        "none" => Ok(Jitter::None),
        t if t.starts_with('+') => duration(&t[1..]).map(Jitter::Additive),
        _ => Err(format!(
            "unknown jitter mode {s:?}: expected full, equal, decorrelated, none, or +DURATION (e.g. +1s)"
        )),
    }
}

fn status_code(s: &str, whole: &str) -> Result<u16, String> {
    match s.trim().parse::<u16>() {
        Ok(c) if (100..=599).contains(&c) => Ok(c),
        _ => Err(format!(
            "invalid status {s:?} in {whole:?}: expected codes from 100 to 599, ranges (500-599) or classes (5xx), comma-separated"
        )),
    }
}

/// What `--retry-on` accepts, for its errors.
const RETRY_ON_FORMS: &str =
    "expected codes from 400 to 599, ranges (500-599) or classes (4xx, 5xx), comma-separated";

/// Parses `--retry-on`: codes, ranges `500-599` and classes `5xx`, comma-separated, each
/// from 400 to 599: only an error status is retried (see `policy::readiness`), so a code
/// below 400 would be accepted and never apply. A 3xx is refused saying what `-L` does: a
/// redirect is an answer, never a transient failure.
pub fn status_set(s: &str) -> Result<StatusSet, String> {
    let set = status_list(s, "--retry-on")?;
    let why = if set.overlaps(300, 399) {
        "a redirect (3xx) is an answer, never a transient failure: -L follows it (up to --max-redirs), and without -L the 3xx is the run's answer"
    } else if set.overlaps(200, 299) {
        "a success (2xx) ends the run: to poll until another answer, give --until-status, --until-body or --until-json"
    } else if set.overlaps(100, 199) {
        "a 1xx is an interim answer, never the final one"
    } else {
        return Ok(set);
    };
    Err(format!("invalid --retry-on {s:?}: {why}; {RETRY_ON_FORMS}"))
}

/// Parses a status list for `flag`: codes, ranges `500-599` and classes `5xx`,
/// comma-separated, each from 100 to 599.
pub fn status_list(s: &str, flag: &str) -> Result<StatusSet, String> {
    let mut ranges = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        let lower = item.to_ascii_lowercase();
        let range = if let Some(class) = lower.strip_suffix("xx") {
            let c = status_code(&format!("{class}00"), s)?;
            (c, c + 99)
        } else if let Some((lo, hi)) = item.split_once('-') {
            let (lo, hi) = (status_code(lo, s)?, status_code(hi, s)?);
            if lo > hi {
                return Err(format!(
                    "invalid range {item:?} in {flag}: the low end comes first, e.g. 500-599"
                ));
            }
            (lo, hi)
        } else {
            let c = status_code(item, s)?;
            (c, c)
        };
        ranges.push(range);
    }
    Ok(StatusSet::from_ranges(ranges))
}

/// Whether `s` is an HTTP token (RFC 9110 section 5.6.2): one or more of the letters, digits
/// and `!#$%&'*+-.^_`|~`, nothing else. Header names and methods are tokens.
pub fn is_token(s: &str) -> bool {
    let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    !s.is_empty() && s.bytes().all(tchar)
}

/// Why a header value cannot be sent as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsendable {
    /// A CR or LF: it would end the header line and start another.
    LineBreak,
    /// Another control character (Unicode's `Cc`: C0, DEL, C1 such as NEL), or a tab
    /// where tabs are not allowed.
    Control,
}

/// The first reason, if any, that `value` cannot go into a header: a CR or LF anywhere
/// comes before any other control character. A tab is allowed when `tab_ok` (HTTP allows it
/// inside a field value); an Idempotency-Key, which identifies, allows none.
pub fn unsendable(value: &str, tab_ok: bool) -> Option<Unsendable> {
    if value.contains(['\r', '\n']) {
        Some(Unsendable::LineBreak)
    } else if value
        .chars()
        .any(|c| c.is_control() && !(tab_ok && c == '\t'))
    {
        Some(Unsendable::Control)
    } else {
        None
    }
}

/// A `-H` argument, with curl's meanings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderArg {
    /// `Name: value`: send this header (replacing one the tool would add).
    Set(String, String),
    /// `Name:` with nothing after the colon: do not send this header at all.
    Remove(String),
}

/// HTTP's optional white space (RFC 9110 section 5.6.3): ASCII space and tab, nothing else.
/// Other white space (NBSP, U+2028, ...) is not a separator: it is part of what was typed.
const OWS: [char; 2] = [' ', '\t'];

/// A header name: an RFC 9110 token exactly, once the ASCII spaces and tabs around it are
/// trimmed (as curl does). Anything else, Unicode white space included, is an error.
fn header_name(name: &str) -> Result<String, String> {
    let name = name.trim_matches(OWS);
    if !is_token(name) {
        // A name that is not a token may hold the secret (`Bearer abc: x`): masked.
        let shown = crate::redact::header_arg(name);
        return Err(format!(
            "invalid header name {shown:?}: expected letters, digits and !#$%&'*+-.^_`|~ before the colon"
        ));
    }
    Ok(name.to_string())
}

/// Parses a request header as curl's `-H` takes it: `Name: value` sends it, `Name:`
/// removes it, `Name;` sends it with an empty value. The name must be an HTTP token; the
/// value may not contain CR or LF (that would smuggle another header) or other controls.
/// Only ASCII spaces and tabs are trimmed, around the name and the value.
pub fn header(s: &str) -> Result<HeaderArg, String> {
    if let Some(name) = s.strip_suffix(';').filter(|n| !n.contains(':')) {
        return Ok(HeaderArg::Set(header_name(name)?, String::new()));
    }
    let Some((name, value)) = s.split_once(':') else {
        let shown = crate::redact::header_arg(s);
        return Err(format!(
            "invalid header {shown:?}: expected 'Name: value' (a colon after the name)"
        ));
    };
    let name = header_name(name)?;
    match unsendable(value, true) {
        Some(Unsendable::LineBreak) => {
            return Err(format!(
                "invalid value for header {name}: it contains a CR or LF character"
            ));
        }
        Some(Unsendable::Control) => {
            return Err(format!(
                "invalid value for header {name}: it contains a control character; expected printable text"
            ));
        }
        None => {}
    }
    // Only OWS is trimmed: a value of other white space (`NBSP`) is a value, sent as given.
    let value = value.trim_matches(OWS);
    if value.is_empty() {
        return Ok(HeaderArg::Remove(name));
    }
    Ok(HeaderArg::Set(name, value.to_string()))
}

/// Parses a percentage: `10%` or `10` (0 to 1000).
pub fn percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let n = t.strip_suffix('%').unwrap_or(t).trim();
    match n.parse::<f64>() {
        Ok(p) if (0.0..=1000.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "invalid percentage {s:?}: expected a number from 0 to 1000, e.g. 10%"
        )),
    }
}

/// Parses a size such as `--max-filesize`: bytes, or with a suffix k, M, G (powers of 1024).
pub fn size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| {
            format!(
                "invalid size {s:?}: expected a whole number of bytes, optionally with k, M or G"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_completed_values_are_the_values_parsed() {
        for (name, _) in JITTER_MODES {
            assert!(jitter(name).is_ok(), "--jitter {name}");
        }
        let listed: Vec<&str> = SIM_STRATEGIES.iter().map(|(n, _)| *n).collect();
        let mut named: Vec<&str> = crate::simulate::strategy::Strategy::ALL
            .iter()
            .map(|s| s.name())
            .collect();
        let mut sorted = listed.clone();
        sorted.sort_unstable();
        named.sort_unstable();
        assert_eq!(sorted, named, "every strategy, once");
        for (_, help) in JITTER_MODES.iter().chain(SIM_STRATEGIES) {
            assert!(!help.contains(['\'', '"']), "no quotes: {help}");
        }
    }

    #[test]
    fn durations_read_as_flags_take_them() {
        // Every form printed is one a duration flag accepts, and reads back to the value
        // printed (to the unit shown).
        for secs in [
            1, 59, 60, 61, 90, 3599, 3600, 5400, 86_400, 86_460, 172_800, 180_000,
        ] {
            let d = Duration::from_secs(secs);
            let shown = crate::units::fmt_duration(d);
            let back = duration(&shown).expect(&shown);
            assert!(back <= d && d - back < Duration::from_secs(3600), "{shown}");
            if secs < 48 * 3600 {
                assert!(d - back < Duration::from_secs(60), "{shown}");
            }
        }
    }

    /// The forms the reports give a flag's value (`units::flag_value`) and the additive
    /// jitter's name (`Jitter::label`) are ones the flags take back, to the same value.
    #[test]
    fn written_values_read_back_as_flags() {
        let ms = Duration::from_millis;
        for d in [620, 1100, 24_000, 90_000, 1234].map(ms) {
            let flag = crate::units::flag_value(d);
            assert_eq!(duration(&flag), Ok(d), "{flag}");
        }
        for d in [ms(1500), ms(20), Duration::from_secs(90)] {
            let label = Jitter::Additive(d).label();
            assert_eq!(jitter(&label), Ok(Jitter::Additive(d)), "{label}");
        }
    }

    #[test]
    fn a_positive_time_below_a_millisecond_is_refused_never_none() {
        for tiny in [
            "1e-9",
            "1e-10",
            "0.0005",
            "5e-324",
            "0.0000001s",
            "999us",
            "1ns",
        ] {
            assert!(
                seconds(tiny).is_err_and(|e| e.contains("below 1ms")),
                "{tiny}"
            );
        }
        for tiny in ["0.0000001s", "999us", "1ns", "0.5ms"] {
            assert!(
                duration(tiny).is_err_and(|e| e.contains("below 1ms")),
                "{tiny}"
            );
        }
        assert_eq!(seconds("0.001"), Ok(Duration::from_millis(1)));
        assert_eq!(duration("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(seconds("0"), Ok(Duration::ZERO));
        assert_eq!(seconds("2.5"), Ok(Duration::from_millis(2500)));
        for none in ["1e12", "-0", "-1", "+1", "nan", "inf", "1e400"] {
            assert!(
                seconds(none).is_err_and(|e| e.contains("0.001 to")),
                "{none}"
            );
        }
    }

    #[test]
    fn an_unknown_unit_is_named_without_a_second_list_of_units() {
        let e = duration("4x").unwrap_err();
        assert!(e.contains("unknown unit \"x\""), "{e}");
        assert_eq!(e.matches("units").count(), 1, "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        for bad in ["5", "1.5", "-1s", "", "abc", "10 parsecs", "300000000000y"] {
            assert!(duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn max_time_seconds() {
        assert_eq!(seconds("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(seconds("3"), Ok(Duration::from_secs(3)));
        assert_eq!(seconds("100ms"), Ok(Duration::from_millis(100)));
        assert!(seconds("-1").is_err());
        assert!(seconds("NaN").is_err());
    }

    #[test]
    fn curls_retry_values() {
        assert_eq!(curl_retries("0"), Ok(0));
        assert_eq!(curl_retries("999"), Ok(999));
        for bad in ["-1", "1000", "2.5", "x", "", "+3"] {
            let e = curl_retries(bad).expect_err(bad);
            assert!(e.starts_with("invalid --retry "), "{e}");
            assert!(e.contains("0 to 999"), "{e}");
        }
        assert_eq!(retry_delay("0"), Ok(Duration::ZERO));
        assert_eq!(retry_delay("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(retry_max_time("2m"), Ok(Duration::from_secs(120)));
        for bad in ["-1", "soon", "+2", "NaN", "inf"] {
            let e = retry_delay(bad).expect_err(bad);
            assert!(e.starts_with("invalid --retry-delay "), "{e}");
            let e = retry_max_time(bad).expect_err(bad);
            assert!(e.starts_with("invalid --retry-max-time "), "{e}");
        }
    }

    #[test]
    fn attempt_counts() {
        assert_eq!(attempts("1"), Ok(1));
        assert_eq!(attempts("1000"), Ok(1000));
        for bad in ["0", "1001", "-1", "x", ""] {
            assert!(attempts(bad).is_err());
        }
    }

    #[test]
    fn jitter_modes() {
        assert_eq!(jitter("full"), Ok(Jitter::Full));
        assert_eq!(jitter("+1s"), Ok(Jitter::Additive(Duration::from_secs(1))));
        assert!(jitter("fuzzy").is_err());
        assert!(jitter("+").is_err());
    }

    #[test]
    fn status_lists() {
        let s = status_list("429,5xx, 300-302", "--until-status").unwrap();
        assert!(s.contains(429) && s.contains(599) && s.contains(301) && !s.contains(404));
        for bad in ["", "99", "600", "6xx", "503-500", "abc", "5xx,", "1-2-3"] {
            assert!(status_list(bad, "--retry-on").is_err(), "{bad:?}");
        }
        // --retry-on: only what can be retried, an error status.
        assert!(status_set("400-599").is_ok());
        for never in [
            "302", "3xx", "200", "2xx", "100", "1xx", "399-500", "100-599",
        ] {
            assert!(status_set(never).is_err(), "{never:?}");
        }
        assert!(until_status("3xx,200").is_ok() && until_status("1xx").is_err());
    }

    #[test]
    fn headers() {
        assert_eq!(
            header("X-A: b c "),
            Ok(HeaderArg::Set("X-A".into(), "b c".into()))
        );
        assert_eq!(header("Accept:"), Ok(HeaderArg::Remove("Accept".into())));
        assert_eq!(
            header("X-Empty;"),
            Ok(HeaderArg::Set("X-Empty".into(), "".into()))
        );
        for bad in [
            "NoColon",
            ": v",
            "Bad Name: v",
            "X: a\r\nY: b",
            "X: a\u{0}b",
        ] {
            assert!(header(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tokens() {
        for ok in ["GET", "X-Request-Id", "!#$%&'*+-.^_`|~", "a1"] {
            assert!(is_token(ok), "{ok:?}");
        }
        for bad in ["", "G ET", "X:", "caf\u{e9}", "a\tb", "(x)", "a\"b"] {
            assert!(!is_token(bad), "{bad:?}");
        }
    }

    #[test]
    fn unsendable_values() {
        assert_eq!(unsendable("plain text, \u{a0}\u{2028} too", true), None);
        assert_eq!(unsendable("a\tb", true), None);
        assert_eq!(unsendable("a\tb", false), Some(Unsendable::Control));
        assert_eq!(unsendable("a\rb", true), Some(Unsendable::LineBreak));
        assert_eq!(unsendable("a\nb", false), Some(Unsendable::LineBreak));
        // A line break is named first, wherever the other control character is.
        assert_eq!(unsendable("\u{0}a\n", true), Some(Unsendable::LineBreak));
        for c in ['\u{0}', '\u{7f}', '\u{85}', '\u{b}', '\u{c}', '\u{1b}'] {
            assert_eq!(
                unsendable(&format!("a{c}b"), true),
                Some(Unsendable::Control),
                "{c:?}"
            );
        }
    }

    #[test]
    fn header_names_are_tokens_exactly() {
        // ASCII spaces and tabs around the name go, as in curl.
        assert_eq!(
            header(" \tX-A \t: v"),
            Ok(HeaderArg::Set("X-A".into(), "v".into()))
        );
        assert_eq!(
            header("X-A \t;"),
            Ok(HeaderArg::Set("X-A".into(), "".into()))
        );
        assert_eq!(header("X-A\t:"), Ok(HeaderArg::Remove("X-A".into())));
        // Any other white space is not trimmed: the name is not a token.
        for ws in [
            "\u{2028}", "\u{a0}", "\u{2003}", "\u{3000}", "\u{85}", "\u{b}", "\u{c}",
        ] {
            for bad in [
                format!("Authorization{ws}: x"),
                format!("{ws}Authorization: x"),
                format!("Author{ws}ization: x"),
                format!("X-Empty{ws};"),
                format!("Accept{ws}:"),
            ] {
                let err = header(&bad).expect_err(&bad);
                assert!(err.contains("invalid header name"), "{bad:?}: {err}");
                assert!(!err.contains(ws), "{bad:?}: {err}");
            }
        }
        // The rejected name is masked as any -H argument that does not parse.
        let err = header("Bearer\u{a0}s3cret: x").unwrap_err();
        assert!(!err.contains("s3cret"), "{err}");
    }

    #[test]
    fn only_ows_is_trimmed_from_values() {
        assert_eq!(
            header("X-A: \t v \t"),
            Ok(HeaderArg::Set("X-A".into(), "v".into()))
        );
        assert_eq!(header("X-A: \t "), Ok(HeaderArg::Remove("X-A".into())));
        // Other white space is a value, sent as given (only its ASCII OWS trimmed).
        for ws in ["\u{a0}", "\u{2028}", "\u{2003}", "\u{3000}", "\u{feff}"] {
            assert_eq!(
                header(&format!("Idempotency-Key: {ws}")),
                Ok(HeaderArg::Set("Idempotency-Key".into(), ws.into())),
                "{ws:?}"
            );
            assert_eq!(
                header(&format!("X-A:\t{ws}v{ws} ")),
                Ok(HeaderArg::Set("X-A".into(), format!("{ws}v{ws}"))),
                "{ws:?}"
            );
        }
        // U+0085 (NEL) is a control character, as are VT and FF: rejected, not trimmed.
        for bad in ["X-A: \u{85}", "X-A: \u{b}", "X-A: v\u{c}"] {
            assert!(header(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(size("10"), Ok(10));
        assert_eq!(size("2k"), Ok(2048));
        assert_eq!(size("1G"), Ok(1 << 30));
        assert!(size("x").is_err());
    }

    #[test]
    fn connect_timeout_takes_curls_seconds() {
        assert_eq!(connect_seconds("5"), Ok(Duration::from_secs(5)));
        assert_eq!(connect_seconds("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(connect_seconds("0"), Ok(Duration::ZERO));
        assert_eq!(connect_seconds("750ms"), Ok(Duration::from_millis(750)));
        for bad in ["-1", "x", "5 s s", "+3"] {
            let e = connect_seconds(bad).expect_err(bad);
            assert!(e.starts_with("invalid --connect-timeout"), "{e}");
        }
    }
}

/// A flag's parser with the values its completions offer: `parser` parses (its errors are
/// the flag's errors, unchanged); `values` (name, description) are what bash, zsh and fish
/// complete the flag to. Clap checks nothing against them, so a form they do not list (a
/// `+DURATION` jitter, a comma-separated list) is still parsed; the flag sets
/// `hide_possible_values` so `--help` keeps its own wording. Descriptions hold no quotes:
/// the completion scripts quote them.
#[derive(Clone)]
pub struct Completed<P> {
    parser: P,
    values: &'static [(&'static str, &'static str)],
}

impl<P> Completed<P> {
    /// `parser`, completed to `values`.
    pub const fn new(parser: P, values: &'static [(&'static str, &'static str)]) -> Self {
        Completed { parser, values }
    }
}

impl<P> clap::builder::TypedValueParser for Completed<P>
where
    P: clap::builder::TypedValueParser,
{
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        self.parser.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(self.values.iter().map(|(name, help)| {
            clap::builder::PossibleValue::new(*name).help(*help)
        })))
    }
}

/// The named modes of `--jitter` (its `+DURATION` form is typed, not completed).
pub const JITTER_MODES: &[(&str, &str)] = &[
    ("full", "uniform(0, ceiling): the default"),
    ("equal", "ceiling/2 + uniform(0, ceiling/2)"),
    (
        "decorrelated",
        "uniform(base, 3 x the previous wait), capped",
    ),
    ("none", "the ceiling itself, no randomness"),
];

/// A parser as clap takes a function: the text to a value, or the error's one line.
pub type ParseFn<T> = fn(&str) -> Result<T, String>;

/// `--jitter`'s parser ([`jitter`]), completed to [`JITTER_MODES`].
pub fn jitter_completed() -> Completed<ParseFn<Jitter>> {
    Completed::new(jitter, JITTER_MODES)
}

/// The strategies `simulate --strategies` names, every model's (each model refuses those it
/// does not have, in its own error).
pub const SIM_STRATEGIES: &[(&str, &str)] = &[
    ("fixed", "the same pause every time"),
    ("exponential", "base x 2^n up to the cap, no jitter"),
    ("full", "full jitter"),
    ("equal", "equal jitter"),
    ("decorrelated", "decorrelated jitter"),
    ("no-retry", "one try (overload and failure-rate)"),
    ("retries", "immediate retries (overload and failure-rate)"),
    (
        "bucket",
        "a token bucket per client (overload and failure-rate)",
    ),
    (
        "breaker",
        "a circuit breaker per client (overload and failure-rate)",
    ),
    (
        "shared-budget",
        "one retry budget for the fleet, as --state keeps it",
    ),
    (
        "shared-breaker",
        "one circuit breaker and retry budget for the fleet, as --state keeps them",
    ),
];

/// `simulate --strategies`'s parser (the text as typed, read by the model), completed to
/// [`SIM_STRATEGIES`].
pub fn strategies_completed() -> Completed<clap::builder::StringValueParser> {
    Completed::new(clap::builder::StringValueParser::new(), SIM_STRATEGIES)
}
