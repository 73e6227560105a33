//! The deadline, kept by a watchdog thread.
//!
//! Socket timeouts cannot keep it: Linux runs `SO_RCVTIMEO` on its coarse timer wheel,
//! which may fire up to about an eighth of the timeout late (a 25 s wait ended after 26.9 s),
//! and no socket timeout covers a reader of stdout that stops reading or a FIFO that is
//! never drained. So the run's deadline is a precise condition-variable wait on a thread of
//! its own. When it passes, the watchdog shuts the HTTP agent down, which ends any exchange
//! in flight within milliseconds, and the run ends the usual way (log line, summary,
//! exit 5). If the run has not claimed its ending within [`GRACE`] (it is blocked writing
//! the output, say), the watchdog ends the process itself: temporary files removed, large
//! spools freed after the exit (see `release`), one summary line, exit 5.
//!
//! The run claims its ending ([`Watchdog::claim`]) once its outcome is settled, before it
//! writes its last words (the summary). A claim does not end the watch: those writes may
//! block too (stderr a pipe nobody reads). The watchdog then gives them until the deadline,
//! or [`LAST_WORDS`] from the claim when that is later, and ends the process with the
//! claimed outcome's code, writing nothing more (the summary is what is stuck). The run
//! stands the watchdog down only once everything is written ([`Watchdog::done`]). The
//! signal handler, when it must end a run that does not end by itself, takes the ending
//! over the same way ([`Watchdog::take_over`]), so a run prints exactly one summary.
//!
//! A usage error found before a watchdog exists is bounded by [`exit_by`] the same way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long the run has, once the agent is shut down, to end by itself.
pub const GRACE: Duration = Duration::from_millis(10);

/// How long the run's last words (the summary) have when its outcome is settled after the
/// deadline, or just before it: a line to a reader that reads takes microseconds, and a
/// loaded machine may not run the writer for some milliseconds.
pub const LAST_WORDS: Duration = Duration::from_millis(50);

/// Where the run stands, as far as the watchdog is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Attempts under way.
    Running,
    /// The deadline passed; the run has [`GRACE`] to claim its ending.
    Expired,
    /// The run owns its ending and is writing its last words, within a last bound.
    Claimed,
    /// The watchdog is ending the process.
    Exiting,
    /// Everything is written: the watchdog does nothing more.
    Done,
}

/// Writes the summary line from the attempts made and the last result.
pub type Summary = Box<dyn Fn(u32, &str, crate::exit::Outcome) -> String + Send>;

/// Ends the process, given the summary line to write (none when the run's own summary is
/// what is stuck) and the exit code ([`exit_now`]).
pub type End = Box<dyn FnOnce(Option<String>, u8) + Send>;

/// What the watchdog needs to end the process by itself.
pub struct LastWords {
    /// Shuts the HTTP agent down (ends an exchange in flight).
    pub abort: Box<dyn FnOnce() + Send>,
    /// The summary line, given the attempts made, the last result and the outcome the
    /// deadline gives ([`Watchdog::at_deadline`]).
    pub summary: Summary,
    /// Ends the process ([`exit_now`]).
    pub end: End,
}

/// Ends the process from the watchdog: temporary files removed, large spools freed after
/// the exit, the summary line written if there is one (given a few milliseconds), then
/// `_exit(code)`.
pub fn exit_now() -> End {
    Box::new(|line, code| end_process(line.as_deref(), code))
}

fn end_process(line: Option<&str>, code: u8) {
    crate::process::interrupt::remove_temps();
    crate::process::release::release_at_exit();
    if let Some(line) = line {
        last_line(line);
    }
    // SAFETY: _exit ends the process at once; nothing else may run after the summary.
    unsafe { libc::_exit(i32::from(crate::exit::status(code))) };
}

/// How long a usage error's lines may wait on their reader when no deadline bounds them:
/// nothing was sent, and a stderr nobody reads must not hold a script for ever.
pub const USAGE_WORDS: Duration = Duration::from_secs(2);

