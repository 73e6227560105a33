//! `simulate` on the command line: checks the flags against the model, builds the model's
//! scenario and settings from its defaults and the flags (with the bounds on the work one
//! command may do), runs the strategies (or the search, or a sweep), prints a table or
//! JSON, and draws the SVG plot when asked.

use super::outage::{self, Scenario};
use super::strategy::{Settings, Strategy};
use super::sweep::{self, FailureRun, OverloadRun};
use super::{cron, failures, limiter, overload, plot, report};
use crate::cli::{LogFormat, SimFormat, SimModel, SimulateArgs};
use crate::exit::Outcome;
use crate::report::Reporter;
use crate::units::{fmt_duration, fmt_given};
use std::path::Path;
use std::time::Duration;

/// The most simulated requests one command may process (clients x attempts x runs x
/// policies): a few seconds of work, not an accidental hour.
const MAX_WORK: u64 = 200_000_000;

/// The most tries one overload or failure-rate command may send, estimated from above
/// (first tries per second x seconds x attempts, per strategy, seed and swept point). An
/// overload try costs more than an outage's request (a timeout, a server with its requests
/// in flight): this is a minute of work at most.
const MAX_TRIES: f64 = 100_000_000.0;

/// The most tries one run of the overload or failure-rate model may send, estimated the
/// same way: a run keeps every try it sent (the overload server keeps a request it has not
/// finished, answered or not), so this bounds its memory to a few hundred megabytes.
const MAX_RUN_TRIES: f64 = 2_000_000.0;

/// The longest overload or failure-rate run (the overload model keeps per-second series),
/// and the cron model's longest period (it counts per second).
const MAX_SIM_DURATION: Duration = Duration::from_secs(24 * 3600);

/// What one command does, checked.
enum Job {
    /// The outage model: the strategies averaged over `runs` seeds from `seed`.
    Outage(Scenario, Vec<Strategy>, u64, u32),
    /// The search of the outage model's policy space, over `runs` seeds from `seed`.
    Search(Scenario, u64, u32),
    Overload(OverloadRun, Vec<Strategy>),
    /// The boundary sweep, over the run's seeds at each point.
    Boundary(OverloadRun, Vec<Strategy>),
    Failures(FailureRun, Vec<Strategy>),
    FailureSweep(FailureRun, Vec<Strategy>),
    Cron(cron::Scenario),
    /// The limiter model, from `seed`.
    Limiter(u64),
}

/// Runs `retry-http simulate`: a usage error (exit 2) before any work, else the output on
/// stdout and the plot; a plot or stdout that cannot be written is a local error.
pub fn simulate(a: &SimulateArgs) -> Outcome {
    let say = Reporter::new(crate::report::LogConfig::plain(LogFormat::Text));
    let job = match plan(a) {
        Ok(j) => j,
        Err(e) => {
            say.error(&e);
            return Outcome::Usage;
        }
    };
    let (text, drawn) = job.run(Answer {
        json: a.format == SimFormat::Json,
        to: a.plot.as_deref(),
    });
    if let Err(e) = drawn {
        let path = a.plot.as_deref().unwrap_or(Path::new(""));
        say.error(&format!("cannot write the plot {}: {e}", path.display()));
        return Outcome::Local;
    }
    match crate::output::print_stdout(&text) {
        Ok(()) => Outcome::Success,
        Err(e) => {
            say.error(&e);
            Outcome::Local
        }
    }
}

/// Where a job's answer goes: its JSON on one line (`json`) or its table on stdout, and its
/// plot at `to`, when one was asked for.
#[derive(Clone, Copy)]
struct Answer<'a> {
    json: bool,
    to: Option<&'a Path>,
}

impl Answer<'_> {
    /// What the job prints (`value` as JSON, or `table`), and whether `draw` drew the plot
    /// asked for (no plot: Ok; a job without a plot is never asked for one, see `plan`).
    fn give(
        self,
        value: impl FnOnce() -> serde_json::Value,
        table: impl FnOnce() -> String,
        draw: impl FnOnce(&Path) -> Result<(), String>,
    ) -> (String, Result<(), String>) {
        let drawn = self.to.map_or(Ok(()), draw);
        match self.json {
            true => (format!("{}\n", value()), drawn),
            false => (table(), drawn),
        }
    }
}

