//! Readiness conditions (`--until-status`, `--until-body`, `--until-json`,
//! `--until-header`): what makes an answer "ready", as pure decisions on its status, its
//! headers and its body. An answer that is not ready is polled again like a retryable
//! status, under the same backoff, Retry-After and deadline; the run's exit code is 8 when
//! it ends on one.
//!
//! The body is matched in bounded memory: at most `MAX_CHECKED` bytes of it are read; a
//! larger body is not ready, and the reason says so.

use crate::StatusSet;
use regex_lite::{Regex, RegexBuilder};
use serde_json::Value;

/// The most body bytes a body or JSON condition reads (1 MiB). A larger body is not ready.
pub const MAX_CHECKED: u64 = 1 << 20;

/// How long a value quoted in a "not ready" reason may be, in characters.
const QUOTE_CHARS: usize = 40;

/// Every condition the command line gave; all must hold.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    /// `--until-status`: the statuses that mean ready (`None`: a success, below 400).
    pub status: Option<StatusSet>,
    /// `--until-body`: regexes the body must match.
    pub body: Vec<Regex>,
    /// `--until-json`: RFC 6901 pointers and the JSON values the body must have there.
    pub json: Vec<(String, Value)>,
    /// `--until-header`: header names (lower case) and regexes one of their values must match.
    pub headers: Vec<(String, Regex)>,
}

/// What an answer's status says about readiness, before its body is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ByStatus {
    /// The status may be ready: read the body and check the other conditions.
    Candidate,
    /// Not ready, for this reason: the body is not needed.
    NotReady(String),
    /// Neither: an error status judged as without conditions (retried when in `--retry-on`,
    /// else the end of the run).
    Error,
}

impl Conditions {
    /// Whether any condition was given.
    pub fn any(&self) -> bool {
        self.status.is_some() || self.needs_body() || !self.headers.is_empty()
    }

    /// Whether a condition reads the body.
    pub fn needs_body(&self) -> bool {
        !self.body.is_empty() || !self.json.is_empty()
    }

    /// Judges `status`: with `--until-status`, a status in it is a candidate (even a 4xx or
    /// 5xx), one in `retry_on` stays an error (a failure, retried as today), and any other is
    /// not ready yet (404 included: a route that appears during a deploy). Without it, a
    /// status below 400 is a candidate and the rest are errors, as without conditions.
    pub fn by_status(&self, status: u16, retry_on: &StatusSet) -> ByStatus {
        match &self.status {
            Some(ready) if ready.contains(status) => ByStatus::Candidate,
            Some(_) if status >= 400 && retry_on.contains(status) => ByStatus::Error,
            Some(ready) => ByStatus::NotReady(format!(
                "{status} is not in --until-status ({})",
                ready.to_spec()
            )),
            None if status < 400 => ByStatus::Candidate,
            None => ByStatus::Error,
        }
    }

    /// Checks the header and body conditions of a candidate answer: `None` when it is
    /// ready, else why not (never quoting more of the body than a short value). `body` is
    /// the body as it will be written, at most `MAX_CHECKED` bytes (`None`: it was larger,
    /// `total` bytes).
    #[cfg(test)]
    pub fn check(
        &self,
        headers: &[(String, String)],
        body: Option<&[u8]>,
        total: u64,
    ) -> Option<String> {
        self.check_headers(headers)
            .or_else(|| self.check_body(body, total))
    }

    /// Checks the header conditions: `None` when they hold, else why not.
    pub fn check_headers(&self, headers: &[(String, String)]) -> Option<String> {
        for (name, re) in &self.headers {
            let mut values = headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
                .peekable();
            if values.peek().is_none() {
                return Some(format!("no {} header", cut(name)));
            }
            // Shown as the log shows headers: a secret's value masked, a URL's password.
            let shown: Vec<String> = values
                .clone()
                .map(|v| retry_http_redact::header_value(name, v))
                .collect();
            if !values.any(|v| re.is_match(v)) {
                return Some(format!(
                    "{} is {}, not matching {}",
                    cut(name),
                    quote(&shown.join(", ")),
                    shown_pattern(name, re)
                ));
            }
        }
        None
    }

