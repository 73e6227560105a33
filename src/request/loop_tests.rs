//! The attempt loop, the delivery and the output, run over a scripted transport on a
//! scripted clock (see `scripted`): each test is named for the rule it checks.

use crate::exit::Outcome;
use crate::gate::between::Between;
use crate::policy::FailureKind;
use crate::policy::gate::{Clear, Outlook};
use crate::request::scripted::{Reply, answer, cut, run, run_sharing};
use std::sync::Mutex;
use std::time::Duration;

/// Fast retries: the backoff is a millisecond, without jitter or spread.
const QUICK: [&str; 6] = [
    "--base",
    "1ms",
    "--jitter",
    "none",
    "--retry-after-spread",
    "0",
];

fn with<'a>(extra: &[&'a str], url: &'a str) -> Vec<&'a str> {
    let mut args: Vec<&str> = QUICK.to_vec();
    args.extend_from_slice(extra);
    args.push(url);
    args
}

/// A scratch folder, and the `-o` file in it (not yet there).
fn out() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a folder");
    let file = dir.path().join("out").to_string_lossy().into_owned();
    (dir, file)
}

fn read(file: &str) -> Option<Vec<u8>> {
    std::fs::read(file).ok()
}

#[test]
fn a_503_is_retried_until_the_success_that_follows() {
    let (_dir, file) = out();
    let replies = vec![
        answer(503, &[], b"busy"),
        answer(503, &[], b"busy"),
        answer(200, &[("content-length", "2")], b"ok"),
    ];
    let ran = run(
        &with(&["--attempts", "5", "-o", &file], "http://h/"),
        replies,
    );
    assert_eq!(ran.outcome(), Outcome::Success);
    assert_eq!(ran.ended.attempts_made, 3);
    assert_eq!(ran.sent.len(), 3);
    assert_eq!(ran.ended.last, "200");
    assert_eq!(read(&file).as_deref(), Some(&b"ok"[..]));
}

#[test]
fn a_post_is_not_replayed_after_a_reset_mid_body() {
    let (_dir, file) = out();
    let cut_short = cut(answer(200, &[("content-length", "10")], b"0123456789"), 4);
    let args = with(&["-X", "POST", "--attempts", "5", "-o", &file], "http://h/");
    let ran = run(&args, vec![cut_short, answer(200, &[], b"again")]);
    assert_eq!(ran.outcome(), Outcome::NonRetryableTransport);
    assert_eq!(ran.sent.len(), 1, "sent once, never replayed");
    assert_eq!(ran.sent[0].method, "POST");
    assert_eq!(read(&file), None, "nothing written");
}

#[test]
fn a_post_refused_before_it_was_sent_is_replayed() {
    let args = with(&["-X", "POST", "--attempts", "3"], "http://h/");
    let replies = vec![Reply::Fail(FailureKind::Refused), answer(204, &[], b"")];
    let ran = run(&args, replies);
    assert_eq!(ran.outcome(), Outcome::Success);
    assert_eq!(ran.sent.len(), 2);
}

#[test]
fn a_retry_after_is_honoured_and_clamped_to_the_most_allowed() {
    let (_dir, file) = out();
    let replies = vec![
        answer(503, &[("retry-after", "3600")], b""),
        answer(200, &[], b"ok"),
    ];
    let args = with(&["--max-retry-after", "150ms", "-o", &file], "http://h/");
    let ran = run(&args, replies);
    assert_eq!(ran.outcome(), Outcome::Success);
    assert_eq!(ran.ended.attempts_made, 2);
    assert_eq!(ran.waits, [Duration::from_millis(150)]);
    assert_eq!(ran.ended.hint, None, "the last answer had no Retry-After");
}

#[test]
fn a_retry_after_past_the_deadline_stops_the_run_at_once() {
    let replies = vec![answer(503, &[("retry-after", "30")], b"")];
    let ran = run(&with(&["--deadline", "2s"], "http://h/"), replies);
    assert_eq!(ran.outcome(), Outcome::Deadline);
    assert_eq!(ran.sent.len(), 1);
    let why = ran.ended.why.unwrap_or_default();
    assert!(why.contains("Retry-After (30s)"), "{why}");
    assert!(ran.waits.is_empty(), "{:?}", ran.waits);
}

#[test]
fn the_deadline_stops_the_retries() {
    let (_dir, file) = out();
    let args = with(&["--deadline", "300ms", "-o", &file], "http://h/");
    let ran = run(&args, vec![answer(503, &[], b"busy")]);
    assert_eq!(ran.outcome(), Outcome::Deadline);
    assert!(ran.sent.len() > 1, "retried before the deadline");
    assert!(ran.took <= Duration::from_millis(300), "{:?}", ran.took);
    assert_eq!(read(&file), None, "no error body without --fail-with-body");
}

