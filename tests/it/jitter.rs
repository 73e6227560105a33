//! Each jitter mode's waits stay within its bounds, observed through the JSON log and the
//! server's clock; the same seed gives the same waits.

use crate::common::*;
use std::time::Duration;

/// Planned waits (microseconds) of a run against an always-503 server.
fn planned_waits(jitter: &str, seed: &str) -> (Vec<u64>, Vec<Duration>) {
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/");
    let args = [
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
        "--log-format",
        "json",
        &url,
    ];
    let (out, _) = run(&args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let waits: Vec<u64> = json_lines(&out, "attempt")
        .iter()
        .filter_map(|a| a["wait_us"].as_u64())
        .collect();
    assert_eq!(waits.len(), 5, "{}", stderr(&out));
    (waits, gaps(&s.requests()))
}

fn ceiling_us(n: usize) -> u64 {
    (10_000u64 << n).min(80_000)
}

/// The real binary sleeps each mode's draws (one seed each; over many seeds, to the
/// microsecond: `request::clock_tests::the_backoff_doubles_from_the_base_up_to_the_cap_within_each_jitter_s_bounds`).
#[test]
fn each_mode_stays_within_its_bounds() {
    for (mode, lo, hi) in [
        (
            "full",
            &(|_| 0u64) as &dyn Fn(usize) -> u64,
            &(|n| ceiling_us(n)) as &dyn Fn(usize) -> u64,
        ),
        ("equal", &|n| ceiling_us(n) / 2, &|n| ceiling_us(n)),
        ("decorrelated", &|_| 10_000, &|_| 80_000),
        ("none", &|n| ceiling_us(n), &|n| ceiling_us(n)),
        ("+20ms", &|n| ceiling_us(n), &|n| ceiling_us(n) + 20_000),
    ] {
        for seed in ["1"] {
            let (waits, gaps) = planned_waits(mode, seed);
            for (n, w) in waits.iter().enumerate() {
                assert!(
                    *w >= lo(n) && *w <= hi(n),
                    "{mode} seed {seed} retry {n}: {w}us"
                );
                assert!(
                    gaps[n] >= Duration::from_micros(*w),
                    "{mode}: slept less than planned"
                );
            }
        }
    }
}

#[test]
fn decorrelated_never_exceeds_three_times_the_previous() {
    let (waits, _) = planned_waits("decorrelated", "9");
    let mut prev = 10_000u64;
    for w in waits {
        assert!(w <= (prev * 3).max(10_000), "{w} after {prev}");
        prev = w;
    }
}

#[test]
fn same_seed_same_waits_different_seed_different_waits() {
    let (a, _) = planned_waits("full", "42");
    let (b, _) = planned_waits("full", "42");
    let (c, _) = planned_waits("full", "43");
    assert_eq!(a, b);
    assert_ne!(a, c);
}
