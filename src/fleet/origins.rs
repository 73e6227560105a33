//! The careful client per origin, in process: what the transfers of one run to one origin
//! (scheme, host, port of the server that answered) share besides `--state`: a Retry-After
//! hold on the monotonic clock, pacing from the server's RateLimit fields, and the
//! transfers in flight. A run of one URL has a table of its own; a batch shares one
//! between its transfers.
//!
//! The attempt loop, through its gate (`gate::Gate`), asks the table before every
//! attempt, the first included ([`Origins::before_send`]: go, wait this long and why, or
//! stop because the wait would end past the deadline), and tells it after every attempt
//! ([`Origins::after`]: the request is no longer in flight; what the origin that answered
//! said). That is all a batch has to do: lend ONE table to all its transfers (in the one
//! local layer of their gates, `gate::local`, in every `Lent`); the table is `Sync` (one `Mutex` inside, held only for a decision, never
//! across a wait or a request), so transfers on several threads share it as they are.
//!
//! The rules, each decided with the clock passed in (pure apart from the lock):
//! - **Hold.** A 429 or 503 with a Retry-After, clamped to `--max-retry-after`, holds the
//!   origin that answered until then, on the monotonic clock to the millisecond; so does
//!   a quota reported spent (0 left) until its reset. An update keeps the later of the two
//!   ends (a shorter hint given later never shortens a hold). Every transfer asking while
//!   it holds waits until its end plus its own uniform(0, `--retry-after-spread`), so held
//!   transfers are not released in one instant; one whose wait would end past its
//!   deadline stops at once. The first transfer to meet a hold says so (once per hold).
//! - **Pacing.** Until the origin's first answer arrives, one request is in flight to it.
//!   After that, when it reported a quota with its reset, no more requests are in flight
//!   than the quota left as last reported less those sent since (requests still in
//!   flight when a report arrives count as sent since: they may not have been counted).
//!   When that is low ([`low`]: a tenth of the quota or less, or [`LOW_LEFT`] when the
//!   quota's size is not said), sends are spread evenly over the time to the reset; when
//!   none is left, the origin waits for the reset (with the spread, as a hold). A quota
//!   whose reset was not said (or could not be read) is not paced on; a reset further
//!   than `--max-retry-after` is taken to be that far, as a Retry-After is clamped.
//! - **Adaptive pacing** (a batch's table only: [`Origins::pacing`]). Without RateLimit
//!   fields, each origin has a pacer (`policy::pacer`) that learns the rate the server
//!   accepts from its throttles (429, 503 with Retry-After) and its accepted answers, and
//!   spaces the sends to it at that rate; each change of rate is returned once
//!   ([`After::paced`]) for the caller to say. A quota, when reported, leads instead. A
//!   single run has no pacer: its one transfer in flight already waits out each throttle.
//! - **Bounds.** At most [`MAX_ORIGINS`] origins are kept. An entry expires once its
//!   hold and its quota's reset are over and nothing is in flight; when the table is
//!   full, expired entries go first, then the one used longest ago.

use crate::policy::decision::{hold_fits, wait_for_hold};
use crate::policy::gate::{Clear, Stop, Why};
use crate::policy::pacer::{self, Change, Pacer, Send};
use crate::policy::ratelimit::{self, Quota};
use crate::units::fmt_duration;
use rand::Rng;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use url::Url;

/// The most origins the table keeps (a batch of many hosts drops the least recently used
/// beyond this; what is lost is only pacing knowledge, re-learnt from the next answer).
pub const MAX_ORIGINS: usize = 1024;

/// How long a transfer waits before asking again when the origin has no room in flight
/// (its first answer not yet in, or its quota taken by requests in flight).
pub const POLL: Duration = Duration::from_millis(20);

/// The quota left at or below which sends are spread over the time to the reset, when
/// the server did not say the quota's size (with it: a tenth of the quota).
pub const LOW_LEFT: u64 = 5;

/// The key of an origin, the one rule for the run's table of origins, a batch's
/// `--parallel-max-host` and a target's `--state` record: `scheme://host:port` of `url`
/// (the port the scheme's default when not given), and the Unix socket the requests go
/// through, if any (two daemons behind two sockets are two origins).
pub fn origin_key(url: &Url, socket: Option<&Path>) -> String {
    // Put together by hand, in one allocation: a transfer asks for its origin's key a few
    // times, and a batch runs thousands of transfers.
    let (scheme, host) = (url.scheme(), url.host_str().unwrap_or(""));
    let port = url.port_or_known_default().unwrap_or(0);
    let mut key = String::with_capacity(scheme.len() + host.len() + 9);
    key.push_str(scheme);
    key.push_str("://");
    key.push_str(host);
    key.push(':');
    push_decimal(&mut key, port);
    match socket {
        Some(s) => format!("{key} via unix:{}", s.display()),
        None => key,
    }
}

/// Appends `n` in decimal.
fn push_decimal(to: &mut String, n: u16) {
    let mut digits = [0u8; 5];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for d in &digits[i..] {
        to.push(char::from(*d));
    }
}

/// Whether `left` requests of a quota of `limit` (when said) is low: spread them out.
pub fn low(left: u64, limit: Option<u64>) -> bool {
    match limit {
        Some(l) => left.saturating_mul(10) <= l,
        None => left <= LOW_LEFT,
    }
}

/// The table of origins of one run, shared by its transfers (bounded; entries expire).
#[derive(Debug, Default)]
pub struct Origins {
    table: Mutex<HashMap<String, Entry>>,
    /// Whether each origin has a pacer (a batch's table).
    pacing: bool,
}

