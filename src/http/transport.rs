//! The HTTP transport: one attempt's exchange per call, on the agent `agent` builds. It
//! knows nothing of retry policy: it sends, reads, and says what went wrong (`failure`).
//!
//! Redirects under `-L` are followed here, by hand (the rules are `redirect`'s), so a body
//! can be replayed across 307/308 and credentials are dropped when the host changes. All
//! hops of one attempt share that attempt's time budget, and the attempt reports which hop
//! it ended on, so the loop can judge (and resend) that request rather than the first.
//!
//! Every request carries the automatic headers `headers` lists (the same list `-v` shows),
//! and the body, when it goes, with its Content-Length. The body of the answer is read by
//! [`Transport::read_body`] (`receive`).

use crate::config::network::SpeedLimit;
use crate::config::{RequestConfig, Timeouts, UsageError};
use crate::http::agent;
use crate::http::body::Payload;
use crate::http::failure::{Stage, classify};
use crate::http::headers::Automatic;
use crate::http::receive;
use crate::http::redirect::{self, Redirection};
use crate::http::speed;
use crate::http::tap::{Tap, Wired};
use crate::http::timing::{Probe, Timeline};
use crate::policy::FailureKind;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use ureq::Agent;
use ureq::http;
use url::Url;

// The types of the transport's calls, named where they are used as `transport::...`.
pub use crate::http::failure::Failure;
pub use crate::http::head::Head;
pub use crate::http::receive::Sink;
pub use crate::http::redirect::Hop;

/// A response whose body has not been read yet.
pub struct Exchange {
    /// Status and headers (shared with the run's end, which keeps the last head).
    pub head: std::sync::Arc<Head>,
    /// The body, to be read with [`Transport::read_body`].
    pub body: ureq::Body,
    /// The plain socket the body arrives on, when it may be spliced off it (see `splice`).
    pub(crate) wire: Option<Wired>,
}

/// How one attempt's chain of requests ended.
pub struct Chain {
    /// The final answer, or why there was none.
    pub result: Result<Exchange, Failure>,
    /// The request that got that answer (or failed): the last hop of the chain.
    pub last: Hop,
    /// Whether an earlier hop sent a non-idempotent request and got an answer other than
    /// 307/308: the server may have processed it, so no later failure can prove otherwise
    /// (RFC 9110 sections 15.4.4, 15.4.8 and 15.4.9).
    pub committed: bool,
    /// A redirect that was not followed because following it would send a non-idempotent
    /// request again (a PATCH answered 301/302): why. The answer is then the redirect itself.
    pub declined: Option<String>,
    /// The redirect answer a failure stopped the chain at (`--max-redirs` reached, a
    /// `--proto-redir` scheme refused): the last answer that arrived, which `-w` and `-D`
    /// report as curl does (`%{http_code}` 302, `%{redirect_url}` where it pointed). `None`
    /// when the chain ended otherwise.
    pub unfollowed: Option<std::sync::Arc<Head>>,
    /// When the attempt's steps happened, its connections and redirects (for `-w`).
    pub timeline: Timeline,
}

/// Sends requests with per-attempt budgets.
pub struct Transport {
    agent: Agent,
    /// `-L`: follow up to this many redirects.
    follow: Option<u32>,
    /// `--connect-timeout`.
    connect: Option<Duration>,
    /// Set by the connector once the connection (TLS included) is up.
    connected: Arc<AtomicBool>,
    /// `--compressed`: gzip bodies are decoded.
    decode: bool,
    /// The proxy in use, secrets masked, to name it when it is the one that failed.
    proxy: Option<String>,
    /// Whether requests go through a proxy (they then keep ureq's output buffer size).
    proxied: bool,
    /// The headers added to every request.
    automatic: Automatic,
    /// When each step of the request in flight happened.
    probe: Arc<Probe>,
    /// `-Y`/`-y`, and the per-read timeout it may have shortened (see `speed::silent`).
    speed: (Option<SpeedLimit>, Option<Duration>),
    /// `--proto`/`--proto-redir`: the schemes a redirect may lead to.
    schemes: crate::config::protocols::Schemes,
    /// The plain socket of the request in flight (see `splice`).
    tap: Arc<Tap>,
    /// Whether the agent keeps idle connections (then every request has the agent's
    /// buffer sizes, or ureq would neither lend it one nor keep its own).
    pooled: bool,
}

