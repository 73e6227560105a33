//! The round-trip counting proxy of the tests (tests/support/round_trips.rs) as a program,
//! for benches/state_scale.py: the same counting at 1,000 connections, without the cost of
//! a proxy in Python. std only: `state_scale.sh` builds it with rustc alone.
//!
//!     proxy UPSTREAM_PORT
//!
//! Prints the proxy's port on 127.0.0.1, then for each line read on stdin prints, once
//! every connection has closed, the connections and round trips counted so far
//! (`CONNECTIONS ROUND_TRIPS`). Ends at the end of stdin.

#[path = "../../tests/support/round_trips.rs"]
mod round_trips;

use std::io::{BufRead, Write};
use std::time::Duration;

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            eprintln!("usage: proxy UPSTREAM_PORT");
            std::process::exit(2)
        });
    let proxy = round_trips::RoundTripProxy::start(([127, 0, 0, 1], port).into());
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", proxy.port()).and_then(|()| out.flush());
    for _ in std::io::stdin().lock().lines() {
        let c = proxy.settle(Duration::from_secs(60));
        let _ = writeln!(out, "{} {}", c.connections, c.round_trips).and_then(|()| out.flush());
    }
}
