//! The attempt loop: send, take the answer, ask the policy's decision, then perform what
//! the verdict says (deliver or discard the answer's body, sleep, stop). It joins the
//! policy (pure) to the transport (behind `carrier`), owns what carries from one attempt to
//! the next (a partial download, the hop to restart at, the last backoff drawn), hands each
//! attempt's line to the reporter as soon as the attempt ends, and returns everything the
//! end of the run needs.
//!
//! The loop has two entry points into the run's gate (`gate::Gate`, opened by the
//! admission in `run`): before every send, the first included, it asks whether to send,
//! wait (a hold, pacing, a shared Retry-After) or stop (`pause`); after every answer it
//! tells what was heard (`Gate::tell`: the head as it arrives, in `answer`; the attempt
//! once over, here), and what the gate says back (a quota spent, what a retry would meet
//! in the breaker's and budget's records, a circuit closed) goes to the decision as facts.
//!
//! Taking an answer (classifying its head, delivering a success's body) is `answer`'s; the
//! attempt's log line is `line`'s; the waits before a send are `pause`'s; getting a body
//! to its destination is `delivery`'s; what to do after an attempt (and how the run ends)
//! is `policy::decision`'s.

use crate::config::Config;
use crate::exit::Outcome;
use crate::fleet::origins::origin_key;
use crate::gate::{Gate, Heard, Noted, Over, Ticket};
use crate::http::body::Payload;
use crate::http::carrier::Carrier;
use crate::http::transport::Hop;
use crate::output::Output;
use crate::policy::WaitReason;
use crate::policy::decision::{self, Ask, Attempt, Happened, Retry, Rules, Verdict};
use crate::policy::retry_after::Reading;
use crate::process::clock::Clock;
use crate::process::deadline::Watchdog;
use crate::process::interrupt::Interrupt;
use crate::report::{AttemptLine, Decision, Reporter};
use crate::request::carry::{Carry, Pending, Sent};
use crate::request::delivery::Delivery;
use crate::request::ending::Ended;
use crate::request::leftover;
use crate::request::prior::Prior;
use rand::Rng;
use std::time::{Duration, Instant};

/// What one run of attempts works with, borrowed; the loop's own state is in [`Carry`]
/// (`carry`).
/// Built by the caller as a value, then [`Loop::run`] runs the attempts: that is the whole
/// entry point.
pub struct Loop<'a> {
    /// The validated configuration.
    pub cfg: &'a Config,
    /// The URL sent (the configured one, with `-G`'s data from files or stdin).
    pub url: &'a url::Url,
    /// Sends requests and reads their bodies (the ureq transport in a run).
    pub transport: &'a dyn Carrier,
    /// Receives the final body.
    pub output: &'a Output,
    /// The request body, read once.
    pub payload: Option<&'a Payload>,
    /// Writes stderr.
    pub reporter: &'a Reporter,
    /// Set by the signals that stop a run.
    pub interrupt: &'a Interrupt,
    /// Keeps the deadline (see `deadline`).
    pub watchdog: &'a Watchdog,
    /// The time the loop decides by and sleeps its waits with (`clock::Real` in a run).
    pub clock: &'a dyn Clock,
    /// Request headers, Idempotency-Key included.
    pub headers: Vec<(String, String)>,
    /// Whether an Idempotency-Key is sent.
    pub has_key: bool,
    /// When the process started, on `clock` (the deadline counts from here).
    pub start: Instant,
    /// The run's gate: asked before every send (the origin's hold and pacing, a
    /// Retry-After the store shared, the retry budget), told after every answer.
    pub gate: &'a Gate<'a>,
    /// The run was admitted as the half-open circuit's probe (a single attempt, until an
    /// answer proves the target up).
    pub probe: bool,
    /// What earlier runs left and the conditional flags asked (`-C -`'s range, the
    /// conditions), to judge the answer.
    pub prior: &'a Prior,
}

