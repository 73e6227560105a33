//! The RateLimit fields a server sends about its quota, read into one value (the quota's
//! size when known, the requests left, the time to the reset as a delay). Pure: the wall
//! clock is passed in. Three dialects are read, the first one present wins:
//!
//! 1. The IETF httpapi draft (draft-ietf-httpapi-ratelimit-headers, 9 and later, read as
//!    of draft 12): `RateLimit: "name";r=REMAINING;t=SECONDS` and `RateLimit-Policy:
//!    "name";q=QUOTA;w=WINDOW`. Both are Structured Field Lists (RFC 9651) of Items whose
//!    value names a policy, with Integer parameters (`r` required; `t`, `q` and `w`
//!    optional here; others such as `pk` and `qu` ignored). Where several policies are
//!    reported, the one with the fewest requests left governs (ties: the later reset).
//!    The quota is `q` of the policy of the same name; without `t`, its window `w`
//!    bounds the reset.
//! 2. The older drafts' `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`,
//!    whose reset is delta seconds (a limit written as `100, 100;w=60` is read as 100).
//! 3. The de facto `X-RateLimit-Limit`, `-Remaining` and `-Reset`, whose reset is an epoch
//!    time at GitHub, Discord and Twitter, and a delay elsewhere. The rule: a value at or
//!    above [`EPOCH_FLOOR`] before now (now less a day, in seconds since 1970) is an epoch
//!    time, and a time in the past means now; a smaller one is a delay. Fractions of a
//!    second (Discord's `1470173023.123`) are kept.
//!
//! A field that cannot be read is ignored and said (see [`Invalid`]), never read as zero:
//! a `Remaining` that cannot be read leaves the dialect without a quota; a `Reset` that
//! cannot be read leaves the reset unknown.

use std::time::{Duration, SystemTime};

/// How far before now an epoch time may lie and still be read as one (a day): a
/// `X-RateLimit-Reset` at or above now less this is an epoch time, below it a delay. No
/// quota window a server resets by is longer than the time since 1970 less a day, so the
/// two cannot be confused.
pub const EPOCH_FLOOR: Duration = Duration::from_secs(86_400);

/// The largest number of seconds kept (2^31, as for Retry-After); larger values saturate.
const HUGE_SECONDS: u64 = 2_147_483_648;

/// Which header fields the quota was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `RateLimit` and `RateLimit-Policy` (the IETF draft).
    Ietf,
    /// `RateLimit-Limit`, `-Remaining`, `-Reset` (the older drafts).
    Older,
    /// `X-RateLimit-Limit`, `-Remaining`, `-Reset` (de facto).
    Prefixed,
}

/// What a server said about its quota, as of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// The quota's size (requests per window), when the server said it.
    pub limit: Option<u64>,
    /// Requests left before the reset.
    pub remaining: u64,
    /// Time from the answer to the reset (None: not said, or not readable).
    pub reset: Option<Duration>,
    /// Where it was read from.
    pub dialect: Dialect,
}

/// A RateLimit field that could not be read: its name, its value, what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The field's name as sent.
    pub field: String,
    /// The value as sent.
    pub value: String,
    /// What a valid value looks like.
    pub expected: &'static str,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ignoring {} {:?}: expected {}",
            self.field, self.value, self.expected
        )
    }
}

/// Every RateLimit field of an answer, read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    /// The quota, when a dialect was present and its remaining count readable.
    pub quota: Option<Quota>,
    /// Fields that could not be read (ignored).
    pub invalid: Vec<Invalid>,
}

/// Reads the RateLimit fields among `headers` (name, value; names in any case) at `now`.
pub fn read(headers: &[(String, String)], now: SystemTime) -> Reading {
    let mut r = Reading::default();
    let ietf = ietf(headers, &mut r.invalid);
    let older = || counted(headers, "ratelimit-", Dialect::Older, now, &mut r.invalid);
    r.quota = ietf.or_else(older);
    if r.quota.is_none() {
        r.quota = counted(
            headers,
            "x-ratelimit-",
            Dialect::Prefixed,
            now,
            &mut r.invalid,
        );
    }
    r
}

/// The values of one field, joined as one list (RFC 9110 section 5.3), with its name.
fn field<'h>(headers: &'h [(String, String)], name: &str) -> Option<(&'h str, String)> {
    let mut found = headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
    let (first, v) = found.next()?;
    let mut value = v.clone();
    for (_, v) in found {
        value.push_str(", ");
        value.push_str(v);
    }
    Some((first.as_str(), value))
}