    /// Checks the body and JSON conditions on `body` (see `check`): `None` when they hold,
    /// else why not.
    pub fn check_body(&self, body: Option<&[u8]>, total: u64) -> Option<String> {
        if !self.needs_body() {
            return None;
        }
        let Some(body) = body else {
            return Some(format!(
                "the body is {total} bytes, more than the {} KiB a condition reads",
                MAX_CHECKED >> 10
            ));
        };
        if !self.body.is_empty() {
            let text = String::from_utf8_lossy(body);
            for re in &self.body {
                if !re.is_match(&text) {
                    return Some(format!(
                        "the body does not match {}{}",
                        cut(re.as_str()),
                        anchors_hint(re.as_str())
                    ));
                }
            }
        }
        if self.json.is_empty() {
            return None;
        }
        let doc: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) => return Some("the body is not JSON".into()),
        };
        for (pointer, want) in &self.json {
            // A value under a name that marks a secret (`/token`, `/auth/api_key`,
            // `/session/user`) is not shown, as a header of that name would not be; nor is a
            // secret member inside the value shown (see `masked`).
            let secret = secret_pointer(pointer);
            let show = |v: &Value| {
                if secret {
                    retry_http_redact::MASK.to_string()
                } else {
                    short(&retry_http_redact::json_value(v))
                }
            };
            match doc.pointer(pointer) {
                None => {
                    return Some(format!("{} is missing, want {}", cut(pointer), show(want)));
                }
                Some(found) if !same(found, want) => {
                    return Some(format!(
                        "{} is {}, want {}",
                        cut(pointer),
                        show(found),
                        show(want)
                    ));
                }
                Some(_) => {}
            }
        }
        None
    }
}

/// Whether a JSON pointer names a secret: any of its names marks one (`/auth/token`,
/// `/session/id`), as a header of that name would.
pub fn secret_pointer(pointer: &str) -> bool {
    pointer.split('/').any(retry_http_redact::is_secret_name)
}

/// A `--until-header` pattern as the log may show it: `***` for a header whose name marks a
/// secret (the pattern then describes the secret), else the pattern, cut.
pub fn shown_pattern(name: &str, re: &Regex) -> String {
    if retry_http_redact::is_secret_name(name) {
        retry_http_redact::MASK.into()
    } else {
        cut(re.as_str())
    }
}

/// JSON values compared as values: numbers as numbers (1 and 1.0 are the same), two
/// integers exactly (build numbers past 2^53 included), anything else as JSON.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let int = |n: &serde_json::Number| {
                n.as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from))
            };
            match (int(x), int(y)) {
                (Some(x), Some(y)) => x == y,
                _ => match (x.as_f64(), y.as_f64()) {
                    (Some(x), Some(y)) => x == y,
                    _ => x == y,
                },
            }
        }
        _ => a == b,
    }
}

/// A JSON value as the log shows it, cut to about `QUOTE_CHARS` characters.
fn short(v: &Value) -> String {
    cut(&v.to_string())
}

/// A header value, quoted and cut.
fn quote(s: &str) -> String {
    cut(&Value::String(s.to_string()).to_string())
}

fn cut(s: &str) -> String {
    if s.chars().count() <= QUOTE_CHARS {
        return s.to_string();
    }
    let head: String = s.chars().take(QUOTE_CHARS).collect();
    format!("{head}...")
}

/// Reads `--until-json POINTER=VALUE`: split at the first `=`; the pointer must begin with
/// `/` (RFC 6901 section 3; a key containing `=` cannot be named); the value is JSON when
/// it parses as JSON, else a string.
pub fn parse_json(spec: &str) -> Result<(String, Value), String> {
    let Some((pointer, value)) = spec.split_once('=') else {
        return Err(format!(
            "--until-json {spec}: expected POINTER=VALUE, such as /status=green (a key that contains = cannot be named)"
        ));
    };
    if !pointer.starts_with('/') {
        return Err(format!(
            "--until-json {spec}: the pointer must begin with / (RFC 6901), such as /status=green"
        ));
    }
    if let Some(bad) = bad_escape(pointer) {
        return Err(format!(
            "--until-json {spec}: {bad} in the pointer (RFC 6901 escapes only ~0 for ~ and ~1 for /)"
        ));
    }
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
    Ok((pointer.to_string(), value))
}

