//! Taking one attempt's answer: the request sent (with the range a kept part asks for),
//! the answer's head classified by a pure step ([`classify`]: the conditions asked, the
//! readiness conditions, the kept part), then a success's body delivered, and the result
//! said in the decision's terms (`Happened`) with the attempt's line filled in (`line`).

use crate::fleet::origins::Told;
use crate::gate::Heard;
use crate::http::conditional::{self, Answer, Asked};
use crate::http::resume::{self, Continuation};
use crate::http::transport::{Chain, Exchange, Failure, Head, Hop};
use crate::policy::decision::Happened;
use crate::policy::idempotency::key_answer;
use crate::policy::readiness::{self, ByStatus};
use crate::policy::{FailureKind, StatusSet};
use crate::report::AttemptLine;
use crate::request::attempt::Loop;
use crate::request::carry::{Carry, Pending, Sent};
use crate::request::delivery::{Broken, Partial, Received, Resumed};
use crate::request::prior;

/// What the head of an answer says is to be done with it, before a byte of its body is
/// read.
#[derive(Debug, PartialEq, Eq)]
enum Take {
    /// The representation is unchanged (a 304; under `-C -`, a file already whole): the
    /// output is left as it was; why.
    Unchanged(String),
    /// `-C -`: the server cannot resume the -o file; why.
    NotResumable(String),
    /// `-C -`: a 206 that continues the -o file's own bytes with this range.
    ResumeFile(Continuation),
    /// An error (400 or more, or a status `--retry-on` lists under `--until-status`).
    Error,
    /// An answer that fails an `--until-*` condition on its status or headers; why.
    NotReady(String),
    /// A success status that is still no whole answer (see [`not_final`]).
    NotFinal(Failure),
    /// A success: deliver its body, continuing the kept part with this range when it
    /// does (None with a kept part: the part is stale, the body starts over).
    Body(Option<Continuation>),
}

/// Classifies an answer's head: against what the request asked (`asked`, the conditional flags'
/// conditions), the readiness conditions (`ready`, with `--retry-on`), and the part of the
/// body a broken download kept (`kept`). Pure.
fn classify(
    head: &Head,
    asked: &Asked,
    (ready, retry_on): (&readiness::Conditions, &StatusSet),
    kept: Option<&Partial>,
) -> Take {
    // A kept part asked for its own range: the -o file's size was not asked for.
    let asked = match kept {
        Some(_) => Asked {
            resume_from: None,
            ..*asked
        },
        None => *asked,
    };
    match conditional::judge(head, &asked) {
        Answer::Deliver => {}
        Answer::Unchanged(why) => return Take::Unchanged(why),
        Answer::NotResumable(why) => return Take::NotResumable(why),
        Answer::Resume(range) => return Take::ResumeFile(range),
    }
    // An error, or an answer not ready, says nothing about the representation: the kept
    // bytes stay kept.
    match ready.by_status(head.status, retry_on) {
        ByStatus::Error => return Take::Error,
        ByStatus::NotReady(why) => return Take::NotReady(why),
        ByStatus::Candidate => {}
    }
    if let Some(why) = ready.check_headers(&head.headers) {
        return Take::NotReady(why);
    }
    let range = kept.and_then(|p| resume::continues(head, p.offset, p.total, &p.validator));
    match not_final(head, range.is_some()) {
        Some(f) => Take::NotFinal(f),
        None => Take::Body(range),
    }
}

/// A success status that is still no whole answer: 1xx to a request that asked for no
/// upgrade, or a 206 that does not continue the kept download (a part of something is
/// never a whole body; the kept bytes are gone, so the next attempt asks for everything).
fn not_final(head: &Head, continues: bool) -> Option<Failure> {
    if head.status < 200 {
        return Some(Failure::new(
            FailureKind::Protocol,
            format!(
                "a {} answer to a request that asked for no upgrade",
                head.status
            ),
        ));
    }
    (head.status == 206 && !continues).then(|| {
        Failure::new(
            FailureKind::Truncated,
            "a 206 Partial Content that does not continue the download; starting over",
        )
    })
}

/// The attempt's line and what the loop carries, filled in as the answer is taken.
type Notes<'n> = (&'n Sent, &'n mut AttemptLine, &'n mut Carry);

