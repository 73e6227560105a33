//! The deadline is the run's budget: with a deadline and no attempt count, the run keeps
//! trying until the deadline (however the deadline and the count are given), and a backoff
//! that would end past the deadline leaves a last attempt before it, while a Retry-After
//! past the deadline still stops the run at once.

use crate::common::*;
use std::time::Duration;

/// Runs the jobs six at a time, each on its own thread, and collects the results in order:
/// these runs mostly wait, so a few side by side keep the test short, and no more than a
/// few keep a loaded machine's start-up times far below the deadlines.
fn side_by_side<T: Send + 'static>(jobs: Vec<Box<dyn FnOnce() -> T + Send>>) -> Vec<T> {
    let mut results = Vec::new();
    let mut jobs = jobs.into_iter().peekable();
    while jobs.peek().is_some() {
        let handles: Vec<_> = jobs.by_ref().take(6).map(std::thread::spawn).collect();
        results.extend(handles.into_iter().map(|h| h.join().expect("job ran")));
    }
    results
}

/// How the deadline (1 s) or the count (6) reaches the run.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Given {
    None,
    Flag,
    Env,
    ConfigFile,
    /// `--deadline 0`: no deadline.
    Zero,
}

/// The run's command line and environment for a deadline given as `deadline` and a count
/// given as `count`, against `url`.
fn invocation(
    deadline: Given,
    count: Given,
    url: &str,
    dir: &std::path::Path,
) -> std::process::Command {
    let mut cmd = std_command();
    cmd.args(FAST);
    let mut config = String::new();
    for (given, flag, value, var) in [
        (deadline, "--deadline", "1s", "RETRY_HTTP_DEADLINE"),
        (count, "--attempts", "6", "RETRY_HTTP_ATTEMPTS"),
    ] {
        match given {
            Given::None => {}
            Given::Flag => {
                cmd.args([flag, value]);
            }
            Given::Env => {
                cmd.env(var, value);
            }
            Given::ConfigFile => config.push_str(&format!("{flag} {value}\n")),
            Given::Zero => {
                cmd.args([flag, "0"]);
            }
        }
    }
    if !config.is_empty() {
        let path = dir.join(format!("{deadline:?}-{count:?}.conf"));
        std::fs::write(&path, config).expect("config written");
        cmd.arg("-K").arg(path);
    }
    cmd.arg(url);
    cmd
}

