//! `retry-http simulate --model ...`: the outage model's rows unchanged (a legend and a
//! sentence under them), the overload and
//! failure-rate models' tables and JSON (keys, shapes, figures that hold by construction),
//! their sweeps (a point per cell, the table and the JSON agreeing), the plots, and the
//! usage errors (a flag of another model, an unknown strategy, a bad value: exit 2, one
//! line), and the cron model's busiest second against the mean with and without a splay.
//! Short scenarios (`--duration`, a few strategies) keep each run quick.

use crate::common::*;
use serde_json::Value;

/// The outage model's JSON for seed 1 as the command printed it before the other models
/// existed; the new output may only add keys.
const OUTAGE_SEED_1: &str = r#"[{"calls":1576.0,"calls_per_served":32.833333333333336,"gave_up":152.0,"last_success_s":0.7,"peak_load":8.333333333333334,"served_pct":24.0,"strategy":"fixed"},{"calls":1360.0,"calls_per_served":11.333333333333334,"gave_up":80.0,"last_success_s":12.7,"peak_load":8.333333333333334,"served_pct":60.0,"strategy":"exponential"},{"calls":1091.0,"calls_per_served":5.455,"gave_up":0.0,"last_success_s":4.037027,"peak_load":1.7083333333333333,"served_pct":100.0,"strategy":"full"},{"calls":1041.0,"calls_per_served":5.205,"gave_up":0.0,"last_success_s":2.851778,"peak_load":2.25,"served_pct":100.0,"strategy":"equal"},{"calls":849.0,"calls_per_served":4.245,"gave_up":0.0,"last_success_s":2.872243,"peak_load":2.5,"served_pct":100.0,"strategy":"decorrelated"},{"calls":400.0,"calls_per_served":2.0,"gave_up":0.0,"last_success_s":1.4,"peak_load":1.0,"served_pct":100.0,"strategy":"physical_limit"}]"#;

/// The outage model's table for seed 1, as printed before the other models existed (the
/// legend and the sentence under it came later).
const OUTAGE_TABLE: &str = "\
200 clients; down 600ms, then 24 per 100ms; 8 attempts, base 100ms, cap 8s; seed 1
strategy         served%    calls calls/served last success s  peak load  gave up
fixed               24.0     1576        32.83           0.70       8.3x    152.0
exponential         60.0     1360        11.33          12.70       8.3x     80.0
full               100.0     1091         5.46           4.04       1.7x      0.0
equal              100.0     1041         5.21           2.85       2.2x      0.0
decorrelated       100.0      849         4.25           2.87       2.5x      0.0
physical_limit     100.0      400         2.00           1.40       1.0x      0.0
";

/// The eleven strategies of the overload and failure-rate models, in the report's order.
const ELEVEN: [&str; 11] = [
    "no-retry",
    "retries",
    "fixed",
    "exponential",
    "full",
    "equal",
    "decorrelated",
    "bucket",
    "breaker",
    "shared-budget",
    "shared-breaker",
];

