//! The flags of conditional and resumed requests (`-C -`, `-R`, `--etag-save`,
//! `--etag-compare`, `-z`, `-b`) checked against each other and against the rest of the
//! command line, and `-z`'s dates read. No I/O: the files they name are read by
//! `request::prior`, still before anything is sent.

use super::{UsageError, usage};
use crate::cli::RequestArgs;
use crate::cli::conditional::ConditionalFlags;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Where `-z`'s time comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeSource {
    /// A date given on the command line.
    Date(SystemTime),
    /// Not a date: the modification time of this file; when no such file exists, no
    /// condition is sent (a warning says so, as curl's does).
    File(PathBuf),
}

/// `-z`: the time, and which condition it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeCond {
    /// The date, or the file whose modification time it is.
    pub source: TimeSource,
    /// A leading `-`: If-Unmodified-Since (else If-Modified-Since).
    pub unmodified: bool,
}

/// The validated flags of conditional and resumed requests.
#[derive(Debug, Clone, Default)]
pub struct ConditionalConfig {
    /// `-C -`: resume the `-o` file from its size.
    pub resume: bool,
    /// `-R`: the `-o` file takes the response's Last-Modified as its modification time.
    pub remote_time: bool,
    /// `--etag-save`: where the ETag goes after a successful run.
    pub etag_save: Option<PathBuf>,
    /// `--etag-compare`: the file holding the ETag to send in If-None-Match.
    pub etag_compare: Option<PathBuf>,
    /// `-z`.
    pub time_cond: Option<TimeCond>,
    /// `-b NAME=VALUE`: the strings, in order (joined with `; ` into one Cookie header).
    pub cookie_strings: Vec<String>,
    /// `-b FILE`: Netscape cookie files, in order.
    pub cookie_files: Vec<PathBuf>,
}

/// The conditional flags of `a`, checked (`has_header`: whether `-H` sends a header of that name).
pub fn build(
    a: &RequestArgs,
    has_header: impl Fn(&str) -> bool,
) -> Result<ConditionalConfig, UsageError> {
    let f = &a.conditional;
    if f.cookie_jar.is_some() {
        return usage(
            "-c/--cookie-jar is curl's flag and is not supported here: Set-Cookie answers are not stored (-b sends cookies from a string or a file)",
        );
    }
    let resume = continue_at(f, a)?;
    if f.remote_time && !names_a_file(a) {
        return usage("-R sets the output file's modification time: give -o FILE or -O");
    }
    for (flag, path) in [
        ("--etag-save", &f.etag_save),
        ("--etag-compare", &f.etag_compare),
    ] {
        if path
            .as_ref()
            .is_some_and(|p| p.as_os_str() == "-" || p.as_os_str().is_empty())
        {
            return usage(format!("{flag} needs a file name ('-' is not accepted)"));
        }
    }
    if f.etag_compare.is_some() && has_header("if-none-match") {
        return usage("If-None-Match is given twice (--etag-compare and -H): give one");
    }
    let time_cond = f.time_cond.as_deref().map(time_cond).transpose()?;
    if let Some(t) = &time_cond {
        let name = condition_header(t.unmodified);
        if has_header(name) {
            return usage(format!("{name} is given twice (-z and -H): give one"));
        }
    }
    let (cookie_strings, cookie_files) = cookies(&f.cookie)?;
    Ok(ConditionalConfig {
        resume,
        remote_time: f.remote_time,
        etag_save: f.etag_save.clone(),
        etag_compare: f.etag_compare.clone(),
        time_cond,
        cookie_strings,
        cookie_files,
    })
}

/// The header a `-z` condition is sent as.
pub fn condition_header(unmodified: bool) -> &'static str {
    if unmodified {
        "if-unmodified-since"
    } else {
        "if-modified-since"
    }
}

/// Whether the body goes to a named file: `-o FILE` (not `-o -`, stdout) or `-O` (the
/// URL's file name), under `--output-dir` or not. (With several URLs, that each one does
/// is checked with the transfers, in `batch`.)
fn names_a_file(a: &RequestArgs) -> bool {
    let saved = &a.destination.output;
    !saved.remote_name.is_empty()
        || saved.remote_name_all
        || a.output.output.iter().any(|p| p.as_os_str() != "-")
}

