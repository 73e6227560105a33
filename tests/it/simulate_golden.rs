//! `retry-http simulate`'s output, byte for byte, for a given seed: each model and strategy,
//! the sweeps, the search, JSON, the SVG charts and the usage errors, against
//! `tests/it/simulate_golden.txt`. A chart is kept as its length and an FNV-1a digest (the
//! files are tens of kilobytes). Short scenarios keep the whole set to a few seconds.
//! `RETRY_HTTP_REGENERATE=1 cargo test --test it simulate_golden` rewrites the file after a
//! change that is meant to change the output.

use crate::common::*;

/// The golden file, beside this one.
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/simulate_golden.txt");

/// Each case: a name, and the arguments after `simulate` (`@/` is a temporary folder).
const CASES: &[(&str, &str)] = &[
    (
        "outage-every-strategy-deadline-plot",
        "--strategies fixed,exponential,full,equal,decorrelated,shared-budget,shared-breaker --deadline 5s --plot @/o.svg",
    ),
    (
        "outage-clipped-plot-two-runs",
        "--clients 1000 --capacity 10 --plot @/o2.svg --seed 3 --runs 2",
    ),
    (
        "outage-long-outage-plot",
        "--outage 3s --strategies full,decorrelated --window 50ms --plot @/o3.svg",
    ),
    (
        "outage-shared-settings-json",
        "--strategies shared-budget,shared-breaker --retry-budget 25 --budget-floor 5 --breaker-threshold 2 --format json --seed 7",
    ),
    ("outage-search", "--search --clients 60 --deadline 20s"),
    ("outage-search-json", "--search --clients 60 --format json"),
    ("outage-search-none", "--search --clients 60 --attempts 1"),
    (
        "overload-closed-drop-plot",
        "--model overload --population closed --capacity-drop 0.5 --clients 300 --strategies no-retry,retries,shared-breaker,bucket --plot @/t.svg",
    ),
    (
        "overload-every-setting",
        "--model overload --base-rate 30 --spike-rate 90 --trigger-at 10s --trigger-for 3s --timeout 2s --per-request 5ms --network 50ms --latency 500ms --duration 40s --attempts 4 --base 200ms --cap 1s --strategies full,equal,decorrelated,exponential,fixed",
    ),
    (
        "overload-json",
        "--model overload --format json --strategies full,shared-budget,breaker --seed 4 --duration 40s",
    ),
    (
        "overload-sweep-plot",
        "--model overload --sweep --trigger-at 1s --duration 31s --base-rate 10 --strategies retries,shared-budget --runs 1 --plot @/b.svg",
    ),
    (
        "overload-sweep-json",
        "--model overload --sweep --trigger-at 1s --duration 31s --base-rate 10 --strategies shared-breaker --runs 1 --format json",
    ),
    (
        "overload-sweep-seeds-wrap",
        "--model overload --sweep --trigger-at 1s --duration 31s --base-rate 5 --strategies no-retry --runs 2 --seed 18446744073709551615",
    ),
    (
        "failure-rate-pooled-json",
        "--model failure-rate --format json --runs 2 --failure-rate 0.3 --clients 50 --base-rate 50 --duration 20s",
    ),
    (
        "failure-rate-settings",
        "--model failure-rate --latency 50ms --attempts 5 --base 10ms --cap 500ms --duration 30s --strategies bucket,breaker,shared-budget,shared-breaker,no-retry,retries,retries",
    ),
    (
        "failure-rate-sweep-plot",
        "--model failure-rate --sweep --duration 2s --base-rate 20 --plot @/f.svg",
    ),
    (
        "failure-rate-sweep-json",
        "--model failure-rate --sweep --duration 2s --base-rate 20 --runs 2 --format json --strategies retries,bucket",
    ),
    ("cron-no-splay", "--model cron"),
    ("cron-splay-a-minute", "--model cron --splay 60s"),
    (
        "cron-json",
        "--model cron --clients 1000 --splay 10s --period 20s --store-ops 4 --format json",
    ),
    ("cron-bad-splay", "--model cron --splay soon"),
    ("cron-negative-splay", "--model cron --splay -1s"),
    ("cron-splay-above-period", "--model cron --splay 2m"),
    ("cron-period-fraction", "--model cron --period 1500ms"),
    ("cron-period-zero", "--model cron --period 0"),
    ("cron-period-long", "--model cron --period 25h"),
    ("cron-store-ops-zero", "--model cron --store-ops 0"),
    ("cron-foreign-attempts", "--model cron --attempts 3"),
    ("cron-foreign-strategies", "--model cron --strategies full"),
    ("limiter", "--model limiter"),
    ("limiter-json", "--model limiter --seed 7 --format json"),
    ("limiter-foreign-clients", "--model limiter --clients 10"),
    ("limiter-foreign-attempts", "--model limiter --attempts 3"),
    ("foreign-splay", "--splay 1s"),
    ("foreign-period", "--model overload --period 1m"),
    ("foreign-outage-flag", "--model overload --budget-floor 300"),
    ("foreign-overload-flag", "--spike-rate 50"),
    ("foreign-outage-flag-2", "--model failure-rate --outage 1s"),
    ("foreign-sweep", "--model outage --sweep"),
    ("foreign-timeout", "--model failure-rate --timeout 1s"),
    (
        "foreign-failure-rate",
        "--model overload --failure-rate 0.2",
    ),
    ("foreign-base-rate", "--base-rate 3"),
    ("foreign-population", "--population closed"),
    ("outage-unknown-strategy", "--strategies slow"),
    ("outage-strategy-of-another-model", "--strategies retries"),
    (
        "overload-unknown-strategy",
        "--model overload --strategies full,slow",
    ),
    ("outage-base-above-cap", "--base 9s --cap 1s"),
    (
        "overload-base-above-cap",
        "--model overload --base 9s --cap 1s",
    ),
    ("outage-base-too-small", "--base 0ms"),
    (
        "failure-rate-base-too-small",
        "--model failure-rate --base 0ms",
    ),
    ("outage-window-zero", "--window 0"),
    ("outage-too-much-work", "--clients 1000000 --attempts 1000"),
    ("search-too-much-work", "--search --clients 1000000"),
    (
        "sweep-with-spike-rate",
        "--model overload --sweep --spike-rate 50",
    ),
    (
        "sweep-with-trigger-for",
        "--model overload --sweep --trigger-for 5s",
    ),
    ("overload-runs-without-sweep", "--model overload --runs 3"),
    (
        "failure-rate-sweep-with-p",
        "--model failure-rate --sweep --failure-rate 0.2",
    ),
    (
        "failure-rate-sweep-with-clients",
        "--model failure-rate --sweep --clients 20",
    ),
    (
        "failure-rate-plot-without-sweep",
        "--model failure-rate --plot @/x.svg",
    ),
    ("overload-duration-short", "--model overload --duration 20s"),
    (
        "overload-sweep-duration-short",
        "--model overload --sweep --duration 40s",
    ),
    (
        "failure-rate-duration-long",
        "--model failure-rate --duration 2d",
    ),
    (
        "failure-rate-duration-short",
        "--model failure-rate --duration 500ms",
    ),
    ("overload-timeout-zero", "--model overload --timeout 0ms"),
    ("overload-latency-zero", "--model overload --latency 0s"),
    (
        "overload-trigger-early",
        "--model overload --trigger-at 500ms",
    ),
    (
        "overload-run-too-large",
        "--model overload --base-rate 100000 --duration 1000s",
    ),
    (
        "overload-sweep-too-large",
        "--model overload --base-rate 2000 --duration 200s --attempts 10 --sweep --runs 100",
    ),
    (
        "failure-rate-run-too-large",
        "--model failure-rate --base-rate 100000 --duration 1000s",
    ),
    ("plot-is-a-folder", "--plot @/"),
    ("plot-folder-missing", "--plot @/nope/x.svg"),
    ("plot-with-search", "--search --plot @/x.svg"),
    ("sweep-with-search", "--search --sweep"),
    ("bad-rate", "--model overload --base-rate 0"),
    ("bad-drop", "--model overload --capacity-drop 1"),
    ("bad-probability", "--model failure-rate --failure-rate 2"),
    ("bad-model", "--model chaos"),
    ("bad-population", "--model overload --population half"),
    ("negative-clients", "--clients -3"),
    ("negative-duration", "--base -1s"),
    ("runs-zero", "--runs 0"),
    ("runs-too-many", "--runs 1001"),
    ("attempts-zero", "--attempts 0"),
    ("capacity-zero", "--capacity 0"),
    ("breaker-threshold-zero", "--breaker-threshold 0"),
    ("bad-format", "--format yaml"),
    ("unknown-flag", "--frobnicate"),
];

