//! `--splay`: the wait before the first attempt, at an offset stable for a host and a target
//! and spread over a fleet; cut by the deadline so that the first attempt fits; shown by
//! `--explain` without waiting; ended at once by a signal, before the store is asked.
//!
//! Every run names its host with `RETRY_HTTP_HOST_ID` and reaches the scripted server as
//! `http://api.example.test/` through `--connect-to`, so the target (and so every offset)
//! is the same whatever port the server got: the offsets below were computed apart, with
//! Python's hashlib, as the first 64 bits of SHA-256(id, NUL, "http://api.example.test:80")
//! scaled to the splay.

use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The URL every run asks for; `--connect-to` sends it to the server.
const URL: &str = "http://api.example.test/";

/// The target key the offsets are derived from.
const TARGET: &str = "http://api.example.test:80";

/// The flags that send [`URL`] to `server`.
fn to(server: &Server) -> Vec<String> {
    let port = server
        .url("")
        .rsplit(':')
        .next()
        .expect("a port")
        .to_string();
    vec![
        "--connect-to".into(),
        format!("api.example.test:80:127.0.0.1:{port}"),
    ]
}

/// The binary as host `id`, with `args` and then [`URL`] sent to `server`, its log in JSON.
fn splayed(id: &str, server: &Server, args: &[&str]) -> std::process::Command {
    let mut cmd = std_command();
    cmd.env("RETRY_HTTP_HOST_ID", id)
        .args(to(server))
        .args(["--log-format", "json"])
        .args(args)
        .arg(URL);
    cmd
}

/// Runs host `id` as [`splayed`] to its end.
fn run_as(id: &str, server: &Server, args: &[&str]) -> std::process::Output {
    splayed(id, server, args).output().expect("the binary runs")
}

/// The one `splay` object of a JSON log.
fn splay_line(out: &std::process::Output) -> Value {
    let lines = json_lines(out, "splay");
    assert_eq!(lines.len(), 1, "one splay line: {}", stderr(out));
    lines[0].clone()
}

/// The offset a splay line states.
fn offset_of(line: &Value) -> Duration {
    Duration::from_micros(line["offset_us"].as_u64().expect("offset_us"))
}

fn ok_server(n: usize) -> Server {
    Server::start((0..n).map(|_| Step::status(200, "ok")).collect()).unwrap()
}

/// The same host towards the same target starts at the same offset on every run, the one
/// derived from its name and the target; another target gives another offset. The text
/// log says it in one line.
#[test]
fn a_hosts_offset_is_the_same_every_run_and_told_in_the_log() {
    let s = ok_server(4);
    let first = run_as("web-17", &s, &["--splay", "300ms"]);
    let second = run_as("web-17", &s, &["--splay", "300ms"]);
    for out in [&first, &second] {
        assert_eq!(code(out), 0, "{}", stderr(out));
    }
    let (a, b) = (splay_line(&first), splay_line(&second));
    assert_eq!(offset_of(&a), Duration::from_micros(199_162), "{a}");
    assert_eq!(offset_of(&a), offset_of(&b));
    assert_eq!(a["host"], "web-17");
    assert_eq!(a["host_from"], "RETRY_HTTP_HOST_ID");
    assert_eq!(a["target"], TARGET);
    assert_eq!(
        (a["splay_ms"].as_u64(), a["span_ms"].as_u64()),
        (Some(300), Some(300))
    );
    assert_eq!(a["cut"], false);
    assert!(a["wait_us"].as_u64() <= a["offset_us"].as_u64(), "{a}");

    let other = std_command()
        .env("RETRY_HTTP_HOST_ID", "web-17")
        .args([
            "--connect-to",
            &to(&s)[1].replace("api.example.test", "other.example.test"),
        ])
        .args([
            "--splay",
            "300ms",
            "--log-format",
            "json",
            "http://other.example.test/",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&other), 0, "{}", stderr(&other));
    assert_eq!(
        offset_of(&splay_line(&other)),
        Duration::from_micros(298_155)
    );

    let text = std_command()
        .env("RETRY_HTTP_HOST_ID", "web-17")
        .args(to(&s))
        .args(["--splay", "300ms", URL])
        .output()
        .unwrap();
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    let log = stderr(&text);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "the splay's line, then the attempt's: {log}"
    );
    assert!(
        lines[0].starts_with(
            "retry-http: splay: offset 199ms of 300ms for host web-17 ($RETRY_HTTP_HOST_ID) \
             and http://api.example.test:80; waiting "
        ) && lines[0].ends_with(" before the first attempt"),
        "{log}"
    );
    assert_eq!(s.requests().len(), 4);
}