impl Loop<'_> {
    pub(super) fn deadline_left(&self) -> Option<Duration> {
        self.cfg
            .retry
            .deadline
            .map(|d| d.saturating_sub(self.elapsed()))
    }

    /// The time since the process started, on the loop's clock.
    pub(super) fn elapsed(&self) -> Duration {
        self.clock.now().saturating_duration_since(self.start)
    }

    pub(super) fn deadline_passed(&self) -> bool {
        self.watchdog.expired() || self.deadline_left().is_some_and(|l| l.is_zero())
    }

    /// The key of the origin of `url`, as the gate and the log name it.
    pub(super) fn origin(&self, url: &url::Url) -> String {
        origin_key(url, self.cfg.request.network.unix_socket.as_deref())
    }

    /// The run's rules, as the decision reads them (`probing`: the run is the half-open
    /// circuit's probe, which has a single attempt until an answer proves the target up).
    pub(super) fn rules(&self, probing: bool) -> Rules<'_> {
        let retry = &self.cfg.retry;
        Rules {
            attempts: if probing { 1 } else { retry.attempts },
            retry_on: &retry.retry_on,
            backoff: retry.backoff,
            retry_after_spread: retry.retry_after_spread,
            has_key: self.has_key,
            retry_unsafe: retry.retry_unsafe,
        }
    }

    pub(super) fn delivery(&self) -> Delivery<'_> {
        Delivery {
            cfg: self.cfg,
            output: self.output,
            transport: self.transport,
            reporter: self.reporter,
            watchdog: self.watchdog,
            start: self.start,
        }
    }

    /// Runs the attempts; `rng` drives every random draw.
    pub fn run(&self, rng: &mut dyn Rng) -> Ended {
        let partial = leftover::claim(self.cfg, self.url, self.prior, self.reporter);
        let mut carry = Carry::new(partial, self.cfg.retry.backoff.base, self.probe);
        let end = self.attempts(&mut carry, rng);
        self.ended(end, carry)
    }

    /// Makes attempts until a verdict (or what happens between attempts) ends the run;
    /// counts them in `carry`. Returns the verdict that ended it (done, or a stop).
    fn attempts(&self, carry: &mut Carry, rng: &mut dyn Rng) -> Verdict {
        loop {
            if self.deadline_passed() {
                return decision::deadline_between(carry.not_ready);
            }
            // The gate first: a retry is charged as it lets it go.
            let url = carry.from.as_ref().map_or(self.url, |hop| &hop.url);
            let made = carry.seen.attempts_made;
            let mut ticket = Ticket::new(self.origin(url), (made > 0).then_some(carry.charge));
            if let Err(stop) = self.through_gate(&mut ticket, carry.not_ready, rng) {
                return stop;
            }
            carry.seen.attempts_made = made + 1;
            let retry = match self.attempt(made + 1, carry, rng) {
                Verdict::Retry(retry) => retry,
                ends => return ends,
            };
            let why = countdown(&retry, &carry.seen.last);
            if let Some(sig) = self.sleep_visibly(retry.wait, &why) {
                return decision::signalled(sig.outcome());
            }
        }
    }

    /// What the loop hands back once it is over, the attempts ended by `verdict`.
    fn ended(&self, verdict: Verdict, carry: Carry) -> Ended {
        let (outcome, why) = match verdict {
            Verdict::Stop { outcome, reason } => (outcome, Some(reason)),
            _ => (Outcome::Success, None),
        };
        // A partial download kept for a next attempt that will not come is thrown away, or
        // under `-C -` left for the next run.
        if let Some(p) = carry.partial {
            leftover::leave_or_discard(
                p,
                (self.cfg, self.url),
                self.prior,
                self.output,
                self.reporter,
            );
        }
        Ended {
            outcome: decision::after_the_loop(outcome, carry.not_ready),
            why,
            head_dumped: self.output.head_dumped(),
            ..carry.seen
        }
    }

    /// Attempt `n`: send, take the answer, log its line, tell the gate, and perform the
    /// decision about it.
    fn attempt(&self, n: u32, carry: &mut Carry, rng: &mut dyn Rng) -> Verdict {
        let begun = self.clock.now();
        self.watchdog.note(n, "no answer yet");
        let first = self.first_hop(carry);
        let mut line = self.line(n, begun, &first, self.rules(carry.probing).attempts);
        let (happened, sent) = self.try_once(first, &mut line, carry);
        line.elapsed = self.clock.now().saturating_duration_since(begun);
        let happened = self.unless_interrupted(happened, &sent, &mut line, carry);
        let last = n >= self.rules(carry.probing).attempts;
        let noted = self.tell_gate(&sent, (&happened, last), carry);
        carry.seen.method = Some(sent.last.method.clone());
        carry.longest = carry
            .longest
            .max(self.clock.now().saturating_duration_since(begun));
        self.watchdog.note(n, &carry.seen.last);
        let facts = self.facts(happened, n, &sent, carry);
        carry.weighed(&facts);
        // Should the deadline cut the next attempt and the watchdog have to end the run, it
        // ends as the decision would (row 7 as 8 after a not-ready answer).
        self.watchdog.at_deadline(if carry.not_ready {
            Outcome::NotReady
        } else {
            Outcome::Deadline
        });
        let (verdict, charge) = self.decide(&facts, (carry.reading.as_ref(), &noted), rng);
        let failed = verdict.outcome().is_some_and(|o| o != Outcome::Success);
        self.gate.tell(Heard::Decided { failed }, self.clock.now());
        carry.charge = charge;
        let verdict = self.perform(verdict, line, sent, carry);
        // A service found up closed the circuit this run probed: said after the line.
        if let Some(news) = noted.closed {
            self.reporter.info(&news);
        }
        verdict
    }

    /// Once the attempt is over, the gate hears what the origin that answered said (its
    /// status, its Retry-After as read and clamped, its RateLimit fields) and whether the
    /// target answered but was not ready (`last`: no attempt may follow). RateLimit fields
    /// that could not be read are said once per origin; a quota said spent is kept in
    /// `carry.spent`; whether the run is still the circuit's probe in `carry.probing`.
    fn tell_gate(
        &self,
        sent: &Sent,
        (happened, last): (&Happened, bool),
        carry: &mut Carry,
    ) -> Noted {
        let told = carry.told.take();
        let retry_after = carry
            .reading
            .as_ref()
            .and_then(|r| r.asked.zip(r.hint.map(|h| h.wait)));
        let over = Heard::Over(Over {
            origin: &self.origin(&sent.first.url),
            told: told.as_ref(),
            retry_after,
            status: match happened {
                Happened::Status(s) => Some(*s),
                _ => None,
            },
            not_ready: matches!(happened, Happened::NotReady(_)),
            last,
        });
        let noted = self.gate.tell(over, self.clock.now());
        if noted.say_malformed {
            for bad in told.iter().flat_map(|t| &t.rate.invalid) {
                self.reporter.warn(&bad.to_string());
            }
        }
        carry.spent = noted.spent;
        carry.probing = noted.probing;
        if let Some((origin, change)) = &noted.paced {
            self.reporter.event(
                &change.line(origin),
                crate::report::pacing_json(origin, change),
            );
        }
        noted
    }

    /// What the decision weighs about attempt `n`, which ended as `happened`.
    fn facts<'s>(&self, happened: Happened, n: u32, sent: &'s Sent, carry: &Carry) -> Attempt<'s> {
        Attempt {
            happened,
            number: n,
            method: &sent.last.method,
            first_method: &sent.first.method,
            committed: sent.committed,
            deadline_passed: self.deadline_passed(),
            left: self.deadline_left(),
            hint: carry.reading.as_ref().and_then(|r| r.hint),
            previous: carry.previous,
            longest: carry.longest,
            fitted: carry.fitted,
            after_not_ready: carry.not_ready,
        }
    }

    /// The decision about an attempt, and whether the retry it may plan is charged to the
    /// budget. Where a retry is allowed, the server's Retry-After values that could not be
    /// read are reported (they are ignored, never read as 0); what the gate said back when
    /// told the attempt (`noted`: a quota said spent, what a retry would meet in the
    /// breaker's and budget's records) is a fact the decision weighs
    /// (`decision::retry_gate`).
    fn decide(
        &self,
        facts: &Attempt,
        (reading, noted): (Option<&Reading>, &Noted),
        rng: &mut dyn Rng,
    ) -> (Verdict, bool) {
        let rules = self.rules(noted.probing);
        if decision::reads_retry_after(&rules, facts) {
            for bad in reading.iter().flat_map(|r| &r.invalid) {
                self.reporter.warn(&bad.to_string());
            }
        }
        let mut charge = true;
        let mut gate = |mut ask: Ask| {
            // Waiting for a spent quota's reset is rate limiting too: not charged.
            ask.charge &= noted.spent.is_none();
            charge = ask.charge;
            decision::retry_gate(&noted.outlook, &ask)
        };
        let verdict = decision::decide(&rules, facts, &mut gate, rng);
        (verdict, charge)
    }

    /// Performs the verdict about an attempt whose line is `line`: logs the line, writes or
    /// discards the answer's body as the verdict says, and for a retry carries what the next
    /// attempt needs. Returns the verdict, its outcome changed only when the last body could
    /// not be written (1).
    fn perform(
        &self,
        verdict: Verdict,
        mut line: AttemptLine,
        sent: Sent,
        carry: &mut Carry,
    ) -> Verdict {
        let pending = carry.pending.take();
        let reading = carry.reading.take();
        match verdict {
            Verdict::Done => {
                self.reporter.attempt(&line);
                Verdict::Done
            }
            Verdict::Stop { outcome, reason } => {
                line.decision = Decision::Stop(reason.clone());
                self.reporter.attempt(&line);
                let outcome = self.last_body(pending, outcome);
                Verdict::Stop { outcome, reason }
            }
            Verdict::Retry(retry) => {
                if let Some(Pending::Read(r)) = pending {
                    self.output.discard(r.spool);
                }
                line.decision = Decision::Retry {
                    wait: retry.wait,
                    reason: retry.planned.reason,
                    asked: reading.as_ref().and_then(|r| r.asked),
                    hint: carry.seen.hint,
                    spread: retry.wait.saturating_sub(retry.planned.draw.floor),
                    jitter: self.cfg.retry.backoff.jitter,
                };
                self.reporter.attempt(&line);
                carry.retried(&retry, sent);
                Verdict::Retry(retry)
            }
        }
    }

    /// The body of the answer the run ends on: written under `--fail-with-body` (and the
    /// head of any answer under `-I`, as curl shows it), else thrown away. Returns the
    /// run's outcome, a local failure (1) when the error body could not be written.
    fn last_body(&self, pending: Option<Pending>, outcome: Outcome) -> Outcome {
        let head_only = self.cfg.request.method == "HEAD" && self.cfg.output.include;
        let fail_with_body = self.cfg.output.fail_with_body;
        match pending {
            Some(Pending::Unread(ex)) if fail_with_body || head_only => {
                self.delivery().deliver_error_body(*ex, outcome)
            }
            Some(Pending::Read(r)) if fail_with_body => {
                if let Err(b) = self.delivery().commit(r) {
                    self.reporter
                        .warn(&format!("could not write the body: {}", b.failure.detail));
                }
                outcome
            }
            Some(Pending::Read(r)) => {
                self.output.discard(r.spool);
                outcome
            }
            _ => outcome,
        }
    }

    /// The request an attempt starts with: the one given, or the hop that failed last time.
    fn first_hop(&self, carry: &Carry) -> Hop {
        carry.from.clone().unwrap_or_else(|| Hop {
            method: self.cfg.request.method.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            with_body: self.payload.is_some(),
        })
    }

    /// This attempt's time: the per-attempt timeout, cut to what is left of the deadline.
    pub(super) fn budget(&self) -> Option<Duration> {
        match (self.cfg.timeouts.attempt, self.deadline_left()) {
            (Some(t), Some(l)) => Some(t.min(l)),
            (t, l) => t.or(l),
        }
    }
}

/// What the countdown before a retry says: whose wait it is, after which result (`last`).
fn countdown(retry: &Retry, last: &str) -> String {
    match retry.planned.reason {
        WaitReason::Backoff | WaitReason::Deadline => format!("backoff after {last}"),
        _ => format!("Retry-After from {last}"),
    }
}
