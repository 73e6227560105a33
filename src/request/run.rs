//! One request run. `prepare` does everything that can fail before a byte is sent (so a
//! usage error sends nothing); `execute` installs the signal handler, consults the shared
//! state and runs the attempt loop; `finish` writes `-D`, records the run in the state file,
//! prints the summary and `-w`.

use crate::cli::RequestArgs;
use crate::config::{self, Config, KeySpec};
use crate::exit::Outcome;
use crate::files;
use crate::fleet::admission::{Admitted, Shared};
use crate::http::body::{self, Payload};
use crate::http::timing::Timeline;
use crate::http::transport::{self, Transport};
use crate::output::{self, Output};
use crate::policy::decision;
use crate::process::deadline::{self, LastWords, Watchdog};
use crate::process::interrupt;
use crate::redact;
use crate::report::{self, Reporter};
use crate::request::attempt::{Ended, Loop};
use crate::request::cron::{self, Conditions};
use crate::request::{explain, write_out};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::io::Write;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Runs one request with retries; `start` is when the process started.
pub fn request(args: &RequestArgs, start: Instant) -> Outcome {
    let reporter = Reporter::new(crate::config::log::of(args));
    match prepare(args, &reporter, start) {
        Ok(prepared) => {
            let watchdog = prepared.watchdog.clone();
            let outcome = execute(prepared, &reporter, start);
            // The summary is written: nothing is left for the watchdog to bound.
            watchdog.done();
            outcome
        }
        Err(outcome) => outcome,
    }
}

/// Everything checked and loaded before the first attempt.
struct Prepared {
    cfg: Config,
    seed: u64,
    watchdog: Watchdog,
    interrupt: interrupt::Interrupt,
    write_out: Option<String>,
    output: Output,
    transport: Transport,
    payload: Option<Payload>,
    cron: Conditions,
}

/// Validates flags and files and reads the body. `Err` is the outcome to exit with (usage
/// errors, the deadline passing while stdin is read, or `--explain`'s success).
fn prepare(args: &RequestArgs, reporter: &Reporter, start: Instant) -> Result<Prepared, Outcome> {
    let mut cfg = match config::build(args) {
        Ok(cfg) => cfg,
        Err(mut e) => {
            if args.config_file.from_file {
                // A value from a -K file may be a secret: it is not quoted back.
                e.0 = crate::cli::config_file::unquoted(&e.0);
            }
            // No watchdog yet: the lines below are bounded all the same.
            let deadline = args.policy.deadline.filter(|d| !d.is_zero());
            deadline::bound_usage_error(deadline.map(|d| start + d));
            reporter.error(&e.0);
            let why = Some(e.0.as_str());
            reporter.summary(Outcome::Usage, 0, start.elapsed(), 0, "nothing sent", why);
            return Err(Outcome::Usage);
        }
    };
    let seed = cfg.retry.seed.unwrap_or_else(|| rand::rng().random());
    // The deadline is kept from here on: reading a -w file, a --cacert or the body may
    // block (a FIFO, a pipe that never closes) as much as the network can.
    let agent = Arc::new(OnceLock::new());
    let watchdog = start_watchdog(&cfg, agent.clone(), reporter, start, seed);
    let interrupt = install_interrupt(&watchdog, agent.clone(), reporter, start, seed);
    let ends = Ends {
        watchdog: &watchdog,
        reporter,
        start,
        unquote: args.config_file.from_file,
    };
    // The netrc file is read here, within the deadline, like the other files.
    if cfg.request.network.netrc.is_some() {
        ends.reading("the netrc file");
    }
    crate::http::netrc::apply(&mut cfg.request).map_err(|e| ends.usage(&e))?;
    let (write_out, output, transport) = open_inputs(&cfg, &ends)?;
    let _ = agent.set(transport.abort_handle());
    if cfg.conditional.etag_compare.is_some() || !cfg.conditional.cookie_files.is_empty() {
        ends.reading("a -b or --etag-compare file");
    }
    let cron = cron::prepare(&cfg).map_err(|e| ends.usage(&e))?;
    for w in &cron.warnings {
        reporter.warn(w);
    }
    if let Some(mapped) = cfg.retry.curl.as_deref().filter(|_| !cfg.explain) {
        // One line, once (not under -s); --explain shows it with the policy instead.
        reporter.info(&format!("curl's retry flags, as this tool's: {mapped}"));
    }
    if cfg.explain {
        // After every check, so --explain answers what the run would do, usage errors too.
        return Err(ends.explain(&cfg));
    }
    if cfg.request.body.is_some() || cfg.request.get_data.is_some() {
        ends.reading("the request body");
    }
    let payload = load_body(cfg.request.body.as_ref(), None, &cfg, &ends)?;
    let query = load_body(cfg.request.get_data.as_ref(), Some(MAX_QUERY), &cfg, &ends)?;
    if let Some(data) = query {
        query_from(data, &mut cfg).map_err(|e| ends.usage(&e))?;
        // -G's data entered the URL: its secret parameters are secrets from here on.
        redact::mark_url(cfg.request.url.as_str());
    }
    watchdog.note_last("no attempt made");
    Ok(Prepared {
        cfg,
        seed,
        watchdog,
        interrupt,
        write_out,
        output,
        transport,
        payload,
        cron,
    })
}

