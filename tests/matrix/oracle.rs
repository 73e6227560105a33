//! The oracle: the exit code the rules of docs/policy.md give a combination, and the replay rule for
//! non-idempotent requests. Pure functions of the case (and of what the server recorded).

use super::cases::{Case, Fault, Method, Mode, Out, Wrap};

/// How a fault ends an attempt, as the rules of docs/policy.md see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A 200 at once: nothing to retry.
    Success,
    /// No connection was made (refused): proof the request was not processed.
    NoConnection,
    /// Sent, then no response (reset, hang: a stall before any byte): ambiguous.
    NoAnswer,
    /// A 200 whose body broke after some bytes (cut, reset, stall, broken chunking, a gzip
    /// body cut short): "retried like a reset", so ambiguous for a POST.
    CutBody,
    /// A response with this status (408, 429, 500, 503 are in the default --retry-on; 409,
    /// 422 and 400 are the Idempotency-Key's answers, not in it).
    Status(u16),
}

/// The fault's kind.
pub fn kind(f: Fault) -> Kind {
    match f {
        Fault::Gzip => Kind::Success,
        Fault::Refused => Kind::NoConnection,
        Fault::Reset | Fault::Hang => Kind::NoAnswer,
        Fault::ResetBody
        | Fault::ShortLength
        | Fault::ChunkedCut
        | Fault::ChunkedGarbage
        | Fault::Stall
        | Fault::GzipCut
        | Fault::CutResumable => Kind::CutBody,
        Fault::Status(s, _) => Kind::Status(s),
    }
}

/// Whether the fault's body is resumed rather than fetched again: a GET to a regular `-o`
/// file, and a body with `Accept-Ranges` and an ETag. After a 303 the hop that failed is a
/// GET; a POST without a key must be retried from that hop, so it resumes; any other method
/// may restart at the origin (PUT, or a POST allowed to replay, are not resumed) or at the
/// hop (resumed): `None` says either may happen.
pub fn resumed(c: &Case) -> Option<bool> {
    if c.fault != Fault::CutResumable || !matches!(c.out, Out::FileExisting | Out::FileNew) {
        return Some(false);
    }
    match (c.wrap, c.method) {
        (_, Method::Get) => Some(true),
        (Wrap::See303, Method::Post) => Some(true),
        (Wrap::See303, _) => None,
        _ => Some(false),
    }
}

