//! `--idempotency-key auto` with `--state`: the job's key kept in the state until the job's
//! answer is final, on a state file, a Redis server and a Redis Cluster. A run whose
//! outcome is unknown (the server read the request, then the connection was reset; retries
//! ending on a 503) leaves the key, and the next run of the same request sends it again;
//! a final answer (a success, a status not retried) retires it, and the next run sends a
//! new one. Different bodies are different jobs; a key given by hand is left alone; a
//! store that cannot be used leaves a fresh key and says so; `--explain` shows the key kept;
//! the store holds the key, never the URL's path or the body.

use crate::common::*;
use crate::state_cluster::redis_cluster::RedisCluster;
use crate::state_redis::Backend;
use serde_json::Value;
use std::process::Output;

/// `-w`'s line: the key the run sent, after the body.
const KEY_OUT: &str = "\n%{idempotency_key}\n";

/// One run of the job: POST `body` to `url` with `--idempotency-key auto`, its key kept in
/// `state`, a single attempt (and `extra`).
fn post(state: &str, url: &str, body: &str, extra: &[&str]) -> Output {
    let base = [
        "--state",
        state,
        "--idempotency-key",
        "auto",
        "-d",
        body,
        "--attempts",
        "1",
        "-w",
        KEY_OUT,
    ];
    run(&[&base[..], extra, &[url]].concat()).0
}

/// The key a run sent, as `-w` wrote it (the last line of stdout).
fn key_of(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let key = text.lines().last().unwrap_or_default().to_string();
    assert_eq!(key.len(), 36, "a UUID: {text:?}; {}", stderr(out));
    key
}

/// The Idempotency-Key of every request the server saw, in order.
fn sent(s: &Server) -> Vec<String> {
    s.requests()
        .iter()
        .map(|r| r.header("idempotency-key").unwrap_or_default().to_string())
        .collect()
}

/// The job's whole cycle on the store `state`: an ambiguous failure (the request read, the
/// connection reset) keeps the key; the next run sends it again and says from when; its
/// success retires it, and a third run sends a new key. `record` reads the target's record.
fn a_job_keeps_its_key_until_its_answer_is_final(state: &str, record: &dyn Fn(&str) -> Value) {
    let s = Server::start(vec![
        Step::Reset,
        Step::status(200, "done"),
        Step::status(200, "again"),
    ])
    .expect("server");
    let url = s.url("/jobs/nightly");
    let first = post(state, &url, "job=1", &[]);
    assert!(![0, 2].contains(&code(&first)), "{}", stderr(&first));
    let k1 = key_of(&first);
    let new = stderr(&first);
    assert!(
        new.contains(&format!("Idempotency-Key: {k1} (new, kept")),
        "{new}"
    );
    let jobs = record(&s.url(""))["jobs"].clone();
    assert_eq!(jobs.as_array().map(Vec::len), Some(1), "kept: {jobs}");
    assert_eq!(jobs[0][1], k1.as_str(), "{jobs}");
    let second = post(state, &url, "job=1", &[]);
    let err = stderr(&second);
    assert_eq!(code(&second), 0, "{err}");
    assert_eq!(key_of(&second), k1, "the same key: {err}");
    assert!(
        err.contains(&format!("Idempotency-Key: {k1} (reused: kept since "))
            && err.contains(" ago, by an earlier run"),
        "{err}"
    );
    assert!(record(&s.url(""))["jobs"].is_null(), "retired");
    let third = post(state, &url, "job=1", &[]);
    assert_eq!(code(&third), 0, "{}", stderr(&third));
    let k3 = key_of(&third);
    assert_ne!(k3, k1, "a finished job's next run is a new job");
    assert_eq!(sent(&s), [k1.clone(), k1, k3]);
}

#[test]
fn a_job_keeps_its_key_until_its_answer_is_final_in_a_file() {
    let b = Backend::file();
    a_job_keeps_its_key_until_its_answer_is_final(&b.state(), &|t| b.record(t));
}

#[test]
fn a_job_keeps_its_key_until_its_answer_is_final_on_redis() {
    let b = Backend::redis();
    a_job_keeps_its_key_until_its_answer_is_final(&b.state(), &|t| b.record(t));
}

#[test]
fn a_job_keeps_its_key_until_its_answer_is_final_on_a_cluster() {
    let cluster = RedisCluster::start();
    let record = |target: &str| {
        let key = format!("retry-http:{{{target}}}");
        let text = cluster.get(cluster.owner_of(&key), &key);
        let v: Value = serde_json::from_str(&text).expect("the key holds JSON");
        v["target"].clone()
    };
    a_job_keeps_its_key_until_its_answer_is_final(&cluster.url(), &record);
}