/// Bounds the lines of a usage error (exit 2): by the deadline at `deadline` when there is
/// one (at least [`LAST_WORDS`] from now), else by [`USAGE_WORDS`] from now. Without a
/// deadline the secrets' matcher is made first (`redact::ready`): the bound is for a reader
/// that does not read, and making it for a long list of URLs with tokens may take longer.
pub fn bound_usage_error(deadline: Option<Instant>) {
    if deadline.is_none() {
        crate::redact::ready();
    }
    let now = Instant::now();
    let until = deadline.map_or(now + USAGE_WORDS, |d| d.max(now + LAST_WORDS));
    exit_by(until, crate::exit::Outcome::Usage.code());
}

/// Ends the process with `code` at `until` unless it has exited by then: what bounds the
/// last words of a run that has no watchdog (a usage error, whose message may go to a pipe
/// nobody reads). Temporary files are removed first; nothing more is written.
pub fn exit_by(until: Instant, code: u8) {
    let _ = std::thread::Builder::new()
        .name("last words".into())
        .spawn(move || {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            end_process(None, code);
        });
}

#[derive(Debug)]
struct State {
    phase: Phase,
    /// The deadline passed (whoever then ended the run).
    fired: bool,
    /// A signal asked the run to stop.
    stopped: bool,
    /// Attempts begun, and the last attempt's result, for the summary line.
    attempts: u32,
    last: String,
    /// When the run claimed its ending, and the exit code of the outcome it settled on.
    claimed: Option<(Instant, u8)>,
    /// A watchdog thread is running.
    keeping: bool,
    /// What the deadline ends the run with: 5, or 8 once the last answer was not ready.
    at_deadline: crate::exit::Outcome,
}

/// A handle on the watchdog of one run (or on none, when there is no deadline).
#[derive(Clone)]
pub struct Watchdog {
    state: Arc<(Mutex<State>, Condvar)>,
    /// `State::fired`, set with it, read without the lock: a batch's workers ask it before
    /// each start and each attempt.
    fired: Arc<AtomicBool>,
}

impl Watchdog {
    /// A watchdog that never fires (no `--deadline`).
    pub fn none() -> Self {
        Watchdog {
            state: Arc::new((
                Mutex::new(State {
                    phase: Phase::Running,
                    fired: false,
                    stopped: false,
                    attempts: 0,
                    last: "no attempt made".into(),
                    claimed: None,
                    keeping: false,
                    at_deadline: crate::exit::Outcome::Deadline,
                }),
                Condvar::new(),
            )),
            fired: Arc::default(),
        }
    }

    /// Starts the watchdog for a run that must end at `deadline`.
    pub fn start(deadline: Instant, words: LastWords) -> Self {
        let me = Self::none();
        let shared = me.clone();
        let spawned = std::thread::Builder::new()
            .name("deadline".into())
            .spawn(move || shared.watch(deadline, words));
        if spawned.is_err() {
            // No thread: the socket timeouts and the loop's own checks still apply.
            return me;
        }
        if let Ok(mut s) = me.state.0.lock() {
            s.keeping = true;
        }
        me
    }

    fn watch(&self, deadline: Instant, words: LastWords) {
        // Wait for the deadline, unless the run claims its ending first.
        let Some(mut s) = self.unclaimed_at(deadline) else {
            return self.bound_last_words(deadline, words.end);
        };
        s.phase = Phase::Expired;
        s.fired = true;
        self.fired.store(true, Ordering::SeqCst);
        drop(s);
        (words.abort)();
        let Some(mut s) = self.unclaimed_at(Instant::now() + GRACE) else {
            return self.bound_last_words(deadline, words.end);
        };
        s.phase = Phase::Exiting;
        let outcome = s.at_deadline;
        let line = (words.summary)(s.attempts, &s.last, outcome);
        drop(s);
        // No attempt ended before the deadline: curl's table names it by the deadline.
        (words.end)(Some(line), crate::exit::Exit::of(outcome).code());
    }

