//! A run of several URLs (or `-Z`): the transfers of `Config::batch`, each built and run by
//! the session's own steps (`Session::build`, `run::perform`) with the one configuration
//! and its own entry of the list (`config::Transfer`: its URL and output), on one worker
//! thread without `-Z` or up to `--parallel-max` with it, as `schedule` allows. What the
//! transfers share: the local layer of their gates (`gate::local`: the origins' table, the
//! careful client per origin; the transfers under way per origin and the next start, which
//! `--parallel-max-host` and `--rate` bound; and, without `--state`, the batch's own
//! circuit breaker and retry budget per origin), the session's watchdog and signal handling (one abort list
//! for every transport), and the transports of ended transfers, kept per origin for the
//! next transfer to it whichever worker starts it (at most as many as workers, and at
//! least [`KEPT`]), so that the connections to an origin are reused from one transfer to the
//! next. Each transfer's stdout (its body, `-D -`, `-w`) goes to a capture of its own
//! (`output::Capture`: in memory up to `output::HELD`, 128 KiB, in a temporary file past
//! it), written to stdout (opened once for the batch) in URL order as soon as every earlier
//! one is out; `-o` files are put in place as each transfer ends. Every log line is tagged
//! with the transfer (`report::Reporter::tagged`); a failed transfer writes its own
//! summary, and the batch a last line counting the transfers by outcome.
//!
//! A worker sleeps until there is work for it. A worker whose transfer ended takes the
//! next start itself when one may start (the room its transfer left); an output written
//! (room in the window) wakes one sleeping worker, and only when a transfer may start
//! then; the batch stopping or having nothing left to start wakes them all.
//!
//! Once the batch stops starting transfers (`--fail-early` after the first failure,
//! stdout's reader gone, the deadline, a signal), no transfer sends its first request, not
//! even one a worker had begun and that waits in its gate (for its origin's first answer,
//! its pacing, a hold); a transfer that sent nothing counts as not started, with no summary
//! of its own and nothing on stdout. Those that had sent go on (`--fail-early`, the reader
//! gone) or are cut (the deadline, a signal). stdout's reader is watched by a thread of its
//! own when stdout is a pipe or a socket, so its going is known at once.
//!
//! The exit status: 0 when every transfer succeeded; otherwise the exit code of the first
//! failed transfer in URL order (the same under `-Z` and without, whatever finished first).
//! Transfers that `--fail-early` kept from starting do not change it. The deadline passing
//! mid-batch ends the batch with 5, and a signal with its own code, as for one URL.

use super::schedule::{Limits, Next, Schedule, Start, Tally};
use super::{Session, SummaryLine, Unbuilt};
use crate::config::Config;
use crate::exit::{Exit, Outcome};
use crate::fleet::origins::origin_key;
use crate::gate::local::{Local, Shape};
use crate::http::transport::Transport;
use crate::output;
use crate::output::{Capture, Held};
use crate::process::abort::Ticket;
use crate::report::{self, Counts, Reporter};
use crate::request::run;
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The fewest transports the batch keeps between transfers (more with more workers), the
/// least recently used dropped first.
const KEPT: usize = 4;

/// How long a worker waiting for a transfer to start sleeps at most before it looks again
/// (it is woken as soon as a transfer ends; this only bounds a missed wake-up).
const RECHECK: Duration = Duration::from_millis(200);

/// What the workers of one batch share.
struct Batch<'s> {
    session: &'s Session,
    cfg: &'s Config,
    /// The local layer of the transfers' gates (see `gate::local`).
    local: &'s Local,
    /// Which transfer starts when, and the outputs waiting for their turn on stdout.
    schedule: Mutex<Schedule<'s, Held>>,
    /// Wakes the workers waiting for a transfer to start.
    wake: Condvar,
    /// Workers waiting on `wake` (changed under the schedule's lock).
    asleep: AtomicUsize,
    /// Standard output, opened once for the batch (`Err`: why it could not be).
    stdout: Result<File, String>,
    /// The tally as the watchdog's and the signal handler's summary read it.
    tally: Arc<Mutex<Tally>>,
    /// Writing a transfer's output to stdout failed (not for a reader that went away).
    unwritten: Mutex<Option<String>>,
    /// stdout's reader went away: the batch started nothing new after.
    reader_gone: Arc<AtomicBool>,
    /// The transports of ended transfers, for the next transfers to their origins.
    kept: Mutex<Kept>,
}