/// Retries that end on a retried status (503: the outcome is unknown) keep the key; a
/// status that is not retried (404) is a final answer and retires it.
#[test]
fn a_503_at_the_end_keeps_the_key_and_a_404_retires_it() {
    let b = Backend::file();
    let s = Server::start(vec![
        Step::status(503, "busy"),
        Step::status(404, "gone"),
        Step::status(200, "ok"),
    ])
    .expect("server");
    let url = s.url("/");
    let codes: Vec<i32> = (0..3)
        .map(|_| code(&post(&b.state(), &url, "x", &[])))
        .collect();
    assert_eq!(codes, [4, 3, 0]);
    let keys = sent(&s);
    assert_eq!(keys[0], keys[1], "kept after the 503: {keys:?}");
    assert_ne!(keys[1], keys[2], "retired by the 404: {keys:?}");
}

/// Two bodies are two jobs, each with its key; each job's next run sends its own.
#[test]
fn different_bodies_are_different_jobs() {
    let b = Backend::file();
    let s = Server::start(vec![
        Step::Reset,
        Step::Reset,
        Step::status(200, "b"),
        Step::status(200, "a"),
    ])
    .expect("server");
    let url = s.url("/");
    let a = key_of(&post(&b.state(), &url, "a", &[]));
    let bk = key_of(&post(&b.state(), &url, "b", &[]));
    assert_ne!(a, bk);
    assert_eq!(key_of(&post(&b.state(), &url, "b", &[])), bk);
    assert_eq!(key_of(&post(&b.state(), &url, "a", &[])), a);
    // Another URL with the same body is another job too.
    let other = Server::start(vec![Step::Reset]).expect("server");
    let c = key_of(&post(&b.state(), &other.url("/"), "a", &[]));
    assert_ne!(c, a);
}