/// `-C -`: only `-`, with a regular `-o` or `-O` file, without what would write into it or replace
/// it otherwise (`-i`/`-I`, `--fail-with-body`, a hand-written Range).
fn continue_at(f: &ConditionalFlags, a: &RequestArgs) -> Result<bool, UsageError> {
    let Some(v) = f.continue_at.as_deref() else {
        return Ok(false);
    };
    if v != "-" {
        return usage(format!(
            "-C {v}: only '-C -' is accepted (resume from the size of the -o file); an explicit offset would splice bytes the file does not hold"
        ));
    }
    if !names_a_file(a) {
        return usage("-C - resumes the output file from its size: give -o FILE or -O");
    }
    if a.output.include || a.request.head {
        return usage("-C - with -i or -I would write the head into the resumed file: give one");
    }
    if a.output.fail_with_body {
        return usage(
            "-C - keeps the -o file unless the rest completes it: --fail-with-body would replace it with an error body; give one",
        );
    }
    let range = a.request.headers.iter().any(|h| match h {
        crate::cli::values::HeaderArg::Set(n, _) => n.eq_ignore_ascii_case("range"),
        crate::cli::values::HeaderArg::Remove(_) => false,
    });
    if range {
        return usage("-C - asks for Range itself: remove -H 'Range: ...'");
    }
    Ok(true)
}

/// `-z DATE|FILE`: a leading `-` makes it If-Unmodified-Since (`+` is the default); a date
/// that cannot be read is taken as a file name. Nothing after the sign (`-z ''`, `-z -`) is
/// a usage error: no file has an empty name.
fn time_cond(arg: &str) -> Result<TimeCond, UsageError> {
    let (unmodified, rest) = match arg.as_bytes().first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        Some(b'=') => {
            return usage(
                "-z =DATE (curl's Last-Modified condition) is not accepted: give DATE (If-Modified-Since) or -DATE (If-Unmodified-Since)",
            );
        }
        _ => (false, arg),
    };
    if rest.trim().is_empty() {
        return usage("-z needs a date or a file name, e.g. -z 'Wed, 01 Sep 2021 12:18:00 GMT'");
    }
    let source = match date(rest) {
        Some(t) => TimeSource::Date(t),
        None => TimeSource::File(PathBuf::from(rest)),
    };
    Ok(TimeCond { source, unmodified })
}

/// What `-z` accepts, for the usage error of a date that is not one.
pub const DATE_FORMS: &str = "an HTTP-date such as 'Wed, 01 Sep 2021 12:18:00 GMT', '1 Sep 2021 12:18', YYYYMMDD or YYYY-MM-DD, or the name of an existing file";

/// `-b`: strings (with `=`) and file names (without), each checked; the strings must be
/// sendable as a header value. No value is quoted in an error: cookies are secrets.
fn cookies(args: &[String]) -> Result<(Vec<String>, Vec<PathBuf>), UsageError> {
    let (mut strings, mut files) = (Vec::new(), Vec::new());
    for arg in args {
        if arg == "-" {
            return usage(
                "-b - (cookies from stdin) is not accepted: give NAME=VALUE or a cookie file",
            );
        }
        if arg.contains('=') {
            if crate::cli::values::unsendable(arg, true).is_some() {
                return usage(
                    "a -b cookie string contains a control character (CR, LF, ...): expected 'NAME=VALUE; NAME2=VALUE2'",
                );
            }
            let trimmed = arg.trim().trim_end_matches(';').trim();
            if !trimmed.is_empty() {
                strings.push(trimmed.to_string());
            }
        } else if !arg.is_empty() {
            files.push(PathBuf::from(arg));
        }
        // `-b ''` turns curl's cookie engine on; with nothing stored, it sends nothing here.
    }
    Ok((strings, files))
}

