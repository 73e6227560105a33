//! The oracle: the exit code README's rules give a combination, and the replay rule for
//! non-idempotent requests. Pure functions of the case (and of what the server recorded).

use super::cases::{Case, Fault, Method, Out, Wrap};

/// How a fault ends an attempt, as README's rules see it.
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
    /// A response with this status (all four are in the default --retry-on).
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

/// The expected exit code and the rule that gives it.
///
/// In README's order of precedence:
/// 1. A 200 at once (the gzip body): 0.
/// 2. `-N` and a body that broke after its first bytes reached stdout: 6, not retried
///    ("a failure after the first byte is not retried (exit 6)"). Every `CutBody` fault here
///    sends at least 16 body bytes before it breaks (a gzip body cut at half of 8 KB decodes
///    to several KB), so bytes always reached stdout.
/// 3. The method of the request the fault answered: after a 303 it is the GET that
///    followed (idempotent, so retried from that hop: the POST is never re-sent); after a 307
///    it is the method itself, replayed. GET and PUT are idempotent; a POST may be replayed
///    with `--idempotency-key` or `--retry-unsafe`, or when the failure proves it was not
///    processed: a refused connection, 408, 429, 503. Otherwise the run stops: 3 for a
///    response (the 500), 6 for a transport failure ("stops with exit 6 (transport) or 3
///    (response)").
/// 4. Retried: 0 when a success follows the fault; 4 when the fault repeats, since every
///    run here ends far inside its deadline (six attempts of at most 200 ms of stall, waits
///    of at most 100 ms).
///
/// Readings where README could be read two ways:
/// - A chunk size that is not hexadecimal: README says a broken chunked encoding is "a
///   failed attempt (retried like a reset)", and elsewhere that a protocol error is never
///   retried. The specific sentence about chunked encoding wins: retried like a reset.
/// - A stall before any byte (the hang) is a timeout after sending: ambiguous for a POST.
/// - The attempts: hops of a redirect belong to one attempt, so six attempts whatever the
///   redirect, and a repeated fault ends with 4.
pub fn expected_exit(c: &Case) -> (i32, &'static str) {
    let k = kind(c.fault);
    if k == Kind::Success {
        return (0, "a 200 at once");
    }
    if k == Kind::CutBody && c.out == Out::NoBuffer {
        return (
            6,
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
            Kind::Status(_) => (3, "POST, ambiguous response, no key: not replayed"),
            _ => (6, "POST, ambiguous transport failure, no key: not replayed"),
        };
    }
    if c.repeats() {
        (4, "retried, the fault repeats: attempts exhausted")
    } else {
        (0, "retried, the next request succeeds")
    }
}

/// Whether invariant 1 (a non-idempotent request processed at most once) applies.
pub fn at_most_once(c: &Case) -> bool {
    c.method == Method::Post
}

/// The POSTs that could have been processed: those the server recorded whose answer did
/// not prove otherwise (307/308, 408, 429, 503). Refused connections are never recorded.
/// `answers[i]` is (method, proves-unprocessed) for the i-th recorded request.
pub fn processable_posts(answers: &[(String, bool)]) -> usize {
    answers
        .iter()
        .filter(|(m, proof)| m == "POST" && !proof)
        .count()
}