/// What a run that ends before its first attempt needs to say so.
struct Ends<'a> {
    watchdog: &'a Watchdog,
    reporter: &'a Reporter,
    start: Instant,
    /// Flags came from a `-K` file: values are not quoted back in errors.
    unquote: bool,
}

impl Ends<'_> {
    /// Notes that `what` (an input file: a FIFO or a pipe may block) is being read, so that
    /// a deadline that passes meanwhile says so ("nothing sent: ... was still being read").
    fn reading(&self, what: &str) {
        self.watchdog
            .note_last(&format!("nothing sent: {what} was still being read"));
    }

    /// A usage error found once the deadline is kept: exit 2, nothing sent.
    fn usage(&self, msg: &str) -> Outcome {
        let unquoted;
        let msg = if self.unquote {
            unquoted = crate::cli::config_file::unquoted(msg);
            unquoted.as_str()
        } else {
            msg
        };
        self.last_words(Outcome::Usage);
        self.reporter.error(msg);
        let elapsed = self.start.elapsed();
        self.reporter
            .summary(Outcome::Usage, 0, elapsed, 0, "nothing sent", Some(msg));
        self.watchdog.done();
        Outcome::Usage
    }

    /// The run settles on `outcome` before its last words, which stay bounded: by the
    /// watchdog when there is a deadline, and for a usage error without one by
    /// [`deadline::USAGE_WORDS`].
    fn last_words(&self, outcome: Outcome) {
        self.watchdog.claim(outcome.code());
        if outcome == Outcome::Usage && !self.watchdog.keeps_a_deadline() {
            deadline::bound_usage_error(None);
        }
    }

    /// `--explain`: the policy on stdout instead of a request; exit 0 (1 when stdout
    /// cannot be written). The policy is output the user asked for, like a body: written
    /// before the run claims its ending, so a reader that does not take it by the deadline
    /// ends the run with exit 5.
    fn explain(&self, cfg: &Config) -> Outcome {
        let text = redact::marked(&explain::explain(cfg));
        let (outcome, why) = match output::print_stdout(&text) {
            Ok(()) => (Outcome::Success, None),
            Err(e) => (Outcome::Local, Some(e)),
        };
        self.last_words(outcome);
        if let Some(e) = &why {
            self.reporter.error(e);
        }
        let shown = cfg.retry.seed.unwrap_or(0);
        let elapsed = self.start.elapsed();
        self.reporter
            .summary(outcome, 0, elapsed, shown, "nothing sent", why.as_deref());
        self.watchdog.done();
        outcome
    }
}

/// Signals too: reading the inputs may block, and a signal must still end the run with
/// its summary. A signal stops anything from being put in place, then the exchange.
fn install_interrupt(
    watchdog: &Watchdog,
    agent: Arc<OnceLock<ureq::Agent>>,
    reporter: &Reporter,
    start: Instant,
    seed: u64,
) -> interrupt::Interrupt {
    let stopper = watchdog.clone();
    interrupt::Interrupt::install(
        move || {
            stopper.stop();
            if let Some(a) = agent.get() {
                a.clone().shutdown();
            }
        },
        forced_summary(watchdog, reporter, start, seed),
    )
    .unwrap_or_else(|e| {
        reporter.warn(&format!("cannot install the signal handler: {e}"));
        interrupt::Interrupt::none()
    })
}

