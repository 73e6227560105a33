//! The attempt loop's waits, on the scripted clock (see `scripted`): every wait the loop
//! sleeps is kept and passes at once, so the rules of its arithmetic (a Retry-After waited
//! and clamped, the backoff grown from `--base` and capped, the deadline's fitting) are
//! checked to the microsecond over many cases, and a run that would wait minutes takes
//! none. Each test is named for the rule it checks; that the real binary waits as much
//! against a real server is the integration tests' (tests/it/retry_after.rs, jitter.rs,
//! deadline_budget.rs), each with the shortest waits a user could set.

use crate::exit::Outcome;
use crate::policy::FailureKind;
use crate::request::scripted::{Reply, answer, run, run_taking};
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The command line `flags`, then the URL.
fn args<'a>(flags: &[&'a str]) -> Vec<&'a str> {
    let mut all = flags.to_vec();
    all.push("http://h/");
    all
}

/// The least time an attempt is given before the deadline (`backoff::MIN_ATTEMPT`).
const MIN_ATTEMPT: Duration = Duration::from_millis(10);

/// The faults of a service that is never up: a refused connection, a 503.
fn never_up() -> [Reply; 2] {
    [Reply::Fail(FailureKind::Refused), answer(503, &[], b"")]
}

/// Every Retry-After is waited in full, then the spread drawn is added (never taken off):
/// over statuses x spreads x seeds, each wait is the hint plus at most the spread, exactly
/// the hint without one; the run then succeeds and its time is the sum of its waits.
#[test]
fn the_retry_after_seconds_are_waited_and_the_spread_only_added() {
    for status in [429, 503] {
        for (spread, most) in [("0", ms(0)), ("200ms", ms(200)), ("1s", secs(1))] {
            for seed in ["1", "2", "3", "4", "5"] {
                let replies = vec![
                    answer(status, &[("retry-after", "1")], b""),
                    answer(status, &[("retry-after", "2")], b""),
                    answer(204, &[], b""),
                ];
                let flags = ["--base", "1ms", "--retry-after-spread", spread];
                let ran = run(&args(&[&flags[..], &["--seed", seed]].concat()), replies);
                let what = format!("{status}, spread {spread}, seed {seed}: {:?}", ran.waits);
                assert_eq!(ran.outcome(), Outcome::Success, "{what}");
                assert_eq!(ran.sent.len(), 3, "{what}");
                assert_eq!(ran.waits.len(), 2, "{what}");
                for (wait, asked) in ran.waits.iter().zip([secs(1), secs(2)]) {
                    assert!(*wait >= asked && *wait <= asked + most, "{what}");
                }
                assert_eq!(ran.took, ran.waits.iter().sum::<Duration>(), "{what}");
            }
        }
    }
}

/// A Retry-After is clamped to `--max-retry-after`, and one below it is waited as it is:
/// over hints x limits, the wait is the least of the two.
#[test]
fn a_retry_after_is_clamped_to_max_retry_after() {
    for (hint, asked) in [("3600", secs(3600)), ("120", secs(120)), ("1", secs(1))] {
        for (max, most) in [("150ms", ms(150)), ("1s", secs(1)), ("30s", secs(30))] {
            let replies = vec![
                answer(503, &[("retry-after", hint)], b""),
                answer(204, &[], b""),
            ];
            let flags = [
                "--max-retry-after",
                max,
                "--retry-after-spread",
                "0",
                "--base",
                "1ms",
            ];
            let ran = run(&args(&flags), replies);
            assert_eq!(ran.outcome(), Outcome::Success, "{hint} under {max}");
            assert_eq!(ran.waits, [asked.min(most)], "{hint} under {max}");
        }
    }
}

/// A Retry-After given as an HTTP-date is waited until that date (the scripted clock's date
/// starts on 2026-01-01 00:00:00 UTC), clamped as the seconds' form is.
#[test]
fn an_http_date_retry_after_is_waited_until_its_date() {
    for (date, max, expected) in [
        ("Thu, 01 Jan 2026 00:00:03 GMT", "1h", secs(3)),
        ("Thu, 01 Jan 2026 00:02:00 GMT", "1h", secs(120)),
        ("Thu, 01 Jan 2026 00:02:00 GMT", "1m", secs(60)),
    ] {
        let replies = vec![
            answer(503, &[("retry-after", date)], b""),
            answer(204, &[], b""),
        ];
        let flags = [
            "--max-retry-after",
            max,
            "--retry-after-spread",
            "0",
            "--base",
            "1ms",
        ];
        let ran = run(&args(&flags), replies);
        assert_eq!(ran.outcome(), Outcome::Success, "{date}");
        assert_eq!(ran.waits, [expected], "{date} under {max}");
    }
}

