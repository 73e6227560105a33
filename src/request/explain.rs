//! `--explain`: the resolved policy (the splay's offset included) and the schedule it
//! implies, and for a run of several URLs each transfer's URL and output, as text for
//! stdout. Computed from the configuration alone, nothing is sent and nothing waited; with
//! `--state` the store is read (never written), and with `--idempotency-key auto` too the
//! body's files, for the job's kept key (see `request::job`).

use crate::config::{Config, Transfer};
use crate::policy::idempotency::KeyAnswer;
use crate::policy::{self, FailureKind, Jitter};
use crate::redact;
use crate::units::fmt_duration;
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
        let statuses: Vec<String> = (100..=599)
            .filter(|s| policy::status_means_unprocessed(*s))
            .map(|s| s.to_string())
            .collect();
        format!(
            "{m} is not idempotent: replayed only when the failure proves it was not processed \
             ({}; {}); --idempotency-key or --retry-unsafe allow more",
            kinds(FailureKind::proves_unprocessed),
            statuses.join(", ")
        )
    }
}

/// The names of the failure kinds for which `which` holds, as the policy lists them.
fn kinds(which: fn(FailureKind) -> bool) -> String {
    let names: Vec<&str> = FailureKind::ALL
        .into_iter()
        .filter(|k| which(*k))
        .map(FailureKind::name)
        .collect();
    names.join(", ")
}

/// The explanation printed by `--explain`: the policy of transfer `t` of `cfg` (the first:
/// the policy is every transfer's), then the transfers of a run of several.
pub fn explain(cfg: &Config, t: &Transfer) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "policy for {} {}",
        cfg.request.method,
        redact::url(&t.url)
    );
    s.push_str(&waits(cfg, t));
    s.push_str(&retried(cfg));
    s.push_str(&readiness(cfg));
    // A batch without --state keeps its transfers' breaker and budget in process, with
    // the same rules: each transfer counts as a run.
    let kept = match &cfg.state {
        Some(st) => Some((st.location.describe(), &st.limits)),
        None if cfg.batch.is_batch() => Some(("the batch's memory".into(), &cfg.fleet)),
        None => None,
    };
    if let Some((kept_in, l)) = kept {
        let _ = writeln!(
            s,
            "  shared state  {}: the circuit opens after {} failed runs in a row, for {}; retries limited to {}% of successes per {}, at least {}, counting other runs' retries, never a run's own; a Retry-After told to one run holds back all; a target with no run for {} is forgotten unless it still refuses runs",
            kept_in,
            l.threshold,
            fmt_duration(l.cooldown),
            l.budget_pct,
            fmt_duration(l.window),
            l.floor,
            fmt_duration(l.ttl)
        );
    }
    if let Some(st) = &cfg.state {
        let target = (&t.url, cfg.request.network.unix_socket.as_deref());
        let job = crate::request::job::kept_in_state(cfg)
            .then(|| crate::request::job::explain_digest(cfg, t));
        let digest = job.as_ref().and_then(|j| j.as_ref().ok());
        let renew = cfg.retry.idempotency_key == Some(crate::config::KeySpec::New);
        for line in crate::gate::explain(st, target, digest, renew) {
            let _ = writeln!(s, "  {line}");
        }
        if let Some(Err(why)) = &job {
            let _ = writeln!(
                s,
                "                Idempotency-Key of this job: not known here ({why})"
            );
        }
    }
    s.push_str(&schedule(cfg));
    s.push_str(&transfers(cfg));
    s
}

/// A run of several URLs: how its transfers are scheduled, then each one's URL and where
/// its body goes (the policy above applies to each).
fn transfers(cfg: &Config) -> String {
    let b = &cfg.batch;
    if !b.is_batch() {
        return String::new();
    }
    let mut s = String::new();
    let how = if b.parallel {
        format!(
            "at most {} at once, {} to one origin (-Z)",
            b.parallel_max, b.parallel_max_host
        )
    } else {
        "one after the other, in URL order".to_string()
    };
    let _ = write!(s, "  transfers     {}, {how}", b.transfers.len());
    if let Some(r) = b.rate {
        let _ = write!(
            s,
            "; at most {} started per {}",
            r.count,
            fmt_duration(r.per)
        );
    }
    if b.fail_early {
        s.push_str("; none started after the first that fails (--fail-early)");
    }
    s.push_str("; each with the policy above\n");
    for (i, t) in b.transfers.iter().enumerate() {
        let to = t
            .output
            .as_deref()
            .filter(|p| p.as_os_str() != "-")
            .map_or_else(|| "stdout".to_string(), |p| p.display().to_string());
        let _ = writeln!(s, "    {:>5}  {} -> {to}", i + 1, redact::url(&t.url));
    }
    s
}

