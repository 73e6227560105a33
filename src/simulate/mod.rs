//! `retry-http simulate`: the models are the simulator's crate (`retry_http_simulate`,
//! named here by its modules); `command` turns the flags into a checked job, runs it and
//! writes what it returns (stdout, the JSON, the SVG charts).

pub mod command;

pub use retry_http_simulate::{
    cron, failures, limiter, outage, overload, plot, report, strategy, sweep,
};
