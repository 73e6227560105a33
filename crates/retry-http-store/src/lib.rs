//! The fleet's store: where the records of `--state` live, each operation on a target's
//! record decided and written back in one step. The records and the rules they follow are
//! the policy's (`retry_http_policy::record`, `op`, `breaker`, `budget`, `job`); this crate
//! keeps them.
//!
//! - `store`: the seam where records live (the `Store` trait), the store's clock, and the
//!   store in memory a batch keeps without `--state`; it knows no store in particular;
//! - `location`: what `--state` names, read and described, and the store it names opened
//!   (the only file that knows every kind of store);
//! - `file`: the store of `--state FILE` (ownership marker, lock file, atomic rename);
//! - `redis`: the store of `--state redis://...` and `redis+cluster://...` (one key per
//!   target, one script per operation), with the protocol's client.

pub mod file;
pub mod location;
pub mod redis;
pub mod store;