/// The `-w` format, the output, the `-D` file and the transport (which reads `--cacert`):
/// each may be a usage error, found before anything is sent.
fn open_inputs(cfg: &Config, ends: &Ends) -> Result<(Option<String>, Output, Transport), Outcome> {
    if let Some(file) = cfg
        .output
        .write_out
        .as_deref()
        .filter(|w| w.starts_with('@'))
    {
        ends.reading(&format!("-w {file}"));
    }
    let write_out = cfg
        .output
        .write_out
        .as_deref()
        .map(read_write_out)
        .transpose()
        .map_err(|e| ends.usage(&e))?;
    let output = Output::prepare(&cfg.output).map_err(|e| ends.usage(&e.0))?;
    if let Some(d) = &cfg.output.dump_header {
        output::check_dump_header(d).map_err(|e| ends.usage(&e.0))?;
    }
    other_files(cfg).map_err(|e| ends.usage(&e))?;
    if cfg.request.cacert.is_some() || cfg.request.network.client_cert.is_some() {
        ends.reading("a --cacert, --cert or --key file");
    }
    let transport = Transport::new(&cfg.request, &cfg.timeouts).map_err(|e| ends.usage(&e.0))?;
    Ok((write_out, output, transport))
}

/// The most `-G` data may hold once encoded (bytes): a longer URL is no URL a server reads.
const MAX_QUERY: u64 = 1 << 20;

/// What a `-G` query over [`MAX_QUERY`] is told (where the part that outgrew it is known,
/// it is named: see `load_body`).
const QUERY_TOO_LONG: &str = "-G: the data is over 1 MiB, too long for a URL: send it as a body";

/// `-G` data read from files or stdin, appended to the URL's query (at most
/// [`MAX_QUERY`], checked while it is read).
fn query_from(data: Payload, cfg: &mut Config) -> Result<(), String> {
    let Payload::Memory(bytes) = data else {
        return Err(QUERY_TOO_LONG.into());
    };
    config::append_query(&mut cfg.request.url, &bytes);
    Ok(())
}

/// The other paths the run writes or connects to, checked before anything is sent:
/// `--etag-save` can be written and is a regular file (it is replaced by rename), no two of
/// `-o`, `-D` and `--etag-save` are one file, the output is none of the files the body is
/// read from, and `--unix-socket` names a socket (or nothing yet: a daemon that is
/// starting; that is retried as refused).
fn other_files(cfg: &Config) -> Result<(), String> {
    use std::path::Path;
    if let Some(path) = &cfg.conditional.etag_save {
        let flag = format!("--etag-save {}", path.display());
        files::check_writable(path, &flag)?;
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(format!(
                "{flag} is not a regular file: it is replaced by a new file, so give a file path"
            ));
        }
    }
    let state_file = match cfg.state.as_ref().map(|s| &s.location) {
        Some(crate::fleet::store::Location::File(p)) => Some(p.as_path()),
        _ => None,
    };
    let written: Vec<(&str, &Path)> = [
        ("-o", cfg.output.path.as_deref()),
        ("-D", cfg.output.dump_header.as_deref()),
        ("--etag-save", cfg.conditional.etag_save.as_deref()),
        ("--state", state_file),
    ]
    .into_iter()
    .filter_map(|(flag, p)| p.filter(|p| p.as_os_str() != "-").map(|p| (flag, p)))
    .collect();
    for (i, (a, pa)) in written.iter().enumerate() {
        if let Some((b, pb)) = written[i + 1..]
            .iter()
            .find(|(_, pb)| files::same_file(pa, pb))
        {
            return Err(format!(
                "{a} {} and {b} {} are the same file: give each its own path",
                pa.display(),
                pb.display()
            ));
        }
    }
    if let Some(out) = cfg.output.path.as_deref().filter(|p| p.as_os_str() != "-")
        && body_files(cfg).any(|r| files::same_file(r, out))
    {
        return Err(format!(
            "the output file {} is the file the body is read from: give -o another path",
            out.display()
        ));
    }
    if let Some(socket) = &cfg.request.network.unix_socket {
        check_socket(socket)?;
    }
    if let Some(ca) = cfg.state.as_ref().and_then(|s| s.cacert.as_deref()) {
        let meta = std::fs::metadata(ca)
            .map_err(|e| format!("cannot read --state-cacert {}: {e}", ca.display()))?;
        if !meta.is_file() {
            return Err(format!(
                "--state-cacert {} is not a regular file: give a PEM file of CA certificates",
                ca.display()
            ));
        }
    }
    Ok(())
}

