//! curl's retry flags (`--retry`, `--retry-delay`, `--retry-max-time`, `--retry-connrefused`,
//! `--retry-all-errors`) run, on the command line and in `-K` files, as the policy docs/usage.md's
//! table maps them to: a run with curl's flags does what the run with the mapped flags does
//! (exit code, requests, body), never replays what the mapped run would not, says the
//! mapping once, and bad values are usage errors that send nothing.

use crate::common::*;
use std::time::Duration;

/// A fault the server answers the first request with (then 200 "done").
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// 503, then 200.
    Unavailable,
    /// 400, then 200: retried only under --retry-all-errors.
    BadRequest,
    /// The connection reset after the request was read, then 200.
    Reset,
    /// Nothing listens on the port.
    Refused,
}

const FAULTS: [Fault; 4] = [
    Fault::Unavailable,
    Fault::BadRequest,
    Fault::Reset,
    Fault::Refused,
];

/// The script for a fault, `None` when no server runs.
fn script(f: Fault) -> Option<Vec<Step>> {
    let first = match f {
        Fault::Unavailable => Step::status(503, "busy"),
        Fault::BadRequest => Step::status(400, "bad"),
        Fault::Reset => Step::Reset,
        Fault::Refused => return None,
    };
    Some(vec![first, Step::status(200, "done")])
}

/// curl's flags, and the flags of this tool they map to.
const MAPPINGS: [(&[&str], &[&str]); 6] = [
    (&["--retry", "2"], &["--attempts", "3"]),
    (&["--retry", "0"], &["--attempts", "1"]),
    (
        &["--retry", "2", "--retry-all-errors"],
        &["--attempts", "3", "--retry-on", "4xx,5xx"],
    ),
    (
        &["--retry-connrefused", "--retry", "1"],
        &["--attempts", "2"],
    ),
    (
        &["--retry-delay", "0", "--retry", "2"],
        &["--attempts", "3"],
    ),
    (
        &["--retry", "3", "--retry-max-time", "30"],
        &["--attempts", "4", "--deadline", "30s"],
    ),
];

/// The methods tried: idempotent, idempotent with a body, and not idempotent.
const METHODS: [&[&str]; 3] = [&[], &["-X", "PUT", "-d", "x"], &["-d", "x"]];

/// A `-K` file's lines for `flags` (`--name value` as `name = value`, `--name` alone).
fn as_config(flags: &[&str]) -> String {
    let mut lines = String::new();
    let mut it = flags.iter().peekable();
    while let Some(f) = it.next() {
        let name = f.trim_start_matches('-');
        match it.peek() {
            Some(v) if !v.starts_with("--") => {
                lines.push_str(&format!("{name} = \"{v}\"\n"));
                it.next();
            }
            _ => lines.push_str(&format!("{name}\n")),
        }
    }
    lines
}

/// One run: its exit code, the requests the server saw (methods), and stdout.
fn one(fault: Fault, method: &[&str], flags: &[&str]) -> (i32, Vec<String>, Vec<u8>, String) {
    let server = script(fault).map(|s| Server::start(s).expect("server"));
    let url = server
        .as_ref()
        .map_or_else(closed_port_url, |s| s.url("/job"));
    let mut args: Vec<&str> = method.to_vec();
    args.extend(flags);
    args.extend(FAST);
    args.push(&url);
    let (out, _) = run(&args);
    let seen = server
        .map(|s| s.requests().iter().map(|r| r.method.clone()).collect())
        .unwrap_or_default();
    let err = stderr(&out);
    (code(&out), seen, out.stdout, err)
}

#[test]
fn curls_retry_flags_run_as_their_mapping() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut runs = 0;
    for (curl, ours) in MAPPINGS {
        let k = dir.path().join("curlrc");
        std::fs::write(&k, as_config(curl)).expect("write -K");
        let k = k.to_str().expect("utf-8 path").to_string();
        for fault in FAULTS {
            for method in METHODS {
                let want = one(fault, method, ours);
                assert!(
                    !want.3.contains("curl's retry flags"),
                    "no notice without them: {}",
                    want.3
                );
                for given in [curl.to_vec(), vec!["-K", k.as_str()]] {
                    let got = one(fault, method, &given);
                    runs += 1;
                    let what = format!("{given:?} {fault:?} {method:?}: {}", got.3);
                    assert_eq!(got.0, want.0, "exit code, {what}");
                    assert_eq!(got.1, want.1, "requests, {what}");
                    assert_eq!(got.2, want.2, "stdout, {what}");
                    // One notice line, naming each of curl's flags given.
                    let notices: Vec<&str> = got
                        .3
                        .lines()
                        .filter(|l| l.contains("curl's retry flags"))
                        .collect();
                    assert_eq!(notices.len(), 1, "{what}");
                    for flag in curl.iter().filter(|f| f.starts_with("--")) {
                        assert!(notices[0].contains(&format!("{flag} ")), "{flag}: {what}");
                    }
                    // A request that is not idempotent is never sent twice after an answer
                    // or a failure that may mean it was processed.
                    if method == ["-d", "x"] && matches!(fault, Fault::BadRequest | Fault::Reset) {
                        assert!(got.1.len() <= 1, "POST replayed: {what}");
                    }
                }
            }
        }
    }
    // 6 mappings x 4 faults x 3 methods x 2 ways of giving them.
    assert_eq!(runs, 144);
}