/// `simulate ARGS` succeeds; its stdout.
fn ok(args: &[&str]) -> String {
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    let (out, _) = run(&all);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// `simulate --format json ARGS`, parsed as an array.
fn rows(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let text = ok(&all);
    let v: Value = serde_json::from_str(&text).expect("JSON");
    v.as_array().expect("an array").clone()
}

fn num(r: &Value, key: &str) -> f64 {
    r[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {r}"))
}

/// `a` and `b` equal up to the last digit JSON keeps.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(1.0)
}

fn names(rows: &[Value]) -> Vec<&str> {
    rows.iter()
        .map(|r| r["strategy"].as_str().expect("a strategy name"))
        .collect()
}

/// The outage table as printed before the other models existed, then its legend (two lines)
/// and the sentence that says what it shows.
fn assert_outage_table(out: &str) {
    assert!(out.starts_with(OUTAGE_TABLE), "{out}");
    let under: Vec<&str> = out[OUTAGE_TABLE.len()..].lines().collect();
    assert_eq!(under.len(), 3, "{out}");
    for (line, start) in under
        .iter()
        .zip(["served%: ", "peak load: ", "what it shows: "])
    {
        assert!(
            line.starts_with(start),
            "{line:?} does not start with {start:?}"
        );
    }
}

#[test]
fn the_outage_model_prints_what_it_printed() {
    assert_outage_table(&ok(&[]));
    assert_outage_table(&ok(&["--model", "outage", "--seed", "1"]));
    let before: Vec<Value> = serde_json::from_str(OUTAGE_SEED_1).expect("the fixture");
    let now = rows(&["--model", "outage"]);
    assert_eq!(now.len(), before.len());
    for (old, new) in before.iter().zip(&now) {
        for (key, value) in old.as_object().expect("an object") {
            assert_eq!(&new[key], value, "{key} changed: {new}");
        }
        // The keys it gained, shared with the other models' rows.
        assert!(close(
            num(new, "success_rate"),
            num(old, "served_pct") / 100.0
        ));
        assert!(close(num(new, "amplification"), num(old, "calls") / 200.0));
    }
}

#[test]
fn the_overload_model_reports_every_strategy() {
    let all = rows(&["--model", "overload"]);
    assert_eq!(names(&all), ELEVEN);
    for r in &all {
        let s = num(r, "success_rate");
        assert!((0.0..=1.0).contains(&s), "{r}");
        assert!(close(s, num(r, "succeeded") / num(r, "ended")), "{r}");
        assert!(close(
            num(r, "amplification"),
            num(r, "calls") / num(r, "first_tries")
        ));
        let recovered = r["recovered"].as_bool().expect("recovered is a boolean");
        assert_eq!(recovered, r["recover_s"].is_number(), "{r}");
        assert!(r["recover_s"].is_number() || r["recover_s"].is_null());
        for series in ["offered", "throughput", "goodput", "first"] {
            assert_eq!(r[series].as_array().map(Vec::len), Some(80), "{series}");
        }
    }
    let no_retry = &all[0];
    assert_eq!(num(no_retry, "amplification"), 1.0, "one try per run");
    assert!(num(&all[1], "amplification") > 1.0, "retries retry");

    let table = ok(&["--model", "overload"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with(
            "overload: open population, 1000 clients; 40/s first tries, 80/s from 20s for 5s"
        ),
        "{table}"
    );
    for (name, line) in ELEVEN.iter().zip(&lines[2..13]) {
        assert!(line.starts_with(name), "{line}");
        assert!(line.contains(" yes ") || line.contains(" no "), "{line}");
        assert!(line.ends_with('%'), "{line}");
    }
    for (line, r) in lines[2..13].iter().zip(&all) {
        assert_eq!(
            line.contains("stuck"),
            !r["recovered"].as_bool().unwrap_or(true),
            "{line}"
        );
    }
}

#[test]
fn a_closed_population_and_a_capacity_drop_run() {
    let args = [
        "--model",
        "overload",
        "--population",
        "closed",
        "--clients",
        "200",
        "--spike-rate",
        "40",
        "--capacity-drop",
        "0.5",
        "--duration",
        "40s",
        "--strategies",
        "no-retry,shared-budget",
    ];
    let table = ok(&args);
    assert!(
        table.starts_with("overload: closed population of 200 clients")
            && table.contains("50% of capacity lost from 20s for 5s"),
        "{table}"
    );
    let all = rows(&args);
    assert_eq!(names(&all), ["no-retry", "shared-budget"]);
}

#[test]
fn the_failure_rate_model_multiplies_the_load_of_retries() {
    let all = rows(&[
        "--model",
        "failure-rate",
        "--failure-rate",
        "0.5",
        "--duration",
        "20s",
    ]);
    assert_eq!(names(&all), ELEVEN);
    for r in &all {
        assert_eq!(num(r, "p"), 0.5);
        assert_eq!(num(r, "clients"), 100.0);
        assert!((0.0..=1.0).contains(&num(r, "success_rate")), "{r}");
        assert!(r.get("recovered").is_none(), "no recovery in this model");
    }
    assert_eq!(num(&all[0], "amplification"), 1.0);
    // Three tries at p = 0.5: 1 + 0.5 + 0.25 calls per first try.
    let retries = num(&all[1], "amplification");
    assert!((1.6..1.9).contains(&retries), "{retries}");
    let table = ok(&[
        "--model",
        "failure-rate",
        "--duration",
        "5s",
        "--strategies",
        "retries",
    ]);
    assert!(
        table.starts_with("failure-rate: 100 clients, 100/s first tries in all, p = 0.1"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .nth(2)
            .is_some_and(|l| l.starts_with("retries"))
    );
}

#[test]
fn the_runs_of_the_failure_rate_model_pool() {
    let one = |seed: &str| {
        rows(&[
            "--model",
            "failure-rate",
            "--duration",
            "5s",
            "--strategies",
            "full",
            "--seed",
            seed,
        ])[0]
            .clone()
    };
    let (a, b) = (one("4"), one("5"));
    let both = rows(&[
        "--model",
        "failure-rate",
        "--duration",
        "5s",
        "--strategies",
        "full",
        "--seed",
        "4",
        "--runs",
        "2",
    ]);
    assert_eq!(num(&both[0], "calls"), num(&a, "calls") + num(&b, "calls"));
    assert_eq!(num(&both[0], "seeds"), 2.0);
}

/// The overload sweep's arguments, short: two strategies, one seed, 50 s runs.
const BOUNDARY: [&str; 10] = [
    "--model",
    "overload",
    "--sweep",
    "--strategies",
    "no-retry,retries",
    "--runs",
    "1",
    "--duration",
    "50s",
    "--seed",
];

#[test]
fn the_overload_sweep_gives_a_point_per_cell_and_the_table_agrees() {
    let mut args = BOUNDARY.to_vec();
    args.push("2");
    let points = rows(&args);
    assert_eq!(
        points.len(),
        2 * 6 * 5,
        "2 strategies x 6 rates x 5 lengths"
    );
    // By strategy, then spike rate, then trigger length.
    for (i, p) in points.iter().enumerate() {
        assert_eq!(p["strategy"], if i < 30 { "no-retry" } else { "retries" });
        assert_eq!(
            num(p, "spike_rate"),
            [50.0, 60.0, 70.0, 80.0, 90.0, 100.0][(i / 5) % 6]
        );
        assert_eq!(num(p, "trigger_for_s"), [1.0, 2.0, 5.0, 10.0, 20.0][i % 5]);
    }
    for p in &points {
        for key in [
            "strategy",
            "spike_rate",
            "trigger_for_s",
            "clients",
            "recovered",
            "recovered_share",
            "recover_s",
            "success_rate",
            "amplification",
        ] {
            assert!(p.get(key).is_some(), "{key} missing in {p}");
        }
        assert!(p["recovered"].is_boolean());
        assert_eq!(num(p, "runs"), 1.0);
        assert_eq!(
            p["recovered"].as_bool(),
            Some(num(p, "recovered_share") == 1.0)
        );
        assert_eq!(
            p["recover_s"].is_null(),
            !p["recovered"].as_bool().unwrap_or(false)
        );
    }
    let table = ok(&args);
    // Each block: "NAME: of 30 triggers, ...", the rates, then one row per trigger length.
    for name in ["no-retry", "retries"] {
        let block: Vec<&str> = table
            .lines()
            .skip_while(|l| !l.starts_with(&format!("{name}: of 30 triggers, ")))
            .skip(2)
            .take(5)
            .collect();
        assert_eq!(block.len(), 5, "{table}");
        for (row, len) in block.iter().zip([1.0, 2.0, 5.0, 10.0, 20.0]) {
            let cells: Vec<&str> = row.split_whitespace().skip(1).collect();
            assert_eq!(cells.len(), 6, "{row}");
            for (cell, rate) in cells.iter().zip([50.0, 60.0, 70.0, 80.0, 90.0, 100.0]) {
                let p = points
                    .iter()
                    .find(|p| {
                        p["strategy"] == name
                            && num(p, "trigger_for_s") == len
                            && num(p, "spike_rate") == rate
                    })
                    .expect("the point");
                let want = format!("{}/1", u8::from(num(p, "recovered_share") == 1.0));
                assert_eq!(*cell, want, "{name} {len}s {rate}/s");
            }
        }
    }
}

#[test]
fn the_failure_rate_sweep_gives_a_row_per_point() {
    let all = rows(&[
        "--model",
        "failure-rate",
        "--sweep",
        "--strategies",
        "retries,shared-budget",
        "--duration",
        "5s",
    ]);
    assert_eq!(
        all.len(),
        2 * 3 * 11,
        "2 strategies x 3 client counts x 11 p"
    );
    let ps: Vec<f64> = all[..11].iter().map(|r| num(r, "p")).collect();
    for (i, p) in ps.iter().enumerate() {
        assert!((p - 0.05 * i as f64).abs() < 1e-9, "{ps:?}");
    }
    let clients: Vec<f64> = all.iter().step_by(11).map(|r| num(r, "clients")).collect();
    assert_eq!(clients, [10.0, 100.0, 1000.0, 10.0, 100.0, 1000.0]);
    for r in &all {
        assert!(r["success_rate"].is_number() && r["amplification"].is_number());
        assert!(num(r, "amplification") >= 1.0);
    }
    let table = ok(&[
        "--model",
        "failure-rate",
        "--sweep",
        "--strategies",
        "retries",
        "--duration",
        "5s",
    ]);
    for n in ["10 clients", "100 clients", "1000 clients"] {
        assert!(table.lines().any(|l| l == n), "{table}");
    }
    assert_eq!(table.lines().filter(|l| l.starts_with(" 0.50")).count(), 3);
}

/// The SVG file at `path`: it is an SVG document and names what it shows.
fn svg(path: &std::path::Path, needles: &[&str]) {
    let text = std::fs::read_to_string(path).expect("the plot was written");
    let head = text.trim_start();
    assert!(
        head.starts_with("<svg") || head.starts_with("<?xml"),
        "{}",
        &text[..80.min(text.len())]
    );
    assert!(text.trim_end().ends_with("</svg>"));
    for n in needles {
        assert!(text.contains(n), "{n} missing in {}", path.display());
    }
}

#[test]
fn the_plots_are_svg() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let at = |name: &str| dir.path().join(name).to_str().expect("UTF-8").to_string();
    let (timeline, boundary, failures) = (at("t.svg"), at("b.svg"), at("f.svg"));
    ok(&[
        "--model",
        "overload",
        "--duration",
        "40s",
        "--strategies",
        "retries,shared-budget",
        "--plot",
        &timeline,
    ]);
    svg(
        std::path::Path::new(&timeline),
        &[
            "Goodput",
            "Offered load",
            "time (s)",
            "trigger",
            "retries",
            "shared-budget",
        ],
    );
    let mut args = BOUNDARY.to_vec();
    args.extend(["1", "--plot", &boundary]);
    ok(&args);
    svg(
        std::path::Path::new(&boundary),
        &["spike rate", "trigger length", "no-retry", "retries", "1/1"],
    );
    ok(&[
        "--model",
        "failure-rate",
        "--sweep",
        "--strategies",
        "retries,breaker",
        "--duration",
        "3s",
        "--plot",
        &failures,
    ]);
    svg(
        std::path::Path::new(&failures),
        &["amplification", "success rate", "1000 clients", "breaker"],
    );
}

#[test]
fn the_search_prints_json_too() {
    let front = rows(&[
        "--search",
        "--clients",
        "40",
        "--capacity",
        "6",
        "--deadline",
        "20s",
    ]);
    assert!(!front.is_empty());
    assert_eq!(
        front.iter().filter(|p| p["nearest_limit"] == true).count(),
        1,
        "one point is marked"
    );
    for p in &front {
        assert!(
            p["flags"]
                .as_str()
                .is_some_and(|f| f.starts_with("--attempts")),
            "{p}"
        );
        assert_eq!(num(p, "success_rate"), 1.0, "the front serves every client");
    }
}

#[test]
fn usage_errors_name_the_flag_and_what_is_accepted() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["--spike-rate", "90"], &["--spike-rate", "overload"]),
        (&["--sweep"], &["--sweep", "overload or failure-rate"]),
        (
            &["--model", "failure-rate", "--timeout", "1s"],
            &["--timeout", "overload"],
        ),
        (
            &["--model", "failure-rate", "--population", "closed"],
            &["--population"],
        ),
        (
            &["--model", "overload", "--outage", "1s"],
            &["--outage", "outage"],
        ),
        (
            &["--model", "overload", "--failure-rate", "0.2"],
            &["--failure-rate", "failure-rate"],
        ),
        (
            &["--model", "overload", "--search"],
            &["--search", "outage"],
        ),
        (
            &["--model", "overload", "--strategies", "full,slow"],
            &["slow", "shared-budget"],
        ),
        (
            &["--strategies", "bucket"],
            &["bucket", "decorrelated", "shared-breaker"],
        ),
        (
            &["--model", "overload", "--capacity-drop", "1"],
            &["--capacity-drop", "0 to 0.99"],
        ),
        (
            &["--model", "failure-rate", "--failure-rate", "1.5"],
            &["--failure-rate", "0 to 1"],
        ),
        (
            &["--model", "overload", "--base-rate", "0"],
            &["--base-rate", "0.01 to 100000"],
        ),
        (
            &["--model", "overload", "--base-rate", "lots"],
            &["--base-rate"],
        ),
        (
            &["--model", "overload", "--duration", "30s"],
            &["--duration", "35s"],
        ),
        (
            &["--model", "overload", "--trigger-at", "0s"],
            &["--trigger-at", "1s"],
        ),
        (&["--model", "overload", "--timeout", "0"], &["--timeout"]),
        (
            &["--model", "overload", "--base", "3s"],
            &["--base", "--cap"],
        ),
        (
            &["--model", "overload", "--runs", "3"],
            &["--runs", "--sweep"],
        ),
        (
            &["--model", "overload", "--sweep", "--spike-rate", "60"],
            &["--spike-rate", "--sweep"],
        ),
        (
            &["--model", "failure-rate", "--sweep", "--clients", "10"],
            &["--clients", "--sweep"],
        ),
        (
            &["--model", "failure-rate", "--plot", "f.svg"],
            &["--plot", "--sweep"],
        ),
        (
            &["--model", "overload", "--population", "half"],
            &["--population", "open, closed"],
        ),
        (
            &["--model", "fast"],
            &["--model", "outage, overload, failure-rate, cron"],
        ),
        (
            &["--model", "cron", "--splay", "soon"],
            &["--splay", "a number with a unit"],
        ),
        (
            &["--model", "cron", "--splay", "2m"],
            &["--splay 2m", "--period 1m"],
        ),
        (
            &["--model", "cron", "--period", "1500ms"],
            &["--period 1.5s", "whole number of seconds"],
        ),
        (
            &["--model", "cron", "--base", "1s"],
            &["--base", "not --model cron"],
        ),
        (&["--splay", "1m"], &["--splay", "--model cron"]),
        (
            &[
                "--model",
                "failure-rate",
                "--base-rate",
                "100000",
                "--duration",
                "1h",
            ],
            &["the limit is"],
        ),
    ];
    for (args, needles) in cases {
        let mut all = vec!["simulate"];
        all.extend_from_slice(args);
        let (out, _) = run(&all);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        for n in *needles {
            assert!(err.contains(n), "{args:?}: {n:?} not in {err}");
        }
    }
}

