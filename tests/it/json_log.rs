//! `--log-format json` is a contract: every stderr line is one JSON object, and every run
//! ends with exactly one `summary` object, as the last line, carrying a `reason` (usage
//! errors from clap included). In either format each line is written whole, so the logs of
//! runs that share one file never interleave.

use crate::common::*;
use std::process::{Output, Stdio};
use std::time::Duration;

/// Runs the binary with `args` and the given environment (on top of the cleared one).
fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = std_command();
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("binary runs")
}

/// Checks the contract and returns the summary object.
fn contract(out: &Output, what: &str) -> serde_json::Value {
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().collect();
    assert!(!lines.is_empty(), "{what}: nothing on stderr");
    let objects: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {l}\n{err}"))
        })
        .collect();
    for v in &objects {
        assert!(v.is_object() && v["type"].is_string(), "{what}: {v}");
    }
    let summaries = objects.iter().filter(|v| v["type"] == "summary").count();
    assert_eq!(summaries, 1, "{what}: one summary expected:\n{err}");
    let summary = objects.last().unwrap().clone();
    assert_eq!(
        summary["type"], "summary",
        "{what}: the summary comes last:\n{err}"
    );
    for key in [
        "outcome",
        "exit_code",
        "attempts_made",
        "elapsed_ms",
        "seed",
        "reason",
    ] {
        assert!(summary.get(key).is_some(), "{what}: no {key}: {summary}");
    }
    assert_eq!(
        summary["exit_code"],
        code(out),
        "{what}: exit code: {summary}"
    );
    if summary["outcome"] == "success" {
        assert!(summary["reason"].is_null(), "{what}: {summary}");
    } else {
        let reason = summary["reason"].as_str().unwrap_or_default();
        assert!(!reason.is_empty(), "{what}: a failure says why: {summary}");
    }
    summary
}

#[test]
fn success_and_exhaustion() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let mut args = vec!["--log-format", "json"];
    args.extend(FAST);
    args.push("-v");
    let url = s.url("/");
    args.push(&url);
    let summary = contract(&run_env(&args, &[]), "success");
    assert_eq!(summary["outcome"], "success");

    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/");
    let mut args = vec!["--log-format=json", "--attempts", "2"];
    args.extend(FAST);
    args.push(&url);
    let summary = contract(&run_env(&args, &[]), "503 exhausted");
    assert_eq!(summary["outcome"], "attempts_exhausted");
    assert_eq!(summary["attempts_made"], 2);
    assert_eq!(summary["reason"], "giving up: no attempts left");

    let s = Server::start(vec![Step::status(404, "")]).unwrap();
    let url = s.url("/");
    let summary = contract(
        &run_env(&["-s", &url], &[("RETRY_HTTP_LOG_FORMAT", "json")]),
        "404 from the env var, -s",
    );
    assert_eq!(summary["outcome"], "non_retryable_response");
    assert!(
        summary["reason"]
            .as_str()
            .unwrap()
            .contains("not in --retry-on"),
        "{summary}"
    );
}

/// Arguments, environment variables, and what the error must mention.
type UsageCase<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, &'a str);

