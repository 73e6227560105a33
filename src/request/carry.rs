//! The attempt loop's own state, in one place: what carries from one attempt to the next
//! ([`Carry`]: a partial download, the hop to restart at, the last backoff drawn, what the
//! gate last said, and what the run came to so far, [`Ended`]), with the parts an attempt
//! leaves in it while it is taken ([`Pending`], its answer's body until the verdict; the
//! requests it [`Sent`]). The loop's borrowed inputs are `attempt::Loop`; the steps that
//! fill this state in are `attempt`'s, `answer`'s and `line`'s, and the changes between
//! attempts are the methods here.

use crate::fleet::origins::Told;
use crate::http::timing::Timeline;
use crate::http::transport::{Exchange, Hop};
use crate::policy::WaitReason;
use crate::policy::decision::{self, Attempt, Happened, Retry};
use crate::policy::retry_after::Reading;
use crate::request::delivery::{Partial, Received};
use crate::request::ending::Ended;
use std::time::Duration;

/// Which requests an attempt sent: the one it started with, and the one it ended on.
pub(super) struct Sent {
    /// The request the attempt started with.
    pub(super) first: Hop,
    /// The request it ended on (under `-L`, the last hop), without this attempt's range.
    pub(super) last: Hop,
    /// An earlier hop sent a non-idempotent request that got an answer other than 307/308.
    pub(super) committed: bool,
}

/// The body of an answer that is not a success, kept until the verdict says whether it is
/// the last answer (`--fail-with-body` and `-I` then write it).
pub(super) enum Pending {
    /// Not read yet (boxed: an exchange holds its head's bytes as received).
    Unread(Box<Exchange>),
    /// Read whole into its spool (a body condition read it).
    Read(Received),
}

/// What the loop carries from one attempt to the next.
pub(super) struct Carry {
    /// A download broken mid-body, kept to be resumed by the next attempt.
    pub(super) partial: Option<Partial>,
    /// Where the next attempt starts: the hop that failed, once an earlier hop may have
    /// been processed (None: the request as given).
    pub(super) from: Option<Hop>,
    /// The last backoff drawn (decorrelated jitter grows from it).
    pub(super) previous: Duration,
    /// The last attempt's answer was not ready.
    pub(super) not_ready: bool,
    /// The longest attempt so far (a last attempt before the deadline is left this long).
    pub(super) longest: Duration,
    /// The wait before the attempt now made was fitted before the deadline: it is the last
    /// such attempt (see `decision`, row 14).
    pub(super) fitted: bool,
    /// This attempt's answer's body, until the verdict about it is performed.
    pub(super) pending: Option<Pending>,
    /// This attempt's Retry-After, as read (None: no answer that may carry one).
    pub(super) reading: Option<Reading>,
    /// What this attempt's answer told the origins' table (None: no answer).
    pub(super) told: Option<Told>,
    /// This attempt's answer said the quota was spent: the origin is held this long
    /// (clamped), which `--state` shares and which makes the retry free of charge.
    pub(super) spent: Option<Duration>,
    /// The retry now planned is charged to the budget when it is sent.
    pub(super) charge: bool,
    /// The run is still the half-open circuit's probe, as the gate last said.
    pub(super) probing: bool,
    /// What the run came to so far: the attempts counted, the last one's result, what the
    /// end of the run needs (its head, its counts, its cause).
    pub(super) seen: Ended,
}

impl Carry {
    /// Before the first attempt: the part a broken download of an earlier run left
    /// (`partial`, under `-C -`), the backoff's base as the last one drawn, and whether the
    /// run was admitted as the half-open circuit's probe.
    pub(super) fn new(partial: Option<Partial>, base: Duration, probing: bool) -> Carry {
        Carry {
            partial,
            from: None,
            previous: base,
            not_ready: false,
            longest: Duration::ZERO,
            fitted: false,
            pending: None,
            reading: None,
            told: None,
            spent: None,
            charge: true,
            probing,
            seen: Ended::before_any_attempt(),
        }
    }

    /// What the decision is about to weigh (`facts`) is what the run's end needs from
    /// this attempt: its error status and Retry-After (for `--state`), whether it was not
    /// ready, and what ended it in curl's words.
    pub(super) fn weighed(&mut self, facts: &Attempt) {
        self.seen.status = match facts.happened {
            Happened::Status(s) => Some(s),
            _ => None,
        };
        self.not_ready = matches!(facts.happened, Happened::NotReady(_));
        self.seen.cause = decision::cause(&facts.happened, facts.deadline_passed);
        self.seen.hint = facts.hint.map(|h| h.wait);
    }

    /// An attempt's exchange is over (`timeline`: its steps): its connections and redirects
    /// count towards the run's, and its moments are the last attempt's.
    pub(super) fn transferred(&mut self, timeline: Timeline) {
        self.seen.connects += timeline.connects;
        self.seen.redirects += timeline.redirects;
        self.seen.timeline = timeline;
    }

    /// A signal interrupted the attempt: it says only that, and its answer's body and
    /// Retry-After are dropped.
    pub(super) fn interrupted(&mut self) {
        self.seen.last = "interrupted".into();
        self.pending = None;
        self.reading = None;
    }

    /// What a retry carries to the next attempt: the backoff drawn, and (once an earlier
    /// hop may have been processed) the hop that failed as the one to send again, never
    /// the request before it.
    pub(super) fn retried(&mut self, retry: &Retry, sent: Sent) {
        self.previous = retry.drawn;
        self.fitted = self.fitted || retry.planned.reason == WaitReason::Deadline;
        self.from = sent.committed.then_some(sent.last);
    }
}
