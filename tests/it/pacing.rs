//! Rate limits: the per-origin hold and pacing from the RateLimit fields (three dialects)
//! in a single run, and rate limiting kept off the retry budget.

use crate::common::*;
use std::process::Output;
use std::time::Duration;

/// A step answering `status` with these headers.
fn answer(status: u16, headers: &[(&str, &str)]) -> Step {
    let body: &[u8] = if status == 200 { b"ok" } else { b"" };
    Step::with_headers(status, headers, body)
}

/// Lines of the text log that contain `what`.
fn lines_with(out: &std::process::Output, what: &str) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.contains(what))
        .map(String::from)
        .collect()
}

/// A state file in a fresh folder (kept alive by the returned guard).
fn state_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temp folder");
    let f = dir.path().join("state.json");
    let f = f.to_str().expect("utf-8").to_string();
    (dir, f)
}

#[test]
fn a_429_is_retried_without_budget_but_a_503_is_refused() {
    let (_dir, f) = state_file();
    let budget = ["--state", &f, "--retry-budget", "0", "--budget-floor", "0"];
    // A 429 without a Retry-After (waited out by the backoff), then one with a hint.
    let s = Server::start(vec![
        Step::status(429, ""),
        Step::with_header(429, "Retry-After", "1"),
        Step::status(200, "ok"),
    ])
    .expect("a server");
    let mut args = budget.to_vec();
    args.extend(FAST);
    let url = s.url("/");
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 3);
    // The same budget refuses the retry of a 503: that is an outage.
    let s = Server::start(vec![Step::status(503, ""), Step::status(200, "ok")]).expect("a server");
    let url = s.url("/");
    args.pop();
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
    assert!(stderr(&out).contains("retry budget"), "{}", stderr(&out));
}

#[test]
fn a_spent_quota_is_not_charged_to_the_budget() {
    let (_dir, f) = state_file();
    let s = Server::start(vec![
        answer(
            503,
            &[("RateLimit-Remaining", "0"), ("RateLimit-Reset", "1")],
        ),
        Step::status(200, "ok"),
    ])
    .expect("a server");
    let url = s.url("/");
    let mut args = vec!["--state", &f, "--retry-budget", "0", "--budget-floor", "0"];
    args.extend(FAST);
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2);
}

/// The real binary holds a spent quota until its reset: "none left, reset in 1 s" (the
/// least a server can say) on a 503 holds the next attempt that long, though the backoff is
/// a millisecond; the hold is said once. Each dialect, the reset as seconds and as a Unix
/// time, to the microsecond: `request::clock_tests::each_dialect_holds_a_spent_quota_until_its_reset`.
#[test]
fn each_dialect_holds_a_spent_quota_until_its_reset() {
    let headers = [
        ("RateLimit-Policy", "\"default\";q=10;w=60"),
        ("RateLimit", "\"default\";r=0;t=1"),
    ];
    let s = Server::start(vec![answer(503, &headers), Step::status(200, "ok")]).expect("a server");
    let mut args = FAST.to_vec();
    let url = s.url("/");
    args.push(&url);
    let (out, _) = run(&args);
    let what = headers_words(&headers);
    assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2, "{what}");
    let gap = gaps(&reqs)[0];
    assert!(
        gap >= Duration::from_millis(950),
        "{what}: waited only {gap:?}: {}",
        stderr(&out)
    );
    let held = lines_with(&out, "holding requests to ");
    assert_eq!(held.len(), 1, "{what}: {}", stderr(&out));
    assert!(held[0].contains("RateLimit: 0"), "{what}: {}", held[0]);
}

fn headers_words(headers: &[(&str, &str)]) -> String {
    headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A run (`FAST`'s policy) against a server answering 503 with `fields` twice, then 200:
/// the server, the run's output (it succeeded) and how long it took.
fn two_503_then_ok(fields: &[(&str, &str)]) -> (Server, Output, Duration) {
    let s = Server::start(vec![
        answer(503, fields),
        answer(503, fields),
        Step::status(200, "ok"),
    ])
    .expect("a server");
    let url = s.url("/");
    let mut args = FAST.to_vec();
    args.push(&url);
    let (out, took) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    (s, out, took)
}

#[test]
fn a_low_quota_spreads_attempts_and_says_why() {
    let low = [
        ("RateLimit-Limit", "10"),
        ("RateLimit-Remaining", "1"),
        ("RateLimit-Reset", "1"),
    ];
    let (s, out, took) = two_503_then_ok(&low);
    let reqs = s.requests();
    assert_eq!(reqs.len(), 3);
    // One request left for the 1 s to the reset: the second goes, the third waits for the
    // second's share of the window (the waits, to the microsecond:
    // `request::clock_tests::a_low_quota_spreads_the_attempts_to_its_reset`).
    let gap = gaps(&reqs)[1];
    assert!(gap >= Duration::from_millis(500), "waited only {gap:?}");
    let paced = lines_with(&out, "pacing: 1 of 10 requests left until the reset in ");
    assert_eq!(paced.len(), 1, "{}", stderr(&out));
    assert!(paced[0].contains("; waiting "), "{}", paced[0]);
    assert!(took < Duration::from_secs(30));
}

#[test]
fn a_malformed_field_is_ignored_with_one_line() {
    // Were "soon" read as 0, the 30 s reset would hold the run.
    let bad = [
        ("X-RateLimit-Remaining", "soon"),
        ("X-RateLimit-Reset", "30"),
    ];
    let (s, out, took) = two_503_then_ok(&bad);
    assert_eq!(s.requests().len(), 3);
    let said: Vec<String> = warnings(&out)
        .into_iter()
        .filter(|w| w.contains("X-RateLimit-Remaining"))
        .collect();
    assert_eq!(said.len(), 1, "{}", stderr(&out));
    assert!(
        said[0].contains("ignoring X-RateLimit-Remaining \"soon\""),
        "{}",
        said[0]
    );
    assert!(lines_with(&out, "holding requests").is_empty());
    assert!(took < Duration::from_secs(20), "held: {took:?}");
}

#[test]
fn a_hold_past_the_deadline_ends_at_once_with_5() {
    let s = Server::start(vec![answer(
        503,
        &[("RateLimit-Remaining", "0"), ("RateLimit-Reset", "40")],
    )])
    .expect("a server");
    let url = s.url("/");
    let mut args = vec!["--deadline", "20s"];
    args.extend(FAST);
    args.push(&url);
    let (out, took) = run(&args);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
    assert!(
        stderr(&out).contains("would end past the deadline"),
        "{}",
        stderr(&out)
    );
    assert!(
        took < Duration::from_secs(15),
        "slept into a sure failure: {took:?}"
    );
}

#[test]
fn a_spent_quota_is_shared_through_state_with_the_next_run() {
    let (_dir, f) = state_file();
    let s = Server::start(vec![
        answer(
            200,
            &[("RateLimit-Remaining", "0"), ("RateLimit-Reset", "2")],
        ),
        Step::status(200, "ok"),
    ])
    .expect("a server");
    let url = s.url("/");
    let mut args = vec!["--state", &f];
    args.extend(FAST);
    args.push(&url);
    let (first, _) = run(&args);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let (second, _) = run(&args);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    let gap = gaps(&reqs)[0];
    assert!(
        gap >= Duration::from_millis(1500),
        "the next run went after {gap:?}"
    );
    assert!(
        stderr(&second).contains("another run sharing --state"),
        "{}",
        stderr(&second)
    );
}
