//! `retry-http simulate`: discrete-event simulations of a fleet of clients retrying, with
//! no network and no sleeping; the clients draw their waits from the very policy code the
//! real client uses, and the fleet-wide strategies run the very breaker and budget code of
//! `--state`. Four models:
//!
//! - `outage`: a server down for a while, then serving a fixed capacity per window (the
//!   AWS Architecture Blog's "Exponential Backoff And Jitter" study); with the physical
//!   limit and the search of the policy space.
//! - `overload`: a server whose latency grows with the load, clients that time out, and a
//!   short trigger that may leave the system stuck (Brooker's "Congestive collapse").
//! - `failures`: calls that fail independently with probability p (Brooker's "Fixing
//!   retries with token buckets and circuit breakers").
//! - `cron`: a fleet on one cron schedule, with or without `--splay`: where each period's
//!   requests and store operations land, second by second (arithmetic on the product's
//!   own splay offsets, not a simulation in time).
//!
//! - `limiter`: one batch against a token bucket (nginx's `limit_req`) and a fixed window,
//!   with and without the adaptive pacer a batch runs (`policy::pacer`).
//!
//! The first three run on one event engine (`engine`: the queue, the random delays, the
//! counts) and one list of client strategies (`strategy`: the waits, the per-client bucket
//! and breaker, the fleet's shared record). `sweep` plays the overload and failure-rate
//! models over seeds and grids; `report` prints the tables and JSON of all four, `plot`
//! draws the SVG charts of the first three (the plotting library is this crate's alone). The
//! command's `simulate::command` turns the flags into a checked job and runs it here.
//!
//! The crate stands on the pure ones only (`retry_http_policy`): no socket, no file, no
//! terminal; what it returns is text and SVG, written by the command.

pub mod cron;
pub mod engine;
pub mod failures;
pub mod limiter;
pub mod outage;
pub mod overload;
pub mod plot;
pub mod report;
pub mod strategy;
pub mod sweep;