/// What one origin's entry holds.
#[derive(Debug, Clone)]
struct Entry {
    /// A hold (Retry-After, or a spent quota) and whether it was said.
    hold: Option<Hold>,
    /// The last quota reported with its reset.
    quota: Option<Seen>,
    /// Whether a first answer arrived.
    answered: bool,
    /// Requests in flight to it (sent from this table, not yet told back).
    in_flight: u32,
    /// Pacing: the earliest the next send may go while the quota is low.
    next_at: Option<Instant>,
    /// When the entry was last asked or told (the oldest goes first when the table is full).
    used: Instant,
    /// A RateLimit field that could not be read was said already.
    warned: bool,
    /// The pacer learning the rate the origin accepts (a batch's table only).
    pacer: Option<Pacer>,
}

/// A hold on an origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hold {
    until: Instant,
    cause: Cause,
    said: bool,
}

/// What set a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A 429 or 503's Retry-After: as asked (before the clamp).
    RetryAfter(Duration),
    /// A quota reported spent: its size, when said.
    Quota(Option<u64>),
}

/// The last quota an origin reported, with its reset on the monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    limit: Option<u64>,
    remaining: u64,
    reset_at: Instant,
    sent_since: u64,
}

impl Entry {
    fn new(at: Instant) -> Entry {
        Entry {
            hold: None,
            quota: None,
            answered: false,
            in_flight: 0,
            next_at: None,
            used: at,
            warned: false,
            pacer: None,
        }
    }

    /// Over: no hold, no quota window, nothing in flight (what the table may forget).
    fn expired(&self, at: Instant) -> bool {
        self.in_flight == 0
            && self.hold.is_none_or(|h| h.until <= at)
            && self.quota.is_none_or(|q| q.reset_at <= at)
    }

    /// Sets a hold until `until`, keeping the later of the two ends (a new end is a new
    /// hold, said again).
    fn hold(&mut self, until: Instant, cause: Cause) {
        match &mut self.hold {
            Some(h) if h.until >= until => {}
            slot => {
                *slot = Some(Hold {
                    until,
                    cause,
                    said: false,
                })
            }
        }
    }
}

/// What an answer told, read from its head as it arrived, kept until the attempt is over
/// and the table hears it (see [`Told::answer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    /// The origin that answered (the last hop's).
    pub origin: String,
    /// Its status.
    pub status: u16,
    /// Its RateLimit fields.
    pub rate: ratelimit::Reading,
}

impl Told {
    /// What an answer from `origin` (the key of the URL that answered: [`origin_key`])
    /// with `status` and `headers` tells, read at `now`.
    pub fn read(
        origin: String,
        status: u16,
        headers: &[(String, String)],
        now: SystemTime,
    ) -> Told {
        Told {
            origin,
            status,
            rate: ratelimit::read(headers, now),
        }
    }

    /// The answer as the table hears it: with the attempt's Retry-After as asked and as
    /// clamped (`retry_after`), and `--max-retry-after` (`max_hold`).
    pub fn answer(
        &self,
        retry_after: Option<(Duration, Duration)>,
        max_hold: Duration,
    ) -> Answer<'_> {
        Answer {
            origin: &self.origin,
            status: self.status,
            retry_after,
            quota: self.rate.quota,
            malformed: !self.rate.invalid.is_empty(),
            max_hold,
        }
    }
}

/// What an answer said, for [`Origins::after`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer<'a> {
    /// The origin that answered (the last hop).
    pub origin: &'a str,
    /// Its status.
    pub status: u16,
    /// Its Retry-After as asked and as clamped (`--max-retry-after`), when it had one.
    pub retry_after: Option<(Duration, Duration)>,
    /// The quota its RateLimit fields reported.
    pub quota: Option<Quota>,
    /// Whether a RateLimit field could not be read.
    pub malformed: bool,
    /// `--max-retry-after`, which clamps a hold from a spent quota too.
    pub max_hold: Duration,
}

/// What the table made of an answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct After {
    /// A spent quota held the origin this long (clamped): shared through `--state` as a
    /// Retry-After is.
    pub spent: Option<Duration>,
    /// A RateLimit field could not be read and this is the first time for the origin:
    /// say it.
    pub say_malformed: bool,
    /// The pacer of the origin sent to changed its rate: the origin and the change, to
    /// say once (the line: [`Change::line`]).
    pub paced: Option<(String, Change)>,
}

impl Origins {
    /// An empty table.
    pub fn new() -> Origins {
        Origins::default()
    }

    /// An empty table whose origins are paced (a batch's: see the module's rules).
    pub fn pacing() -> Origins {
        Origins {
            pacing: true,
            ..Origins::default()
        }
    }

    /// The rate each paced origin is sent to at `at`, requests/s, by origin (for the end of
    /// a batch: the rates the origins settled at).
    pub fn settled(&self, at: Instant) -> Vec<(String, f64)> {
        let Ok(table) = self.table.lock() else {
            return Vec::new();
        };
        let mut rates: Vec<(String, f64)> = table
            .iter()
            .filter_map(|(o, e)| Some((o.clone(), e.pacer.as_ref()?.rate(at)?)))
            .collect();
        rates.sort_by(|a, b| a.0.cmp(&b.0));
        rates
    }

