//! Beyond one call: the circuit breaker and the retry budget shared by the runs of a fleet
//! through `--state`. (`simulate`, beside this folder, plays a fleet of clients on the same
//! pure breaker and budget against a model server.)
//!
//! - `breaker`: the circuit breaker's pure decisions (closed, open, half-open with a probe
//!   lease);
//! - `budget`: the retry budget's pure decisions (a share of recent successes, a floor);
//! - `record`: the per-target record holding both, their settings, the JSON form and the
//!   bounds on what is remembered (TTL, targets, bytes);
//! - `job`: a job's Idempotency-Key kept in the record until the job's answer is final
//!   (`--idempotency-key auto` with `--state`), the job known by its digest alone;
//! - `op`: the operations a run makes on its target's record, as values, and their rule;
//! - `store`: the seam where records live, each operation decided and written back in one
//!   step, and the store's clock; it knows no store in particular;
//! - `location`: what `--state` names, read and described, and the store it names opened
//!   (the only file that knows every kind of store);
//! - `file`: the store of `--state FILE` (ownership marker, lock file, atomic rename);
//! - `redis`: the store of `--state redis://...` (one key per target, one script per
//!   operation);
//! - `splay`: the stable per-host offset of `--splay` that spreads a fleet's first tries,
//!   and how a run's deadline cuts the splay;
//! - `origins`: the careful client per origin in process (a Retry-After hold, RateLimit
//!   pacing, transfers in flight), shared by the transfers of one run;
//! - `admission`: a run's side, asking before the first attempt and before each retry and
//!   recording how the run ended.

pub mod admission;
pub mod breaker;
pub mod budget;
pub mod file;
pub mod job;
pub mod location;
pub mod op;
pub mod origins;
pub mod record;
pub mod redis;
pub mod splay;
pub mod store;

/// Timestamps of the shared state: milliseconds since the Unix epoch.
pub type Millis = u64;
