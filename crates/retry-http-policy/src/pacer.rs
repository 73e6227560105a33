//! The pacer of one origin: the rate a server accepts, learnt from its answers when it
//! does not say it (no RateLimit fields). Pure: the clock is passed in, nothing is sent or
//! slept here; the origin's table (`fleet::origins`) asks it before each send of a batch
//! and tells it every answer, and `simulate` runs the same code against a token bucket.
//!
//! The rules, in order of a batch's life:
//! - **Start.** One request in flight until the first answer; then one more in flight for
//!   each answer accepted (the in-flight allowance doubles every round trip: TCP's slow
//!   start, RFC 5681 section 3.1). Nothing is spaced: without a throttle nothing slows
//!   down beyond this start.
//! - **Throttle.** A throttle is a 429, or a 503 with a Retry-After. The first one,
//!   and then the first one once [`Pacer::quiet`] has passed since the last cut (the
//!   longest of the smoothed round trip, the Retry-After that caused the cut, and
//!   [`MIN_GAP`]), cuts the rate to [`BETA`] times the rate of ACCEPTED answers over
//!   the last [`WINDOW`] (at least [`FLOOR`]; a throttle with a Retry-After: see "Held
//!   throttle" below). Throttles answering requests that were in flight at the cut are
//!   not cuts of their own: a limiter that sheds load a request at a time answers
//!   several at once, and cutting for each (the AWS SDKs' 7.0 -> 6.75 -> 4.73) would
//!   starve the batch. Sends (rejected ones included) overestimate the rate the server
//!   takes; its accepted answers do not.
//! - **Growth.** After a cut, sends are spaced evenly at the rate, which grows back
//!   along TCP CUBIC's curve (RFC 9438 section 4.2; the AWS SDKs' adaptive retry mode
//!   uses it for the same purpose): `rate(t) = C (t - K)^3 + max`, `K = cbrt(max (1 -
//!   BETA) / C)`, `max` the accepted rate measured at the cut and `t` the time since the
//!   cut, or since the end of the hold its Retry-After set (a held origin resumes at the
//!   cut rate, not at a rate grown during the hold). The curve is flat near `max` and
//!   steep away from it: the step is sized to the rate. When the cut was measured over
//!   less than [`MIN_SPAN`] of answers (the batch had just started, and a burst's count
//!   says little about a rate), the rate doubles every second instead until the next
//!   throttle. Once the rate reaches twice `max` ([`LET_GO`]) with no throttle, the pacer
//!   lets go: sends are no longer spaced.
//! - **Held throttle.** A throttle with a Retry-After holds the origin (the batch
//!   honours it), and the hold has already taken back the overshoot: the server's own
//!   pacing. A cut by [`BETA`] after it would pace below what the server gives (a fixed
//!   window's quota is whole again when its hold ends), and each probe above a held
//!   server's rate costs a whole hold. So a held cut measures two rates: the rate the
//!   server KEPT over the period the hold closes (the answers accepted since the
//!   previous held cut's hold ended, or the first send, over the time from then to this
//!   hold's end, the hold included: what the server gave, holds and all), the highest
//!   of the origin's periods being kept (until a held throttle comes while paced at or
//!   below it: the server's rate has fallen, and that period's rate is kept instead);
//!   and the accepted rate over the last [`WINDOW`] counting only the answers since the
//!   previous hold ended (those before it were the overshoot that hold paid for), holds
//!   not taken out of the time, never above the rate sent at. The rate resumes at the
//!   higher of the kept rate and [`BETA`] times the accepted rate (and never falls
//!   below it on the curve); the curve's `max` is the higher of the two rates, with `K`
//!   as above, and once back at `max` the rate stays there for [`PLATEAU`] holds before
//!   growing past it. Against a fixed window of Q a second with `Retry-After: 1`, the
//!   first burst (Q accepted in a few milliseconds, then a hold of a second) resumes at
//!   about Q / 1.03 instead of 0.7 Q; the doubling that follows (the cut is unsure)
//!   overshoots once, and that cut resumes at the same kept rate and stays there: no
//!   other hold for [`PLATEAU`] holds (5 s) past `K`.
//!
//! Each cut, and letting go, is a [`Change`] returned once, for the caller to say once.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The cut: the new rate is this share of the accepted rate (RFC 9438's beta_cubic, as
/// the AWS SDKs' adaptive mode uses it).
pub const BETA: f64 = 0.7;

/// CUBIC's scaling constant, requests/s per s^3 (RFC 9438's C, the AWS SDKs' value).
pub const C: f64 = 0.4;