    /// The run has claimed its ending: its last words have until the deadline, or
    /// [`LAST_WORDS`] from the claim when that is later. Past that, the process ends with
    /// the claimed code, unless the run said it was done.
    fn bound_last_words(&self, deadline: Instant, end: End) {
        let (lock, cvar) = &*self.state;
        let Ok(mut s) = lock.lock() else { return };
        loop {
            let Some((at, code)) = s.claimed.filter(|_| s.phase == Phase::Claimed) else {
                return;
            };
            let until = deadline.max(at + LAST_WORDS);
            let now = Instant::now();
            if now >= until {
                s.phase = Phase::Exiting;
                drop(s);
                return end(None, code);
            }
            s = match cvar.wait_timeout(s, until - now) {
                Ok((s, _)) => s,
                Err(_) => return,
            };
        }
    }

    /// Waits until `end`: the state, locked, if the run has not claimed its ending by then.
    fn unclaimed_at(&self, end: Instant) -> Option<std::sync::MutexGuard<'_, State>> {
        let (lock, cvar) = &*self.state;
        let mut s = lock.lock().ok()?;
        loop {
            if matches!(s.phase, Phase::Claimed | Phase::Done) {
                return None;
            }
            let now = Instant::now();
            if now >= end {
                return Some(s);
            }
            s = cvar.wait_timeout(s, end - now).ok()?.0;
        }
    }

    /// Whether a watchdog thread keeps a deadline for this run.
    pub fn keeps_a_deadline(&self) -> bool {
        self.state.0.lock().is_ok_and(|s| s.keeping)
    }

    /// Notes that attempt `n` began, or ended with `last` (for the watchdog's summary).
    pub fn note(&self, n: u32, last: &str) {
        if let Ok(mut s) = self.state.0.lock() {
            s.attempts = n;
            last.clone_into(&mut s.last);
        }
    }

    /// Another thread (the signal handler) takes the ending over, unless the run has
    /// claimed it or the watchdog is ending the process: then the attempts made and the last
    /// result, for its summary line.
    pub fn take_over(&self) -> Option<(u32, String)> {
        let mut s = self.state.0.lock().ok()?;
        if matches!(s.phase, Phase::Claimed | Phase::Exiting | Phase::Done) {
            return None;
        }
        s.phase = Phase::Exiting;
        Some((s.attempts, s.last.clone()))
    }

    /// A signal asked the run to stop: nothing is put in place from now on.
    pub fn stop(&self) {
        if let Ok(mut s) = self.state.0.lock() {
            s.stopped = true;
        }
    }

    /// Runs `put_in_place` (renaming `-o` into place) unless the deadline has passed or a
    /// signal has arrived; neither can happen while it runs. None: it did not run. The
    /// watchdog keeps watching: what follows the rename (`-D`, `-w`) is still bounded.
    pub fn commit<R>(&self, put_in_place: impl FnOnce() -> R) -> Option<R> {
        let s = self.state.0.lock().ok()?;
        (s.phase == Phase::Running && !s.fired && !s.stopped).then(put_in_place)
    }

    /// What the deadline ends the run with should the watchdog have to end it: `Deadline`
    /// (5), or `NotReady` (8) while the last answer was not ready (the decision's rule for
    /// an attempt the deadline cuts after such an answer).
    pub fn at_deadline(&self, outcome: crate::exit::Outcome) {
        if let Ok(mut s) = self.state.0.lock() {
            s.at_deadline = outcome;
        }
    }

    /// Notes what the current attempt is doing, for the watchdog's summary.
    pub fn note_last(&self, last: &str) {
        if let Ok(mut s) = self.state.0.lock() {
            last.clone_into(&mut s.last);
        }
    }

    /// Whether the deadline has passed (the watchdog fired).
    pub fn expired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// The run has settled on the outcome whose exit code is `code` and takes over its
    /// own ending: the watchdog no longer writes a summary, but still bounds the run's last
    /// words (see [`LAST_WORDS`]) and, if they are stuck, ends the process with `code`
    /// ([`Watchdog::expired`] still says whether the deadline had passed). When the
    /// watchdog has already begun to end the process, this never returns.
    pub fn claim(&self, code: u8) {
        let (lock, cvar) = &*self.state;
        let Ok(mut s) = lock.lock() else { return };
        if s.phase == Phase::Exiting {
            drop(s);
            loop {
                std::thread::park();
            }
        }
        s.phase = Phase::Claimed;
        s.claimed = Some((Instant::now(), code));
        cvar.notify_all();
    }

    /// Everything the run writes is written: the watchdog stands down for good.
    pub fn done(&self) {
        let (lock, cvar) = &*self.state;
        if let Ok(mut s) = lock.lock()
            && s.phase != Phase::Exiting
        {
            s.phase = Phase::Done;
            cvar.notify_all();
        }
    }
}

