//! The text log, word for word: fixed scripts run with `--seed`, their stderr compared with
//! the golden files in `tests/it/golden/`. `RETRY_HTTP_REGENERATE=1 cargo test --test it
//! golden` rewrites them (then read the diff before committing it).
//!
//! Only what the clock measured is replaced: how long an attempt or the run took (`in
//! 973us` becomes `in <took>`, whatever the unit), and the server's port. The waits are the
//! seed's and stay exact, and so does every word. In text a success has no summary line
//! (the closing `error:` line is written on failure only; JSON has a summary always), so
//! its golden file ends with the last attempt's line.

use crate::common::*;
use std::path::PathBuf;

/// Where the golden files live.
fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden")
}

/// The length of the duration that `s` starts with, in the form the log writes them
/// (`30us`, `12ms`, `1.25s`, `1m30s`, `2m`, `2h05m`, `24h`, `2d03h`), if it starts with one.
fn duration_len(s: &str) -> Option<usize> {
    let digits = |from: usize| s[from..].bytes().take_while(u8::is_ascii_digit).count();
    let whole = digits(0);
    if whole == 0 {
        return None;
    }
    let mut at = whole;
    if s[at..].starts_with('.') && digits(at + 1) > 0 {
        at += 1 + digits(at + 1);
    }
    let rest = &s[at..];
    let unit = ["us", "ms", "s"]
        .into_iter()
        .find(|u| rest.starts_with(u))
        .map(str::len)
        .or_else(|| {
            // 1m30s, 2h05m, 2d03h: a unit, two digits, a smaller unit.
            let b = rest.as_bytes();
            (b.len() >= 4
                && b"mhd".contains(&b[0])
                && b[1].is_ascii_digit()
                && b[2].is_ascii_digit()
                && b"smh".contains(&b[3]))
            .then_some(4)
        })
        .or_else(|| {
            // 2m, 24h, 7d: a unit alone (its smaller part is zero).
            let b = rest.as_bytes();
            (!b.is_empty()
                && b"mhd".contains(&b[0])
                && !b.get(1).is_some_and(u8::is_ascii_alphanumeric))
            .then_some(1)
        })?;
    Some(at + unit)
}

/// `text` with every measured duration replaced by `<took>` (one after " in ", except the
/// planned wait after "retry in"), every loopback port by `PORT`, and the version in the
/// User-Agent by `<version>`.
fn normalise(text: &str) -> String {
    let text = text.replace(
        &format!("retry-http/{}", env!("CARGO_PKG_VERSION")),
        "retry-http/<version>",
    );
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    loop {
        let took = rest.find(" in ");
        let port = rest.find("127.0.0.1:");
        let (at, marker) = match (took, port) {
            (Some(t), p) if p.is_none_or(|p| t < p) => (t, " in "),
            (_, Some(p)) => (p, "127.0.0.1:"),
            _ => break,
        };
        let planned = marker == " in " && rest[..at].ends_with("retry");
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        let (len, placeholder) = match marker {
            "127.0.0.1:" => (rest.bytes().take_while(u8::is_ascii_digit).count(), "PORT"),
            _ if planned => (0, ""),
            _ => (duration_len(rest).unwrap_or(0), "<took>"),
        };
        if len > 0 {
            out.push_str(placeholder);
        }
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

/// Runs `args` then the server's URL; returns the golden text: the command line, the
/// normalised stderr, and the exit code.
fn transcript(args: &[&str], script: Vec<Step>) -> String {
    let s = Server::start(script).unwrap();
    let url = s.url("/jobs");
    let mut all = args.to_vec();
    all.push(&url);
    let (out, _) = run(&all);
    format!(
        "$ retry-http {}\n{}exit {}\n",
        normalise(&all.join(" ")),
        normalise(&stderr(&out)),
        code(&out)
    )
}

/// Compares `fresh` with the golden file `name`, or rewrites it under
/// `RETRY_HTTP_REGENERATE=1`.
fn check(name: &str, fresh: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("RETRY_HTTP_REGENERATE").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, fresh).unwrap();
        return;
    }
    let kept = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; RETRY_HTTP_REGENERATE=1 writes it", path.display()));
    assert_eq!(
        kept,
        fresh,
        "{} differs from the log (RETRY_HTTP_REGENERATE=1 rewrites it)",
        path.display()
    );
}

#[test]
fn the_text_log_of_a_success_after_retries() {
    let fresh = transcript(
        &[
            "--seed",
            "7",
            "--base",
            "1ms",
            "--cap",
            "5ms",
            "--retry-after-spread",
            "0",
            "--max-retry-after",
            "10ms",
        ],
        vec![
            Step::with_header(503, "Retry-After", "1"),
            Step::status(429, ""),
            Step::Reset,
            Step::status(200, "done"),
        ],
    );
    assert!(fresh.ends_with("\nexit 0\n"), "{fresh}");
    check("success_after_retries.txt", &fresh);
}

#[test]
fn the_text_log_of_a_stop_on_a_non_retryable_status() {
    let fresh = transcript(
        &["-v", "--seed", "7", "--base", "1ms", "--cap", "5ms"],
        vec![Step::status(503, ""), Step::status(404, "")],
    );
    assert!(fresh.ends_with("; exit 3\nexit 3\n"), "{fresh}");
    check("stop_on_non_retryable.txt", &fresh);
}

#[test]
fn the_text_log_of_attempts_exhausted() {
    let fresh = transcript(
        &[
            "--seed",
            "7",
            "--attempts",
            "3",
            "--base",
            "1ms",
            "--cap",
            "5ms",
            "--retry-after-spread",
            "0",
        ],
        vec![
            Step::with_header(429, "Retry-After", "soon"),
            Step::status(503, ""),
            Step::Reset,
        ],
    );
    assert!(fresh.ends_with("; exit 4\nexit 4\n"), "{fresh}");
    check("attempts_exhausted.txt", &fresh);
}

#[test]
fn normalising_replaces_only_what_the_clock_measured() {
    let line = "retry-http: attempt 1/3 GET http://127.0.0.1:4567/jobs -> 503 Service Unavailable in 1.25s; retry in 30us (backoff)\n\
                retry-http: error: attempts exhausted after 3 attempts in 1m05s (last: reset in 973us); exit 4";
    assert_eq!(
        normalise(line),
        "retry-http: attempt 1/3 GET http://127.0.0.1:PORT/jobs -> 503 Service Unavailable in <took>; retry in 30us (backoff)\n\
         retry-http: error: attempts exhausted after 3 attempts in <took> (last: reset in <took>); exit 4"
    );
    for (token, len) in [
        ("12ms;", 4),
        ("2h05m ", 5),
        ("1.5s", 4),
        ("24h ", 3),
        ("2m;", 2),
        ("7d", 2),
        ("7", 0),
        ("x", 0),
        ("3 more", 0),
    ] {
        assert_eq!(duration_len(token).unwrap_or(0), len, "{token}");
    }
}
