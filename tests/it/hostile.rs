//! Hostile servers: no panic, the documented exit code, and done within the deadline.

use crate::common::*;
use std::time::Duration;

/// A generous ceiling over `--deadline 1s`: the promise is 1.1 s, the bound cannot flake.
const CEILING: Duration = Duration::from_millis(2500);

fn within_deadline(step: Step, extra: &[&str]) -> std::process::Output {
    let s = Server::start(vec![step]).unwrap();
    let url = s.url("/");
    let mut args = vec!["--deadline", "1s"];
    args.extend_from_slice(extra);
    args.push(&url);
    let (out, took) = run(&args);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert!(took < CEILING, "took {took:?}: {err}");
    assert!(
        took >= Duration::from_millis(950),
        "ended before the deadline: {took:?}: {err}"
    );
    out
}

fn drip(total: usize, every: Duration) -> Step {
    Step::Stall {
        body: vec![b'a'; 1],
        declared: total,
        pause: every,
    }
}

#[test]
fn never_answers() {
    let out = within_deadline(Step::Hang, &[]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
}

#[test]
fn headers_then_stall() {
    let out = within_deadline(
        Step::Stall {
            body: vec![],
            declared: 10,
            pause: Duration::from_secs(10),
        },
        &[],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
}

#[test]
fn endless_body() {
    let out = within_deadline(Step::Generate { len: u64::MAX / 2 }, &["-o", "/dev/null"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
}

#[test]
fn body_dripping_below_the_stall_timeout() {
    let out = within_deadline(
        drip(100, Duration::from_secs(10)),
        &["--stall-timeout", "5s"],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
}

#[test]
fn redirects_forever() {
    let out = within_deadline(
        Step::with_header(302, "Location", "/again"),
        &["-L", "--max-redirs", "1000000"],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
}

#[test]
fn too_many_redirects_is_exit_6() {
    let s = Server::start(vec![Step::with_header(302, "Location", "/again")]).unwrap();
    let (out, _) = run(&["-L", "--max-redirs", "3", &s.url("/")]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 4);
}

#[test]
fn huge_header_line_and_many_headers() {
    // Over 128 KiB of head, the input buffer's size: the limit.
    let long = vec![("X-Long".to_string(), "v".repeat(200_000))];
    let many: Vec<(String, String)> = (0..20_000)
        .map(|i| (format!("X-H{i}"), "v".into()))
        .collect();
    for headers in [long, many] {
        let s = Server::start(vec![Step::Respond {
            status: 200,
            headers,
            body: b"ok".to_vec(),
        }])
        .unwrap();
        let mut args = FAST.to_vec();
        let url = s.url("/");
        args.extend(["--attempts", "2", &url]);
        let (out, _) = run(&args);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(
            code(&out),
            6,
            "an oversized header section is a protocol error: {err}"
        );
        assert_eq!(s.requests().len(), 1, "a protocol error is not retried");
        assert!(
            err.contains("the response head does not end within")
                || err.contains("too many headers"),
            "{err}"
        );
    }
}

/// An interim head (`100 Continue`, `103 Early Hints`) in the same write as the final head
/// and a large body: a valid answer, delivered whole. (ureq measured the interim head
/// against all that was buffered, and refused the answer as a head too large.) The first
/// read's size varies with timing, so it is tried a few times.
#[test]
fn an_interim_head_before_a_large_answer_in_one_write() {
    let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    for interim in [
        &b"HTTP/1.1 100 Continue\r\n\r\n"[..],
        b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n",
    ] {
        for _ in 0..4 {
            let mut raw = interim.to_vec();
            raw.extend(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            raw.extend(&body);
            let s = Server::start(vec![Step::Raw(raw)]).unwrap();
            let (out, _) = run(&["-s", "--attempts", "1", &s.url("/")]);
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            assert!(out.stdout == body, "the body differs");
        }
    }
}

#[test]
fn reset_mid_body_is_retried_and_nothing_partial_is_written() {
    let s = Server::start(vec![
        Step::Truncate {
            declared: 1_000_000,
            body: vec![b'x'; 300_000],
        },
        Step::status(200, "good"),
    ])
    .unwrap();
    let (out, _) = run_fast(&[], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"good");
}

#[test]
fn odd_retry_after_values_never_shorten_or_break_the_wait() {
    for value in ["", "-1", "1.5", "Sun, 32 Foo 1994 08:00:00 GMT"] {
        let s = Server::start(vec![
            Step::with_header(503, "Retry-After", value),
            Step::status(200, "ok"),
        ])
        .unwrap();
        let mut args = FAST.to_vec();
        let url = s.url("/");
        args.push(&url);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{value:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("ignoring Retry-After"),
            "{value:?}: {}",
            stderr(&out)
        );
    }
    // Too large to hold: read as huge, then clamped.
    let s = Server::start(vec![
        Step::with_header(503, "Retry-After", "99999999999999999999"),
        Step::status(200, ""),
    ])
    .unwrap();
    let (out, _) = run(&[
        "--max-retry-after",
        "1s",
        "--retry-after-spread",
        "0",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("clamped"), "{}", stderr(&out));
    // A past date: no extra wait.
    let s = Server::start(vec![
        Step::with_header(503, "Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT"),
        Step::status(200, ""),
    ])
    .unwrap();
    let (out, took) = run_fast(&[], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < Duration::from_secs(5));
}

/// The real binary reads every Retry-After field of an answer and waits the largest (in
/// every order, an unreadable one among them, to the microsecond:
/// `request::clock_tests::of_several_retry_after_fields_the_largest_valid_is_waited`).
#[test]
fn two_retry_after_headers_use_the_largest_valid() {
    let s = Server::start(vec![
        Step::Respond {
            status: 503,
            headers: vec![
                ("Retry-After".into(), "0".into()),
                ("Retry-After".into(), "1".into()),
            ],
            body: vec![],
        },
        Step::status(200, ""),
    ])
    .unwrap();
    let (out, _) = run(&["--retry-after-spread", "0", "--base", "1ms", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(gaps(&s.requests())[0] >= Duration::from_secs(1));
}
