//! The SVG plots of the three models: the outage model's requests per window over time per
//! strategy against the capacity line, the outage shaded; the overload model's goodput and
//! offered load over time per strategy with the trigger shaded, and its vulnerability
//! boundary as one map per strategy; the failure-rate model's amplification and success
//! rate against p, one panel per client count. Each has a title that says the scenario,
//! labelled axes and a legend.

use super::outage::{Figures, Scenario};
use super::report::{distinct, fmt_rate};
use super::sweep::{FailureRun, OverloadRun, Point};
use super::{failures, overload};
use plotters::coord::Shift;
use plotters::prelude::*;
use retry_http_policy::units::fmt_duration;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

/// A drawing area of the SVG file.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Text of `size` pixels.
fn text(size: u32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font())
}

/// Bold text of `size` pixels.
fn bold(size: u32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font().style(FontStyle::Bold))
}

/// Any error of plotters, as text.
fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Each strategy's colour and line width: the shared strategies stand out (thicker), the
/// ones without state in warm colours, the per-client ones in between.
fn style(name: &str) -> (RGBColor, u32) {
    match name {
        "no-retry" => (RGBColor(0, 0, 0), 2),
        "retries" => (RGBColor(214, 39, 40), 2),
        "fixed" => (RGBColor(255, 127, 14), 2),
        "exponential" => (RGBColor(140, 86, 75), 2),
        "full" => (RGBColor(31, 119, 180), 2),
        "equal" => (RGBColor(23, 190, 207), 2),
        "decorrelated" => (RGBColor(148, 103, 189), 2),
        "bucket" => (RGBColor(188, 189, 34), 2),
        "breaker" => (RGBColor(227, 119, 194), 2),
        "shared-budget" => (RGBColor(44, 160, 44), 4),
        "shared-breaker" => (RGBColor(0, 90, 50), 4),
        _ => (RGBColor(127, 127, 127), 2),
    }
}

/// The legend, drawn by hand in its own area: a line of each strategy's colour and its name,
/// with a note after it (how it ended), from the top; then `lines`, what the lines mean.
fn legend(area: &Area, rows: &[(String, String)], lines: &[&str]) -> Result<(), String> {
    let font = text(16);
    let small = text(13).color(&RGBColor(80, 80, 80));
    area.draw_text("strategy", &bold(17), (8, 40))
        .map_err(err)?;
    for (i, (name, note)) in rows.iter().enumerate() {
        let y = 72 + 38 * i as i32;
        let (color, width) = style(name);
        area.draw(&PathElement::new(
            vec![(8, y), (40, y)],
            color.stroke_width(width + 1),
        ))
        .map_err(err)?;
        area.draw_text(name, &font, (48, y - 9)).map_err(err)?;
        if !note.is_empty() {
            area.draw_text(note, &small, (48, y + 8)).map_err(err)?;
        }
    }
    let style = text(13).color(&RGBColor(60, 60, 60));
    let y = 72 + 38 * rows.len() as i32;
    for (i, line) in lines.iter().enumerate() {
        area.draw_text(line, &style, (8, y + 18 * i as i32))
            .map_err(err)?;
    }
    Ok(())
}

/// `series` as a centred 5 s moving mean (the recovery judge's window), per second.
fn smooth(series: &[u32]) -> Vec<(f64, f64)> {
    (0..series.len())
        .map(|i| {
            let (lo, hi) = (i.saturating_sub(2), (i + 3).min(series.len()));
            let w = &series[lo..hi];
            let mean = w.iter().map(|v| f64::from(*v)).sum::<f64>() / w.len() as f64;
            (i as f64 + 0.5, mean)
        })
        .collect()
}