/// The files the request body (or `-G` data) is read from.
fn body_files(cfg: &Config) -> impl Iterator<Item = &std::path::Path> {
    [cfg.request.body.as_ref(), cfg.request.get_data.as_ref()]
        .into_iter()
        .flatten()
        .flat_map(|spec| &spec.parts)
        .filter_map(|part| match part {
            config::BodySource::File { path, .. } => Some(path.as_path()),
            config::BodySource::Encoded { file, .. } => file.as_deref(),
            _ => None,
        })
}

/// `--unix-socket PATH`: a path the kernel can take (at most 107 bytes), and, if something
/// is there already, a socket.
fn check_socket(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    if path.as_os_str().len() > 107 {
        return Err(format!(
            "--unix-socket {}: a socket path is at most 107 bytes: use a shorter path (or a link to it)",
            path.display()
        ));
    }
    match std::fs::metadata(path) {
        Ok(m) if !m.file_type().is_socket() => Err(format!(
            "--unix-socket {} is not a socket: expected the path of a listening Unix socket",
            path.display()
        )),
        _ => Ok(()),
    }
}

/// Reads a request body (or `-G` data, whose `limit` is [`MAX_QUERY`]) once, within the
/// deadline; a source that outgrows `limit` is a usage error found while reading it.
fn load_body(
    spec: Option<&config::BodySpec>,
    limit: Option<u64>,
    cfg: &Config,
    ends: &Ends,
) -> Result<Option<Payload>, Outcome> {
    let left = cfg
        .retry
        .deadline
        .map(|d| d.saturating_sub(ends.start.elapsed()));
    match spec.map(|b| body::load_within(b, left, limit)).transpose() {
        Ok(p) => Ok(p),
        Err(body::LoadError::Unreadable(e)) => Err(ends.usage(&e.0)),
        Err(body::LoadError::TooLarge(source)) => Err(ends.usage(&format!(
            "{QUERY_TOO_LONG} (reading {source} stopped there)"
        ))),
        Err(body::LoadError::Deadline) => {
            ends.last_words(Outcome::Deadline);
            let why = "nothing sent: the request body was still being read";
            let elapsed = ends.start.elapsed();
            ends.reporter
                .summary(Outcome::Deadline, 0, elapsed, 0, why, Some(why));
            ends.watchdog.done();
            Err(Outcome::Deadline)
        }
    }
}

/// The headers of every attempt: the configured ones plus the Idempotency-Key (the
/// transport adds its automatic ones to each request: see `Transport::automatic_headers`).
fn request_headers(cfg: &Config, reporter: &Reporter) -> Vec<(String, String)> {
    let mut headers = cfg.request.headers.clone();
    let has_key = headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"));
    match &cfg.retry.idempotency_key {
        Some(KeySpec::Auto) => {
            // Random on purpose, never derived from --seed: two runs must not share a key.
            let key = uuid::Uuid::new_v4().to_string();
            reporter.info(&format!("Idempotency-Key: {key}"));
            headers.push(("Idempotency-Key".into(), key));
        }
        Some(KeySpec::Given(k)) if !has_key => headers.push(("Idempotency-Key".into(), k.clone())),
        _ => {}
    }
    if cfg.retry.idempotency_key.is_some()
        && let Some((_, key)) = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"))
    {
        // The summary names it: a run that fails can be resubmitted by hand with it.
        reporter.name_key(key);
    }
    headers
}

/// Runs the attempts and finishes.
fn execute(p: Prepared, reporter: &Reporter, start: Instant) -> Outcome {
    let Prepared {
        cfg,
        seed,
        watchdog,
        interrupt,
        write_out,
        output,
        transport,
        payload,
        cron,
    } = p;
    if cfg.request.insecure {
        reporter.warn("TLS certificate verification is off (-k)");
    }
    reporter.detail(&format!(
        "seed {seed} (replay the same waits with --seed {seed})"
    ));
    let mut headers = request_headers(&cfg, reporter);
    headers.extend(cron.headers.iter().cloned());
    let (shared, hold) = match admit(&cfg, reporter, start) {
        Ok(admitted) => (admitted.shared, admitted.hold),
        Err(why) => {
            let ends = (seed, write_out.as_deref(), start);
            return refused_before_sending(&cfg, (reporter, &watchdog), &cron, &why, ends);
        }
    };
    log_request(reporter, &cfg, &headers, &transport);
    let run = Loop {
        cfg: &cfg,
        transport: &transport,
        output: &output,
        payload: payload.as_ref(),
        reporter,
        interrupt: &interrupt,
        has_key: cfg.retry.idempotency_key.is_some(),
        headers,
        start,
        shared: shared
            .as_ref()
            .map(|s| s as &dyn crate::fleet::admission::Between),
        hold,
        watchdog: &watchdog,
        cron: &cron,
    };
    let ended = run.run(&mut StdRng::seed_from_u64(seed));
    finish(
        &cfg,
        reporter,
        shared.as_ref(),
        &cron,
        ended,
        (seed, write_out.as_deref()),
        (start, &watchdog),
    )
}