impl Job {
    /// Plays the job: what it prints, and whether the plot asked for was drawn.
    fn run(self, out: Answer) -> (String, Result<(), String>) {
        match self {
            Job::Outage(sc, strategies, seed, runs) => {
                outage_output(&sc, &strategies, (seed, runs), out)
            }
            Job::Search(sc, seed, runs) => {
                let limit = outage::physical_limit(&sc);
                out.give(
                    || report::search_json(&sc, seed, runs, &limit),
                    || report::search_table(&sc, seed, runs, &limit),
                    |_| Ok(()),
                )
            }
            Job::Overload(run, strategies) => {
                let figures = sweep::overload_figures(&run, &strategies);
                out.give(
                    || report::overload_json(&figures),
                    || report::overload_table(&run, &figures),
                    |p| plot::timeline(p, &run, &figures),
                )
            }
            Job::Boundary(run, strategies) => {
                let (rates, lengths) = (sweep::default_rates(), sweep::default_lengths());
                let points = sweep::boundary(&run, &strategies, (&rates, &lengths));
                out.give(
                    || report::boundary_json(&run, &points),
                    || report::boundary_table(&run, &points),
                    |p| plot::boundary(p, &run, &points),
                )
            }
            Job::Failures(run, strategies) => {
                let one = ([run.scenario.p], [run.scenario.clients]);
                let figures = sweep::failure_sweep(&run, &strategies, (&one.0, &one.1));
                out.give(
                    || report::failure_json(&run, &figures),
                    || report::failure_table(&run, &figures),
                    |_| Ok(()),
                )
            }
            Job::FailureSweep(run, strategies) => {
                let ps = sweep::default_ps();
                let grid = (ps.as_slice(), sweep::DEFAULT_CLIENTS.as_slice());
                let rows = sweep::failure_sweep(&run, &strategies, grid);
                out.give(
                    || report::failure_json(&run, &rows),
                    || report::failure_sweep_table(&run, &rows),
                    |p| plot::failure_sweep(p, &run, &rows),
                )
            }
            Job::Cron(sc) => {
                let loads = cron::play(&sc);
                out.give(
                    || report::cron_json(&sc, &loads),
                    || report::cron_table(&sc, &loads),
                    |_| Ok(()),
                )
            }
            Job::Limiter(seed) => limiter_output(seed, out),
        }
    }
}

/// The outage model: the strategies as a table or JSON, and the plot.
fn outage_output(
    sc: &Scenario,
    strategies: &[Strategy],
    (seed, runs): (u64, u32),
    out: Answer,
) -> (String, Result<(), String>) {
    let limit = outage::physical_limit(sc);
    let results: Vec<outage::Figures> = strategies
        .iter()
        .map(|k| {
            outage::average(
                sc,
                &sc.backoff(*k),
                k.outage_sharing(),
                k.name(),
                seed,
                runs,
            )
        })
        .collect();
    out.give(
        || report::outage_json(sc, &results, &limit),
        || report::outage_table(sc, seed, runs, &results, &limit),
        |p| plot::outage(p, sc, &results),
    )
}

