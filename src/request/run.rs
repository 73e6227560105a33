//! One request's run, once it is built (see `prepare`): the wait of `--splay`, admission
//! through `--state` (which decides the job's Idempotency-Key: see `job`), the attempt loop, and the end of the request (see `ending`). What
//! belongs to the process (the deadline's watchdog, signals, the summary, the exit status)
//! is lent by the session as a `Lent`; the request's run returns how it ended, for the
//! session to sum up.

use crate::config::Config;
use crate::exit::Outcome;
use crate::fleet::job::Job;
use crate::fleet::origins::origin_key;
use crate::gate::{Gate, Opened, Opening};
use crate::process::clock::Real;
use crate::redact;
use crate::report::Reporter;
use crate::request::attempt::Loop;
use crate::request::ending::{self, Ended};
use crate::request::{Lent, Request, countdown, job};
use crate::units::{fmt_duration, micros, millis};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;
use std::time::Duration;

/// Runs `request`: waits out its `--splay`, asks `--state` whether it may go, makes its
/// attempts, then writes what its end writes (`-D`, `--etag-save`, the state, `-w`).
/// Returns how it ended; the session writes the summary.
pub fn perform(request: &Request, lent: &Lent) -> Ended {
    if let Some(outcome) = splay(request, lent) {
        // A signal during the splay: nothing was sent and the store was never asked.
        return ending::finish(request, lent, None, Ended::unsent(outcome, None));
    }
    let job = job::job(request, lent.reporter);
    let Opened { gate, kept } = match open_gate(request, lent, job) {
        Ok(opened) => opened,
        // A signal that cut the store's answer short ends the run as the signal, not as a
        // refusal of a store that looked unusable for it.
        Err(_) if let Some(signal) = lent.interrupt.fired() => {
            let ended = Ended::unsent(signal.outcome(), None);
            return ending::finish(request, lent, None, ended);
        }
        // Refused before anything was sent (exit 7, why): `-w` is still written, as after
        // any other ending (so `%{state}` tells a script why).
        Err(why) => {
            let ended = Ended::unsent(Outcome::Refused, Some(&why));
            return ending::write_out_last(request, lent, ended);
        }
    };
    let headers = job::keyed_headers(request, lent.reporter, job.as_ref(), kept.as_ref());
    log_request(lent.reporter, request, &headers);
    let ended = attempts(request, lent, &gate, headers);
    if ended.attempts_made == 0 && lent.local.halted() {
        // The batch halted before this transfer sent anything: it is not started, and
        // writes nothing of a run's end (its records hear that nothing was sent).
        gate.close(
            (ended.outcome, ended.outcome),
            None,
            (request.has_key(), false),
        );
        return ended;
    }
    ending::finish(request, lent, Some(&gate), ended)
}

/// The attempt loop over `request`, with what the session lends it and the run's gate
/// (opened by the admission): the one place the loop is entered.
fn attempts(
    request: &Request,
    lent: &Lent,
    gate: &Gate<'_>,
    headers: Vec<(String, String)>,
) -> Ended {
    let run = Loop {
        cfg: request.cfg,
        url: &request.url,
        transport: &request.transport,
        output: &request.output,
        payload: request.payload.as_ref(),
        reporter: lent.reporter,
        interrupt: lent.interrupt,
        has_key: request.has_key(),
        headers,
        start: lent.start,
        probe: gate.probing(),
        gate,
        watchdog: lent.watchdog,
        clock: &Real,
        prior: &request.prior,
    };
    run.run(&mut StdRng::seed_from_u64(lent.seed))
}

/// `--splay`: says in one line where the first attempt starts and waits until then
/// (counted from start-up, so the time spent reading the inputs counts). It comes before
/// `--state` is first asked, so the store's operations are spread as the requests are; the
/// deadline has cut the splay already (see `fleet::splay::room`), so the first attempt fits
/// after it. `Some` when a signal ended the run during the wait, with its outcome (as
/// during a backoff: promptly, the signal's exit status).
fn splay(request: &Request, lent: &Lent) -> Option<Outcome> {
    let cfg = request.cfg;
    let given = cfg.splay.as_ref()?;
    let url = &request.transfer.url;
    let target = origin_key(url, cfg.request.network.unix_socket.as_deref());
    let limits = (cfg.retry.deadline, cfg.timeouts.attempt);
    let plan = crate::fleet::splay::plan(&given.host, &target, given.asked, limits);
    let wait = plan.offset.saturating_sub(lent.start.elapsed());
    let words = plan.words(&given.host, given.source.name(), &target);
    let text = format!(
        "splay: {words}; waiting {} before the first attempt",
        fmt_duration(wait)
    );
    let object = json!({
        "type": "splay",
        "message": text,
        "host": given.host,
        "host_from": given.source.key(),
        "target": target,
        "splay_ms": millis(plan.asked),
        "span_ms": millis(plan.span),
        "cut": plan.cut_by.is_some(),
        "offset_ms": millis(plan.offset),
        "offset_us": micros(plan.offset),
        "wait_ms": millis(wait),
        "wait_us": micros(wait),
    });
    lent.reporter.event(&text, object);
    let by = (lent.reporter, lent.interrupt);
    let signal = countdown::sleep_visibly(&Real, by, wait, "the splay")?;
    Some(signal.outcome())
}

/// Opens the run's gate over the local layer the session lends: with `--state` (or a
/// batch's own breaker and budget), the circuit breaker and the shared Retry-After say
/// whether this run may go (`Err`: refused, exit 7, and why), and the key of its `job` is
/// taken.
fn open_gate<'l>(
    request: &Request,
    lent: &Lent<'l>,
    job: Option<Job>,
) -> Result<Opened<'l>, String> {
    let cfg = request.cfg;
    let how = Opening {
        state: cfg.state.as_ref(),
        target: (&request.url, cfg.request.network.unix_socket.as_deref()),
        lease: probe_lease(cfg),
        deadline: cfg.retry.deadline.map(|d| lent.start + d),
        spread: cfg.retry.retry_after_spread,
        max_hold: cfg.retry.max_retry_after,
    };
    Gate::open(lent.local, &how, job, lent.reporter)
}

/// How long a half-open circuit's probe may take: its deadline, else its attempt timeout,
/// else a minute (a probe that outlives its lease lets another run probe).
fn probe_lease(cfg: &Config) -> Duration {
    cfg.retry
        .deadline
        .or(cfg.timeouts.attempt)
        .unwrap_or(Duration::from_secs(60))
}

/// `-v`: the request line and headers, secrets masked, then the automatic ones the
/// transport adds to them (as it says: see `Transport::automatic_headers`).
fn log_request(reporter: &Reporter, request: &Request, headers: &[(String, String)]) {
    if !reporter.verbose() {
        return;
    }
    reporter.detail(&format!(
        "> {} {}",
        request.cfg.request.method,
        redact::url(&request.url)
    ));
    for (n, v) in headers
        .iter()
        .chain(&request.transport.automatic_headers(headers))
    {
        reporter.detail(&format!("> {n}: {}", redact::header_value(n, v)));
    }
}
