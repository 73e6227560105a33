//! `simulate` on the command line: checks the scenario, runs the strategies (or the policy
//! search) through `simulate`, and prints a table, JSON, or an SVG plot.

use crate::cli::{ColorChoice, LogFormat};
use crate::cli::{SimFormat, SimulateArgs};
use crate::exit::Outcome;
use crate::fleet::simulate::{self, Figures, Scenario, Strategy};
use crate::policy::{Backoff, Jitter};
use crate::report::Reporter;
use crate::units::fmt_duration;
use serde_json::json;
use std::fmt::Write;

/// The most simulated requests one command may process (clients x attempts x runs x
/// policies): a few seconds of work, not an accidental hour.
const MAX_WORK: u64 = 200_000_000;

fn scenario(a: &SimulateArgs) -> Result<Scenario, String> {
    if a.base < std::time::Duration::from_millis(1) {
        return Err("--base must be at least 1ms".into());
    }
    if a.base > a.cap {
        return Err("--base is above --cap: the base must not exceed the cap".into());
    }
    if a.window.is_zero() {
        return Err("--window must be longer than 0".into());
    }
    Ok(Scenario {
        clients: a.clients,
        outage: a.outage,
        capacity: a.capacity,
        window: a.window,
        attempts: a.attempts,
        base: a.base,
        cap: a.cap,
        deadline: a.deadline.filter(|d| !d.is_zero()),
    })
}

/// Runs `retry-http simulate`.
pub fn simulate(a: &SimulateArgs) -> Outcome {
    let say = Reporter::new(LogFormat::Text, false, false, ColorChoice::Never);
    let (sc, strategies) = match plan(a) {
        Ok(p) => p,
        Err(e) => {
            say.error(&e.to_string());
            return Outcome::Usage;
        }
    };
    let limit = simulate::physical_limit(&sc);
    let print = |text: &str| match crate::output::print_stdout(text) {
        Ok(()) => Outcome::Success,
        Err(e) => {
            say.error(&e);
            Outcome::Local
        }
    };
    if a.search {
        return print(&search_report(&sc, a, &limit));
    }
    let results: Vec<Figures> = strategies
        .iter()
        .map(|k| simulate::average(&sc, &k.backoff(&sc), k.name(), a.seed, a.runs))
        .collect();
    if let Some(path) = &a.plot
        && let Err(e) = plot(path, &sc, &results)
    {
        say.error(&format!("cannot write the plot {}: {e}", path.display()));
        return Outcome::Local;
    }
    match a.format {
        SimFormat::Table => print(&table(&sc, a, &results, &limit)),
        SimFormat::Json => print(&format!("{}\n", to_json(&results, &limit))),
    }
}

/// Checks the command before any work is done, in this order: the scenario, the
/// strategies, the amount of work (at most `MAX_WORK` requests), the plot's folder. The
/// error is the message of a usage error.
fn plan(a: &SimulateArgs) -> Result<(Scenario, Vec<Strategy>), String> {
    let sc = scenario(a)?;
    let strategies = a
        .strategies
        .split(',')
        .map(Strategy::parse)
        .collect::<Result<Vec<Strategy>, String>>()?;
    let policies = if a.search {
        400
    } else {
        strategies.len() as u64
    };
    let work = u64::from(sc.clients) * u64::from(sc.attempts) * u64::from(a.runs) * policies;
    if work > MAX_WORK {
        return Err(format!(
            "this simulation would process up to {work} requests; the limit is {MAX_WORK}: lower --clients, --attempts or --runs"
        ));
    }
    if let Some(path) = &a.plot {
        let dir = crate::files::folder(path);
        if !dir.is_dir() {
            return Err(format!(
                "--plot {}: the folder {} does not exist",
                path.display(),
                dir.display()
            ));
        }
    }
    Ok((sc, strategies))
}

fn last(o: &Figures) -> String {
    o.last_success_s
        .map_or_else(|| "-".into(), |s| format!("{s:.2}"))
}

/// The comparison table.
pub fn table(sc: &Scenario, a: &SimulateArgs, results: &[Figures], limit: &Figures) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} clients; down {}, then {} per {}; {} attempts, base {}, cap {}{}; seed {}{}",
        sc.clients,
        fmt_duration(sc.outage),
        sc.capacity,
        fmt_duration(sc.window),
        sc.attempts,
        fmt_duration(sc.base),
        fmt_duration(sc.cap),
        sc.deadline
            .map(|d| format!(", deadline {}", fmt_duration(d)))
            .unwrap_or_default(),
        a.seed,
        if a.runs > 1 {
            format!(", mean of {} runs", a.runs)
        } else {
            String::new()
        },
    );
    let _ = writeln!(
        s,
        "{:<15} {:>8} {:>8} {:>12} {:>14} {:>10} {:>8}",
        "strategy", "served%", "calls", "calls/served", "last success s", "peak load", "gave up"
    );
    for o in results.iter().chain(std::iter::once(limit)) {
        let _ = writeln!(
            s,
            "{:<15} {:>8.1} {:>8.0} {:>12.2} {:>14} {:>9.1}x {:>8.1}",
            o.strategy,
            o.served_pct,
            o.calls,
            o.calls_per_served,
            last(o),
            o.peak_load,
            o.gave_up
        );
    }
    s
}

