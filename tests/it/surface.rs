//! The user-facing surface: --explain, -w, -I, -D, proxies, environment defaults, and curl's
//! retry flags answered with their equivalents.

use crate::common::*;

fn explain(args: &[&str]) -> String {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let url = s.url("/jobs");
    let mut all = args.to_vec();
    all.extend(["--explain", &url]);
    let (out, _) = run(&all);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 0, "--explain sent a request");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn explain_shows_the_aws_full_jitter_policy() {
    let text = explain(&[
        "--jitter",
        "full",
        "--base",
        "100ms",
        "--cap",
        "10s",
        "--attempts",
        "8",
    ]);
    assert!(text.contains("attempts      8"), "{text}");
    assert!(
        text.contains("full jitter: wait = uniform(0, ceiling)"),
        "{text}"
    );
    assert!(
        text.contains("\n  1           100ms        0ms      100ms  100ms\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  7            6.4s        0ms       6.4s  12.7s\n"),
        "{text}"
    );
}

#[test]
fn explain_shows_the_rate_limited_api_policy() {
    // 6 attempts, 90 s budget, 10 s per call, base min(16 s, 1 s * 2^n), wait
    // max(Retry-After, base) plus up to 1 s of additive jitter.
    let text = explain(&[
        "--attempts",
        "6",
        "--deadline",
        "90s",
        "--timeout",
        "10s",
        "--base",
        "1s",
        "--cap",
        "16s",
        "--jitter",
        "+1s",
    ]);
    assert!(
        text.contains("additive jitter: wait = ceiling + uniform(0, 1s)"),
        "{text}"
    );
    assert!(text.contains("+ uniform(0, 1s) from the jitter"), "{text}");
    assert!(
        text.contains("\n  1              1s         1s         2s  12s\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  5             16s        16s        17s  1m26s\n"),
        "{text}"
    );
    assert!(text.contains("deadline      1m30s"), "{text}");
    assert!(
        text.contains("worst case for the whole run: 1m36s (past the 1m30s deadline"),
        "{text}"
    );
}

#[test]
fn explain_shows_the_default_client_policy_and_replay_rule() {
    let text = explain(&[
        "--attempts",
        "6",
        "--base",
        "250ms",
        "--cap",
        "8s",
        "--deadline",
        "30s",
        "--max-retry-after",
        "60s",
        "--retry-on",
        "429,502,503,504,529",
        "POST",
    ]);
    assert!(text.contains("statuses 429,502,503,504,529"), "{text}");
    assert!(text.contains("honoured up to 1m00s"), "{text}");
    assert!(text.contains("POST is not idempotent"), "{text}");
}

#[test]
fn write_out_after_success_and_failure() {
    let s = Server::start(vec![Step::status(503, ""), Step::status(200, "body")]).unwrap();
    let url = s.url("/w");
    let (out, _) = run_fast(
        &[
            "-w",
            "\\n%{http_code} %{num_retries} %{exitcode} %{size_download} %{url_effective}\\n",
        ],
        &url,
    );
    assert_eq!(code(&out), 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("body\n200 1 0 4 {url}\n")
    );

    let dead = closed_port_url();
    let (out, _) = run(&[
        "-o",
        "/dev/null",
        "-s",
        "--attempts",
        "1",
        "-w",
        "%{http_code}",
        &dead,
    ]);
    assert_eq!(code(&out), 4);
    assert_eq!(out.stdout, b"000", "no response at all is 000, as in curl");
}

#[test]
fn head_and_dump_header() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&["-I", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests()[0].method, "HEAD");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("HTTP/1.1 200 OK\r\n"));

    let dir = tempfile::tempdir().unwrap();
    let headers = dir.path().join("h.txt");
    let s = Server::start(vec![Step::with_header(404, "X-Why", "gone")]).unwrap();
    let (out, _) = run(&["-D", headers.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 3);
    let text = std::fs::read_to_string(&headers).unwrap();
    assert!(
        text.starts_with("HTTP/1.1 404 Not Found\r\n") && text.contains("x-why: gone"),
        "{text}"
    );
}