/// The `--until-*` conditions, one line each, and what a not-ready answer means.
fn readiness(cfg: &Config) -> String {
    let c = &cfg.ready;
    if !c.any() {
        return String::new();
    }
    let mut s = String::from(
        "  ready when    every condition holds (else the answer is polled again, not charged to a retry budget; exit 8 if the run ends on one):\n",
    );
    match &c.status {
        Some(set) => {
            let _ = writeln!(s, "                the status is in {}", set.to_spec());
        }
        None => s.push_str("                the status is below 400\n"),
    }
    // What a secret header or pointer must hold is not shown (see `readiness`).
    for (name, re) in &c.headers {
        let _ = writeln!(
            s,
            "                the {name} header matches {}",
            if crate::redact::is_secret_name(name) {
                crate::redact::MASK
            } else {
                re.as_str()
            }
        );
    }
    for re in &c.body {
        let _ = writeln!(s, "                the body matches {}", re.as_str());
    }
    for (pointer, value) in &c.json {
        let value = if crate::policy::readiness::secret_pointer(pointer) {
            crate::redact::MASK.to_string()
        } else {
            value.to_string()
        };
        let _ = writeln!(s, "                the JSON body has {value} at {pointer}");
    }
    let _ = writeln!(
        s,
        "                a body or JSON condition reads at most {} KiB of the body",
        crate::policy::readiness::MAX_CHECKED >> 10
    );
    s
}

/// How many attempts, and what bounds them: the count given, the deadline (with the retry
/// budget and the breaker under `--state`), or the default count.
fn attempts_line(r: &crate::config::RetryConfig) -> String {
    use crate::config::AttemptsBound;
    let unlimited = r.attempts == crate::policy::decision::UNLIMITED;
    let count = if unlimited {
        "unlimited".to_string()
    } else {
        let retries = r.attempts - 1;
        let noun = if retries == 1 { "retry" } else { "retries" };
        format!("{} (the first and {retries} {noun})", r.attempts)
    };
    let bound = match (r.bound, unlimited) {
        (AttemptsBound::Given, true) => "given (--attempts unlimited): the deadline bounds the run",
        (AttemptsBound::Given, false) => {
            "given: the count bounds the run, and the deadline if it comes first"
        }
        (AttemptsBound::Deadline, _) => {
            "no count given: the deadline bounds the run (and, with --state, the retry budget and the circuit breaker); give --attempts N to bound it by a count too"
        }
        (AttemptsBound::Default, _) => {
            "the default, with no --deadline: give --deadline to retry until a time instead"
        }
    };
    format!("{count}; {bound}")
}

/// Attempts, backoff, deadline, timeouts and Retry-After (and the splay of transfer
/// `transfer`'s origin).
fn waits(cfg: &Config, transfer: &Transfer) -> String {
    let r = &cfg.retry;
    let b = &r.backoff;
    let t = &cfg.timeouts;
    let mut s = String::new();
    if let Some(mapped) = &r.curl {
        let _ = writeln!(s, "  curl's flags  {mapped}");
    }
    let _ = writeln!(s, "  attempts      {}", attempts_line(r));
    let growth = match b.jitter {
        Jitter::Decorrelated => "3^(n+1)",
        _ => "2^n",
    };
    let _ = writeln!(
        s,
        "  backoff       ceiling = min(cap {}, base {} * {growth}); {}",
        fmt_duration(b.cap),
        fmt_duration(b.base),
        jitter_rule(b.jitter)
    );
    let _ = writeln!(s, "  deadline      {}", opt(r.deadline, "none"));
    s.push_str(&splay(cfg, transfer));
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
    s.push_str(PACING);
    s
}

/// How the run paces its origin (`fleet::origins`, `policy::pacer`).
const PACING: &str = "  pacing        from the RateLimit fields when the origin reports a quota; a run of one URL is not paced otherwise, a batch (-Z or several URLs) paces an origin that throttles (429, 503 with Retry-After) without them at the rate it accepts, learnt from its answers, and ends saying the rate each origin settled at\n";

/// `--splay`: the host's name and where it came from, the target, the offset and whether
/// the deadline cuts the splay (see `fleet::splay`); nothing when there is no splay.
/// `--explain` itself does not wait. The target is transfer `t`'s URL's origin.
fn splay(cfg: &Config, t: &Transfer) -> String {
    let Some(given) = &cfg.splay else {
        return String::new();
    };
    let target =
        crate::fleet::origins::origin_key(&t.url, cfg.request.network.unix_socket.as_deref());
    let limits = (cfg.retry.deadline, cfg.timeouts.attempt);
    let plan = crate::fleet::splay::plan(&given.host, &target, given.asked, limits);
    let cut = match (plan.cut_by, cfg.retry.deadline) {
        (Some(_), _) => "cut by the deadline",
        (None, Some(_)) => "within the deadline, not cut",
        (None, None) => "no deadline to cut it",
    };
    format!(
        "  splay         {}: the first attempt starts that long after start-up ({cut}), before --state is asked; the schedule below follows it (--explain does not wait)\n",
        plan.words(&given.host, given.source.name(), &target)
    )
}

