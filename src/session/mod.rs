//! The process's side of a run of the main command: the reporter, the deadline's watchdog,
//! the signal handling, the summary line and the exit status. A [`Session`] builds one
//! [`Request`] from the frozen configuration (reading the files it names within the
//! deadline: a usage error sends nothing) and runs it; what is per process stays here and
//! is lent to the request (see `request::Lent`). A run of several URLs (or `-Z`) is a
//! batch (`batch`: its workers, transports kept per origin, stdout in URL order, its
//! summary and exit rule; `schedule`: which transfer starts when), whose transfers are
//! built and run by the same steps as a run of one.

mod batch;
mod schedule;

use crate::cli::RequestArgs;
use crate::cli::config_file::Found;
use crate::config::{self, Config, Transfer};
use crate::exit::{Exit, Outcome};
use crate::http::body::Payload;
use crate::http::transport::Transport;
use crate::output;
use crate::process::abort::Aborts;
use crate::process::deadline::{self, LastWords, Watchdog};
use crate::process::interrupt::{self, Interrupt};
use crate::redact;
use crate::report::{self, Reporter};
use crate::request::ending::Ended;
use crate::request::explain;
use crate::request::prepare::{self, Opened, Sources, Unread};
use crate::request::run;
use crate::request::{Lent, Request};
use rand::RngExt;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Runs the main command: one request with retries; `found` is what reading the `-K` and
/// `-H @FILE` files found, `start` when the process started. Returns the outcome that sets
/// the exit status, with its cause (see `exit::Exit`). The flags are dropped once the
/// configuration is built: a list of URLs is then held once, as the transfers'.
pub fn run(args: RequestArgs, found: Found, start: Instant) -> Exit {
    let reporter = Reporter::new(crate::config::log::of(&args));
    let checking = keep_deadline_while_checking(&args, &reporter, start);
    let built = config::build(&args, found);
    if built.is_ok() {
        // The secrets' matcher is made here, while the deadline is kept and a signal's
        // ending writes only its own words, not by the first line masked: that may be the
        // watchdog's or the signal handler's summary, which have milliseconds, and making
        // it takes seconds for a long list of URLs with tokens.
        redact::ready();
    }
    checking.done();
    let cfg = match built {
        Ok(cfg) => cfg,
        Err(e) => return Exit::of(unusable(&args, found, &reporter, start, e.0)),
    };
    drop(args);
    // From here every exit path reads the table the command line chose.
    crate::exit::use_mode(cfg.output.exit_codes, cfg.output.fail);
    let session = Session::begin(&cfg, reporter, start, found.from_file);
    let outcome = session.run(&cfg);
    // The summary is written: nothing is left for the watchdog to bound.
    session.watchdog.done();
    outcome
}

/// The deadline kept while the command line is checked, before the session's watchdog
/// exists: a list of a million URLs takes seconds to parse and have its secrets marked.
/// At the deadline the process ends with exit 5 and one summary line saying nothing was
/// sent (its words are the program's own, written unmasked: see `report::forced_line`).
/// The caller stands it down ([`Watchdog::done`]) once the configuration is built.
fn keep_deadline_while_checking(
    args: &RequestArgs,
    reporter: &Reporter,
    start: Instant,
) -> Watchdog {
    let Some(d) = args.policy.deadline.filter(|d| !d.is_zero()) else {
        return Watchdog::none();
    };
    let format = reporter.format();
    let why = "nothing sent: the URLs were still being checked";
    Watchdog::start(
        start + d,
        LastWords {
            abort: Box::new(|| {}),
            summary: Box::new(move |_, _, outcome| {
                let counts = (0, start.elapsed(), 0);
                let nothing = (None, report::StateUse::None);
                report::forced_line(format, outcome, counts, why, why, nothing)
            }),
            end: deadline::exit_now(),
        },
    )
}

/// A command line that makes no configuration: its usage error (exit 2), nothing sent.
/// No watchdog keeps a deadline yet, so the lines are bounded here.
fn unusable(
    args: &RequestArgs,
    found: Found,
    reporter: &Reporter,
    start: Instant,
    mut msg: String,
) -> Outcome {
    if found.from_file {
        // A value from a -K file may be a secret: it is not quoted back.
        msg = crate::cli::config_file::unquoted(&msg);
    }
    let deadline = args.policy.deadline.filter(|d| !d.is_zero());
    deadline::bound_usage_error(deadline.map(|d| start + d));
    reporter.error(&format!("{msg}{}", crate::exit::usage_suffix()));
    let why = Some(msg.as_str());
    reporter.summary(Outcome::Usage, 0, start.elapsed(), 0, "nothing sent", why);
    Outcome::Usage
}