/// A chart of numbers against numbers on `area`: its caption in text of `size` pixels, its
/// margin, its label areas (across, up) in pixels, and `x` across, `y` up (no axes yet).
fn chart<'a, 'b>(
    area: &'a Area<'b>,
    (caption, size): (&str, u32),
    (margin, across, up): (u32, u32, u32),
    (x, y): (Range<f64>, Range<f64>),
) -> Result<Chart<'a, 'b>, String> {
    ChartBuilder::on(area)
        .caption(caption, ("sans-serif", size))
        .margin(margin)
        .x_label_area_size(across)
        .y_label_area_size(up)
        .build_cartesian_2d(x, y)
        .map_err(err)
}

/// The chart of a panel with `caption`: seconds across (to `end`), `y_desc` up to `top`,
/// light grid lines.
fn panel_chart<'a, 'b>(
    area: &'a Area<'b>,
    (caption, y_desc): (&str, &str),
    end: f64,
    top: f64,
) -> Result<Chart<'a, 'b>, String> {
    let mut chart = chart(area, (caption, 19), (10, 44, 64), (0.0..end, 0.0..top))?;
    mesh(&mut chart, ("time (s)", y_desc), (0, 0), (14, 15))?;
    Ok(chart)
}

/// Each of `lines` (a strategy's name and its points), in the strategy's colour, the thick
/// ones first so that the thin ones stay visible on top of them.
fn draw_lines(chart: &mut Chart, mut lines: Vec<(&str, Vec<(f64, f64)>)>) -> Result<(), String> {
    lines.sort_by_key(|(name, _)| std::cmp::Reverse(style(name).1));
    for (name, points) in lines {
        let (color, width) = style(name);
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(width)))
            .map_err(err)?;
    }
    Ok(())
}

/// The axes of a panel and its light grid lines: `desc` across and up, labels with
/// `decimals` (across, up), text of `sizes` pixels (labels, descriptions).
fn mesh(
    chart: &mut Chart,
    desc: (&str, &str),
    decimals: (usize, usize),
    sizes: (u32, u32),
) -> Result<(), String> {
    chart
        .configure_mesh()
        .x_desc(desc.0)
        .y_desc(desc.1)
        .x_label_formatter(&|v| format!("{v:.*}", decimals.0))
        .y_label_formatter(&|v| format!("{v:.*}", decimals.1))
        .label_style(("sans-serif", sizes.0))
        .axis_desc_style(("sans-serif", sizes.1))
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)
}

/// The trigger of `sc` shaded over the whole height `top` and labelled, and a dashed line
/// at the height `reference` across the run (`end` seconds).
fn draw_trigger(
    chart: &mut Chart,
    sc: &overload::Scenario,
    top: f64,
    (reference, end): (f64, f64),
) -> Result<(), String> {
    let (t0, t1) = (
        sc.trigger_at.as_secs_f64(),
        (sc.trigger_at + sc.trigger_for).as_secs_f64(),
    );
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(t0, 0.0), (t1.max(t0 + 0.2), top)],
            RGBColor(255, 200, 120).mix(0.45).filled(),
        )))
        .map_err(err)?;
    chart
        .draw_series(std::iter::once(Text::new(
            "trigger",
            (t0 + 0.3, top * 0.97),
            ("sans-serif", 14).into_font(),
        )))
        .map_err(err)?;
    chart
        .draw_series(DashedLineSeries::new(
            vec![(0.0, reference), (end, reference)],
            8,
            5,
            RGBColor(90, 90, 90).stroke_width(1),
        ))
        .map_err(err)?;
    Ok(())
}

/// One panel of the timeline: a series of every strategy over time, the trigger shaded, and
/// a dashed reference line at the height `reference` (the legend says what it is).
fn timeline_panel(
    area: &Area,
    run: &OverloadRun,
    figures: &[overload::Figures],
    texts: (&str, &str),
    series: &dyn Fn(&overload::Figures) -> &[u32],
    reference: f64,
) -> Result<(), String> {
    let sc = &run.scenario;
    let end = sc.duration.as_secs_f64();
    let lines: Vec<Vec<(f64, f64)>> = figures.iter().map(|f| smooth(series(f))).collect();
    let top = lines
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(reference, f64::max)
        .max(1.0)
        * 1.1;
    let mut chart = panel_chart(area, texts, end, top)?;
    draw_trigger(&mut chart, sc, top, (reference, end))?;
    let names = figures.iter().map(|f| f.strategy.as_str());
    draw_lines(&mut chart, names.zip(lines).collect())
}