/// Runs the batch of `cfg` in `session`: the transfers, stdout in URL order, the summary;
/// returns how the batch ended (see the module's exit rule).
pub(super) fn run(session: &Session, cfg: &Config) -> Exit {
    if let Err(e) = check_outputs(cfg) {
        return Exit::of(session.usage(&e));
    }
    session.curl_flags_line(cfg);
    session.before_sending(cfg);
    let b = &cfg.batch;
    let count = b.transfers.len();
    let limits = Limits {
        count,
        ahead: if b.parallel { b.parallel_max.max(1) } else { 1 },
        fail_early: b.fail_early,
    };
    // Without --state the transfers to one origin share a breaker and a budget of the
    // batch's own, kept in process.
    let local = Local::new(Shape {
        per_origin: b.parallel_max_host.max(1),
        spacing: b.rate.map(|r| r.per / r.count.max(1)),
        pacing: true,
        records: cfg.state.is_none().then_some(cfg.fleet),
        fail_early: b.fail_early,
    })
    .counting_unsent(session.unsent.clone());
    let batch = Batch {
        session,
        cfg,
        local: &local,
        schedule: Mutex::new(Schedule::new(limits, &local)),
        wake: Condvar::new(),
        asleep: AtomicUsize::new(0),
        stdout: output::stdout().map_err(|e| format!("cannot write to stdout: {e}")),
        tally: session.tally.clone(),
        unwritten: Mutex::new(None),
        reader_gone: Arc::default(),
        kept: Mutex::new(Kept(Vec::new(), limits.ahead.min(count).max(KEPT))),
    };
    batch.publish(&batch.lock());
    batch.watch_reader();
    let workers = limits.ahead.min(count).max(1);
    std::thread::scope(|scope| {
        let spawned = (0..workers)
            .filter(|_| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, || batch.work())
                    .is_ok()
            })
            .count();
        if spawned == 0 {
            batch.work();
        }
    });
    batch.kept().drop_all(session);
    batch.conclude()
}

impl<'s> Batch<'s> {
    /// The transports kept between transfers.
    fn kept(&self) -> MutexGuard<'_, Kept> {
        // A panic elsewhere while holding it leaves plain data: still usable.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, Schedule<'s, Held>> {
        // A panic elsewhere while holding it leaves plain data: still usable.
        self.schedule.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The origin transfer `i` counts against (`--parallel-max-host`), as `--state` keys it.
    fn origin(&self, i: usize) -> String {
        let url = &self.cfg.batch.transfers[i].url;
        origin_key(url, self.cfg.request.network.unix_socket.as_deref())
    }

    /// When stdout is a pipe or a socket, a thread of its own waits for its reader to go
    /// away (`| head`): the batch then starts nothing new, without waiting for its next
    /// write to fail. The thread is left blocked when the batch ends first (the process
    /// ends with it).
    fn watch_reader(&self) {
        let out = self
            .stdout
            .as_ref()
            .ok()
            .filter(|o| output::reader_may_go(o));
        let Some(out) = out.and_then(|o| o.try_clone().ok()) else {
            return;
        };
        let (gone, halter) = (self.reader_gone.clone(), self.local.halter());
        let _ = std::thread::Builder::new()
            .name("stdout reader".into())
            .spawn(move || {
                if output::await_reader_gone(&out) {
                    gone.store(true, Ordering::SeqCst);
                    halter.halt();
                }
            });
    }

    /// Whether the batch must stop starting transfers: a signal, the deadline (as the
    /// watchdog keeps it, or reached before the watchdog woke), or its local layer halted
    /// (`--fail-early` after a failure, stdout's reader gone).
    fn halted(&self) -> bool {
        self.session.interrupt.fired().is_some()
            || self.session.watchdog.expired()
            || self.deadline_left().is_some_and(|left| left.is_zero())
            || self.local.halted()
    }

    /// The time left before `--deadline` (None: no deadline).
    fn deadline_left(&self) -> Option<Duration> {
        let deadline = self.cfg.retry.deadline?;
        Some(deadline.saturating_sub(self.session.start.elapsed()))
    }

