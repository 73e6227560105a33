//! SIGINT and SIGTERM: remembered, turned into an early end of the run, and never a leak of
//! temporary files.
//!
//! A signal wakes any wait at once and shuts the HTTP agent down, which aborts a transfer
//! in flight within milliseconds. A TCP connect in progress cannot be cut that way, so if
//! the run has not ended half a second after the signal, the handler removes the tracked
//! temporary files and exits itself with 128 + the signal number.

use signal_hook::consts::{SIGINT, SIGTERM};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

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
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        remove_temps();
        previous(info);
    }));
}

/// Which signal ended the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C): exit 130.
    Int,
    /// SIGTERM: exit 143.
    Term,
}

/// A shared flag set by the signal thread, with a condition variable so waits wake at once.
#[derive(Clone, Default)]
pub struct Interrupt {
    state: Arc<(Mutex<Option<Signal>>, Condvar)>,
}

impl Interrupt {
    /// An interrupt that no signal sets (for `simulate` and tests).
    pub fn none() -> Self {
        Self::default()
    }

    /// Installs the SIGINT/SIGTERM handler. `abort` is called from the handler thread to
    /// stop a transfer in flight; `last_words` writes the summary if the handler must end
    /// the process itself (after the temporary files are removed).
    pub fn install(
        abort: impl FnOnce() + Send + 'static,
        last_words: impl FnOnce(Signal) + Send + 'static,
    ) -> std::io::Result<Self> {
        let me = Self::default();
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let shared = me.clone();
        std::thread::spawn(move || {
            let Some(raw) = signals.forever().next() else {
                return;
            };
            let sig = if raw == SIGTERM {
                Signal::Term
            } else {
                Signal::Int
            };
            shared.set(sig);
            abort();
            std::thread::sleep(GRACE);
            remove_temps();
            crate::release::release_at_exit();
            last_words(sig);
            std::process::exit(128 + raw);
        });
        Ok(me)
    }

    fn set(&self, sig: Signal) {
        let (lock, cvar) = &*self.state;
        if let Ok(mut s) = lock.lock() {
            s.get_or_insert(sig);
            cvar.notify_all();
        }
    }

    /// The signal received, if any.
    pub fn fired(&self) -> Option<Signal> {
        self.state.0.lock().ok().and_then(|s| *s)
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
