//! The fleet's shared state under hostile input, through the real binary: a record written
//! by hand means the same to `--state FILE` and `--state redis://` (both keep it, or both
//! say it is not valid and start afresh), and a Redis server that quotes the password it
//! was sent, cut short, has no piece of it repeated in the warning, the JSON log or
//! `--explain`.

use crate::common::*;
use crate::state_redis::redis_server::RedisServer;
use quoting_redis::{LONG_PASSWORD, password_start};
use serde_json::Value;

#[path = "../support/quoting_redis.rs"]
mod quoting_redis;

/// One target's record as the file store keeps it, `target` its JSON text.
fn state_file(dir: &std::path::Path, key: &str, target: &str) -> std::path::PathBuf {
    let path = dir.join("state.json");
    let text = format!(
        "{{\"format\":\"retry-http-state\",\"version\":2,\"targets\":{{{}:{target}}}}}",
        Value::String(key.to_string())
    );
    std::fs::write(&path, text).expect("the state file is written");
    path
}

/// What one failed run (`--attempts 1` against a 503) says of the record it found, and the
/// record's failure count after it: (whether it warned that it started afresh, failures).
fn after_a_failed_run(state: &str, s: &Server, read: impl Fn() -> Value) -> (bool, u64) {
    let (out, _) = run(&["--attempts", "1", "--state", state, &s.url("/")]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let afresh = stderr(&out).contains("starting");
    let failures = read()["breaker"]["failures"]
        .as_u64()
        .expect("a count of failures");
    (afresh, failures)
}

/// Records written by hand whose numbers or lists JSON readers take differently (Lua's
/// cjson, which the Redis store's script decodes with, takes 2.0 for 2, 0x2 for a number,
/// `{}` for an empty list and 2^53 + 1 for 2^53): the file store and the Redis store
/// agree on each, and one they keep goes on from the count it held.
#[test]
fn a_hand_written_record_means_the_same_to_both_stores() {
    let s = Server::start(vec![Step::status(503, "down")]).expect("server");
    let key = s.url("");
    let r = RedisServer::start();
    let kept = |t: &str| format!("{{\"breaker\":{{\"failures\":2{t}}},\"budget\":[]}}");
    let cases = [
        (kept(""), true),
        (kept(",\"x\":1.5"), true),
        (kept(",\"probe_id\":9007199254740993"), false),
        (
            "{\"breaker\":{\"failures\":2.0},\"budget\":[]}".to_string(),
            false,
        ),
        (
            "{\"breaker\":{\"failures\":2e0},\"budget\":[]}".to_string(),
            false,
        ),
        (
            "{\"breaker\":{\"failures\":0x2},\"budget\":[]}".to_string(),
            false,
        ),
        (
            "{\"breaker\":{\"failures\":2},\"budget\":{}}".to_string(),
            false,
        ),
        (
            "{\"breaker\":{\"failures\":2},\"budget\":[[5,1.0,0]]}".to_string(),
            false,
        ),
    ];
    for (target, valid) in cases {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = state_file(dir.path(), &key, &target);
        let file = after_a_failed_run(&path.display().to_string(), &s, || {
            let text = std::fs::read_to_string(&path).expect("the state file");
            let v: Value = serde_json::from_str(&text).expect("JSON");
            v["targets"][&key].clone()
        });
        let record = format!("{{\"format\":\"retry-http-state\",\"rev\":1,\"target\":{target}}}");
        r.cli(&["SET", &format!("retry-http:{key}"), &record]);
        let redis = after_a_failed_run(&r.url(), &s, || {
            let text = r.cli(&["GET", &format!("retry-http:{key}")]);
            let v: Value = serde_json::from_str(&text).expect("JSON");
            v["target"].clone()
        });
        let want = if valid { (false, 3) } else { (true, 1) };
        assert_eq!(file, want, "the file store, {target}");
        assert_eq!(redis, want, "the Redis store, {target}");
    }
}

/// No piece of the password (8 characters or more) in the text log, the JSON log or
/// `--explain`, though the server quoted its start in every answer.
#[test]
fn a_store_quoting_the_password_cut_short_is_not_repeated() {
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let state = format!(
        "redis://ops:{LONG_PASSWORD}@127.0.0.1:{}",
        quoting_redis::start(|sent| format!("-ERR you said {}\r\n", password_start(sent)))
    );
    let url = s.url("/");
    let runs = [
        vec!["--state", &state, &url],
        vec!["--log-format", "json", "--state", &state, &url],
        vec!["--explain", "--state", &state, &url],
    ];
    for args in runs {
        let (out, _) = run(&args);
        let said = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
        assert!(
            said.contains("you said"),
            "the server's words are shown: {said}"
        );
        for piece in LONG_PASSWORD.as_bytes().windows(8) {
            let piece = std::str::from_utf8(piece).expect("ASCII");
            assert!(!said.contains(piece), "{piece} in {said}");
        }
    }
}