/// 64-bit FNV-1a of `bytes`: enough to tell a changed chart from the same one.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// One case run: its header line, exit code, stdout, stderr, and each chart it wrote (the
/// temporary folder written `@/` throughout).
fn record(name: &str, args: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let folder = format!("{}/", dir.path().display());
    let line = args.replace("@/", &folder);
    let mut all = vec!["simulate"];
    all.extend(line.split_whitespace());
    let (out, _) = run(&all);
    let text = |b: &[u8]| String::from_utf8_lossy(b).replace(&folder, "@/");
    let mut block = format!(
        "=== {name}: {args}\nexit {}\n--- stdout\n{}--- stderr\n{}",
        code(&out),
        text(&out.stdout),
        text(&out.stderr)
    );
    let mut charts: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    charts.sort();
    for chart in charts {
        let bytes = std::fs::read(&chart).unwrap();
        let file = chart.file_name().unwrap().to_string_lossy();
        block.push_str(&format!(
            "--- @/{file}: {} bytes, fnv1a64 {:016x}\n",
            bytes.len(),
            fnv1a(&bytes)
        ));
    }
    block
}

#[test]
fn simulate_prints_and_draws_what_it_did() {
    let now: Vec<String> = CASES.iter().map(|(n, a)| record(n, a)).collect();
    if std::env::var_os("RETRY_HTTP_REGENERATE").is_some_and(|v| v == "1") {
        std::fs::write(GOLDEN, now.concat()).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(GOLDEN)
        .unwrap_or_else(|e| panic!("{GOLDEN}: {e}; RETRY_HTTP_REGENERATE=1 writes it"));
    let before: Vec<String> =
        golden
            .split_inclusive('\n')
            .fold(Vec::new(), |mut blocks: Vec<String>, line| {
                match blocks.last_mut() {
                    Some(b) if !line.starts_with("=== ") => b.push_str(line),
                    _ => blocks.push(line.to_string()),
                }
                blocks
            });
    assert_eq!(
        before.len(),
        now.len(),
        "cases added or removed: regenerate"
    );
    for (old, new) in before.iter().zip(&now) {
        assert_eq!(old, new, "the output changed");
    }
}
