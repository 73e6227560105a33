//! Integration tests: the real binary against scripted servers on 127.0.0.1.

mod common;
mod exits;
mod fixes;
mod hostile;
mod jitter;
mod json_log;
mod output;
mod replay;
mod retry_after;
mod secrets;
mod signals;
mod simulate;
mod state;
mod surface;
mod terminal;
mod tls;
mod trust;
mod usage;