/// The seed of transfer `transfer` (0-based) of a run seeded with `seed`: the seed itself
/// for the first (a run of one URL draws as before), then a different stream for each
/// transfer (Weyl's step, as splitmix64 takes it), so that transfers failing together do
/// not wait in lockstep, and `--seed` still replays every one of them.
fn transfer_seed(seed: u64, transfer: usize) -> u64 {
    seed.wrapping_add((transfer as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Why [`Session::build`] made no request.
enum Unbuilt {
    /// A usage error (exit 2), nothing sent: what was wrong.
    Usage(String),
    /// The deadline passed while the request body was read (exit 5), nothing sent.
    BodyUnread,
    /// `--explain`: the policy is shown instead.
    Explain,
}

/// What one process keeps while it runs its request.
pub struct Session {
    /// The one writer to stderr.
    reporter: Reporter,
    /// When the process started: the deadline counts from here.
    start: Instant,
    /// The seed of every random draw (`--seed`, else drawn once).
    seed: u64,
    /// Keeps the deadline; it is kept from the session's start on: reading a `-w` file, a
    /// `--cacert` or the body may block (a FIFO, a pipe that never closes) as much as the
    /// network can.
    watchdog: Watchdog,
    /// Set by the signals that stop a run.
    interrupt: Interrupt,
    /// What aborts the exchanges in flight, once a request's transport exists.
    aborts: Aborts,
    /// Flags came from a `-K` file: values are not quoted back in errors.
    unquote: bool,
    /// A batch's transfers counted by outcome so far, for a summary written by the
    /// watchdog or the signal handler (see `batch::last_words`).
    tally: Arc<Mutex<schedule::Tally>>,
    /// A batch's transfers begun that have sent nothing yet (see `gate::local`): the
    /// summary written by the watchdog or the signal handler counts them not started.
    unsent: Arc<AtomicUsize>,
    /// The request body and `-G`'s data, read once for every transfer of the run: a body
    /// from stdin or a pipe can be read only once, and each transfer sends the same bytes.
    bodies: Mutex<Option<Bodies>>,
}

/// The request body and `-G`'s data, as read (see `prepare::load_bodies`).
type Bodies = (Option<Payload>, Option<Payload>);

impl Session {
    /// Starts the watchdog (with a `--deadline`) and the signal handling for `cfg`.
    fn begin(cfg: &Config, reporter: Reporter, start: Instant, unquote: bool) -> Session {
        let seed = cfg.retry.seed.unwrap_or_else(|| rand::rng().random());
        let aborts = Aborts::new();
        let tally = Arc::default();
        let unsent = Arc::<AtomicUsize>::default();
        match cfg.batch.is_batch() {
            true => crate::many_threads(),
            false => crate::one_arena(),
        }
        let words = match cfg.batch.is_batch() && !cfg.explain {
            true => batch::last_words(&reporter, start, (&tally, &unsent)),
            false => single_last_words(&reporter, start, seed),
        };
        let watchdog = start_watchdog(cfg, aborts.clone(), words.0);
        let interrupt = install_interrupt(&watchdog, aborts.clone(), &reporter, words.1);
        Session {
            bodies: Mutex::new(None),
            reporter,
            start,
            seed,
            watchdog,
            interrupt,
            aborts,
            unquote,
            tally,
            unsent,
        }
    }

    /// Builds the request and runs it, then writes the summary; returns how it ended. A
    /// batch (several URLs, or `-Z`) runs through `batch`.
    fn run(&self, cfg: &Config) -> Exit {
        if cfg.batch.is_batch() && !cfg.explain {
            return batch::run(self, cfg);
        }
        let first = cfg.batch.first();
        let request = match self.build((cfg, first), &self.reporter, (true, None)) {
            Ok(request) => request,
            Err(Unbuilt::Usage(msg)) => return Exit::of(self.usage(&msg)),
            Err(Unbuilt::BodyUnread) => return Exit::of(self.body_unread()),
            Err(Unbuilt::Explain) => return Exit::of(self.explain(cfg, first)),
        };
        self.aborts.add(request.transport.abort_handle());
        let local = crate::gate::local::Local::single();
        let lent = self.lend(&local, &self.reporter, (0, self.start));
        let ended = run::perform(&request, &lent);
        self.conclude(&ended)
    }

    /// What the session lends transfer `transfer` (0-based), begun at `began`, written to
    /// by `reporter`.
    fn lend<'s>(
        &'s self,
        local: &'s crate::gate::local::Local,
        reporter: &'s Reporter,
        (transfer, began): (usize, Instant),
    ) -> Lent<'s> {
        Lent {
            local,
            reporter,
            interrupt: &self.interrupt,
            watchdog: &self.watchdog,
            start: self.start,
            seed: transfer_seed(self.seed, transfer),
            transfer,
            began,
        }
    }

    /// Reads and checks everything the request of transfer `t` of `cfg` needs before its
    /// first attempt, in a fixed order, and builds it, its lines written by `reporter`. `single`: the run's only
    /// request, which says the lines a batch says once for all (see `batch::say_once`);
    /// `reuse`: a transport to send with instead of a new one (see `batch`). `Err` is why there is no request (a usage error,
    /// the deadline passing while the body is read, or `--explain`).
    fn build<'c>(
        &self,
        (cfg, t): (&'c Config, &'c Transfer),
        reporter: &Reporter,
        (single, reuse): (bool, Option<Transport>),
    ) -> Result<Request<'c>, Unbuilt> {
        let note = |what: &str| self.reading(what);
        let credentials = prepare::credentials(cfg, t, &note).map_err(Unbuilt::Usage)?;
        let opened = Opened::open((cfg, t), &note, reuse).map_err(Unbuilt::Usage)?;
        store_warning(&self.reporter);
        let prior = prepare::prior(cfg, t, &note).map_err(Unbuilt::Usage)?;
        for w in &prior.warnings {
            reporter.warn(w);
        }
        if single {
            self.curl_flags_line(cfg);
        }
        if cfg.explain {
            // After every check, so --explain answers what the run would do, usage errors too.
            return Err(Unbuilt::Explain);
        }
        let (payload, query) = self.bodies(cfg, &note)?;
        let url = prepare::url_with_query(t, query).map_err(Unbuilt::Usage)?;
        let boundary = prepare::boundary(cfg, payload.as_ref()).map_err(Unbuilt::Usage)?;
        self.watchdog.note_last("no attempt made");
        if single {
            self.before_sending(cfg);
        }
        let sources = Sources {
            url,
            credentials,
            opened,
            prior,
            payload,
            boundary,
        };
        Ok(Request::new(cfg, t, sources, reporter))
    }

    /// The request body and `-G`'s data for a request of `cfg`: read by the first request
    /// of the run (within the deadline), and a copy of what it read for every later one.
    /// Under `-Z`, the others wait for the first read to end.
    fn bodies(&self, cfg: &Config, note: &dyn Fn(&str)) -> Result<Bodies, Unbuilt> {
        let mut read = self.bodies.lock().unwrap_or_else(|e| e.into_inner());
        if read.is_none() {
            let loaded = prepare::load_bodies(cfg, self.start, note).map_err(|e| match e {
                Unread::Usage(msg) => Unbuilt::Usage(msg),
                Unread::Deadline => Unbuilt::BodyUnread,
            })?;
            *read = Some(loaded);
        }
        let copy = |p: &Option<Payload>| p.as_ref().map(Payload::duplicate).transpose();
        let (payload, query) = read
            .as_ref()
            .map(|(p, q)| (copy(p), copy(q)))
            .unwrap_or((Ok(None), Ok(None)));
        let unread = |e: std::io::Error| {
            Unbuilt::Usage(format!("cannot copy the request body for a transfer: {e}"))
        };
        Ok((payload.map_err(unread)?, query.map_err(unread)?))
    }

    /// What curl's retry flags mean here, in one line, once (not under -s); --explain shows
    /// it with the policy instead.
    fn curl_flags_line(&self, cfg: &Config) {
        if let Some(mapped) = cfg.retry.curl.as_deref().filter(|_| !cfg.explain) {
            self.reporter
                .info(&format!("curl's retry flags, as this tool's: {mapped}"));
        }
    }

    /// The lines said once everything is read, before the first attempt.
    fn before_sending(&self, cfg: &Config) {
        if cfg.request.insecure {
            self.reporter
                .warn("TLS certificate verification is off (-k)");
        }
        let seed = self.seed;
        self.reporter.detail(&format!(
            "seed {seed} (replay the same waits with --seed {seed})"
        ));
    }

    /// The summary of a request that ran, and the exit status. From here the run ends
    /// itself (if the watchdog is ending it, this never returns); the watchdog still bounds
    /// the summary, and ends a run stuck on it with the outcome's code (see
    /// `Watchdog::claim`).
    fn conclude(&self, ended: &Ended) -> Exit {
        self.watchdog.claim(ended.exit().code());
        // The store a rediss:// connection read during the run.
        store_warning(&self.reporter);
        self.reporter.summary(
            ended.exit(),
            ended.attempts_made,
            self.start.elapsed(),
            self.seed,
            &ended.last,
            Some(&ended.reason()),
        );
        ended.exit()
    }

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
        self.reporter
            .error(&format!("{msg}{}", crate::exit::usage_suffix()));
        let elapsed = self.start.elapsed();
        self.reporter
            .summary(Outcome::Usage, 0, elapsed, 0, "nothing sent", Some(msg));
        self.watchdog.done();
        Outcome::Usage
    }

    /// The deadline passed while the request body was read: exit 5, nothing sent.
    fn body_unread(&self) -> Outcome {
        self.last_words(Outcome::Deadline);
        let why = "nothing sent: the request body was still being read";
        let elapsed = self.start.elapsed();
        self.reporter
            .summary(Outcome::Deadline, 0, elapsed, 0, why, Some(why));
        self.watchdog.done();
        Outcome::Deadline
    }

    /// The run settles on `outcome` before its last words, which stay bounded: by the
    /// watchdog when there is a deadline, and for a usage error without one by
    /// [`deadline::USAGE_WORDS`].
    fn last_words(&self, outcome: Outcome) {
        self.watchdog.claim(Exit::of(outcome).code());
        if outcome == Outcome::Usage && !self.watchdog.keeps_a_deadline() {
            deadline::bound_usage_error(None);
        }
    }

    /// `--explain`: the policy on stdout instead of a request; exit 0 (1 when stdout
    /// cannot be written). The policy is output the user asked for, like a body: written
    /// before the run claims its ending, so a reader that does not take it by the deadline
    /// ends the run with exit 5.
    fn explain(&self, cfg: &Config, first: &Transfer) -> Outcome {
        let text = redact::marked(&explain::explain(cfg, first));
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
    aborts: Aborts,
    reporter: &Reporter,
    words: SummaryLine,
) -> Interrupt {
    let stopper = watchdog.clone();
    Interrupt::install(
        move || {
            stopper.stop();
            aborts.fire();
        },
        forced_summary(watchdog, words),
    )
    .unwrap_or_else(|e| {
        reporter.warn(&format!("cannot install the signal handler: {e}"));
        Interrupt::none()
    })
}