#[test]
fn proxy_flag_and_noproxy() {
    let proxy = Server::start(vec![Step::status(200, "via proxy")]).unwrap();
    let (out, _) = run(&["-x", &proxy.url(""), "http://origin.example.test/path"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"via proxy");
    let seen = proxy.requests();
    assert_eq!(seen[0].method, "CONNECT");
    assert_eq!(seen[0].target, "origin.example.test:80");
    assert_eq!(seen[1].target, "/path");

    let direct = Server::start(vec![Step::status(200, "direct")]).unwrap();
    let (out, _) = run(&[
        "-x",
        &proxy.url(""),
        "--noproxy",
        "127.0.0.1",
        &direct.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"direct");
    assert_eq!(
        proxy.requests().len(),
        2,
        "--noproxy host went through the proxy"
    );
}

#[test]
fn proxy_from_the_environment() {
    let proxy = Server::start(vec![Step::status(200, "via env proxy")]).unwrap();
    let out = assert_cmd::Command::cargo_bin("retry-http")
        .unwrap()
        .env("http_proxy", proxy.url(""))
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .arg("http://origin.example.test/")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"via env proxy");
}

#[test]
fn environment_sets_policy_defaults_and_flags_win() {
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/");
    let out = assert_cmd::Command::cargo_bin("retry-http")
        .unwrap()
        .env("RETRY_HTTP_ATTEMPTS", "2")
        .env("RETRY_HTTP_BASE", "1ms")
        .env("RETRY_HTTP_CAP", "2ms")
        .arg(&url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(s.requests().len(), 2);
    let out = assert_cmd::Command::cargo_bin("retry-http")
        .unwrap()
        .env("RETRY_HTTP_ATTEMPTS", "2")
        .env("RETRY_HTTP_BASE", "1ms")
        .args(["--attempts", "3", "--cap", "2ms", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(s.requests().len(), 5, "the flag beats the variable");
    let out = assert_cmd::Command::cargo_bin("retry-http")
        .unwrap()
        .env("RETRY_HTTP_MAX_RETRY_AFTER", "forever")
        .arg(&url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RETRY_HTTP_MAX_RETRY_AFTER"), "{err}");
    assert_eq!(s.requests().len(), 5, "a bad variable sent a request");
}

#[test]
fn curl_retry_flags_teach_the_equivalent() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let url = s.url("/");
    for (flags, needle) in [
        (&["--retry", "3"][..], "--attempts 4"),
        (&["--retry-delay", "2"], "--base 2s --cap 2s --jitter none"),
        (&["--retry-max-time", "40"], "--deadline 40s"),
        (&["--retry-connrefused"], "always retried"),
        (&["--retry-all-errors"], "--retry-on 4xx,5xx"),
    ] {
        let mut args = flags.to_vec();
        args.push(&url);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 2, "{flags:?}");
        assert!(stderr(&out).contains(needle), "{flags:?}: {}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 0);
}

#[test]
fn json_log_is_one_object_per_line_with_a_summary() {
    let s = Server::start(vec![
        Step::with_header(429, "Retry-After", "0"),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let url = s.url("/");
    let (out, _) = run_fast(&["--log-format", "json", "--seed", "7"], &url);
    assert_eq!(code(&out), 0);
    for line in stderr(&out).lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(v["type"].is_string(), "{line}");
    }
    let attempts = json_lines(&out, "attempt");
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["status"], 429);
    assert_eq!(attempts[0]["retry_after"], "0");
    assert!(attempts[1]["wait_ms"].is_null());
    assert_eq!(attempts[1]["wait_reason"], "none");
    let summary = &json_lines(&out, "summary")[0];
    assert_eq!(summary["outcome"], "success");
    assert_eq!(summary["exit_code"], 0);
    assert_eq!(summary["attempts_made"], 2);
    assert_eq!(summary["seed"], 7);
    assert!(summary["elapsed_ms"].is_u64());
    // Errors are JSON too.
    let (out, _) = run(&["--log-format", "json", "--attempts", "0", &url]);
    assert_eq!(code(&out), 2);
}

#[test]
fn colour_on_stderr_only_and_as_asked() {
    let s = Server::start(vec![Step::status(200, "plain body")]).unwrap();
    let url = s.url("/");
    let (out, _) = run(&["--color", "always", &url]);
    assert!(
        stderr(&out).contains("\x1b["),
        "no colour with --color always"
    );
    assert_eq!(out.stdout, b"plain body", "the body is never coloured");
    let (out, _) = run(&["--color", "never", &url]);
    assert!(!stderr(&out).contains("\x1b["));
    let (out, _) = run(&[&url]);
    assert!(!stderr(&out).contains("\x1b["), "auto: no colour on a pipe");
    let forced = assert_cmd::Command::cargo_bin("retry-http")
        .unwrap()
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&forced.stderr).contains("\x1b["),
        "CLICOLOR_FORCE ignored"
    );
}

#[test]
fn socks_proxies_work_or_fail_cleanly_and_typos_are_usage_errors() {
    let dead = closed_port_url();
    let proxy = dead.trim_start_matches("http://").trim_end_matches('/');
    let (out, _) = run(&[
        "-x",
        &format!("socks5://{proxy}"),
        "--attempts",
        "1",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
    let (out, _) = run(&["-x", "http://127.0.0.1:notaport", "http://127.0.0.1:9/"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let (out, _) = run(&["-x", "ftp://127.0.0.1:21", "http://127.0.0.1:9/"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn head_shows_the_head_of_an_error_response_too() {
    let s = Server::start(vec![Step::with_header(404, "X-Why", "gone")]).unwrap();
    let (out, _) = run(&["-I", &s.url("/")]);
    assert_eq!(code(&out), 3);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("HTTP/1.1 404 Not Found\r\n") && text.contains("x-why: gone"),
        "{text}"
    );
}

#[test]
fn clap_errors_stay_on_one_line() {
    let (out, _) = run(&["--explain"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("\\n"), "{err}");
}

#[test]
fn compressed_asks_for_gzip_and_decodes_it() {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"unpacked body").unwrap();
    let packed = gz.finish().unwrap();
    let reply = Step::Respond {
        status: 200,
        headers: vec![("Content-Encoding".into(), "gzip".into())],
        body: packed,
    };
    let s = Server::start(vec![reply]).unwrap();
    let (out, _) = run(&["--compressed", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"unpacked body");
    assert!(
        s.requests()[0]
            .header("accept-encoding")
            .is_some_and(|v| v.contains("gzip"))
    );
    let plain = Server::start(vec![Step::status(200, "x")]).unwrap();
    let (out, _) = run(&[&plain.url("/")]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        plain.requests()[0].header("accept-encoding"),
        None,
        "no Accept-Encoding unless asked, as curl"
    );
}
