//! Work that may block for ever (opening a FIFO nobody reads, reading stdin that never
//! ends, the system's name lookup, a write to a stuck terminal), run on a thread of its own
//! and waited for at most a limit: [`within`]. A leaf: it uses nothing of the workspace.

use std::io;
use std::sync::mpsc;
use std::time::Duration;

/// Why [`within`] has no result to give.
#[derive(Debug)]
pub enum Missed {
    /// The limit passed first. The thread is left running: it cannot be stopped from
    /// outside, so it ends when the work does (its result is then dropped), or with the
    /// process.
    Late,
    /// No thread could be started (the system's limit on threads or memory): the work did
    /// not run.
    NoThread(io::Error),
}

/// Runs `work` and gives its result, waiting at most `limit` for it (`None`: no limit, and
/// `work` runs on the calling thread). With a limit, `work` runs on a thread of its own
/// and the caller waits; when the limit passes first, the answer is [`Missed::Late`] and
/// the thread is left behind (see there). A `work` that panics is taken as late: the
/// caller has waited for it, and has nothing.
pub fn within<T, F>(limit: Option<Duration>, work: F) -> Result<T, Missed>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let Some(limit) = limit else {
        return Ok(work());
    };
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .spawn(move || {
            // The caller may have stopped waiting: then nobody wants the result.
            let _ = tx.send(work());
        })
        .map_err(Missed::NoThread)?;
    rx.recv_timeout(limit).map_err(|_| Missed::Late)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn work_done_in_time_gives_its_result() {
        let got = within(Some(Duration::from_secs(10)), || 6 * 7);
        assert!(matches!(got, Ok(42)), "{got:?}");
    }

    #[test]
    fn without_a_limit_the_work_runs_on_the_calling_thread() {
        let caller = std::thread::current().id();
        let got = within(None, move || std::thread::current().id() == caller);
        assert!(matches!(got, Ok(true)), "{got:?}");
    }

    #[test]
    fn work_that_outlasts_the_limit_is_late_and_left_running() {
        let (tx, rx) = mpsc::channel();
        let start = Instant::now();
        let got = within(Some(Duration::from_millis(50)), move || {
            std::thread::sleep(Duration::from_millis(300));
            let _ = tx.send("finished");
        });
        assert!(matches!(got, Err(Missed::Late)), "{got:?}");
        assert!(start.elapsed() < Duration::from_millis(250));
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("finished"));
    }

    #[test]
    fn work_that_panics_is_late() {
        let got: Result<(), Missed> = within(Some(Duration::from_secs(10)), || panic!("boom"));
        assert!(matches!(got, Err(Missed::Late)), "{got:?}");
    }
}