/// A `~` not followed by `0` or `1`.
fn bad_escape(pointer: &str) -> Option<String> {
    let b = pointer.as_bytes();
    (0..b.len())
        .find(|&i| b[i] == b'~' && !matches!(b.get(i + 1), Some(b'0' | b'1')))
        .map(|i| format!("~ at byte {i} is not ~0 or ~1"))
}

/// Reads a regex of `flag`: the regex crate's syntax, as regex-lite reads it (no Unicode
/// classes such as `\p{Greek}`; `\w`, `\d`, `\s`, `\b` and `(?i)` are ASCII). regex-lite
/// costs a sixth of the full engine in the binary, and a health check's pattern needs none
/// of what it leaves out.
pub fn parse_regex(flag: &str, spec: &str) -> Result<Regex, String> {
    Regex::new(spec).map_err(|e| {
        let first = e.to_string();
        let why = first.lines().last().unwrap_or("not a valid regex").trim();
        format!(
            "{flag} {spec}: not a valid regex ({why}; the syntax is the regex crate's, without Unicode classes)"
        )
    })
}

/// Reads `--until-body REGEX` as [`parse_regex`] does, in multi-line mode with CRLF line
/// ends: `^` and `$` match at the start and the end of every line of the body (a line ends
/// at `\n` or `\r\n`, or at the body's end), so `^v2$` matches the body `v2\n` that
/// `echo v2` serves, and `^ready$` a line of a longer page; `\A` and `\z` match only at the
/// body's start and end (`\Av2\n?\z`: the whole body); `(?-m)` at the start of the pattern
/// gives back the whole-text meaning of `^` and `$`.
pub fn parse_body_regex(spec: &str) -> Result<Regex, String> {
    RegexBuilder::new(spec)
        .multi_line(true)
        .crlf(true)
        .build()
        .map_err(|_| {
            parse_regex("--until-body", spec).err().unwrap_or_else(|| {
                format!("--until-body {spec}: not a valid regex (the syntax is the regex crate's)")
            })
        })
}

/// What a pattern with anchors is told when the body does not match: how `^` and `$` read a
/// body here (see [`parse_body_regex`]). Nothing for a pattern without them.
fn anchors_hint(pattern: &str) -> &'static str {
    if pattern.contains(['^', '$']) || pattern.contains("\\A") || pattern.contains("\\z") {
        " (^ and $ match at each line's start and end; \\A and \\z at the body's)"
    } else {
        ""
    }
}