impl Loop<'_> {
    /// One exchange, starting at `first`; a success's body is delivered before this
    /// returns. Fills in `line` and says what happened.
    pub(super) fn try_once(
        &self,
        first: Hop,
        line: &mut AttemptLine,
        carry: &mut Carry,
    ) -> (Happened, Sent) {
        let partial = carry.partial.take();
        let mut hop = first.clone();
        let mut asked: Vec<(String, String)> = partial
            .iter()
            .flat_map(|p| resume::range_headers(p.offset, &p.validator))
            .collect();
        // `-C -` asks for the rest of the -o file on every attempt (nothing is kept).
        if partial.is_none() {
            asked.extend(self.prior.range());
        }
        hop.headers.extend(asked.iter().cloned());
        let replay_ok = self.has_key || self.cfg.retry.retry_unsafe;
        let chain = self
            .transport
            .send(&hop, self.payload, self.budget(), replay_ok);
        let Chain {
            result,
            last,
            committed,
            declined,
            unfollowed,
            timeline,
        } = chain;
        carry.transferred(timeline);
        // A redirect not followed after a failure (--max-redirs) was answered all the same.
        let answered = result.is_ok() || unfollowed.is_some();
        let sent = self.sent(first, last, &asked, (answered, committed), carry);
        let notes = (&sent, line, carry);
        let happened = match (result, declined) {
            (Ok(ex), Some(why)) => {
                notes.2.partial = partial;
                self.declined(ex, why, notes)
            }
            (Ok(ex), None) => self.take(ex, partial, notes),
            (Err(f), _) => {
                // A redirect not followed (--max-redirs, --proto-redir) is the last answer
                // that came, as curl reports it in -w and -D.
                // The JSON log's attempt carries its status beside the failure.
                if let Some(head) = unfollowed {
                    self.log_response_headers(&head);
                    notes.1.status = Some((head.status, head.reason.clone()));
                    notes.2.seen.head = Some(head);
                }
                // No final response: the kept bytes are still good for the next attempt.
                notes.2.partial = partial;
                self.failed(&f, notes)
            }
        };
        (happened, sent)
    }

    /// Which requests the attempt sent: `first`, and `last` (the hop it ended on, without
    /// the range headers `asked` added, which belong to this attempt only); what the last
    /// one sent goes to the end of the run (`%{size_upload}` when `answered`, `%{referer}`).
    fn sent(
        &self,
        first: Hop,
        mut last: Hop,
        asked: &[(String, String)],
        (answered, committed): (bool, bool),
        carry: &mut Carry,
    ) -> Sent {
        last.headers.retain(|h| !asked.contains(h));
        carry.seen.uploaded = match self.payload {
            Some(p) if answered && last.with_body => p.content_length(),
            _ => 0,
        };
        carry.seen.referer = last
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("referer"))
            .map(|(_, v)| v.clone());
        // An attempt that starts at a hop after a processed one is past that point too.
        Sent {
            first,
            last,
            committed: committed || carry.from.is_some(),
        }
    }

    /// An answer arrived: classify its head against a kept partial download, and deliver a
    /// success's body.
    fn take(&self, ex: Exchange, partial: Option<Partial>, notes: Notes) -> Happened {
        self.log_response_headers(&ex.head);
        let told = Told::read(
            self.origin(&ex.head.url),
            ex.head.status,
            &ex.head.headers,
            self.clock.date(),
        );
        // The head is the origin's answer: the transfers waiting for its first one need
        // not wait for this body (the loop tells the whole answer again once it is over).
        let origin = self.origin(&notes.0.first.url);
        let head = Heard::Head {
            origin: &origin,
            told: &told,
        };
        self.gate.tell(head, self.clock.now());
        notes.2.told = Some(told);
        notes.2.seen.head = Some(ex.head.clone());
        let ready = (&self.cfg.ready, &self.cfg.retry.retry_on);
        let take = classify(&ex.head, &self.prior.asked, ready, partial.as_ref());
        match self.keyed(take, ex.head.status) {
            Take::Unchanged(why) => {
                if let Some(p) = partial {
                    self.output.discard(p.spool);
                }
                self.succeeded(&ex.head, Some(why), 0, notes)
            }
            Take::NotResumable(why) => {
                self.failed(&Failure::new(FailureKind::NotResumable, why), notes)
            }
            Take::ResumeFile(range) => {
                let head = ex.head.clone();
                match self.resume_file(ex, range, &notes.0.last.method) {
                    Ok((at, n)) => self.succeeded(&head, Some(resumed_at(at)), n, notes),
                    Err(f) => self.failed(&f, notes),
                }
            }
            Take::Error => {
                notes.2.partial = partial;
                self.answered_error(ex, notes)
            }
            Take::NotReady(why) => {
                notes.2.partial = partial;
                let head = ex.head.clone();
                notes.2.pending = Some(Pending::Unread(Box::new(ex)));
                self.not_ready(&head, why, notes)
            }
            Take::NotFinal(f) => {
                self.discard_stale(partial, ex.head.status);
                self.failed(&f, notes)
            }
            Take::Body(range) => self.deliver_body(ex, (partial, range), notes),
        }
    }

    /// Under `--until-status`, an answer of the Idempotency-Key's (409, 422, 400 to a request
    /// with a key) that the condition does not list is an error for the decision to judge
    /// (a 422 is never sent again), not an answer to poll.
    fn keyed(&self, take: Take, status: u16) -> Take {
        match take {
            Take::NotReady(_) if key_answer(status, self.has_key).is_some() => Take::Error,
            take => take,
        }
    }

    /// A success: its body delivered (continuing the kept part when `range` says it
    /// does), after any condition on the body held.
    fn deliver_body(
        &self,
        ex: Exchange,
        (partial, range): (Option<Partial>, Option<Continuation>),
        notes: Notes,
    ) -> Happened {
        let head = ex.head.clone();
        let continued = match (partial, range) {
            (Some(partial), Some(range)) => Some(Resumed { partial, range }),
            (stale, _) => {
                self.discard_stale(stale, head.status);
                None
            }
        };
        self.watchdog.note_last(&format!(
            "{} {}, its body not yet delivered",
            head.status, head.reason
        ));
        let resumed = continued.as_ref().map(|r| resumed_at(r.partial.offset));
        let get = notes.0.last.method == "GET";
        match self.receive_checked(ex, continued, get) {
            Ok(Ok(n)) => self.succeeded(&head, resumed, n, notes),
            Ok(Err((why, r))) => {
                notes.2.pending = Some(Pending::Read(r));
                self.not_ready(&head, why, notes)
            }
            Err(Broken { failure, kept }) => {
                notes.2.partial = kept;
                // A resumed attempt cut again says where it had resumed, as one that ends
                // well does.
                notes.1.note = resumed;
                self.failed(&failure, notes)
            }
        }
    }

    /// A kept part that this answer does not continue (a 200, or anything else, means the
    /// representation changed): thrown away, and said so under `-C -`.
    fn discard_stale(&self, stale: Option<Partial>, status: u16) {
        let Some(p) = stale else { return };
        if self.cfg.conditional.resume {
            self.reporter.warn(&format!(
                "-C -: the {} bytes kept are not continued by this {status} answer (the representation changed): discarded, downloading from the first byte",
                p.offset
            ));
        }
        self.output.discard(p.spool);
    }

    /// Delivers a success's body; when a condition reads the body, it is received first and
    /// put in place only when the conditions hold (`Ok(Err)`: why not, and the body read).
    fn receive_checked(
        &self,
        ex: Exchange,
        continued: Option<Resumed>,
        get: bool,
    ) -> Result<Result<u64, (String, Received)>, Broken> {
        if !self.cfg.ready.needs_body() {
            return self.delivery().deliver(ex, continued, get).map(Ok);
        }
        let r = self.delivery().receive(ex, continued, get)?;
        match self.check_body(&r) {
            Ok(None) => self.delivery().commit(r).map(Ok),
            Ok(Some(why)) => Ok(Err((why, r))),
            Err(f) => {
                self.output.discard(r.spool);
                Err(Broken::from(f))
            }
        }
    }

    /// Reads a received body back (at most `MAX_CHECKED` bytes) and checks the body and
    /// JSON conditions on it: `Ok(None)` when they hold, else why not.
    fn check_body(&self, r: &Received) -> Result<Option<String>, Failure> {
        let body = r
            .spool
            .contents(r.body_start, readiness::MAX_CHECKED)
            .map_err(|e| {
                Failure::new(
                    FailureKind::Local,
                    format!("cannot read the body back to check it: {e}"),
                )
            })?;
        // `len` counts the body alone; `body_start` is where it begins in the spool.
        Ok(self.cfg.ready.check_body(body.as_deref(), r.len))
    }

    /// `-C -`: a 206 that continues the -o file. Its bytes are copied into the spool, the
    /// 206's body appended, and the whole put in place only when it is exactly the range;
    /// anything less leaves the file as it was (the next attempt asks again). Returns the
    /// byte it resumed at and, as curl counts `%{size_download}`, the bytes this run
    /// received.
    fn resume_file(
        &self,
        ex: Exchange,
        range: Continuation,
        method: &str,
    ) -> Result<(u64, u64), Failure> {
        let (Some(file), Some(size)) = (&self.prior.file, self.prior.asked.resume_from) else {
            return Err(Failure::new(FailureKind::Local, "no -o file to resume"));
        };
        let local = |e: std::io::Error| {
            Failure::new(
                FailureKind::Local,
                format!("cannot copy the {size} bytes of the -o file to resume it: {e}"),
            )
        };
        let mut spool = self.output.begin(&ex.head).map_err(local)?;
        if let Err(e) = prior::copy_kept(&mut spool, file, size) {
            self.output.discard(spool);
            return Err(local(e));
        }
        let partial = Partial {
            spool,
            offset: size,
            total: range.last + 1,
            validator: resume::Validator(String::new()),
        };
        self.watchdog.note_last(&format!(
            "{} {}, its body not yet delivered",
            ex.head.status, ex.head.reason
        ));
        let continued = Resumed { partial, range };
        match self
            .delivery()
            .deliver(ex, Some(continued), method == "GET")
        {
            Ok(n) => Ok((size, n.saturating_sub(size))),
            Err(Broken { failure, .. }) => Err(failure),
        }
    }
}