/// A run that `--state` refused before anything was sent (exit 7, `why`): `-w` is still
/// written, as after any other ending (so `%{state}` tells a script why), then the summary.
fn refused_before_sending(
    cfg: &Config,
    (reporter, watchdog): (&Reporter, &Watchdog),
    cron: &Conditions,
    why: &str,
    (seed, write_out, start): (u64, Option<&str>, Instant),
) -> Outcome {
    let mut outcome = Outcome::Refused;
    let ended = Ended {
        outcome,
        attempts_made: 0,
        last: why.to_string(),
        why: Some(why.to_string()),
        head: None,
        delivered: 0,
        timeline: Timeline::default(),
        connects: 0,
        redirects: 0,
        method: None,
        uploaded: 0,
        referer: None,
        head_dumped: false,
        status: None,
        hint: None,
    };
    let mut reason = why.to_string();
    if let Some(format) = write_out
        && let Err(e) =
            print_write_out(format, (cfg, cron), reporter, &ended, (outcome, start, why))
    {
        reporter.error(&e);
        reason = e;
        outcome = Outcome::Local;
    }
    // Settled: only the summary is left, and a summary stderr does not take ends the run
    // with this outcome's code (see `Watchdog::claim`).
    watchdog.claim(outcome.code());
    let elapsed = start.elapsed();
    reporter.summary(outcome, 0, elapsed, seed, why, Some(&reason));
    outcome
}

/// With `--state`, asks the circuit breaker and the shared Retry-After whether this run may
/// go (`Err`: refused, exit 7, and why).
fn admit<'r>(cfg: &Config, reporter: &'r Reporter, start: Instant) -> Result<Admitted<'r>, String> {
    let Some(settings) = &cfg.state else {
        return Ok(Admitted {
            shared: None,
            hold: None,
        });
    };
    let deadline = cfg.retry.deadline.map(|d| start + d);
    Shared::admit(
        settings,
        probe_lease(cfg),
        (&cfg.request.url, cfg.request.network.unix_socket.as_deref()),
        reporter,
        deadline,
    )
}

/// With a `--deadline`, the watchdog that keeps it (see `deadline`): it aborts the exchange
/// in flight at the deadline, and ends the process itself if the run does not.
fn start_watchdog(
    cfg: &Config,
    agent: Arc<OnceLock<ureq::Agent>>,
    reporter: &Reporter,
    start: Instant,
    seed: u64,
) -> Watchdog {
    let Some(d) = cfg.retry.deadline else {
        return Watchdog::none();
    };
    let format = reporter.format();
    let key = reporter.key_handle();
    let state = reporter.state_handle();
    Watchdog::start(
        start + d,
        LastWords {
            // The agent exists once the transport is built; before that nothing is in flight.
            abort: Box::new(move || {
                if let Some(a) = agent.get() {
                    a.clone().shutdown();
                }
            }),
            summary: Box::new(move |n, last, outcome| {
                report::forced_summary(
                    format,
                    outcome,
                    (n, start.elapsed(), seed),
                    last,
                    "stopping: the deadline passed",
                    (key.get().map(String::as_str), Reporter::state_of(&state)),
                )
            }),
            end: deadline::exit_now(),
        },
    )
}

