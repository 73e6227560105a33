//! Bad command lines: one line saying what was wrong, exit 2, and no request sent.

use crate::common::*;

#[test]
fn every_bad_input_gets_one_line_and_exit_2_without_a_request() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    let dir = tempfile::tempdir().unwrap();
    let missing_dir_out = dir.path().join("no/such/dir/out.txt");
    let missing_dir_out = missing_dir_out.to_str().unwrap();
    let dir_path = dir.path().to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--attempts", "0", &url], "1 to 1000"),
        (vec!["--attempts", "many", &url], "1 to 1000"),
        (vec!["--base", "-1s", &url], "negative"),
        (vec!["--base", "5", &url], "no unit"),
        (vec!["--cap", "8 parsecs", &url], "duration"),
        (vec!["--base", "10s", "--cap", "1s", &url], "above --cap"),
        (
            vec!["--jitter", "fuzzy", &url],
            "full, equal, decorrelated, none",
        ),
        (vec!["--retry-on", "600", &url], "100 to 599"),
        (vec!["--retry-on", "503-500", &url], "low end"),
        (vec!["-H", "NoColon", &url], "colon"),
        (vec!["-H", "X-A: a\r\nX-B: b", &url], "CR or LF"),
        (vec!["ftp://example.test/"], "only http and https"),
        (vec!["http://"], "host"),
        (vec!["-X", "GET", "POST", &url], "twice"),
        (vec!["-d", "@/no/such/file", &url], "/no/such/file"),
        (vec!["-o", missing_dir_out, &url], "does not exist"),
        (vec!["-o", dir_path, &url], "is a directory"),
        (vec!["--deadline", "soon", &url], "duration"),
        (vec!["--no-such-flag", &url], "unexpected argument"),
        (vec!["-u", "alice", &url], "no password"),
        (vec!["--budget-window", "0", &url], "at least 1s"),
        (
            vec!["-o", "a", "-o", "b", "-o", "c", &url, &url],
            "3 outputs",
        ),
        (vec!["--timeout", "1s", "-m", "2", &url], "give one"),
        (vec!["-H", "Content-Length: 3", &url], "framing"),
        (
            vec!["-H", "Transfer-Encoding: chunked", "-d", "abc", &url],
            "framing",
        ),
        (
            vec!["-A", "evil\r\nX-Injected: 1", &url],
            "control character",
        ),
        (vec!["--idempotency-key", "   ", "-d", "x", &url], "empty"),
        (vec!["--deadline", "300000000000y", &url], "too long"),
        (
            vec!["--base", "300000000000y", "--cap", "300000000000y", &url],
            "too long",
        ),
        (
            vec![
                "-d",
                "@/no/such\nretry-http: attempt 1/6 GET x -> 200 OK",
                &url,
            ],
            "no/such",
        ),
        (
            vec!["http://user:pw9secret@127.0.0.1:99999/?access_token=tok7"],
            "invalid URL",
        ),
    ];
    for (args, needle) in cases {
        let (out, _) = run(&args);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line expected: {err}");
        assert!(err.starts_with("retry-http: error: "), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
        for secret in ["pw9secret", "tok7"] {
            assert!(
                !err.contains(secret),
                "{args:?}: a secret in a usage error: {err}"
            );
        }
    }
    assert_eq!(
        s.requests().len(),
        0,
        "a request was sent for a bad command line"
    );
}

#[test]
fn help_lists_the_exit_codes() {
    let (out, _) = run(&["--help"]);
    assert_eq!(code(&out), 0);
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["Exit status:", "  0  ", "  5  deadline", "130"] {
        assert!(text.contains(needle), "{needle}");
    }
}

#[test]
fn a_header_without_colon_does_not_echo_its_secret() {
    let (out, _) = run(&[
        "-H",
        "Authorization Bearer s3cretvalue",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(code(&out), 2);
    assert!(!stderr(&out).contains("s3cretvalue"), "{}", stderr(&out));
}

#[test]
fn a_flag_beats_the_variable_of_its_twin() {
    // -m on the command line wins over $RETRY_HTTP_TIMEOUT, as a flag wins over its own.
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let mut cmd = command();
    let out = cmd
        .env("RETRY_HTTP_TIMEOUT", "5s")
        .args(["-m", "2", "--explain", &s.url("/")])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2s"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_header_name_with_unicode_white_space_is_a_usage_error() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    for ws in [
        "\u{2028}", "\u{a0}", "\u{2003}", "\u{3000}", "\u{85}", "\u{feff}",
    ] {
        for h in [
            format!("Authorization{ws}: Bearer s3cretvalue"),
            format!("{ws}Authorization: Bearer s3cretvalue"),
            format!("X-Api-Key{ws};"),
            format!("Accept{ws}:"),
            format!("Bearer{ws}s3cretvalue: x"),
        ] {
            let (out, _) = run(&["-H", &h, &url]);
            let err = stderr(&out);
            assert_eq!(code(&out), 2, "{h:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{h:?}: {err}");
            assert!(err.contains("invalid header name"), "{h:?}: {err}");
            assert!(!err.contains("s3cretvalue"), "{h:?}: {err}");
        }
    }
    // ASCII spaces and tabs around the name are trimmed, as curl does.
    let (out, _) = run(&["-H", " \tX-Trace \t: 1", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1, "a request was sent for a bad header");
    assert_eq!(s.requests()[0].header("x-trace"), Some("1"));
}

#[test]
fn an_idempotency_key_given_and_removed_is_a_usage_error() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    for (h, needle) in [
        ("Idempotency-Key:", "removes it"),
        ("idempotency-key: \t", "removes it"),
        ("Idempotency-Key;", "twice"),
        ("Idempotency-Key: other", "twice"),
    ] {
        let (out, _) = run(&["--idempotency-key", "k", "-H", h, "-d", "x", &url]);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{h:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{h:?}: {err}");
        assert!(err.contains(needle), "{h:?}: {err:?} lacks {needle:?}");
    }
    assert_eq!(s.requests().len(), 0, "a request was sent");
}

#[test]
fn clap_errors_stay_on_one_line() {
    let (out, _) = run(&["--explain"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("\\n"), "{err}");
}