/// Dialect 1: `RateLimit` with `RateLimit-Policy`.
fn ietf(headers: &[(String, String)], invalid: &mut Vec<Invalid>) -> Option<Quota> {
    let (name, value) = field(headers, "ratelimit")?;
    const EXPECTED: &str = "a list of policies such as \"default\";r=50;t=30";
    let Some(items) = sf_list(&value).filter(|items| !items.is_empty()) else {
        invalid.push(bad(name, &value, EXPECTED));
        return None;
    };
    let policies = field(headers, "ratelimit-policy").and_then(|(pname, pvalue)| {
        let parsed = sf_list(&pvalue);
        if parsed.is_none() {
            invalid.push(bad(pname, &pvalue, "a list such as \"default\";q=100;w=60"));
        }
        parsed
    });
    let policies = policies.unwrap_or_default();
    let mut best: Option<Quota> = None;
    for item in &items {
        let Some(remaining) = item.int("r") else {
            invalid.push(bad(name, &value, EXPECTED));
            return None;
        };
        let policy = policies.iter().find(|p| p.value == item.value);
        let window = policy.and_then(|p| p.int("w")).map(seconds);
        let q = Quota {
            limit: policy.and_then(|p| p.int("q")),
            remaining,
            reset: item.int("t").map(seconds).or(window),
            dialect: Dialect::Ietf,
        };
        best = Some(match best {
            Some(b) if (b.remaining, q.reset) <= (q.remaining, b.reset) => b,
            _ => q,
        });
    }
    best
}

/// Dialects 2 and 3: the three counted fields named `prefix` + limit, remaining, reset.
fn counted(
    headers: &[(String, String)],
    prefix: &str,
    dialect: Dialect,
    now: SystemTime,
    invalid: &mut Vec<Invalid>,
) -> Option<Quota> {
    let get = |suffix: &str| field(headers, &format!("{prefix}{suffix}"));
    let (rem, lim, res) = (get("remaining"), get("limit"), get("reset"));
    let limit = lim.and_then(|(n, v)| {
        let first = v.split([',', ';']).next().unwrap_or("");
        let read = integer(first);
        if read.is_none() {
            invalid.push(bad(n, &v, "a non-negative integer"));
        }
        read
    });
    let reset = res.and_then(|(n, v)| {
        let read = match dialect {
            Dialect::Prefixed => epoch_or_delay(&v, now),
            _ => integer(&v).map(seconds),
        };
        if read.is_none() {
            invalid.push(bad(n, &v, reset_words(dialect)));
        }
        read
    });
    let (n, v) = rem?;
    let Some(remaining) = integer(&v) else {
        invalid.push(bad(n, &v, "a non-negative integer"));
        return None;
    };
    Some(Quota {
        limit,
        remaining,
        reset,
        dialect,
    })
}

fn reset_words(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Prefixed => "seconds to the reset, or the reset as seconds since 1970",
        _ => "delta seconds",
    }
}

fn bad(field: &str, value: &str, expected: &'static str) -> Invalid {
    Invalid {
        field: field.to_string(),
        value: value.to_string(),
        expected,
    }
}

fn seconds(s: u64) -> Duration {
    Duration::from_secs(s.min(HUGE_SECONDS))
}

/// A non-negative decimal integer (surrounding spaces allowed); too large saturates.
fn integer(v: &str) -> Option<u64> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(v.parse::<u64>().unwrap_or(HUGE_SECONDS).min(HUGE_SECONDS))
}

/// `X-RateLimit-Reset`: seconds, with an optional fraction, read by the rule in the module
/// documentation as an epoch time (a past one is now) or a delay.
fn epoch_or_delay(v: &str, now: SystemTime) -> Option<Duration> {
    let v = v.trim();
    let (whole, frac) = v.split_once('.').unwrap_or((v, ""));
    let whole = integer(whole)?;
    let frac_ok = frac.bytes().all(|b| b.is_ascii_digit()) && (frac.len() <= 9);
    if !frac_ok || (v.contains('.') && frac.is_empty()) {
        return None;
    }
    let nanos = format!("{frac:0<9}").parse::<u32>().unwrap_or(0);
    let value = Duration::new(whole, nanos);
    let since_epoch = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    if value >= since_epoch.saturating_sub(EPOCH_FLOOR) {
        Some(value.saturating_sub(since_epoch))
    } else {
        Some(value)
    }
}

/// One Item of a Structured Field List: its bare value (a String's or a Token's text) and
/// its parameters (a value left as written; `int` reads an Integer).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Item {
    value: String,
    params: Vec<(String, String)>,
}

impl Item {
    /// The Integer parameter `key`, when present and a non-negative Integer.
    fn int(&self, key: &str) -> Option<u64> {
        let (_, v) = self.params.iter().find(|(k, _)| k == key)?;
        integer(v)
    }
}

