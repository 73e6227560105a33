//! The one answer to "may I send?", whoever is asked: the origin's table before every
//! attempt (`fleet::origins`: its hold, RateLimit pacing, room in flight), the breaker's
//! and budget's records just before a retry is sent (another run's or transfer's
//! Retry-After, the retry budget), and what the decision makes of the [`Outlook`] those
//! records gave as the attempt's answer was told (`decision::decide`, rows 16 to 18). Go
//! now, wait this long and ask again (and why), or stop (and why, which says the exit
//! status).

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
    /// The batch the run belongs to starts no new transfer (`--fail-early` after a
    /// failure, stdout's reader gone), and this run has sent nothing yet: why. The batch
    /// counts it not started, so its outcome is never seen.
    Halted(String),
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

/// What the breaker's and budget's records said about a retry as an attempt's answer was
/// told to the gate (`gate::Gate::tell`, which first shares the answer's Retry-After or
/// spent quota): a fact the decision weighs (`decision::retry_gate`), nothing charged.
/// The default: nothing holds, the budget has room (no records, or a store gone under
/// `--state-on-error open`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outlook {
    /// A Retry-After shared by another run (or another transfer of a batch) still holding
    /// this long, clamped to `--max-retry-after`.
    pub held: Option<Duration>,
    /// The retry budget has no room for a charged retry: why (a poll is not charged).
    pub spent: Option<String>,
    /// The store failed under `--state-on-error closed`: no retry, why.
    pub failed: Option<String>,
    /// The origin's key, as the line names it.
    pub origin: String,
}