/// Point 1 as a product: deadline given (flag, environment, `-K`, `0`, not at all) x count
/// given (flag, environment, `-K`, not at all), against a 503 forever. With a deadline and
/// no count the real binary keeps trying until the deadline (more than the old six
/// attempts, exit 5, not long before it); with a count it stops after six (exit 4); with
/// neither (or `--deadline 0`, no deadline) the default six hold. The loop's rule over
/// faults (a refused port too), to the microsecond on a deadline of seconds:
/// `request::clock_tests::with_a_deadline_and_no_count_the_run_tries_until_the_deadline`.
#[test]
fn a_deadline_without_a_count_keeps_trying_until_the_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let deadlines = [
        Given::Flag,
        Given::Env,
        Given::ConfigFile,
        Given::Zero,
        Given::None,
    ];
    let counts = [Given::Flag, Given::Env, Given::ConfigFile, Given::None];
    let mut jobs: Vec<Box<dyn FnOnce() -> String + Send>> = Vec::new();
    for deadline in deadlines {
        for count in counts {
            let dir = dir.path().to_path_buf();
            jobs.push(Box::new(move || {
                let server = Server::start(vec![Step::status(503, "")]).expect("server");
                let url = server.url("/");
                let t = std::time::Instant::now();
                let out = invocation(deadline, count, &url, &dir)
                    .output()
                    .expect("binary runs");
                let took = t.elapsed();
                let lines = attempt_lines(&out);
                let what = format!("deadline {deadline:?}, count {count:?}");
                let bounded_by_deadline = count == Given::None
                    && matches!(deadline, Given::Flag | Given::Env | Given::ConfigFile);
                let mut wrong = Vec::new();
                if bounded_by_deadline {
                    if code(&out) != 5 {
                        wrong.push(format!("exit {}, not 5", code(&out)));
                    }
                    if lines.len() <= 6 {
                        wrong.push(format!("{} attempts, not more than 6", lines.len()));
                    }
                    if took < Duration::from_millis(500) {
                        wrong.push(format!("ended after {took:?}, long before the deadline"));
                    }
                    if lines.iter().any(|l| l.contains("/6 ")) {
                        wrong.push("an attempt line counts out of 6".into());
                    }
                } else {
                    if code(&out) != 4 {
                        wrong.push(format!("exit {}, not 4", code(&out)));
                    }
                    if lines.len() != 6 {
                        wrong.push(format!("{} attempts, not 6", lines.len()));
                    }
                }
                if wrong.is_empty() {
                    String::new()
                } else {
                    format!("{what}: {}\n{}", wrong.join("; "), stderr(&out))
                }
            }));
        }
    }
    let runs = jobs.len();
    assert_eq!(runs, 5 * 4);
    let failures: Vec<String> = side_by_side(jobs)
        .into_iter()
        .filter(|f| !f.is_empty())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {runs} runs wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `--deadline 0` is no deadline: not even the reading of a `-K` file is bounded by it (it
/// was read as a deadline at start-up, and a file read a moment later ended the run with 5).
#[test]
fn a_deadline_of_zero_bounds_nothing_not_even_a_config_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("k.conf");
    std::fs::write(&conf, "--attempts 2\n").expect("config written");
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let url = s.url("/");
    for _ in 0..10 {
        let (out, _) = run(&["--deadline", "0", "-K", conf.to_str().expect("utf-8"), &url]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(out.stdout, b"ok");
    }
}

/// `--explain` names what bounds the attempts: the deadline, a count given, or the default.
#[test]
fn explain_names_what_bounds_the_attempts() {
    for (args, expected) in [
        (
            &["--deadline", "90s"][..],
            "attempts      unlimited; no count given: the deadline bounds the run",
        ),
        (
            &["--deadline", "90s", "--attempts", "4"],
            "attempts      4 (the first and 3 retries); given: the count bounds the run",
        ),
        (
            &[],
            "attempts      6 (the first and 5 retries); the default, with no --deadline",
        ),
    ] {
        let mut all = vec!["--explain"];
        all.extend_from_slice(args);
        all.push("http://127.0.0.1:9/");
        let (out, _) = run(&all);
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
        assert_eq!(code(&out), 0, "{args:?}: {text}");
        assert!(text.contains(expected), "{args:?}: {text}");
    }
}

/// A server that is down until near the deadline is caught: with `--jitter none` and
/// `--base 1s`, the second attempt comes at 1 s and the next backoff (2 s) would end past the
/// 2 s deadline; the run used to stop there (exit 5). Now a last attempt is made before
/// the deadline, and the server, up by then, answers 200. Over jitters x methods (a POST
/// answered 503 is replayed: a 503 proves it was not processed); the waits, to the
/// microsecond:
/// `request::clock_tests::a_server_up_near_the_deadline_is_caught_by_an_attempt_fitted_before_it`.
#[test]
fn a_server_that_comes_up_near_the_deadline_is_caught() {
    let mut jobs: Vec<Box<dyn FnOnce() -> String + Send>> = Vec::new();
    for jitter in ["none", "equal"] {
        for method in ["GET", "POST"] {
            jobs.push(Box::new(move || {
                let s = Server::start(vec![
                    Step::status(503, ""),
                    Step::status(503, ""),
                    Step::status(200, "up"),
                ])
                .expect("server");
                let mut args = vec![
                    "--deadline",
                    "2s",
                    "--base",
                    "1s",
                    "--cap",
                    "8s",
                    "--jitter",
                    jitter,
                ];
                if method == "POST" {
                    args.extend(["-d", "x"]);
                }
                let url = s.url("/");
                args.push(&url);
                let (out, took) = run(&args);
                let body = String::from_utf8_lossy(&out.stdout);
                if code(&out) == 0 && body == "up" && s.requests().len() == 3 {
                    String::new()
                } else {
                    format!(
                        "{jitter} {method}: exit {} after {took:?}, {} requests, stdout {body:?}\n{}",
                        code(&out),
                        s.requests().len(),
                        stderr(&out)
                    )
                }
            }));
        }
    }
    let failures: Vec<String> = side_by_side(jobs)
        .into_iter()
        .filter(|f| !f.is_empty())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Against a service that never comes up, the real binary ends close to its deadline (not
/// seconds before it, as when the first backoff that did not fit stopped it) and never much
/// after it. Over faults (refused, 503) x jitters. The bounds: no earlier than 1 s before
/// the 2 s deadline (the last attempt leaves the longest attempt so far, which a loaded
/// machine stretches), no later than 1.5 s after it (process start and exit on a loaded
/// machine). The loop's bounds, to the microsecond over attempts' times:
/// `request::clock_tests::a_run_against_a_service_never_up_ends_near_its_deadline`.
#[test]
fn a_run_against_a_service_never_up_ends_near_its_deadline() {
    let deadline = Duration::from_secs(2);
    let mut jobs: Vec<Box<dyn FnOnce() -> String + Send>> = Vec::new();
    for fault in ["refused", "503"] {
        for jitter in ["none", "full"] {
            jobs.push(Box::new(move || {
                let s = Server::start(vec![Step::status(503, "")]).expect("server");
                let url = match fault {
                    "refused" => closed_port_url(),
                    _ => s.url("/"),
                };
                let (out, took) = run(&[
                    "--deadline",
                    "2s",
                    "--base",
                    "500ms",
                    "--cap",
                    "8s",
                    "--jitter",
                    jitter,
                    &url,
                ]);
                let early = deadline - Duration::from_secs(1);
                let late = deadline + Duration::from_millis(1500);
                if code(&out) == 5 && took >= early && took <= late {
                    String::new()
                } else {
                    format!(
                        "{fault} {jitter}: exit {} after {took:?} (expected 5 within [{early:?}, {late:?}])\n{}",
                        code(&out),
                        stderr(&out)
                    )
                }
            }));
        }
    }
    let failures: Vec<String> = side_by_side(jobs)
        .into_iter()
        .filter(|f| !f.is_empty())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A Retry-After that reaches past the deadline still stops the run at once with exit 5:
/// the server said when to come back. Over statuses (429, 503) x methods: one request, the
/// reason named, and no sleep (the run's own summary time is far below the deadline).
#[test]
fn a_retry_after_past_the_deadline_still_stops_at_once() {
    for status in [429, 503] {
        for method in ["GET", "POST"] {
            let s =
                Server::start(vec![Step::with_header(status, "Retry-After", "5")]).expect("server");
            let url = s.url("/");
            let mut args = vec!["--deadline", "3s", "--max-retry-after", "10s"];
            if method == "POST" {
                args.extend(["-d", "x"]);
            }
            args.push(&url);
            let (out, took) = run(&args);
            let err = stderr(&out);
            assert_eq!(code(&out), 5, "{status} {method}: {err}");
            assert_eq!(s.requests().len(), 1, "{status} {method}: {err}");
            assert!(
                err.contains("the server's Retry-After (5s) would end past the deadline"),
                "{status} {method}: {err}"
            );
            assert!(took < Duration::from_millis(2900), "{took:?}: {err}");
        }
    }
}

/// Attempts fitted before the deadline come no closer together than `--base`: with a fixed
/// backoff (`--jitter none`, base 500 ms, deadline 3 s) the waits 0.5 s and 1 s fit, the
/// next (2 s) does not, so one attempt is drawn before the deadline and at most one more
/// (while 500 ms is still left beside the attempt): at most 5 attempts in all, where fitting
/// again and again would make about ten, the last ones milliseconds apart. The run still
/// ends within about `--base` of its deadline. One seed here; the waits over many, to the
/// microsecond: `request::clock_tests::attempts_fitted_before_the_deadline_are_no_burst`.
#[test]
fn attempts_fitted_before_the_deadline_are_no_burst() {
    let mut jobs: Vec<Box<dyn FnOnce() -> String + Send>> = Vec::new();
    for seed in 0..1 {
        jobs.push(Box::new(move || {
            let url = closed_port_url();
            let seed = seed.to_string();
            let (out, took) = run(&[
                "--deadline",
                "3s",
                "--base",
                "500ms",
                "--cap",
                "8s",
                "--jitter",
                "none",
                "--seed",
                &seed,
                &url,
            ]);
            let err = stderr(&out);
            let attempts = err.lines().filter(|l| l.contains(": attempt ")).count();
            let early = Duration::from_millis(2000);
            if code(&out) == 5 && (4..=5).contains(&attempts) && took >= early {
                String::new()
            } else {
                format!(
                    "seed {seed}: exit {}, {attempts} attempts after {took:?} (expected 5, 4 or 5 attempts, at least {early:?})\n{err}",
                    code(&out)
                )
            }
        }));
    }
    let failures: Vec<String> = side_by_side(jobs)
        .into_iter()
        .filter(|f| !f.is_empty())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