/// The least time between two cuts; the round trip and the Retry-After lengthen it.
pub const MIN_GAP: Duration = Duration::from_secs(1);

/// The span over which the accepted rate is measured (the AWS SDKs measure in 0.5 s
/// buckets smoothed over several; two seconds holds a token bucket's burst to a third of
/// its share of the estimate, where one second doubles it at burst = rate / 4).
pub const WINDOW: Duration = Duration::from_secs(2);

/// A cut measured over less than this of answers is not sure of its rate: the rate then
/// doubles every second until the next throttle.
pub const MIN_SPAN: Duration = Duration::from_secs(1);

/// After a held cut, how long the rate stays at the curve's `max` before growing past it,
/// in holds (its Retry-After): a probe above a rate that cost a hold is likely to cost
/// another, so it comes once every five holds at most (plus `K`), a sixth of the time.
pub const PLATEAU: u32 = 5;

/// The least rate, requests/s (the AWS SDKs' floor).
pub const FLOOR: f64 = 0.5;

/// The rate, as a multiple of the rate measured at the last cut, at which the pacer lets
/// go (the AWS SDKs never go above twice the measured rate).
pub const LET_GO: f64 = 2.0;

/// The most rate the doubling after an unsure cut reaches before the pacer lets go,
/// requests/s.
pub const TOP: f64 = 10_000.0;

/// The most answers kept for the estimate (a bound on memory: at the top rate the window
/// holds this many).
const KEPT: usize = 20_000;

/// What one answer said, as the pacer hears it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// A 429, or a 503 with a Retry-After.
    pub throttled: bool,
    /// The Retry-After with it, as clamped (`--max-retry-after`).
    pub retry_after: Option<Duration>,
    /// The server took the request (any answer but a throttle and a 503).
    pub accepted: bool,
}

/// May one more request go?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Send {
    /// Yes (it is counted sent).
    Go,
    /// Not while this many are in flight: ask again when one is answered.
    Room,
    /// Not before this long: the spacing of the rate.
    Wait(Duration),
}

/// A change of rate, for the caller to say once.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The rate before, requests/s (`None`: not paced).
    pub from: Option<f64>,
    /// The rate after (`None`: no longer paced).
    pub to: Option<f64>,
    /// Why.
    pub why: Reason,
}

/// Why the rate changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// A throttle (its status and Retry-After), and the accepted rate it was cut from.
    Throttled {
        /// 429 or 503.
        status: u16,
        /// Its Retry-After, when it had one.
        retry_after: Option<Duration>,
        /// The accepted rate measured, requests/s.
        accepted: f64,
    },
    /// It grew to [`LET_GO`] times the rate measured at the last cut without a throttle.
    Recovered,
}

/// The phase a pacer is in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// The start: this many in flight (one, then one more per accepted answer).
    Start(f64),
    /// Paced, since a cut.
    Paced(Curve),
    /// Let go after growing back: nothing limited.
    Free,
}

/// The rate after a cut, as a function of time.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Curve {
    /// The rate right after the cut, requests/s.
    cut: f64,
    /// The accepted rate measured at the cut (CUBIC's `max`), requests/s.
    max: f64,
    /// When growth starts: the cut, or the end of the hold its Retry-After set.
    since: Instant,
    /// Whether the measure spanned [`MIN_SPAN`] (CUBIC) or not (doubling).
    sure: bool,
    /// How long the rate stays at `max`, once back at it, before it grows past it: none
    /// after a throttle without a hold, [`PLATEAU`] holds after a held one.
    plateau: Duration,
}

impl Curve {
    /// The rate at `now`, requests/s, not above the rate at which the pacer lets go.
    fn at(&self, now: Instant) -> f64 {
        let t = now.saturating_duration_since(self.since).as_secs_f64();
        let rate = if self.sure {
            let k = (self.max * (1.0 - BETA) / C).cbrt();
            let t = if t < k {
                t
            } else {
                (t - self.plateau.as_secs_f64()).max(k)
            };
            (C * (t - k).powi(3) + self.max).max(self.cut)
        } else {
            self.cut * 2f64.powf(t.min(64.0))
        };
        rate.clamp(FLOOR, self.top())
    }

    /// The rate at which the pacer lets go.
    fn top(&self) -> f64 {
        if self.sure {
            (self.max * LET_GO).max(FLOOR)
        } else {
            TOP
        }
    }
}

