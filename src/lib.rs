//! retry-http: an HTTP client for scripts, cron jobs and CI that retries transient
//! failures without making an outage worse. This file wires the modules together:
//! flags -> configuration -> attempt loop (policy + transport) -> output/report -> outcome.

pub mod attempt;
pub mod body;
pub mod cli;
pub mod config;
pub mod demo;
pub mod exit;
pub mod explain;
pub mod interrupt;
pub mod output;
pub mod policy;
pub mod proxy;
pub mod redact;
pub mod report;
pub mod resume;
pub mod retry_after;
pub mod scripted;
pub mod shared;
pub mod simulate;
pub mod simulate_report;
pub mod state;
pub mod transport;
pub mod values;
pub mod write_out;

use clap::Parser;
use config::KeySpec;
use exit::Outcome;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use report::Reporter;
use std::ffi::OsString;
use std::io::Write;
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
        Some(cli::Command::Simulate(args)) => simulate_report::run(&args),
        None => request(&cli.request, start),
    }
}

/// Help and version go to stdout with exit 0; anything else is one usage line (exit 2).
fn clap_error(e: &clap::Error) -> Outcome {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return Outcome::Success;
    }
    let mut text = e.to_string();
    // clap quotes the rejected value: a header's secret must not be printed.
    if let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) && arg.starts_with("--header")
    {
        text = text.replace(value.as_str(), &redact::header_arg(value));
    }
    // clap writes paragraphs: the error, an optional tip, usage, a pointer to --help.
    let mut paragraphs = text.split("\n\n");
    let first = paragraphs.next().unwrap_or("invalid command line");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // A value may itself hold CR or LF; keep the message on one line.
    let first = first.replace('\r', "\\r").replace('\n', "\\n");
    let first = match env_source(e) {
        Some(var) => format!("{first} (the value comes from ${var})"),
        None => first,
    };
    let tip = paragraphs.map(str::trim).find(|p| p.starts_with("tip:"));
    match tip {
        Some(tip) => eprintln!("retry-http: error: {first} ({tip}); see --help"),
        None => eprintln!("retry-http: error: {first}; see --help"),
    }
    Outcome::Usage
}

/// The `RETRY_HTTP_*` variable a bad value came from, if it came from one.
fn env_source(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) else {
        return None;
    };
    let flag = arg.strip_prefix("--")?.split([' ', '=']).next()?;
    let var = format!("RETRY_HTTP_{}", flag.to_ascii_uppercase().replace('-', "_"));
    (std::env::var(&var).ok().as_deref() == Some(value.as_str())).then_some(var)
}

/// Runs one request with retries.
fn request(args: &cli::RequestArgs, start: Instant) -> Outcome {
    let reporter = Reporter::new(args.log_format, args.silent, args.verbose, args.color);
    let usage = |msg: &str| {
        reporter.error(msg);
        Outcome::Usage
    };
    let mut cfg = match config::build(args) {
        Ok(c) => c,
        Err(e) => return usage(&e.0),
    };
    if cfg.explain {
        print!("{}", explain::explain(&cfg));
        return Outcome::Success;
    }
    let write_out = match cfg
        .output
        .write_out
        .as_deref()
        .map(read_write_out)
        .transpose()
    {
        Ok(w) => w,
        Err(e) => return usage(&e),
    };
    let output = match output::Output::prepare(&cfg.output) {
        Ok(o) => o,
        Err(e) => return usage(&e.0),
    };
    let transport = match transport::Transport::new(&cfg.request, &cfg.timeouts) {
        Ok(t) => t,
        Err(e) => return usage(&e.0),
    };
    let left = cfg
        .retry
        .deadline
        .map(|d| d.saturating_sub(start.elapsed()));
    let payload = match cfg
        .request
        .body
        .as_ref()
        .map(|b| body::load_within(b, left))
        .transpose()
    {
        Ok(p) => p,
        Err(body::LoadError::Unreadable(e)) => return usage(&e.0),
        Err(body::LoadError::Deadline) => {
            reporter.error(
                "the deadline passed while the request body was still being read; nothing was sent",
            );
            reporter.summary(Outcome::Deadline, 0, start.elapsed(), 0, "not sent");
            return Outcome::Deadline;
        }
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
    let shared = match &cfg.state {
        Some((path, limits)) => match shared::Shared::admit(
            path,
            *limits,
            probe_lease(&cfg),
            &cfg.request.url,
            &reporter,
        ) {
            Ok(s) => s,
            Err(refused) => {
                reporter.summary(refused, 0, start.elapsed(), seed, "not sent");
                return refused;
            }
        },
        None => None,
    };
    if shared.as_ref().is_some_and(|s| s.probe) {
        cfg.retry.attempts = 1;
    }
    let gate = || shared.as_ref().map_or(Ok(()), |s| s.take_retry());
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
        last_head: Default::default(),
        delivered: Default::default(),
        retry_gate: Some(&gate),
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let ended = run.run(&mut rng);
    let head = run.last_head.borrow().clone();
    let mut outcome = ended.outcome;
    if let (Some(path), Some(head)) = (&cfg.output.dump_header, &head)
        && let Err(e) = dump_header(path, head)
    {
        reporter.error(&format!("cannot write -D {}: {e}", path.display()));
        outcome = Outcome::Local;
    }
    if let Some(s) = &shared {
        s.finish(outcome);
    }
    reporter.summary(
        outcome,
        ended.attempts_made,
        start.elapsed(),
        seed,
        &ended.last,
    );
    if let Some(format) = write_out {
        let vars = write_out::Vars {
            http_code: head.as_ref().map(|h| h.status),
            num_retries: ended.attempts_made.saturating_sub(1),
            time_total: start.elapsed(),
            url_effective: head
                .as_ref()
                .map_or_else(|| cfg.request.url.to_string(), |h| h.url.to_string()),
            exitcode: outcome.code(),
            size_download: run.delivered.get(),
        };
        let (text, unknown) = write_out::render(&format, &vars);
        for name in unknown {
            reporter.warn(&format!("unknown --write-out variable %{{{name}}}"));
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    }
    outcome
}

/// `-w @FILE` reads the format from a file (`@-`: stdin), as curl does.
fn read_write_out(arg: &str) -> Result<String, String> {
    match arg.strip_prefix('@') {
        Some("-") => std::io::read_to_string(std::io::stdin())
            .map_err(|e| format!("cannot read -w from stdin: {e}")),
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| format!("cannot read -w file {path}: {e}"))
        }
        None => Ok(arg.to_string()),
    }
}

/// `-D FILE`: the final response's status line and headers (`-`: stdout).
fn dump_header(path: &std::path::Path, head: &transport::Head) -> std::io::Result<()> {
    let text = output::head_text(head);
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        return out.flush();
    }
    std::fs::write(path, text)
}

/// How long a half-open circuit's probe may take: its deadline, else its attempt timeout,
/// else a minute (a probe that outlives its lease lets another run probe).
fn probe_lease(cfg: &config::Config) -> std::time::Duration {
    cfg.retry
        .deadline
        .or(cfg.timeouts.attempt)
        .unwrap_or(std::time::Duration::from_secs(60))
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
