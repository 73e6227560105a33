//! The one answer to "may I send?", whoever is asked: the origin's table before every
//! attempt (`fleet::origins`: its hold, RateLimit pacing, room in flight), the shared state
//! when a retry is planned and again just before it is sent (`fleet::admission`: another
//! run's Retry-After, the retry budget), and what the decision hears of the latter
//! (`decision::decide`, rows 16 to 18). Go now, wait this long and ask again (and why), or
//! stop (and why, which says the exit status).

use std::time::Duration;

/// May the request be sent?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clear {
    /// Send it now (the origin's table counts it in flight until it is told the answer; a
    /// retry sent is charged to the budget when it was to be).
    Go,
    /// Wait this long, then ask again (nothing was counted or charged).
    Wait {
        /// How long, from the answer.
        wait: Duration,
        /// Why: what to say, and whose wait it is.
        why: Why,
    },
    /// Send nothing more: the run ends, for this reason.
    Stop(Stop),
}

/// Why a send waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The origin is held by a Retry-After or a spent quota this run was told: the line to
    /// say, for the first transfer to meet this hold (`None` for the others).
    Held(Option<String>),
    /// Pacing from the origin's quota: the line saying why.
    Pacing(String),
    /// No room in flight (the origin's first answer not in yet, or its quota in flight):
    /// silent.
    Room,
    /// A Retry-After that another run (or, in a batch, another transfer) shared through
    /// `--state` still holds; `left` is the time left before the deadline as the answer
    /// came (`None`: no deadline, or not known to whoever answered).
    Shared {
        /// Time left before the deadline then.
        left: Option<Duration>,
        /// The line saying the wait, when it is to be said.
        line: Option<String>,
    },
}

/// Why nothing more is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The retry budget has no room, or the store failed under `--state-on-error closed`
    /// (exit 7); why.
    Spent(String),
    /// A wait that would end past the deadline: a hold, shared or the origin's, or the
    /// quota's pacing (exit 5); why.
    TooLate(String),
}

impl Clear {
    /// A wait for a Retry-After shared through `--state`, still holding for `held`.
    pub fn shared_hold(held: Duration) -> Clear {
        Clear::Wait {
            wait: held,
            why: Why::Shared {
                left: None,
                line: None,
            },
        }
    }
}