/// The expected exit codes (one, or two where docs/policy.md leaves a choice) and the rule that
/// gives them. `streamed`: whether bytes reached stdout (asked only of a chunk size that is
/// not hexadecimal under `-N`, see rule 4).
///
/// In the order of precedence of docs/policy.md:
/// 1. A 200 at once (the gzip body): 0.
/// 2. The tight deadline (800 ms, no --timeout, a 5 s stall timeout, Retry-After not
///    clamped): a hang or a stall is cut by the deadline: 5 ("an attempt whose time was cut
///    to the deadline and ran out counts as the deadline passing (5), even for a POST");
///    under -N a stall after streamed bytes may read as 5 or 6 (docs/policy.md's precedence puts
///    "not retried (6)" first, its sentence on cut attempts says 5: both accepted). A
///    Retry-After: 1 is a wait whose floor ends past the deadline: 5 at once, unless the
///    status is not retried at all (a 500 to a POST without a key: 3).
/// 3. A resumed download (see [`resumed`]): 0 (0 or 4 where it may not be resumed). Each
///    attempt brings 1000 more bytes (the scripted resource cuts every answer, 200 or 206,
///    after 1000 bytes), so even a cut "forever" completes the 3000-byte body at the third
///    attempt of six.
/// 4. `-N` and a body that broke after its first bytes reached stdout: 6, not retried
///    ("a failure after the first byte is not retried (exit 6)"). Every `CutBody` fault here
///    sends at least 16 body bytes, apart from what breaks it, before it breaks (a gzip body
///    cut at half of 8 KB decodes to several KB), so bytes reach stdout. The exception is
///    the chunk size that is not hexadecimal: a decoder that reads ahead may refuse the
///    body before handing out its first chunk, and then nothing reached stdout and docs/policy.md's
///    condition does not hold; so there, and only there, the rule depends on `streamed`.
/// 5. The method of the request the fault answered: after a 303 it is the GET that
///    followed (idempotent, so retried from that hop: the POST is never re-sent); after a 307
///    it is the method itself, replayed. GET and PUT are idempotent; a POST may be replayed
///    with `--idempotency-key` or `--retry-unsafe`, or when the failure proves it was not
///    processed: a refused connection, 408, 429, 503. Otherwise the run stops: 3 for a
///    response (the 500), 6 for a transport failure ("stops with exit 6 (transport) or 3
///    (response)").
/// 6. Retried: 0 when a success follows the fault; 4 when the fault repeats, since every
///    run here ends far inside its deadline (six attempts of at most 500 ms of stall, waits
///    of at most 100 ms).
///
/// Before 5 (and before the tight deadline's Retry-After), a status that is not retried at
/// all ends the run with 3 ([`status_retried`]): one not in the default `--retry-on`, and
/// with `--idempotency-key` the key's answers 422 and 400 ("never retried"), while its 409
/// ("still being processed") is retried whatever `--retry-on` says.
///
/// Readings where docs/policy.md could be read two ways:
/// - A chunk size that is not hexadecimal: docs/output.md says a broken chunked encoding is "a
///   failed attempt (retried like a reset)", and elsewhere that a protocol error is never
///   retried. The specific sentence about chunked encoding wins: retried like a reset.
/// - A stall before any byte (the hang) is a timeout after sending: ambiguous for a POST.
/// - Where a retry after a redirect starts (the origin or the failed hop) is left open for
///   idempotent requests: the scripted server answers by arrival order, not by path, so
///   both give the same exit code. For a POST after a 303 only the failed hop may be retried
///   (invariant 1 checks that).
/// - The attempts: hops of a redirect belong to one attempt, so six attempts whatever the
///   redirect, and a repeated fault ends with 4.
pub fn expected_exit(c: &Case, streamed: bool) -> (Vec<i32>, &'static str) {
    let k = kind(c.fault);
    if k == Kind::Success {
        return (vec![0], "a 200 at once");
    }
    if let Kind::Status(s) = k
        && !status_retried(s, c.method)
    {
        return (vec![3], "a status not retried at all");
    }
    if c.mode == Mode::Tight {
        let hop_is_post = c.method == Method::Post && c.wrap != Wrap::See303;
        return match k {
            Kind::Status(500) if hop_is_post => (
                vec![3],
                "POST, 500, no key: not replayed (before the deadline)",
            ),
            Kind::Status(_) => (
                vec![5],
                "Retry-After: 1 would end past the 800 ms deadline: stop at once",
            ),
            _ if c.fault == Fault::Stall && c.out == Out::NoBuffer => (
                vec![5, 6],
                "the deadline cut the attempt (5), or -N after bytes streamed (6)",
            ),
            _ => (
                vec![5],
                "the attempt was cut to the deadline and ran out (5, even for a POST)",
            ),
        };
    }
    match resumed(c) {
        Some(true) => return (vec![0], "resumed: every attempt brings 1000 more bytes"),
        None => {
            return (
                vec![0, 4],
                "resumed from the GET hop (0), or restarted at the origin and never resumed (4)",
            );
        }
        Some(false) => {}
    }
    let reached_stdout = c.fault != Fault::ChunkedGarbage || streamed;
    if k == Kind::CutBody && c.out == Out::NoBuffer && reached_stdout {
        return (
            vec![6],
            "-N: a body cut after bytes reached stdout is not retried",
        );
    }
    let hop = if c.wrap == Wrap::See303 {
        Method::Get
    } else {
        c.method
    };
    let proof = matches!(k, Kind::NoConnection | Kind::Status(408 | 429 | 503));
    let may_replay = match hop {
        Method::Get | Method::Put | Method::PostKey | Method::PostUnsafe => true,
        Method::Post => proof,
    };
    if !may_replay {
        return match k {
            Kind::Status(_) => (vec![3], "POST, ambiguous response, no key: not replayed"),
            _ => (
                vec![6],
                "POST, ambiguous transport failure, no key: not replayed",
            ),
        };
    }
    if c.repeats() {
        (vec![4], "retried, the fault repeats: attempts exhausted")
    } else {
        (vec![0], "retried, the next request succeeds")
    }
}

/// Whether a status is retried at all (its replay aside): the default `--retry-on` (408,
/// 429, 500, 502, 503, 504, 529); with `--idempotency-key` (the key is sent on every hop,
/// after a 303 too), 409 whatever `--retry-on` says, never 422, nor 400 (the draft's
/// answers), which the default `--retry-on` does not name.
pub fn status_retried(status: u16, method: Method) -> bool {
    match (status, method) {
        (409, Method::PostKey) => true,
        (422 | 400, Method::PostKey) => false,
        (s, _) => matches!(s, 408 | 429 | 500 | 502 | 503 | 504 | 529),
    }
}

/// Whether invariant 1 (a non-idempotent request processed at most once) applies.
pub fn at_most_once(c: &Case) -> bool {
    c.method == Method::Post
}

/// Invariant 1's rule: a POST may be sent again only while every POST before it got an
/// answer proving it was not processed (307/308, 408, 429, 503; a refused connection is
/// never recorded). Once one got any other answer (a 303, a 500, a 200 whose body broke, a
/// reset, nothing), no POST may follow, whatever the later answers turn out to be: the
/// client could not know them when it sent. Returns the POSTs sent after that point.
/// `answers[i]` is (method, proves-unprocessed) for the i-th recorded request.
pub fn posts_after_processable(answers: &[(String, bool)]) -> usize {
    let first = answers.iter().position(|(m, proof)| m == "POST" && !proof);
    first.map_or(0, |i| {
        answers[i + 1..].iter().filter(|(m, _)| m == "POST").count()
    })
}