/// The pacer of one origin (see the module's rules).
#[derive(Debug, Clone)]
pub struct Pacer {
    phase: Phase,
    /// When the requests in flight were sent, oldest first (answers are taken to come
    /// back in order: the round trip is measured from the oldest).
    sent: VecDeque<Instant>,
    /// The smoothed round trip (RFC 6298: 7/8 old, 1/8 new).
    srtt: Option<Duration>,
    /// When the accepted answers of the last [`WINDOW`] arrived.
    accepted: VecDeque<Instant>,
    /// The first send.
    first: Option<Instant>,
    /// The holds the throttles' Retry-After set in the last [`WINDOW`], in order, merged:
    /// no answer is accepted while one lasts, so their time is not part of the measure.
    held: VecDeque<(Instant, Instant)>,
    /// The last cut and how long no other may follow it.
    last_cut: Option<(Instant, Duration)>,
    /// The earliest the next send may go while paced.
    next_at: Option<Instant>,
    /// Accepted heads counted at the start before their answers ended ([`Pacer::head`]).
    early: u32,
    /// When the last held cut's hold ended (or ends): the start of the period the next
    /// held cut closes.
    resumed: Option<Instant>,
    /// The answers accepted since the last held cut.
    since_held: u32,
    /// The highest rate the server kept over a period a hold closed, requests/s (since the
    /// last held throttle at or below it).
    kept: f64,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer::new()
    }
}

impl Pacer {
    /// A pacer at its start: one request in flight until the first answer.
    pub fn new() -> Pacer {
        Pacer {
            phase: Phase::Start(1.0),
            sent: VecDeque::new(),
            srtt: None,
            accepted: VecDeque::new(),
            first: None,
            held: VecDeque::new(),
            last_cut: None,
            next_at: None,
            early: 0,
            resumed: None,
            since_held: 0,
            kept: 0.0,
        }
    }

    /// The rate the sends are spaced at, at `now`, requests/s (`None`: not spaced).
    pub fn rate(&self, now: Instant) -> Option<f64> {
        match self.phase {
            Phase::Paced(c) => Some(c.at(now)),
            _ => None,
        }
    }

    /// May a request go at `now`, with `in_flight` requests to the origin in flight? On
    /// [`Send::Go`] it is counted sent.
    pub fn before_send(&mut self, now: Instant, in_flight: u32) -> Send {
        match self.phase {
            Phase::Start(window) if f64::from(in_flight) >= window.floor() => Send::Room,
            Phase::Paced(c) => {
                if let Some(next) = self.next_at.filter(|n| *n > now) {
                    return Send::Wait(next - now);
                }
                let gap = Duration::from_secs_f64(1.0 / c.at(now));
                // Late by up to one gap is made up; more is not (no burst after a lull).
                let from = self
                    .next_at
                    .map_or(now, |n| n.max(now.checked_sub(gap).unwrap_or(now)));
                self.next_at = Some(from + gap);
                self.sent(now);
                Send::Go
            }
            _ => {
                self.sent(now);
                Send::Go
            }
        }
    }

    /// A request went at `now` without asking (another rule, the RateLimit fields, leads):
    /// it is counted for the round trip.
    pub fn sent(&mut self, now: Instant) {
        self.first.get_or_insert(now);
        self.sent.push_back(now);
    }

    /// The head of an answer that is not a throttle arrived, before its body: at the start,
    /// it counts as accepted at once (a slow first body does not hold back the others); the
    /// answer, when it ends, is not counted again.
    pub fn head(&mut self) {
        if let Phase::Start(w) = &mut self.phase {
            *w += 1.0;
            self.early += 1;
        }
    }

    /// A request ended at `now` without an answer: no longer in flight.
    pub fn lost(&mut self, now: Instant) {
        self.round_trip(now);
    }

    /// `status`'s answer, heard at `now`: the rate's change, when it made one.
    pub fn heard(&mut self, now: Instant, status: u16, a: Answer) -> Option<Change> {
        self.round_trip(now);
        if a.accepted {
            self.accepted.push_back(now);
            self.since_held = self.since_held.saturating_add(1);
            if self.accepted.len() > KEPT {
                self.accepted.pop_front();
            }
            if self.early > 0 {
                self.early -= 1;
            } else if let Phase::Start(w) = &mut self.phase {
                *w += 1.0;
            }
        }
        if let Some(ra) = a.retry_after.filter(|_| a.throttled) {
            self.hold(now, now + ra);
        }
        self.forget(now);
        if a.throttled {
            return self.throttled(now, status, a.retry_after);
        }
        self.let_go(now)
    }

    /// The round trip of the oldest request in flight, answered at `now`.
    fn round_trip(&mut self, now: Instant) {
        if let Some(at) = self.sent.pop_front() {
            let sample = now.saturating_duration_since(at);
            self.srtt = Some(self.srtt.map_or(sample, |s| (s * 7 + sample) / 8));
        }
    }