/// Writes the summary to stderr without waiting on a reader that stopped reading: stderr
/// is given [`LAST_WORDS`] to become writable (`poll`), then the line is written from this
/// thread, so a loaded machine that is slow to schedule a thread cannot lose it. A line of
/// at most `PIPE_BUF` bytes (4,096 on Linux) into a pipe that polls writable does not
/// block; a longer one is written from a thread of its own, given the same time.
#[cfg(unix)]
pub(crate) fn last_line(line: &str) {
    let text = format!("{line}\n").into_bytes();
    let mut fd = libc::pollfd {
        fd: 2,
        events: libc::POLLOUT,
        revents: 0,
    };
    let wait = i32::try_from(LAST_WORDS.as_millis()).unwrap_or(50);
    // SAFETY: poll on one descriptor of ours, with a valid pollfd.
    let ready = unsafe { libc::poll(&mut fd, 1, wait) } == 1 && fd.revents & libc::POLLOUT != 0;
    if !ready {
        return;
    }
    if text.len() <= 4096 {
        // SAFETY: a plain write of our own buffer to descriptor 2.
        unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
        return;
    }
    // Late or not started, the words are given up: the process ends now.
    let _ = crate::process::within::within(Some(LAST_WORDS), move || {
        // SAFETY: a plain write of our own buffer to descriptor 2.
        unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
    });
}