#[test]
fn a_body_cut_short_is_resumed_from_the_byte_it_stopped_at() {
    let (_dir, file) = out();
    let first = [
        ("content-length", "10"),
        ("etag", "\"v1\""),
        ("accept-ranges", "bytes"),
    ];
    let rest = [
        ("content-length", "6"),
        ("content-range", "bytes 4-9/10"),
        ("etag", "\"v1\""),
    ];
    let replies = vec![
        cut(answer(200, &first, b"0123456789"), 4),
        answer(206, &rest, b"456789"),
    ];
    let ran = run(
        &with(&["--attempts", "3", "-o", &file], "http://h/"),
        replies,
    );
    assert_eq!(ran.outcome(), Outcome::Success);
    let asked = &ran.sent[1].headers;
    assert!(
        asked.iter().any(|(n, v)| n == "Range" && v == "bytes=4-"),
        "{asked:?}"
    );
    assert_eq!(read(&file).as_deref(), Some(&b"0123456789"[..]));
}

#[test]
fn only_the_final_body_is_written() {
    let (_dir, file) = out();
    let replies = vec![
        answer(503, &[], b"first error"),
        cut(answer(200, &[("content-length", "9")], b"truncated"), 3),
        answer(200, &[], b"final"),
    ];
    let ran = run(
        &with(&["--attempts", "4", "-o", &file], "http://h/"),
        replies,
    );
    assert_eq!(ran.outcome(), Outcome::Success);
    assert_eq!(ran.sent.len(), 3);
    assert_eq!(read(&file).as_deref(), Some(&b"final"[..]));
    assert_eq!(ran.ended.delivered, 5);
}

#[test]
fn nothing_is_written_when_the_run_fails() {
    let (_dir, file) = out();
    let ran = run(
        &with(&["--attempts", "2", "-o", &file], "http://h/"),
        vec![answer(500, &[], b"error page")],
    );
    assert_eq!(ran.outcome(), Outcome::AttemptsExhausted);
    assert_eq!(read(&file), None);
    let ran = run(
        &with(&["-o", &file], "http://h/"),
        vec![answer(404, &[], b"not found")],
    );
    assert_eq!(ran.outcome(), Outcome::NonRetryableResponse);
    assert_eq!(ran.sent.len(), 1);
    assert_eq!(read(&file), None);
}

#[test]
fn the_error_body_is_written_under_fail_with_body() {
    let (_dir, file) = out();
    let args = with(&["--fail-with-body", "-o", &file], "http://h/");
    let ran = run(&args, vec![answer(404, &[], b"not found")]);
    assert_eq!(ran.outcome(), Outcome::NonRetryableResponse);
    assert_eq!(read(&file).as_deref(), Some(&b"not found"[..]));
}

/// A shared state that says the same of every retry, and counts the retries charged.
struct Shared {
    before: Outlook,
    charged: Mutex<u32>,
}

impl Between for Shared {
    fn outlook(&self, _: Option<Duration>) -> Outlook {
        self.before.clone()
    }

    fn send_retry(&self, charge: bool) -> Clear {
        *self.charged.lock().expect("not poisoned") += u32::from(charge);
        Clear::Go
    }

    fn answered(&self) -> Option<String> {
        None
    }

    fn probing(&self) -> bool {
        false
    }

    fn finish(&self, _: Outcome, _: Option<(u16, Option<Duration>)>, _: bool, _: (bool, bool)) {}
}

fn shared(before: Outlook) -> Shared {
    Shared {
        before,
        charged: Mutex::new(0),
    }
}

#[test]
fn a_retry_the_budget_has_no_room_for_ends_the_run_with_7() {
    let state = shared(Outlook {
        spent: Some("the retry budget is spent".into()),
        ..Outlook::default()
    });
    let replies = vec![answer(503, &[], b""), answer(200, &[], b"ok")];
    let ran = run_sharing(&with(&[], "http://h/"), replies, Some(&state));
    assert_eq!(ran.outcome(), Outcome::Refused);
    assert_eq!(ran.sent.len(), 1);
    let why = ran.ended.why.unwrap_or_default();
    assert_eq!(why, "not retried: the retry budget is spent");
    assert_eq!(*state.charged.lock().expect("not poisoned"), 0);
}

#[test]
fn a_retry_the_state_allows_is_charged_as_it_is_sent() {
    let state = shared(Outlook::default());
    let replies = vec![answer(503, &[], b""), answer(200, &[], b"ok")];
    let ran = run_sharing(&with(&[], "http://h/"), replies, Some(&state));
    assert_eq!(ran.outcome(), Outcome::Success);
    assert_eq!(*state.charged.lock().expect("not poisoned"), 1);
}

#[test]
fn a_retry_after_shared_by_other_runs_is_waited_for() {
    let state = shared(Outlook {
        held: Some(Duration::from_millis(150)),
        ..Outlook::default()
    });
    let replies = vec![answer(503, &[], b""), answer(200, &[], b"ok")];
    let ran = run_sharing(&with(&[], "http://h/"), replies, Some(&state));
    assert_eq!(ran.outcome(), Outcome::Success);
    assert_eq!(ran.waits, [Duration::from_millis(150)]);
}