    /// A hold from `from` to `until`, merged with the last when they overlap.
    fn hold(&mut self, from: Instant, until: Instant) {
        match self.held.back_mut() {
            Some((_, end)) if *end >= from => *end = (*end).max(until),
            _ => self.held.push_back((from, until)),
        }
    }

    /// Drops the accepted answers and the holds older than the window.
    fn forget(&mut self, now: Instant) {
        while self
            .held
            .front()
            .is_some_and(|(_, end)| now.saturating_duration_since(*end) > WINDOW)
        {
            self.held.pop_front();
        }
        while self
            .accepted
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) > WINDOW)
        {
            self.accepted.pop_front();
        }
    }

    /// How long no cut follows one at `now` for a throttle with `retry_after`: the
    /// longest of the smoothed round trip, the Retry-After and [`MIN_GAP`].
    pub fn quiet(&self, retry_after: Option<Duration>) -> Duration {
        MIN_GAP
            .max(self.srtt.unwrap_or_default())
            .max(retry_after.unwrap_or_default())
    }

    /// The rate of accepted answers at `now`, requests/s, and whether it was measured over
    /// at least [`MIN_SPAN`]: the answers of the last [`WINDOW`] (or since the first send)
    /// over that time less the holds within it, and over [`MIN_SPAN`] at least.
    pub fn accepted_rate(&self, now: Instant) -> (f64, bool) {
        let span = self
            .first
            .map_or(Duration::ZERO, |f| now.saturating_duration_since(f));
        let from = now.checked_sub(span.min(WINDOW)).unwrap_or(now);
        let held: Duration = self
            .held
            .iter()
            .map(|(s, e)| (*e).min(now).saturating_duration_since((*s).max(from)))
            .sum();
        let over = span.min(WINDOW).saturating_sub(held).max(MIN_SPAN);
        (
            self.accepted.len() as f64 / over.as_secs_f64(),
            span >= MIN_SPAN,
        )
    }

    /// A throttle at `now`: a cut, unless one was made less than its quiet time ago.
    fn throttled(&mut self, now: Instant, status: u16, ra: Option<Duration>) -> Option<Change> {
        if self
            .last_cut
            .is_some_and(|(at, quiet)| now.saturating_duration_since(at) < quiet)
        {
            return None;
        }
        self.last_cut = Some((now, self.quiet(ra)));
        let from = self.rate(now);
        let (cut, curve, measured) = match ra {
            Some(ra) => self.held_cut(now, ra, from),
            None => {
                let (measured, sure) = self.accepted_rate(now);
                // Paced already: never above the rate sent at (a burst may have been accepted).
                let max = from.map_or(measured, |r| measured.min(r)).max(FLOOR);
                let cut = (max * BETA).max(FLOOR);
                (cut, (max, sure, Duration::ZERO), measured)
            }
        };
        let (max, sure, plateau) = curve;
        self.phase = Phase::Paced(Curve {
            cut,
            max,
            since: now + ra.unwrap_or_default(),
            sure,
            plateau,
        });
        self.next_at = None;
        Some(Change {
            from,
            to: Some(cut),
            why: Reason::Throttled {
                status,
                retry_after: ra,
                accepted: measured,
            },
        })
    }

    /// The cut for a throttle at `now` whose Retry-After `ra` holds the origin, paced at
    /// `from`: the rate to resume at, the curve's `max`, whether sure, its plateau, and the
    /// accepted rate measured (see the module's rules).
    fn held_cut(
        &mut self,
        now: Instant,
        ra: Duration,
        from: Option<f64>,
    ) -> (f64, (f64, bool, Duration), f64) {
        let start = self.resumed.or(self.first).unwrap_or(now);
        let period = (now + ra).saturating_duration_since(start).max(MIN_SPAN);
        let kept = f64::from(self.since_held) / period.as_secs_f64();
        // Throttled at a rate not above the one kept: that one is too high now.
        self.kept = if from.is_some_and(|r| r <= self.kept) {
            kept
        } else {
            self.kept.max(kept)
        };
        let span = self
            .first
            .map_or(Duration::ZERO, |f| now.saturating_duration_since(f));
        let fresh = self
            .accepted
            .iter()
            .filter(|t| self.resumed.is_none_or(|r| **t >= r))
            .count();
        let measured = fresh as f64 / span.min(WINDOW).max(MIN_SPAN).as_secs_f64();
        let rate = from.map_or(measured, |r| measured.min(r));
        self.resumed = Some(now + ra);
        self.since_held = 0;
        let max = self.kept.max(rate).max(FLOOR);
        let cut = self.kept.max(rate * BETA).max(FLOOR);
        (
            cut,
            (max, span >= MIN_SPAN, ra.saturating_mul(PLATEAU)),
            measured,
        )
    }

    /// Lets go once the rate has grown to its top without a throttle.
    fn let_go(&mut self, now: Instant) -> Option<Change> {
        let Phase::Paced(c) = self.phase else {
            return None;
        };
        let rate = c.at(now);
        if rate < c.top() {
            return None;
        }
        self.phase = Phase::Free;
        self.next_at = None;
        Some(Change {
            from: Some(rate),
            to: None,
            why: Reason::Recovered,
        })
    }
}

