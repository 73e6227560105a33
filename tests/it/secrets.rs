//! Secrets never reach stderr, in text or JSON, at any verbosity, on success or failure.

use crate::common::*;

const SECRETS: [&str; 6] = [
    "s3cretbearer",
    "k3yvalue",
    "pa55word",
    "urlpa55",
    "t0kenq",
    "sigvalu3",
];

fn check(status: u16, extra: &[&str]) {
    let s = Server::start(vec![Step::status(status, "")]).unwrap();
    let url = s
        .url("/p?access_token=t0kenq&page=2&sig=sigvalu3")
        .replace("http://", "http://bob:urlpa55@");
    for format in ["text", "json"] {
        let mut args = vec![
            "-v",
            "--log-format",
            format,
            "--attempts",
            "2",
            "--base",
            "1ms",
            "-H",
            "Authorization: Bearer s3cretbearer",
            "-H",
            "X-Api-Key: k3yvalue",
            "-u",
            "alice:pa55word",
        ];
        args.extend_from_slice(extra);
        args.push(&url);
        let (out, _) = run(&args);
        let err = stderr(&out);
        for secret in SECRETS {
            assert!(
                !err.contains(secret),
                "{secret} leaked ({format}, status {status}):\n{err}"
            );
        }
        assert!(err.contains("***"), "secrets are shown masked: {err}");
        assert!(
            err.contains("page=2"),
            "ordinary parameters stay visible: {err}"
        );
    }
}

#[test]
fn secrets_are_masked_on_success() {
    check(200, &[]);
}

#[test]
fn secrets_are_masked_on_failure() {
    check(503, &[]);
    check(404, &[]);
}

#[test]
fn secrets_are_masked_when_nothing_answers() {
    let url = closed_port_url().replace("http://", "http://bob:urlpa55@") + "?api_key=k3yvalue";
    let (out, _) = run(&[
        "-v",
        "--attempts",
        "2",
        "--base",
        "1ms",
        "-H",
        "Cookie: s3cretbearer",
        &url,
    ]);
    let err = stderr(&out);
    for secret in SECRETS {
        assert!(!err.contains(secret), "{secret} leaked:\n{err}");
    }
}

#[test]
fn credentials_do_not_follow_a_redirect_to_another_host() {
    let target = Server::start(vec![Step::status(200, "there")]).unwrap();
    let origin = Server::start(vec![Step::with_header(
        302,
        "Location",
        &target.url("/landing"),
    )])
    .unwrap();
    let (out, _) = run(&[
        "-L",
        "-H",
        "Authorization: Bearer s3cretbearer",
        "-H",
        "X-Trace: 1",
        &origin.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = target.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].header("authorization"),
        None,
        "credentials forwarded to another host"
    );
    assert_eq!(reqs[0].header("x-trace"), Some("1"));
    assert!(origin.requests()[0].header("authorization").is_some());
}

#[test]
fn insecure_says_so() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&["-k", &s.url("/")]);
    assert!(
        stderr(&out).contains("verification is off"),
        "{}",
        stderr(&out)
    );
}