/// The line's note on a resumed download.
fn resumed_at(at: u64) -> String {
    format!("resumed at byte {at}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Spool;

    fn kept(offset: u64, total: u64, etag: &str) -> Partial {
        Partial {
            spool: Spool::Discard,
            offset,
            total,
            validator: resume::Validator(etag.into()),
        }
    }

    fn take(head: &Head, asked: Asked, kept: Option<&Partial>) -> Take {
        let ready = readiness::Conditions::default();
        let retry_on = StatusSet::from_ranges(vec![(408, 408), (429, 429), (500, 504)]);
        classify(head, &asked, (&ready, &retry_on), kept)
    }

    #[test]
    fn a_304_leaves_the_output_as_it_was() {
        let head = Head::for_test(304, &[]);
        assert!(matches!(
            take(&head, Asked::default(), None),
            Take::Unchanged(_)
        ));
    }

    #[test]
    fn an_error_status_is_an_error_whatever_was_kept() {
        let head = Head::for_test(503, &[]);
        let part = kept(4, 10, "\"v1\"");
        assert_eq!(take(&head, Asked::default(), Some(&part)), Take::Error);
    }

    #[test]
    fn a_206_that_continues_the_kept_part_is_delivered_after_it() {
        let head = Head::for_test(
            206,
            &[("content-range", "bytes 4-9/10"), ("etag", "\"v1\"")],
        );
        let part = kept(4, 10, "\"v1\"");
        let Take::Body(Some(range)) = take(&head, Asked::default(), Some(&part)) else {
            panic!("a continuation")
        };
        assert_eq!(range.last, 9);
    }

    #[test]
    fn a_200_after_a_kept_part_starts_the_body_over() {
        let head = Head::for_test(200, &[("etag", "\"v2\"")]);
        let part = kept(4, 10, "\"v1\"");
        assert_eq!(take(&head, Asked::default(), Some(&part)), Take::Body(None));
    }

    #[test]
    fn a_1xx_or_a_206_that_continues_nothing_is_no_whole_answer() {
        for status in [103, 206] {
            let head = Head::for_test(status, &[]);
            assert!(
                matches!(take(&head, Asked::default(), None), Take::NotFinal(_)),
                "{status}"
            );
        }
    }

    #[test]
    fn under_c_dash_a_200_to_the_range_cannot_resume_the_file() {
        let head = Head::for_test(200, &[]);
        let asked = Asked {
            resume_from: Some(5),
            ..Asked::default()
        };
        assert!(matches!(take(&head, asked, None), Take::NotResumable(_)));
    }
}
