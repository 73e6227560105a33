//! `retry-http simulate`: the study's findings, the JSON shape, the plot, a search whose
//! answer pastes into the real client, and bounds (huge durations finish, a fleet too big to
//! simulate is a usage error), and the cron model as docs/simulate.md shows it.

use crate::common::*;
use std::time::Duration;

fn json(args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["simulate", "--format", "json"];
    all.extend_from_slice(args);
    let (out, _) = run(&all);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn row<'a>(rows: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    rows.iter()
        .find(|r| r["strategy"] == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn reproduces_the_study_over_many_seeds() {
    let rows = json(&["--runs", "20"]);
    assert_eq!(rows.len(), 6);
    for r in &rows {
        for key in [
            "strategy",
            "served_pct",
            "calls",
            "calls_per_served",
            "last_success_s",
            "peak_load",
            "gave_up",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    let (fixed, exp, full) = (
        row(&rows, "fixed"),
        row(&rows, "exponential"),
        row(&rows, "full"),
    );
    assert!(
        (20.0..=30.0).contains(&f(fixed, "served_pct")),
        "fixed serves about a quarter: {fixed}"
    );
    assert!(
        f(exp, "last_success_s") >= 8.0 && f(exp, "gave_up") > 0.0,
        "exponential drags on: {exp}"
    );
    assert_eq!(f(full, "served_pct"), 100.0, "{full}");
    assert!(f(full, "last_success_s") < 5.0, "{full}");
    assert!(f(full, "calls") < f(fixed, "calls") && f(full, "calls") < f(exp, "calls"));
    let limit = row(&rows, "physical_limit");
    assert_eq!(f(limit, "calls"), 400.0);
    assert!((f(limit, "last_success_s") - 1.4).abs() < 1e-9);
}

#[test]
fn strategies_subset_table_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("load.svg");
    let (out, _) = run(&[
        "simulate",
        "--strategies",
        "exponential,full",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("exponential") && table.contains("full") && !table.contains("decorrelated"),
        "{table}"
    );
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(
        picture.contains("<svg") && picture.contains("capacity") && picture.contains("exponential")
    );
}

#[test]
fn bad_scenarios_are_usage_errors() {
    for args in [
        &["--strategies", "slow"][..],
        &["--clients", "0"],
        &["--base", "9s", "--cap", "1s"],
        &["--window", "0"],
    ] {
        let mut all = vec!["simulate"];
        all.extend_from_slice(args);
        let (out, _) = run(&all);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
}

#[test]
fn search_answers_with_flags_the_client_accepts() {
    let (out, _) = run(&["simulate", "--search", "--deadline", "20s"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let best = text
        .lines()
        .find(|l| l.contains("<- nearest the physical limit"))
        .expect("a marked point");
    let flags = best
        .split("  ")
        .map(str::trim)
        .find(|p| p.starts_with("--attempts"))
        .unwrap();
    let flags = flags
        .trim_end_matches("<- nearest the physical limit")
        .trim();
    let mut args: Vec<&str> = flags.split_whitespace().collect();
    args.extend(["--explain", "http://127.0.0.1:9/"]);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{flags}: {}", stderr(&out));
    // Every base and cap suggested reads as people type it: milliseconds below a second,
    // seconds above (24s, 2.5s, never 24155ms), two significant digits at most.
    let mut seen = 0;
    for line in text.lines().filter(|l| l.contains("--attempts")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words
            .windows(2)
            .filter(|p| p[0] == "--base" || p[0] == "--cap")
        {
            seen += 1;
            let v = pair[1];
            let (number, ms) = match v.strip_suffix("ms") {
                Some(n) => (n, true),
                None => (v.strip_suffix('s').expect(v), false),
            };
            let x: f64 = number.parse().expect(v);
            assert!(!ms || x < 1000.0, "{v} in {line}");
            let digits = number.trim_start_matches(['0', '.']).replace('.', "");
            assert!(digits.trim_end_matches('0').len() <= 2, "{v} in {line}");
        }
    }
    assert!(seen >= 2, "{text}");
}

#[test]
fn simulate_stays_bounded() {
    let (out, took) = run(&["simulate", "--base", "3650d", "--cap", "3650d"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < Duration::from_secs(20), "{took:?}");
    let (out, _) = run(&["simulate", "--clients", "1000000", "--attempts", "1000"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("the limit is"), "{}", stderr(&out));
}

/// The numbers of an SVG element's attribute (`points="x,y x,y"` gives every coordinate).
fn numbers(element: &str, attr: &str) -> Vec<f64> {
    let start = element
        .find(&format!(" {attr}=\""))
        .unwrap_or_else(|| panic!("no {attr} in {element}"))
        + attr.len()
        + 3;
    let value = &element[start..start + element[start..].find('"').unwrap()];
    value
        .split([',', ' '])
        .filter(|v| !v.is_empty())
        .map(|v| v.parse().unwrap())
        .collect()
}

/// The outage chart, looked at as a user would through its SVG: the outage is shaded over
/// its interval (a rect from the plot's left edge to where the capacity line starts, the end
/// of the outage) and the burst at t = 0 does not squash the rest: the capacity line stands
/// above the bottom quarter of the plot, for every strategy set and scenario below.
#[test]
fn the_outage_chart_shades_the_outage_and_keeps_the_capacity_line_visible() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios: [&[&str]; 4] = [
        &[],
        &["--clients", "1000", "--capacity", "10"],
        &["--outage", "3s", "--strategies", "full,decorrelated"],
        &["--deadline", "5s", "--strategies", "fixed,exponential"],
    ];
    for (i, extra) in scenarios.iter().enumerate() {
        let svg = dir.path().join(format!("load{i}.svg"));
        let mut args = vec!["simulate", "--plot", svg.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{extra:?}: {}", stderr(&out));
        let picture = std::fs::read_to_string(&svg).unwrap();
        let shade = picture
            .split('<')
            .find(|e| e.starts_with("rect") && e.contains("fill=\"#FFC878\"") && e.contains("0.45"))
            .unwrap_or_else(|| panic!("{extra:?}: no shaded outage"));
        let (x, y, w, h) = (
            numbers(shade, "x")[0],
            numbers(shade, "y")[0],
            numbers(shade, "width")[0],
            numbers(shade, "height")[0],
        );
        let (top, bottom) = (y, y + h);
        // The capacity line: thin, black, horizontal, starting where the outage ends.
        let capacity = picture
            .split('<')
            .filter(|e| e.starts_with("polyline") && e.contains("stroke=\"#000000\""))
            .map(|e| numbers(e, "points"))
            .find(|p| p.len() == 4 && p[1] == p[3] && (p[0] - (x + w)).abs() <= 1.5)
            .unwrap_or_else(|| panic!("{extra:?}: no capacity line starting at {}", x + w));
        let height = (bottom - capacity[1]) / (bottom - top);
        assert!(
            height > 0.25,
            "{extra:?}: the capacity line is at {:.0}% of the plot's height",
            height * 100.0
        );
        assert!(w > 5.0 && h > 100.0, "{extra:?}: {shade}");
        // The shade starts at t = 0, the left edge of the plot (its x axis).
        let axis = picture
            .split('<')
            .filter(|e| e.starts_with("polyline"))
            .map(|e| numbers(e, "points"))
            .find(|p| p.len() == 4 && p[1] == p[3] && p[2] - p[0] > 500.0)
            .expect("x axis");
        assert!((axis[0] - x).abs() <= 1.5, "{extra:?}: {shade} {axis:?}");
    }
}

/// docs/simulate.md's simulation of the fleet recipe runs as written and prints what it shows:
/// the shared strategies are the outage model's, with `--state`'s flags.
#[test]
fn the_fleet_recipe_simulates_as_the_manual_shows() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/simulate.md")).unwrap();
    let start = page
        .find("$ retry-http simulate --clients 300")
        .expect("docs/simulate.md simulates the fleet recipe");
    let block = &page[start..start + page[start..].find("```").unwrap()];
    let mut lines = block.lines();
    let mut command = String::new();
    for line in lines.by_ref() {
        command.push_str(line.trim().trim_end_matches('\\'));
        command.push(' ');
        if !line.ends_with('\\') {
            break;
        }
    }
    let args: Vec<&str> = command.split_whitespace().skip(2).collect();
    let expected: Vec<&str> = lines.collect();
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(printed.lines().collect::<Vec<_>>(), expected, "{command}");
    assert!(printed.contains("shared-budget") && printed.contains("shared-breaker"));
    // The flags belong to the outage model.
    let (out, _) = run(&["simulate", "--model", "overload", "--budget-floor", "300"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--budget-floor belongs to --model outage"),
        "{}",
        stderr(&out)
    );
}

/// docs/simulate.md's two runs of the cron model print what it shows, each block a command
/// followed by its output up to a blank line.
#[test]
fn the_cron_model_prints_what_the_manual_shows() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/simulate.md")).unwrap();
    let mut shown = 0;
    for (at, _) in page.match_indices("$ retry-http simulate --model cron") {
        let block = &page[at..at + page[at..].find("\n\n").unwrap()];
        let block = block.split("\n```").next().unwrap();
        let mut lines = block.lines();
        let command = lines.next().unwrap();
        let args: Vec<&str> = command.split_whitespace().skip(2).collect();
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let printed = String::from_utf8_lossy(&out.stdout);
        let expected: Vec<&str> = lines.collect();
        assert_eq!(printed.lines().collect::<Vec<_>>(), expected, "{command}");
        shown += 1;
    }
    assert_eq!(
        shown, 2,
        "docs/simulate.md shows the cron model without and with a splay"
    );
}

/// Every table `simulate` prints explains itself: a legend line that names its columns and
/// their units, then a sentence that says what the table shows; and no figure reads `0.0x`.
/// Checked for each model and table: the outage model with and without shared strategies
/// (one with no request after its outage), the search, the overload, failure-rate, limiter
/// and cron models.
#[test]
fn every_table_explains_itself() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "peak load:"),
        (
            &[
                "--clients",
                "300",
                "--outage",
                "20s",
                "--deadline",
                "50s",
                "--attempts",
                "1000",
                "--budget-floor",
                "300",
                "--breaker-threshold",
                "20",
                "--strategies",
                "full,shared-budget,shared-breaker",
            ],
            "peak load:",
        ),
        (
            &[
                "--clients",
                "50",
                "--outage",
                "5s",
                "--attempts",
                "2",
                "--base",
                "10ms",
                "--cap",
                "20ms",
            ],
            "peak load:",
        ),
        (
            &["--search", "--clients", "60", "--deadline", "20s"],
            "flags:",
        ),
        (
            &[
                "--model",
                "overload",
                "--duration",
                "30s",
                "--trigger-at",
                "10s",
                "--strategies",
                "full,shared-budget",
            ],
            "amplification:",
        ),
        (
            &["--model", "failure-rate", "--duration", "10s"],
            "amplification:",
        ),
        (&["--model", "limiter"], "throttled:"),
        (
            &["--model", "cron", "--clients", "1000", "--splay", "30s"],
            "peak/mean:",
        ),
    ];
    for (extra, legend) in cases {
        let mut args = vec!["simulate"];
        args.extend_from_slice(extra);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.iter().any(|l| l.contains(legend) && l.contains(": ")),
            "{args:?}: no legend naming {legend:?}:\n{text}"
        );
        let last = lines.last().copied().unwrap_or_default();
        let says =
            last.starts_with("what it shows: ") || last.starts_with("one Redis primary takes ");
        assert!(
            says,
            "{args:?}: the table ends without saying what it shows:\n{text}"
        );
        assert!(
            !text.split_whitespace().any(|w| w == "0.0x"),
            "{args:?}: a figure reads 0.0x:\n{text}"
        );
    }
}
