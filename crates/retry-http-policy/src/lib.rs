//! The retry policy, pure: nothing here knows about sockets, clocks or terminals (the clock
//! and the random source are passed in), so the attempt loop and `simulate` share it. No
//! I/O dependency: the crate's dependencies parse, hash and draw numbers, and the
//! compiler holds the wall (the command, the store and the simulator depend on this crate,
//! never the reverse).
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
//! - `outcome`: how a run ended ([`outcome::Outcome`], the exit-code table) and what ended
//!   its last attempt, in curl's words ([`outcome::Cause`]);
//! - `readiness`: the `--until-*` conditions that make an answer ready.
//!
//! The fleet's rules, shared through `--state` and played by `simulate`:
//!
//! - `breaker`: the circuit breaker's pure decisions (closed, open, half-open with a probe
//!   lease);
//! - `budget`: the retry budget's pure decisions (a share of recent successes, a floor);
//! - `record`: the per-target record holding both, their settings, the JSON form and the
//!   bounds on what is remembered (TTL, targets, bytes);
//! - `job`: a job's Idempotency-Key kept in the record until the job's answer is final
//!   (`--idempotency-key auto` with `--state`), the job known by its digest alone;
//! - `op`: the operations a run makes on its target's record, as values, and their rule;
//! - `splay`: the stable per-host offset of `--splay` that spreads a fleet's first tries,
//!   and how a run's deadline cuts the splay.
//!
//! `units` holds the unit conversions and the forms durations are written in.

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod decision;
pub mod gate;
pub mod idempotency;
pub mod job;
pub mod op;
pub mod outcome;
pub mod pacer;
pub mod ratelimit;
pub mod readiness;
pub mod record;
pub mod replay;
pub mod retry_after;
pub mod splay;
pub mod units;

pub use backoff::{
    Backoff, Draw, Fit, Hint, Jitter, MIN_ATTEMPT, PlannedWait, WaitReason, fit_leaving,
    fit_to_deadline, plan_wait,
};
pub use replay::{FailureKind, StatusSet, is_idempotent, replay_allowed, status_means_unprocessed};

/// Timestamps of the shared state: milliseconds since the Unix epoch.
pub type Millis = u64;
