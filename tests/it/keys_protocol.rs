//! The Idempotency-Key's own answers (the IETF httpapi draft), against the scripted server:
//! with a key, a 409 (a request with the key still being processed) is waited out and sent
//! again with the same key, within the attempts, the deadline and the retry budget; a 422
//! (the key used with a different request) ends the run with 3 at once, whatever
//! `--retry-on` says, and so does a 400 (a key required in another form, or a malformed
//! request) unless `--retry-on` names it: the user's list wins where the key makes the
//! replay safe. Without a key, none of this applies.

use crate::common::*;
use std::time::Duration;

/// The Idempotency-Key of every request the server saw.
fn keys(s: &Server) -> Vec<Option<String>> {
    s.requests()
        .iter()
        .map(|r| r.header("idempotency-key").map(String::from))
        .collect()
}

/// Runs a POST of `job=1` to `url` with `extra` flags and the fast retry flags.
fn post(url: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["-X", "POST", "-d", "job=1"];
    args.extend_from_slice(extra);
    args.extend(FAST);
    args.push(url);
    run(&args).0
}

#[test]
fn a_409_is_waited_out_and_the_post_sent_again_with_the_same_key() {
    for key in [
        &["--idempotency-key", "auto"][..],
        &["-H", "Idempotency-Key: job-7"],
    ] {
        let s = Server::start(vec![
            Step::with_header(409, "Retry-After", "1"),
            Step::status(201, "made"),
        ])
        .unwrap();
        let out = post(&s.url("/jobs"), key);
        let err = stderr(&out);
        assert_eq!(code(&out), 0, "{err}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "made");
        let reqs = s.requests();
        assert_eq!(reqs.len(), 2, "{err}");
        let sent = keys(&s);
        assert!(
            sent[0].as_deref().is_some_and(|k| !k.is_empty()),
            "{sent:?}"
        );
        assert_eq!(
            sent[0], sent[1],
            "the retry must carry the first attempt's key"
        );
        if key[0] == "-H" {
            assert_eq!(sent[0].as_deref(), Some("job-7"));
        }
        assert!(
            reqs.iter()
                .all(|r| r.method == "POST" && r.body == b"job=1")
        );
        // The Retry-After is honoured (the backoff alone is at most 5 ms).
        let gap = gaps(&reqs)[0];
        assert!(gap >= Duration::from_millis(950), "{gap:?}");
        let lines = attempt_lines(&out);
        assert!(lines[0].contains("-> 409 Conflict"), "{err}");
        assert!(
            lines[0].contains(
                "(a request with this Idempotency-Key is still being processed); retry in 1s (Retry-After: 1)"
            ),
            "{err}"
        );
        assert!(lines[1].contains("-> 201"), "{err}");
    }
}

/// The JSON log carries what the 409 meant, and the wait's reason.
#[test]
fn the_json_log_says_why_a_409_is_waited_out() {
    let s = Server::start(vec![
        Step::with_header(409, "Retry-After", "0"),
        Step::status(201, ""),
    ])
    .unwrap();
    let out = post(
        &s.url("/"),
        &["--idempotency-key", "k", "--log-format", "json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let attempts = json_lines(&out, "attempt");
    assert_eq!(attempts.len(), 2, "{}", stderr(&out));
    assert_eq!(attempts[0]["status"], 409);
    assert_eq!(
        attempts[0]["note"],
        "a request with this Idempotency-Key is still being processed"
    );
    assert_eq!(attempts[0]["retry_after"], "0");
    assert!(attempts[0]["wait_ms"].is_number(), "{}", attempts[0]);
    assert_eq!(attempts[1]["note"], serde_json::Value::Null);
}

#[test]
fn a_409_that_lasts_ends_as_a_retried_status_does() {
    // Out of attempts: 4, every attempt with the one key.
    let s = Server::start(vec![Step::status(409, "busy")]).unwrap();
    let out = post(
        &s.url("/jobs"),
        &["--idempotency-key", "auto", "--attempts", "3"],
    );
    let err = stderr(&out);
    assert_eq!(code(&out), 4, "{err}");
    assert!(err.contains("giving up: no attempts left"), "{err}");
    assert_eq!(s.requests().len(), 3, "{err}");
    let sent = keys(&s);
    assert!(
        sent.iter().all(|k| k.is_some() && *k == sent[0]),
        "{sent:?}"
    );
    assert!(out.stdout.is_empty());

    // Out of time: 5, after more than one attempt, all with the key given.
    let s = Server::start(vec![Step::status(409, "busy")]).unwrap();
    let out = post(
        &s.url("/jobs"),
        &[
            "--idempotency-key",
            "k-1",
            "--attempts",
            "unlimited",
            "--deadline",
            "1s",
            "--base",
            "50ms",
            "--cap",
            "100ms",
        ],
    );
    let err = stderr(&out);
    assert_eq!(code(&out), 5, "{err}");
    let sent = keys(&s);
    assert!(sent.len() >= 2, "{err}");
    assert!(sent.iter().all(|k| k.as_deref() == Some("k-1")), "{sent:?}");
}

#[test]
fn a_409_is_retried_whatever_retry_on_says_and_charged_to_the_budget() {
    // --retry-on without 409: still retried with a key.
    let s = Server::start(vec![Step::status(409, ""), Step::status(200, "done")]).unwrap();
    let out = post(
        &s.url("/"),
        &["--idempotency-key", "k", "--retry-on", "503"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2);

    // A retry after a 409 is charged to the shared budget like any retry: a run's retry
    // spends the floor of one, and the next run is refused its retry (7).
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let s = Server::start(vec![Step::status(409, "")]).unwrap();
    let flags = [
        "--idempotency-key",
        "k",
        "--state",
        state.to_str().unwrap(),
        "--budget-floor",
        "1",
        "--attempts",
    ];
    let out = post(&s.url("/"), &[&flags[..], &["2"]].concat());
    let err = stderr(&out);
    assert_eq!(code(&out), 4, "{err}");
    assert_eq!(s.requests().len(), 2, "{err}");
    let out = post(&s.url("/"), &[&flags[..], &["5"]].concat());
    let err = stderr(&out);
    assert_eq!(code(&out), 7, "{err}");
    assert!(err.contains("1 retries by other runs"), "{err}");
    assert_eq!(s.requests().len(), 3, "{err}");
}

/// A run that ends on a 409 to a keyed request does not count toward opening the circuit
/// (the server answered: it is busy, not down); without a key, a 409 retried because
/// `--retry-on` lists it counts as a failed run, as before.
#[test]
fn a_409_with_a_key_does_not_open_the_circuit() {
    let dir = tempfile::tempdir().unwrap();
    let run_twice = |file: &str, extra: &[&str]| -> Vec<(i32, usize)> {
        let s = Server::start(vec![Step::status(409, "")]).unwrap();
        let mut flags = vec![
            "--state",
            file,
            "--breaker-threshold",
            "1",
            "--breaker-cooldown",
            "1h",
            "--attempts",
            "2",
        ];
        flags.extend_from_slice(extra);
        (0..2)
            .map(|_| {
                let out = post(&s.url("/"), &flags);
                (code(&out), s.requests().len())
            })
            .collect()
    };
    let keyed = dir.path().join("keyed.json");
    let runs = run_twice(keyed.to_str().unwrap(), &["--idempotency-key", "k"]);
    assert_eq!(runs, [(4, 2), (4, 4)], "the second run must be let through");

    let keyless = dir.path().join("keyless.json");
    let runs = run_twice(
        keyless.to_str().unwrap(),
        &["--retry-on", "409", "--retry-unsafe"],
    );
    assert_eq!(
        runs,
        [(4, 2), (7, 2)],
        "without a key, the circuit opens as before"
    );
}

#[test]
fn a_422_ends_the_run_at_once_saying_the_key_was_reused() {
    // Even when --retry-on lists it, and under --until-status (not an answer to poll).
    for extra in [
        &[][..],
        &["--retry-on", "4xx,5xx"],
        &["--until-status", "200"],
    ] {
        let s =
            Server::start(vec![Step::status(422, "key reused"), Step::status(201, "")]).unwrap();
        let mut flags = vec!["--idempotency-key", "auto"];
        flags.extend_from_slice(extra);
        let out = post(&s.url("/jobs"), &flags);
        let err = stderr(&out);
        assert_eq!(code(&out), 3, "{extra:?}: {err}");
        assert_eq!(s.requests().len(), 1, "{extra:?}: {err}");
        let line = &attempt_lines(&out)[0];
        assert!(line.contains("-> 422"), "{err}");
        assert!(
            line.contains(
                "; not retried: 422: the Idempotency-Key was already used with a different request"
            ),
            "{extra:?}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_400_ends_the_run_at_once_saying_a_key_may_be_required() {
    for extra in [&[][..], &["--retry-on", "401-499,5xx"]] {
        let s = Server::start(vec![Step::status(400, ""), Step::status(201, "")]).unwrap();
        let mut flags = vec!["--idempotency-key", "k"];
        flags.extend_from_slice(extra);
        let out = post(&s.url("/jobs"), &flags);
        let err = stderr(&out);
        assert_eq!(code(&out), 3, "{extra:?}: {err}");
        assert_eq!(s.requests().len(), 1, "{extra:?}: {err}");
        assert!(
            attempt_lines(&out)[0].contains(
                "; not retried: 400: the server may require an Idempotency-Key in another form, or the request is malformed (--retry-on does not name it)"
            ),
            "{err}"
        );
    }
}

/// Without a key, 409, 422 and 400 are statuses like any other: not retried unless
/// `--retry-on` lists them, and then a POST still is not replayed (none of them proves the
/// request was not processed), while a GET is.
#[test]
fn without_a_key_the_drafts_statuses_behave_as_before() {
    for status in [409, 422, 400] {
        let s = Server::start(vec![Step::status(status, ""), Step::status(200, "ok")]).unwrap();
        let out = post(&s.url("/"), &[]);
        let err = stderr(&out);
        assert_eq!(code(&out), 3, "{err}");
        assert_eq!(s.requests().len(), 1);
        assert!(
            err.contains(&format!("not retried: {status} is not in --retry-on")),
            "{err}"
        );
        assert!(!err.contains("Idempotency-Key"), "{err}");

        let listed = status.to_string();
        let s = Server::start(vec![Step::status(status, ""), Step::status(200, "ok")]).unwrap();
        let out = post(&s.url("/"), &["--retry-on", &listed]);
        let err = stderr(&out);
        assert_eq!(code(&out), 3, "{err}");
        assert_eq!(s.requests().len(), 1);
        assert!(
            err.contains(&format!(
                "POST is not idempotent and a {status} does not prove"
            )),
            "{err}"
        );

        let s = Server::start(vec![Step::status(status, ""), Step::status(200, "ok")]).unwrap();
        let (out, _) = run_fast(&["--retry-on", &listed], &s.url("/"));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(s.requests().len(), 2);
        assert!(keys(&s).iter().all(Option::is_none));
    }
}

#[test]
fn explain_lists_the_keys_answers_only_when_a_key_is_sent() {
    let url = "http://127.0.0.1:1/jobs";
    let (out, _) = run(&["--explain", "-X", "POST", "--idempotency-key", "auto", url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for line in [
        "  idempotency   409 (a request with this key is still being processed): retried with the same key after the Retry-After or the backoff, within the attempts, the deadline and the retry budget, whatever --retry-on says",
        "                422 (the key was already used with a different request): never retried, whatever --retry-on says: exit 3",
        "                400 (the key may be required in another form, or the request is malformed): exit 3, unless --retry-on names it: then retried with the same key, which makes the replay safe",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    let (out, _) = run(&["--explain", "-X", "POST", url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.lines().any(|l| l.starts_with("  idempotency ")),
        "{text}"
    );
    assert!(!text.contains("409"), "{text}");
}

/// A POST answered 303 is done: the GET that follows is another request, sent without the
/// POST's key (with it, a server that checks every request's key answers 422, the key used
/// with a different request, which would end with 3 a run whose POST succeeded). A 307
/// repeats the POST itself, key included.
#[test]
fn the_get_after_a_303_carries_no_key() {
    let s = Server::start(vec![
        Step::with_header(303, "Location", "/result"),
        Step::status(200, "the result"),
    ])
    .expect("server");
    let out = post(&s.url("/orders"), &["-L", "--idempotency-key", "auto"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let k = keys(&s);
    assert!(k[0].is_some(), "{k:?}");
    assert_eq!(k.get(1), Some(&None), "{k:?}; {}", stderr(&out));
    assert_eq!(s.requests()[1].method, "GET");

    let s = Server::start(vec![
        Step::with_header(307, "Location", "/orders2"),
        Step::status(201, "made"),
    ])
    .expect("server");
    let out = post(&s.url("/orders"), &["-L", "--idempotency-key", "auto"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let k = keys(&s);
    assert!(k[0].is_some() && k.get(1) == Some(&k[0]), "{k:?}");
}

/// The user's list wins where the replay is safe, over every method x key (auto, a value,
/// none) x `--retry-on` (not naming the status, its code, its class) x the draft's three
/// statuses: with a key, a 400 the list names is retried with the same key (the line says
/// why) and one it does not name ends with 3; a 409 is retried and a 422 ends with 3
/// whatever the list says. Without a key, a listed status is retried only for an
/// idempotent method, as any status is.
#[test]
fn retry_on_wins_for_a_400_where_the_key_makes_the_replay_safe() {
    let mut combos = 0;
    for status in [400u16, 409, 422] {
        let code_listed = status.to_string();
        for method in ["POST", "PATCH", "PUT", "GET"] {
            for key in [
                &["--idempotency-key", "auto"][..],
                &["--idempotency-key", "k-7"],
                &[],
            ] {
                for list in [
                    &[][..],
                    &["--retry-on", &code_listed],
                    &["--retry-on", "4xx"],
                ] {
                    combos += 1;
                    let case = format!("{status} {method} {key:?} {list:?}");
                    let s = Server::start(vec![Step::status(status, ""), Step::status(201, "")])
                        .unwrap();
                    let mut args = vec!["-X", method];
                    if method != "GET" {
                        args.extend(["-d", "job=1"]);
                    }
                    args.extend_from_slice(key);
                    args.extend_from_slice(list);
                    args.extend(FAST);
                    let url = s.url("/jobs");
                    args.push(&url);
                    let out = run(&args).0;
                    let err = stderr(&out);
                    let has_key = !key.is_empty();
                    let listed = !list.is_empty();
                    let idempotent = matches!(method, "PUT" | "GET");
                    let retried = match (has_key, status) {
                        (true, 409) => true,
                        (true, 422) => false,
                        (true, _) => listed,
                        (false, _) => listed && idempotent,
                    };
                    let sent = keys(&s);
                    assert_eq!(sent.len(), if retried { 2 } else { 1 }, "{case}: {err}");
                    assert_eq!(code(&out), if retried { 0 } else { 3 }, "{case}: {err}");
                    assert!(sent.iter().all(|k| k.is_some() == has_key), "{case}");
                    assert!(sent.windows(2).all(|w| w[0] == w[1]), "{case}: one key");
                    let line = &attempt_lines(&out)[0];
                    let names = "--retry-on names 400, and the Idempotency-Key makes its replay safe: retried as a listed status";
                    assert_eq!(
                        line.contains(names),
                        has_key && status == 400 && listed,
                        "{case}: {line}"
                    );
                }
            }
        }
    }
    assert_eq!(combos, 108);
}