/// What the signal handler writes when it must end the run itself: the summary, unless
/// the run has claimed its ending (then the run writes it) or the watchdog is ending it.
fn forced_summary(
    watchdog: &Watchdog,
    reporter: &Reporter,
    start: Instant,
    seed: u64,
) -> impl FnOnce(interrupt::Signal) + Send + 'static {
    let watchdog = watchdog.clone();
    let format = reporter.format();
    let key = reporter.key_handle();
    let state = reporter.state_handle();
    move |sig| {
        let Some((n, last)) = watchdog.take_over() else {
            return;
        };
        let outcome = sig.outcome();
        let line = report::forced_summary(
            format,
            outcome,
            (n, start.elapsed(), seed),
            &last,
            "stopping: interrupted",
            (key.get().map(String::as_str), Reporter::state_of(&state)),
        );
        deadline::last_line(&line);
    }
}

/// `-D`, `--etag-save`, the state file, `-w`, then the summary line. The deadline still holds over the
/// first four (a `-D` FIFO nobody reads, a reader of stdout that stopped: exit 5); the run
/// claims its ending for the summary, which the watchdog still bounds (a stuck summary
/// ends the run with its own outcome's code).
fn finish(
    cfg: &Config,
    reporter: &Reporter,
    shared: Option<&Shared>,
    cron: &Conditions,
    mut ended: Ended,
    (seed, write_out): (u64, Option<&str>),
    (start, watchdog): (Instant, &Watchdog),
) -> Outcome {
    let outcome = decision::at_the_end(ended.outcome, watchdog.expired());
    if outcome != ended.outcome {
        ended.outcome = outcome;
        ended.why = Some(decision::DEADLINE_DURING.into());
    }
    let (mut outcome, mut reason) = write_files(cfg, reporter, cron, &ended);
    if let Some(s) = shared {
        let last = ended.status.map(|status| (status, ended.hint));
        s.finish(outcome, last);
    }
    if let Some(format) = write_out
        && let Err(e) = print_write_out(
            format,
            (cfg, cron),
            reporter,
            &ended,
            (outcome, start, &reason),
        )
    {
        // Like -D: output the user asked for that cannot be written is a local failure.
        reporter.error(&e);
        reason = e;
        outcome = Outcome::Local;
    }
    // From here the run ends itself (if the watchdog is ending it, this never returns);
    // the watchdog still bounds the summary, and ends a run stuck on it with `outcome`.
    watchdog.claim(outcome.code());
    reporter.summary(
        outcome,
        ended.attempts_made,
        start.elapsed(),
        seed,
        &ended.last,
        Some(&reason),
    );
    outcome
}

/// Why the run stopped, for the summary (what the last attempt's line said, else what the
/// outcome means), after `-D` and `--etag-save` are written: a file that cannot be written
/// is a local failure (exit 1), and the reason then says which.
fn write_files(
    cfg: &Config,
    reporter: &Reporter,
    cron: &Conditions,
    ended: &Ended,
) -> (Outcome, String) {
    let mut outcome = ended.outcome;
    let mut reason = ended.why.clone().unwrap_or_else(|| match outcome {
        Outcome::Deadline => "stopping: the deadline passed before the next attempt".into(),
        Outcome::Interrupted => "stopping: interrupted".into(),
        Outcome::Terminated => "stopping: terminated".into(),
        other => other.meaning().into(),
    });
    if let (Some(path), Some(head)) = (&cfg.output.dump_header, &ended.head)
        && !ended.head_dumped
        && let Err(e) = dump_header(path, head)
        // `-D -` to a reader that went away ends quietly, as the body does.
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        reason = format!("cannot write -D {}: {e}", path.display());
        reporter.error(&reason);
        outcome = Outcome::Local;
    }
    if outcome == Outcome::Success
        && let Err(e) = cron.save(cfg.conditional.etag_save.as_deref(), ended.head.as_ref())
    {
        reporter.error(&e);
        reason = e;
        outcome = Outcome::Local;
    }
    (outcome, reason)
}