#[test]
fn seeds_wrap_past_the_largest() {
    let top = u64::MAX.to_string();
    let table = ok(&[
        "--model",
        "overload",
        "--sweep",
        "--strategies",
        "retries",
        "--runs",
        "2",
        "--duration",
        "40s",
        "--trigger-at",
        "10s",
        "--seed",
        &top,
    ]);
    assert!(table.contains(&format!("seeds {top}..0")), "{table}");
    let pooled = rows(&[
        "--model",
        "failure-rate",
        "--strategies",
        "full",
        "--duration",
        "2s",
        "--runs",
        "2",
        "--seed",
        &top,
    ]);
    assert_eq!(num(&pooled[0], "seeds"), 2.0);
}

/// A negative number is a bad value of its flag (not taken for one of curl's short flags),
/// and a folder given to --plot is refused before anything is simulated.
#[test]
fn negative_values_and_a_folder_for_the_plot_are_usage_errors() {
    for (args, flag) in [
        (&["--clients", "-1"][..], "--clients"),
        (&["--runs", "-1"], "--runs"),
        (&["--seed", "-1"], "--seed"),
        (&["--base", "-1s"], "--base"),
        (&["--attempts", "-3"], "--attempts"),
        (
            &["--model", "overload", "--spike-rate", "-5"],
            "--spike-rate",
        ),
    ] {
        let out = command().arg("simulate").args(args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(flag) && !err.contains("curl"),
            "{args:?}: {err}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = command()
        .args(["simulate", "--model", "overload", "--sweep", "--plot"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("is a folder"), "{}", stderr(&out));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "refused before the sweep"
    );
}

/// A strategy named twice is played once.
#[test]
fn a_strategy_named_twice_is_one_row() {
    let rows = rows(&[
        "--model",
        "overload",
        "--strategies",
        "full,full",
        "--duration",
        "40s",
    ]);
    assert_eq!(names(&rows), ["full"]);
}

/// The cron model at 100,000 hosts on a one-minute cron: without a splay the whole fleet
/// lands in second 0, so the busiest second is 60 times the mean, per request and per store
/// operation (3 a run); with `--splay 60s` it is within 1.1. It is arithmetic, not a run in
/// real time: far under the minute it models, even on a loaded machine.
#[test]
fn a_splay_of_a_minute_spreads_a_cron_fleet_of_100000_hosts() {
    let start = std::time::Instant::now();
    let fleet = ["--model", "cron", "--clients", "100000"];
    for (splay, lo, hi) in [(None, 60.0, 60.0), (Some("60s"), 1.0, 1.1)] {
        let mut args = fleet.to_vec();
        args.extend(splay.iter().flat_map(|s| ["--splay", s]));
        let r = rows(&args);
        let what: Vec<&str> = r.iter().filter_map(|r| r["what"].as_str()).collect();
        assert_eq!(what, ["requests", "store_operations"], "{splay:?}");
        for row in &r {
            let ratio = num(row, "peak_to_mean");
            assert!((lo..=hi).contains(&ratio), "{splay:?}: {row}");
            let seconds = row["per_second"].as_array().expect("per-second counts");
            assert_eq!(seconds.len(), 60);
        }
        let (requests, ops) = (&r[0], &r[1]);
        assert_eq!(num(requests, "mean"), 100_000.0 / 60.0);
        assert_eq!(num(ops, "peak"), 3.0 * num(requests, "peak"));
        let total: f64 = requests["per_second"]
            .as_array()
            .expect("per-second counts")
            .iter()
            .filter_map(Value::as_f64)
            .sum();
        assert_eq!(total, 100_000.0);
        let table = ok(&args);
        let line = table.lines().find(|l| l.starts_with("store operations"));
        let want = if splay.is_none() { "60.00" } else { "1.0" };
        assert!(line.is_some_and(|l| l.contains(want)), "{table}");
    }
    assert_eq!(num(&rows(&fleet)[1], "peak"), 300_000.0);
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}