/// Goodput (top) and offered load (bottom) over time per strategy, the trigger shaded, as
/// an SVG file at `path`.
pub fn timeline(
    path: &Path,
    run: &OverloadRun,
    figures: &[overload::Figures],
) -> Result<(), String> {
    let sc = &run.scenario;
    let root = SVGBackend::new(path, (1200, 860)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "Overload: {}/s first tries, trigger {} at {} for {}; timeout {}, {} attempts",
        fmt_rate(sc.base_rate),
        trigger_name(sc),
        fmt_duration(sc.trigger_at),
        fmt_duration(sc.trigger_for),
        fmt_duration(sc.timeout),
        run.settings.attempts
    );
    let body = root.titled(&title, ("sans-serif", 22)).map_err(err)?;
    let (panels, side) = body.split_horizontally(920);
    let (top, bottom) = panels.split_vertically(405);
    let level = figures.first().map_or(0.0, |f| f.level);
    timeline_panel(
        &top,
        run,
        figures,
        (
            "Goodput: answers that reach their client before its timeout",
            "answers/s (5 s mean)",
        ),
        &|f| &f.goodput,
        0.9 * level,
    )?;
    timeline_panel(
        &bottom,
        run,
        figures,
        (
            "Offered load: tries sent, first tries and retries",
            "tries/s (5 s mean)",
        ),
        &|f| &f.offered,
        sc.base_rate,
    )?;
    timeline_legend(&side, figures)?;
    root.present().map_err(err)
}

/// The timeline's legend: each strategy and how it ended, then what the lines mean.
fn timeline_legend(side: &Area, figures: &[overload::Figures]) -> Result<(), String> {
    let rows: Vec<(String, String)> = figures
        .iter()
        .map(|f| {
            let note = match f.recover_s {
                Some(s) if f.recovered => {
                    format!(
                        "recovered {s:.0}s after it, x{:.2}",
                        f.counts.amplification()
                    )
                }
                _ => format!("stuck, x{:.2} load", f.counts.amplification()),
            };
            (f.strategy.clone(), note)
        })
        .collect();
    legend(
        side,
        &rows,
        &[
            "dashed, top: 90% of the goodput",
            "before the trigger; recovered: the",
            "last 10 s answer 90% of first tries",
            "as before the trigger",
            "dashed, bottom: first tries/s",
            "outside the trigger",
            "shaded: the trigger",
        ],
    )
}

/// The trigger in a word or two: a spike to N/s, a capacity drop, or both.
fn trigger_name(sc: &overload::Scenario) -> String {
    let spike = (sc.spike_rate != sc.base_rate).then(|| format!("{}/s", fmt_rate(sc.spike_rate)));
    let drop =
        (sc.capacity_drop > 0.0).then(|| format!("-{:.0}% capacity", sc.capacity_drop * 100.0));
    match (spike, drop) {
        (Some(s), Some(d)) => format!("{s} and {d}"),
        (Some(s), None) => s,
        (None, Some(d)) => d,
        (None, None) => "none".into(),
    }
}

/// A cell's colour by the share of seeds that recovered: green (all), amber (some), red
/// (none).
fn share_color(share: f64) -> RGBColor {
    if share >= 1.0 {
        RGBColor(76, 175, 80)
    } else if share > 0.0 {
        RGBColor(255, 193, 7)
    } else {
        RGBColor(229, 57, 53)
    }
}

/// A boundary map's chart: spike rates across, trigger lengths up, a cell each.
type MapChart<'a, 'b> = plotters::chart::ChartContext<
    'a,
    SVGBackend<'b>,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordu32>,
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordu32>,
    >,
>;