/// `-w`: the format filled in and written on stdout (after `%{stderr}`, on stderr),
/// quietly if its reader went away; `Err` when it cannot be written otherwise. An unknown
/// variable is dropped with curl's warning.
fn print_write_out(
    format: &str,
    (cfg, cron): (&Config, &Conditions),
    reporter: &Reporter,
    ended: &Ended,
    (outcome, start, reason): (Outcome, Instant, &str),
) -> Result<(), String> {
    let mut vars = write_out_vars(cfg, cron, ended, (outcome, reason));
    vars.time_total = start.elapsed();
    vars.idempotency_key = reporter.key_handle().get().cloned();
    vars.state = reporter.state();
    let rendered = write_out::render(format, &vars);
    for name in rendered.unknown {
        reporter.notice(&format!("unknown --write-out variable: '{name}'"));
    }
    // stdout is the user's own output, as the body is: what the server sent (a Set-Cookie,
    // a Location) is shown as asked, but no secret the user gave (see `redact::mark`).
    // stderr is a log, where no secret goes: what follows %{stderr} is rendered from masked
    // values.
    let masked = write_out::render(format, &masked_for_stderr(&vars)).parts;
    for ((stream, text), (_, shown)) in rendered.parts.into_iter().zip(masked) {
        match stream {
            write_out::Stream::Stdout => output::print_stdout(&redact::marked(&text))?,
            write_out::Stream::Stderr => reporter.write_out(&shown)?,
        }
    }
    Ok(())
}

/// `-w`'s values from how the run ended (`time_total` and the key are the caller's).
fn write_out_vars(
    cfg: &Config,
    cron: &Conditions,
    ended: &Ended,
    (outcome, reason): (Outcome, &str),
) -> write_out::Vars {
    let head = ended.head.as_ref();
    write_out::Vars {
        http_code: head.map(|h| cron.reported_status(h)),
        num_retries: ended.attempts_made.saturating_sub(1),
        url_effective: head.map_or_else(|| cfg.request.url.to_string(), |h| h.url.to_string()),
        url: cfg.request.url.to_string(),
        exitcode: outcome.code(),
        size_download: ended.delivered,
        method: ended
            .method
            .clone()
            .unwrap_or_else(|| cfg.request.method.clone()),
        headers: head.map(|h| h.headers.clone()).unwrap_or_default(),
        http_version: head.map(|h| h.version.clone()),
        times: times(&ended.timeline),
        num_connects: ended.connects,
        num_redirects: ended.redirects,
        remote: ended.timeline.peer,
        errormsg: (outcome != Outcome::Success).then(|| match ended.last.as_str() {
            last if last == reason || ended.attempts_made == 0 => reason.to_string(),
            last => format!("{reason} (last: {last})"),
        }),
        filename_effective: cfg
            .output
            .path
            .as_ref()
            .filter(|p| p.as_os_str() != "-")
            .map(|p| p.display().to_string()),
        redirect_url: head.and_then(redirect_url),
        size_upload: ended.uploaded,
        referer: ended.referer.clone(),
        size_header: head.map_or(0, |h| output::head_text(h).len() as u64),
        ..write_out::Vars::default()
    }
}

/// Where `head` would have redirected: a 3xx's Location made absolute against the URL
/// that answered (curl's `%{redirect_url}` for a redirect it did not follow).
fn redirect_url(head: &transport::Head) -> Option<String> {
    if !(300..400).contains(&head.status) {
        return None;
    }
    let location = head.value("location")?.trim();
    head.url.join(location).ok().map(|u| u.to_string())
}

/// `-w`'s values as stderr may show them: URLs with their passwords and secret parameters
/// masked, header values masked by their names (see `redact`).
fn masked_for_stderr(vars: &write_out::Vars) -> write_out::Vars {
    write_out::Vars {
        url: redact::url_text(&vars.url),
        url_effective: redact::url_text(&vars.url_effective),
        redirect_url: vars.redirect_url.as_deref().map(redact::url_text),
        referer: vars.referer.as_deref().map(redact::url_text),
        headers: vars
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), redact::header_value(n, v)))
            .collect(),
        ..vars.clone()
    }
}

/// The last attempt's moments for `-w`, each from the attempt's start (zero for a step
/// that did not happen); the steps are its last hop's.
fn times(t: &Timeline) -> write_out::Times {
    let since = |at: Option<Instant>| match (t.begun, at) {
        (Some(b), Some(a)) => a.saturating_duration_since(b),
        _ => std::time::Duration::ZERO,
    };
    write_out::Times {
        namelookup: since(t.looked_up),
        connect: since(t.connected),
        appconnect: since(t.secured),
        pretransfer: since(t.ready),
        starttransfer: since(t.head),
        redirect: if t.redirects > 0 {
            since(t.hop_begun)
        } else {
            std::time::Duration::ZERO
        },
    }
}

/// The most `-w @FILE` reads: a format is a line or two, and `/dev/zero` must not fill
/// the memory.
const MAX_WRITE_OUT: u64 = 1 << 20;

