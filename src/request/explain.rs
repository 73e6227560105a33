//! `--explain`: the resolved policy and the schedule it implies, as text for stdout. Pure:
//! computed from the configuration alone, nothing is sent.

use crate::config::Config;
use crate::http::redact;
use crate::policy::{self, FailureKind, Jitter};
use crate::report::fmt_duration;
use std::fmt::Write;
use std::time::Duration;

fn opt(d: Option<Duration>, none: &str) -> String {
    d.map_or_else(|| none.to_string(), fmt_duration)
}

fn jitter_rule(j: Jitter) -> String {
    match j {
        Jitter::Full => "full jitter: wait = uniform(0, ceiling)".into(),
        Jitter::Equal => "equal jitter: wait = ceiling/2 + uniform(0, ceiling/2)".into(),
        Jitter::Decorrelated => {
            "decorrelated jitter: wait = min(cap, uniform(base, previous * 3))".into()
        }
        Jitter::None => "no jitter: wait = ceiling".into(),
        Jitter::Additive(d) => format!(
            "additive jitter: wait = ceiling + uniform(0, {})",
            fmt_duration(d)
        ),
    }
}

fn replay_rule(cfg: &Config) -> String {
    let m = &cfg.request.method;
    if policy::is_idempotent(m) {
        format!("{m} is idempotent (RFC 9110 section 9.2.2): replayed after any retryable failure")
    } else if cfg.retry.idempotency_key.is_some() {
        format!("{m} carries an Idempotency-Key: replayed after any retryable failure")
    } else if cfg.retry.retry_unsafe {
        format!("{m} is replayed after any retryable failure (--retry-unsafe)")
    } else {
        format!(
            "{m} is not idempotent: replayed only when the failure proves it was not processed \
             (refused, DNS, connect timeout, TLS handshake; 408, 429, 503); \
             --idempotency-key or --retry-unsafe allow more"
        )
    }
}

/// The explanation printed by `--explain`.
pub fn explain(cfg: &Config) -> String {
    let r = &cfg.retry;
    let b = &r.backoff;
    let t = &cfg.timeouts;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "policy for {} {}",
        cfg.request.method,
        redact::url(&cfg.request.url)
    );
    let _ = writeln!(
        s,
        "  attempts      {} (the first and {} retries)",
        r.attempts,
        r.attempts - 1
    );
    let _ = writeln!(
        s,
        "  backoff       ceiling = min(cap {}, base {} * 2^n); {}",
        fmt_duration(b.cap),
        fmt_duration(b.base),
        jitter_rule(b.jitter)
    );
    let _ = writeln!(s, "  deadline      {}", opt(r.deadline, "none"));
    let _ = writeln!(
        s,
        "  timeouts      attempt {}, connect {}, stall {}",
        opt(t.attempt, "none"),
        opt(t.connect, "none"),
        opt(t.stall, "off")
    );
    let spread = match b.jitter {
        Jitter::Additive(d) => format!("+ uniform(0, {}) from the jitter", fmt_duration(d)),
        _ => format!(
            "+ uniform(0, {}) spread",
            fmt_duration(r.retry_after_spread)
        ),
    };
    let _ = writeln!(
        s,
        "  Retry-After   honoured up to {} (longer hints clamped); wait = max(backoff, hint), {spread} when the hint is larger",
        fmt_duration(r.max_retry_after)
    );
    let retried_failures = [
        FailureKind::Refused,
        FailureKind::Dns,
        FailureKind::ConnectTimeout,
        FailureKind::TlsHandshake,
        FailureKind::Timeout,
        FailureKind::Stall,
        FailureKind::Reset,
        FailureKind::Truncated,
    ];
    let names: Vec<&str> = retried_failures.iter().map(|k| k.name()).collect();
    let _ = writeln!(
        s,
        "  retried       statuses {}; {}",
        r.retry_on.to_spec(),
        names.join(", ")
    );
    let _ = writeln!(
        s,
        "  never retried TLS certificate rejected, TLS refused by the server, protocol error, too many redirects, body over --max-filesize"
    );
    let _ = writeln!(s, "  replay        {}", replay_rule(cfg));
    if let Some((path, l)) = &cfg.state {
        let _ = writeln!(
            s,
            "  shared state  {}: the circuit opens after {} failed runs in a row, for {}; retries limited to {}% of successes per {}, at least {}; a target with no run for {} is forgotten unless its circuit is open",
            path.display(),
            l.threshold,
            fmt_duration(l.cooldown),
            l.budget_pct,
            fmt_duration(l.window),
            l.floor,
            fmt_duration(l.ttl)
        );
    }
    s.push_str(&schedule(cfg));
    s
}

/// One row per retry: its ceiling, the lowest and highest wait, and the worst case by then.
fn schedule(cfg: &Config) -> String {
    let r = &cfg.retry;
    let per_attempt = cfg.timeouts.attempt;
    let mut s = String::new();
    let worst_label = if per_attempt.is_some() {
        "worst case by then"
    } else {
        "waits by then"
    };
    let _ = writeln!(
        s,
        "schedule (backoff only; a Retry-After can lengthen any wait):"
    );
    let _ = writeln!(
        s,
        "  {:<6} {:>10} {:>10} {:>10}  {}",
        "retry", "ceiling", "lowest", "highest", worst_label
    );
    let mut worst = per_attempt.unwrap_or_default();
    let mut cut = false;
    for n in 1..r.attempts {
        let (lo, hi) = r.backoff.bounds(n - 1);
        worst = worst.saturating_add(hi);
        let mut row = format!(
            "  {:<6} {:>10} {:>10} {:>10}  {}",
            n,
            fmt_duration(r.backoff.ceiling(n - 1)),
            fmt_duration(lo),
            fmt_duration(hi),
            fmt_duration(worst)
        );
        if let Some(d) = r.deadline.filter(|d| !cut && worst > *d) {
            cut = true;
            let _ = write!(
                row,
                "  <- past the deadline ({}): the run may stop here",
                fmt_duration(d)
            );
        }
        let _ = writeln!(s, "{row}");
        worst = worst.saturating_add(per_attempt.unwrap_or_default());
    }
    match per_attempt {
        Some(_) => {
            let past = match r.deadline {
                Some(d) if worst > d => format!(
                    " (past the {} deadline: attempts late in the run get less time)",
                    fmt_duration(d)
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "  worst case for the whole run: {}{past}",
                fmt_duration(worst)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "  attempts have no --timeout: the stall timeout and the deadline are what bound them"
            );
        }
    }
    if let Some(d) = r.deadline {
        let _ = writeln!(
            s,
            "  the deadline ends the run at {} whatever the schedule",
            fmt_duration(d)
        );
    }
    s
}
