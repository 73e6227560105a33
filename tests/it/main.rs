//! Integration tests: the real binary against scripted servers on 127.0.0.1, one file per
//! concern.

mod common;
// Some of its steps only the fault matrix uses.
#[allow(dead_code)]
#[path = "../support/scripted.rs"]
mod scripted;
#[path = "../support/silent.rs"]
mod silent;
#[allow(dead_code)]
#[path = "../support/tls.rs"]
mod tls_support;

mod adaptive_pacing;
mod batch;
mod batch_hostile;
mod batch_reuse;
mod batch_stops;
mod blocked_output;
mod bodies;
mod broken_pipe;
mod bulk;
mod cert_folders;
mod colour;
mod completions;
mod compression;
mod cron;
mod curl_everyday;
mod curl_exit_codes;
mod curl_flags;
mod curl_retry;
mod deadline;
mod deadline_budget;
mod docs;
mod environment;
mod exits;
mod explain;
mod final_line;
mod fleet_hostile;
mod footprint;
mod golden;
mod headers;
mod health_exit;
mod hostile;
mod inputs;
mod interim;
mod jitter;
mod json_log;
mod keys_chaos;
mod keys_hostile;
mod keys_identity;
mod keys_protocol;
mod keys_state;
mod leftover;
mod limits;
mod many_urls_cli;
mod network;
mod oracle;
mod output;
mod owned_files;
mod pacing;
mod portable;
mod preflight;
mod proxies;
mod readiness;
mod recipes;
mod replay;
mod response_head;
mod retry_after;
mod secret_inputs;
mod secrets;
mod shared_rules;
mod signals;
mod simulate;
mod simulate_golden;
mod simulate_models;
mod smoke;
mod special_files;
mod splay;
mod state;
mod state_cluster;
mod state_redis;
mod state_report;
mod terminal;
mod tls;
mod tls_faults;
mod trust;
mod unfollowed;
mod upload_stall;
mod usage;
mod write_out;