    /// One worker: starts transfers while the schedule gives it some, each at its time
    /// (a wait for `--rate` ends at the deadline, or at a signal).
    fn work(&self) {
        let mut next = self.next();
        while let Some(start) = next {
            let mut wait = start.at.saturating_duration_since(Instant::now());
            if let Some(left) = self.deadline_left() {
                wait = wait.min(left);
            }
            let signal = self.session.interrupt.sleep(wait);
            let begun = signal.is_none() && !self.halted() && self.begin(start.index);
            let done = match begun {
                true => self.transfer(&start),
                false => None,
            };
            let Some((outcome, held)) = done else {
                self.unstarted(&start);
                next = self.next();
                continue;
            };
            crate::process::release::forget_small();
            let following = self.ended(&start, outcome, held);
            self.write_ready();
            next = following.or_else(|| self.next());
        }
        self.write_ready();
    }

    /// Transfer `index`, picked, is begun, unless the batch stopped meanwhile (false).
    fn begin(&self, index: usize) -> bool {
        let mut s = self.lock();
        if s.stopped() {
            return false;
        }
        s.begin(index);
        self.local.begun();
        self.publish(&s);
        true
    }

    /// Transfer `start` was not started, or sent nothing before the batch stopped: the
    /// batch stops (nothing new starts), and the transfer counts as not started.
    fn unstarted(&self, start: &Start) {
        let mut s = self.lock();
        s.stop();
        s.not_started(start.index, &start.origin);
        self.publish(&s);
        drop(s);
        self.wake.notify_all();
    }

    /// Transfer `start` ended as `outcome`, leaving `held` for stdout: counted, and the
    /// transfer this worker starts next taken at once when one may start (the room its
    /// origin freed is this worker's: no other is woken for it).
    fn ended(&self, start: &Start, outcome: Exit, held: Held) -> Option<Start> {
        let mut s = self.lock();
        s.ended(start.index, &start.origin, outcome, held);
        if self.halted() {
            s.stop();
        }
        let following = match s.next(Instant::now(), |i| self.origin(i)) {
            Next::Start(following) => Some(following),
            Next::Wait | Next::Finished => None,
        };
        self.publish(&s);
        following
    }

