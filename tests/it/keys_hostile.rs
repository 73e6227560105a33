//! Hostile orders of events for a job's Idempotency-Key kept across runs
//! (`--idempotency-key auto` with `--state`): runs of one job that overlap, so that one
//! run's final answer comes while another run of the same job, with another key, has an
//! outcome still unknown.

use crate::common::*;
use crate::state_redis::Backend;
use serde_json::Value;
use std::time::Duration;

/// `-w`'s line: the key the run sent, after the body.
const KEY_OUT: &str = "\n%{idempotency_key}\n";

/// The arguments of one run of the job: POST `x` to `url`, its key `how` (auto, new) kept
/// in `state`, one attempt, and `extra`.
fn job_args(state: &str, how: &str, url: &str, extra: &[&str]) -> Vec<String> {
    let base = [
        "--state",
        state,
        "--idempotency-key",
        how,
        "-d",
        "x",
        "--attempts",
        "1",
        "-w",
        KEY_OUT,
    ];
    [&base[..], extra, &[url]]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The key a run sent, as `-w` wrote it (the last line of stdout).
fn key_of(out: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let key = text.lines().last().unwrap_or_default().to_string();
    assert_eq!(key.len(), 36, "a UUID: {text:?}; {}", stderr(out));
    key
}

/// Run A sends the job with key K1 and gets its answer late; meanwhile run B starts the job
/// afresh (`--idempotency-key new`, key K2) and its outcome is unknown (its attempt times
/// out). A's final answer must retire K1, the key A sent, and not K2: B's request may have
/// been processed, so the next run of the job must send K2 again.
fn a_final_answer_retires_only_the_key_it_was_sent_with(b: &Backend) {
    let late = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec();
    let s = Server::start(vec![
        Step::RawPaced {
            parts: vec![Vec::new(), late],
            pause: Duration::from_secs(3),
        },
        Step::Hang,
        Step::status(200, "replayed"),
    ])
    .expect("server");
    let url = s.url("/jobs/nightly");
    let a = std_command()
        .args(job_args(&b.state(), "auto", &url, &[]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run A starts");
    s.wait_for_requests(1, Duration::from_secs(20));
    let (b_run, _) = run(&job_args(&b.state(), "new", &url, &["-m", "1"])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(code(&b_run), 4, "{}", stderr(&b_run));
    let k2 = key_of(&b_run);
    let a = a.wait_with_output().expect("run A ends");
    assert_eq!(code(&a), 0, "{}", stderr(&a));
    let k1 = key_of(&a);
    assert_ne!(k1, k2);
    let jobs: Value = b.record(&s.url(""))["jobs"].clone();
    assert_eq!(
        jobs.as_array().map(|j| j.len()),
        Some(1),
        "B's key, its outcome unknown, is still kept after A's answer: {jobs}"
    );
    assert_eq!(jobs[0][1], k2.as_str(), "{jobs}");
    let (c, _) = run(&job_args(&b.state(), "auto", &url, &[])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(code(&c), 0, "{}", stderr(&c));
    assert_eq!(
        key_of(&c),
        k2,
        "the next run sends B's key again: {}",
        stderr(&c)
    );
}

#[test]
fn a_final_answer_retires_only_the_key_it_was_sent_with_in_a_file() {
    a_final_answer_retires_only_the_key_it_was_sent_with(&Backend::file());
}

#[test]
fn a_final_answer_retires_only_the_key_it_was_sent_with_on_redis() {
    a_final_answer_retires_only_the_key_it_was_sent_with(&Backend::redis());
}

/// Two clients (`-u alice`, `-u bob`) POST the same body to the same URL: two requests, two
/// jobs. Alice's outcome is unknown (her attempt times out); Bob's run must not send her
/// key (a server that scopes keys by the key alone would answer him with her stored
/// response, and his request would never be done), nor retire it with his answer (her next
/// run would send a new key for a request the server may have processed). A bearer token,
/// by contrast, is often fetched anew for each run: a re-run with a new token is the same
/// job and sends the key kept.
#[test]
fn runs_with_other_credentials_are_other_jobs() {
    let b = Backend::file();
    let s = Server::start(vec![
        Step::Hang,
        Step::status(200, "bob's"),
        Step::status(200, "alice's"),
    ])
    .expect("server");
    let url = s.url("/charge");
    let as_user = |user: &str, extra: &[&str]| {
        let mut args = job_args(&b.state(), "auto", &url, extra);
        args.splice(0..0, ["-u".to_string(), user.to_string()]);
        run(&args.iter().map(String::as_str).collect::<Vec<_>>()).0
    };
    let alice = as_user("alice:pw1", &["-m", "1"]);
    assert_eq!(code(&alice), 4, "{}", stderr(&alice));
    let bob = as_user("bob:pw2", &[]);
    assert_eq!(code(&bob), 0, "{}", stderr(&bob));
    assert_ne!(key_of(&bob), key_of(&alice), "{}", stderr(&bob));
    let again = as_user("alice:pw1", &[]);
    assert_eq!(key_of(&again), key_of(&alice), "{}", stderr(&again));

    let t = Server::start(vec![Step::Hang, Step::status(200, "done")]).expect("server");
    let url = t.url("/charge");
    let with_token = |token: &str, extra: &[&str]| {
        let mut args = job_args(&b.state(), "auto", &url, extra);
        let header = format!("Authorization: Bearer {token}");
        args.splice(0..0, ["-H".to_string(), header]);
        run(&args.iter().map(String::as_str).collect::<Vec<_>>()).0
    };
    let first = with_token("token-of-run-1", &["-m", "1"]);
    assert_eq!(code(&first), 4, "{}", stderr(&first));
    let second = with_token("token-of-run-2", &[]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(key_of(&second), key_of(&first), "{}", stderr(&second));
}

/// Credentials in the URL name the job's user as `-u` does, and their password is no more
/// part of the job than `-u`'s: a password rotated between two runs of the job (its outcome
/// unknown) must not make a new job with a new key (the server would process the POST
/// twice), `-u alice:new` on the bare URL is the same job as `alice:new@` in it, and the
/// state holds no digest of a password.
#[test]
fn url_credentials_name_the_user_not_the_password_of_the_job() {
    let b = Backend::file();
    let s = Server::start(vec![Step::Hang, Step::Hang, Step::status(200, "done")]).expect("server");
    let url = s.url("/charge");
    let with_user = |userinfo: &str| url.replacen("://", &format!("://{userinfo}@"), 1);
    let run_job = |url: &str, extra: &[&str]| {
        let args = job_args(&b.state(), "auto", url, extra);
        run(&args.iter().map(String::as_str).collect::<Vec<_>>()).0
    };
    let first = run_job(&with_user("alice:old"), &["-m", "1"]);
    assert_eq!(code(&first), 4, "{}", stderr(&first));
    let rotated = run_job(&with_user("alice:new"), &["-m", "1"]);
    assert_eq!(code(&rotated), 4, "{}", stderr(&rotated));
    assert_eq!(key_of(&rotated), key_of(&first), "{}", stderr(&rotated));
    let flag = run_job(&url, &["-u", "alice:new"]);
    assert_eq!(code(&flag), 0, "{}", stderr(&flag));
    assert_eq!(key_of(&flag), key_of(&first), "{}", stderr(&flag));
}

/// A state file at its bound (1,000 targets) forgets the target with the oldest event to
/// make room for a new one: when that target held a key of a job whose outcome is unknown,
/// the key is lost, and the run says so rather than dropping it in silence.
#[test]
fn a_target_dropped_at_the_files_bound_with_a_kept_key_is_said() {
    let dir = tempfile::tempdir().expect("a folder");
    let path = dir.path().join("state.json");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    let targets: serde_json::Map<String, Value> = (0..1000u64)
        .map(|i| {
            let record = serde_json::json!({
                "breaker": {"failures": 0, "opened_at": null, "probe_id": null, "probe_until": null},
                "budget": [],
                "hold_until": null,
                "jobs": [[format!("{i:064x}"), format!("key-{i}"), now - 1000]],
                "seen": now - 100_000 + i,
            });
            (format!("http://h{i}.test:80"), record)
        })
        .collect();
    let state = serde_json::json!({"format": "retry-http-state", "version": 2, "targets": targets});
    std::fs::write(&path, state.to_string()).expect("the state written");
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let state = path.display().to_string();
    let args = job_args(&state, "auto", &s.url("/"), &[]);
    let (out, _) = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = warnings(&out);
    assert!(
        said.iter()
            .any(|w| w.contains("http://h0.test:80") && w.contains("Idempotency-Key")),
        "{said:?}"
    );
}

/// SIGTERM while a Redis store that never answers is asked about the job's key, under
/// `--state-on-error closed`: the signal ends the run (143, as a signal always wins), not
/// a refusal of the store (7) that the read it cut short looked like.
#[test]
fn a_signal_while_the_store_is_asked_ends_the_run_as_the_signal() {
    let silent = crate::silent::Silent::start();
    let port = silent.port;
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let state = format!("redis://127.0.0.1:{port}");
    let mut args = job_args(&state, "auto", &s.url("/"), &["--state-timeout", "5s"]);
    args.extend(["--state-on-error".to_string(), "closed".to_string()]);
    let child = std_command()
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the run starts");
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: a signal to the child this test started.
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let out = child.wait_with_output().expect("the run ends");
    assert_eq!(code(&out), 143, "{}", stderr(&out));
    assert!(s.requests().is_empty());
    drop(silent);
}