/// The same figures as a JSON array; the physical limit is the last object.
pub fn to_json(results: &[Figures], limit: &Figures) -> serde_json::Value {
    let row = |o: &Figures| {
        json!({
            "strategy": o.strategy,
            "served_pct": o.served_pct,
            "calls": o.calls,
            "calls_per_served": o.calls_per_served,
            "last_success_s": o.last_success_s,
            "peak_load": o.peak_load,
            "gave_up": o.gave_up,
        })
    };
    serde_json::Value::Array(
        results
            .iter()
            .chain(std::iter::once(limit))
            .map(row)
            .collect(),
    )
}

/// A duration as `--base` accepts it: whole seconds, or milliseconds.
fn flag_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// The flags that give this backoff in a scenario like `sc`.
fn flags(sc: &Scenario, b: &Backoff) -> String {
    let jitter = match b.jitter {
        Jitter::None => "none".to_string(),
        other => other.label(),
    };
    let deadline = sc
        .deadline
        .map(|d| format!(" --deadline {}", flag_duration(d)))
        .unwrap_or_default();
    format!(
        "--attempts {} --base {} --cap {} --jitter {jitter}{deadline}",
        sc.attempts,
        flag_duration(b.base),
        flag_duration(b.cap)
    )
}

fn search_report(sc: &Scenario, a: &SimulateArgs, limit: &Figures) -> String {
    let front = simulate::search(sc, a.seed, a.runs);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Pareto front over jitter x base (10ms..2s) x cap (1s..60s), policies that serve every client; physical limit: {} calls, last success {}s",
        limit.calls,
        last(limit)
    );
    if front.is_empty() {
        let _ = writeln!(
            s,
            "no policy in the search space serves every client within the attempts and deadline given"
        );
        return s;
    }
    let best = simulate::nearest_to_limit(&front, limit);
    let _ = writeln!(s, "{:>8} {:>14}  flags", "calls", "last success s");
    for (i, c) in front.iter().enumerate() {
        let mark = if Some(i) == best {
            "  <- nearest the physical limit"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "{:>8.0} {:>14}  {}{mark}",
            c.outcome.calls,
            last(&c.outcome),
            flags(sc, &c.backoff)
        );
    }
    s
}

/// A sparse load curve as points, with a zero on each side of every gap (a gap of any
/// length costs two points, not one per empty window).
fn curve(load: &std::collections::BTreeMap<u64, u32>) -> impl Iterator<Item = (u64, u32)> + '_ {
    let mut points = Vec::new();
    let mut previous: Option<u64> = None;
    for (&w, &n) in load {
        match previous {
            Some(p) if w > p + 1 => {
                points.push((p + 1, 0));
                if w > p + 2 {
                    points.push((w - 1, 0));
                }
            }
            None if w > 0 => points.push((0, 0)),
            _ => {}
        }
        points.push((w, n));
        previous = Some(w);
    }
    points.into_iter()
}

/// The chart `plot` draws on: seconds across, requests per window up.
type Chart<'a, 'b> = plotters::chart::ChartContext<
    'a,
    plotters::prelude::SVGBackend<'b>,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::types::RangedCoordf64,
    >,
>;

/// How far the plot reaches: the windows until the last request of any strategy, and the
/// most requests in one window (at least the capacity).
fn extent(sc: &Scenario, results: &[Figures]) -> (u64, f64) {
    let longest = results
        .iter()
        .filter_map(|o| o.load.keys().next_back())
        .max()
        .map_or(1, |last| last + 1);
    let top = results
        .iter()
        .flat_map(|o| o.load.values())
        .copied()
        .max()
        .unwrap_or(1)
        .max(sc.capacity) as f64;
    (longest, top)
}

/// Load over time per strategy, with the capacity line, as an SVG file at `path`.
fn plot(path: &std::path::Path, sc: &Scenario, results: &[Figures]) -> Result<(), String> {
    use plotters::prelude::*;
    let window_s = sc.window.as_secs_f64();
    let (longest, top) = extent(sc, results);
    let end_s = longest as f64 * window_s;
    let root = SVGBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} clients: requests per {} window",
                sc.clients,
                fmt_duration(sc.window)
            ),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..end_s, 0f64..top * 1.05)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("requests per window")
        .draw()
        .map_err(|e| e.to_string())?;
    draw_loads(&mut chart, results, window_s)?;
    draw_capacity(&mut chart, sc, end_s)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// One line per strategy: requests per window (`window_s` seconds long), labelled.
fn draw_loads(chart: &mut Chart, results: &[Figures], window_s: f64) -> Result<(), String> {
    use plotters::prelude::*;
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    for (i, o) in results.iter().enumerate() {
        let color = colors[i % colors.len()];
        // Empty windows are points at zero, so the line drops between waves.
        let points = curve(&o.load).map(|(w, n)| (w as f64 * window_s, f64::from(n)));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(o.strategy.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    Ok(())
}

/// The capacity line, from the end of the outage to `end_s` seconds, labelled.
fn draw_capacity(chart: &mut Chart, sc: &Scenario, end_s: f64) -> Result<(), String> {
    use plotters::prelude::*;
    let cap = f64::from(sc.capacity);
    let start = sc.outage.as_secs_f64();
    chart
        .draw_series(LineSeries::new(
            vec![(start, cap), (end_s, cap)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| e.to_string())?
        .label("capacity")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    Ok(())
}