/// Reads a date as curl's `-z` does (see curl_getdate(3)), in UTC unless a zone is given:
/// an HTTP-date (the three forms of RFC 9110 section 5.6.7), or words and numbers in any
/// order: a weekday (ignored), a month name, a day, a year (4 digits; 2 digits after the
/// day), HH:MM[:SS], YYYYMMDD, a zone (GMT, UTC, Z, +HHMM, -HHMM). YYYY-MM-DD is read as
/// YYYYMMDD (curl would look for a file of that name). `None` when it is not a date from
/// 1970 to 9999.
pub fn date(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    if let Ok(t) = httpdate::parse_http_date(s) {
        return Some(t);
    }
    let b = s.as_bytes();
    let iso = b.len() >= 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b[..10]
            .iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if iso {
        let rest = s[10..].strip_prefix('T').map_or(&s[10..], |r| r);
        let joined = format!("{}{}{} {rest}", &s[..4], &s[5..7], &s[8..10]);
        return Fields::read(&joined)?.time();
    }
    Fields::read(s)?.time()
}

/// The parts of a date as they are read, each at most once.
#[derive(Debug, Default)]
struct Fields {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    /// Seconds since midnight.
    clock: Option<i64>,
    /// Seconds east of UTC.
    zone: Option<i64>,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const DAY_NAMES: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];
const MONTH_NAMES: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Sets a field that must not be set yet (`None`: the date says it twice).
fn once(slot: &mut Option<i64>, v: i64) -> Option<()> {
    slot.is_none().then(|| *slot = Some(v))
}

impl Fields {
    /// Reads the words, numbers and separators of `s` (see [`date`]).
    fn read(s: &str) -> Option<Fields> {
        let mut f = Fields::default();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let start = i;
            if b[i].is_ascii_alphabetic() {
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                f.word(&s[start..i].to_ascii_lowercase())?;
            } else if b[i].is_ascii_digit() {
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b':') {
                    i += 1;
                }
                let sign = start.checked_sub(1).map(|p| b[p]);
                f.number(&s[start..i], sign)?;
            } else if matches!(b[i], b' ' | b',' | b'-' | b'+' | b'/' | b'.' | b'\t') {
                i += 1;
            } else {
                return None;
            }
        }
        Some(f)
    }

    fn word(&mut self, w: &str) -> Option<()> {
        if let Some(m) = MONTHS.iter().position(|m| *m == w) {
            return once(&mut self.month, m as i64 + 1);
        }
        if let Some(m) = MONTH_NAMES.iter().position(|m| *m == w) {
            return once(&mut self.month, m as i64 + 1);
        }
        if DAYS.contains(&w) || DAY_NAMES.contains(&w) {
            return Some(());
        }
        match w {
            "gmt" | "utc" | "ut" | "z" => once(&mut self.zone, 0),
            _ => None,
        }
    }

    /// A run of digits (and colons), `sign` the byte before it.
    fn number(&mut self, n: &str, sign: Option<u8>) -> Option<()> {
        if n.contains(':') {
            return once(&mut self.clock, clock(n)?);
        }
        let v: i64 = n.parse().ok()?;
        let signed = matches!(sign, Some(b'+' | b'-'));
        match n.len() {
            4 if signed
                && self.zone.is_none()
                && self.year.is_some()
                && v % 100 < 60
                && v <= 1400 =>
            {
                let east = (v / 100) * 3600 + (v % 100) * 60;
                once(
                    &mut self.zone,
                    if sign == Some(b'-') { -east } else { east },
                )
            }
            8 => {
                once(&mut self.year, v / 10000)?;
                once(&mut self.month, v / 100 % 100)?;
                once(&mut self.day, v % 100)
            }
            4 => once(&mut self.year, v),
            1 | 2 if self.day.is_none() => once(&mut self.day, v),
            2 => once(&mut self.year, if v < 70 { 2000 + v } else { 1900 + v }),
            _ => None,
        }
    }

    /// The instant the fields name, when they name a valid one.
    fn time(&self) -> Option<SystemTime> {
        let (y, m, d) = (self.year?, self.month?, self.day?);
        if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || d < 1 || d > month_days(y, m) {
            return None;
        }
        let secs =
            days_since_epoch(y, m, d) * 86_400 + self.clock.unwrap_or(0) - self.zone.unwrap_or(0);
        u64::try_from(secs)
            .ok()
            .map(|s| SystemTime::UNIX_EPOCH + Duration::from_secs(s))
    }
}

