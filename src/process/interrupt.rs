//! SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2 and SIGALRM (every signal that someone sends
//! to stop a process and whose default action would end it without a word): remembered,
//! turned into an early end of the run, and never a leak of temporary files.
//!
//! A signal wakes any wait at once and shuts the HTTP agent down, which aborts a transfer
//! in flight within milliseconds. A TCP connect in progress cannot be cut that way, so if
//! the run has not ended half a second after the signal, the handler removes the tracked
//! temporary files and exits itself with the signal's exit status (128 + its number on
//! Linux, see [`Signal::outcome`]).
//!
//! A signal ignored when the process starts (`nohup` ignores SIGHUP; a shell ignores SIGINT
//! for a job it starts with `&`) stays ignored. SIGQUIT keeps its default action (core
//! dump): it is the way out that does not depend on this handler. SIGKILL cannot be caught.
//! SIGXFSZ (a write past `ulimit -f`) is ignored, so the write fails with an error the run
//! reports and cleans up after, instead of killing the process.
//!
//! Windows has no signals: the console's control events stand for them, through a handler
//! registered with `SetConsoleCtrlHandler`. Ctrl-C ends the run as SIGINT does (exit 130),
//! Ctrl-Break as SIGTERM (143, a request to stop; `taskkill` without `/F` sends a console
//! close), and the console closing, the user logging off or the system shutting down as
//! SIGHUP (129). Windows runs the handler on a thread of its own and ends the process when
//! it returns (after a console close, at the latest 5 s later): it does the ending itself
//! (the same grace, the temporary files removed) and never returns once it has begun.
//! `TerminateProcess` (`taskkill /F`, Task Manager) is Windows' SIGKILL: nothing runs.

use crate::exit::Outcome;
#[cfg(unix)]
use signal_hook::consts::{SIGALRM, SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};
#[cfg(not(unix))]
use windows_numbers::{SIGALRM, SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2};

/// How long the run has to end by itself after a signal, before the handler exits.
const GRACE: Duration = Duration::from_millis(450);

/// Temporary files to remove if the process must exit from the handler.
fn temps() -> &'static Mutex<HashSet<PathBuf>> {
    static TEMPS: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    TEMPS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Registers a temporary file for removal on a forced exit.
pub fn track_temp(path: &Path) {
    if let Ok(mut t) = temps().lock() {
        t.insert(path.to_path_buf());
    }
}

/// Forgets a temporary file (renamed into place or removed).
pub fn untrack_temp(path: &Path) {
    if let Ok(mut t) = temps().lock() {
        t.remove(path);
    }
}

/// Removes every tracked temporary file (before a forced exit).
pub(crate) fn remove_temps() {
    if let Ok(t) = temps().lock() {
        for p in t.iter() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Removes the tracked temporary files if the program panics, then reports the panic on
/// one line. Release builds abort on panic (no unwinding, so no destructors run); this hook
/// keeps the promise that no partial file is left behind.
pub fn clean_up_on_panic() {
    std::panic::set_hook(Box::new(|info| {
        use std::io::Write as _;
        remove_temps();
        // Rust's own hook would print the message as it is, and a message may quote a
        // secret the run was given: it is masked like every other line (withheld when
        // the secrets cannot be consulted). A backtrace follows under RUST_BACKTRACE.
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("<unnamed>");
        let message = crate::redact::marked_now(&info.to_string())
            .unwrap_or_else(|| "panicked (its message is withheld)".into());
        let backtrace = std::backtrace::Backtrace::capture();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "thread '{name}' {message}");
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            let _ = writeln!(err, "{backtrace}");
        }
        if crate::exit::health_exit() {
            // Docker's rule: a panic is unhealthy (1), not an abort's signal.
            // SAFETY: _exit ends the process at once; the temporary files are removed.
            unsafe { libc::_exit(1) };
        }
    }));
}

/// Which signal ended the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGHUP (the terminal or the ssh session closed, a daemon restarting): exit 129.
    Hup,
    /// SIGINT (Ctrl-C): exit 130.
    Int,
    /// SIGUSR1: exit 138.
    Usr1,
    /// SIGUSR2: exit 140.
    Usr2,
    /// SIGALRM: exit 142.
    Alrm,
    /// SIGTERM: exit 143.
    Term,
}