impl Transport {
    /// Builds the agent for requests to `url`'s origin, keeping at most `pool` idle
    /// connections per origin for later requests (None: none; a batch's transports keep
    /// them, a run of one URL does not).
    /// Fails only on a bad proxy or `--cacert` (a usage error).
    ///
    /// A request sent on a kept connection counts as sent (it may have been processed)
    /// from its first byte handed to the connection: a failure after that, even a reset
    /// on a connection the server closed while it was idle, is never taken for "nothing
    /// was sent", so a non-idempotent request is not replayed unless allowed.
    pub fn new(
        req: &RequestConfig,
        url: &url::Url,
        timeouts: &Timeouts,
        pool: Option<usize>,
    ) -> Result<Self, UsageError> {
        let built = agent::build(req, url, timeouts, pool)?;
        Ok(Transport {
            agent: built.agent,
            follow: req.follow,
            connect: timeouts.connect,
            connected: built.connected,
            decode: req.compressed,
            proxied: built.proxy.is_some(),
            proxy: built.proxy,
            automatic: Automatic::new(req),
            probe: built.probe,
            speed: (req.network.speed, timeouts.stall),
            schemes: req.protocols.redirect_schemes,
            tap: built.tap,
            pooled: pool.is_some(),
        })
    }

    /// A handle that can abort requests in flight (see [`Agent::shutdown`]).
    pub fn abort_handle(&self) -> Agent {
        self.agent.clone()
    }

    /// The headers the transport adds to a request that carries `given`, in the order they
    /// are sent (see `headers`): what `-v` shows after the request's own.
    pub fn automatic_headers(&self, given: &[(String, String)]) -> Vec<(String, String)> {
        self.automatic.for_request(given)
    }

    /// Whether a body with these headers is decoded before it is written: only under
    /// `--compressed`, and only gzip (`Content-Encoding: gzip` or `x-gzip`).
    pub fn decodes(&self, head: &Head) -> bool {
        self.decode && receive::is_gzip(head)
    }