/// A rate as the log says it: "12.5 requests/s", "0.50 requests/s".
pub fn fmt_rate(rate: f64) -> String {
    if rate >= 10.0 {
        format!("{rate:.1} requests/s")
    } else {
        format!("{rate:.2} requests/s")
    }
}

impl Change {
    /// The line saying it, for `origin`: "pacing http://a:80: 46.0 -> 32.2 requests/s
    /// (429, accepted 46.0 requests/s over the last 2s)".
    pub fn line(&self, origin: &str) -> String {
        let rate = |r: Option<f64>| r.map_or("unpaced".to_string(), fmt_rate);
        let why = match &self.why {
            Reason::Throttled {
                status,
                retry_after,
                accepted,
            } => {
                let ra = retry_after
                    .map(|d| format!(" with Retry-After {}", crate::units::fmt_duration(d)))
                    .unwrap_or_default();
                format!("throttled: {status}{ra}; {} accepted", fmt_rate(*accepted))
            }
            Reason::Recovered => "no throttle while it grew back: no longer paced".to_string(),
        };
        format!(
            "pacing {origin}: {} -> {} ({why})",
            rate(self.from),
            rate(self.to)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    const OK: Answer = Answer {
        throttled: false,
        retry_after: None,
        accepted: true,
    };

    fn throttle(retry_after: Option<u64>) -> Answer {
        Answer {
            throttled: true,
            retry_after: retry_after.map(Duration::from_secs),
            accepted: false,
        }
    }

    /// A pacer that sent `n` requests accepted at an even spacing over `over` from `t0`.
    fn after_accepting(t0: Instant, n: u32, over: Duration) -> Pacer {
        let mut p = Pacer::new();
        for i in 0..n {
            let at = t0 + over * i / n.max(1);
            p.sent(at);
            assert_eq!(p.heard(at, 200, OK), None);
        }
        p
    }

    #[test]
    fn one_in_flight_until_the_first_answer_then_one_more_per_accepted_answer() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        assert_eq!(p.before_send(t0, 0), Send::Go);
        assert_eq!(p.before_send(t0, 1), Send::Room);
        // A lost request frees its place but does not grow the allowance.
        p.lost(t0 + ms(5));
        assert_eq!(p.before_send(t0 + ms(5), 0), Send::Go);
        assert_eq!(p.before_send(t0 + ms(5), 1), Send::Room);
        // Each accepted answer: one more in flight (doubling every round trip).
        for n in 1..40u32 {
            p.heard(t0 + ms(10), 200, OK);
            assert_eq!(p.before_send(t0 + ms(10), n), Send::Go, "{n}");
            assert_eq!(p.before_send(t0 + ms(10), n + 1), Send::Room, "{n}");
        }
    }

    #[test]
    fn a_head_counts_at_once_and_its_answer_not_again() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        assert_eq!(p.before_send(t0, 0), Send::Go);
        p.head();
        assert_eq!(p.before_send(t0, 1), Send::Go);
        assert_eq!(p.before_send(t0, 2), Send::Room);
        p.heard(t0 + ms(3000), 200, OK);
        assert_eq!(p.before_send(t0, 1), Send::Go);
        assert_eq!(p.before_send(t0, 2), Send::Room);
        p.heard(t0 + ms(3000), 200, OK);
        assert_eq!(p.before_send(t0, 2), Send::Go);
    }

    #[test]
    fn without_a_throttle_nothing_is_spaced_whatever_the_answers() {
        let t0 = Instant::now();
        for status in [200u16, 204, 301, 404, 500, 503] {
            let mut p = Pacer::new();
            let accepted = status != 503;
            for i in 0..2000u32 {
                let at = t0 + ms(u64::from(i));
                assert!(matches!(p.before_send(at, 0), Send::Go), "{status}");
                let a = Answer {
                    throttled: false,
                    retry_after: None,
                    accepted,
                };
                assert_eq!(p.heard(at, status, a), None);
            }
            assert_eq!(p.rate(t0 + ms(2000)), None);
        }
    }