/// The store holds the key and the job's digest, never the URL's path and query or the
/// body; `--explain` shows the key kept and its age, and nothing once it is retired.
#[test]
fn the_store_holds_a_digest_and_explain_shows_the_key() {
    let b = Backend::file();
    let s = Server::start(vec![Step::Reset, Step::status(200, "ok")]).expect("server");
    let url = s.url("/private/path?token=hidden-query");
    let body = "card=4111-secret-body";
    let explain_with = |choice: &str| {
        let args = [
            "--explain",
            "--state",
            &b.state(),
            "--idempotency-key",
            choice,
            "-d",
            body,
            &url,
        ];
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let explain = || explain_with("auto");
    let key = key_of(&post(&b.state(), &url, body, &[]));
    let text = std::fs::read_to_string(b.state()).expect("the state file");
    assert!(text.contains(&key), "{text}");
    for secret in ["private", "hidden-query", "4111", "secret-body"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    let digest = b.record(&s.url(""))["jobs"][0][0].clone();
    assert_eq!(digest.as_str().map(str::len), Some(64), "{text}");
    let shown = explain();
    assert!(
        shown.contains(&format!(
            "Idempotency-Key of this job: {key} pending, made "
        )),
        "{shown}"
    );
    assert!(shown.contains("the next run sends it again"), "{shown}");
    let renewed = explain_with("new");
    assert!(
        renewed.contains("this run (--idempotency-key new) drops it and sends a new one"),
        "{renewed}"
    );
    assert!(!renewed.contains("sends it again"), "{renewed}");
    assert_eq!(code(&post(&b.state(), &url, body, &[])), 0);
    let shown = explain();
    assert!(
        shown.contains("Idempotency-Key of this job: none pending, the next run makes a new one"),
        "{shown}"
    );
}

/// A key given by hand is sent as given and never kept; the JSON log says which key a run
/// sent and how old it is.
#[test]
fn a_given_key_is_left_alone_and_the_json_log_names_the_key() {
    let b = Backend::file();
    let s = Server::start(vec![Step::Reset]).expect("server");
    let url = s.url("/");
    let given = [
        "--state",
        &b.state(),
        "--idempotency-key",
        "mine-1",
        "-d",
        "x",
        "--attempts",
        "1",
        &url,
    ];
    let (out, _) = run(&given);
    assert!(!stderr(&out).contains("kept"), "{}", stderr(&out));
    assert_eq!(sent(&s), ["mine-1"]);
    assert!(b.record(&s.url(""))["jobs"].is_null());
    let first = post(&b.state(), &url, "x", &["--log-format", "json"]);
    let again = post(&b.state(), &url, "x", &["--log-format", "json"]);
    let said = json_lines(&again, "idempotency_key");
    assert_eq!(said.len(), 1, "{}", stderr(&again));
    assert_eq!(said[0]["key"], key_of(&first).as_str());
    assert_eq!(said[0]["kept"], "reused");
    assert!(
        said[0]["age_ms"].is_u64() && said[0]["made_ms"].is_u64(),
        "{}",
        said[0]
    );
    let summary = json_lines(&again, "summary");
    assert_eq!(summary.len(), 1, "{}", stderr(&again));
    assert!(
        summary[0].to_string().contains(&key_of(&again)),
        "{}",
        summary[0]
    );
}

/// A store that cannot be used (a file that is not a state file) leaves the run with a
/// fresh key, and a warning that says so, under `-s` too.
#[test]
fn an_unusable_store_means_a_fresh_key_and_says_so() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let state = dir.path().join("not-state.txt");
    std::fs::write(&state, "someone else's notes\n").expect("a file");
    let state = state.to_str().expect("UTF-8");
    let s = Server::start(vec![Step::Reset]).expect("server");
    for quiet in [&[][..], &["-s"]] {
        let out = post(state, &s.url("/"), "x", quiet);
        let w = warnings(&out);
        assert_eq!(w.len(), 1, "{}", stderr(&out));
        assert!(
            w[0].contains("going on without it (with a fresh Idempotency-Key"),
            "{}",
            w[0]
        );
        key_of(&out);
    }
    let keys = sent(&s);
    assert_ne!(keys[0], keys[1], "nothing kept: {keys:?}");
}

/// `--idempotency-key new` starts a job afresh: a new key replaces the one kept, and is kept
/// in its turn while the outcome is unknown.
#[test]
fn new_starts_a_job_afresh() {
    let b = Backend::file();
    let s = Server::start(vec![Step::Reset, Step::Reset, Step::status(200, "ok")]).expect("server");
    let url = s.url("/");
    let first = key_of(&post(&b.state(), &url, "x", &[]));
    let args = [
        "--state",
        &b.state(),
        "--idempotency-key",
        "new",
        "-d",
        "x",
        "--attempts",
        "1",
        "-w",
        KEY_OUT,
        &url,
    ];
    let (out, _) = run(&args);
    let renewed = key_of(&out);
    assert_ne!(renewed, first);
    let said = format!("Idempotency-Key: {renewed} (new, the job started afresh, kept");
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    let last = post(&b.state(), &url, "x", &[]);
    assert_eq!(code(&last), 0, "{}", stderr(&last));
    assert_eq!(sent(&s), [first, renewed.clone(), renewed]);
}

/// In a batch, each transfer is a job of its own, with its own key; a re-run of the batch
/// sends each transfer's kept key again.
#[test]
fn each_transfer_of_a_batch_is_a_job() {
    let b = Backend::file();
    let s = Server::start(vec![
        Step::Reset,
        Step::Reset,
        Step::status(200, "a"),
        Step::status(200, "b"),
    ])
    .expect("server");
    let (a, bu) = (s.url("/a"), s.url("/b"));
    let args = [
        "--state",
        &b.state(),
        "--idempotency-key",
        "auto",
        "-d",
        "x",
        "--attempts",
        "1",
        &a,
        &bu,
    ];
    let (first, _) = run(&args);
    assert!(code(&first) != 0, "{}", stderr(&first));
    let (again, _) = run(&args);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    let keys = sent(&s);
    assert_ne!(keys[0], keys[1], "two jobs: {keys:?}");
    assert_eq!(keys[2..], keys[..2], "each sent again: {keys:?}");
}

/// One target's record spoiled in a state file (a field edited by hand: `runs` not a list)
/// starts that target afresh, not the file: another target's kept key is still sent by its
/// job's next run, and one warning names the target left out.
#[test]
fn a_bad_record_of_one_target_leaves_the_others_keys() {
    let b = Backend::file();
    let s = Server::start(vec![Step::Reset, Step::status(200, "done")]).expect("server");
    let url = s.url("/jobs/nightly");
    let first = post(&b.state(), &url, "job=1", &[]);
    let k1 = key_of(&first);
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(b.state()).expect("the state file"))
            .expect("JSON");
    let spoiled = "http://127.0.0.1:9";
    file["targets"][spoiled] =
        serde_json::json!({"breaker": {"failures": 0}, "budget": [], "runs": "x"});
    std::fs::write(b.state(), file.to_string()).expect("write the state file");
    let second = post(&b.state(), &url, "job=1", &[]);
    let err = stderr(&second);
    assert_eq!(code(&second), 0, "{err}");
    assert_eq!(key_of(&second), k1, "the job's key survives: {err}");
    assert_eq!(sent(&s), [k1.clone(), k1]);
    let warned: Vec<&str> = err.lines().filter(|l| l.contains("not valid")).collect();
    assert_eq!(warned.len(), 1, "{err}");
    assert!(
        warned[0].contains(spoiled) && warned[0].contains("(the other targets are kept)"),
        "{err}"
    );
}