/// A Retry-After that would end past the deadline stops the run at once (exit 5), saying
/// why, without a wait: over statuses x methods.
#[test]
fn a_retry_after_past_the_deadline_stops_the_run_without_a_wait() {
    for status in [429, 503] {
        for method in ["GET", "POST"] {
            let flags = ["--deadline", "3s", "--max-retry-after", "10s", "-X", method];
            let replies = vec![answer(status, &[("retry-after", "5")], b"")];
            let ran = run(&args(&flags), replies);
            let why = ran.ended.why.clone().unwrap_or_default();
            assert_eq!(ran.outcome(), Outcome::Deadline, "{status} {method}: {why}");
            assert_eq!(ran.sent.len(), 1, "{status} {method}");
            assert!(ran.waits.is_empty(), "{status} {method}: {:?}", ran.waits);
            assert!(
                why.contains("the server's Retry-After (5s) would end past the deadline"),
                "{status} {method}: {why}"
            );
        }
    }
}

/// The waits of a run against a 503 that lasts, with `--jitter jitter`, `--base 10ms`,
/// `--cap 80ms`, six attempts and `--seed seed`.
fn backoff_waits(jitter: &str, seed: &str) -> Vec<Duration> {
    let flags = [
        "--jitter",
        jitter,
        "--base",
        "10ms",
        "--cap",
        "80ms",
        "--attempts",
        "6",
        "--seed",
        seed,
    ];
    let ran = run(&args(&flags), vec![answer(503, &[], b"")]);
    assert_eq!(ran.outcome(), Outcome::AttemptsExhausted, "{jitter} {seed}");
    assert_eq!(ran.waits.len(), 5, "{jitter} {seed}");
    ran.waits
}

/// The ceiling of retry `n`'s backoff (from 0): the base doubled `n` times, capped.
fn ceiling(n: usize) -> Duration {
    (ms(10) * (1 << n)).min(ms(80))
}

/// The backoff grows from `--base`, doubling, and is capped at `--cap`; each jitter mode
/// draws within its bounds (over modes x seeds); without jitter the waits are exactly
/// 10, 20, 40, 80, 80 ms.
#[test]
fn the_backoff_doubles_from_the_base_up_to_the_cap_within_each_jitter_s_bounds() {
    type Bound = fn(usize) -> Duration;
    let modes: [(&str, Bound, Bound); 5] = [
        ("full", |_| ms(0), ceiling),
        ("equal", |n| ceiling(n) / 2, ceiling),
        ("decorrelated", |_| ms(10), |_| ms(80)),
        ("none", ceiling, ceiling),
        ("+20ms", ceiling, |n| ceiling(n) + ms(20)),
    ];
    for (mode, lo, hi) in modes {
        for seed in 1..=20 {
            let waits = backoff_waits(mode, &seed.to_string());
            for (n, w) in waits.iter().enumerate() {
                assert!(*w >= lo(n) && *w <= hi(n), "{mode} seed {seed}: {waits:?}");
            }
        }
    }
    assert_eq!(
        backoff_waits("none", "1"),
        [ms(10), ms(20), ms(40), ms(80), ms(80)]
    );
}

/// The same seed draws the same waits; another seed, others.
#[test]
fn the_same_seed_draws_the_same_waits() {
    assert_eq!(backoff_waits("full", "42"), backoff_waits("full", "42"));
    assert_ne!(backoff_waits("full", "42"), backoff_waits("full", "43"));
}

/// With a deadline and no count the run keeps trying until the deadline (exit 5, more than
/// the default six attempts, ending less than a second before it and never after it); with
/// a count, or without a deadline (`--deadline 0` too), six attempts (exit 4). Over faults
/// x deadlines x counts, each attempt taking 20 ms.
#[test]
fn with_a_deadline_and_no_count_the_run_tries_until_the_deadline() {
    let fast = ["--base", "1ms", "--cap", "5ms", "--retry-after-spread", "0"];
    for fault in never_up() {
        for deadline in [Some("3s"), Some("0"), None] {
            for count in [Some("6"), None] {
                let mut flags = fast.to_vec();
                deadline.inspect(|d| flags.extend(["--deadline", d]));
                count.inspect(|c| flags.extend(["--attempts", c]));
                let ran = run_taking(&args(&flags), vec![fault.clone()], ms(20));
                let what = format!("{deadline:?} {count:?}: {} sent", ran.sent.len());
                if deadline == Some("3s") && count.is_none() {
                    assert_eq!(ran.outcome(), Outcome::Deadline, "{what}");
                    assert!(ran.sent.len() > 6, "{what}");
                    assert!(ran.took <= secs(3) && ran.took > secs(2), "{what}");
                } else {
                    assert_eq!(ran.outcome(), Outcome::AttemptsExhausted, "{what}");
                    assert_eq!(ran.sent.len(), 6, "{what}");
                }
            }
        }
    }
}