/// The boundary map: per strategy, a grid of trigger length (up) x spike rate (across), each
/// cell coloured by the share of seeds that recovered and labelled k/n.
pub fn boundary(path: &Path, run: &OverloadRun, points: &[Point]) -> Result<(), String> {
    let (sc, runs) = (&run.scenario, run.runs);
    let names = distinct(points.iter().map(|p| p.strategy));
    let rates = distinct(points.iter().map(|p| p.spike_rate));
    let lengths = distinct(points.iter().map(|p| p.trigger_for));
    let cols = 4usize;
    let rows = (names.len() + 1).div_ceil(cols).max(1);
    let root = SVGBackend::new(path, (1300, 40 + 300 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "Which triggers each strategy recovers from: {}/s first tries, a spike at {} (cells: seeds recovered of {runs})",
        fmt_rate(sc.base_rate),
        fmt_duration(sc.trigger_at),
    );
    let body = root.titled(&title, ("sans-serif", 22)).map_err(err)?;
    let cells = body.split_evenly((rows, cols));
    for (name, area) in names.iter().zip(&cells) {
        let mine: Vec<&Point> = points.iter().filter(|p| p.strategy == *name).collect();
        boundary_map(area, name, &mine, (&rates, &lengths))?;
    }
    if let Some(key) = cells.get(names.len()) {
        boundary_key(key, run)?;
    }
    root.present().map_err(err)
}

/// One strategy's map (`mine`: its points) over the grid of `rates` x `lengths`, with a
/// caption that counts the triggers recovered from on every seed and stuck on every seed.
fn boundary_map(
    area: &Area,
    name: &str,
    mine: &[&Point],
    (rates, lengths): (&[f64], &[Duration]),
) -> Result<(), String> {
    let (nr, nl) = (rates.len() as u32, lengths.len() as u32);
    let all = mine.iter().filter(|p| p.recovered_runs == p.runs).count();
    let none = mine.iter().filter(|p| p.recovered_runs == 0).count();
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{name}: {all} recovered, {none} stuck, of {}", nr * nl),
            ("sans-serif", 17),
        )
        .margin(8)
        .x_label_area_size(40)
        .y_label_area_size(50)
        // A segmented range of 0..=n-1 has n cells (and a dummy `Last` bound).
        .build_cartesian_2d(
            (0..nr.saturating_sub(1)).into_segmented(),
            (0..nl.saturating_sub(1)).into_segmented(),
        )
        .map_err(err)?;
    let label = |names: Vec<String>| {
        move |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        }
    };
    let rate_label = label(rates.iter().map(|r| fmt_rate(*r)).collect());
    let length_label = label(lengths.iter().map(|l| fmt_duration(*l)).collect());
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(nr as usize)
        .y_labels(nl as usize)
        .x_label_formatter(&rate_label)
        .y_label_formatter(&length_label)
        .x_desc("spike rate (first tries/s)")
        .y_desc("trigger length")
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for p in mine {
        let (Some(i), Some(j)) = (
            rates.iter().position(|r| *r == p.spike_rate),
            lengths.iter().position(|l| *l == p.trigger_for),
        ) else {
            continue;
        };
        boundary_cell(&mut chart, p, (i as u32, j as u32), (nr, nl))?;
    }
    Ok(())
}

/// The cell of point `p` at column `i` and row `j` of an `nr` x `nl` map: its colour, a
/// white border, and the seeds recovered of those played.
fn boundary_cell(
    chart: &mut MapChart,
    p: &Point,
    (i, j): (u32, u32),
    (nr, nl): (u32, u32),
) -> Result<(), String> {
    let next = |k: u32, n: u32| {
        if k + 1 < n {
            SegmentValue::Exact(k + 1)
        } else {
            SegmentValue::Last
        }
    };
    let corners = [
        (SegmentValue::Exact(i), SegmentValue::Exact(j)),
        (next(i, nr), next(j, nl)),
    ];
    chart
        .draw_series(std::iter::once(Rectangle::new(
            corners.clone(),
            share_color(p.recovered_share()).filled(),
        )))
        .map_err(err)?;
    chart
        .draw_series(std::iter::once(Rectangle::new(
            corners,
            WHITE.stroke_width(2),
        )))
        .map_err(err)?;
    chart
        .draw_series(std::iter::once(Text::new(
            format!("{}/{}", p.recovered_runs, p.runs),
            (SegmentValue::CenterOf(i), SegmentValue::CenterOf(j)),
            text(13).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Center,
            )),
        )))
        .map_err(err)?;
    Ok(())
}

