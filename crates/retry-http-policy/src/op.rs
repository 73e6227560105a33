//! The operations a run makes on its target's record, as values: what the `Store` seam
//! carries instead of code, so that a store on a server can decide on the server, in one
//! step, with no read-then-write that another run's update could come between (the Redis
//! store runs each as one script: `redis/ops.lua`). `Op::run` is the rule, on a record in
//! memory: the file store and the memory store of the tests run it as it is; the script
//! does the same arithmetic, and the property test in `redis/tests.rs` feeds both the same
//! events and compares what they answer and keep.
//!
//! Four operations cover a run: `Admit` before the first attempt (which also takes the
//! job's Idempotency-Key, or keeps the one proposed: see `job`), `Ask` before a retry's
//! wait (only when there is a Retry-After to share: otherwise the run decides on what the
//! store last told it), `Send` just before a retry is sent (the budget is charged here),
//! and `Record` at the end (or when an answer that was not ready proves the target up;
//! it retires the job's key when the answer was final).

use crate::Millis;
use crate::breaker::{Admission, RunResult};
use crate::job::{self, Job, Kept, Sent};
use crate::record::{Limits, Target};
use std::time::Duration;

/// One operation on a target's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// May the run start? The breaker's admission, taking the probe's lease for `lease`
    /// (at least the cooldown, see `Breaker::admit`) under the run's number `id` when the
    /// run is the half-open circuit's probe; the shared Retry-After; and whether the budget
    /// would grant the run a retry.
    Admit {
        /// How long the probe may hold the half-open circuit.
        lease: Duration,
        /// The run's number, for the lease and the budget (its own retries are told apart
        /// by it).
        id: u64,
        /// The run's job, with `--idempotency-key auto`: its key is taken from the record,
        /// or the one proposed is kept as the job's (get or set, in this one step).
        job: Option<Job>,
    },
    /// Before a retry's wait: shares `hint` (this attempt's Retry-After, clamped), then
    /// tells the shared Retry-After and, when `charge`, whether the budget would grant a
    /// retry (charging nothing).
    Ask {
        /// The Retry-After to share, if any.
        hint: Option<Duration>,
        /// Whether the retry would be charged to the budget.
        charge: bool,
        /// The run's number (as in `Admit`): its own retries do not count against it.
        run: u64,
    },
    /// Just before a retry is sent: a shared Retry-After that holds stops it (nothing
    /// charged); otherwise, when `charge`, one retry is taken from the budget.
    Send {
        /// Whether the retry is charged to the budget.
        charge: bool,
        /// The run's number (as in `Admit`), which the retry is charged to.
        run: u64,
    },
    /// How the run ended: shares `hint` first, then tells the breaker (`probe`: the lease
    /// the run took) and, for a success, the budget.
    Record {
        /// How the run counts.
        result: RunResult,
        /// The number of the probe's lease the run holds, if any.
        probe: Option<u64>,
        /// The Retry-After to share, if any.
        hint: Option<Duration>,
        /// The job whose answer was final, and the key this run sent: that key is retired.
        retire: Option<Sent>,
    },
}

/// What an operation answers. Times are as of the store's "now"; a shared Retry-After is
/// not clamped here (each run clamps it to its own `--max-retry-after`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `Op::Admit`: the breaker's answer, the shared Retry-After still holding, and
    /// whether the budget would grant a retry now (what the run goes by before a retry's
    /// wait when it has nothing to share).
    Admitted {
        /// The breaker's answer.
        admission: Admission,
        /// The shared Retry-After: how long it still holds.
        held: Option<Duration>,
        /// The budget's answer to a retry now: `Err` says how it is spent.
        budget: Result<(), String>,
        /// The job's key, when the run brought a job.
        job: Option<Kept>,
    },
    /// `Op::Ask` and `Op::Send`: the shared Retry-After (for `Send`, when it holds,
    /// nothing was charged), the budget's answer (`Ok` when nothing was to be charged),
    /// and its answer to one more retry after this operation (what the run goes by before
    /// its next retry's wait, when it has nothing to share).
    Told {
        /// The shared Retry-After: how long it still holds.
        held: Option<Duration>,
        /// The budget's answer: `Err` says how it is spent.
        budget: Result<(), String>,
        /// The budget's answer to one more retry, as of now.
        next: Result<(), String>,
    },
    /// `Op::Record`: done.
    Recorded,
}

impl Op {
    /// The operation on `t` at `now`: the rule every store follows.
    pub fn run(&self, t: &mut Target, now: Millis, limits: &Limits) -> Reply {
        match *self {
            Op::Admit { lease, id, job } => {
                let admission = t.admit(now, limits, lease, id);
                Reply::Admitted {
                    admission,
                    held: t.held(now),
                    budget: t.may_retry(now, limits, id),
                    job: job.map(|j| job::take(&mut t.jobs, &j, now)),
                }
            }
            Op::Ask { hint, charge, run } => {
                if let Some(h) = hint {
                    t.hold(now, h);
                }
                let next = t.may_retry(now, limits, run);
                Reply::Told {
                    held: t.held(now),
                    budget: if charge { next.clone() } else { Ok(()) },
                    next,
                }
            }
            Op::Send { charge, run } => {
                let held = t.held(now);
                let budget = if held.is_none() && charge {
                    t.take_retry(now, limits, run)
                } else {
                    Ok(())
                };
                Reply::Told {
                    held,
                    budget,
                    next: t.may_retry(now, limits, run),
                }
            }
            Op::Record {
                result,
                probe,
                hint,
                retire,
            } => {
                if let Some(h) = hint {
                    t.hold(now, h);
                }
                if let Some(sent) = retire {
                    job::retire(&mut t.jobs, &sent);
                }
                t.finish(now, result, probe, limits);
                Reply::Recorded
            }
        }
    }
}