/// Windows has no `poll` of a pipe handle. A write to a console or a file never waits on a
/// reader: the line is written from this thread, as a short one is on Unix. Into a pipe
/// (whose reader may have stopped reading) it is written from a thread of its own, given
/// [`LAST_WORDS`], as a long line is on Unix.
#[cfg(not(unix))]
pub(crate) fn last_line(line: &str) {
    use std::io::{IsTerminal, Write as _};
    let text = format!("{line}\n").into_bytes();
    let err = std::io::stderr();
    let to_file = || {
        std::os::windows::io::AsHandle::as_handle(&err)
            .try_clone_to_owned()
            .map(std::fs::File::from)
            .and_then(|f| f.metadata())
            .is_ok_and(|m| m.is_file())
    };
    if err.is_terminal() || to_file() {
        let _ = err.lock().write_all(&text);
        return;
    }
    let _ = crate::process::within::within(Some(LAST_WORDS), move || {
        let _ = std::io::stderr().write_all(&text);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    type Ended = (Option<String>, u8);

    fn words(aborted: mpsc::Sender<()>, ended: mpsc::Sender<Ended>) -> LastWords {
        LastWords {
            abort: Box::new(move || {
                let _ = aborted.send(());
            }),
            summary: Box::new(|n, last, _| format!("{n} attempts, last {last}")),
            end: Box::new(move |line, code| {
                let _ = ended.send((line, code));
            }),
        }
    }

    #[test]
    fn nothing_is_put_in_place_after_a_signal_or_the_deadline() {
        let w = Watchdog::none();
        assert_eq!(w.commit(|| 1), Some(1));
        w.stop();
        assert_eq!(w.commit(|| 2), None, "after a signal");
        let (a, aborted) = mpsc::channel();
        let (e, _ended) = mpsc::channel();
        let w = Watchdog::start(Instant::now(), words(a, e));
        aborted.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(w.commit(|| 3), None, "after the deadline");
    }

    #[test]
    fn a_run_done_before_the_deadline_stands_the_watchdog_down() {
        let (a, aborted) = mpsc::channel();
        let (e, ended) = mpsc::channel();
        let w = Watchdog::start(Instant::now() + Duration::from_millis(30), words(a, e));
        w.claim(0);
        w.done();
        assert!(aborted.recv_timeout(Duration::from_millis(150)).is_err());
        assert!(ended.try_recv().is_err());
        assert!(!w.expired());
    }

    #[test]
    fn last_words_stuck_at_the_deadline_end_the_process_with_the_claimed_code() {
        let (a, aborted) = mpsc::channel();
        let (e, ended) = mpsc::channel();
        let begun = Instant::now();
        let w = Watchdog::start(begun + Duration::from_millis(80), words(a, e));
        // The outcome is settled (attempts exhausted), then the summary blocks.
        w.claim(4);
        let (line, code) = ended.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(begun.elapsed() >= Duration::from_millis(80), "not early");
        assert_eq!((line, code), (None, 4), "no second summary; the run's code");
        assert!(aborted.try_recv().is_err(), "nothing in flight to cut");
    }

    #[test]
    fn the_deadline_aborts_then_ends_a_run_that_does_not_claim() {
        let (a, aborted) = mpsc::channel();
        let (e, ended) = mpsc::channel();
        let begun = Instant::now();
        let w = Watchdog::start(begun + Duration::from_millis(40), words(a, e));
        w.note(2, "503");
        aborted.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(begun.elapsed() >= Duration::from_millis(40), "not early");
        assert!(w.expired());
        let (line, code) = ended.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(line.as_deref(), Some("2 attempts, last 503"));
        assert_eq!(code, 5);
        assert!(begun.elapsed() >= Duration::from_millis(40) + GRACE);
    }

    /// A run that claims within the grace (`done_too`: and finishes at once, else its last
    /// words are stuck).
    fn claim_in_the_grace(done_too: bool) -> (Watchdog, mpsc::Receiver<Ended>, Instant) {
        let (e, ended) = mpsc::channel();
        let cell: Arc<std::sync::OnceLock<Watchdog>> = Arc::default();
        let shared = cell.clone();
        let words = LastWords {
            // The run claims as soon as the agent is shut down, as a run blocked on the
            // network does.
            abort: Box::new(move || {
                if let Some(w) = shared.get() {
                    w.claim(5);
                    if done_too {
                        w.done();
                    }
                }
            }),
            summary: Box::new(|_, _, _| String::new()),
            end: Box::new(move |line, code| {
                let _ = e.send((line, code));
            }),
        };
        let begun = Instant::now();
        let w = Watchdog::start(begun + Duration::from_millis(200), words);
        let _ = cell.set(w.clone());
        (w, ended, begun)
    }

    #[test]
    fn a_claim_within_the_grace_keeps_the_ending_with_the_run() {
        let (w, ended, _) = claim_in_the_grace(true);
        assert!(ended.recv_timeout(Duration::from_secs(2)).is_err());
        assert!(w.expired());
        w.claim(5);
        assert!(
            w.expired(),
            "a claim after the deadline does not hide that it passed"
        );
        let (w, ended, begun) = claim_in_the_grace(false);
        let (line, code) = ended.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!((line, code), (None, 5));
        assert!(begun.elapsed() >= Duration::from_millis(200) + LAST_WORDS);
        assert!(w.expired());
    }
}