/// The models' names as `--model` takes them, the last two joined by "or", the others by
/// commas: `outage, overload or failure-rate`.
fn models_words(models: &[SimModel]) -> String {
    let names: Vec<&str> = models
        .iter()
        .map(|m| match m {
            SimModel::Outage => "outage",
            SimModel::Overload => "overload",
            SimModel::FailureRate => "failure-rate",
            SimModel::Cron => "cron",
            SimModel::Limiter => "limiter",
        })
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// The first flag given that the chosen model does not take, as a usage error naming the
/// models it belongs to (flags in the order of the help).
fn foreign_flag(a: &SimulateArgs) -> Result<(), String> {
    match a
        .model_flags()
        .into_iter()
        .find(|(_, m)| !m.contains(&a.model))
    {
        Some((name, models)) => Err(format!(
            "{name} belongs to --model {}, not --model {}",
            models_words(models),
            models_words(&[a.model])
        )),
        None => Ok(()),
    }
}

/// The limiter model's table or JSON, from `seed`.
fn limiter_output(seed: u64, out: Answer) -> (String, Result<(), String>) {
    out.give(|| limiter::json(seed), || limiter::table(seed), |_| Ok(()))
}

/// Checks the command before any work is done: the flags against the model, then the
/// model's own checks. The error is the message of a usage error.
fn plan(a: &SimulateArgs) -> Result<Job, String> {
    foreign_flag(a)?;
    match a.model {
        SimModel::Outage => plan_outage(a),
        SimModel::Overload => plan_overload(a),
        SimModel::FailureRate => plan_failures(a),
        SimModel::Cron => plan_cron(a).map(Job::Cron),
        SimModel::Limiter => match a.clients {
            Some(_) => Err("--clients belongs to --model outage, overload, failure-rate or cron, not --model limiter (one batch)".into()),
            None => Ok(Job::Limiter(a.seed)),
        },
    }
}

/// `--base` and `--cap`, or the model's defaults: the base at least 1 ms and not above the
/// cap (`name_cap`: the message says the cap, as the overload and failure-rate models').
fn backoff(
    a: &SimulateArgs,
    (base, cap): (Duration, Duration),
    name_cap: bool,
) -> Result<(Duration, Duration), String> {
    let (base, cap) = (a.base.unwrap_or(base), a.cap.unwrap_or(cap));
    if base < Duration::from_millis(1) {
        return Err("--base must be at least 1ms".into());
    }
    if base > cap {
        let named = match name_cap {
            true => format!(" ({})", fmt_duration(cap)),
            false => String::new(),
        };
        return Err(format!(
            "--base is above --cap{named}: the base must not exceed the cap"
        ));
    }
    Ok((base, cap))
}

/// The outage model's scenario: its defaults with the flags, checked.
fn outage_scenario(a: &SimulateArgs) -> Result<Scenario, String> {
    let (d, o) = (Scenario::default(), &a.outage);
    let (base, cap) = backoff(a, (d.base, d.cap), false)?;
    let window = o.window.unwrap_or(d.window);
    if window.is_zero() {
        return Err("--window must be longer than 0".into());
    }
    Ok(Scenario {
        clients: a.clients.unwrap_or(d.clients),
        outage: o.outage.unwrap_or(d.outage),
        capacity: o.capacity.unwrap_or(d.capacity),
        window,
        attempts: a.attempts.unwrap_or(d.attempts),
        base,
        cap,
        deadline: o.deadline.filter(|d| !d.is_zero()),
        limits: crate::fleet::record::Limits {
            budget_pct: o.retry_budget.unwrap_or(d.limits.budget_pct),
            floor: o.budget_floor.unwrap_or(d.limits.floor),
            threshold: o.breaker_threshold.unwrap_or(d.limits.threshold),
            ..d.limits
        },
    })
}

/// The outage model, in this order: the scenario, the strategies, the amount of work (at
/// most `MAX_WORK` requests), the plot's folder.
fn plan_outage(a: &SimulateArgs) -> Result<Job, String> {
    let sc = outage_scenario(a)?;
    let strategies = match a.strategies.as_deref() {
        // Those without state, the first five of the list.
        None => Strategy::OUTAGE[..5].to_vec(),
        Some(list) => list
            .split(',')
            .map(Strategy::parse_outage)
            .collect::<Result<Vec<Strategy>, String>>()?,
    };
    let search = a.outage.search;
    let policies = if search { 400 } else { strategies.len() as u64 };
    let runs = a.runs.unwrap_or(1);
    let work = u64::from(sc.clients) * u64::from(sc.attempts) * u64::from(runs) * policies;
    if work > MAX_WORK {
        return Err(format!(
            "this simulation would process up to {work} requests; the limit is {MAX_WORK}: lower --clients, --attempts or --runs"
        ));
    }
    plot_folder(a)?;
    Ok(match search {
        true => Job::Search(sc, a.seed, runs),
        false => Job::Outage(sc, strategies, a.seed, runs),
    })
}

/// The plot's folder exists, and the plot's path is not a folder itself (both found before
/// the simulation runs).
fn plot_folder(a: &SimulateArgs) -> Result<(), String> {
    if let Some(path) = &a.plot {
        if path.is_dir() || crate::files::names_a_folder(path) {
            return Err(format!(
                "--plot {} is a folder: give the SVG file's path, such as load.svg",
                path.display()
            ));
        }
        let dir = crate::files::folder(path);
        if !dir.is_dir() {
            return Err(format!(
                "--plot {}: the folder {} does not exist",
                path.display(),
                dir.display()
            ));
        }
    }
    Ok(())
}

/// The strategies of the overload and failure-rate models (all eleven by default; one
/// named twice is played once).
fn model_strategies(a: &SimulateArgs) -> Result<Vec<Strategy>, String> {
    let Some(list) = &a.strategies else {
        return Ok(Strategy::ALL.to_vec());
    };
    // The first name that is no strategy is the error, as it comes in the list.
    report::distinct(list.split(',').map(Strategy::parse))
        .into_iter()
        .collect()
}

/// The strategies' settings: `Settings::default()` with --attempts, --base, --cap.
fn settings(a: &SimulateArgs) -> Result<Settings, String> {
    let d = Settings::default();
    let (base, cap) = backoff(a, (d.base, d.cap), true)?;
    Ok(Settings {
        attempts: a.attempts.unwrap_or(d.attempts),
        base,
        cap,
        ..d
    })
}

/// A duration flag of the overload and failure-rate models at least `min`.
fn at_least(flag: &str, d: Duration, min: Duration) -> Result<(), String> {
    if d < min {
        return Err(format!(
            "{flag} {} is too short: expected at least {}",
            fmt_duration(d),
            fmt_duration(min)
        ));
    }
    Ok(())
}

/// A run's length or a period (`flag`): at least `min`, at most `MAX_SIM_DURATION`.
fn duration_ok(flag: &str, d: Duration, min: Duration) -> Result<(), String> {
    at_least(flag, d, min)?;
    if d > MAX_SIM_DURATION {
        return Err(format!(
            "{flag} {} is too long: expected at most {}",
            fmt_duration(d),
            fmt_duration(MAX_SIM_DURATION)
        ));
    }
    Ok(())
}

/// The estimated tries are within `MAX_RUN_TRIES` for the largest run and `MAX_TRIES` in
/// all.
fn work_ok(largest: f64, tries: f64) -> Result<(), String> {
    if largest > MAX_RUN_TRIES {
        return Err(format!(
            "one run would send up to {largest:.0} tries; the limit is {MAX_RUN_TRIES:.0}: lower --base-rate, --spike-rate, --trigger-for, --duration or --attempts"
        ));
    }
    if tries > MAX_TRIES {
        return Err(format!(
            "this simulation would send up to {tries:.0} tries; the limit is {MAX_TRIES:.0}: lower --base-rate, --spike-rate, --trigger-for, --duration, --attempts, --runs or the strategies"
        ));
    }
    Ok(())
}

/// `--sweep`'s rules: without it, the message of a flag given that needs it (`needs_sweep`)
/// is the error; with it, the first of `swept` given is refused, since the sweep varies
/// `varies` itself.
fn sweep_rules(
    sweep: bool,
    needs_sweep: Option<&str>,
    swept: &[(&str, bool)],
    varies: &str,
) -> Result<(), String> {
    if !sweep {
        return needs_sweep.map_or(Ok(()), |e| Err(e.to_string()));
    }
    match swept.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(format!(
            "{flag} cannot be given with --sweep: the sweep varies {varies}"
        )),
        None => Ok(()),
    }
}