    /// Before a request to `origin` at `at` (`left`: time left before the deadline; a
    /// hold's release adds uniform(0, `spread`) drawn from `rng`). On `Go` the request is
    /// counted in flight until [`Origins::after`].
    pub fn before_send(
        &self,
        origin: &str,
        at: Instant,
        left: Option<Duration>,
        (spread, rng): (Duration, &mut dyn Rng),
    ) -> Clear {
        let Ok(mut table) = self.table.lock() else {
            return Clear::Go;
        };
        let e = entry(&mut table, origin, at);
        e.used = at;
        if self.pacing && e.pacer.is_none() {
            e.pacer = Some(Pacer::new());
        }
        if e.quota.is_some_and(|q| q.reset_at <= at) {
            e.quota = None;
            e.next_at = None;
        }
        if let Some(said) = hold_says(e, origin, at, left, (spread, &mut *rng)) {
            return said;
        }
        if !e.answered && e.in_flight > 0 {
            return room();
        }
        if let Some(said) = quota_says(e, at, left, (spread, rng)) {
            return said;
        }
        if let Some(said) = pacer_says(e, origin, at, left) {
            return said;
        }
        e.in_flight += 1;
        if let Some(q) = e.quota.as_mut() {
            q.sent_since += 1;
        }
        Clear::Go
    }

    /// After a request sent to `sent` (the origin `before_send` let go) at `at`: it is no
    /// longer in flight; `answer`, when one arrived, is what the origin that answered said.
    pub fn after(&self, sent: &str, answer: Option<Answer>, at: Instant) -> After {
        let Ok(mut table) = self.table.lock() else {
            return After::default();
        };
        let mut paced = None;
        if let Some(e) = table.get_mut(sent) {
            e.in_flight = e.in_flight.saturating_sub(1);
            e.answered |= answer.is_some();
            e.used = at;
            paced = e
                .pacer
                .as_mut()
                .and_then(|p| pace(p, answer.as_ref(), at))
                .map(|c| (sent.to_string(), c));
        }
        let told = match answer {
            Some(a) => learn(&mut table, a, at),
            None => After::default(),
        };
        After { paced, ..told }
    }

    /// As soon as the head of an answer to a request sent to `sent` arrives, before its
    /// body: the origin has answered (the transfers waiting for its first answer may go),
    /// and what the head says (a quota, a hold) counts from now. The request stays in
    /// flight until [`Origins::after`], which hears the answer again (a field that could
    /// not be read is said then, once). A slow first body then no longer holds every other
    /// transfer to its origin.
    ///
    /// A 429 or 503 is the exception: its hold (its Retry-After, as the loop clamps it)
    /// comes with the whole answer in [`Origins::after`]. Marking the origin answered at its
    /// head would release the transfers waiting for the first answer in the moment before
    /// the hold is set, straight into the throttle.
    pub fn heard(&self, sent: &str, answer: Answer, at: Instant) {
        if matches!(answer.status, 429 | 503) {
            return;
        }
        let Ok(mut table) = self.table.lock() else {
            return;
        };
        if let Some(e) = table.get_mut(sent) {
            e.answered = true;
            if let Some(p) = e.pacer.as_mut() {
                p.head();
            }
        }
        learn(
            &mut table,
            Answer {
                malformed: false,
                ..answer
            },
            at,
        );
    }
}

/// What `a`, heard at `at`, tells the table: the answering origin has answered; a 429 or
/// 503's Retry-After holds it; its quota is kept (a spent one holds it until the reset).
fn learn(table: &mut HashMap<String, Entry>, a: Answer, at: Instant) -> After {
    let e = entry(table, a.origin, at);
    e.answered = true;
    e.used = at;
    let mut told = After {
        spent: None,
        say_malformed: a.malformed && !std::mem::replace(&mut e.warned, true),
        paced: None,
    };
    if let Some((asked, clamped)) = a.retry_after
        && matches!(a.status, 429 | 503)
        && !clamped.is_zero()
    {
        e.hold(at + clamped, Cause::RetryAfter(asked));
    }
    if let Some(q) = a.quota
        && let Some(reset) = q.reset
    {
        let reset_at = same_window(e.quota.as_ref(), q.remaining, at)
            .map_or(at + reset.min(a.max_hold), |earlier| {
                earlier.min(at + reset.min(a.max_hold))
            });
        let hold = reset_at - at;
        e.quota = Some(Seen {
            limit: q.limit,
            remaining: q.remaining,
            reset_at,
            sent_since: u64::from(e.in_flight),
        });
        if q.remaining == 0 && !hold.is_zero() {
            e.hold(at + hold, Cause::Quota(q.limit));
            told.spent = Some(hold);
        }
    }
    told
}

impl Origins {
    /// How many origins the table holds (for tests and the bound).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.lock().map(|t| t.len()).unwrap_or(0)
    }
}

/// The spread of the release from a spent quota's hold of `held`: `--retry-after-spread`,
/// at most a tenth of the hold. After the reset the quota meters the sends again (and
/// `--parallel-max-host`), so the release needs no more; the whole spread, at a window of
/// one second, wasted most of the next window (80% of the quota used, against 93-99%).
fn quota_spread(spread: Duration, held: Duration) -> Duration {
    spread.min(held / 10)
}

/// The reset of the last quota reported, when a report at `at` of `remaining` left is of
/// the same window: the last reset is still ahead and the count has not gone up. A reset
/// given in whole seconds is rounded (up, by the drafts' servers), so each report of one
/// window names an end up to a second late; the earliest is the closest, and a window's
/// end does not move later while its count goes down. (A reset taken from reports made
/// late in the window would skip the next window whole.)
fn same_window(last: Option<&Seen>, remaining: u64, at: Instant) -> Option<Instant> {
    last.filter(|s| s.reset_at > at && remaining <= s.remaining)
        .map(|s| s.reset_at)
}