    /// Copies the body of `ex` into `sink` (decoding gzip when `decode`), failing when it
    /// exceeds `limit` bytes, and calls `progress` with the bytes so far. Returns the number
    /// of bytes written. A body cut short is `Truncated` whether or not it was being
    /// decoded; only a body complete on the wire that does not decode is a protocol error.
    /// A write error on the sink is a local failure; a broken pipe ends the copy quietly.
    /// `speed`: `-Y`/`-y`, checked on the bytes off the wire (see `speed`). A plain body of
    /// known length on a plain socket, to a file, is spliced once what ureq had read with
    /// the head is written (see `receive` and `splice`).
    pub fn read_body(
        ex: Exchange,
        (decode, speed): (bool, Option<SpeedLimit>),
        sink: &mut dyn Sink,
        limit: Option<u64>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Failure> {
        receive::read((ex.body, ex.wire), (decode, speed), sink, limit, progress)
    }

    /// Sends one attempt starting at `first`, following redirects when asked, within `budget`
    /// (None: no limit). The body goes with every hop whose `with_body` is set. `replay_ok`:
    /// an idempotency key or `--retry-unsafe` allows a non-idempotent request to be sent
    /// again, so a 301/302 to one may be followed with its method.
    pub fn send(
        &self,
        first: &Hop,
        body: Option<&Payload>,
        budget: Option<Duration>,
        replay_ok: bool,
    ) -> Chain {
        let start = Instant::now();
        let mut hop = first.clone();
        let mut committed = false;
        let mut hops = 0u32;
        self.probe.begin_attempt();
        loop {
            self.probe.begin_hop(hops);
            let left = budget.map(|b| b.saturating_sub(start.elapsed()));
            let result = self.send_hop(&hop, body, left);
            let next = match &result {
                Ok(ex) => redirect::next(&hop, &ex.head, hops, self.follow, replay_ok)
                    .and_then(|n| redirect::allowed(n, self.schemes)),
                Err(_) => Ok(Redirection::Answer),
            };
            let (result, declined, unfollowed) = match (next, result) {
                (Ok(Redirection::Follow(next)), Ok(ex)) => {
                    committed |= redirect::commits(&hop.method, ex.head.status);
                    hop = next;
                    hops += 1;
                    continue;
                }
                (Ok(Redirection::Decline(why)), result) => (result, Some(why), None),
                (Err(f), Ok(ex)) => (Err(f), None, Some(ex.head)),
                (Err(f), Err(_)) => (Err(f), None, None),
                (_, result) => (result, None, None),
            };
            return Chain {
                result,
                last: hop,
                committed,
                declined,
                unfollowed,
                timeline: self.probe.snapshot(),
            };
        }
    }

    /// One hop, within what is `left` of the attempt's budget (out of time before it starts:
    /// a timeout), with the body if the hop carries one.
    fn send_hop(
        &self,
        hop: &Hop,
        body: Option<&Payload>,
        left: Option<Duration>,
    ) -> Result<Exchange, Failure> {
        if left.is_some_and(|l| l.is_zero()) {
            return Err(Failure::new(FailureKind::Timeout, "timed out"));
        }
        self.send_one(hop, body.filter(|_| hop.with_body), left)
    }

    /// Sends `hop` (with `body`, if any) within `budget`, and reads the head of the answer.
    fn send_one(
        &self,
        hop: &Hop,
        body: Option<&Payload>,
        budget: Option<Duration>,
    ) -> Result<Exchange, Failure> {
        let (connect, resolve) = connect_limits(self.connect, budget, &hop.url);
        let request = self.request(hop, body)?;
        let bare = body.is_none() && !self.proxied && !self.pooled;
        let output = agent::output_buffer(&request, bare);
        let request = self
            .agent
            .configure_request(request)
            .output_buffer_size(output)
            .timeout_global(budget)
            .timeout_connect(connect)
            .timeout_resolve(resolve)
            .build();
        self.connected.store(false, Ordering::SeqCst);
        self.tap.clear();
        let until = budget.map(|b| Instant::now() + b);
        let response = self
            .agent
            .run(request)
            .map_err(|e| self.unanswered(&e, &hop.url))?;
        self.probe.head_arrived();
        let (parts, body) = response.into_parts();
        // Only a plain body is spliced: over TLS the socket carries records, not the body.
        let wire = (hop.url.scheme() == "http" && self.may_splice(&parts))
            .then(|| self.tap.socket())
            .flatten()
            .map(|socket| Wired {
                socket,
                tap: self.tap.clone(),
                until,
                stall: self.speed.1,
            });
        Ok(Exchange {
            head: std::sync::Arc::new(Head::from_parts(&parts, &hop.url, self.tap.take_head())),
            body,
            wire,
        })
    }

    /// Whether the body of the answer with these `parts` may be spliced off its socket: a
    /// spliced connection is not kept (ureq does not see its body end), so on a pooled
    /// agent only a body over [`SPLICE_KEPT_OVER`] is, where the copy it saves outweighs a
    /// new connection for the next transfer.
    fn may_splice(&self, parts: &http::response::Parts) -> bool {
        !self.pooled
            || parts
                .headers
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .is_some_and(|len| len > SPLICE_KEPT_OVER)
    }

    /// The request for `hop`: its own headers, the automatic ones, then the Content-Length
    /// of the body when one goes (RFC 9110 section 8.6), read from its first byte. A POST,
    /// PUT or PATCH without a body says `Content-Length: 0`: ureq would otherwise frame it
    /// as chunked and send an empty chunk (see [`expects_body`]).
    fn request(
        &self,
        hop: &Hop,
        body: Option<&Payload>,
    ) -> Result<http::Request<ureq::SendBody<'static>>, Failure> {
        let mut builder = http::Request::builder()
            .method(hop.method.as_str())
            .uri(hop.url.as_str());
        for (n, v) in hop
            .headers
            .iter()
            .chain(&self.automatic_headers(&hop.headers))
        {
            builder = builder.header(n.as_str(), v.as_str());
        }
        let send_body = match body {
            Some(payload) => {
                builder = builder.header("content-length", payload.content_length().to_string());
                let reader = payload.reader().map_err(|e| {
                    Failure::new(
                        FailureKind::Local,
                        format!("cannot reread the request body: {e}"),
                    )
                })?;
                ureq::SendBody::from_owned_reader(reader)
            }
            None => {
                if expects_body(&hop.method) && !frames_body(&hop.headers) {
                    builder = builder.header("content-length", "0");
                }
                ureq::SendBody::none()
            }
        };
        builder.body(send_body).map_err(|e| {
            Failure::new(
                FailureKind::Protocol,
                format!("cannot build the request: {e}"),
            )
        })
    }

