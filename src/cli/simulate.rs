//! `retry-http simulate`'s flags: those several models take, then one group per model (the
//! outage model's; the overload model's; those the overload and failure-rate models share;
//! the failure-rate model's; the cron model's), each under its own help heading.
//! `SimulateArgs::model_flags` lists the flags given with the models they belong to;
//! `simulate::command` refuses a flag given to another model, picks each model's defaults
//! and checks the values together.

use super::values;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// Who sends (`--population`; the variants' lines are its help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Population {
    /// First tries keep coming whatever happens (each cron tick is a new run).
    Open,
    /// A fixed population of clients, each waiting for its answer before its next run.
    Closed,
}

impl From<Population> for retry_http_simulate::overload::Population {
    fn from(p: Population) -> Self {
        match p {
            Population::Open => Self::Open,
            Population::Closed => Self::Closed,
        }
    }
}

/// Output format of `simulate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimFormat {
    /// An aligned table.
    Table,
    /// A JSON array of objects.
    Json,
}

/// The model `simulate` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimModel {
    // No quotes in these lines: the completion scripts quote them.
    /// A server down for a while, then serving a fixed capacity per window (after the AWS
    /// Architecture Blog study Exponential Backoff And Jitter).
    Outage,
    /// A server whose latency grows with the requests in flight, clients with a timeout, and a
    /// short trigger (after Brooker, Congestive collapse, 2023).
    Overload,
    /// Calls that fail independently with probability p (after Brooker, Fixing retries with
    /// token buckets and circuit breakers, 2022).
    FailureRate,
    /// A fleet of hosts on one cron schedule, with or without a splay: the busiest second of
    /// each period against the mean, per request and per store operation.
    Cron,
    /// One batch against a limiter that does not say its rate (a token bucket as nginx
    /// limit_req, a fixed window), with and without the batch's adaptive pacer.
    Limiter,
}

/// Simulate a fleet of clients retrying: an outage, an overload, failures (no network).
// The models, scenarios and strategies of `simulate`. The doc line above is the
// subcommand's `about`, word for word as on the variant: the subcommand is deferred (see
// `Command`), so these flags, and the about their doc sets, are added after the variant's
// (and after the groups', whose docs would set it too). A flag that has a default per
// model is an `Option`; `simulate::command` picks the model's default.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The model: outage (the server is down, then serves a fixed capacity), overload (latency
    /// grows with load, clients time out and retry, a short trigger), failure-rate (each call
    /// fails with probability p), cron (a fleet on one cron schedule: where each period's load
    /// lands, with or without --splay; it takes --clients, --format and its own flags),
    /// limiter (one batch of 300 URLs against a token bucket and a fixed window of 40/s, with
    /// and without the adaptive pacer; it takes --seed and --format).
    #[arg(long, value_enum, default_value = "outage")]
    pub model: SimModel,
    /// Clients (1 to 1000000). Outage: 200, all sending their first request at t = 0.
    /// Overload: 1000, each first try from one of them at random (closed population: each
    /// waits for its run to end). Failure-rate: 100, sharing the load. Cron: 100000 hosts,
    /// each running once a period.
    #[arg(long, allow_hyphen_values = true, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub clients: Option<u32>,
    /// Attempts per run, the first included (1 to 1000). Outage: 8; overload and
    /// failure-rate: 3.
    #[arg(long, allow_hyphen_values = true, value_parser = values::attempts)]
    pub attempts: Option<u32>,
    /// Backoff base (the pause of the fixed strategy). 100ms for every model.
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub base: Option<Duration>,
    /// Backoff cap. Outage: 8s; overload and failure-rate: 2s.
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub cap: Option<Duration>,
    /// Seed of the first run; run i uses seed + i.
    #[arg(long, allow_hyphen_values = true, default_value = "1")]
    pub seed: u64,
    /// Runs (seeds) per strategy and point (1 to 1000). Outage: runs averaged, default 1.
    /// Overload: only with --sweep, the seeds of each point, default 3. Failure-rate: runs
    /// pooled, default 1.
    #[arg(long, allow_hyphen_values = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: Option<u32>,
    /// Strategies to compare, comma-separated. Outage: fixed, exponential, full, equal,
    /// decorrelated (default: these five), shared-budget, shared-breaker. Overload and failure-rate: no-retry, retries
    /// (immediate), fixed, exponential, full, equal, decorrelated, bucket (a token bucket per
    /// client), breaker (a circuit breaker per client), shared-budget, shared-breaker (the
    /// retry budget and circuit breaker of --state, one for the whole fleet); default: all
    /// eleven.
    #[arg(long, value_name = "LIST", hide_possible_values = true, value_parser = values::strategies_completed())]
    pub strategies: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: SimFormat,
    /// Draw an SVG plot. Outage: load over time per strategy against the capacity line.
    /// Overload: goodput and offered load over time per strategy, the trigger shaded; with
    /// --sweep, the boundary map. Failure-rate (with --sweep): amplification and success rate
    /// against p per strategy, one panel per client count.
    #[arg(long, value_name = "FILE.svg", conflicts_with = "search")]
    pub plot: Option<PathBuf>,
    /// Overload: the vulnerability boundary, spike rate (50 to 100 first tries/s) x trigger
    /// length (1, 2, 5, 10, 20 s), recovered share over --runs seeds. Failure-rate: p from 0
    /// to 0.5 by 0.05 x 10, 100 and 1000 clients sharing the load.
    #[arg(long, conflicts_with = "search")]
    pub sweep: bool,

    /// The outage model's flags.
    #[command(flatten)]
    pub outage: OutageArgs,
    /// The overload model's flags.
    #[command(flatten)]
    pub overload: OverloadArgs,
    /// The flags the overload and failure-rate models share.
    #[command(flatten)]
    pub load: LoadArgs,
    /// The failure-rate model's flags.
    #[command(flatten)]
    pub failure: FailureRateArgs,
    /// The cron model's flags.
    #[command(flatten)]
    pub cron: CronArgs,
}