/// `--sweep`'s and `--runs`'s rules in the overload model: the sweep varies the spike rate
/// and the trigger's length, and a single run is one seed.
fn overload_sweep_rules(a: &SimulateArgs) -> Result<(), String> {
    let o = &a.overload;
    sweep_rules(
        a.sweep,
        a.runs.map(|_| "--runs with --model overload needs --sweep: a single run is one seed (choose it with --seed)"),
        &[
            ("--spike-rate", o.spike_rate.is_some()),
            ("--trigger-for", o.trigger_for.is_some()),
        ],
        "the spike rate (50 to 100 first tries/s) and the trigger's length (1, 2, 5, 10, 20s)",
    )
}

/// The overload model's scenario: its defaults with the flags.
fn overload_scenario(a: &SimulateArgs) -> overload::Scenario {
    let (d, o, l) = (overload::Scenario::default(), &a.overload, &a.load);
    overload::Scenario {
        duration: l.duration.unwrap_or(d.duration),
        base_rate: l.base_rate.unwrap_or(d.base_rate),
        spike_rate: o.spike_rate.unwrap_or(d.spike_rate),
        trigger_at: o.trigger_at.unwrap_or(d.trigger_at),
        trigger_for: o.trigger_for.unwrap_or(d.trigger_for),
        capacity_drop: o.capacity_drop.unwrap_or(d.capacity_drop),
        latency: l.latency.unwrap_or(d.latency),
        per_request: o.per_request.unwrap_or(d.per_request),
        timeout: o.timeout.unwrap_or(d.timeout),
        network: o.network.unwrap_or(d.network),
        clients: a.clients.unwrap_or(d.clients),
        population: o.population.map_or(d.population, Into::into),
    }
}

