//! `--explain`: the policy printed as a table (the waits, the deadline, the replay rule),
//! for the example policies of docs/policy.md, without sending a request.

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
    assert!(text.contains("honoured up to 1m "), "{text}");
    assert!(text.contains("POST is not idempotent"), "{text}");
    // How the origin is paced: a batch's pacer, and the settled rate it ends with.
    let pacing = text
        .lines()
        .find(|l| l.trim_start().starts_with("pacing "))
        .unwrap_or_else(|| panic!("no pacing line: {text}"));
    assert!(pacing.contains("a run of one URL is not paced"), "{pacing}");
    assert!(
        pacing.contains("the rate each origin settled at"),
        "{pacing}"
    );
}