/// A fleet's offsets, as each host's log states them, are all different and cover the
/// splay: twelve hosts over 300ms leave no gap over a quarter of it.
#[test]
fn a_fleets_offsets_are_spread_over_the_splay() {
    let s = ok_server(12);
    let children: Vec<Child> = (0..12)
        .map(|i| {
            splayed(&format!("host-{i}"), &s, &["--splay", "300ms"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let mut offsets: Vec<Duration> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            offset_of(&splay_line(&out))
        })
        .collect();
    offsets.sort();
    let splay = Duration::from_millis(300);
    let mut edges = vec![Duration::ZERO];
    edges.extend(&offsets);
    edges.push(splay);
    let widest = edges.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(widest <= splay / 4, "a gap of {widest:?}: {offsets:?}");
    let mut distinct = offsets.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), 12, "{offsets:?}");
    assert_eq!(s.requests().len(), 12);
}

/// The wait happens: the request reaches the server no earlier than the offset the log
/// states, counted from before the process was started (a lower bound only).
#[test]
fn the_first_request_waits_for_the_offset() {
    let s = ok_server(1);
    let started = Instant::now();
    let out = run_as("web-17", &s, &["--splay", "1s"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let offset = offset_of(&splay_line(&out));
    assert_eq!(offset, Duration::from_micros(663_874));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 1);
    let reached = reqs[0].at.duration_since(started);
    assert!(
        reached >= offset,
        "reached after {reached:?}, offset {offset:?}"
    );
    let attempt = &json_lines(&out, "attempt")[0];
    assert!(
        attempt["start_ms"].as_u64() >= Some(663),
        "the attempt starts after the splay: {attempt}"
    );
}

/// A deadline shorter than the offset cuts the splay to half of it: the run still makes
/// its attempt, and a run against a failing server ends by its deadline (5), long before
/// the uncut offset (13.3s of 20s).
#[test]
fn the_deadline_cuts_the_splay_and_the_first_attempt_still_fits() {
    let s = ok_server(1);
    let out = run_as("web-17", &s, &["--splay", "20s", "--deadline", "1s"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = splay_line(&out);
    assert_eq!(line["cut"], true, "{line}");
    assert_eq!(line["span_ms"].as_u64(), Some(500), "{line}");
    // The same place in the cut splay: 13.28s of 20s is 331.9ms of 500ms.
    assert_eq!(offset_of(&line), Duration::from_micros(331_937));
    assert!(
        line["message"]
            .as_str()
            .unwrap_or("")
            .contains("of 500ms (the 20s splay cut to leave the run 500ms of its 1s deadline)"),
        "{line}"
    );
    assert_eq!(s.requests().len(), 1);

    let failing = Server::start(vec![Step::status(503, "down")]).unwrap();
    let t = Instant::now();
    let out = run_as(
        "web-17",
        &failing,
        &[
            "--splay",
            "20s",
            "--deadline",
            "1s",
            "--base",
            "50ms",
            "--cap",
            "100ms",
        ],
    );
    let took = t.elapsed();
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(!failing.requests().is_empty(), "the first attempt was made");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let summary = &json_lines(&out, "summary")[0];
    assert!(summary["attempts_made"].as_u64() >= Some(1), "{summary}");
}

/// `RETRY_HTTP_SPLAY` sets the splay, the flag beats it, `--splay 0` is none; without
/// `RETRY_HTTP_HOST_ID` the host is named by its host name.
#[test]
fn the_splay_and_the_host_come_from_the_environment() {
    let s = ok_server(4);
    let from_env = splayed("web-17", &s, &[])
        .env("RETRY_HTTP_SPLAY", "300ms")
        .output()
        .unwrap();
    assert_eq!(code(&from_env), 0, "{}", stderr(&from_env));
    assert_eq!(splay_line(&from_env)["splay_ms"].as_u64(), Some(300));

    let flag_wins = splayed("web-17", &s, &["--splay", "300ms"])
        .env("RETRY_HTTP_SPLAY", "1h")
        .output()
        .unwrap();
    assert_eq!(code(&flag_wins), 0, "{}", stderr(&flag_wins));
    assert_eq!(splay_line(&flag_wins)["splay_ms"].as_u64(), Some(300));

    let none = splayed("web-17", &s, &["--splay", "0"])
        .env("RETRY_HTTP_SPLAY", "1h")
        .output()
        .unwrap();
    assert_eq!(code(&none), 0, "{}", stderr(&none));
    assert!(json_lines(&none, "splay").is_empty(), "{}", stderr(&none));

    let named = std_command()
        .args(to(&s))
        .args(["--splay", "1ms", "--log-format", "json", URL])
        .output()
        .unwrap();
    assert_eq!(code(&named), 0, "{}", stderr(&named));
    let line = splay_line(&named);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name");
    assert_eq!(line["host"], host.trim_end(), "{line}");
    assert_eq!(line["host_from"], "hostname", "{line}");
    assert_eq!(s.requests().len(), 4);
}

/// A bad command line: its flags, its environment, and what its error says.
type BadCase = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// A value that is no duration, from the flag or its variable, and an empty host id, are
/// usage errors: one line naming what was wrong and what is accepted, exit 2, nothing sent.
#[test]
fn bad_values_are_usage_errors_and_nothing_is_sent() {
    let s = ok_server(1);
    let cases: [BadCase; 5] = [
        (
            &["--splay", "soon"],
            &[],
            "invalid value 'soon' for '--splay <DURATION>'",
        ),
        (&["--splay", "-5s"], &[], "negative duration \"-5s\""),
        (
            &["--splay", "5"],
            &[],
            "invalid value '5' for '--splay <DURATION>'",
        ),
        (
            &[],
            &[("RETRY_HTTP_SPLAY", "5x")],
            "(the value comes from $RETRY_HTTP_SPLAY)",
        ),
        (
            &["--splay", "1s"],
            &[("RETRY_HTTP_HOST_ID", " ")],
            "$RETRY_HTTP_HOST_ID is empty: expected a name for this host",
        ),
    ];
    for (args, env, said) in cases {
        let mut cmd = splayed("web-17", &s, args);
        cmd.envs(env.iter().copied());
        let out = cmd.output().unwrap();
        assert_eq!(code(&out), 2, "{args:?} {env:?}: {}", stderr(&out));
        let errors = json_lines(&out, "error");
        assert_eq!(errors.len(), 1, "{}", stderr(&out));
        let message = errors[0]["message"].as_str().unwrap_or("");
        assert!(message.contains(said), "{args:?} {env:?}: {message}");
        if !said.contains("HOST_ID") {
            assert!(
                message.contains("expected a number with a unit"),
                "{message}"
            );
        }
    }
    assert!(s.requests().is_empty(), "a usage error sent a request");
}

/// `--explain` shows the host, where its name came from, the target, the offset and
/// whether the deadline cuts the splay, and waits for none of it.
#[test]
fn explain_shows_the_splay_without_waiting() {
    let s = ok_server(1);
    let t = Instant::now();
    let out = run_as("web-17", &s, &["--splay", "1h", "--explain"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains(
            "  splay         offset 39m49s of 1h for host web-17 ($RETRY_HTTP_HOST_ID) and \
             http://api.example.test:80: the first attempt starts that long after start-up \
             (no deadline to cut it)"
        ),
        "{text}"
    );
    let out = run_as(
        "web-17",
        &s,
        &[
            "--splay",
            "1h",
            "--deadline",
            "2s",
            "--timeout",
            "200ms",
            "--explain",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains(
            "offset 1.19s of 1.8s (the 1h splay cut to leave the run 200ms of its 2s deadline)"
        ) && text.contains("(cut by the deadline)"),
        "{text}"
    );
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert!(s.requests().is_empty(), "--explain sent a request");
}

/// A signal during the splay ends the run at once with its exit status (143 for SIGTERM):
/// nothing sent, and the `--state` file never touched (the splay comes before the store
/// is asked). A run whose splay ends does write it.
#[test]
fn a_signal_during_the_splay_ends_the_run_before_the_store_is_asked() {
    let s = ok_server(1);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let state_arg = state.to_str().unwrap();
    let mut cmd = splayed("web-17", &s, &["--splay", "1m", "--state", state_arg]);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let first = lines.next().expect("a line").expect("text");
    let line: Value = serde_json::from_str(&first).expect("a JSON line");
    assert_eq!(line["type"], "splay", "{first}");
    assert_eq!(offset_of(&line), Duration::from_micros(39_832_484));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the store was asked"
    );
    let sent = Instant::now();
    // SAFETY: kill only sends a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(status.code(), Some(143), "{rest:?}");
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "{:?}",
        sent.elapsed()
    );
    let summary: Value = serde_json::from_str(rest.last().expect("a summary")).unwrap();
    assert_eq!(summary["outcome"], "terminated", "{summary}");
    assert_eq!(summary["attempts_made"], 0, "{summary}");
    assert_eq!(summary["state"], "none", "{summary}");
    assert!(s.requests().is_empty(), "a request was sent");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the store was asked"
    );

    let done = run_as("web-17", &s, &["--splay", "1ms", "--state", state_arg]);
    assert_eq!(code(&done), 0, "{}", stderr(&done));
    assert!(
        state.exists(),
        "a run that ends records itself in the store"
    );
}