#[test]
fn retry_all_errors_retries_a_4xx_for_get_and_never_replays_a_post() {
    let s = Server::start(vec![Step::status(400, "bad"), Step::status(200, "ok")]).unwrap();
    let (out, _) = run_fast(&["-s", "--retry", "3", "--retry-all-errors"], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"ok");
    assert_eq!(s.requests().len(), 2);
    for status in [400, 409, 422, 500] {
        let s = Server::start(vec![Step::status(status, ""), Step::status(200, "ok")]).unwrap();
        let (out, _) = run_fast(
            &["--retry", "3", "--retry-all-errors", "-d", "x"],
            &s.url("/"),
        );
        assert_eq!(code(&out), 3, "{status}: {}", stderr(&out));
        assert_eq!(s.requests().len(), 1, "{status}: POST replayed");
        assert!(
            stderr(&out).contains("--idempotency-key"),
            "{}",
            stderr(&out)
        );
        // With a key it may be replayed, as with --retry-on 4xx,5xx.
        let s = Server::start(vec![Step::status(status, ""), Step::status(200, "ok")]).unwrap();
        let (out, _) = run_fast(
            &[
                "--retry",
                "3",
                "--retry-all-errors",
                "-d",
                "x",
                "--idempotency-key",
                "k1",
            ],
            &s.url("/"),
        );
        let with_ours =
            Server::start(vec![Step::status(status, ""), Step::status(200, "ok")]).unwrap();
        let (ours, _) = run_fast(
            &[
                "--attempts",
                "4",
                "--retry-on",
                "4xx,5xx",
                "-d",
                "x",
                "--idempotency-key",
                "k1",
            ],
            &with_ours.url("/"),
        );
        assert_eq!(code(&out), code(&ours), "{status}: {}", stderr(&out));
        assert_eq!(s.requests().len(), with_ours.requests().len(), "{status}");
    }
}