/// The boundary map's key: what the colours mean, and the scenario held fixed.
fn boundary_key(area: &Area, run: &OverloadRun) -> Result<(), String> {
    let sc = &run.scenario;
    let font = text(15);
    area.draw_text("key", &bold(17), (20, 30)).map_err(err)?;
    for (i, (share, text)) in [
        (1.0, "recovered on every seed"),
        (0.5, "recovered on some seeds"),
        (0.0, "stuck on every seed"),
    ]
    .into_iter()
    .enumerate()
    {
        let y = 60 + 30 * i as i32;
        area.draw(&Rectangle::new(
            [(20, y), (42, y + 20)],
            share_color(share).filled(),
        ))
        .map_err(err)?;
        area.draw_text(text, &font, (52, y + 3)).map_err(err)?;
    }
    let notes = [
        "the counts over each map: triggers recovered".to_string(),
        "from on every seed, and stuck on every seed".to_string(),
        "recovered: the last 10 s answer 90% or".to_string(),
        "more of first tries, as before the trigger".to_string(),
        format!(
            "timeout {}, {} attempts; server {} + {}",
            fmt_duration(sc.timeout),
            run.settings.attempts,
            fmt_duration(sc.latency),
            fmt_duration(sc.per_request)
        ),
        "per request in flight".to_string(),
    ];
    for (i, n) in notes.iter().enumerate() {
        area.draw_text(n, &text(13), (20, 160 + 20 * i as i32))
            .map_err(err)?;
    }
    Ok(())
}

/// One value the failure-rate plot draws against p: a row of panels.
struct Measure {
    /// What it is, as the y axis says (its first word captions the panel).
    what: &'static str,
    /// The y axis's range.
    range: (f64, f64),
    /// The value of a row of the sweep.
    value: fn(&failures::Figures) -> f64,
    /// Its labels' decimals.
    decimals: usize,
}

/// The failure-rate sweep: amplification (top row) and success rate (bottom row) against p,
/// one column per client count, one line per strategy.
pub fn failure_sweep(
    path: &Path,
    run: &FailureRun,
    rows: &[failures::Figures],
) -> Result<(), String> {
    let names = distinct(rows.iter().map(|r| r.strategy.as_str()));
    let counts = distinct(rows.iter().map(|r| r.clients));
    let p_max = rows.iter().map(|r| r.p).fold(0.0, f64::max).max(0.05);
    let amp_max = rows
        .iter()
        .map(|r| r.counts.amplification())
        .fold(1.0, f64::max);
    let root = SVGBackend::new(path, (1350, 820)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "Independent failures: {}/s first tries in all, split over {} clients; {} attempts",
        fmt_rate(run.scenario.rate),
        counts
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        run.settings.attempts
    );
    let body = root.titled(&title, ("sans-serif", 22)).map_err(err)?;
    let (panels, side) = body.split_horizontally(1090);
    let grid = panels.split_evenly((2, counts.len().max(1)));
    let measures = [
        Measure {
            what: "amplification (calls per first try)",
            range: (1.0, amp_max * 1.05 + 0.05),
            value: |r| r.counts.amplification(),
            decimals: 1,
        },
        Measure {
            what: "success rate (%)",
            range: (0.0, 102.0),
            value: |r| r.counts.success_rate() * 100.0,
            decimals: 0,
        },
    ];
    for (c, n) in counts.iter().enumerate() {
        for (row, m) in measures.iter().enumerate() {
            let Some(area) = grid.get(row * counts.len() + c) else {
                continue;
            };
            let mine: Vec<&failures::Figures> = rows.iter().filter(|r| r.clients == *n).collect();
            // Drawn last, on top: N tries with no limit make 1 + p + ... + p^(N-1) calls
            // per first try.
            let bound = (row == 0).then_some(run.settings.attempts);
            failure_panel(area, (*n, p_max), m, (&mine, &names), bound)?;
        }
    }
    failure_legend(&side, rows, (&names, &counts), p_max)?;
    root.present().map_err(err)
}

