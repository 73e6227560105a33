//! Integration tests: the real binary against scripted servers on 127.0.0.1.

mod common;
// Some of its steps only the fault matrix uses.
mod exits;
mod fixes;
mod hostile;
mod jitter;
mod json_log;
mod output;
mod replay;
mod retry_after;
#[allow(dead_code)]
#[path = "../support/scripted.rs"]
mod scripted;
mod secrets;
mod signals;
mod simulate;
mod state;
mod surface;
mod terminal;
mod tls;
mod trust;
mod usage;