#[test]
fn retry_delay_is_the_least_wait_and_stays_jittered() {
    let s = Server::start(vec![
        Step::status(503, ""),
        Step::status(503, ""),
        Step::status(503, ""),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let (out, _) = run(&[
        "--retry",
        "3",
        "--retry-delay",
        "0.2",
        "--seed",
        "5",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 4);
    // Never shorter than curl's fixed delay (a lower bound only: load can only lengthen).
    for gap in gaps(&reqs) {
        assert!(gap >= Duration::from_millis(200), "{gap:?}");
    }
    // The planned waits are spread above it, each from 200ms to 400ms, not all the same.
    let waits: Vec<String> = attempt_lines(&out)
        .iter()
        .filter_map(|l| l.split("retry in ").nth(1))
        .map(|w| w.split(' ').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(waits.len(), 3, "{}", stderr(&out));
    assert!(
        waits.iter().any(|w| w != &waits[0]),
        "jitter stays on: {waits:?}"
    );
    let explain = run(&["--retry-delay", "2", "--explain", &s.url("/")]).0;
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(
        text.contains("ceiling = min(cap 2s, base 2s * 2^n); additive jitter"),
        "{text}"
    );
}

#[test]
fn retry_max_time_is_the_deadline() {
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let flags = ["--base", "20ms", "--cap", "20ms", "--jitter", "none"];
    let mut curl = flags.to_vec();
    curl.extend(["--retry", "999", "--retry-max-time", "0.5", "-s"]);
    let url = s.url("/");
    curl.push(&url);
    let (out, took) = run(&curl);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(took >= Duration::from_millis(400), "{took:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let mut ours = flags.to_vec();
    ours.extend(["--attempts", "1000", "--deadline", "500ms", "-s"]);
    ours.push(&url);
    assert_eq!(code(&run(&ours).0), 5);
    // 0 is no limit, as in curl.
    let (out, _) = run(&["--retry-max-time", "0", "--explain", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("deadline      none"), "{text}");
}

#[test]
fn retry_n_is_an_explicit_attempt_count() {
    // A readiness wait with a deadline and no attempt count polls until the deadline;
    // --retry N counts as given, so it stops after N+1 answers.
    let s = Server::start(vec![Step::status(404, "")]).unwrap();
    let (out, took) = run_fast(
        &["--retry", "2", "--until-status", "200", "--deadline", "60s"],
        &s.url("/"),
    );
    assert_eq!(code(&out), 8, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 3);
    assert!(took < Duration::from_secs(30), "{took:?}");
    let (out, _) = run(&["--retry", "4", "--explain", &s.url("/")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("attempts      5 (the first and 4 retries)"),
        "{text}"
    );
}

#[test]
fn the_mapping_is_said_once_and_not_under_silent() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    let all = [
        "--retry",
        "5",
        "--retry-delay",
        "2",
        "--retry-max-time",
        "60",
        "--retry-connrefused",
        "--retry-all-errors",
    ];
    let mut args = all.to_vec();
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let notice: Vec<&str> = err.lines().filter(|l| l.contains("curl's")).collect();
    assert_eq!(notice.len(), 1, "{err}");
    for part in [
        "--retry 5 is --attempts 6",
        "--retry-delay 2 is --base 2s --cap 2s --jitter +2s",
        "--retry-max-time 60 is --deadline 1m",
        "--retry-connrefused changes nothing",
        "--retry-all-errors is --retry-on 4xx,5xx",
    ] {
        assert!(notice[0].contains(part), "{part}: {}", notice[0]);
    }
    // -s: nothing on stderr for a success.
    let mut silent = args.clone();
    silent.insert(0, "-s");
    let (out, _) = run(&silent);
    assert_eq!(code(&out), 0);
    assert_eq!(stderr(&out), "");
    // JSON: an info object.
    let mut json = args.clone();
    json.splice(0..0, ["--log-format", "json"]);
    let (out, _) = run(&json);
    let info = json_lines(&out, "info");
    assert!(
        info.iter().any(|v| v["message"]
            .as_str()
            .is_some_and(|m| m.contains("--attempts 6"))),
        "{}",
        stderr(&out)
    );
    // --explain: on stdout with the policy, not on stderr.
    let mut explain = args.clone();
    explain.insert(0, "--explain");
    let (out, _) = run(&explain);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  curl's flags  --retry 5 is --attempts 6;"),
        "{text}"
    );
    assert!(text.contains("attempts      6 "), "{text}");
    assert!(text.contains("deadline      1m"), "{text}");
    assert!(!stderr(&out).contains("curl's"), "{}", stderr(&out));
    assert_eq!(s.requests().len(), 3, "--explain sends nothing");
}

#[test]
fn bad_values_and_double_givings_are_usage_errors() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("curlrc");
    let k = k.to_str().unwrap();
    for (flags, needle) in [
        (
            &["--retry", "-1"][..],
            "invalid --retry \"-1\": expected a whole number of retries from 0 to 999",
        ),
        (&["--retry", "x"], "invalid --retry \"x\""),
        (&["--retry", "1000"], "from 0 to 999"),
        (&["--retry", "2.5"], "whole number"),
        (
            &["--retry-delay", "-1"],
            "invalid --retry-delay \"-1\": expected a number of seconds",
        ),
        (&["--retry-delay", "soon"], "invalid --retry-delay \"soon\""),
        (
            &["--retry-max-time", "-5"],
            "invalid --retry-max-time \"-5\"",
        ),
        (&["--retry-max-time", "x"], "invalid --retry-max-time"),
        (
            &["--retry", "3", "--attempts", "4"],
            "--retry and --attempts set the same thing",
        ),
        (
            &["--retry-max-time", "9", "--deadline", "9s"],
            "--retry-max-time and --deadline",
        ),
        (
            &["--retry-delay", "1", "--cap", "9s"],
            "--retry-delay and --base, --cap or --jitter",
        ),
        (&["--retry-delay", "1", "--jitter", "none"], "give one"),
    ] {
        let mut args = flags.to_vec();
        args.push(&url);
        let (out, _) = run(&args);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{flags:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{flags:?}: {err}");
        assert!(err.contains(needle), "{flags:?}: {err}");
        // The same line from a -K file names the file and the line (a value is not quoted).
        std::fs::write(k, format!("silent\n{}", as_config(flags))).unwrap();
        let (out, _) = run(&["-K", k, &url]);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "-K {flags:?}: {err}");
        assert_eq!(err.lines().count(), 1, "-K {flags:?}: {err}");
    }
    std::fs::write(k, "retry = -1\n").unwrap();
    let (out, _) = run(&["-K", k, &url]);
    assert!(stderr(&out).contains("line 1: --retry"), "{}", stderr(&out));
    assert_eq!(s.requests().len(), 0, "a usage error sent a request");
}

#[test]
fn a_flag_beats_its_variable() {
    // RETRY_HTTP_ATTEMPTS and RETRY_HTTP_DEADLINE give way to --retry and --retry-max-time,
    // as variables give way to flags.
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let out = command()
        .env("RETRY_HTTP_ATTEMPTS", "9")
        .env("RETRY_HTTP_DEADLINE", "1h")
        .env("RETRY_HTTP_BASE", "1ms")
        .env("RETRY_HTTP_CAP", "5ms")
        .args([
            "--retry",
            "1",
            "--retry-max-time",
            "30",
            "--explain",
            &s.url("/"),
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("attempts      2 "), "{text}");
    assert!(text.contains("deadline      30s"), "{text}");
    let out = command()
        .env("RETRY_HTTP_JITTER", "none")
        .args(["--retry-delay", "1", "--explain", &s.url("/")])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("additive jitter"));
}