/// What is retried, what never is, and when a request is replayed: read from the policy.
fn retried(cfg: &Config) -> String {
    // A local failure and a body already streamed to stdout are not the server's doing.
    let final_kind = |k: FailureKind| {
        !k.is_retryable() && !matches!(k, FailureKind::Local | FailureKind::Streamed)
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  retried       statuses {}; {}",
        cfg.retry.retry_on.to_spec(),
        kinds(FailureKind::is_retryable)
    );
    let _ = writeln!(s, "  never retried {}", kinds(final_kind));
    let _ = writeln!(s, "  replay        {}", replay_rule(cfg));
    s.push_str(&key_answers(cfg));
    s
}

/// With an Idempotency-Key, what the server's answers about the key mean and what the run
/// does about each (the IETF httpapi draft, see `policy::idempotency`); nothing without one.
fn key_answers(cfg: &Config) -> String {
    if cfg.retry.idempotency_key.is_none() {
        return String::new();
    }
    let mut s = String::new();
    for (i, answer) in KeyAnswer::ALL.into_iter().enumerate() {
        let label = if i == 0 { "idempotency" } else { "" };
        let _ = writeln!(
            s,
            "  {label:<13} {} ({}): {}",
            answer.status(),
            answer.gist(),
            answer.rule()
        );
    }
    s
}

/// The most retry `n` (from 0) can wait before jitter spreads it: min(cap, base * 2^n),
/// except under decorrelated jitter, which grows from the previous wait by up to 3 times,
/// so its ceiling is min(cap, base * 3^(n+1)) (see `Backoff::bounds`).
fn ceiling(b: &policy::Backoff, n: u32) -> Duration {
    match b.jitter {
        Jitter::Decorrelated => b.bounds(n).1,
        _ => b.ceiling(n),
    }
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
        // An unlimited run's table ends a row past the deadline (or at 20 rows).
        if r.attempts == crate::policy::decision::UNLIMITED && (cut || n > 20) {
            break;
        }
        let (lo, hi) = r.backoff.bounds(n - 1);
        worst = worst.saturating_add(hi);
        let mut row = format!(
            "  {:<6} {:>10} {:>10} {:>10}  {}",
            n,
            fmt_duration(ceiling(&r.backoff, n - 1)),
            fmt_duration(lo),
            fmt_duration(hi),
            fmt_duration(worst)
        );
        if let Some(d) = r.deadline.filter(|d| !cut && worst > *d) {
            cut = true;
            let _ = write!(
                row,
                "  <- past the deadline ({}): a last attempt is drawn before it instead",
                fmt_duration(d)
            );
        }
        let _ = writeln!(s, "{row}");
        worst = worst.saturating_add(per_attempt.unwrap_or_default());
    }
    s.push_str(&whole_run(cfg, worst));
    s
}

/// The schedule's closing lines: the worst case for the whole run, and the deadline.
fn whole_run(cfg: &Config, worst: Duration) -> String {
    let r = &cfg.retry;
    let mut s = String::new();
    match cfg.timeouts.attempt {
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
            "  the deadline ends the run at {} whatever the schedule; a backoff that would end past it becomes a last attempt shortly before it (a Retry-After that would end past it stops the run)",
            fmt_duration(d)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_column_is_what_the_jitter_can_reach() {
        let ms = Duration::from_millis;
        let b = |jitter| policy::Backoff {
            base: ms(100),
            cap: ms(2000),
            jitter,
        };
        let full: Vec<Duration> = (0..3).map(|n| ceiling(&b(Jitter::Full), n)).collect();
        assert_eq!(full, [ms(100), ms(200), ms(400)]);
        let dec: Vec<Duration> = (0..4)
            .map(|n| ceiling(&b(Jitter::Decorrelated), n))
            .collect();
        assert_eq!(dec, [ms(300), ms(900), ms(2000), ms(2000)]);
        for n in 0..6 {
            assert_eq!(
                ceiling(&b(Jitter::Decorrelated), n),
                b(Jitter::Decorrelated).bounds(n).1
            );
        }
    }

    #[test]
    fn the_lists_are_the_policys() {
        let line = |text: &str, label: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(label))
                .unwrap_or_default()
                .to_string()
        };
        let retried = kinds(FailureKind::is_retryable);
        for k in FailureKind::ALL {
            let listed = retried.split(", ").any(|n| n == k.name());
            assert_eq!(listed, k.is_retryable(), "{k:?} in {retried}");
        }
        assert!(retried.contains(FailureKind::ProxyFailed.name()));
        let text = format!("  never retried {}", kinds(|k| !k.is_retryable()));
        assert!(line(&text, "never retried").contains("TLS certificate rejected"));
    }
}