#[test]
fn usage_errors_of_every_kind() {
    let url = closed_port_url();
    let cases: Vec<UsageCase> = vec![
        // clap: a value the parser rejects, an unknown flag, a missing value, a bad enum.
        (
            vec!["--attempts", "0", &url],
            vec![],
            "invalid attempt count",
        ),
        (vec!["--bogus", &url], vec![], "--bogus"),
        (vec![&url, "--jitter"], vec![], "--jitter"),
        (vec!["--color", "mauve", &url], vec![], "mauve"),
        (vec![], vec![], "required"),
        (
            vec!["GET", &url, "extra"],
            vec![],
            "URL 2 of 2: a bare word",
        ),
        // A bad value from the environment.
        (
            vec![&url],
            vec![("RETRY_HTTP_DEADLINE", "5")],
            "RETRY_HTTP_DEADLINE",
        ),
        // The JSON log asked for by the environment, and the error from clap.
        (
            vec!["--attempts", "x", &url],
            vec![],
            "invalid attempt count",
        ),
        // config::build and later checks.
        (vec!["ftp://h/"], vec![], "unsupported URL scheme"),
        (vec!["--base", "10s", "--cap", "1s", &url], vec![], "--base"),
        (vec!["-d", "@/no/such/file", &url], vec![], "/no/such/file"),
        (vec!["-o", "/no/such/dir/out", &url], vec![], "/no/such/dir"),
        (
            vec!["--retry", "3", "--attempts", "4", &url],
            vec![],
            "--retry and --attempts",
        ),
        (
            vec!["-x", "http://exa mple:1", &url],
            vec![],
            "invalid proxy",
        ),
    ];
    for (i, (args, env, needle)) in cases.iter().enumerate() {
        let mut all = vec!["--log-format", "json"];
        let mut env = env.clone();
        if i % 2 == 1 {
            // Every other case asks through the environment instead.
            all.clear();
            env.push(("RETRY_HTTP_LOG_FORMAT", "json"));
        }
        all.extend(args);
        let out = run_env(&all, &env);
        let what = format!("{all:?} {env:?}");
        assert_eq!(code(&out), 2, "{what}: {}", stderr(&out));
        let summary = contract(&out, &what);
        assert_eq!(summary["outcome"], "usage", "{what}");
        assert_eq!(summary["attempts_made"], 0, "{what}");
        let reason = summary["reason"].as_str().unwrap();
        assert!(
            reason.contains(needle),
            "{what}: {reason:?} lacks {needle:?}"
        );
        let errors = json_lines(&out, "error");
        assert_eq!(errors.len(), 1, "{what}: {}", stderr(&out));
        assert!(
            errors[0]["message"].as_str().unwrap().contains(needle),
            "{what}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_usage_error_with_secrets_is_masked_in_json_too() {
    let out = run_env(
        &[
            "--log-format",
            "json",
            "-H",
            "PRIVATE-TOKEN=glpat-S3CRET",
            "http://h.test/",
        ],
        &[],
    );
    let err = stderr(&out);
    assert!(!err.contains("glpat-S3CRET"), "{err}");
    let summary = contract(&out, "masked header");
    assert!(
        summary["reason"]
            .as_str()
            .unwrap()
            .contains("PRIVATE-TOKEN=***"),
        "{summary}"
    );
    let out = run_env(
        &["bob:hunt3r2@127.0.0.1:9/path"],
        &[("RETRY_HTTP_LOG_FORMAT", "json")],
    );
    assert!(!stderr(&out).contains("hunt3r2"), "{}", stderr(&out));
    contract(&out, "masked URL");
}

#[test]
fn text_stays_text() {
    // A flag given later wins over the environment, and a bad format value means text.
    for (args, env) in [
        (
            vec![
                "--log-format",
                "json",
                "--log-format",
                "text",
                "--attempts",
                "0",
            ],
            vec![],
        ),
        (
            vec!["--log-format", "text", "--attempts", "0"],
            vec![("RETRY_HTTP_LOG_FORMAT", "json")],
        ),
        (vec!["--log-format", "jsn", "--attempts", "0"], vec![]),
        (
            vec!["--attempts", "0", "--", "--log-format", "json"],
            vec![],
        ),
    ] {
        let mut args = args;
        args.push("http://h.test/");
        let out = run_env(&args, &env);
        assert_eq!(code(&out), 2);
        let err = stderr(&out);
        assert!(err.starts_with("retry-http: error: "), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn explain_help_and_version() {
    // --explain prints on stdout, and its run gets a summary like any other.
    let out = run_env(
        &[
            "--log-format",
            "json",
            "--explain",
            "--seed",
            "3",
            "http://h.test/",
        ],
        &[],
    );
    assert_eq!(code(&out), 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("policy for GET"));
    let summary = contract(&out, "--explain");
    assert_eq!(summary["attempts_made"], 0);
    assert_eq!(summary["seed"], 3);
    // Help and version are not runs: stdout only, nothing on stderr.
    for flag in ["--help", "-h", "--version"] {
        let out = run_env(&["--log-format", "json", flag], &[]);
        assert_eq!(code(&out), 0, "{flag}");
        assert!(out.stderr.is_empty(), "{flag}: {}", stderr(&out));
        assert!(!out.stdout.is_empty(), "{flag}");
    }
}

#[test]
fn refused_by_the_breaker_and_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let f = file.to_str().unwrap();
    let down = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = down.url("/");
    let args = [
        "--log-format",
        "json",
        "--state",
        f,
        "--breaker-threshold",
        "1",
        "--breaker-cooldown",
        "60s",
        "--attempts",
        "1",
        &url,
    ];
    let summary = contract(&run_env(&args, &[]), "the run that opens the circuit");
    assert_eq!(summary["outcome"], "attempts_exhausted");
    let out = run_env(&args, &[]);
    let summary = contract(&out, "refused by the breaker");
    assert_eq!(summary["outcome"], "refused");
    assert_eq!(summary["attempts_made"], 0);
    let reason = summary["reason"].as_str().unwrap();
    assert!(reason.contains("circuit is open"), "{reason}");
    assert_eq!(down.requests().len(), 1);

    // The budget: refused between attempts, the reason is the attempt line's. A first run
    // spends the floor of one retry with its own, which then counts against the others.
    let file = dir.path().join("budget.json");
    let f = file.to_str().unwrap();
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/");
    let spend = |f: &str| {
        let mut args = vec!["--state", f, "--budget-floor", "1", "--attempts", "2"];
        args.extend(FAST);
        args.push(&url);
        assert_eq!(code(&run_env(&args, &[])), 4);
    };
    spend(f);
    let mut args = vec![
        "--log-format",
        "json",
        "--state",
        f,
        "--budget-floor",
        "1",
        "--attempts",
        "5",
    ];
    args.extend(FAST);
    args.push(&url);
    let out = run_env(&args, &[]);
    let summary = contract(&out, "refused by the budget");
    assert_eq!(summary["outcome"], "refused");
    let reason = summary["reason"].as_str().unwrap();
    assert!(reason.contains("retry budget is spent"), "{reason}");
    let attempts = json_lines(&out, "attempt");
    assert_eq!(attempts.last().unwrap()["stop"], reason);

    // In text, the summary line says why too.
    let file = dir.path().join("budget2.json");
    let f = file.to_str().unwrap();
    spend(f);
    let mut args = vec!["--state", f, "--budget-floor", "1", "--attempts", "5"];
    args.extend(FAST);
    args.push(&url);
    let out = run_env(&args, &[]);
    assert_eq!(code(&out), 7);
    let err = stderr(&out);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("retry-http: error: refused after 1 attempt ")
            && last.contains("retry budget is spent"),
        "{err}"
    );
}

#[test]
fn deadlines() {
    // The next wait would cross the deadline.
    let s = Server::start(vec![Step::with_header(503, "Retry-After", "5")]).unwrap();
    let url = s.url("/");
    let out = run_env(&["--log-format", "json", "--deadline", "2s", &url], &[]);
    let summary = contract(&out, "deadline before a wait");
    assert_eq!(summary["outcome"], "deadline");
    assert!(
        summary["reason"]
            .as_str()
            .unwrap()
            .contains("past the deadline"),
        "{summary}"
    );

    // The deadline passes while the body is still being read from stdin (long enough for
    // the run to have begun reading at a load average of 15: 300 ms was not, at 6).
    let mut child = std_command()
        .args(["--log-format", "json", "--deadline", "2s", "-d", "@-", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdin = child.stdin.take();
    let out = child.wait_with_output().expect("waits");
    drop(stdin);
    let summary = contract(&out, "deadline while reading stdin");
    assert_eq!(summary["outcome"], "deadline");
    assert!(
        summary["reason"]
            .as_str()
            .unwrap()
            .contains("still being read"),
        "{summary}"
    );
    assert_eq!(s.requests().len(), 1, "nothing sent by the second run");
}

#[test]
fn a_terminated_run_ends_with_its_summary() {
    let s = Server::start(vec![Step::with_header(503, "Retry-After", "30")]).unwrap();
    let url = s.url("/");
    let child = std_command()
        .args(["--log-format", "json", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while s.requests().is_empty() {
        assert!(std::time::Instant::now() < until, "no request");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill only sends a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 143);
    let summary = contract(&out, "SIGTERM");
    assert_eq!(summary["outcome"], "terminated");
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

/// 32 runs at once, each with 3 attempts against a failing server and a warning (a store
/// that refuses connections), all appending their stderr to one file (`2>>log`): `format`'s
/// lines, each written whole, as many as the runs wrote.
fn lines_of_runs_sharing_one_log(format: &str) -> Vec<String> {
    const RUNS: usize = 32;
    let s = Server::start(vec![Step::status(500, "")]).unwrap();
    let url = s.url("/");
    // Port 1: nothing listens there.
    let state = "redis://127.0.0.1:1";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    let runs: Vec<_> = (0..RUNS)
        .map(|_| {
            std_command()
                .args(["--log-format", format, "--state", state])
                .args([
                    "--attempts",
                    "3",
                    "--base",
                    "10ms",
                    "--jitter",
                    "none",
                    &url,
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log.try_clone().unwrap())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for mut run in runs {
        assert_eq!(run.wait().unwrap().code(), Some(4), "{format}");
    }
    assert_eq!(s.requests().len(), RUNS * 3);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<String> = text.lines().map(String::from).collect();
    assert_eq!(
        lines.len(),
        RUNS * (3 + 1 + 1),
        "{format}: 3 attempts, a warning and a summary each:\n{text}"
    );
    lines
}

#[test]
fn runs_sharing_one_log_never_interleave_their_lines() {
    // Three rounds of each format: two lines written in pieces meet in some rounds only.
    for line in (0..3).flat_map(|_| lines_of_runs_sharing_one_log("text")) {
        assert!(
            line.starts_with("retry-http: ") && line.matches("retry-http:").count() == 1,
            "{line}"
        );
    }
    for line in (0..3).flat_map(|_| lines_of_runs_sharing_one_log("json")) {
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v["type"].is_string(), "{line}");
    }
}

/// `--version` alone is answered before the command line is built; it says what clap says
/// when `--version` comes with other flags (which goes through clap), and so does `-V`.
#[test]
fn version_alone_says_what_clap_says() {
    let through_clap = run_env(&["--log-format", "text", "--version"], &[]);
    assert_eq!(code(&through_clap), 0);
    let expected = format!("retry-http {}\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(String::from_utf8_lossy(&through_clap.stdout), expected);
    for flag in ["--version", "-V"] {
        let out = run_env(&[flag], &[]);
        assert_eq!(code(&out), 0, "{flag}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{flag}");
        assert!(out.stderr.is_empty(), "{flag}: {}", stderr(&out));
    }
}