/// A server down until near the deadline is caught: with `--base 2s` against a 3 s
/// deadline the second attempt comes at 2 s (1 to 2 s under equal jitter), and the next
/// backoff (4 s) would end past the deadline, so a last attempt is fitted before it (its
/// wait drawn in the second half of what is left, an attempt's least time kept), which the
/// server, up by then, answers. Over jitters x methods (a 503 proves a POST unprocessed).
#[test]
fn a_server_up_near_the_deadline_is_caught_by_an_attempt_fitted_before_it() {
    for jitter in ["none", "equal"] {
        for method in ["GET", "POST"] {
            let flags = [
                "--deadline",
                "3s",
                "--base",
                "2s",
                "--cap",
                "8s",
                "--jitter",
                jitter,
                "-X",
                method,
            ];
            let replies = vec![
                answer(503, &[], b""),
                answer(503, &[], b""),
                answer(204, &[], b""),
            ];
            let ran = run(&args(&flags), replies);
            let what = format!("{jitter} {method}: {:?}", ran.waits);
            assert_eq!(ran.outcome(), Outcome::Success, "{what}");
            assert_eq!(ran.sent.len(), 3, "{what}");
            let first = ran.waits[0];
            let least = if jitter == "none" { secs(2) } else { secs(1) };
            assert!(first >= least && first <= secs(2), "{what}");
            let room = secs(3) - first - MIN_ATTEMPT;
            assert!(ran.waits[1] >= room / 2 && ran.waits[1] <= room, "{what}");
        }
    }
}

/// Against a service never up, the run ends near its deadline and never after it: once a
/// fitted attempt leaves less than `--base` beside an attempt's time, it stops, so it ends
/// less than `--base` plus the longest attempt before the deadline. Over faults x jitters x
/// the time an attempt takes.
#[test]
fn a_run_against_a_service_never_up_ends_near_its_deadline() {
    for fault in never_up() {
        for jitter in ["none", "full", "decorrelated"] {
            for takes in [ms(0), ms(20), ms(200)] {
                let flags = [
                    "--deadline",
                    "3s",
                    "--base",
                    "500ms",
                    "--cap",
                    "8s",
                    "--jitter",
                    jitter,
                ];
                let ran = run_taking(&args(&flags), vec![fault.clone()], takes);
                let what = format!("{jitter}, {takes:?} each: {:?}", ran.took);
                assert_eq!(ran.outcome(), Outcome::Deadline, "{what}");
                assert!(ran.took <= secs(3), "{what}");
                assert!(
                    ran.took > secs(3) - ms(500) - takes.max(MIN_ATTEMPT),
                    "{what}"
                );
            }
        }
    }
}

/// Attempts fitted before the deadline come no closer together than `--base`: with a fixed
/// backoff of 500 ms against 3 s, the waits 0.5 s and 1 s fit, the next (2 s) does not, so
/// one attempt is fitted before the deadline and at most one more, with `--base` to spare:
/// 4 or 5 attempts, not the burst of ever shorter waits that fitting again and again would
/// make.
#[test]
fn attempts_fitted_before_the_deadline_are_no_burst() {
    for seed in 0..20 {
        let seed = seed.to_string();
        let flags = [
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
        ];
        let ran = run(&args(&flags), vec![Reply::Fail(FailureKind::Refused)]);
        let what = format!("seed {seed}: {:?}", ran.waits);
        assert_eq!(ran.outcome(), Outcome::Deadline, "{what}");
        assert!((4..=5).contains(&ran.sent.len()), "{what}");
        assert_eq!(ran.waits[..2], [ms(500), secs(1)], "{what}");
        // A second fitted attempt only with `--base` to spare beside an attempt's time.
        if let [a, b, c, _] = ran.waits[..] {
            assert!(secs(3) - a - b - c - MIN_ATTEMPT >= ms(500), "{what}");
        }
    }
}