/// A hold on the origin of `e` at `at`: the wait until its end plus the spread, said by
/// the first transfer to meet it, or a stop when it would end past the deadline (`left`).
/// None: no hold.
fn hold_says(
    e: &mut Entry,
    origin: &str,
    at: Instant,
    left: Option<Duration>,
    (spread, rng): (Duration, &mut dyn Rng),
) -> Option<Clear> {
    let h = e.hold.as_mut().filter(|h| h.until > at)?;
    let held = h.until - at;
    let spread = match h.cause {
        Cause::Quota(_) => quota_spread(spread, held),
        Cause::RetryAfter(_) => spread,
    };
    let Some(wait) = wait_for_hold(held, spread, left, rng) else {
        return Some(Clear::Stop(Stop::TooLate(past_deadline(
            origin, held, h.cause, left,
        ))));
    };
    let say = !std::mem::replace(&mut h.said, true);
    let line = say.then(|| holding(origin, held, h.cause));
    Some(Clear::Wait {
        wait,
        why: Why::Held(line),
    })
}

/// What the last quota reported says about one more send at `at`: no room in flight, a
/// wait for the reset (none left) or for the next even share of the time to it (little
/// left), a stop when that wait would end past the deadline, or None: go (the next share
/// is then set when the quota is low).
fn quota_says(
    e: &mut Entry,
    at: Instant,
    left: Option<Duration>,
    (spread, rng): (Duration, &mut dyn Rng),
) -> Option<Clear> {
    let q = e.quota?;
    let left_q = q.remaining.saturating_sub(q.sent_since);
    let to_reset = q.reset_at - at;
    if u64::from(e.in_flight) >= left_q && (left_q > 0 || e.in_flight > 0) {
        // No room; with none left, the answers in flight may bring a fresh count.
        return Some(room());
    }
    let words = pacing_words(left_q, q.limit, to_reset);
    let wait = if left_q == 0 {
        wait_for_hold(to_reset, quota_spread(spread, to_reset), left, rng)
    } else if low(left_q, q.limit) {
        match e.next_at.filter(|n| *n > at) {
            Some(next) => Some(next - at).filter(|w| hold_fits(*w, left)),
            None => {
                e.next_at = Some(at + to_reset / u32::try_from(left_q).unwrap_or(u32::MAX));
                return None;
            }
        }
    } else {
        return None;
    };
    Some(match wait {
        Some(wait) => Clear::Wait {
            wait,
            why: Why::Pacing(format!("{words}; waiting {}", fmt_duration(wait))),
        },
        None => Clear::Stop(Stop::TooLate(format!(
            "stopping: {words}, a wait that would end past the deadline ({} left)",
            fmt_duration(left.unwrap_or_default())
        ))),
    })
}

/// The least pacing wait that is said: a batch paced below one request a second (after a
/// hold at a slow origin, say) waits visibly, so a logged "retry in" is never followed by
/// a silent wait of its own; a shorter wait, one gap between two sends, is silent.
pub const PACING_SAID: Duration = Duration::from_secs(1);

/// What the pacer of `e` says about one more send at `at` (None: go, and it counted it
/// sent): no room in flight, or a wait for the spacing of its rate, a stop when that wait
/// would end past the deadline (`left`). A quota reported leads: the pacer only counts
/// the send.
fn pacer_says(e: &mut Entry, origin: &str, at: Instant, left: Option<Duration>) -> Option<Clear> {
    let p = e.pacer.as_mut()?;
    if e.quota.is_some() {
        p.sent(at);
        return None;
    }
    match p.before_send(at, e.in_flight) {
        Send::Go => None,
        Send::Room => Some(room()),
        Send::Wait(wait) if hold_fits(wait, left) && wait < PACING_SAID => Some(Clear::Wait {
            wait,
            why: Why::Room,
        }),
        Send::Wait(wait) if hold_fits(wait, left) => Some(Clear::Wait {
            wait,
            why: Why::Pacing(format!(
                "waiting {}: {origin} is paced at {:.2} requests/s, the rate it accepts",
                fmt_duration(wait),
                p.rate(at).unwrap_or(pacer::FLOOR)
            )),
        }),
        Send::Wait(wait) => Some(Clear::Stop(Stop::TooLate(format!(
            "stopping: the next send at the rate the origin accepts is {} away, past the deadline ({} left)",
            fmt_duration(wait),
            fmt_duration(left.unwrap_or_default())
        )))),
    }
}

/// The pacer `p` hears how a request it let go ended at `at`: `answer`, or none.
fn pace(p: &mut Pacer, answer: Option<&Answer>, at: Instant) -> Option<Change> {
    let Some(a) = answer else {
        p.lost(at);
        return None;
    };
    let retry_after = a.retry_after.map(|(_, clamped)| clamped);
    let throttled = a.status == 429 || (a.status == 503 && retry_after.is_some());
    let heard = pacer::Answer {
        throttled,
        retry_after: retry_after.filter(|_| throttled),
        accepted: !throttled && a.status != 503,
    };
    p.heard(at, a.status, heard)
}

/// The entry of `origin`, made when missing; a full table first forgets the expired
/// entries, then the one used longest ago.
fn entry<'t>(table: &'t mut HashMap<String, Entry>, origin: &str, at: Instant) -> &'t mut Entry {
    if !table.contains_key(origin) && table.len() >= MAX_ORIGINS {
        table.retain(|_, e| !e.expired(at));
        if table.len() >= MAX_ORIGINS {
            let oldest = table
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                table.remove(&k);
            }
        }
    }
    table
        .entry(origin.to_string())
        .or_insert_with(|| Entry::new(at))
}