/// Reads `--until-header 'NAME: REGEX'`.
pub fn parse_header(spec: &str) -> Result<(String, Regex), String> {
    let Some((name, re)) = spec.split_once(':') else {
        return Err(format!(
            "--until-header {spec}: expected 'NAME: REGEX', such as 'X-Version: ^2\\.'"
        ));
    };
    let name = name.trim();
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err(format!(
            "--until-header {spec}: the header name must be a token (letters, digits, -), such as X-Version"
        ));
    }
    Ok((
        name.to_ascii_lowercase(),
        parse_regex("--until-header", re.trim())?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry_on() -> StatusSet {
        StatusSet::from_ranges(vec![(429, 429), (500, 504)])
    }

    fn with_json(specs: &[&str]) -> Conditions {
        Conditions {
            json: specs
                .iter()
                .map(|s| parse_json(s).expect("valid"))
                .collect(),
            ..Conditions::default()
        }
    }

    #[test]
    fn a_json_document_held_in_a_string_is_masked_as_that_document() {
        let body = br#"{"s":"{\"password\":\"S6x\",\"n\":[{\"api_key\":\"S7x\"}]}","t":"plain"}"#;
        let why = with_json(&["/s=x"])
            .check_body(Some(body), 0)
            .expect("not ready");
        assert!(!why.contains("S6x") && !why.contains("S7x"), "{why}");
        assert!(why.contains(r#"api_key\":\"***"#), "{why}");
        let why = with_json(&["/t=x"])
            .check_body(Some(body), 0)
            .expect("not ready");
        assert!(why.contains("plain"), "{why}");
    }

    #[test]
    fn secret_members_are_masked_at_any_depth() {
        let body = br#"{"user":{"name":"bob","password":"S1","keys":[{"api_key":"S2"}],
            "home":"http://u:S3x@h/","Token":{"v":"S4"}},"auth":{"session":{"id":"S5"}}}"#;
        for spec in [
            "/user=alice",
            "/auth/session/id=x",
            "/auth=x",
            "/user/keys=[]",
        ] {
            let why = with_json(&[spec])
                .check_body(Some(body), 0)
                .expect("not ready");
            for secret in ["S1", "S2", "S3x", "S4", "S5"] {
                assert!(!why.contains(secret), "{spec}: {why}");
            }
        }
        // What is not a secret stays readable.
        let why = with_json(&["/user=alice"])
            .check_body(Some(body), 0)
            .expect("not ready");
        assert!(
            why.starts_with(r#"/user is {"Token":"***","home":"http://u:***@h/""#),
            "{why}"
        );
        let why = with_json(&["/user/name=alice"])
            .check_body(Some(body), 0)
            .expect("not ready");
        assert_eq!(why, r#"/user/name is "bob", want "alice""#);
    }

    #[test]
    fn the_status_decides_first() {
        let none = Conditions::default();
        assert_eq!(none.by_status(200, &retry_on()), ByStatus::Candidate);
        assert_eq!(none.by_status(404, &retry_on()), ByStatus::Error);
        let c = Conditions {
            status: Some(StatusSet::from_ranges(vec![(200, 200), (418, 418)])),
            ..Conditions::default()
        };
        assert_eq!(c.by_status(418, &retry_on()), ByStatus::Candidate);
        assert_eq!(c.by_status(503, &retry_on()), ByStatus::Error);
        assert!(matches!(
            c.by_status(404, &retry_on()),
            ByStatus::NotReady(why) if why == "404 is not in --until-status (200,418)"
        ));
        assert!(matches!(
            c.by_status(204, &retry_on()),
            ByStatus::NotReady(_)
        ));
    }

    #[test]
    fn json_values_are_compared_as_values() {
        let c = with_json(&["/status=green", "/n=1", "/ok=true", "/nodes/0/state=\"up\""]);
        let ready = br#"{"status":"green","n":1.0,"ok":true,"nodes":[{"state":"up"}]}"#;
        assert_eq!(c.check(&[], Some(ready), 0), None);
        let yellow = br#"{"status":"yellow","n":1,"ok":true,"nodes":[{"state":"up"}]}"#;
        assert_eq!(
            c.check(&[], Some(yellow), 0).as_deref(),
            Some("/status is \"yellow\", want \"green\"")
        );
        let c = with_json(&["/ok=true"]);
        assert_eq!(
            c.check(&[], Some(br#"{"ok":"true"}"#), 0).as_deref(),
            Some("/ok is \"true\", want true"),
            "a string is not a boolean"
        );
        assert_eq!(
            c.check(&[], Some(b"{}"), 0).as_deref(),
            Some("/ok is missing, want true")
        );
        assert_eq!(
            c.check(&[], Some(b"<html>"), 0).as_deref(),
            Some("the body is not JSON")
        );
        assert_eq!(
            c.check(&[], None, 5 << 20).as_deref(),
            Some("the body is 5242880 bytes, more than the 1024 KiB a condition reads")
        );
        let big = with_json(&["/n=9007199254740992"]);
        assert!(
            big.check(&[], Some(br#"{"n":9007199254740993}"#), 0)
                .is_some(),
            "integers are compared exactly"
        );
        let secret = with_json(&["/auth/api_key=x"]);
        assert_eq!(
            secret
                .check(&[], Some(br#"{"auth":{"api_key":"sk_live_123"}}"#), 0)
                .as_deref(),
            Some("/auth/api_key is ***, want ***")
        );
        let long = format!(r#"{{"ok":"{}"}}"#, "x".repeat(100));
        let why = c.check(&[], Some(long.as_bytes()), 0).expect("not ready");
        assert!(why.len() < 80 && why.contains("..."), "{why}");
    }

    #[test]
    fn json_specs_split_at_the_first_equals_sign() {
        assert_eq!(
            parse_json("/a=b=c").expect("valid"),
            ("/a".to_string(), Value::String("b=c".into()))
        );
        assert_eq!(parse_json("/a/~1b=2").expect("valid").1, Value::from(2));
        for bad in ["status=green", "/status", "/a~2=1", "=x"] {
            assert!(parse_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_and_bodies_match_regexes_without_quoting_the_body() {
        let c = Conditions {
            body: vec![parse_body_regex("ready|done").expect("valid")],
            headers: vec![parse_header("X-Version: ^2\\.").expect("valid")],
            ..Conditions::default()
        };
        let h = |v: &str| vec![("X-Version".to_string(), v.to_string())];
        assert_eq!(c.check(&h("2.1"), Some(b"job done"), 0), None);
        assert_eq!(
            c.check(&h("1.9"), Some(b"job done"), 0).as_deref(),
            Some("x-version is \"1.9\", not matching ^2\\.")
        );
        assert_eq!(
            c.check(&[], Some(b"job done"), 0).as_deref(),
            Some("no x-version header")
        );
        assert_eq!(
            c.check(&h("2.0"), Some(b"secret-token starting"), 0)
                .as_deref(),
            Some("the body does not match ready|done")
        );
        let cookie = Conditions {
            headers: vec![parse_header("Set-Cookie: nomatch").expect("valid")],
            ..Conditions::default()
        };
        let set = vec![("Set-Cookie".to_string(), "sid=SECRET".to_string())];
        assert_eq!(
            cookie.check(&set, None, 0).as_deref(),
            // The pattern for a secret header describes the secret: not shown either.
            Some("set-cookie is \"***\", not matching ***")
        );
        let long = Conditions {
            body: vec![parse_body_regex(&"x".repeat(500)).expect("valid")],
            ..Conditions::default()
        };
        let why = long.check(&[], Some(b"y"), 1).expect("not ready");
        assert!(why.len() < 100, "{why}");
        assert!(parse_body_regex("(").is_err());
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("Bad Name: x").is_err());
    }

    #[test]
    fn anchors_match_at_the_lines_of_a_body() {
        let ready = |pattern: &str, body: &[u8]| {
            let c = Conditions {
                body: vec![parse_body_regex(pattern).expect("valid")],
                ..Conditions::default()
            };
            c.check(&[], Some(body), body.len() as u64)
        };
        // Every line end a server writes, with and without a last newline, before or after
        // other lines: ^v2$ finds the line v2.
        for body in [
            &b"v2"[..],
            b"v2\n",
            b"v2\r\n",
            b"v1\nv2\n",
            b"v1\r\nv2\r\nv3\r\n",
            b"\nv2",
        ] {
            assert_eq!(ready("^v2$", body), None, "{body:?}");
        }
        for body in [&b"v20\n"[..], b"xv2\n", b"v2 \n", b""] {
            let why = ready("^v2$", body).expect("not ready");
            assert!(why.contains("^ and $ match at each line"), "{why}");
        }
        // \A and \z keep the whole body.
        assert_eq!(ready("\\Av2\\n?\\z", b"v2\n"), None);
        assert!(ready("\\Av2\\z", b"v2\n").is_some());
        assert!(ready("\\Av2\\n?\\z", b"v1\nv2\n").is_some());
        // (?-m) gives ^ and $ their whole-text meaning back.
        assert!(ready("(?-m)^v2$", b"v2\n").is_some());
        assert_eq!(ready("(?-m)^v2\n$", b"v2\n"), None);
        // A pattern without anchors is not taught about them.
        let why = ready("ready", b"starting\n").expect("not ready");
        assert_eq!(why, "the body does not match ready");
    }
}
