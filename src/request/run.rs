//! One request's run, once it is built (see `prepare`): admission through `--state`, the
//! attempt loop, and the end of the request (see `ending`). What belongs to the process
//! (the deadline's watchdog, signals, the summary, the exit status) is lent by the session
//! as a `Lent`; the request's run returns how it ended, for the session to sum up.

use crate::config::Config;
use crate::exit::Outcome;
use crate::fleet::admission::{Admitted, Between, Shared};
use crate::redact;
use crate::report::Reporter;
use crate::request::attempt::{Ended, Loop};
use crate::request::ending::{self, Ending};
use crate::request::{Lent, Request};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::time::{Duration, Instant};

/// Runs `request`: asks `--state` whether it may go, makes its attempts, then writes what
/// its end writes (`-D`, `--etag-save`, the state, `-w`). Returns how it ended; the
/// session writes the summary.
pub fn perform(request: &Request, lent: &Lent) -> Ending {
    let (shared, hold) = match admit(request, lent.reporter, lent.start) {
        Ok(admitted) => (admitted.shared, admitted.hold),
        Err(why) => return refused_before_sending(request, lent, &why),
    };
    log_request(lent.reporter, request);
    let between = shared.as_ref().map(|s| s as &dyn Between);
    let ended = attempts(request, lent, (between, hold));
    ending::finish(request, lent, shared.as_ref(), ended)
}

/// The attempt loop over `request`, with what the session lends it and what `--state`
/// admitted (the shared state, a shared Retry-After still holding): the one place the loop
/// is entered.
fn attempts(
    request: &Request,
    lent: &Lent,
    (shared, hold): (Option<&dyn Between>, Option<Duration>),
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
        headers: request.headers.clone(),
        start: lent.start,
        shared,
        hold,
        watchdog: lent.watchdog,
        prior: &request.prior,
    };
    run.run(&mut StdRng::seed_from_u64(lent.seed))
}

/// A run that `--state` refused before anything was sent (exit 7, `why`): `-w` is still
/// written, as after any other ending (so `%{state}` tells a script why).
fn refused_before_sending(request: &Request, lent: &Lent, why: &str) -> Ending {
    let ended = Ended {
        outcome: Outcome::Refused,
        last: why.to_string(),
        why: Some(why.to_string()),
        ..Ended::before_any_attempt()
    };
    let mut outcome = Outcome::Refused;
    let mut reason = why.to_string();
    if let Some(format) = &request.write_out
        && let Err(e) = ending::print_write_out(format, request, lent, &ended, (outcome, why))
    {
        lent.reporter.error(&e);
        reason = e;
        outcome = Outcome::Local;
    }
    Ending {
        outcome,
        attempts: 0,
        last: why.to_string(),
        reason,
    }
}

/// With `--state`, asks the circuit breaker and the shared Retry-After whether this run may
/// go (`Err`: refused, exit 7, and why).
fn admit<'r>(
    request: &Request,
    reporter: &'r Reporter,
    start: Instant,
) -> Result<Admitted<'r>, String> {
    let cfg = request.cfg;
    let Some(settings) = &cfg.state else {
        return Ok(Admitted {
            shared: None,
            hold: None,
        });
    };
    let deadline = cfg.retry.deadline.map(|d| start + d);
    Shared::admit(
        settings,
        probe_lease(cfg),
        (&request.url, cfg.request.network.unix_socket.as_deref()),
        reporter,
        deadline,
    )
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
fn log_request(reporter: &Reporter, request: &Request) {
    if !reporter.verbose() {
        return;
    }
    let headers = &request.headers;
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