/// A logged retry is always made: a Retry-After clamped to 1 s plus up to 1 s of spread
/// against a 3 s deadline has its spread trimmed so the attempt still starts before the
/// deadline. Over seeds: every wait slept is followed by its attempt.
#[test]
fn every_promised_retry_is_made_before_the_deadline() {
    for seed in 1..=40 {
        let seed = seed.to_string();
        let flags = [
            "--seed",
            &seed,
            "--deadline",
            "3s",
            "--max-retry-after",
            "1s",
            "--base",
            "1ms",
        ];
        let ran = run(
            &args(&flags),
            vec![answer(503, &[("retry-after", "5")], b"")],
        );
        let what = format!("seed {seed}: {:?}", ran.waits);
        assert_eq!(ran.outcome(), Outcome::Deadline, "{what}");
        assert!(!ran.waits.is_empty(), "{what}");
        assert_eq!(ran.sent.len(), ran.waits.len() + 1, "{what}");
        assert!(ran.waits.iter().all(|w| *w >= secs(1)), "{what}");
        assert!(ran.took < secs(3), "{what}");
    }
}

/// A quota said spent on a 503 holds the next attempt until its reset, in each dialect
/// (the IETF draft's structured fields, its older separate fields, GitHub's and others'
/// `X-RateLimit-*` with the reset as seconds or as a Unix time, counted from the scripted
/// clock's date), though the backoff is a millisecond.
#[test]
fn each_dialect_holds_a_spent_quota_until_its_reset() {
    // 2026-01-01 00:00:02 UTC: the scripted clock's date and 2 s.
    let dialects: [&[(&'static str, &'static str)]; 4] = [
        &[
            ("ratelimit-policy", "\"default\";q=10;w=60"),
            ("ratelimit", "\"default\";r=0;t=2"),
        ],
        &[
            ("ratelimit-limit", "10"),
            ("ratelimit-remaining", "0"),
            ("ratelimit-reset", "2"),
        ],
        &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "2")],
        &[
            ("x-ratelimit-limit", "10"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1767225602"),
        ],
    ];
    for headers in dialects {
        let replies = vec![answer(503, headers, b""), answer(204, &[], b"")];
        let flags = ["--base", "1ms", "--cap", "5ms", "--retry-after-spread", "0"];
        let ran = run(&args(&flags), replies);
        assert_eq!(ran.outcome(), Outcome::Success, "{headers:?}");
        assert_eq!(ran.sent.len(), 2, "{headers:?}");
        assert_eq!(ran.took, secs(2), "{headers:?}: {:?}", ran.waits);
    }
}

/// Of several Retry-After fields, the largest valid one is waited (in any order; one that
/// cannot be read is ignored, never read as 0).
#[test]
fn of_several_retry_after_fields_the_largest_valid_is_waited() {
    let cases: [(&[(&'static str, &'static str)], Duration); 4] = [
        (&[("retry-after", "1"), ("retry-after", "2")], secs(2)),
        (&[("retry-after", "2"), ("retry-after", "1")], secs(2)),
        (&[("retry-after", "soon"), ("retry-after", "1")], secs(1)),
        (&[("retry-after", "0"), ("retry-after", "1")], secs(1)),
    ];
    for (headers, expected) in cases {
        let replies = vec![answer(503, headers, b""), answer(204, &[], b"")];
        let flags = [
            "--base",
            "1ms",
            "--jitter",
            "none",
            "--retry-after-spread",
            "0",
        ];
        let ran = run(&args(&flags), replies);
        assert_eq!(ran.outcome(), Outcome::Success, "{headers:?}");
        assert_eq!(ran.waits, [expected], "{headers:?}");
    }
}

/// A low quota spreads the attempts over the window to its reset: with 1 of 10 requests
/// left for the 2 s to the reset, the next attempt goes after the backoff alone and the one
/// after it waits for its share of the window, from the first answer's time.
#[test]
fn a_low_quota_spreads_the_attempts_to_its_reset() {
    let low: &[(&'static str, &'static str)] = &[
        ("ratelimit-limit", "10"),
        ("ratelimit-remaining", "1"),
        ("ratelimit-reset", "2"),
    ];
    let replies = vec![
        answer(503, low, b""),
        answer(503, low, b""),
        answer(204, &[], b""),
    ];
    let flags = ["--base", "1ms", "--cap", "5ms", "--jitter", "none"];
    let ran = run(
        &args(&[&flags[..], &["--retry-after-spread", "0"]].concat()),
        replies,
    );
    assert_eq!(ran.outcome(), Outcome::Success, "{:?}", ran.waits);
    // The backoff alone twice (the quota lets the second attempt go), then the pacing
    // that starts the third 2 s (the window over the 1 request left) after the first.
    assert_eq!(ran.waits[..2], [ms(1), ms(2)], "{:?}", ran.waits);
    assert_eq!(ran.waits.len(), 3, "{:?}", ran.waits);
    assert_eq!(ran.took, secs(2), "{:?}", ran.waits);
}
