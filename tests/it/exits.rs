//! The exit-code contract, against scripted servers.

use crate::common::*;
use std::time::Duration;

#[test]
fn success_at_once_prints_the_body() {
    let s = Server::start(vec![Step::status(200, "hello\n")]).unwrap();
    let (out, _) = run(&[&s.url("/x")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"hello\n");
    assert_eq!(s.requests().len(), 1);
    assert_eq!(attempt_lines(&out).len(), 1);
    assert!(
        attempt_lines(&out)[0].contains("attempt 1/6 GET"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn not_found_is_one_request_and_exit_3() {
    let s = Server::start(vec![Step::status(404, "nope")]).unwrap();
    let (out, _) = run(&[&s.url("/missing")]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
    assert!(out.stdout.is_empty(), "an error body never reaches stdout");
    assert!(
        stderr(&out).contains("not in --retry-on"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn always_503_makes_exactly_n_requests_and_exit_4() {
    let s = Server::start(vec![Step::status(503, "down")]).unwrap();
    let mut args = vec!["--attempts", "4"];
    args.extend(FAST);
    let url = s.url("/");
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 4);
    assert_eq!(attempt_lines(&out).len(), 4);
    assert!(
        stderr(&out).contains("attempts exhausted"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn one_attempt_and_a_503_is_exit_4() {
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let (out, _) = run(&["--attempts", "1", &s.url("/")]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn retry_on_replaces_the_default() {
    let s = Server::start(vec![Step::status(503, ""), Step::status(200, "ok")]).unwrap();
    let (out, _) = run(&["--retry-on", "429", &s.url("/")]);
    assert_eq!(code(&out), 3, "503 is no longer retried: {}", stderr(&out));
    let s = Server::start(vec![Step::status(418, ""), Step::status(200, "ok")]).unwrap();
    let mut args = vec!["--retry-on", "4xx"];
    args.extend(FAST);
    let url = s.url("/");
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2);
}

#[test]
fn connection_refused_is_retried() {
    let url = closed_port_url();
    let mut args = vec!["--attempts", "3"];
    args.extend(FAST);
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let lines = attempt_lines(&out);
    assert_eq!(lines.len(), 3, "{}", stderr(&out));
    assert!(lines[0].contains("connection refused"), "{}", lines[0]);
}

#[test]
fn reset_then_success() {
    let s = Server::start(vec![Step::Reset, Step::status(200, "fine")]).unwrap();
    let (out, _) = run_fast(&[], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"fine");
    assert!(attempt_lines(&out)[0].contains("reset"), "{}", stderr(&out));
}

#[test]
fn per_attempt_timeout_fails_each_attempt() {
    let s = Server::start(vec![Step::Hang]).unwrap();
    let mut args = vec!["--timeout", "300ms", "--attempts", "2"];
    args.extend(FAST);
    let url = s.url("/");
    args.push(&url);
    let (out, took) = run(&args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2);
    assert!(took >= Duration::from_millis(600), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn deadline_caps_a_server_that_never_answers() {
    let s = Server::start(vec![Step::Hang]).unwrap();
    let (out, took) = run(&["--deadline", "1s", &s.url("/")]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn stalled_body_is_retried() {
    let s = Server::start(vec![
        Step::Stall {
            body: b"par".to_vec(),
            declared: 10,
            pause: Duration::from_secs(5),
        },
        Step::status(200, "0123456789"),
    ])
    .unwrap();
    let mut args = vec!["--stall-timeout", "300ms"];
    args.extend(FAST);
    let url = s.url("/");
    args.push(&url);
    let (out, took) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        out.stdout, b"0123456789",
        "no byte of the stalled attempt reaches stdout"
    );
    assert!(
        attempt_lines(&out)[0].contains("stalled"),
        "{}",
        stderr(&out)
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[test]
fn truncated_body_is_a_failed_attempt() {
    let s = Server::start(vec![
        Step::Truncate {
            declared: 100,
            body: b"short".to_vec(),
        },
        Step::status(200, "complete"),
    ])
    .unwrap();
    let (out, _) = run_fast(&[], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"complete");
    assert_eq!(s.requests().len(), 2);
}

#[test]
fn garbage_status_line_is_a_protocol_error_exit_6() {
    let s = Server::start(vec![Step::Raw(b"HELLO THERE\r\n\r\n".to_vec())]).unwrap();
    let (out, _) = run(&[&s.url("/")]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn demo_runs_end_to_end() {
    let (out, _) = run(&["demo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = attempt_lines(&out);
    assert_eq!(lines.len(), 4, "{}", stderr(&out));
    assert!(
        lines[0].contains("503") && lines[0].contains("Retry-After: 1"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("429"));
    assert!(lines[2].contains("reset"));
    assert!(lines[3].contains("200 OK"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello"));
}

#[test]
fn zero_time_limits_mean_no_limit_as_in_curl() {
    let s = Server::start(vec![Step::Stall {
        body: vec![],
        declared: 0,
        pause: Duration::from_millis(300),
    }])
    .unwrap();
    let url = s.url("/");
    for flags in [
        &["-m", "0"][..],
        &["--timeout", "0"],
        &["--connect-timeout", "0"],
        &["--deadline", "0"],
    ] {
        let mut args = flags.to_vec();
        args.push(&url);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{flags:?}: {}", stderr(&out));
    }
}

#[test]
fn header_removal_and_empty_headers_follow_curl() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&[
        "-H",
        "Accept:",
        "-H",
        "User-Agent:",
        "-H",
        "X-Empty;",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = &s.requests()[0];
    assert_eq!(r.header("accept"), None);
    assert_eq!(r.header("user-agent"), None);
    assert_eq!(r.header("x-empty"), Some(""));
    let (out, _) = run(&[&s.url("/")]);
    assert_eq!(code(&out), 0);
    assert!(
        s.requests()[1]
            .header("user-agent")
            .is_some_and(|ua| ua.starts_with("retry-http/"))
    );
}

#[test]
fn broken_chunked_encoding_is_a_failed_attempt() {
    let broken = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\nZZ\r\n".to_vec();
    let s = Server::start(vec![Step::Raw(broken), Step::status(200, "whole")]).unwrap();
    let (out, _) = run_fast(&[], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        out.stdout, b"whole",
        "bytes of the broken attempt reached stdout"
    );
    assert_eq!(s.requests().len(), 2);
}