/// One panel of the failure-rate plot: each strategy's `m` against p (0 to `p_max`) for `n`
/// clients (`mine`: the sweep's rows of that client count), the thick lines first; then,
/// with `bound`, the dashed line of that many tries with no limit.
fn failure_panel(
    area: &Area,
    (n, p_max): (u32, f64),
    m: &Measure,
    (mine, names): (&[&failures::Figures], &[&str]),
    bound: Option<u32>,
) -> Result<(), String> {
    let caption = format!(
        "{n} clients: {}",
        m.what.split(' ').next().unwrap_or(m.what)
    );
    let ranges = (0.0..p_max, m.range.0..m.range.1);
    let mut chart = chart(area, (&caption, 17), (10, 40, 56), ranges)?;
    let desc = ("p, the probability a call fails", m.what);
    mesh(&mut chart, desc, (2, m.decimals), (13, 13))?;
    let line = |name: &str| -> Vec<(f64, f64)> {
        let mine = mine.iter().filter(|r| r.strategy == name);
        mine.map(|r| (r.p, (m.value)(r))).collect()
    };
    draw_lines(&mut chart, names.iter().map(|n| (*n, line(n))).collect())?;
    if let Some(attempts) = bound {
        let n_tries = attempts.min(1000) as i32;
        let line = (0..=10).map(|k| {
            let p = p_max * f64::from(k) / 10.0;
            (p, (0..n_tries).map(|e| p.powi(e)).sum::<f64>())
        });
        chart
            .draw_series(DashedLineSeries::new(line, 7, 5, BLACK.stroke_width(2)))
            .map_err(err)?;
    }
    Ok(())
}

/// The failure-rate plot's legend: each strategy and its amplification at the largest p,
/// per client count, then what the lines mean.
fn failure_legend(
    side: &Area,
    rows: &[failures::Figures],
    (names, counts): (&[&str], &[u32]),
    p_max: f64,
) -> Result<(), String> {
    let last_p = |name: &str, n: u32| {
        rows.iter()
            .filter(|r| r.strategy == name && r.clients == n)
            .max_by(|a, b| a.p.total_cmp(&b.p))
            .map(|r| r.counts.amplification())
    };
    let rows_legend: Vec<(String, String)> = names
        .iter()
        .map(|name| {
            let at: Vec<String> = counts
                .iter()
                .filter_map(|n| last_p(name, *n).map(|a| format!("{a:.2}")))
                .collect();
            (
                (*name).to_string(),
                format!("x{} at p = {p_max}", at.join(" / ")),
            )
        })
        .collect();
    let counts_words = counts
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" / ");
    legend(
        side,
        &rows_legend,
        &[
            &format!("x: amplification for {counts_words}"),
            "clients",
            "dashed: 1 + p + ... + p^(N-1),",
            "N tries with no limit",
        ],
    )
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

/// A chart of numbers against numbers: the outage plot's and the timeline's panels.
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

/// The y axis reaches at most this multiple of the capacity: the burst of every client at
/// t = 0 (200 requests against 24 a window in the study) would otherwise squash the capacity
/// line and the strategies into one band at the bottom. Higher windows are drawn at the top
/// edge, marked with a triangle and their count.
pub const CLIP_CAPACITIES: f64 = 3.0;

/// The outage's shade in the outage plot (drawn at 45% opacity).
pub const OUTAGE_SHADE: (u8, u8, u8) = (255, 200, 120);