    #[test]
    fn the_cut_is_from_the_accepted_rate_not_the_sends() {
        let t0 = Instant::now();
        // 40 accepted a second for 2 s, and 60 more sent and rejected (a throttle each).
        let mut p = after_accepting(t0, 80, ms(2000));
        for i in 0..60u64 {
            p.sent(t0 + ms(1000 + i * 16));
        }
        let at = t0 + ms(2000);
        let change = p.heard(at, 429, throttle(None)).expect("a cut");
        let Reason::Throttled { accepted, .. } = change.why else {
            panic!("{change:?}")
        };
        assert!((accepted - 40.0).abs() < 1.0, "{accepted}");
        let to = change.to.expect("paced");
        assert!((to - 40.0 * BETA).abs() < 1.0, "{to}");
        assert_eq!(change.from, None);
        assert!(
            change
                .line("http://a:80")
                .starts_with("pacing http://a:80: unpaced -> 28."),
            "{}",
            change.line("http://a:80")
        );
    }

    #[test]
    fn throttles_in_flight_at_a_cut_make_one_cut_per_quiet_time() {
        let t0 = Instant::now();
        for (ra, quiet) in [(None, 1000u64), (Some(1), 1000), (Some(3), 3000)] {
            let mut p = after_accepting(t0, 80, ms(2000));
            let at = t0 + ms(2000);
            assert!(p.heard(at, 429, throttle(ra)).is_some());
            let first = p.rate(at);
            // Ten more throttles answered within the quiet time: no cut.
            for i in 1..=10u64 {
                let later = at + ms(quiet * i / 11);
                assert_eq!(p.heard(later, 429, throttle(ra)), None, "{ra:?} {i}");
            }
            assert_eq!(p.rate(at), first);
            // Past it, the next throttle cuts again, below the first cut.
            let past = at + ms(quiet);
            let again = p.heard(past, 429, throttle(ra)).expect("a second cut");
            assert!(again.to < again.from, "{again:?}");
        }
    }

