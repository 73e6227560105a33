//! retry-http: an HTTP client for scripts, cron jobs and CI that retries transient
//! failures without making an outage worse. This file wires the modules together:
//! flags -> configuration -> attempt loop (policy + transport) -> output/report -> outcome.

pub mod attempt;
pub mod body;
pub mod cli;
pub mod config;
pub mod demo;
pub mod exit;
pub mod interrupt;
pub mod output;
pub mod policy;
pub mod redact;
pub mod report;
pub mod resume;
pub mod retry_after;
pub mod scripted;
pub mod transport;
pub mod values;

use clap::Parser;
use config::KeySpec;
use exit::Outcome;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use report::Reporter;
use std::ffi::OsString;
use std::time::Instant;

/// Parses `args` (program name first) and runs the command; `start` is when the process
/// started, from which `--deadline` counts. Returns the outcome that sets the exit status.
pub fn run_from(args: impl IntoIterator<Item = OsString>, start: Instant) -> Outcome {
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return clap_error(&e),
    };
    match cli.command {
        Some(cli::Command::Demo) => demo::run(start),
        None => request(&cli.request, start),
    }
}

/// Help and version go to stdout with exit 0; anything else is one usage line (exit 2).
fn clap_error(e: &clap::Error) -> Outcome {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return Outcome::Success;
    }
    let text = e.to_string();
    // clap writes paragraphs: the error, an optional tip, usage, a pointer to --help.
    let mut paragraphs = text.split("\n\n");
    let first = paragraphs.next().unwrap_or("invalid command line");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // A value may itself hold CR or LF; keep the message on one line.
    let first = first.replace('\r', "\\r").replace('\n', "\\n");
    let tip = paragraphs.map(str::trim).find(|p| p.starts_with("tip:"));
    match tip {
        Some(tip) => eprintln!("retry-http: error: {first} ({tip}); see --help"),
        None => eprintln!("retry-http: error: {first}; see --help"),
    }
    Outcome::Usage
}

/// Runs one request with retries.
fn request(args: &cli::RequestArgs, start: Instant) -> Outcome {
    let reporter = Reporter::new(args.log_format, args.silent, args.verbose, args.color);
    let usage = |msg: &str| {
        reporter.error(msg);
        Outcome::Usage
    };
    let cfg = match config::build(args) {
        Ok(c) => c,
        Err(e) => return usage(&e.0),
    };
    let output = match output::Output::prepare(&cfg.output) {
        Ok(o) => o,
        Err(e) => return usage(&e.0),
    };
    let transport = match transport::Transport::new(&cfg.request, &cfg.timeouts) {
        Ok(t) => t,
        Err(e) => return usage(&e.0),
    };
    let payload = match cfg.request.body.as_ref().map(body::load).transpose() {
        Ok(p) => p,
        Err(e) => return usage(&e.0),
    };
    let abort = transport.abort_handle();
    let interrupt = match interrupt::Interrupt::install(move || abort.shutdown()) {
        Ok(i) => i,
        Err(e) => {
            reporter.warn(&format!("cannot install the signal handler: {e}"));
            interrupt::Interrupt::none()
        }
    };
    if cfg.request.insecure {
        reporter.warn("TLS certificate verification is off (-k)");
    }
    let seed = cfg.retry.seed.unwrap_or_else(|| rand::rng().random());
    reporter.detail(&format!(
        "seed {seed} (replay the same waits with --seed {seed})"
    ));
    let mut headers = cfg.request.headers.clone();
    match &cfg.retry.idempotency_key {
        Some(KeySpec::Auto) => {
            let key = uuid::Uuid::new_v4().to_string();
            reporter.info(&format!("Idempotency-Key: {key}"));
            headers.push(("Idempotency-Key".into(), key));
        }
        Some(KeySpec::Given(k))
            if !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("idempotency-key")) =>
        {
            headers.push(("Idempotency-Key".into(), k.clone()));
        }
        _ => {}
    }
    log_request(&reporter, &cfg, &headers);
    let secrets = secrets(&cfg, &headers);
    let run = attempt::Loop {
        cfg: &cfg,
        transport: &transport,
        output: &output,
        payload: payload.as_ref(),
        reporter: &reporter,
        interrupt: &interrupt,
        has_key: cfg.retry.idempotency_key.is_some(),
        headers,
        start,
        secrets,
        partial: Default::default(),
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let ended = run.run(&mut rng);
    reporter.summary(
        ended.outcome,
        ended.attempts_made,
        start.elapsed(),
        seed,
        &ended.last,
    );
    ended.outcome
}

/// `-v`: the request line and headers, secrets masked.
fn log_request(reporter: &Reporter, cfg: &config::Config, headers: &[(String, String)]) {
    if !reporter.verbose() {
        return;
    }
    reporter.detail(&format!(
        "> {} {}",
        cfg.request.method,
        redact::url(&cfg.request.url)
    ));
    for (n, v) in headers {
        reporter.detail(&format!("> {n}: {}", redact::header_value(n, v)));
    }
}

/// Every secret value the user gave, so error texts quoting them can be masked.
fn secrets(cfg: &config::Config, headers: &[(String, String)]) -> Vec<String> {
    let mut s: Vec<String> = headers
        .iter()
        .filter(|(n, _)| redact::is_secret_name(n))
        .map(|(_, v)| v.clone())
        .collect();
    if let Some(p) = cfg.request.url.password() {
        s.push(p.to_string());
    }
    s
}