    /// Why a request to `url` got no answer. Whether anything of it was sent is the
    /// connection's to say (see `failure::Stage`): before the connection was up (or, on a
    /// kept connection, before the request's first byte was handed to it) nothing was,
    /// and through a proxy the connection that never opened may be the proxy's, so the proxy
    /// is named; once it was up, the request may have been, whatever the error.
    fn unanswered(&self, e: &ureq::Error, url: &Url) -> Failure {
        let connected = self.connected.load(Ordering::SeqCst);
        let stage = if connected {
            Stage::Connected
        } else {
            Stage::Connecting {
                tls: url.scheme() == "https",
            }
        };
        let mut f = speed::silent(classify(e, stage), self.speed.0, self.speed.1);
        if !connected && let Some(p) = &self.proxy {
            f.detail = format!("through the proxy {p}: {}", f.detail);
        }
        f
    }
}

/// The length in bytes over which a body on a kept connection is still spliced into its
/// file (see `Transport::may_splice`): 1 MiB, about a millisecond of copying on loopback
/// against a new connection's round trip.
const SPLICE_KEPT_OVER: u64 = 1 << 20;

/// Whether ureq frames a request of `method` as having a body even when none is given
/// (POST, PUT, PATCH: it then sends `Transfer-Encoding: chunked` and an empty chunk, which
/// servers that refuse chunked requests, or demand a length with 411, turn away). Such a
/// request without a body is sent with `Content-Length: 0`, as curl sends `-d ''` (curl's
/// `-X POST` alone sends neither header; ureq cannot leave both out, and RFC 9110 section
/// 8.6 asks for the length when the method defines a meaning for content).
fn expects_body(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH")
}

/// Whether the user's headers already frame the body (`-H 'Content-Length: ...'` or
/// `-H 'Transfer-Encoding: ...'`).
fn frames_body(headers: &[(String, String)]) -> bool {
    headers.iter().any(|(n, _)| {
        n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
    })
}

/// The connect and name-lookup limits of one request to `url` within `budget` (None: no
/// limit), `connect` being `--connect-timeout`. The connect limit fires before the budget
/// does (at 90% of it), or a connection that never opened would look like a request that
/// was sent (and a POST is not replayed). A lookup limit makes ureq look names up on a
/// thread of its own; an address needs no lookup, so it gets none.
fn connect_limits(
    connect: Option<Duration>,
    budget: Option<Duration>,
    url: &Url,
) -> (Option<Duration>, Option<Duration>) {
    let connect = match (connect, budget) {
        (Some(c), Some(b)) => Some(c.min(b.mul_f64(0.9))),
        (c, b) => c.or(b.map(|b| b.mul_f64(0.9))),
    };
    let literal = matches!(url.host(), Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)));
    (connect, if literal { None } else { connect })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connect_limit_fires_before_the_budget() {
        let secs = Duration::from_secs;
        let named = Url::parse("http://h.test/").unwrap();
        assert_eq!(
            connect_limits(Some(secs(5)), Some(secs(10)), &named),
            (Some(secs(5)), Some(secs(5)))
        );
        assert_eq!(
            connect_limits(Some(secs(5)), Some(secs(2)), &named),
            (
                Some(Duration::from_millis(1800)),
                Some(Duration::from_millis(1800))
            )
        );
        assert_eq!(
            connect_limits(None, Some(secs(10)), &named).0,
            Some(secs(9))
        );
        assert_eq!(connect_limits(None, None, &named), (None, None));
        let address = Url::parse("http://[::1]:9/").unwrap();
        assert_eq!(
            connect_limits(Some(secs(5)), None, &address),
            (Some(secs(5)), None),
            "an address needs no lookup"
        );
    }

    #[test]
    fn methods_ureq_frames_as_having_a_body() {
        for m in ["POST", "PUT", "PATCH"] {
            assert!(expects_body(m), "{m}");
        }
        for m in ["GET", "HEAD", "DELETE", "OPTIONS", "PURGE", "post"] {
            assert!(!expects_body(m), "{m}");
        }
        let given = |n: &str| vec![(n.to_string(), "1".to_string())];
        assert!(frames_body(&given("Content-Length")));
        assert!(frames_body(&given("transfer-encoding")));
        assert!(!frames_body(&given("Content-Type")));
    }
}
