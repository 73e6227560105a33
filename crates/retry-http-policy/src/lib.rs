//! The retry policy, pure: nothing here knows about sockets, clocks or terminals (the clock
//! and the random source are passed in), so the attempt loop and `simulate` share it.
//!
//! - `backoff`: capped exponential backoff with full, equal, decorrelated, additive or no
//!   jitter, and how a wait is fitted to the deadline;
//! - `retry_after`: reading the Retry-After header (RFC 9110 section 10.2.3);
//! - `ratelimit`: reading the RateLimit fields of the three dialects into one quota;
//! - `replay`: the failure kinds, `--retry-on`, and whether a request may be sent again;
//! - `idempotency`: what 409, 422 and 400 mean to a request that carries an
//!   Idempotency-Key (the IETF httpapi draft), and what a run does about each;
//! - `pacer`: the rate an origin accepts, learnt from its throttles and accepted answers;
//! - `gate`: the one answer to "may I send?" (go, wait this long, stop), and why;
//! - `decision`: THE decision after an attempt, stop (with which outcome and why) or retry
//!   (after how long); the single source of the exit-code precedence;
//! - `readiness`: the `--until-*` conditions that make an answer ready.

pub mod backoff;
pub mod decision;
pub mod gate;
pub mod idempotency;
pub mod pacer;
pub mod ratelimit;
pub mod readiness;
pub mod replay;
pub mod retry_after;

pub use backoff::{
    Backoff, Draw, Fit, Hint, Jitter, MIN_ATTEMPT, PlannedWait, WaitReason, fit_leaving,
    fit_to_deadline, plan_wait,
};
pub use replay::{FailureKind, StatusSet, is_idempotent, replay_allowed, status_means_unprocessed};
