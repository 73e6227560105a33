//! Readiness conditions (`--until-status`, `--until-body`, `--until-json`,
//! `--until-header`): a not-ready answer is polled again under the retry policy, only the
//! ready body is written, a run that ends on a not-ready answer exits 8. Against the
//! scripted server, which answers each poll as a service on its way up would.

use crate::common::*;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// A response with extra headers.
fn answer(status: u16, headers: &[(&str, &str)], body: &str) -> Step {
    Step::with_headers(status, headers, body.as_bytes())
}

/// Runs `args` (then the fast retry flags and the server's URL) against a server playing
/// `steps`; returns the output and the requests the server saw.
fn poll(args: &[&str], steps: Vec<Step>) -> (Output, Vec<Recorded>) {
    let s = Server::start(steps).expect("server starts");
    let (out, _) = run_fast(args, &s.url("/health"));
    (out, s.requests())
}

/// The "not ready: ..." reasons of a text log, in order.
fn reasons(out: &Output) -> Vec<String> {
    attempt_lines(out)
        .iter()
        .filter_map(|l| {
            let (_, rest) = l.split_once("; not ready: ")?;
            // The reason runs up to the decision ("; retry in", "; giving up", ...).
            let end = ["; retry in", "; giving up", "; stopping", "; not retried"]
                .iter()
                .filter_map(|d| rest.find(d))
                .min()
                .unwrap_or(rest.len());
            Some(rest[..end].to_string())
        })
        .collect()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read_state(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the state file reads"))
        .expect("the state file is JSON")
}

/// The one target a test's state file holds.
fn only_target(state: &serde_json::Value) -> serde_json::Value {
    let targets = state["targets"].as_object().expect("targets");
    assert_eq!(targets.len(), 1, "{state}");
    targets.values().next().expect("a target").clone()
}

/// Spawns the binary with `args`, stdout and stderr piped.
fn spawn(args: &[&str]) -> std::process::Child {
    std_command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary starts")
}

// 1. A JSON status that turns green; an unlimited readiness wait.

#[test]
fn until_json_polls_until_the_status_turns_green() {
    let green = r#"{"status":"green","nodes":3}"#;
    let steps = vec![
        Step::status(200, r#"{"status":"starting"}"#),
        Step::status(200, r#"{"status":"yellow"}"#),
        Step::status(200, green),
    ];
    let (out, reqs) = poll(
        &["--until-json", "/status=green", "--deadline", "20s"],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 3);
    assert_eq!(stdout(&out), green, "only the green body is written");
    assert_eq!(
        reasons(&out),
        [
            r#"/status is "starting", want "green""#,
            r#"/status is "yellow", want "green""#
        ],
        "{}",
        stderr(&out)
    );
    let lines = attempt_lines(&out);
    assert_eq!(lines.len(), 3, "{}", stderr(&out));
    // With a readiness condition, a --deadline and no --attempts, attempts are unlimited:
    // the line has no "/N".
    for (i, line) in lines.iter().enumerate() {
        let want = format!("retry-http: attempt {} GET ", i + 1);
        assert!(line.starts_with(&want), "{line}");
    }
    assert!(!lines[2].contains("not ready"), "{}", lines[2]);
}

#[test]
fn an_unlimited_wait_logs_null_attempts_and_the_reason_in_json() {
    let steps = vec![
        Step::status(200, r#"{"status":"starting"}"#),
        Step::status(200, r#"{"status":"green"}"#),
    ];
    let (out, _) = poll(
        &[
            "--until-json",
            "/status=green",
            "--deadline",
            "20s",
            "--log-format",
            "json",
        ],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let attempts = json_lines(&out, "attempt");
    assert_eq!(attempts.len(), 2, "{}", stderr(&out));
    for a in &attempts {
        assert!(a["attempts"].is_null(), "unlimited is null: {a}");
        assert!(a.get("not_ready").is_some(), "{a}");
    }
    assert_eq!(
        attempts[0]["not_ready"],
        r#"/status is "starting", want "green""#
    );
    assert!(attempts[1]["not_ready"].is_null(), "{}", attempts[1]);
    let summary = &json_lines(&out, "summary")[0];
    assert_eq!(summary["outcome"], "success");
    assert_eq!(summary["attempts_made"], 2);
    // A capped run still says its cap.
    let (out, _) = poll(
        &[
            "--until-json",
            "/status=green",
            "--attempts",
            "4",
            "--log-format",
            "json",
        ],
        vec![Step::status(200, r#"{"status":"green"}"#)],
    );
    assert_eq!(json_lines(&out, "attempt")[0]["attempts"], 4);
}

// 2. Values compared as JSON values.

#[test]
fn json_numbers_are_compared_as_numbers() {
    let steps = vec![
        Step::status(200, r#"{"n":2}"#),
        Step::status(200, r#"{"n":"1"}"#),
        Step::status(200, r#"{"n":1.0}"#),
    ];
    let (out, reqs) = poll(&["--until-json", "/n=1", "--attempts", "5"], steps);
    assert_eq!(code(&out), 0, "1.0 is 1: {}", stderr(&out));
    assert_eq!(reqs.len(), 3);
    assert_eq!(stdout(&out), r#"{"n":1.0}"#);
    assert_eq!(
        reasons(&out),
        ["/n is 2, want 1", r#"/n is "1", want 1"#],
        "a string that holds a number is not the number"
    );
}

#[test]
fn a_json_boolean_is_not_the_string_true() {
    let steps = vec![
        Step::status(200, r#"{"ok":"true"}"#),
        Step::status(200, r#"{"ok":true}"#),
    ];
    let (out, reqs) = poll(&["--until-json", "/ok=true", "--attempts", "5"], steps);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    assert_eq!(reasons(&out), [r#"/ok is "true", want true"#]);
    // Quoted, the value is the string, and the boolean does not match it.
    let steps = vec![
        Step::status(200, r#"{"ok":true}"#),
        Step::status(200, r#"{"ok":"true"}"#),
    ];
    let (out, reqs) = poll(&["--until-json", r#"/ok="true""#, "--attempts", "5"], steps);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    assert_eq!(reasons(&out), [r#"/ok is true, want "true""#]);
}

#[test]
fn a_pointer_reaches_into_arrays_and_a_quoted_value_is_a_string() {
    let steps = vec![
        Step::status(200, r#"{"nodes":[{"state":"down"},{"state":"up"}]}"#),
        Step::status(200, r#"{"nodes":[{"state":"up"}]}"#),
    ];
    let (out, reqs) = poll(
        &["--until-json", r#"/nodes/0/state="up""#, "--attempts", "5"],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    assert_eq!(reasons(&out), [r#"/nodes/0/state is "down", want "up""#]);
    assert_eq!(stdout(&out), r#"{"nodes":[{"state":"up"}]}"#);
}

#[test]
fn escaped_pointers_name_keys_with_slash_and_tilde() {
    // ~1 is "/", ~0 is "~" (RFC 6901 section 4); the value splits at the first "=".
    let steps = vec![
        Step::status(200, r#"{"a/b":1,"x~y":"p=q"}"#),
        Step::status(200, r#"{"a/b":2,"x~y":"p=q"}"#),
    ];
    let (out, reqs) = poll(
        &[
            "--until-json",
            "/a~1b=2",
            "--until-json",
            "/x~0y=p=q",
            "--attempts",
            "5",
        ],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    assert_eq!(reasons(&out), ["/a~1b is 1, want 2"]);
}

#[test]
fn a_missing_pointer_and_a_body_that_is_not_json_say_so() {
    let steps = vec![
        Step::status(200, r#"{"state":"green"}"#),
        Step::status(200, "<html>starting</html>"),
        Step::status(200, ""),
        Step::status(200, r#"{"status":"green"}"#),
    ];
    let (out, reqs) = poll(&["--until-json", "/status=green", "--attempts", "6"], steps);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        reasons(&out),
        [
            r#"/status is missing, want "green""#,
            "the body is not JSON",
            "the body is not JSON",
        ]
    );
}

#[test]
fn a_long_value_is_cut_in_the_reason() {
    let long = "x".repeat(200);
    let steps = vec![
        Step::status(200, &format!(r#"{{"status":"{long}"}}"#)),
        Step::status(200, r#"{"status":"green"}"#),
    ];
    let (out, _) = poll(&["--until-json", "/status=green", "--attempts", "3"], steps);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let why = &reasons(&out)[0];
    assert!(why.contains("..."), "{why}");
    assert!(why.len() < 100, "about 40 characters of the value: {why}");
    assert!(!stderr(&out).contains(&long));
}

// 3. Body regexes and header conditions; the body is never logged.

#[test]
fn until_body_polls_until_the_regex_matches_and_never_logs_the_body() {
    let secret = "sk_live_7f3a9c2e1b4d8f6a";
    let pending = format!("job 42: state=pending token={secret}");
    let steps = vec![
        Step::status(200, &pending),
        Step::status(200, &pending),
        Step::status(200, "job 42: state=done"),
    ];
    for log in [&[][..], &["-v"][..], &["--log-format", "json"][..]] {
        let mut args = vec!["--until-body", r"state=(done|ready)\b", "--attempts", "5"];
        args.extend(log);
        let (out, reqs) = poll(&args, steps.clone());
        assert_eq!(code(&out), 0, "{log:?}: {}", stderr(&out));
        assert_eq!(reqs.len(), 3);
        assert_eq!(stdout(&out), "job 42: state=done");
        let err = stderr(&out);
        assert!(
            !err.contains(secret),
            "{log:?}: the body reached the log: {err}"
        );
        assert!(!err.contains("pending"), "{log:?}: {err}");
        assert!(
            err.contains(r"not ready: the body does not match state=(done|ready)\b")
                || err.contains(r#""not_ready":"the body does not match state=(done|ready)\\b""#),
            "{log:?}: {err}"
        );
    }
    // Nor on the way out, when the run ends not ready.
    let (out, _) = poll(
        &["--until-body", "done", "--attempts", "2"],
        vec![Step::status(200, &pending)],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert!(!stderr(&out).contains(secret), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
}

#[test]
fn until_header_waits_for_the_new_version() {
    let steps = vec![
        Step::status(200, "old"),
        answer(200, &[("X-Version", "1.9.4")], "old"),
        answer(200, &[("X-Version", "2.0.1")], "new"),
    ];
    let (out, reqs) = poll(
        &["--until-header", r"X-Version: ^2\.", "--attempts", "5"],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 3);
    assert_eq!(stdout(&out), "new");
    assert_eq!(
        reasons(&out),
        [
            "no x-version header",
            r#"x-version is "1.9.4", not matching ^2\."#
        ]
    );
}

#[test]
fn every_condition_must_hold() {
    let steps = vec![
        answer(200, &[("X-Version", "2.0")], r#"{"status":"yellow"}"#),
        answer(200, &[("X-Version", "1.0")], r#"{"status":"green"}"#),
        answer(200, &[("X-Version", "2.0")], r#"{"status":"green"}"#),
    ];
    let (out, reqs) = poll(
        &[
            "--until-header",
            "x-version: ^2",
            "--until-json",
            "/status=green",
            "--until-body",
            "green",
            "--attempts",
            "5",
        ],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 3);
    assert_eq!(stdout(&out), r#"{"status":"green"}"#);
    assert_eq!(
        reasons(&out),
        [
            "the body does not match green",
            r#"x-version is "1.0", not matching ^2"#
        ]
    );
}

// 4. --until-status; what is charged to the budget and the breaker.

#[test]
fn until_status_polls_a_route_that_appears_during_a_deploy() {
    let steps = vec![
        Step::status(404, "no such route"),
        Step::status(200, "here"),
    ];
    let (out, reqs) = poll(&["--until-status", "200", "--attempts", "5"], steps);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    assert_eq!(stdout(&out), "here", "the 404's body is not written");
    assert_eq!(reasons(&out), ["404 is not in --until-status (200)"]);
    // Without --until-status, a 404 is the end of the run, as without conditions.
    let (out, reqs) = poll(
        &["--until-body", "here", "--attempts", "5"],
        vec![
            Step::status(404, "no such route"),
            Step::status(200, "here"),
        ],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(reqs.len(), 1);
}

#[test]
fn until_status_can_make_an_error_status_ready() {
    let steps = vec![
        Step::status(200, "still brewing"),
        Step::status(418, "teapot"),
    ];
    let (out, reqs) = poll(&["--until-status", "418", "--attempts", "5"], steps);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    assert_eq!(stdout(&out), "teapot", "a ready 418's body is written");
    assert_eq!(reasons(&out), ["200 is not in --until-status (418)"]);
}

#[test]
fn a_retryable_status_is_charged_to_the_budget_and_a_not_ready_answer_is_not() {
    let dir = tempfile::tempdir().expect("a temp folder");
    // A 503 in --retry-on stays a failure: retried and charged.
    let file = dir.path().join("failing.json");
    let f = file.to_str().expect("utf-8");
    let steps = vec![
        Step::status(503, "down"),
        Step::status(503, "down"),
        Step::status(200, "up"),
    ];
    let (out, reqs) = poll(
        &["--state", f, "--until-status", "200", "--attempts", "5"],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 3);
    assert!(reasons(&out).is_empty(), "a 503 is not 'not ready'");
    let target = only_target(&read_state(&file));
    assert_eq!(counted(&target, 2), 2, "two retries charged: {target}");
    // Not-ready answers are polls of a service that is up: nothing charged.
    let file = dir.path().join("polling.json");
    let f = file.to_str().expect("utf-8");
    let steps = vec![
        Step::status(404, "no route yet"),
        Step::status(200, r#"{"status":"starting"}"#),
        Step::status(200, r#"{"status":"yellow"}"#),
        Step::status(200, r#"{"status":"yellow"}"#),
        Step::status(200, r#"{"status":"green"}"#),
    ];
    let (out, reqs) = poll(
        &[
            "--state",
            f,
            "--until-status",
            "200",
            "--until-json",
            "/status=green",
            "--attempts",
            "8",
        ],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 5);
    assert_eq!(reasons(&out).len(), 4, "{}", stderr(&out));
    let target = only_target(&read_state(&file));
    assert_eq!(counted(&target, 2), 0, "polls charged as retries: {target}");
    assert_eq!(
        counted(&target, 1),
        1,
        "the ready answer is a success: {target}"
    );
}

#[test]
fn a_budget_floor_does_not_cut_a_readiness_wait() {
    // Two retries allowed by the floor; five polls are made all the same.
    let dir = tempfile::tempdir().expect("a temp folder");
    let file = dir.path().join("state.json");
    let f = file.to_str().expect("utf-8");
    let mut steps = vec![Step::status(200, "starting"); 5];
    steps.push(Step::status(200, "ready"));
    let (out, reqs) = poll(
        &[
            "--state",
            f,
            "--budget-floor",
            "2",
            "--until-body",
            "ready",
            "--attempts",
            "8",
        ],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 6);
    assert_eq!(stdout(&out), "ready");
}

#[test]
fn runs_that_end_not_ready_do_not_open_the_circuit() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let file = dir.path().join("state.json");
    let f = file.to_str().expect("utf-8");
    let s = Server::start(vec![Step::status(200, r#"{"status":"yellow"}"#)]).expect("server");
    let url = s.url("/health");
    let args = [
        "--state",
        f,
        "--breaker-threshold",
        "1",
        "--until-json",
        "/status=green",
        "--attempts",
        "2",
    ];
    for run_no in 1..=3 {
        let (out, _) = run_fast(&args, &url);
        assert_eq!(code(&out), 8, "run {run_no}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("circuit is open"),
            "{}",
            stderr(&out)
        );
        assert_eq!(s.requests().len(), 2 * run_no, "every run is admitted");
        let target = only_target(&read_state(&file));
        assert_eq!(target["breaker"]["failures"], 0, "{target}");
    }
    // The same breaker does count a run that ends on a retryable status.
    let down = Server::start(vec![Step::status(503, "")]).expect("server");
    let (out, _) = run_fast(&args, &down.url("/health"));
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let state = read_state(&file);
    let failures = &state["targets"][down.url("").as_str()]["breaker"]["failures"];
    assert_eq!(failures, 1, "{state}");
}

// 5. Exit 8 and its precedence.

#[test]
fn attempts_run_out_while_not_ready_exit_8() {
    let (out, reqs) = poll(
        &["--until-json", "/status=green", "--attempts", "3"],
        vec![Step::status(200, r#"{"status":"yellow"}"#)],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(reqs.len(), 3);
    assert!(out.stdout.is_empty(), "a not-ready body is never written");
    let err = stderr(&out);
    assert!(err.contains("not ready after 3 attempts"), "{err}");
    assert!(err.contains("exit 8"), "{err}");
    assert!(attempt_lines(&out)[2].contains("attempt 3/3 GET"), "{err}");
    let (out, _) = poll(
        &[
            "--until-json",
            "/status=green",
            "--attempts",
            "3",
            "--log-format",
            "json",
        ],
        vec![Step::status(200, r#"{"status":"yellow"}"#)],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    let summary = &json_lines(&out, "summary")[0];
    assert_eq!(summary["outcome"], "not_ready", "{summary}");
    assert_eq!(summary["exit_code"], 8, "{summary}");
    assert_eq!(summary["attempts_made"], 3, "{summary}");
}

#[test]
fn a_deadline_that_passes_while_not_ready_exits_8_in_time() {
    let s = Server::start(vec![Step::status(200, r#"{"status":"starting"}"#)]).expect("server");
    let (out, took) = run(&[
        "--until-json",
        "/status=green",
        "--deadline",
        "1s",
        "--base",
        "20ms",
        "--cap",
        "100ms",
        &s.url("/health"),
    ]);
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(s.requests().len() >= 3, "polled: {}", s.requests().len());
    assert!(stderr(&out).contains("not ready after"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_last_attempt_without_an_answer_keeps_exit_4_or_5() {
    // Not ready once, then the service goes away: connection refused.
    for (flags, want) in [
        (&["--attempts", "3"][..], 4),
        (&["--deadline", "1s"][..], 5),
    ] {
        let s = Server::start(vec![Step::status(200, "starting")]).expect("server");
        let url = s.url("/health");
        let mut args = vec![
            "--until-body",
            "ready",
            "--base",
            "250ms",
            "--cap",
            "250ms",
            "--jitter",
            "none",
        ];
        args.extend(flags);
        args.push(&url);
        let child = spawn(&args);
        s.wait_for_requests(1, Duration::from_secs(10));
        drop(s);
        let out = child.wait_with_output().expect("binary ends");
        assert_eq!(code(&out), want, "{flags:?}: {}", stderr(&out));
        let lines = attempt_lines(&out);
        assert!(lines[0].contains("not ready"), "{}", stderr(&out));
        let last = lines.last().expect("a last attempt");
        assert!(last.contains("connection refused"), "{}", stderr(&out));
        assert!(!stderr(&out).contains("exit 8"), "{}", stderr(&out));
    }
}

#[test]
fn a_last_answer_in_retry_on_keeps_exit_4() {
    let steps = vec![
        Step::status(200, r#"{"status":"yellow"}"#),
        Step::status(200, r#"{"status":"yellow"}"#),
        Step::status(503, "down"),
    ];
    let (out, reqs) = poll(&["--until-json", "/status=green", "--attempts", "3"], steps);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(reqs.len(), 3);
    assert!(
        stderr(&out).contains("attempts exhausted"),
        "{}",
        stderr(&out)
    ); // With --until-status too: a 503 in --retry-on is not "not ready".
    let steps = vec![Step::status(404, "no route"), Step::status(503, "down")];
    let (out, reqs) = poll(&["--until-status", "200", "--attempts", "2"], steps);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    assert_eq!(reasons(&out), ["404 is not in --until-status (200)"]);
}

// 6. Only the ready body reaches stdout or -o.

#[test]
fn an_output_file_is_replaced_only_by_the_ready_body() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let path = dir.path().join("health.json");
    std::fs::write(&path, "previous").expect("write");
    let s = Server::start(vec![
        Step::status(200, r#"{"status":"starting"}"#),
        Step::status(200, r#"{"status":"yellow"}"#),
        Step::status(200, r#"{"status":"green"}"#),
    ])
    .expect("server");
    let url = s.url("/health");
    let p = path.to_str().expect("utf-8");
    let mut child = spawn(&[
        "--until-json",
        "/status=green",
        "--attempts",
        "5",
        "--base",
        "100ms",
        "--cap",
        "100ms",
        "--jitter",
        "none",
        "-o",
        p,
        &url,
    ]);
    // While the run polls, the file is the old one, or the ready one once it is done.
    let mut seen = std::collections::BTreeSet::new();
    while child.try_wait().expect("wait").is_none() {
        if let Ok(text) = std::fs::read_to_string(&path) {
            seen.insert(text);
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    let out = child.wait_with_output().expect("binary ends");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 3);
    seen.remove("previous");
    seen.remove(r#"{"status":"green"}"#);
    assert!(seen.is_empty(), "the file held: {seen:?}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        r#"{"status":"green"}"#
    );
    assert!(out.stdout.is_empty());
    assert_eq!(
        names_in(dir.path()),
        ["health.json"],
        "a temporary file left"
    );
}

#[test]
fn a_run_that_ends_not_ready_leaves_the_output_file_untouched() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let path = dir.path().join("health.json");
    std::fs::write(&path, "previous").expect("write");
    let p = path.to_str().expect("utf-8");
    let (out, reqs) = poll(
        &["--until-json", "/status=green", "--attempts", "3", "-o", p],
        vec![Step::status(200, r#"{"status":"yellow"}"#)],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(reqs.len(), 3);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "previous");
    assert_eq!(
        names_in(dir.path()),
        ["health.json"],
        "a temporary file left"
    );
    // A new file is not created either.
    let fresh = dir.path().join("new.json");
    let (out, _) = poll(
        &[
            "--until-status",
            "200",
            "--attempts",
            "2",
            "-o",
            fresh.to_str().expect("utf-8"),
        ],
        vec![Step::status(404, "no route")],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(names_in(dir.path()), ["health.json"]);
}

#[test]
fn fail_with_body_writes_the_last_not_ready_body_on_exit_8() {
    // A body condition: the body was read to be checked.
    let steps = vec![
        Step::status(200, r#"{"status":"starting"}"#),
        Step::status(200, r#"{"status":"yellow","n":1}"#),
        Step::status(200, r#"{"status":"yellow","n":2}"#),
    ];
    let (out, _) = poll(
        &[
            "--until-json",
            "/status=green",
            "--attempts",
            "3",
            "--fail-with-body",
        ],
        steps,
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(stdout(&out), r#"{"status":"yellow","n":2}"#);
    // A status condition: the body was never read until the end.
    let steps = vec![
        Step::status(404, "first"),
        Step::status(404, "second"),
        Step::status(404, "last 404"),
    ];
    let (out, _) = poll(
        &[
            "--until-status",
            "200",
            "--attempts",
            "3",
            "--fail-with-body",
        ],
        steps,
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(stdout(&out), "last 404");
    // Into -o as well.
    let dir = tempfile::tempdir().expect("a temp folder");
    let path = dir.path().join("out");
    let p = path.to_str().expect("utf-8");
    let (out, _) = poll(
        &[
            "--until-body",
            "done",
            "--attempts",
            "2",
            "--fail-with-body",
            "-o",
            p,
        ],
        vec![Step::status(200, "one"), Step::status(200, "two")],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "two");
    assert_eq!(names_in(dir.path()), ["out"]);
}

#[test]
fn with_include_only_the_ready_answer_reaches_stdout() {
    let steps = vec![
        answer(200, &[("X-Phase", "starting")], r#"{"status":"starting"}"#),
        answer(200, &[("X-Phase", "green")], r#"{"status":"green"}"#),
    ];
    let (out, _) = poll(
        &[
            "-i",
            "--until-json",
            "/status=green",
            "--until-body",
            r"^\{",
            "--attempts",
            "3",
        ],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("x-phase: green"),
        "{text}"
    );
    assert!(!text.contains("starting"), "{text}");
    assert!(text.ends_with("\r\n\r\n{\"status\":\"green\"}"), "{text}");
}

// 7. Bounded memory.

#[test]
fn a_body_larger_than_the_checked_size_is_not_ready() {
    let big = (1u64 << 20) + 1;
    let (out, reqs) = poll(
        &["--until-body", "z", "--attempts", "2"],
        vec![Step::Generate { len: big }],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    assert!(out.stdout.is_empty());
    let why = &reasons(&out)[0];
    assert!(why.contains("more than the 1024 KiB"), "{why}");
    assert!(why.contains("1048577 bytes"), "{why}");
    // Exactly the checked size is read and matched.
    let (out, _) = poll(
        &["--until-body", "zz$", "--attempts", "1"],
        vec![Step::Generate { len: 1 << 20 }],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout.len(), 1 << 20);
}

#[test]
fn the_too_large_reason_gives_the_body_size_under_include() {
    let (out, _) = poll(
        &["-i", "--until-body", "z", "--attempts", "1"],
        vec![Step::Generate { len: (1 << 20) + 1 }],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    let why = &reasons(&out)[0];
    assert!(why.contains("the body is 1048577 bytes"), "{why}");
}

#[test]
fn max_filesize_still_applies_to_a_readiness_poll() {
    let (out, reqs) = poll(
        &[
            "--until-body",
            "z",
            "--max-filesize",
            "1000",
            "--attempts",
            "3",
        ],
        vec![Step::Generate { len: 2000 }],
    );
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(reqs.len(), 1, "body too large is not retried");
    assert!(
        stderr(&out).contains("larger than --max-filesize 1000"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
}

// 8. Retry-After, a shared Retry-After, and decoded bodies.

#[test]
fn retry_after_on_a_not_ready_answer_is_honoured() {
    let steps = vec![
        answer(200, &[("Retry-After", "1")], r#"{"status":"starting"}"#),
        Step::status(200, r#"{"status":"green"}"#),
    ];
    let (out, reqs) = poll(&["--until-json", "/status=green", "--attempts", "3"], steps);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    let gap = gaps(&reqs)[0];
    assert!(gap >= Duration::from_millis(950), "waited {gap:?}");
    assert!(
        attempt_lines(&out)[0].contains("Retry-After: 1"),
        "{}",
        stderr(&out)
    );
}

/// A readiness poll (`--until-body ready`, a 1 s backoff, `--deadline 5s`, `--state`)
/// during which another run sharing the state is told `Retry-After: 30`: the poller's
/// output, once it ended, and the requests the server saw.
fn poll_while_another_run_is_told_to_wait(log: &[&str]) -> (Output, Vec<Recorded>) {
    let dir = tempfile::tempdir().expect("a temp folder");
    let file = dir.path().join("state.json");
    let f = file.to_str().expect("utf-8");
    // The poller's first answer, then the other run's 503 with a long Retry-After.
    let s = Server::start(vec![
        Step::status(200, "starting"),
        answer(503, &[("Retry-After", "30")], "down"),
    ])
    .expect("server");
    let ready = s.url("/ready");
    let mut args = vec![
        "--state",
        f,
        "--until-body",
        "ready",
        "--deadline",
        "5s",
        "--base",
        "1s",
        "--cap",
        "1s",
        "--jitter",
        "none",
    ];
    args.extend(log);
    args.push(&ready);
    let poller = spawn(&args);
    s.wait_for_requests(1, Duration::from_secs(10));
    let (other, _) = run(&[
        "--state",
        f,
        "--attempts",
        "1",
        "--max-retry-after",
        "1m",
        &s.url("/down"),
    ]);
    assert_eq!(code(&other), 4, "{}", stderr(&other));
    let t = Instant::now();
    let out = poller.wait_with_output().expect("binary ends");
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "it waited out the hold"
    );
    (out, s.requests())
}

#[test]
fn a_retry_after_shared_by_another_run_past_the_deadline_ends_not_ready() {
    let (out, reqs) = poll_while_another_run_is_told_to_wait(&["--log-format", "json"]);
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2, "the poller sent nothing more");
    let summary = &json_lines(&out, "summary")[0];
    assert_eq!(summary["outcome"], "not_ready", "{summary}");
    let why = summary["reason"].as_str().expect("a reason");
    assert!(why.contains("Retry-After shared by the runs"), "{why}");
}

#[test]
fn the_text_log_says_why_a_not_ready_run_stopped() {
    let (out, _) = poll_while_another_run_is_told_to_wait(&[]);
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a Retry-After shared by the runs holds past the deadline"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_compressed_answer_is_checked_decoded() {
    let gz = |text: &str| Step::Respond {
        status: 200,
        headers: vec![("Content-Encoding".into(), "gzip".into())],
        body: gzip(text.as_bytes()),
    };
    let steps = vec![gz(r#"{"status":"starting"}"#), gz(r#"{"status":"green"}"#)];
    let (out, reqs) = poll(
        &[
            "--compressed",
            "--until-json",
            "/status=green",
            "--until-body",
            r#"^\{"status":"#,
            "--attempts",
            "3",
        ],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
    assert_eq!(stdout(&out), r#"{"status":"green"}"#);
    assert_eq!(reasons(&out), [r#"/status is "starting", want "green""#]);
}

// 9. Usage errors: exit 2, one line, nothing sent.

#[test]
fn bad_conditions_are_usage_errors_and_send_nothing() {
    let cases: [(&[&str], &str); 9] = [
        (&["--until-body", "("], "not a valid regex"),
        (&["--until-json", "status=green"], "must begin with /"),
        (&["--until-json", "/a~2=1"], "~0 or ~1"),
        (&["--until-json", "/status"], "POINTER=VALUE"),
        (&["--until-header", "nocolon"], "NAME: REGEX"),
        (&["--until-header", "X-Version: ("], "not a valid regex"),
        (&["-N", "--until-body", "x"], "-N"),
        (&["-I", "--until-json", "/a=1"], "HEAD"),
        (
            &["-X", "POST", "--until-status", "200"],
            "--idempotency-key",
        ),
    ];
    for (flags, says) in cases {
        let s = Server::start(vec![Step::status(200, "")]).expect("server");
        let mut args = flags.to_vec();
        let url = s.url("/health");
        args.push(&url);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 2, "{flags:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{flags:?}: one line: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
        assert_eq!(s.requests().len(), 0, "{flags:?} sent a request");
    }
}

#[test]
fn attempts_unlimited_needs_a_deadline() {
    let s = Server::start(vec![Step::status(503, "")]).expect("server");
    let url = s.url("/");
    let (out, _) = run(&["--attempts", "unlimited", &url]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("--deadline"), "{}", stderr(&out));
    assert_eq!(s.requests().len(), 0);
    // With one, it polls until the deadline, whatever the default count of 6.
    let (out, took) = run(&[
        "--attempts",
        "unlimited",
        "--deadline",
        "600ms",
        "--base",
        "5ms",
        "--cap",
        "10ms",
        &url,
    ]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(
        s.requests().len() > 6,
        "only {} attempts",
        s.requests().len()
    );
}

#[test]
fn a_post_with_an_idempotency_key_may_be_polled() {
    let steps = vec![
        Step::status(200, r#"{"state":"queued"}"#),
        Step::status(200, r#"{"state":"running"}"#),
        Step::status(200, r#"{"state":"done"}"#),
    ];
    let (out, reqs) = poll(
        &[
            "-X",
            "POST",
            "-d",
            "job=42",
            "--idempotency-key",
            "auto",
            "--until-json",
            "/state=done",
            "--attempts",
            "5",
        ],
        steps,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 3);
    assert_eq!(stdout(&out), r#"{"state":"done"}"#);
    let key = reqs[0]
        .header("idempotency-key")
        .expect("a key")
        .to_string();
    assert!(!key.is_empty());
    for r in &reqs {
        assert_eq!(r.method, "POST");
        assert_eq!(r.body, b"job=42");
        assert_eq!(r.header("idempotency-key"), Some(key.as_str()), "one key");
    }
    // --retry-unsafe allows it too.
    let (out, reqs) = poll(
        &[
            "-X",
            "POST",
            "--retry-unsafe",
            "--until-status",
            "200",
            "--attempts",
            "3",
        ],
        vec![Step::status(202, "accepted"), Step::status(200, "done")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(reqs.len(), 2);
}

// 10. -w '%{ready}' and --explain.

#[test]
fn write_out_ready_is_1_when_ready_and_0_on_exit_8() {
    let (out, _) = poll(
        &["--until-body", "up", "--attempts", "3", "-w", "%{ready}"],
        vec![Step::status(200, "down"), Step::status(200, "up")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "up1");
    let (out, _) = poll(
        &["--until-body", "up", "--attempts", "2", "-w", "%{ready}"],
        vec![Step::status(200, "down")],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(stdout(&out), "0");
}

#[test]
fn explain_lists_the_conditions_and_sends_nothing() {
    let s = Server::start(vec![Step::status(200, "")]).expect("server");
    let url = s.url("/health");
    let (out, _) = run(&[
        "--until-status",
        "200,418",
        "--until-json",
        "/status=green",
        "--until-body",
        "ok|done",
        "--until-header",
        r"X-Version: ^2\.",
        "--deadline",
        "2m",
        "--explain",
        &url,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 0, "--explain sent a request");
    let text = stdout(&out);
    for want in [
        "ready when",
        "the status is in 200,418",
        r#"the JSON body has "green" at /status"#,
        "the body matches ok|done",
        r"x-version header matches ^2\.",
        "at most 1024 KiB",
        "attempts      unlimited",
    ] {
        assert!(text.contains(want), "missing {want:?}: {text}");
    }
    // Without --until-status, the status must be a success.
    let (out, _) = run(&["--until-body", "x", "--explain", &url]);
    assert!(
        stdout(&out).contains("the status is below 400"),
        "{}",
        stdout(&out)
    );
    assert_eq!(s.requests().len(), 0);
}

// 11. A service that starts late.

#[test]
fn a_service_that_starts_late_is_waited_for() {
    // A port with nothing listening yet; the service binds it 300 ms into the run.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}/health");
    let t = Instant::now();
    let child = spawn(&[
        "--until-json",
        "/status=green",
        "--deadline",
        "15s",
        "--base",
        "20ms",
        "--cap",
        "60ms",
        &url,
    ]);
    std::thread::sleep(Duration::from_millis(300));
    let s = Server::start_on(
        &port.to_string(),
        vec![
            Step::status(503, "warming up"),
            Step::status(200, r#"{"status":"starting"}"#),
            Step::status(200, r#"{"status":"green"}"#),
        ],
    )
    .expect("the reserved port binds");
    let out = child.wait_with_output().expect("binary ends");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(stdout(&out), r#"{"status":"green"}"#);
    assert_eq!(s.requests().len(), 3);
    let lines = attempt_lines(&out);
    let refused = lines
        .iter()
        .take_while(|l| l.contains("connection refused"))
        .count();
    assert!(refused >= 1, "{}", stderr(&out));
    let rest = &lines[refused..];
    assert_eq!(rest.len(), 3, "{}", stderr(&out));
    assert!(rest[0].contains("503 Service Unavailable"), "{}", rest[0]);
    assert!(
        rest[1].contains(r#"not ready: /status is "starting", want "green""#),
        "{}",
        rest[1]
    );
    assert!(!rest[2].contains("not ready"), "{}", rest[2]);
}

/// What a not-ready reason shows of a header or a JSON value is what the log may show: a
/// secret header's value and a value under a secret name are masked, on every line and in
/// the JSON log, as `-v` masks headers.
#[test]
fn a_not_ready_reason_shows_no_secret() {
    let secret_headers = [
        ("Set-Cookie", "sid=COOKIESECRET123; Path=/"),
        ("X-Api-Key", "APIKEYSECRET999"),
        ("Location", "http://u:LOCPASS@h/x?token=LOCTOKEN"),
    ];
    for format in ["text", "json"] {
        for (name, _) in secret_headers {
            let cond = format!("{name}: nomatch");
            let steps = vec![answer(200, &secret_headers, "ok"); 2];
            let (out, _) = poll(
                &[
                    "--attempts",
                    "2",
                    "--log-format",
                    format,
                    "--until-header",
                    &cond,
                ],
                steps,
            );
            assert_eq!(code(&out), 8, "{}", stderr(&out));
            let err = stderr(&out);
            for secret in ["COOKIESECRET123", "APIKEYSECRET999", "LOCPASS", "LOCTOKEN"] {
                assert!(!err.contains(secret), "{name} ({format}): {err}");
            }
            // The pattern for a secret header describes the secret: it is not shown.
            let pattern = if name == "Location" { "nomatch" } else { "***" };
            assert!(err.contains(&format!("not matching {pattern}")), "{err}");
        }
        let body = r#"{"auth":{"api_key":"sk_live_SECRETJSONVALUE"},"status":"starting"}"#;
        let (out, _) = poll(
            &[
                "--attempts",
                "2",
                "--log-format",
                format,
                "--until-json",
                "/auth/api_key=x",
            ],
            vec![answer(200, &[], body); 2],
        );
        assert_eq!(code(&out), 8, "{}", stderr(&out));
        let err = stderr(&out);
        assert!(!err.contains("SECRETJSONVALUE"), "{format}: {err}");
        assert!(err.contains("/auth/api_key is ***, want ***"), "{err}");
    }
}

/// Reasons stay short whatever the user gave: a long pattern is cut in the log.
#[test]
fn a_long_pattern_is_cut_in_the_reason() {
    let pattern = "x".repeat(20_000);
    let (out, _) = poll(
        &["--attempts", "1", "--until-body", &pattern],
        vec![answer(200, &[], "y")],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert!(stderr(&out).len() < 2_000, "{} bytes", stderr(&out).len());
}

/// Integers are compared exactly, past 2^53 too (build numbers, sequence ids).
#[test]
fn big_integers_are_compared_exactly() {
    let (out, seen) = poll(
        &["--attempts", "2", "--until-json", "/n=9007199254740993"],
        vec![
            answer(200, &[], r#"{"n":9007199254740992}"#),
            answer(200, &[], r#"{"n":9007199254740993}"#),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(seen.len(), 2, "the first, one off, was not ready");
}

/// `--until-status` is given once: twice is a usage error, and nothing is sent.
#[test]
fn until_status_twice_is_refused() {
    let (out, seen) = poll(
        &["--until-status", "200", "--until-status", "201"],
        vec![answer(200, &[], "ok")],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--until-status is given once"),
        "{}",
        stderr(&out)
    );
    assert!(seen.is_empty());
    let (out, _) = poll(&["--until-status", "300-200"], vec![]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("in --until-status") && !stderr(&out).contains("--retry-on"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn body_anchors_match_at_each_line() {
    // What `echo v2` serves, and the other line ends a server writes: ^v2$ is ready on
    // each, whether the line is alone, first, last, or among others.
    for body in ["v2", "v2\n", "v2\r\n", "v1\nv2\n", "v1\r\nv2\r\nv3\r\n"] {
        let (out, reqs) = poll(
            &["--until-body", "^v2$", "--attempts", "3"],
            vec![Step::status(200, "v1\n"), Step::status(200, body)],
        );
        assert_eq!(code(&out), 0, "{body:?}: {}", stderr(&out));
        assert_eq!(reqs.len(), 2, "{body:?}");
        assert_eq!(stdout(&out), body);
    }
    // The line that is not ready teaches what the anchors mean here.
    let (out, _) = poll(
        &["--until-body", "^v2$", "--attempts", "2"],
        vec![Step::status(200, "v20\n")],
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(
        reasons(&out),
        vec![
            r"the body does not match ^v2$ (^ and $ match at each line's start and end; \A and \z at the body's)";
            2
        ]
    );
    // \A and \z keep the whole body; (?-m) gives ^ and $ their whole-text meaning.
    for (pattern, body, ready) in [
        (r"\Av2\n?\z", "v2\n", true),
        (r"\Av2\z", "v2\n", false),
        ("(?-m)^v2$", "v2\n", false),
        ("(?-m)^v2$", "v2", true),
    ] {
        let (out, _) = poll(
            &["--until-body", pattern, "--attempts", "1"],
            vec![Step::status(200, body)],
        );
        assert_eq!(
            code(&out) == 0,
            ready,
            "{pattern} {body:?}: {}",
            stderr(&out)
        );
    }
}

/// A service that answered "not ready" and then stopped answering: the deadline cuts the
/// attempt in flight, and the run ends not ready (8), as it would have had that answer been
/// the last, not with the deadline's 5 (on a loaded machine the last attempt fitted before
/// the deadline may run into it the same way).
#[test]
fn a_deadline_that_cuts_the_attempt_after_a_not_ready_answer_exits_8() {
    let s = Server::start(vec![Step::status(200, "starting"), Step::Hang]).expect("server");
    let (out, took) = run(&[
        "--until-body",
        "ready",
        "--deadline",
        "1s",
        "--base",
        "20ms",
        "--cap",
        "20ms",
        &s.url("/health"),
    ]);
    let err = stderr(&out);
    assert_eq!(code(&out), 8, "{err}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_eq!(s.requests().len(), 2, "{err}");
    // Said by the decision, or (when a loaded machine keeps the run from ending by itself in
    // time) by the deadline's watchdog, which ends it the same way.
    assert!(err.contains("not ready after 2 attempts"), "{err}");
    assert!(out.stdout.is_empty());
}