/// The top of the outage plot's y axis: the highest window, clipped to `CLIP_CAPACITIES`
/// times the capacity, and never below the capacity.
fn y_top(sc: &Scenario, highest: f64) -> f64 {
    let cap = f64::from(sc.capacity.max(1));
    highest.min(cap * CLIP_CAPACITIES).max(cap)
}

/// Load over time per strategy, with the capacity line, as an SVG file at `path`.
pub fn outage(path: &Path, sc: &Scenario, results: &[Figures]) -> Result<(), String> {
    let window_s = sc.window.as_secs_f64();
    let (longest, highest) = extent(sc, results);
    let top = y_top(sc, highest);
    let end_s = (longest as f64 * window_s).max(sc.outage.as_secs_f64() + window_s);
    let root = SVGBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let clipped = if highest > top {
        format!(" (axis clipped at {CLIP_CAPACITIES}x capacity: triangles mark higher windows)")
    } else {
        String::new()
    };
    let caption = format!(
        "{} clients: requests per {} window{clipped}",
        sc.clients,
        fmt_duration(sc.window)
    );
    let ranges = (0.0..end_s, 0.0..top * 1.08);
    let mut chart = chart(&root, (&caption, 20), (12, 40, 56), ranges)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("requests per window")
        .draw()
        .map_err(err)?;
    draw_outage(&mut chart, sc, top * 1.08)?;
    draw_loads(&mut chart, results, window_s, top)?;
    draw_capacity(&mut chart, sc, end_s)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// The outage, shaded from t = 0 to its end over the whole height `top`, and labelled.
fn draw_outage(chart: &mut Chart, sc: &Scenario, top: f64) -> Result<(), String> {
    let end = sc.outage.as_secs_f64();
    if end <= 0.0 {
        return Ok(());
    }
    let (r, g, b) = OUTAGE_SHADE;
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(0.0, 0.0), (end, top)],
            RGBColor(r, g, b).mix(0.45).filled(),
        )))
        .map_err(err)?
        .label(format!("outage ({})", fmt_duration(sc.outage)))
        .legend(move |(x, y)| {
            Rectangle::new([(x, y - 5), (x + 18, y + 5)], RGBColor(r, g, b).filled())
        });
    Ok(())
}

/// One line per strategy: requests per window (`window_s` seconds long), labelled.
fn draw_loads(
    chart: &mut Chart,
    results: &[Figures],
    window_s: f64,
    top: f64,
) -> Result<(), String> {
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    for (i, o) in results.iter().enumerate() {
        let color = colors[i % colors.len()];
        // Empty windows are points at zero, so the line drops between waves; windows above
        // the axis are drawn at its top and marked below.
        let points = curve(&o.load).map(|(w, n)| (w as f64 * window_s, f64::from(n).min(top)));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(err)?
            .label(o.strategy.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        let over: Vec<(f64, u32)> = o
            .load
            .iter()
            .filter(|(_, n)| f64::from(**n) > top)
            .map(|(w, n)| (*w as f64 * window_s, *n))
            .collect();
        let dx = 8 + 30 * i as i32;
        chart
            .draw_series(over.into_iter().map(|(x, n)| {
                EmptyElement::at((x, top))
                    + TriangleMarker::new((0, 0), 6, color.filled())
                    + Text::new(
                        n.to_string(),
                        (dx, -14),
                        ("sans-serif", 12).into_font().color(&color),
                    )
            }))
            .map_err(err)?;
    }
    Ok(())
}

/// The capacity line, from the end of the outage to `end_s` seconds, labelled.
fn draw_capacity(chart: &mut Chart, sc: &Scenario, end_s: f64) -> Result<(), String> {
    let cap = f64::from(sc.capacity);
    let start = sc.outage.as_secs_f64();
    chart
        .draw_series(LineSeries::new(
            vec![(start, cap), (end_s, cap)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?
        .label("capacity")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    Ok(())
}