impl Signal {
    /// Every signal the handler catches.
    pub const HANDLED: [Signal; 6] = [
        Signal::Hup,
        Signal::Int,
        Signal::Usr1,
        Signal::Usr2,
        Signal::Alrm,
        Signal::Term,
    ];

    /// The signal's number.
    pub fn number(self) -> i32 {
        match self {
            Signal::Hup => SIGHUP,
            Signal::Int => SIGINT,
            Signal::Usr1 => SIGUSR1,
            Signal::Usr2 => SIGUSR2,
            Signal::Alrm => SIGALRM,
            Signal::Term => SIGTERM,
        }
    }

    fn from_number(raw: i32) -> Option<Signal> {
        Signal::HANDLED.into_iter().find(|s| s.number() == raw)
    }

    /// How a run this signal ended ends: the outcome, whose exit status is 128 + the
    /// signal's number on Linux (the same status everywhere, as the exit-code table says).
    pub fn outcome(self) -> Outcome {
        match self {
            Signal::Hup => Outcome::Hangup,
            Signal::Int => Outcome::Interrupted,
            Signal::Usr1 => Outcome::UserSignal1,
            Signal::Usr2 => Outcome::UserSignal2,
            Signal::Alrm => Outcome::Alarm,
            Signal::Term => Outcome::Terminated,
        }
    }
}

/// The numbers Linux gives the signals, which name them on Windows too (so that the exit
/// statuses are the same everywhere).
#[cfg(not(unix))]
mod windows_numbers {
    pub const SIGHUP: i32 = 1;
    pub const SIGINT: i32 = 2;
    pub const SIGUSR1: i32 = 10;
    pub const SIGUSR2: i32 = 12;
    pub const SIGALRM: i32 = 14;
    pub const SIGTERM: i32 = 15;
}