/// `-w @FILE` reads the format from a file (`@-`: stdin), as curl does, at most
/// [`MAX_WRITE_OUT`] bytes of it, its lines joined as curl joins them ([`join_lines`]).
fn read_write_out(arg: &str) -> Result<String, String> {
    use std::io::Read;
    let read = |r: &mut dyn Read, what: &str| {
        let bytes = files::read_bounded(r, MAX_WRITE_OUT)
            .map_err(|e| format!("cannot read -w {what}: {e}"))?
            .ok_or_else(|| format!("-w {what} is larger than 1 MiB: expected a format"))?;
        String::from_utf8(bytes)
            .map(|text| join_lines(&text))
            .map_err(|_| format!("-w {what} is not UTF-8 text"))
    };
    match arg.strip_prefix('@') {
        Some("-") => read(&mut std::io::stdin(), "from stdin"),
        Some(path) => {
            let mut f = std::fs::File::open(path)
                .map_err(|e| format!("cannot read -w file {path}: {e}"))?;
            read(&mut f, &format!("file {path}"))
        }
        None => Ok(arg.to_string()),
    }
}

/// A `-w` file's text as curl 7.88 reads it: the lines are joined with nothing between
/// them, each cut at its first CR (so a final newline, CRLF line ends and blank lines
/// vanish; spaces and tabs stay). A newline in the output is written as `\n` in the
/// format. (curl reads the file in pieces of 255 bytes and cuts each piece at its first CR
/// or LF, so in a longer line a CR loses less there than here.)
fn join_lines(text: &str) -> String {
    text.split('\n')
        .map(|line| line.split('\r').next().unwrap_or(""))
        .collect()
}

/// `-D FILE`: the final response's status line and headers (`-`: stdout).
fn dump_header(path: &std::path::Path, head: &transport::Head) -> std::io::Result<()> {
    let text = output::head_text(head);
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(&text)?;
        return out.flush();
    }
    std::fs::write(path, text)
}

/// How long a half-open circuit's probe may take: its deadline, else its attempt timeout,
/// else a minute (a probe that outlives its lease lets another run probe).
fn probe_lease(cfg: &Config) -> std::time::Duration {
    cfg.retry
        .deadline
        .or(cfg.timeouts.attempt)
        .unwrap_or(std::time::Duration::from_secs(60))
}

/// `-v`: the request line and headers, secrets masked, then the automatic ones the
/// transport adds to them (as it says: see `Transport::automatic_headers`).
fn log_request(
    reporter: &Reporter,
    cfg: &Config,
    headers: &[(String, String)],
    transport: &Transport,
) {
    if !reporter.verbose() {
        return;
    }
    reporter.detail(&format!(
        "> {} {}",
        cfg.request.method,
        redact::url(&cfg.request.url)
    ));
    for (n, v) in headers.iter().chain(&transport.automatic_headers(headers)) {
        reporter.detail(&format!("> {n}: {}", redact::header_value(n, v)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_out_file_s_lines_are_joined_as_curl_joins_them() {
        for (text, want) in [
            ("%{http_code}\\n\n", "%{http_code}\\n"),
            ("a\r\nb\r\n", "ab"),
            ("a  \n\n \n", "a   "),
            ("a\rb\nc", "ac"),
            ("\t\n", "\t"),
            ("", ""),
        ] {
            assert_eq!(join_lines(text), want, "{text:?}");
        }
    }

    #[test]
    fn redirect_url_is_a_redirect_s_location_made_absolute() {
        let head = |status, location: Option<&str>| transport::Head {
            status,
            reason: String::new(),
            version: "HTTP/1.1".into(),
            headers: location
                .map(|l| vec![("location".to_string(), l.to_string())])
                .unwrap_or_default(),
            url: url::Url::parse("http://h:8/a/b?q").unwrap(),
            wire: None,
        };
        assert_eq!(
            redirect_url(&head(302, Some("/next?a=1"))).as_deref(),
            Some("http://h:8/next?a=1")
        );
        assert_eq!(
            redirect_url(&head(301, Some("c"))).as_deref(),
            Some("http://h:8/a/c")
        );
        assert_eq!(
            redirect_url(&head(308, Some("https://o.test/x"))).as_deref(),
            Some("https://o.test/x")
        );
        assert_eq!(redirect_url(&head(200, Some("/x"))), None);
        assert_eq!(redirect_url(&head(302, None)), None);
    }
}