    /// The next transfer this worker starts, waiting while every one it could start is
    /// held by a limit; `None`: nothing is left to start.
    fn next(&self) -> Option<Start> {
        let mut s = self.lock();
        loop {
            if self.halted() {
                s.stop();
            }
            match s.next(Instant::now(), |i| self.origin(i)) {
                Next::Start(start) => {
                    self.publish(&s);
                    return Some(start);
                }
                Next::Finished => {
                    // Every worker still asleep ends too.
                    self.wake.notify_all();
                    return None;
                }
                Next::Wait => {
                    self.asleep.fetch_add(1, Ordering::SeqCst);
                    s = match self.wake.wait_timeout(s, RECHECK) {
                        Ok((s, _)) => s,
                        Err(e) => e.into_inner().0,
                    };
                    self.asleep.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
    }

    /// Writes to stdout, in URL order, every output whose turn has come (one writer at a
    /// time; another worker writes what is ready meanwhile).
    fn write_ready(&self) {
        loop {
            let held = {
                let mut s = self.lock();
                let Some(held) = s.next_output() else { return };
                self.publish(&s);
                held
            };
            let written = match &self.stdout {
                Ok(out) => held
                    .write_to(out)
                    .map_err(|e| format!("cannot write to stdout: {e}")),
                Err(e) => Err(e.clone()),
            };
            match written {
                Err(e) => {
                    let mut unwritten = self.unwritten.lock().unwrap_or_else(|e| e.into_inner());
                    unwritten.get_or_insert(e);
                }
                Ok(false) => {
                    // The reader went away (`| head`): what is left would be fetched for
                    // nobody. The transfers under way end; nothing new starts.
                    self.reader_gone.store(true, Ordering::SeqCst);
                    self.local.halt();
                    self.lock().stop();
                    self.wake.notify_all();
                }
                Ok(true) => {}
            }
            let mut s = self.lock();
            s.written();
            // The window has room for one more transfer: a worker asleep is woken when it
            // may start now.
            if self.asleep.load(Ordering::SeqCst) > 0 && s.startable(|i| self.origin(i)) {
                self.wake.notify_one();
            }
        }
    }

    /// Copies the schedule's tally where the watchdog and the signal handler read it.
    fn publish(&self, s: &Schedule<Held>) {
        if let Ok(mut t) = self.tally.lock() {
            *t = s.tally();
        }
    }

    /// Transfer `start`, its stdout captured: how it ended and what it left for stdout;
    /// None when it sent nothing before the batch stopped (it counts as not started).
    fn transfer(&self, start: &Start) -> Option<(Exit, Held)> {
        let count = self.cfg.batch.transfers.len();
        let reporter = self.session.reporter.tagged(start.index + 1, count);
        let capture = Arc::new(Capture::default());
        let outcome = self.perform(start, &reporter, &capture)?;
        Some((outcome, capture.take()))
    }

    /// Builds transfer `start` with the session's steps (reusing a transport kept for its
    /// origin), its stdout sent to `capture`, and runs it; writes its summary. Returns how
    /// it ended; None when it sent nothing because the batch stopped (`--fail-early`, the
    /// deadline, a signal, stdout's reader gone) while it waited for its first send: it is
    /// not started, and writes no summary.
    fn perform(&self, start: &Start, reporter: &Reporter, capture: &Arc<Capture>) -> Option<Exit> {
        let (i, origin) = (start.index, start.origin.clone());
        let began = Instant::now();
        let transfer = &self.cfg.batch.transfers[i];
        let reused = self.kept().take(&origin);
        let ticket = reused.as_ref().map(|(_, t)| *t);
        let reuse = reused.map(|(transport, _)| transport);
        let built = self
            .session
            .build((self.cfg, transfer), reporter, (false, reuse));
        let mut request = match built {
            Ok(request) => request,
            Err(unbuilt) => {
                if let Some(t) = ticket {
                    self.session.aborts.remove(t);
                }
                self.local.gone_unsent();
                return Some(Exit::of(unbuilt_transfer(reporter, unbuilt, began)));
            }
        };
        request.output.capture_stdout(capture.clone());
        let ticket =
            ticket.unwrap_or_else(|| self.session.aborts.add(request.transport.abort_handle()));
        let lent = self.session.lend(self.local, reporter, (i, began));
        let ended = run::perform(&request, &lent);
        if ended.attempts_made == 0 {
            self.local.gone_unsent();
        }
        let unsent = ended.attempts_made == 0 && self.halted();
        if !unsent {
            reporter.summary(
                ended.exit(),
                ended.attempts_made,
                began.elapsed(),
                self.session.seed,
                &ended.last,
                Some(&ended.reason()),
            );
        }
        let dropped = self.kept().put(origin, request.transport, ticket);
        if let Some(dropped) = dropped {
            self.session.aborts.remove(dropped);
        }
        (!unsent).then(|| ended.exit())
    }

    /// The batch's end: what is left for stdout written, the outcome settled and claimed,
    /// the summary written.
    fn conclude(&self) -> Exit {
        {
            let mut s = self.lock();
            s.stop();
        }
        self.write_ready();
        let tally = self.lock().tally();
        let (mut outcome, mut exit, reason) = self.settled(&tally);
        let unwritten = self.unwritten.lock().ok().and_then(|mut u| u.take());
        if let Some(e) = &unwritten {
            self.session.reporter.error(e);
            if outcome == Outcome::Success {
                outcome = Outcome::Local;
            }
            if exit.code() == 0 {
                exit = Exit::of(Outcome::Local);
            }
        }
        self.session.watchdog.claim(exit.code());
        let elapsed = self.session.start.elapsed();
        let why = reason.or(unwritten).or_else(|| first_failure(&tally));
        for (origin, rate) in self.local.settled(Instant::now()) {
            self.session.reporter.settled(&origin, rate);
        }
        self.session.reporter.batch_summary(
            counts(&tally, 0),
            (outcome, exit),
            elapsed,
            why.as_deref(),
        );
        exit
    }
}

impl<'s> Batch<'s> {
    /// What ends the batch, before stdout's last writes are weighed: its outcome (for the
    /// summary), how it exits in the table in use, and why, when the tally does not say.
    fn settled(&self, tally: &Tally) -> (Outcome, Exit, Option<String>) {
        match self.session.interrupt.fired() {
            Some(sig) => (
                sig.outcome(),
                Exit::of(sig.outcome()),
                Some("stopping: interrupted".to_string()),
            ),
            None if self.session.watchdog.expired() => (
                Outcome::Deadline,
                Exit::of(Outcome::Deadline),
                Some("the deadline passed before every transfer ended".to_string()),
            ),
            None if self.reader_gone.load(Ordering::SeqCst) => (
                tally.outcome(Outcome::Success),
                tally.exit(Outcome::Success),
                Some("stdout's reader went away: nothing new was started".to_string()),
            ),
            None => (
                tally.outcome(Outcome::Deadline),
                tally.exit(Outcome::Deadline),
                None,
            ),
        }
    }
}

/// Every transfer's `-o` file checked before anything is sent (its folder exists, or
/// `--create-dirs` makes it; not a folder itself...): a command line that cannot run sends
/// nothing. `Err` names the transfer ("URL 2 of 3: ...").
fn check_outputs(cfg: &Config) -> Result<(), String> {
    crate::request::shared_files::check(cfg)?;
    let transfers = &cfg.batch.transfers;
    for (i, t) in transfers.iter().enumerate() {
        if let Some(path) = &t.output {
            output::check_output(path, cfg.output.create_dirs)
                .map_err(|e| format!("URL {} of {}: {e}", i + 1, transfers.len()))?;
        }
    }
    Ok(())
}

/// Why a batch failed, when one of its transfers did: which one.
fn first_failure(tally: &Tally) -> Option<String> {
    let (i, exit) = tally.first_failure?;
    Some(format!(
        "the first failure in URL order is transfer {} (exit {})",
        i + 1,
        exit.outcome.code()
    ))
}

/// A transfer that could not be built: its error line and summary, and its outcome.
fn unbuilt_transfer(reporter: &Reporter, unbuilt: Unbuilt, began: Instant) -> Outcome {
    let (outcome, why) = match unbuilt {
        Unbuilt::Usage(msg) => (Outcome::Usage, msg),
        Unbuilt::BodyUnread => (
            Outcome::Deadline,
            "nothing sent: the request body was still being read".to_string(),
        ),
        Unbuilt::Explain => (
            Outcome::Usage,
            "--explain shows one URL's policy".to_string(),
        ),
    };
    if outcome == Outcome::Usage {
        reporter.error(&format!("{why}{}", crate::exit::usage_suffix()));
    }
    reporter.summary(outcome, 0, began.elapsed(), 0, "nothing sent", Some(&why));
    outcome
}

/// The tally as the summary counts it: a transfer still under way when the run ends (the
/// deadline, a signal) is stopped by that end, so it counts as failed, not as not started,
/// unless it is one of the `unsent` that had not sent its first request yet.
fn counts(t: &Tally, unsent: usize) -> Counts {
    let unsent = unsent.min(t.running);
    Counts {
        transfers: t.count,
        succeeded: t.succeeded,
        failed: t.failed + t.running - unsent,
        not_started: t.not_started() + unsent,
    }
}

/// The watchdog's and the signal handler's summary of a batch: the transfers counted so
/// far (ended ones waiting for their turn on stdout included; those under way count as
/// failed, but those that had sent nothing yet, `unsent`), read from `tally`, which the
/// batch keeps up to date.
pub(super) fn last_words(
    reporter: &Reporter,
    start: Instant,
    (tally, unsent): (&Arc<Mutex<Tally>>, &Arc<AtomicUsize>),
) -> (SummaryLine, SummaryLine) {
    let make = || {
        let format = reporter.format();
        let (tally, unsent) = (tally.clone(), unsent.clone());
        SummaryLine {
            start,
            line: Box::new(move |_, _, outcome, why| {
                let t = tally.lock().map(|t| *t).unwrap_or_default();
                let counted = counts(&t, unsent.load(Ordering::SeqCst));
                let ending = (outcome, Exit::of(outcome));
                report::batch_summary_line(format, counted, ending, start.elapsed(), Some(why))
            }),
        }
    };
    (make(), make())
}

/// The batch's idle transports with their origins, most recently used last, each with its
/// place in the session's abort list; at most `.1` of them.
struct Kept(Vec<(String, Transport, Ticket)>, usize);

impl Kept {
    /// The transport kept for `origin`, taken out.
    fn take(&mut self, origin: &str) -> Option<(Transport, Ticket)> {
        let k = self.0.iter().position(|(o, ..)| o == origin)?;
        let (_, transport, ticket) = self.0.remove(k);
        Some((transport, ticket))
    }

    /// Keeps `transport` for `origin`; returns the ticket of the transport dropped to make
    /// room, if one was.
    fn put(&mut self, origin: String, transport: Transport, ticket: Ticket) -> Option<Ticket> {
        self.0.push((origin, transport, ticket));
        (self.0.len() > self.1).then(|| self.0.remove(0).2)
    }

    /// Drops every transport, taking it out of the abort list.
    fn drop_all(&mut self, session: &Session) {
        for (_, _, ticket) in self.0.drain(..) {
            session.aborts.remove(ticket);
        }
    }
}