/// The overload scenario's times: a timeout and a latency of at least 1 ms, a trigger from
/// 1 s on, and a run that lasts 10 s past the end of the (longest swept) trigger, since
/// recovery is judged on its last 10 s.
fn overload_times(sc: &overload::Scenario, sweep: bool) -> Result<(), String> {
    let ms = Duration::from_millis(1);
    at_least("--timeout", sc.timeout, ms)?;
    at_least("--latency", sc.latency, ms)?;
    at_least("--trigger-at", sc.trigger_at, Duration::from_secs(1))?;
    let longest = match sweep {
        true => sweep::default_lengths()
            .into_iter()
            .max()
            .unwrap_or(sc.trigger_for),
        false => sc.trigger_for,
    };
    let need = sc.trigger_at + longest + Duration::from_secs(10);
    if sc.duration < need {
        return Err(format!(
            "--duration {} is too short: the run must last 10s past the end of the {}trigger (--trigger-at {} + {} + 10s = {})",
            fmt_duration(sc.duration),
            if sweep { "longest swept " } else { "" },
            fmt_duration(sc.trigger_at),
            fmt_duration(longest),
            fmt_duration(need)
        ));
    }
    duration_ok("--duration", sc.duration, need)
}

/// The overload model's work: the tries of its largest run, and of all its runs (with the
/// `sweep`, `run.runs` seeds a point).
fn overload_work(run: &OverloadRun, strategies: usize, sweep: bool) -> Result<(), String> {
    let (sc, n) = (&run.scenario, strategies as f64);
    let per_run = |spike: f64, len: Duration| {
        let len = len.as_secs_f64().min(sc.duration.as_secs_f64());
        (sc.base_rate * (sc.duration.as_secs_f64() - len) + spike * len)
            * f64::from(run.settings.attempts)
    };
    if !sweep {
        let one = per_run(sc.spike_rate, sc.trigger_for);
        return work_ok(one, one * n);
    }
    let lengths = sweep::default_lengths();
    let each: Vec<f64> = sweep::default_rates()
        .iter()
        .flat_map(|r| lengths.iter().map(move |l| (*r, *l)))
        .map(|(r, l)| per_run(r, l))
        .collect();
    let largest = each.iter().copied().fold(0.0, f64::max);
    work_ok(largest, each.iter().sum::<f64>() * n * f64::from(run.runs))
}

/// The overload model: its scenario from the defaults and the flags, checked; one run per
/// strategy, or the boundary sweep.
fn plan_overload(a: &SimulateArgs) -> Result<Job, String> {
    overload_sweep_rules(a)?;
    let sc = overload_scenario(a);
    overload_times(&sc, a.sweep)?;
    let st = settings(a)?;
    let strategies = model_strategies(a)?;
    let run = OverloadRun {
        scenario: sc,
        settings: st,
        seed: a.seed,
        runs: if a.sweep { a.runs.unwrap_or(3) } else { 1 },
    };
    overload_work(&run, strategies.len(), a.sweep)?;
    plot_folder(a)?;
    Ok(match a.sweep {
        true => Job::Boundary(run, strategies),
        false => Job::Overload(run, strategies),
    })
}

/// `--sweep`'s and `--plot`'s rules in the failure-rate model: the sweep varies p and the
/// clients, and the plot is of the sweep.
fn failure_sweep_rules(a: &SimulateArgs) -> Result<(), String> {
    sweep_rules(
        a.sweep,
        a.plot.as_ref().map(|_| "--plot with --model failure-rate needs --sweep: the plot is amplification against p"),
        &[
            ("--failure-rate", a.failure.failure_rate.is_some()),
            ("--clients", a.clients.is_some()),
        ],
        "p (0 to 0.5 by 0.05) and the clients (10, 100, 1000)",
    )
}

