//! Integration tests: the real binary against scripted servers on 127.0.0.1, one file per
//! concern.

mod common;
// Some of its steps only the fault matrix uses.
#[allow(dead_code)]
#[path = "../support/scripted.rs"]
mod scripted;

mod bodies;
mod broken_pipe;
mod bulk;
mod colour;
mod completions;
mod compression;
mod cron;
mod curl_everyday;
mod curl_flags;
mod deadline;
mod docs;
mod environment;
mod exits;
mod explain;
mod footprint;
mod golden;
mod headers;
mod hostile;
mod jitter;
mod json_log;
mod network;
mod output;
mod preflight;
mod proxies;
mod readiness;
mod replay;
mod response_head;
mod retry_after;
mod secret_inputs;
mod secrets;
mod signals;
mod simulate;
mod simulate_models;
mod state;
mod state_redis;
mod terminal;
mod tls;
mod trust;
mod usage;
mod write_out;
