//! The seam in front of the transport: what the attempt loop and the delivery ask of it
//! (send one attempt's chain of requests, say whether a body is decoded, read a body into a
//! sink), as a trait. The ureq transport (`http::transport`) is the one used by a run; the
//! unit tests of the loop and the delivery put a scripted one in its place.

use crate::config::network::SpeedLimit;
use crate::http::body::Payload;
use crate::http::transport::{Chain, Exchange, Failure, Head, Hop, Sink, Transport};
use std::time::Duration;

/// Sends requests and reads their answers' bodies.
pub trait Carrier {
    /// Sends one attempt starting at `first` (redirects followed as the transport is set
    /// to), within `budget` (None: no limit); see [`Transport::send`].
    fn send(
        &self,
        first: &Hop,
        body: Option<&Payload>,
        budget: Option<Duration>,
        replay_ok: bool,
    ) -> Chain;

    /// Whether a body with these headers is decoded before it is written (`--compressed`).
    fn decodes(&self, head: &Head) -> bool;

    /// Copies the body of `ex` into `sink` (decoding it when `decode`), failing past `limit`
    /// bytes; returns the bytes written. The body is ureq's, whoever answered, so every
    /// carrier reads it as [`Transport::read_body`] does.
    fn read_body(
        &self,
        ex: Exchange,
        decode_speed: (bool, Option<SpeedLimit>),
        sink: &mut dyn Sink,
        limit: Option<u64>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Failure> {
        Transport::read_body(ex, decode_speed, sink, limit, progress)
    }
}

impl Carrier for Transport {
    fn send(
        &self,
        first: &Hop,
        body: Option<&Payload>,
        budget: Option<Duration>,
        replay_ok: bool,
    ) -> Chain {
        Transport::send(self, first, body, budget, replay_ok)
    }

    fn decodes(&self, head: &Head) -> bool {
        Transport::decodes(self, head)
    }
}