impl SimulateArgs {
    /// The flags given that only some models take, each with those models, in the order of
    /// the help (`--sweep` after the outage model's flags).
    pub fn model_flags(&self) -> Vec<(&'static str, &'static [SimModel])> {
        use SimModel::{Cron, FailureRate, Outage, Overload};
        let (o, v, l, f) = (&self.outage, &self.overload, &self.load, &self.failure);
        let retrying: &[SimModel] = &[Outage, Overload, FailureRate];
        let outage: &[SimModel] = &[Outage];
        let overload: &[SimModel] = &[Overload];
        let both: &[SimModel] = &[Overload, FailureRate];
        let failure: &[SimModel] = &[FailureRate];
        let c = &self.cron;
        [
            ("--attempts", self.attempts.is_some(), retrying),
            ("--base", self.base.is_some(), retrying),
            ("--cap", self.cap.is_some(), retrying),
            ("--runs", self.runs.is_some(), retrying),
            ("--strategies", self.strategies.is_some(), retrying),
            ("--plot", self.plot.is_some(), retrying),
            ("--outage", o.outage.is_some(), outage),
            ("--capacity", o.capacity.is_some(), outage),
            ("--window", o.window.is_some(), outage),
            ("--deadline", o.deadline.is_some(), outage),
            ("--search", o.search, outage),
            ("--retry-budget", o.retry_budget.is_some(), outage),
            ("--budget-floor", o.budget_floor.is_some(), outage),
            ("--breaker-threshold", o.breaker_threshold.is_some(), outage),
            ("--sweep", self.sweep, both),
            ("--population", v.population.is_some(), overload),
            ("--spike-rate", v.spike_rate.is_some(), overload),
            ("--trigger-at", v.trigger_at.is_some(), overload),
            ("--trigger-for", v.trigger_for.is_some(), overload),
            ("--capacity-drop", v.capacity_drop.is_some(), overload),
            ("--timeout", v.timeout.is_some(), overload),
            ("--per-request", v.per_request.is_some(), overload),
            ("--network", v.network.is_some(), overload),
            ("--base-rate", l.base_rate.is_some(), both),
            ("--duration", l.duration.is_some(), both),
            ("--latency", l.latency.is_some(), both),
            ("--failure-rate", f.failure_rate.is_some(), failure),
            ("--splay", c.splay.is_some(), &[Cron]),
            ("--period", c.period.is_some(), &[Cron]),
            ("--store-ops", c.store_ops.is_some(), &[Cron]),
        ]
        .into_iter()
        .filter(|(_, given, _)| *given)
        .map(|(name, _, models)| (name, models))
        .collect()
    }
}