/// With a `--deadline`, the watchdog that keeps it (see `deadline`): it aborts the exchange
/// in flight at the deadline, and ends the process itself if the run does not.
fn start_watchdog(cfg: &Config, aborts: Aborts, summary: SummaryLine) -> Watchdog {
    let Some(d) = cfg.retry.deadline else {
        return Watchdog::none();
    };
    let start = summary.start;
    Watchdog::start(
        start + d,
        LastWords {
            // The agents exist once the transports are built; before that nothing is in
            // flight.
            abort: Box::new(move || aborts.fire()),
            summary: Box::new(move |n, last, outcome| {
                (summary.line)(n, last, outcome, "stopping: the deadline passed")
            }),
            end: deadline::exit_now(),
        },
    )
}

/// The summary line written when the run is ended from another thread (the watchdog's,
/// the signal handler's), given the attempts made, the last result, the outcome and why;
/// `start` is when the process started.
struct SummaryLine {
    start: Instant,
    line: LineOf,
}

/// Writes a summary line from the attempts made, the last result, the outcome and why.
type LineOf = Box<dyn Fn(u32, &str, Outcome, &str) -> String + Send + Sync>;

/// The ending lines of a run of one URL: one for the watchdog, one for the signal handler.
fn single_last_words(reporter: &Reporter, start: Instant, seed: u64) -> (SummaryLine, SummaryLine) {
    let make = || {
        let format = reporter.format();
        let key = reporter.key_handle();
        let state = reporter.state_handle();
        SummaryLine {
            start,
            line: Box::new(move |n, last, outcome, why| {
                report::forced_summary(
                    format,
                    outcome,
                    (n, start.elapsed(), seed),
                    last,
                    why,
                    (key.get().map(String::as_str), Reporter::state_of(&state)),
                )
            }),
        }
    };
    (make(), make())
}

/// What the signal handler writes when it must end the run itself: the summary, unless
/// the run has claimed its ending (then the run writes it) or the watchdog is ending it.
fn forced_summary(
    watchdog: &Watchdog,
    words: SummaryLine,
) -> impl FnOnce(interrupt::Signal) + Send + 'static {
    let watchdog = watchdog.clone();
    move |sig| {
        let Some((n, last)) = watchdog.take_over() else {
            return;
        };
        let line = (words.line)(n, &last, sig.outcome(), "stopping: interrupted");
        deadline::last_line(&line);
    }
}

/// The one line about files of the system's certificate store left unread (too large, past
/// a folder's bound, not regular files: `files::certs`), once per run whoever read the
/// store, shown under `-s` too: it says why a server may not be trusted.
fn store_warning(reporter: &Reporter) {
    if let Some(line) = crate::files::certs::warning_once() {
        reporter.notice(&line);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_transfer_draws_from_a_seed_of_its_own_and_the_first_from_the_run_s() {
        assert_eq!(super::transfer_seed(42, 0), 42);
        let seeds: std::collections::BTreeSet<u64> =
            (0..1000).map(|i| super::transfer_seed(42, i)).collect();
        assert_eq!(seeds.len(), 1000);
    }
}