/// Whether `sig` was ignored when the process started (`nohup`, a background job).
#[cfg(unix)]
fn ignored_at_start(sig: i32) -> bool {
    // SAFETY: with a null new action, sigaction only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// What the handler runs once a signal comes, as the last [`Interrupt::install`] set it.
struct Ending {
    abort: Option<Box<dyn FnOnce() + Send>>,
    last_words: Option<Box<dyn FnOnce(Signal) + Send>>,
}

/// A shared flag set by the signal thread, with a condition variable so waits wake at once.
#[derive(Clone, Default)]
pub struct Interrupt {
    state: Arc<(Mutex<Option<Signal>>, Condvar)>,
    /// The number of a signal received (0: none), stored by the signal handler itself: a
    /// system call that the signal cut short (EINTR) returns before the signal thread has
    /// set `state`, and what failed with it must already know that a signal came.
    raised: Arc<AtomicUsize>,
}

impl Interrupt {
    /// An interrupt that no signal sets (for `simulate` and tests).
    pub fn none() -> Self {
        Self::default()
    }

    /// Installs the handler of the [`Signal::HANDLED`] signals (but those ignored at start,
    /// which stay ignored), and ignores SIGXFSZ. `abort` is called from the handler thread
    /// to stop a transfer in flight; `last_words` writes the summary if the handler must end
    /// the process itself (after the temporary files are removed).
    ///
    /// Installed once per process: a later call (the session's, after the handler that
    /// ends a run still reading its `-K` file or URL list) gives the same interrupt, whose
    /// ending is from then on this call's `abort` and `last_words`.
    pub fn install(
        abort: impl FnOnce() + Send + 'static,
        last_words: impl FnOnce(Signal) + Send + 'static,
    ) -> std::io::Result<Self> {
        static INSTALLED: OnceLock<(Interrupt, Arc<Mutex<Ending>>)> = OnceLock::new();
        let ending = Ending {
            abort: Some(Box::new(abort)),
            last_words: Some(Box::new(last_words)),
        };
        if let Some((me, set)) = INSTALLED.get() {
            if let Ok(mut e) = set.lock() {
                // A signal came before this call (while the `-K` file or the URL list was
                // read or checked): the handler is ending the process with the ending it
                // had, which says nothing was sent. The run must neither send anything nor
                // write a summary of its own.
                if me.fired().is_some() || e.last_words.is_none() {
                    drop(e);
                    loop {
                        std::thread::park();
                    }
                }
                *e = ending;
            }
            return Ok(me.clone());
        }
        let me = Self::default();
        let set = Arc::new(Mutex::new(ending));
        let (a, w) = (set.clone(), set.clone());
        me.listen(
            move || {
                if let Some(abort) = a.lock().ok().and_then(|mut e| e.abort.take()) {
                    abort();
                }
            },
            move |sig| {
                if let Some(words) = w.lock().ok().and_then(|mut e| e.last_words.take()) {
                    words(sig);
                }
            },
        )?;
        let _ = INSTALLED.set((me.clone(), set));
        Ok(me)
    }

    /// The ending once `sig` came: the flag set, the transfer aborted, then after
    /// [`GRACE`] (if the run has not ended by itself) the temporary files removed, the
    /// last words written and the process ended with the signal's status.
    fn end(&self, sig: Signal, abort: impl FnOnce(), last_words: impl FnOnce(Signal)) -> ! {
        self.set(sig);
        abort();
        std::thread::sleep(GRACE);
        remove_temps();
        crate::process::release::release_at_exit();
        last_words(sig);
        std::process::exit(i32::from(crate::exit::status(sig.outcome().code())));
    }

    /// Windows: the console's control handler (see the module's comment).
    #[cfg(not(unix))]
    fn listen(
        &self,
        abort: impl FnOnce() + Send + 'static,
        last_words: impl FnOnce(Signal) + Send + 'static,
    ) -> std::io::Result<()> {
        console::listen(self.clone(), Box::new(abort), Box::new(last_words))
    }

    /// Unix: SIGXFSZ ignored, the signals' handlers, and the thread that ends the run.
    #[cfg(unix)]
    fn listen(
        &self,
        abort: impl FnOnce() + Send + 'static,
        last_words: impl FnOnce(Signal) + Send + 'static,
    ) -> std::io::Result<()> {
        // SAFETY: setting a signal's disposition to SIG_IGN runs no code in a handler.
        unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
        let me = self;
        let wanted = Signal::HANDLED
            .map(Signal::number)
            .into_iter()
            .filter(|&n| !ignored_at_start(n));
        let wanted: Vec<i32> = wanted.collect();
        for &n in &wanted {
            let number = usize::try_from(n).unwrap_or_default();
            signal_hook::flag::register_usize(n, me.raised.clone(), number)?;
        }
        let mut signals = signal_hook::iterator::Signals::new(wanted)?;
        let shared = me.clone();
        std::thread::spawn(move || {
            let Some(sig) = signals.forever().find_map(Signal::from_number) else {
                return;
            };
            shared.end(sig, abort, last_words);
        });
        Ok(())
    }

    fn set(&self, sig: Signal) {
        let (lock, cvar) = &*self.state;
        if let Ok(mut s) = lock.lock() {
            s.get_or_insert(sig);
            cvar.notify_all();
        }
    }

    /// The signal received, if any (as soon as its handler has run).
    pub fn fired(&self) -> Option<Signal> {
        let raised = i32::try_from(self.raised.load(Ordering::SeqCst)).unwrap_or_default();
        self.state
            .0
            .lock()
            .ok()
            .and_then(|s| *s)
            .or_else(|| Signal::from_number(raised))
    }

    /// Sleeps for `d` unless a signal arrives first; returns the signal if one did.
    pub fn sleep(&self, d: Duration) -> Option<Signal> {
        let end = Instant::now() + d;
        let (lock, cvar) = &*self.state;
        let mut guard = match lock.lock() {
            Ok(g) => g,
            Err(_) => {
                std::thread::sleep(d);
                return None;
            }
        };
        loop {
            if guard.is_some() {
                return *guard;
            }
            let now = Instant::now();
            if now >= end {
                return None;
            }
            guard = match cvar.wait_timeout(guard, end - now) {
                Ok((g, _)) => g,
                Err(_) => return None,
            };
        }
    }
}

/// Windows' console control handler.
#[cfg(not(unix))]
mod console {
    use super::{Interrupt, Signal};
    use std::sync::{Mutex, OnceLock};
    use windows_sys::Win32::Foundation::{FALSE, TRUE};
    use windows_sys::Win32::System::Console::{
        CTRL_BREAK_EVENT, CTRL_C_EVENT, CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT,
        SetConsoleCtrlHandler,
    };
    use windows_sys::core::BOOL;

    /// What the handler runs: taken by the first event (a second one finds nothing and
    /// waits for the first's ending).
    type Ending = (
        Interrupt,
        Box<dyn FnOnce() + Send>,
        Box<dyn FnOnce(Signal) + Send>,
    );

    fn ending() -> &'static Mutex<Option<Ending>> {
        static ENDING: OnceLock<Mutex<Option<Ending>>> = OnceLock::new();
        ENDING.get_or_init(|| Mutex::new(None))
    }

    /// Registers the handler.
    ///
    /// Errors: `SetConsoleCtrlHandler` failed (the system's error).
    pub(super) fn listen(
        me: Interrupt,
        abort: Box<dyn FnOnce() + Send>,
        last_words: Box<dyn FnOnce(Signal) + Send>,
    ) -> std::io::Result<()> {
        if let Ok(mut e) = ending().lock() {
            *e = Some((me, abort, last_words));
        }
        // SAFETY: registers a handler function that lives as long as the program.
        if unsafe { SetConsoleCtrlHandler(Some(handler), TRUE) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The signal a console event stands for (see the module's comment).
    pub(super) fn signal(event: u32) -> Option<Signal> {
        match event {
            CTRL_C_EVENT => Some(Signal::Int),
            CTRL_BREAK_EVENT => Some(Signal::Term),
            CTRL_CLOSE_EVENT | CTRL_LOGOFF_EVENT | CTRL_SHUTDOWN_EVENT => Some(Signal::Hup),
            _ => None,
        }
    }

    unsafe extern "system" fn handler(event: u32) -> BOOL {
        let Some(sig) = signal(event) else {
            return FALSE;
        };
        let taken = ending().lock().ok().and_then(|mut e| e.take());
        match taken {
            Some((me, abort, last_words)) => me.end(sig, abort, last_words),
            // Another event is being handled: it ends the process.
            None => loop {
                std::thread::sleep(super::GRACE);
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn exit_status_is_128_plus_the_signal_number() {
        for s in Signal::HANDLED {
            assert_eq!(i32::from(s.outcome().code()), 128 + s.number(), "{s:?}");
        }
    }

    /// Ctrl-C is SIGINT (130), Ctrl-Break SIGTERM (143), the console closing, a log-off
    /// and a shutdown SIGHUP (129); no other event is taken.
    #[test]
    #[cfg(windows)]
    fn console_events_stand_for_signals() {
        use windows_sys::Win32::System::Console as c;
        let cases = [
            (c::CTRL_C_EVENT, Some(130)),
            (c::CTRL_BREAK_EVENT, Some(143)),
            (c::CTRL_CLOSE_EVENT, Some(129)),
            (c::CTRL_LOGOFF_EVENT, Some(129)),
            (c::CTRL_SHUTDOWN_EVENT, Some(129)),
            (3, None),
            (7, None),
        ];
        for (event, status) in cases {
            let got = console::signal(event).map(|s| crate::exit::status(s.outcome().code()));
            assert_eq!(got, status, "event {event}");
        }
    }

    #[test]
    fn every_signal_has_its_own_outcome() {
        for s in Signal::HANDLED {
            assert_eq!(Signal::from_number(s.number()), Some(s));
            let same = Signal::HANDLED
                .iter()
                .filter(|t| t.outcome() == s.outcome());
            assert_eq!(same.count(), 1, "{s:?}");
        }
    }
}