/// `HH:MM` or `HH:MM:SS` as seconds since midnight.
fn clock(t: &str) -> Option<i64> {
    let parts: Vec<&str> = t.split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.is_empty() || p.len() > 2) {
        return None;
    }
    let n: Vec<i64> = parts
        .iter()
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let s = n.get(2).copied().unwrap_or(0);
    (n[0] < 24 && n[1] < 60 && s < 61).then(|| n[0] * 3600 + n[1] * 60 + s)
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn month_days(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the date (year 1970 or later).
fn days_since_epoch(y: i64, m: i64, d: i64) -> i64 {
    let years: i64 = (1970..y).map(|y| if is_leap(y) { 366 } else { 365 }).sum();
    let months: i64 = (1..m).map(|m| month_days(y, m)).sum();
    years + months + d - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(s: &str) -> String {
        date(s).map(httpdate::fmt_http_date).unwrap_or_default()
    }

    #[test]
    fn the_forms_curl_reads() {
        let noon = "Wed, 01 Sep 2021 12:18:00 GMT";
        let midnight = "Wed, 01 Sep 2021 00:00:00 GMT";
        for (typed, want) in [
            ("Wed 01 Sep 2021 12:18:00", noon),
            (noon, noon),
            ("20210901", midnight),
            ("1 Sep 2021", midnight),
            ("Sep 1 2021", midnight),
            ("2021 Sep 1", midnight),
            ("20210901 12:18", noon),
            ("12:18 20210901", noon),
            ("Wed 01 Sep 2021 14:18:00 +0200", noon),
            ("Wed 01 Sep 2021 10:18:00 -0200", noon),
            (
                "Sunday, 06-Nov-94 08:49:37 GMT",
                "Sun, 06 Nov 1994 08:49:37 GMT",
            ),
            ("Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 GMT"),
            ("2021-09-01", midnight),
            ("2021-09-01 12:18:00", noon),
            ("2021-09-01T12:18:00Z", noon),
            ("September 1, 2021", midnight),
        ] {
            assert_eq!(http(typed), want, "{typed:?}");
        }
    }

    #[test]
    fn what_is_no_date() {
        for typed in [
            "garbage",
            "yesterday",
            "01/09/2021",
            "1630498680",
            "2021-13-01",
            "20210231",
            "Sep 2021",
            "25:00 20210901",
            "1 Sep 1969",
            "data.csv",
            "1 Sep Sep 2021",
            "",
        ] {
            assert_eq!(date(typed), None, "{typed:?}");
        }
    }

    #[test]
    fn leap_days_and_the_epoch() {
        assert_eq!(date("19700101"), Some(SystemTime::UNIX_EPOCH));
        assert_eq!(http("29 Feb 2024"), "Thu, 29 Feb 2024 00:00:00 GMT");
        assert_eq!(date("29 Feb 2023"), None);
    }

    #[test]
    fn a_leading_sign_picks_the_condition() {
        let t = time_cond("-20210901").unwrap();
        assert!(t.unmodified);
        assert!(matches!(t.source, TimeSource::Date(_)));
        assert!(!time_cond("+20210901").unwrap().unmodified);
        assert_eq!(
            time_cond("stamp").unwrap().source,
            TimeSource::File("stamp".into())
        );
        assert!(time_cond("=20210901").is_err());
        assert!(time_cond("-").is_err());
    }

    #[test]
    fn cookie_strings_and_files() {
        let args = ["a=1; b=2;".to_string(), "jar.txt".into(), String::new()];
        let (s, f) = cookies(&args).unwrap();
        assert_eq!(s, ["a=1; b=2"]);
        assert_eq!(f, [PathBuf::from("jar.txt")]);
        let Err(e) = cookies(&["a=secret\r\nX: y".to_string()]) else {
            panic!("accepted")
        };
        assert!(!e.0.contains("secret"), "{}", e.0);
        assert!(cookies(&["-".to_string()]).is_err());
    }
}