    #[test]
    fn a_long_round_trip_lengthens_the_quiet_time() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        for i in 0..40u64 {
            p.sent(t0 + ms(i * 50));
            p.heard(t0 + ms(i * 50 + 3000), 200, OK);
        }
        assert!(p.quiet(None) >= ms(2900), "{:?}", p.quiet(None));
        assert_eq!(
            p.quiet(Some(Duration::from_secs(5))),
            Duration::from_secs(5)
        );
        assert_eq!(Pacer::new().quiet(None), MIN_GAP);
    }

    #[test]
    fn sends_are_spaced_at_the_rate_after_a_cut() {
        let t0 = Instant::now();
        let mut p = after_accepting(t0, 80, ms(2000));
        let at = t0 + ms(2000);
        p.heard(at, 429, throttle(None));
        let rate = p.rate(at).expect("paced");
        assert_eq!(p.before_send(at, 0), Send::Go);
        let Send::Wait(w) = p.before_send(at, 0) else {
            panic!("spaced")
        };
        let gap = 1.0 / rate;
        assert!((w.as_secs_f64() - gap).abs() < 0.002, "{w:?} {gap}");
        // Over a second, no more go than the rate (and one late gap made up at most).
        let mut went = 0;
        let mut now = at + w;
        while now < at + ms(1000) {
            match p.before_send(now, 0) {
                Send::Go => went += 1,
                Send::Wait(w) => now += w,
                Send::Room => panic!("no room limit while paced"),
            }
        }
        // (The rate grows meanwhile: between the rate at the cut and the rate a second on.)
        let end = p.rate(at + ms(1000)).expect("paced");
        assert!(f64::from(went) <= end + 2.0, "{went} at {rate}..{end}");
        assert!(f64::from(went) >= rate - 2.0, "{went} at {rate}..{end}");
    }

    #[test]
    fn growth_is_sized_to_the_rate_and_flat_near_the_last_max() {
        let t0 = Instant::now();
        for per_s in [4u32, 40, 400, 4000] {
            let mut p = after_accepting(t0, per_s * 2, ms(2000));
            let at = t0 + ms(2000);
            p.heard(at, 429, throttle(None));
            let max = f64::from(per_s);
            let k = (max * (1.0 - BETA) / C).cbrt();
            let r = |s: f64| p.rate(at + Duration::from_secs_f64(s)).expect("paced");
            // Back at the measured rate after K seconds, and not above it before.
            assert!((r(k) - max).abs() < max * 0.02, "{per_s}: {}", r(k));
            assert!(r(k * 0.9) < max, "{per_s}");
            // The first second's growth is a share of the rate, not a fixed step.
            let grown = (r(1.0) - r(0.0)) / max;
            assert!(grown > 0.0 && grown < 0.3, "{per_s}: {grown}");
        }
    }

    #[test]
    fn a_cut_at_the_start_is_unsure_and_doubles_every_second() {
        let t0 = Instant::now();
        // 11 accepted in 30 ms (a bucket's burst), then a throttle.
        let mut p = after_accepting(t0, 11, ms(30));
        let at = t0 + ms(30);
        let c = p.heard(at, 429, throttle(None)).expect("a cut");
        let to = c.to.expect("paced");
        assert!((to - 11.0 * BETA).abs() < 0.01, "{to}");
        let r2 = p.rate(at + ms(2000)).expect("paced");
        assert!((r2 - 4.0 * to).abs() < 0.1, "{r2}");
    }

    #[test]
    fn the_time_held_is_not_part_of_the_measure() {
        let t0 = Instant::now();
        // 40 accepted in the first second, then a throttle holding the origin 1 s.
        let mut p = after_accepting(t0, 40, ms(1000));
        p.sent(t0 + ms(1000));
        let early = t0 + ms(1000);
        assert!(p.heard(early, 429, throttle(Some(1))).is_some());
        // The hold over, 20 more accepted in half a second; a throttle past the quiet time.
        for i in 0..20u64 {
            p.heard(t0 + ms(2000 + i * 25), 200, OK);
        }
        let (rate, sure) = p.accepted_rate(t0 + ms(2500));
        assert!(sure);
        // 60 accepted in the 2 s window, of which 1 s held: about 40 a second, not 30.
        assert!((rate - 40.0).abs() < 3.0, "{rate}");
    }

    #[test]
    fn a_hold_delays_growth_to_its_end() {
        let t0 = Instant::now();
        let mut p = after_accepting(t0, 80, ms(2000));
        let at = t0 + ms(2000);
        let c = p.heard(at, 429, throttle(Some(2))).expect("a cut");
        let cut = c.to.expect("paced");
        assert_eq!(p.rate(at + ms(2000)), Some(cut));
        assert!(p.rate(at + ms(3000)) > Some(cut));
    }

    #[test]
    fn floor_and_let_go() {
        let t0 = Instant::now();
        // Nothing accepted at all: the floor.
        let mut p = Pacer::new();
        p.sent(t0);
        let c = p.heard(t0, 429, throttle(None)).expect("a cut");
        assert_eq!(c.to, Some(FLOOR));
        assert!(p.rate(t0 + ms(500)).is_some_and(|r| r >= FLOOR));
        // Grown to twice the measured rate without a throttle: let go, said once.
        let mut p = after_accepting(t0, 80, ms(2000));
        let at = t0 + ms(2000);
        p.heard(at, 429, throttle(None));
        let late = at + Duration::from_secs(60);
        let c = p.heard(late, 200, OK).expect("let go");
        assert_eq!(c.to, None);
        assert_eq!(c.why, Reason::Recovered);
        assert_eq!(p.heard(late, 200, OK), None);
        assert_eq!(p.before_send(late, 1000), Send::Go);
    }

    #[test]
    fn a_cut_while_paced_is_below_the_rate_sent_at() {
        let t0 = Instant::now();
        let mut p = after_accepting(t0, 80, ms(2000));
        let at = t0 + ms(2000);
        let first = p.heard(at, 429, throttle(None)).and_then(|c| c.to);
        // A burst accepted in the next second counts, but the cut is below the rate paced.
        for i in 0..200u64 {
            p.heard(at + ms(500 + i), 200, OK);
        }
        let later = at + ms(1500);
        let rate = p.rate(later).expect("paced");
        let c = p.heard(later, 429, throttle(None)).expect("a cut");
        assert_eq!(c.from, Some(rate));
        assert!(
            c.to.is_some_and(|t| t <= rate * BETA + 1e-9),
            "{c:?} {first:?}"
        );
    }

    /// `n` accepted within 26 ms of `t0` (a burst), then a throttle holding `hold`.
    fn burst_then_held(t0: Instant, n: u32, hold: Duration) -> (Pacer, Option<Change>) {
        let mut p = after_accepting(t0, n, ms(26));
        let at = t0 + ms(26);
        p.sent(at);
        let a = Answer {
            retry_after: Some(hold),
            ..throttle(None)
        };
        let c = p.heard(at, 429, a);
        (p, c)
    }

    #[test]
    fn a_held_throttle_resumes_at_the_rate_its_period_kept() {
        let t0 = Instant::now();
        for n in [11u32, 40, 400] {
            for hold in [1u64, 2, 3] {
                let hold = Duration::from_secs(hold);
                let (p, c) = burst_then_held(t0, n, hold);
                let to = c.and_then(|c| c.to).expect("a cut");
                // The burst over the period its hold closes, or the usual cut if higher.
                let kept = f64::from(n) / (0.026 + hold.as_secs_f64());
                let want = kept.max(BETA * f64::from(n));
                assert!((to - want).abs() < want * 0.01, "{n} {hold:?}: {to} {want}");
                assert_eq!(p.rate(t0 + ms(26) + hold), Some(to), "{n} {hold:?}");
            }
        }
    }

    fn held_a_second() -> Answer {
        Answer {
            retry_after: Some(Duration::from_secs(1)),
            ..throttle(None)
        }
    }

    /// A fixed window of `quota` a second: its quota at once from `t0`, held a second; once
    /// resumed, half a window and a whole one more accepted in a second, and the next hold.
    /// The pacer, that hold's cut, and when it ends.
    fn window_twice_held(t0: Instant, quota: u32) -> (Pacer, Change, Instant) {
        let (mut p, _) = burst_then_held(t0, quota, Duration::from_secs(1));
        let n = quota * 16 / 10;
        let resumed = t0 + ms(1026);
        for i in 0..n {
            p.heard(resumed + ms(1070) * i / n, 200, OK);
        }
        let at = resumed + ms(1070);
        let c = p.heard(at, 429, held_a_second()).expect("a cut");
        (p, c, at + Duration::from_secs(1))
    }

    #[test]
    fn a_fixed_window_is_paced_at_the_quota_a_hold_renewed_not_above() {
        let t0 = Instant::now();
        for quota in [10u32, 40, 400] {
            let (p, c, end) = window_twice_held(t0, quota);
            let kept = f64::from(quota) / 1.026;
            assert!(
                c.to.is_some_and(|to| (to - kept).abs() < kept * 0.01),
                "{quota}: {c:?}"
            );
            // Paced at that rate, not above it, for the plateau and more.
            for s in 0..=u64::from(PLATEAU) {
                let r = p.rate(end + Duration::from_secs(s)).expect("paced");
                assert!((r - kept).abs() < kept * 0.01, "{quota} at {s} s: {r}");
            }
        }
    }

    #[test]
    fn a_held_cut_keeps_its_max_for_its_plateau_then_probes_and_a_plain_cut_does_not() {
        let t0 = Instant::now();
        for hold in [None, Some(1u64), Some(2)] {
            let mut p = after_accepting(t0, 80, ms(2000));
            let at = t0 + ms(2000);
            let c = p.heard(at, 429, throttle(hold)).expect("a cut");
            let Reason::Throttled { accepted, .. } = c.why else {
                panic!("{c:?}")
            };
            let max = accepted;
            let k = (max * (1.0 - BETA) / C).cbrt();
            let held = Duration::from_secs(hold.unwrap_or(0));
            let top = at + held + Duration::from_secs_f64(k);
            let plateau = held * PLATEAU;
            let r = |d: Duration| p.rate(top + d).expect("paced");
            assert!((r(Duration::ZERO) - max).abs() < 0.1, "{hold:?}");
            if hold.is_some() {
                assert!((r(plateau - ms(100)) - max).abs() < 0.1, "{hold:?}");
            }
            assert!(r(plateau + ms(2000)) > max + 1.0, "{hold:?}");
        }
    }

    #[test]
    fn a_kept_rate_throttled_at_or_below_is_forgotten() {
        let t0 = Instant::now();
        for quota in [10u32, 40, 400] {
            let (mut p, c, end) = window_twice_held(t0, quota);
            let kept = c.to.expect("paced");
            // The limit falls to half: paced at the kept rate, half the quota a second is
            // accepted for 4 s, then a held throttle.
            let n = quota * 2;
            for i in 0..n {
                p.heard(end + ms(4000) * i / n, 200, OK);
            }
            let at = end + ms(4000);
            assert!(p.rate(at).is_some_and(|r| r <= kept), "{quota}");
            let to = p.heard(at, 429, held_a_second()).and_then(|c| c.to);
            // Resumed below the half the server now takes, not at the kept rate.
            let half = f64::from(quota) / 2.0;
            assert!(
                to.is_some_and(|to| to <= half),
                "{quota}: {to:?} (kept {kept})"
            );
        }
    }
}