fn room() -> Clear {
    Clear::Wait {
        wait: POLL,
        why: Why::Room,
    }
}

/// "3 of 100 requests left until the reset in 20s".
fn pacing_words(left: u64, limit: Option<u64>, to_reset: Duration) -> String {
    let of = limit.map(|l| format!(" of {l}")).unwrap_or_default();
    format!(
        "pacing: {left}{of} requests left until the reset in {}",
        fmt_duration(to_reset)
    )
}

/// What a hold's cause says in a line.
fn cause_words(cause: Cause) -> String {
    match cause {
        Cause::RetryAfter(asked) => format!("Retry-After {}", fmt_duration(asked)),
        Cause::Quota(limit) => {
            let of = limit.map(|l| format!(" of {l}")).unwrap_or_default();
            format!("RateLimit: 0{of} requests left until the reset")
        }
    }
}

/// "holding requests to ORIGIN until DATE (Retry-After 2s)", said once per hold.
fn holding(origin: &str, held: Duration, cause: Cause) -> String {
    let when = httpdate::fmt_http_date(SystemTime::now() + held);
    format!(
        "holding requests to {origin} until {when}, {} from now ({})",
        fmt_duration(held),
        cause_words(cause)
    )
}

/// Why a transfer stops when the origin's hold would end past its deadline: in the words
/// of row 12 of `policy::decision` (the server's Retry-After past the deadline).
fn past_deadline(origin: &str, held: Duration, cause: Cause, left: Option<Duration>) -> String {
    format!(
        "stopping: the hold on {origin} ({}, {} more) would end past the deadline ({} left)",
        cause_words(cause),
        fmt_duration(held),
        fmt_duration(left.unwrap_or_default())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ratelimit::Dialect;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    const O: &str = "http://a:80";

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn rng() -> StdRng {
        StdRng::seed_from_u64(7)
    }

    /// The wait and the line of a pacing wait (fails on anything else).
    fn pacing(b: Clear) -> (Duration, String) {
        match b {
            Clear::Wait {
                wait,
                why: Why::Pacing(line),
            } => (wait, line),
            other => panic!("pacing: {other:?}"),
        }
    }

    fn ask(t: &Origins, at: Instant, spread: Duration) -> Clear {
        t.before_send(O, at, None, (spread, &mut rng()))
    }

    fn answer(status: u16, retry_after: Option<u64>, quota: Option<Quota>) -> Answer<'static> {
        Answer {
            origin: O,
            status,
            retry_after: retry_after.map(|s| (ms(s), ms(s))),
            quota,
            malformed: false,
            max_hold: Duration::from_secs(600),
        }
    }

    fn quota(limit: u64, remaining: u64, reset_ms: u64) -> Option<Quota> {
        Some(Quota {
            limit: Some(limit),
            remaining,
            reset: Some(ms(reset_ms)),
            dialect: Dialect::Older,
        })
    }

    fn waited(b: &Clear) -> Duration {
        match b {
            Clear::Wait { wait, .. } => *wait,
            other => panic!("a wait, not {other:?}"),
        }
    }

    #[test]
    fn the_later_end_wins_and_a_shorter_later_hint_does_not_shorten() {
        let t = Origins::new();
        let t0 = Instant::now();
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        t.after(O, Some(answer(429, Some(3000), None)), t0);
        // A later, shorter hint: the hold still ends at t0 + 3 s.
        t.after(O, Some(answer(503, Some(500), None)), t0 + ms(1000));
        assert_eq!(waited(&ask(&t, t0 + ms(1000), ms(0))), ms(2000));
        // A later, longer one moves the end.
        t.after(O, Some(answer(429, Some(4000), None)), t0 + ms(1000));
        assert_eq!(waited(&ask(&t, t0 + ms(1000), ms(0))), ms(4000));
        // Held to the millisecond; over once its end is reached.
        assert_eq!(waited(&ask(&t, t0 + ms(4999), ms(0))), ms(1));
        assert_eq!(ask(&t, t0 + ms(5000), ms(0)), Clear::Go);
    }

    #[test]
    fn only_429_and_503_hold_and_a_hold_is_said_once() {
        let t = Origins::new();
        let t0 = Instant::now();
        ask(&t, t0, ms(0));
        t.after(O, Some(answer(500, Some(2000), None)), t0);
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        t.after(O, Some(answer(429, Some(2000), None)), t0);
        let first = ask(&t, t0 + ms(10), ms(0));
        let second = ask(&t, t0 + ms(20), ms(0));
        let Clear::Wait {
            why: Why::Held(Some(line)),
            ..
        } = first
        else {
            panic!("said: {first:?}")
        };
        assert!(
            line.starts_with("holding requests to http://a:80 until "),
            "{line}"
        );
        assert!(line.contains("(Retry-After 2s)"), "{line}");
        assert!(matches!(
            second,
            Clear::Wait {
                why: Why::Held(None),
                ..
            }
        ));
    }

    #[test]
    fn a_hold_past_the_deadline_stops() {
        let t = Origins::new();
        let t0 = Instant::now();
        ask(&t, t0, ms(0));
        t.after(O, Some(answer(429, Some(3000), None)), t0);
        let b = t.before_send(O, t0, Some(ms(2000)), (ms(0), &mut rng()));
        let Clear::Stop(Stop::TooLate(why)) = b else {
            panic!("a stop: {b:?}")
        };
        assert!(why.contains("past the deadline"), "{why}");
        assert!(matches!(
            t.before_send(O, t0, Some(ms(5000)), (ms(0), &mut rng())),
            Clear::Wait { .. }
        ));
    }

    #[test]
    fn held_transfers_are_released_over_the_spread() {
        let t = Origins::new();
        let t0 = Instant::now();
        ask(&t, t0, ms(0));
        t.after(O, Some(answer(429, Some(1000), None)), t0);
        let mut r = StdRng::seed_from_u64(11);
        let waits: Vec<Duration> = (0..50)
            .map(|_| waited(&t.before_send(O, t0, None, (ms(1000), &mut r))))
            .collect();
        assert!(waits.iter().all(|w| *w >= ms(1000) && *w <= ms(2000)));
        let distinct: std::collections::BTreeSet<_> = waits.iter().collect();
        assert!(distinct.len() > 40, "released together: {waits:?}");
        let (lo, hi) = (waits.iter().min(), waits.iter().max());
        assert!(hi.zip(lo).is_some_and(|(h, l)| *h - *l > ms(500)));
    }

    #[test]
    fn the_first_answer_s_head_lets_the_others_go_before_its_body_ends() {
        let t = Origins::new();
        let t0 = Instant::now();
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        assert!(matches!(
            ask(&t, t0, ms(0)),
            Clear::Wait { why: Why::Room, .. }
        ));
        t.heard(O, answer(200, None, None), t0);
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        // A quota in the head meters at once: 1 left, 2 in flight (the first still is).
        t.heard(O, answer(200, None, quota(10, 1, 1000)), t0);
        assert!(matches!(
            ask(&t, t0, ms(0)),
            Clear::Wait { why: Why::Room, .. }
        ));
    }

    #[test]
    fn a_throttling_head_releases_nobody_before_its_hold_is_set() {
        for status in [429, 503] {
            let t = Origins::new();
            let t0 = Instant::now();
            assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
            t.heard(O, answer(status, None, None), t0);
            assert!(matches!(
                ask(&t, t0, ms(0)),
                Clear::Wait { why: Why::Room, .. }
            ));
            t.after(O, Some(answer(status, Some(1000), None)), t0);
            assert!(matches!(
                ask(&t, t0, ms(0)),
                Clear::Wait {
                    why: Why::Held(_),
                    ..
                }
            ));
        }
    }

    #[test]
    fn one_in_flight_before_the_first_answer() {
        let t = Origins::new();
        let t0 = Instant::now();
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        assert_eq!(
            ask(&t, t0, ms(0)),
            Clear::Wait {
                wait: POLL,
                why: Why::Room
            }
        );
        // A failure without an answer frees the place, but the next still goes alone.
        t.after(O, None, t0);
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        assert!(matches!(
            ask(&t, t0, ms(0)),
            Clear::Wait { why: Why::Room, .. }
        ));
        // Once an answer arrived, requests go in parallel.
        t.after(O, Some(answer(200, None, None)), t0);
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
    }

    #[test]
    fn in_flight_limited_by_the_quota_left_less_those_sent_since() {
        let t = Origins::new();
        let t0 = Instant::now();
        ask(&t, t0, ms(0));
        // 50 of 100 left: not low; five go, then one answer says 3 left (the four still
        // in flight count as sent since): nothing more may go until one comes back.
        t.after(O, Some(answer(200, None, quota(100, 50, 60_000))), t0);
        for _ in 0..5 {
            assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        }
        t.after(O, Some(answer(200, None, quota(100, 3, 60_000))), t0);
        assert!(matches!(
            ask(&t, t0, ms(0)),
            Clear::Wait { why: Why::Room, .. }
        ));
        // The four in flight counted as sent since: 3 - 4 = none left. While some are in
        // flight, their answers may bring news; once none is, wait for the reset.
        for _ in 0..3 {
            t.after(O, None, t0);
            assert!(matches!(
                ask(&t, t0, ms(0)),
                Clear::Wait { why: Why::Room, .. }
            ));
        }
        t.after(O, None, t0);
        let (wait, line) = pacing(ask(&t, t0, ms(0)));
        assert_eq!(wait, ms(60_000));
        assert!(
            line.starts_with("pacing: 0 of 100 requests left until the reset in 1m"),
            "{line}"
        );
        // At the reset the quota is forgotten.
        assert_eq!(ask(&t, t0 + ms(60_000), ms(0)), Clear::Go);
    }

    #[test]
    fn a_low_quota_spreads_sends_over_the_time_to_the_reset() {
        let t = Origins::new();
        let t0 = Instant::now();
        ask(&t, t0, ms(0));
        t.after(O, Some(answer(200, None, quota(100, 4, 20_000))), t0);
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        // 3 left after it: the next waits a quarter of the 20 s.
        let (wait, line) = pacing(ask(&t, t0, ms(0)));
        assert_eq!(wait, ms(5000));
        assert!(
            line.starts_with("pacing: 3 of 100 requests left until the reset in 20s"),
            "{line}"
        );
        assert_eq!(ask(&t, t0 + ms(5000), ms(0)), Clear::Go);
        // Past the deadline: stop.
        t.after(O, None, t0 + ms(5000));
        t.after(O, None, t0 + ms(5000));
        let b = t.before_send(O, t0 + ms(5000), Some(ms(1000)), (ms(0), &mut rng()));
        assert!(matches!(b, Clear::Stop(_)), "{b:?}");
    }

    #[test]
    fn a_spent_quota_releases_within_a_tenth_of_its_hold_a_retry_after_over_the_spread() {
        let t0 = Instant::now();
        // The waits of 200 transfers meeting the hold, drawn from one random stream.
        let waits = |t: &Origins| -> Vec<Duration> {
            let mut r = rng();
            (0..200)
                .filter_map(|_| match t.before_send(O, t0, None, (ms(1000), &mut r)) {
                    Clear::Wait { wait, .. } => Some(wait),
                    _ => None,
                })
                .collect()
        };
        let spent = Origins::new();
        ask(&spent, t0, ms(0));
        spent.after(O, Some(answer(200, None, quota(40, 0, 1000))), t0);
        let w = waits(&spent);
        assert_eq!(w.len(), 200);
        assert!(w.iter().all(|w| *w >= ms(1000) && *w <= ms(1100)), "{w:?}");
        let told = Origins::new();
        ask(&told, t0, ms(0));
        told.after(O, Some(answer(429, Some(1000), None)), t0);
        let w = waits(&told);
        assert_eq!(w.len(), 200);
        assert!(w.iter().any(|w| *w > ms(1500)), "{w:?}");
    }

    #[test]
    fn a_window_s_reset_does_not_move_later_while_its_count_goes_down() {
        let t = Origins::new();
        let t0 = Instant::now();
        ask(&t, t0, ms(0));
        // Whole seconds, rounded up: 1 s at 10 ms into the window names its end at 1.01 s;
        // the last of its quota, answered at 990 ms, says 1 s again (a second late).
        t.after(O, Some(answer(200, None, quota(40, 39, 1000))), t0);
        ask(&t, t0 + ms(980), ms(0));
        let told = t.after(O, Some(answer(200, None, quota(40, 0, 1000))), t0 + ms(990));
        assert_eq!(told.spent, Some(ms(10)), "held to the first report's end");
        assert_eq!(ask(&t, t0 + ms(1000), ms(0)), Clear::Go);
        // A count that went up is a new window: its own reset stands.
        ask(&t, t0 + ms(1000), ms(0));
        t.after(
            O,
            Some(answer(200, None, quota(40, 39, 1000))),
            t0 + ms(1000),
        );
        ask(&t, t0 + ms(1000), ms(0));
        let told = t.after(
            O,
            Some(answer(200, None, quota(40, 0, 3000))),
            t0 + ms(1500),
        );
        assert_eq!(
            told.spent,
            Some(ms(500)),
            "the window's end, 2 s, not 4.5 s"
        );
    }

    #[test]
    fn a_spent_quota_holds_until_the_reset_clamped_and_is_shared() {
        let t = Origins::new();
        let t0 = Instant::now();
        ask(&t, t0, ms(0));
        let mut a = answer(200, None, quota(10, 0, 2000));
        let told = t.after(O, Some(a.clone()), t0);
        assert_eq!(told.spent, Some(ms(2000)));
        let b = ask(&t, t0, ms(0));
        let Clear::Wait {
            wait,
            why: Why::Held(Some(line)),
        } = &b
        else {
            panic!("held: {b:?}")
        };
        assert_eq!(*wait, ms(2000));
        assert!(line.contains("RateLimit: 0 of 10 requests left"), "{line}");
        a.max_hold = ms(500);
        a.origin = "http://b:80";
        assert_eq!(t.after("http://b:80", Some(a), t0).spent, Some(ms(500)));
        // A quota without a reset is not paced on.
        let q = quota(10, 0, 0).map(|q| Quota { reset: None, ..q });
        assert_eq!(
            t.after(O, Some(answer(200, None, q)), t0 + ms(2000)).spent,
            None
        );
    }

    #[test]
    fn the_answering_origin_is_held_not_the_one_asked() {
        let t = Origins::new();
        let t0 = Instant::now();
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        let mut a = answer(429, Some(1000), None);
        a.origin = "http://b:80";
        t.after(O, Some(a), t0);
        assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
        let b = t.before_send("http://b:80", t0, None, (ms(0), &mut rng()));
        assert_eq!(waited(&b), ms(1000));
    }

    #[test]
    fn malformed_fields_are_said_once_per_origin() {
        let t = Origins::new();
        let t0 = Instant::now();
        let mut a = answer(200, None, None);
        a.malformed = true;
        assert!(t.after(O, Some(a.clone()), t0).say_malformed);
        assert!(!t.after(O, Some(a), t0).say_malformed);
    }

    /// Sends to `t` at `at` until one is refused: how many went, and the refusal.
    fn burst(t: &Origins, at: Instant) -> (usize, Clear) {
        for n in 0..1000 {
            match ask(t, at, ms(0)) {
                Clear::Go => continue,
                other => return (n, other),
            }
        }
        (1000, Clear::Go)
    }

    #[test]
    fn a_batch_s_table_paces_a_throttling_origin_and_says_each_change_once() {
        for status_ra in [(429, None), (429, Some(1000)), (503, Some(1000))] {
            let (status, ra) = status_ra;
            let t = Origins::pacing();
            let t0 = Instant::now();
            // The start: one in flight, then one more per accepted answer.
            assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
            assert_eq!(t.after(O, Some(answer(200, None, None)), t0).paced, None);
            let (went, _) = burst(&t, t0);
            assert_eq!(went, 2, "{status_ra:?}");
            // Two throttles answered at once: one change, said by the first.
            let first = t.after(O, Some(answer(status, ra, None)), t0 + ms(10));
            let second = t.after(O, Some(answer(status, ra, None)), t0 + ms(11));
            let (origin, change) = first.paced.expect("a cut");
            assert_eq!(origin, O);
            assert_eq!(change.from, None);
            assert!(change.to.is_some(), "{change:?}");
            assert_eq!(second.paced, None, "{status_ra:?}");
            assert_eq!(t.settled(t0 + ms(11)).len(), 1);
            // Past the hold, sends are spaced: one goes, the next waits, silently.
            let after = t0 + ms(2100);
            let (went, refused) = burst(&t, after);
            assert_eq!(went, 1, "{status_ra:?}");
            assert!(
                matches!(refused, Clear::Wait { why: Why::Room, wait } if wait > ms(100)),
                "{refused:?}"
            );
        }
    }

    /// A pacing wait of a second or more is said, in words naming the origin and its rate
    /// (a batch paced below a request a second, after a hold at a slow origin); a shorter
    /// one is silent. Holds of 3 s and 0.3 s after one accepted answer pace at the floor
    /// and at about 3 requests/s.
    #[test]
    fn a_long_pacing_wait_is_said_and_a_short_one_is_not() {
        for (hold, said) in [(3000, true), (300, false)] {
            let t = Origins::pacing();
            let t0 = Instant::now();
            assert_eq!(ask(&t, t0, ms(0)), Clear::Go);
            t.after(O, Some(answer(200, None, None)), t0 + ms(5));
            assert_eq!(ask(&t, t0 + ms(5), ms(0)), Clear::Go);
            assert!(
                t.after(O, Some(answer(429, Some(hold), None)), t0 + ms(10))
                    .paced
                    .is_some()
            );
            let after = t0 + ms(10 + hold + 50);
            let (went, refused) = burst(&t, after);
            assert_eq!(went, 1, "hold {hold}");
            match refused {
                Clear::Wait {
                    why: Why::Pacing(line),
                    wait,
                } if said => {
                    assert!(wait >= PACING_SAID, "{wait:?}");
                    assert!(line.contains(O) && line.contains("requests/s"), "{line}");
                }
                Clear::Wait {
                    why: Why::Room,
                    wait,
                } if !said => assert!(wait < PACING_SAID),
                other => panic!("hold {hold}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_lone_run_s_table_and_a_503_without_retry_after_do_not_pace() {
        let t0 = Instant::now();
        let lone = Origins::new();
        ask(&lone, t0, ms(0));
        assert_eq!(lone.after(O, Some(answer(429, None, None)), t0).paced, None);
        assert_eq!(burst(&lone, t0).0, 1000);
        assert!(lone.settled(t0).is_empty());
        let batch = Origins::pacing();
        ask(&batch, t0, ms(0));
        assert_eq!(
            batch.after(O, Some(answer(503, None, None)), t0).paced,
            None
        );
        assert!(batch.settled(t0).is_empty());
    }

    #[test]
    fn a_reported_quota_leads_over_the_pacer() {
        let t = Origins::pacing();
        let t0 = Instant::now();
        ask(&t, t0, ms(0));
        // A throttle cuts; then a quota of 50 left is reported: it meters, not the pacer.
        t.after(O, Some(answer(429, None, None)), t0);
        ask(&t, t0 + ms(1000), ms(0));
        t.after(
            O,
            Some(answer(200, None, quota(100, 50, 60_000))),
            t0 + ms(1000),
        );
        // (each send counts in flight and as sent since: 25 + 25 = the 50 left), where the
        // pacer alone would have let one go and spaced the next.
        let (went, refused) = burst(&t, t0 + ms(1000));
        assert_eq!(went, 25, "{refused:?}");
    }

    #[test]
    fn entries_expire_and_the_table_is_bounded() {
        let t = Origins::new();
        let t0 = Instant::now();
        for i in 0..MAX_ORIGINS + 10 {
            let o = format!("http://h{i}:80");
            let at = t0 + ms(i as u64);
            assert_eq!(t.before_send(&o, at, None, (ms(0), &mut rng())), Clear::Go);
            let mut a = answer(429, Some(10_000), None);
            a.origin = &o;
            t.after(&o, Some(a), at);
        }
        // Full of live holds: the oldest went first, the newest are kept.
        assert_eq!(t.len(), MAX_ORIGINS);
        let newest = format!("http://h{}:80", MAX_ORIGINS + 9);
        let b = t.before_send(&newest, t0 + ms(2000), None, (ms(0), &mut rng()));
        assert!(matches!(b, Clear::Wait { .. }));
        let b = t.before_send("http://h0:80", t0 + ms(2000), None, (ms(0), &mut rng()));
        assert_eq!(b, Clear::Go, "the oldest was dropped");
        // Once the holds are over, every entry is expired: a new origin clears them.
        let late = t0 + ms(60_000);
        t.after("http://h0:80", None, late);
        t.before_send("http://new:80", late, None, (ms(0), &mut rng()));
        assert!(t.len() < MAX_ORIGINS);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        let u = |s: &str| Url::parse(s).expect("a URL");
        assert_eq!(origin_key(&u("http://a/x"), None), "http://a:80");
        for port in [1, 9, 10, 99, 100, 8080, 10000, 65535] {
            let url = u(&format!("http://[::1]:{port}/"));
            assert_eq!(origin_key(&url, None), format!("http://[::1]:{port}"));
        }
        assert_eq!(origin_key(&u("https://A:8443/y?q"), None), "https://a:8443");
        let socket = Some(Path::new("/run/d.sock"));
        assert_eq!(
            origin_key(&u("http://a/x"), socket),
            "http://a:80 via unix:/run/d.sock"
        );
        assert!(low(10, Some(100)) && !low(11, Some(100)));
        assert!(low(5, None) && !low(6, None));
    }
}
