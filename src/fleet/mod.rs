//! Beyond one call: the circuit breaker and the retry budget shared by the runs of a fleet
//! through `--state`. (`simulate`, beside this folder, plays a fleet of clients on the same
//! pure breaker and budget against a model server.)
//!
//! The fleet's rules are the policy's, its store the store crate's; this folder keeps the
//! run's side of them, and names them all under one roof for the command:
//!
//! - `breaker`, `record`, `job`, `op`, `splay`: the pure rules and records, the policy
//!   crate's (`retry_http_policy`, which holds the budget's rules too);
//! - `store`, `location`: where the records live and what `--state` names
//!   (`retry_http_store`, whose `file` and `redis` are the stores);
//! - `origins`: the careful client per origin in process (a Retry-After hold, RateLimit
//!   pacing, transfers in flight), shared by the transfers of one run;
//! - `admission`: a run's side, asking before the first attempt and before each retry and
//!   recording how the run ended.

pub mod admission;
pub mod origins;

pub use retry_http_policy::{Millis, breaker, job, op, record, splay};
pub use retry_http_store::{location, store};