/// The outage model's flags.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Outage model")]
pub struct OutageArgs {
    /// How long the server rejects every request (default 600ms).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub outage: Option<Duration>,
    /// Requests served per window once the outage ends (default 24).
    #[arg(long, allow_hyphen_values = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub capacity: Option<u32>,
    /// The capacity window (default 100ms).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub window: Option<Duration>,
    /// Each client's deadline (none by default).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub deadline: Option<Duration>,
    /// Search the policy space (jitter x base x cap) and print the Pareto front of calls
    /// against time to the last success, as flags to paste.
    #[arg(long)]
    pub search: bool,
    /// The shared strategies' retry budget: retries allowed as a percentage of the fleet's
    /// successful requests in 10m (default 10%, as --state's).
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true, value_parser = values::percent)]
    pub retry_budget: Option<f64>,
    /// The shared strategies' retries always allowed per window, fleet-wide (default 3, as
    /// --state's: a run's own retries do not count against it).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = clap::value_parser!(u32))]
    pub budget_floor: Option<u32>,
    /// shared-breaker's failed runs in a row that open the fleet's circuit for 30s (default
    /// 5, as --state's).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub breaker_threshold: Option<u32>,
}

/// The overload model's flags.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Overload model")]
pub struct OverloadArgs {
    /// Open (default: first tries arrive whatever happens) or closed (each client waits for
    /// its run to end, then thinks).
    #[arg(long, value_enum)]
    pub population: Option<Population>,
    /// First tries per second during a spike (default 80; 0.01 to 100000).
    #[arg(long, allow_hyphen_values = true, value_name = "RATE", value_parser = rate)]
    pub spike_rate: Option<f64>,
    /// When the trigger starts (default 20s; at least 1s).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub trigger_at: Option<Duration>,
    /// How long the trigger lasts (default 5s).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub trigger_for: Option<Duration>,
    /// The fraction of the server's capacity lost during the trigger (default 0; 0 to 0.99).
    #[arg(long, allow_hyphen_values = true, value_name = "FRACTION", value_parser = drop_fraction)]
    pub capacity_drop: Option<f64>,
    /// The client's timeout per try (default 3s).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub timeout: Option<Duration>,
    /// What each request in flight adds to the server's latency (default 10ms).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub per_request: Option<Duration>,
    /// What the network adds each way, on average: an exponential delay (default 100ms).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub network: Option<Duration>,
}

/// The flags the overload and failure-rate models share.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Overload and failure-rate models")]
pub struct LoadArgs {
    /// First tries per second, all clients together (0.01 to 100000). Overload: before and
    /// after the trigger, default 40. Failure-rate: default 100.
    #[arg(long, allow_hyphen_values = true, value_name = "RATE", value_parser = rate)]
    pub base_rate: Option<f64>,
    /// How long the simulated run lasts. Overload: 80s; failure-rate: 120s.
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub duration: Option<Duration>,
    /// Overload: the server's latency with nothing in flight (default 1s). Failure-rate: how
    /// long a call takes (default 10ms).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub latency: Option<Duration>,
}

/// The failure-rate model's flags.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Failure-rate model")]
pub struct FailureRateArgs {
    /// The probability that a call fails (default 0.1; 0 to 1).
    #[arg(long, allow_hyphen_values = true, value_name = "P", value_parser = probability)]
    pub failure_rate: Option<f64>,
}

/// The cron model's flags.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Cron model")]
pub struct CronArgs {
    /// Each host waits a stable offset in [0, DURATION) before its run, as --splay does
    /// (default 0: none; at most the period).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub splay: Option<Duration>,
    /// The schedule's period: every host's cron fires at its second 0 (default 1m; whole
    /// seconds, 1s to 1d).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration)]
    pub period: Option<Duration>,
    /// Store round trips per run (default 3, the common path: connect, admission, final
    /// record; 4 on a failure path; 1 to 10).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub store_ops: Option<u32>,
}

/// `s` as a number within `lo..=hi`, if it is one.
fn number_in(s: &str, lo: f64, hi: f64) -> Option<f64> {
    s.trim().parse().ok().filter(|n| (lo..=hi).contains(n))
}

/// Parses a rate in requests per second: a number from 0.01 to 100000.
fn rate(s: &str) -> Result<f64, String> {
    number_in(s, 0.01, 100_000.0).ok_or_else(|| {
        format!("invalid rate {s:?}: expected requests per second, a number from 0.01 to 100000")
    })
}

/// Parses `--capacity-drop`: a fraction from 0 to 0.99.
fn drop_fraction(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, 0.99).ok_or_else(|| {
        format!(
            "invalid fraction {s:?}: expected a number from 0 to 0.99 (0.5: half the capacity lost)"
        )
    })
}

/// Parses `--failure-rate`: a probability from 0 to 1.
fn probability(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, 1.0)
        .ok_or_else(|| format!("invalid probability {s:?}: expected a number from 0 to 1"))
}