/// The failure-rate model: its scenario, checked; one run per strategy (seeds pooled), or
/// the p sweep.
fn plan_failures(a: &SimulateArgs) -> Result<Job, String> {
    failure_sweep_rules(a)?;
    let (d, l) = (failures::Scenario::default(), &a.load);
    let sc = failures::Scenario {
        clients: a.clients.unwrap_or(d.clients),
        rate: l.base_rate.unwrap_or(d.rate),
        p: a.failure.failure_rate.unwrap_or(d.p),
        latency: l.latency.unwrap_or(d.latency),
        duration: l.duration.unwrap_or(d.duration),
    };
    duration_ok("--duration", sc.duration, Duration::from_secs(1))?;
    let st = settings(a)?;
    let strategies = model_strategies(a)?;
    let runs = a.runs.unwrap_or(1);
    let per_run = sc.rate * sc.duration.as_secs_f64() * f64::from(st.attempts);
    let points = match a.sweep {
        true => (sweep::default_ps().len() * sweep::DEFAULT_CLIENTS.len()) as f64,
        false => 1.0,
    };
    let all = per_run * points * strategies.len() as f64 * f64::from(runs);
    work_ok(per_run, all)?;
    plot_folder(a)?;
    let run = FailureRun {
        scenario: sc,
        settings: st,
        seed: a.seed,
        runs,
    };
    Ok(match a.sweep {
        true => Job::FailureSweep(run, strategies),
        false => Job::Failures(run, strategies),
    })
}

/// The cron model's scenario: its defaults with the flags; a period of whole seconds from
/// 1 s to a day, and a splay of at most the period.
fn plan_cron(a: &SimulateArgs) -> Result<cron::Scenario, String> {
    let (d, c) = (cron::Scenario::default(), &a.cron);
    let sc = cron::Scenario {
        clients: a.clients.unwrap_or(d.clients),
        period: c.period.unwrap_or(d.period),
        splay: c.splay.unwrap_or(d.splay),
        store_ops: c.store_ops.unwrap_or(d.store_ops),
    };
    let period = fmt_given(sc.period);
    if sc.period.subsec_nanos() != 0 {
        return Err(format!(
            "--period {period} is not a whole number of seconds: the model counts per second"
        ));
    }
    duration_ok("--period", sc.period, Duration::from_secs(1))?;
    if sc.splay > sc.period {
        return Err(format!(
            "--splay {} is longer than --period {period}: a host would start after its next tick",
            fmt_given(sc.splay)
        ));
    }
    Ok(sc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Command, parse};

    /// `simulate ARGS`'s foreign-flag check.
    fn foreign(args: &[&str]) -> Result<(), String> {
        let all: Vec<std::ffi::OsString> = ["retry-http", "simulate"]
            .iter()
            .chain(args)
            .map(|a| a.into())
            .collect();
        let Ok(cli) = parse(&all) else {
            panic!("{args:?} does not parse");
        };
        let Some(Command::Simulate(a)) = cli.command else {
            panic!("{args:?} is not simulate");
        };
        foreign_flag(&a)
    }

    /// A flag is refused by the model it does not belong to, with the models it does; with
    /// several, the first by group (outage, --sweep, overload, both, failure-rate).
    #[test]
    fn a_flag_of_another_model_is_named_with_the_models_it_belongs_to() {
        let no = |flag: &str, of: &str, not: &str| {
            Err(format!("{flag} belongs to --model {of}, not --model {not}"))
        };
        assert_eq!(
            foreign(&["--model", "overload", "--budget-floor", "3"]),
            no("--budget-floor", "outage", "overload")
        );
        assert_eq!(
            foreign(&["--spike-rate", "5", "--sweep"]),
            no("--sweep", "overload or failure-rate", "outage")
        );
        assert_eq!(
            foreign(&["--latency", "1s", "--population", "open"]),
            no("--population", "overload", "outage")
        );
        assert_eq!(
            foreign(&[
                "--model",
                "overload",
                "--failure-rate",
                "0.1",
                "--window",
                "1s"
            ]),
            no("--window", "outage", "overload")
        );
        assert_eq!(
            foreign(&["--model", "failure-rate", "--timeout", "1s"]),
            no("--timeout", "overload", "failure-rate")
        );
        assert_eq!(
            foreign(&["--model", "cron", "--splay", "1m", "--attempts", "3"]),
            no("--attempts", "outage, overload or failure-rate", "cron")
        );
        assert_eq!(foreign(&["--splay", "1m"]), no("--splay", "cron", "outage"));
        for fine in [
            &["--model", "failure-rate", "--sweep", "--base-rate", "3"][..],
            &["--model", "overload", "--network", "0s", "--latency", "1s"],
            &["--search", "--breaker-threshold", "2"],
            &[
                "--model",
                "cron",
                "--clients",
                "9",
                "--period",
                "1h",
                "--store-ops",
                "4",
            ],
        ] {
            assert_eq!(foreign(fine), Ok(()), "{fine:?}");
        }
    }
}
