//! The shared state keeps its own rules across a run: an answer that is not ready proves
//! the target up (a success for the breaker in every state, nothing for the budget), and a
//! retry is charged to the budget only when it is sent. Each test runs on a state file and
//! on a real redis-server.

use crate::common::*;
use serde_json::Value;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::state_redis::Backend;

/// The successes (`column` 1) or retries (2) counted in a record's budget buckets; none
/// in a record with no budget.
fn counted_or_none(record: &Value, column: usize) -> u64 {
    if record["budget"].is_null() {
        return 0;
    }
    counted(record, column)
}

/// An answer that is not ready for `--until-json /status=green`, and one that is.
fn yellow() -> Step {
    Step::status(200, r#"{"status":"yellow"}"#)
}

fn green() -> Step {
    Step::status(200, r#"{"status":"green"}"#)
}

/// The circuit of `s`'s target is open (threshold 1, cooldown 1 s) after one run that
/// failed on the script's first step; returns once the cooldown has passed, when the next
/// run is the probe.
fn open_then_half_open(backend: &Backend, s: &Server, breaker: &[&str]) {
    let url = s.url("/");
    let (out, _) = run(&[breaker, &["--attempts", "1", &url]].concat());
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(backend.record(&s.url(""))["breaker"]["opened_at"].is_u64());
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let (out, _) = run(&[breaker, &["--explain", &url]].concat());
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        if shown.contains("circuit half-open: the next run probes") {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "the cooldown never passed: {shown}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------
// An answer that is not ready proves the target up.

/// For every state the breaker can be in when a run meets a service still starting
/// (half-open with this run as the probe, then closed with failures counted): the not-ready
/// answer closes the circuit and resets the count, the run goes on polling (the probe is no
/// longer held to one attempt) within its attempts, and nothing is charged to the budget.
fn an_answer_not_ready_is_a_success_for_the_breaker(backend: &Backend) {
    let state = backend.state();
    let breaker = [
        "--state",
        state.as_str(),
        "--breaker-threshold",
        "1",
        "--breaker-cooldown",
        "1s",
        "--base",
        "1ms",
        "--cap",
        "5ms",
    ];
    let until = ["--until-json", "/status=green"];

    // Half-open; the probe meets "yellow" twice, then "green": it polls on and is served.
    let s =
        Server::start(vec![Step::status(500, ""), yellow(), yellow(), green()]).expect("server");
    open_then_half_open(backend, &s, &breaker);
    let url = s.url("/");
    let (probe, _) = run(&[&breaker[..], &until, &["--attempts", "5", &url]].concat());
    let err = stderr(&probe);
    assert_eq!(code(&probe), 0, "the probe polled on: {err}");
    assert!(
        err.contains("this run probes with a single attempt"),
        "{err}"
    );
    assert!(err.contains("goes on polling"), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&probe.stdout),
        r#"{"status":"green"}"#
    );
    assert_eq!(s.requests().len(), 4, "{err}");
    let record = backend.record(&s.url(""));
    let b = &record["breaker"];
    assert!(
        b["opened_at"].is_null() && b["probe_id"].is_null(),
        "{record}"
    );
    assert_eq!(b["failures"], 0, "{record}");
    assert_eq!(
        counted_or_none(&record, 2),
        0,
        "polls charged as retries: {record}"
    );
    assert_eq!(
        counted_or_none(&record, 1),
        1,
        "one request served: {record}"
    );

    // Half-open; the probe never sees "green": it uses all its attempts and ends not ready,
    // the circuit closed, so the next run is an ordinary one (no probe, all its attempts).
    let s = Server::start(vec![Step::status(500, ""), yellow()]).expect("server");
    open_then_half_open(backend, &s, &breaker);
    let url = s.url("/");
    let polls = [&breaker[..], &until, &["--attempts", "3", &url]].concat();
    let (probe, _) = run(&polls);
    let err = stderr(&probe);
    assert_eq!(code(&probe), 8, "{err}");
    assert_eq!(
        s.requests().len(),
        4,
        "the failure, then three polls: {err}"
    );
    let record = backend.record(&s.url(""));
    assert!(record["breaker"]["opened_at"].is_null(), "{record}");
    assert_eq!(counted_or_none(&record, 2), 0, "{record}");
    assert_eq!(
        counted_or_none(&record, 1),
        0,
        "not ready is no request served: {record}"
    );
    let (next, _) = run(&polls);
    let err = stderr(&next);
    assert_eq!(code(&next), 8, "{err}");
    assert!(!err.contains("half-open"), "{err}");
    assert!(attempt_lines(&next)[2].contains("attempt 3/3"), "{err}");

    // Closed with one failure counted (threshold 2): a run that meets "yellow" then fails
    // on 503s counts one failure, not two (the answer reset the count): still closed.
    let breaker2 = [&breaker[..2], &["--breaker-threshold", "2"], &breaker[4..]].concat();
    let s = Server::start(vec![Step::status(503, ""), yellow(), Step::status(503, "")])
        .expect("server");
    let url = s.url("/");
    let (out, _) = run(&[&breaker2[..], &["--attempts", "1", &url]].concat());
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(backend.record(&s.url(""))["breaker"]["failures"], 1);
    let (out, _) = run(&[&breaker2[..], &until, &["--attempts", "3", &url]].concat());
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let record = backend.record(&s.url(""));
    assert_eq!(record["breaker"]["failures"], 1, "{record}");
    assert!(record["breaker"]["opened_at"].is_null(), "{record}");
}

#[test]
fn an_answer_not_ready_is_a_success_for_the_breaker_in_a_file() {
    an_answer_not_ready_is_a_success_for_the_breaker(&Backend::file());
}

#[test]
fn an_answer_not_ready_is_a_success_for_the_breaker_on_redis() {
    an_answer_not_ready_is_a_success_for_the_breaker(&Backend::redis());
}

// ---------------------------------------------------------------------------------------
// A retry is charged to the budget when it is sent, and only then.

/// Run A against `s`: 503s, a retry planned 5 s after its first attempt (the log says
/// "retry in 5s": room for another run to start and end meanwhile on a loaded machine), a deadline of `deadline`; `meanwhile` runs (given A's process id) once
/// A has logged that line, during that wait. Returns A's output.
fn while_a_waits(
    backend: &Backend,
    s: &Server,
    deadline: &str,
    meanwhile: impl FnOnce(u32),
) -> Output {
    let state = backend.state();
    let mut a = std_command()
        .args([
            "--state",
            &state,
            "--budget-floor",
            "1",
            "--attempts",
            "3",
            "--base",
            "5s",
            "--cap",
            "5s",
            "--jitter",
            "none",
            "--retry-after-spread",
            "0s",
            "--deadline",
            deadline,
            &s.url("/"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run A starts");
    let err = a.stderr.take().expect("A's stderr");
    let (planned, told) = std::sync::mpsc::channel();
    let log = std::thread::spawn(move || {
        let mut log = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(err)) {
            let line = line.expect("A's log reads");
            if line.contains("retry in") {
                let _ = planned.send(());
            }
            log.push_str(&line);
            log.push('\n');
        }
        log
    });
    let seen = told.recv_timeout(Duration::from_secs(20));
    if seen.is_ok() {
        meanwhile(a.id());
    }
    let status = a.wait().expect("run A ends");
    let log = log.join().expect("A's log");
    assert!(seen.is_ok(), "A planned no retry: {log}");
    Output {
        status,
        stdout: Vec::new(),
        stderr: log.into_bytes(),
    }
}

/// Sends `signal` to the process `pid`.
fn signal(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: a signal to a child of this test, not yet waited for.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

// Every way a run that logged "retry in ..." can end before that retry is sent: another
// run's Retry-After found after the wait, holding past the deadline; a signal during the
// wait; the deadline passing during it (the run stopped, then let go after its deadline);
// another run taking the budget's last retry meanwhile. In each, the retry is not sent,
// the run says why, and the budget keeps no charge for it.

/// Another run's Retry-After, found after the wait, holds past the deadline (exit 5).
fn held_past_the_deadline(backend: &Backend) {
    let s = Server::start(vec![
        Step::status(503, ""),
        Step::with_header(503, "Retry-After", "100"),
    ])
    .expect("server");
    let state = backend.state();
    let a = while_a_waits(backend, &s, "20s", |_| {
        let (b, _) = run(&["--state", &state, "--attempts", "1", &s.url("/")]);
        assert_eq!(code(&b), 4, "{}", stderr(&b));
    });
    let err = stderr(&a);
    assert_eq!(code(&a), 5, "{err}");
    assert!(err.contains("retry in 5s"), "{err}");
    assert!(
        err.contains("a Retry-After shared by the runs holds past the deadline"),
        "{err}"
    );
    assert_eq!(s.requests().len(), 2, "A's retry was not sent: {err}");
    assert_eq!(counted_or_none(&backend.record(&s.url("")), 2), 0, "{err}");
}

/// A signal during the wait (exit 143).
fn a_signal(backend: &Backend) {
    let s = Server::start(vec![Step::status(503, "")]).expect("server");
    let a = while_a_waits(backend, &s, "20s", |pid| {
        std::thread::sleep(Duration::from_millis(500));
        signal(pid, libc::SIGTERM);
    });
    let err = stderr(&a);
    assert_eq!(code(&a), 143, "{err}");
    assert!(err.contains("retry in 5s"), "{err}");
    assert!(err.contains("terminated after 1 attempt"), "{err}");
    assert_eq!(s.requests().len(), 1, "{err}");
    assert_eq!(counted_or_none(&backend.record(&s.url("")), 2), 0, "{err}");
}

/// The deadline passes during the wait: A is stopped past it, then let go (exit 5).
fn the_deadline(backend: &Backend) {
    let s = Server::start(vec![Step::status(503, "")]).expect("server");
    let a = while_a_waits(backend, &s, "6s", |pid| {
        signal(pid, libc::SIGSTOP);
        std::thread::sleep(Duration::from_millis(6500));
        signal(pid, libc::SIGCONT);
    });
    let err = stderr(&a);
    assert_eq!(code(&a), 5, "{err}");
    assert!(err.contains("retry in 5s"), "{err}");
    assert!(err.contains("deadline"), "{err}");
    assert_eq!(s.requests().len(), 1, "{err}");
    assert_eq!(counted_or_none(&backend.record(&s.url("")), 2), 0, "{err}");
}

/// Another run takes the budget's only retry meanwhile (exit 7): B retries, A does not.
fn the_budget_spent_meanwhile(backend: &Backend) {
    let state = backend.state();
    let s = Server::start(vec![Step::status(503, "")]).expect("server");
    let a = while_a_waits(backend, &s, "20s", |_| {
        let (b, _) = run(&[
            "--state",
            &state,
            "--budget-floor",
            "1",
            "--attempts",
            "2",
            "--base",
            "1ms",
            "--cap",
            "1ms",
            &s.url("/"),
        ]);
        assert_eq!(code(&b), 4, "B's retry was granted: {}", stderr(&b));
    });
    let err = stderr(&a);
    assert_eq!(code(&a), 7, "{err}");
    assert!(err.contains("retry in 5s"), "{err}");
    assert!(
        err.contains("not retried: the retry budget is spent"),
        "{err}"
    );
    assert_eq!(s.requests().len(), 3, "A, then B twice: {err}");
    assert_eq!(
        counted_or_none(&backend.record(&s.url("")), 2),
        1,
        "B's retry alone: {err}"
    );
}

/// One test per store for each way.
macro_rules! on_both_stores {
    ($($way:ident),*) => {
        mod a_retry_not_sent_is_not_charged {
            use super::*;
            $(
                mod $way {
                    use super::*;

                    #[test]
                    fn in_a_file() {
                        super::super::$way(&Backend::file());
                    }

                    #[test]
                    fn on_redis() {
                        super::super::$way(&Backend::redis());
                    }
                }
            )*
        }
    };
}

on_both_stores!(
    held_past_the_deadline,
    a_signal,
    the_deadline,
    the_budget_spent_meanwhile
);

// ---------------------------------------------------------------------------------------
// The budget counts other runs' retries, never a run's own.

/// A lone run with `--state` and the default budget retries as it would without it: for
/// each retried status, a server that fails 10 times then answers gets the same 11
/// requests from a run with the state as from one without, both ending 0.
fn a_lone_run_retries_as_without_state(backend: &Backend) {
    let state = backend.state();
    for status in [500, 502, 503, 504] {
        let mut script = vec![Step::status(status, ""); 10];
        script.push(Step::status(200, "done"));
        let mut requests = Vec::new();
        for with_state in [false, true] {
            let s = Server::start(script.clone()).expect("server");
            let url = s.url("/");
            let fast = ["--attempts", "11", "--base", "1ms", "--cap", "2ms"];
            let args = if with_state {
                [&fast[..], &["--state", &state, &url]].concat()
            } else {
                [&fast[..], &[url.as_str()]].concat()
            };
            let (out, _) = run(&args);
            assert_eq!(
                code(&out),
                0,
                "{status}, state {with_state}: {}",
                stderr(&out)
            );
            requests.push(s.requests().len());
            if with_state {
                assert_eq!(
                    counted_or_none(&backend.record(&s.url("")), 2),
                    10,
                    "{status}"
                );
            }
        }
        assert_eq!(requests, [11, 11], "{status}: without and with --state");
    }
}

/// Another run's retries count: a run (floor 2, 5 attempts) makes all 4 of its retries,
/// its own; the next run is refused its first retry (4 retries by another run), and so is
/// each transfer of a batch after the first, which are runs of their own: the first
/// transfer's retries are the second's other runs'.
fn another_run_s_retries_count(backend: &Backend) {
    let state = backend.state();
    let flags = [
        "--state",
        &state,
        "--budget-floor",
        "2",
        "--attempts",
        "5",
        "--base",
        "1ms",
        "--cap",
        "2ms",
    ];
    let s = Server::start(vec![Step::status(503, "")]).expect("server");
    let url = s.url("/");
    let (out, _) = run(&[&flags[..], &[&url]].concat());
    assert_eq!(code(&out), 4, "its own retries: {}", stderr(&out));
    assert_eq!(s.requests().len(), 5);
    // --explain says what the next run meets, and the rule.
    let (out, _) = run(&[&flags[..], &["--explain", &url]].concat());
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    for said in [
        "at least 2, counting other runs' retries, never a run's own",
        "retry budget: 0 of 2 left in the last 10m (0 successes) for a new run; a run's own retries do not count against it",
    ] {
        assert!(shown.contains(said), "{said:?} in:\n{shown}");
    }
    let (out, _) = run(&[&flags[..], &[&url]].concat());
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("4 retries by other runs"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.requests().len(), 6);
    // A batch of two transfers, one after the other, to a fresh origin.
    let s = Server::start(vec![Step::status(503, "")]).expect("server");
    let (a, b) = (s.url("/a"), s.url("/b"));
    let (out, _) = run(&[&flags[..], &[&a, &b]].concat());
    assert_eq!(
        code(&out),
        4,
        "the first failure in URL order: {}",
        stderr(&out)
    );
    let paths: Vec<String> = s.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        paths,
        ["/a", "/a", "/a", "/a", "/a", "/b"],
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("4 retries by other runs"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_lone_run_retries_as_without_state_in_a_file() {
    a_lone_run_retries_as_without_state(&Backend::file());
}

#[test]
fn a_lone_run_retries_as_without_state_on_redis() {
    a_lone_run_retries_as_without_state(&Backend::redis());
}

#[test]
fn another_run_s_retries_count_in_a_file() {
    another_run_s_retries_count(&Backend::file());
}

#[test]
fn another_run_s_retries_count_on_redis() {
    another_run_s_retries_count(&Backend::redis());
}

/// Without `--state`, a batch's transfers to one origin share a budget in memory, and each
/// is a run of its own there too: the first transfer makes all 4 of its retries, the
/// second is refused its first (4 retries by another run), while a second origin's
/// transfer keeps its own budget.
#[test]
fn a_batch_s_transfers_are_runs_of_their_own_without_state() {
    let s = Server::start(vec![Step::status(503, "")]).expect("server");
    let other = Server::start(vec![Step::status(503, "")]).expect("server");
    let (a, b, c) = (s.url("/a"), s.url("/b"), other.url("/c"));
    let flags = [
        "--budget-floor",
        "2",
        "--attempts",
        "5",
        "--base",
        "1ms",
        "--cap",
        "2ms",
    ];
    let (out, _) = run(&[&flags[..], &[&a, &b, &c]].concat());
    let err = stderr(&out);
    assert_eq!(code(&out), 4, "the first failure in URL order: {err}");
    let paths: Vec<String> = s.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(paths, ["/a", "/a", "/a", "/a", "/a", "/b"], "{err}");
    assert!(err.contains("4 retries by other runs"), "{err}");
    assert_eq!(other.requests().len(), 5, "another origin: {err}");
}