/// A Structured Field List (RFC 9651 section 4.2.1) of Items with parameters, as far as
/// the RateLimit fields use it: bare values are Strings or Tokens, parameter values are
/// Tokens, Integers or Strings. None when it does not parse.
fn sf_list(input: &str) -> Option<Vec<Item>> {
    let mut items = Vec::new();
    let mut rest = input.trim_matches(|c| c == ' ' || c == '\t');
    if rest.is_empty() {
        return Some(items);
    }
    loop {
        let (value, after) = bare(rest)?;
        let mut item = Item {
            value,
            params: Vec::new(),
        };
        rest = after;
        while let Some(p) = rest.strip_prefix(';') {
            let p = p.trim_start_matches(' ');
            let key_len = p
                .find(|c: char| {
                    !(c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.*".contains(c))
                })
                .unwrap_or(p.len());
            if key_len == 0 || !p.starts_with(|c: char| c.is_ascii_lowercase() || c == '*') {
                return None;
            }
            let key = p[..key_len].to_string();
            let (val, after) = match p[key_len..].strip_prefix('=') {
                Some(v) => bare(v)?,
                None => ("?1".to_string(), &p[key_len..]),
            };
            item.params.push((key, val));
            rest = after;
        }
        items.push(item);
        rest = rest.trim_start_matches([' ', '\t']);
        if rest.is_empty() {
            return Some(items);
        }
        rest = rest.strip_prefix(',')?.trim_start_matches([' ', '\t']);
        if rest.is_empty() {
            return None;
        }
    }
}

/// A bare item at the start of `s`: a String (its text, escapes undone), or a Token or
/// Integer (as written); and what follows it.
fn bare(s: &str) -> Option<(String, &str)> {
    if let Some(body) = s.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return Some((out, &body[i + 1..])),
                '\\' => match chars.next() {
                    Some((_, e @ ('"' | '\\'))) => out.push(e),
                    _ => return None,
                },
                c if (' '..='~').contains(&c) => out.push(c),
                _ => return None,
            }
        }
        return None;
    }
    if let Some(body) = s.strip_prefix(':') {
        // A Byte Sequence (`pk`): base64 between colons, kept as written.
        let end = body.find(':')?;
        let b64 = |b: u8| b.is_ascii_alphanumeric() || b"+/=".contains(&b);
        return body.as_bytes()[..end]
            .iter()
            .all(|&b| b64(b))
            .then(|| (s[..end + 2].to_string(), &body[end + 1..]));
    }
    let end = s.find([';', ',', ' ', '\t']).unwrap_or(s.len());
    let (word, after) = s.split_at(end);
    let token = word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '*')
        && word
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"\"(),;<=>?@[\\]{}".contains(&b));
    let digits = word.strip_prefix('-').unwrap_or(word);
    let number = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && word.len() <= 16;
    (token || number).then(|| (word.to_string(), after))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-01-01T00:00:00Z.
    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn quota(pairs: &[(&str, &str)]) -> Option<Quota> {
        read(&h(pairs), now()).quota
    }

    fn s(n: u64) -> Option<Duration> {
        Some(Duration::from_secs(n))
    }

    #[test]
    fn ietf_fields_with_their_policy() {
        let q = quota(&[
            ("RateLimit-Policy", "\"default\";q=100;w=60"),
            ("RateLimit", "\"default\";r=3;t=20"),
        ])
        .expect("a quota");
        assert_eq!(
            q,
            Quota {
                limit: Some(100),
                remaining: 3,
                reset: s(20),
                dialect: Dialect::Ietf
            }
        );
    }

    #[test]
    fn ietf_the_scarcest_policy_governs_and_the_window_stands_in_for_t() {
        let q = quota(&[
            (
                "RateLimit-Policy",
                "\"burst\";q=10;w=1, \"day\";q=1000;w=86400",
            ),
            ("RateLimit", "\"burst\";r=9;t=1, \"day\";r=2"),
        ])
        .expect("a quota");
        assert_eq!((q.limit, q.remaining, q.reset), (Some(1000), 2, s(86400)));
        // Tokens as names, a policy sent in two field lines, a parameter without a value.
        let q = quota(&[
            ("ratelimit-policy", "a;q=5"),
            ("ratelimit-policy", "b;q=7;w=9"),
            ("ratelimit", "b;r=0;t=4;pk=:cHJvamVjdDEyMw==:, a;r=0;t=2;x"),
        ]);
        // `pk`'s Byte Sequence is skipped over.
        let q = q.expect("a quota");
        assert_eq!((q.limit, q.remaining, q.reset), (Some(7), 0, s(4)));
    }

    #[test]
    fn ietf_without_a_policy_has_no_limit_and_without_r_is_ignored() {
        let q = quota(&[("RateLimit", "\"x\";r=1;t=5")]).expect("a quota");
        assert_eq!((q.limit, q.remaining, q.reset), (None, 1, s(5)));
        let r = read(&h(&[("RateLimit", "\"x\";t=5")]), now());
        assert_eq!(r.quota, None);
        assert_eq!(r.invalid.len(), 1);
    }

    #[test]
    fn ietf_malformed_lists_are_said_not_read_as_zero() {
        for v in ["\"x;r=1", "x;r=-1", "x;r=a", ",", "x;r=1,", "x;=1", "x;R=1"] {
            let r = read(&h(&[("RateLimit", v)]), now());
            assert_eq!(r.quota, None, "{v:?}");
            assert_eq!(r.invalid.len(), 1, "{v:?}");
            assert!(r.invalid[0].to_string().contains("RateLimit"), "{v:?}");
        }
    }

    #[test]
    fn older_draft_reset_is_delta_seconds() {
        let q = quota(&[
            ("RateLimit-Limit", "100, 100;w=60"),
            ("RateLimit-Remaining", "0"),
            ("RateLimit-Reset", "2"),
        ])
        .expect("a quota");
        assert_eq!(
            q,
            Quota {
                limit: Some(100),
                remaining: 0,
                reset: s(2),
                dialect: Dialect::Older
            }
        );
        // A reset that looks like an epoch time is still delta seconds in this dialect.
        let q = quota(&[
            ("RateLimit-Remaining", "1"),
            ("RateLimit-Reset", "1767225660"),
        ]);
        assert_eq!(q.and_then(|q| q.reset), s(HUGE_SECONDS.min(1_767_225_660)));
    }

    #[test]
    fn prefixed_reset_epoch_or_delay() {
        let at = |v: &str| {
            quota(&[("X-RateLimit-Remaining", "5"), ("X-RateLimit-Reset", v)]).and_then(|q| q.reset)
        };
        // An epoch time a minute ahead (GitHub), with a fraction (Discord).
        assert_eq!(at("1767225660"), s(60));
        assert_eq!(at("1767225660.5"), Some(Duration::from_millis(60_500)));
        // An epoch time in the past means now; less than a day in the past too.
        assert_eq!(at("1767225000"), s(0));
        assert_eq!(at("1767139201"), s(0));
        // Below now less a day: a delay.
        assert_eq!(at("30"), s(30));
        assert_eq!(at("1767139199"), s(1_767_139_199.min(HUGE_SECONDS)));
    }

    #[test]
    fn prefixed_fields_read_with_their_limit() {
        let q = quota(&[
            ("x-ratelimit-limit", "60"),
            ("x-ratelimit-remaining", "59"),
            ("x-ratelimit-reset", "1767229200"),
        ])
        .expect("a quota");
        assert_eq!(
            q,
            Quota {
                limit: Some(60),
                remaining: 59,
                reset: s(3600),
                dialect: Dialect::Prefixed
            }
        );
    }

    #[test]
    fn malformed_counted_fields_are_ignored_and_said() {
        let r = read(
            &h(&[
                ("X-RateLimit-Remaining", "-1"),
                ("X-RateLimit-Reset", "soon"),
            ]),
            now(),
        );
        assert_eq!(r.quota, None);
        assert_eq!(r.invalid.len(), 2);
        // A bad reset leaves the reset unknown; the remaining count stands.
        let r = read(
            &h(&[("RateLimit-Remaining", "4"), ("RateLimit-Reset", "1.5")]),
            now(),
        );
        assert_eq!(r.quota.map(|q| (q.remaining, q.reset)), Some((4, None)));
        assert_eq!(r.invalid.len(), 1);
        for v in ["", "1.", "1.2.3", "+3", "1e3"] {
            assert_eq!(epoch_or_delay(v, now()), None, "{v:?}");
        }
    }

    #[test]
    fn the_first_dialect_present_wins_and_none_is_nothing() {
        let q = quota(&[
            ("X-RateLimit-Remaining", "50"),
            ("RateLimit-Remaining", "40"),
            ("RateLimit", "p;r=30"),
        ]);
        assert_eq!(
            q.map(|q| (q.remaining, q.dialect)),
            Some((30, Dialect::Ietf))
        );
        let q = quota(&[
            ("X-RateLimit-Remaining", "50"),
            ("RateLimit-Remaining", "40"),
        ]);
        assert_eq!(q.map(|q| q.dialect), Some(Dialect::Older));
        assert_eq!(read(&h(&[("Retry-After", "5")]), now()), Reading::default());
        // Huge counts saturate rather than wrap or fail.
        let q = quota(&[("RateLimit-Remaining", "99999999999999999999999")]);
        assert_eq!(q.map(|q| q.remaining), Some(HUGE_SECONDS));
    }
}
