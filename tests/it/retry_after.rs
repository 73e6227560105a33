//! Retry-After in both forms, clamping, and the deadline rule.

use crate::common::*;
use std::time::{Duration, SystemTime};

/// The real binary waits a Retry-After of a second, the least a server can ask, in real
/// time (the rule over statuses, spreads and seeds, to the microsecond:
/// `request::clock_tests::the_retry_after_seconds_are_waited_and_the_spread_only_added`).
#[test]
fn waits_at_least_as_asked_then_succeeds() {
    let s = Server::start(vec![
        Step::with_header(503, "Retry-After", "1"),
        Step::status(200, "up"),
    ])
    .unwrap();
    let (out, took) = run(&[
        "--base",
        "1ms",
        "--retry-after-spread",
        "200ms",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"up");
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    for g in gaps(&reqs) {
        assert!(
            g >= Duration::from_secs(1),
            "waited {g:?}, less than Retry-After: 1"
        );
    }
    assert!(took < Duration::from_secs(10));
    assert!(
        attempt_lines(&out)[0].contains("(Retry-After: 1"),
        "{}",
        stderr(&out)
    );
}

/// An HTTP-date is counted from the machine's date (the waits it makes, to the
/// microsecond: `request::clock_tests::an_http_date_retry_after_is_waited_until_its_date`).
#[test]
fn http_date_form_is_honoured() {
    let when = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
    let s = Server::start(vec![
        Step::with_header(503, "Retry-After", &when),
        Step::status(200, "up"),
    ])
    .unwrap();
    let (out, _) = run(&["--base", "1ms", "--retry-after-spread", "0", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let g = gaps(&s.requests())[0];
    // The date has one-second resolution: at least one of the two seconds remains.
    assert!(
        g >= Duration::from_secs(1) - Duration::from_millis(50),
        "waited only {g:?}"
    );
}

#[test]
fn hint_beyond_the_deadline_stops_at_once_with_exit_5() {
    let s = Server::start(vec![Step::with_header(503, "Retry-After", "30")]).unwrap();
    let (out, took) = run(&["--deadline", "5s", &s.url("/")]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
    assert!(
        took < Duration::from_secs(3),
        "slept into a sure failure: {took:?}"
    );
    assert!(
        stderr(&out).contains("past the deadline"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn long_hint_is_clamped_and_logged() {
    let s = Server::start(vec![
        Step::with_header(429, "Retry-After", "3600"),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let (out, took) = run(&[
        "--max-retry-after",
        "1s",
        "--retry-after-spread",
        "0",
        "--base",
        "1ms",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = &attempt_lines(&out)[0];
    assert!(line.contains("clamped to --max-retry-after 1s"), "{line}");
    assert!(gaps(&s.requests())[0] >= Duration::from_secs(1));
    assert!(took < Duration::from_secs(10));
}

#[test]
fn unparseable_hint_is_warned_about_and_backoff_applies() {
    let s = Server::start(vec![
        Step::with_header(503, "Retry-After", "soon"),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let (out, _) = run_fast(&[], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning: ignoring Retry-After \"soon\""),
        "{err}"
    );
    assert!(attempt_lines(&out)[0].contains("backoff"), "{err}");
}

#[test]
fn spread_is_added_after_the_hint_but_never_shortens_it() {
    let s = Server::start(vec![
        Step::with_header(503, "Retry-After", "1"),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let (out, _) = run(&[
        "--log-format",
        "json",
        "--seed",
        "5",
        "--base",
        "1ms",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let a = &json_lines(&out, "attempt")[0];
    let wait = a["wait_ms"].as_u64().unwrap();
    assert!((1000..=2000).contains(&wait), "{a}");
    assert_eq!(a["wait_reason"], "retry-after");
    assert_eq!(a["retry_after"], "1");
    assert!(gaps(&s.requests())[0] >= Duration::from_millis(wait));
}

/// The real binary keeps its promises: a clamped hint of 1s plus up to 1s of spread,
/// against a 2s deadline: the spread may be trimmed, but a logged "retry in" must always be
/// followed by that attempt (over many seeds, to the microsecond:
/// `request::clock_tests::every_promised_retry_is_made_before_the_deadline`).
#[test]
fn every_promised_retry_happens_before_the_deadline() {
    let runs: Vec<_> = (1..=2)
        .map(|seed| {
            std::thread::spawn(move || {
                let s = Server::start(vec![Step::with_header(503, "Retry-After", "5")]).unwrap();
                let url = s.url("/");
                let seed = seed.to_string();
                let (out, took) = run(&[
                    "--seed",
                    &seed,
                    "--deadline",
                    "2s",
                    "--max-retry-after",
                    "1s",
                    "--base",
                    "1ms",
                    &url,
                ]);
                (out, took, s.requests().len())
            })
        })
        .collect();
    for r in runs {
        let (out, took, requests) = r.join().unwrap();
        assert_eq!(code(&out), 5, "{}", stderr(&out));
        let promised = stderr(&out).matches("; retry in ").count();
        assert_eq!(
            requests,
            promised + 1,
            "a promised retry never happened:\n{}",
            stderr(&out)
        );
        assert!(took < Duration::from_millis(2600), "{took:?}");
    }
}
