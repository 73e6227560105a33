//! The HTTP transport: a ureq 3 agent, one exchange per call, failures sorted into kinds.
//! It knows nothing of retry policy: it sends, reads, and says what went wrong.
//!
//! Redirects under `-L` are followed here, by hand (ureq's own following is off), so a
//! body can be replayed across 307/308 and credentials are dropped when the host changes.
//! All hops of one attempt share that attempt's time budget, and the attempt reports which
//! hop it ended on, so the loop can judge (and resend) that request rather than the first.
//!
//! Bodies are read as sent: ureq's own decoding is off, and a gzip body is decoded here only
//! under `--compressed`, so a body cut short while decoding is still a body cut short.

use crate::config::{RequestConfig, Timeouts, UsageError};
use crate::http::body::Payload;
use crate::policy::{self, FailureKind};
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use ureq::config::AutoHeaderValue;
use ureq::http;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::unversioned::resolver::DefaultResolver;
use ureq::unversioned::transport::{ConnectionDetails, Connector, DefaultConnector};
use ureq::{Agent, Timeout};
use url::Url;

/// The User-Agent sent unless `-A` or `-H` says otherwise.
pub const USER_AGENT: &str = concat!("retry-http/", env!("CARGO_PKG_VERSION"));

/// A failed exchange: what kind of failure, and a short description for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The kind, which the policy judges.
    pub kind: FailureKind,
    /// What happened, in a few words.
    pub detail: String,
}

impl Failure {
    pub(crate) fn new(kind: FailureKind, detail: impl Into<String>) -> Self {
        Failure {
            kind,
            detail: detail.into(),
        }
    }
}

/// The status line and headers of a response.
#[derive(Debug, Clone)]
pub struct Head {
    /// The status code (100 to 599).
    pub status: u16,
    /// The canonical reason phrase for the status ("" when unknown).
    pub reason: String,
    /// "HTTP/1.1" or "HTTP/1.0".
    pub version: String,
    /// Headers in order, values decoded lossily.
    pub headers: Vec<(String, String)>,
    /// The URL that answered (after redirects).
    pub url: Url,
}

impl Head {
    /// Every value of a header (case-insensitive name).
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The first value of a header.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A response whose body has not been read yet.
pub struct Exchange {
    /// Status and headers.
    pub head: Head,
    /// The body, to be read with [`Transport::read_body`].
    pub body: ureq::Body,
}

/// One request of an attempt's chain of redirects: what is sent, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// The method ("GET" after a 303).
    pub method: String,
    /// Where it goes.
    pub url: Url,
    /// Its headers (credentials dropped once the chain leaves the first origin).
    pub headers: Vec<(String, String)>,
    /// Whether the request body goes with it (not after a 303, or a 301/302 to a POST).
    pub with_body: bool,
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
}

/// What to do with an answer under `-L`.
enum Next {
    /// It is the answer.
    Answer,
    /// Follow it to this hop.
    Follow(Hop),
    /// Do not follow it: why.
    Decline(String),
}

/// ureq's own connector chain (proxy, TCP, TLS), noting whether the connection was
/// established. A failure before that (a TLS handshake cut short or stalled, a proxy
/// tunnel refused) proves that no byte of the HTTP request was sent.
///
/// Through a CONNECT proxy ureq calls the whole chain again, from inside it, to reach the
/// proxy: only the outermost call's success means the tunnel to the target is up.
#[derive(Debug)]
struct Watched {
    inner: DefaultConnector,
    connected: Arc<AtomicBool>,
    depth: AtomicUsize,
}

impl Connector<()> for Watched {
    type Out = Box<dyn ureq::unversioned::transport::Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        self.depth.fetch_add(1, Ordering::SeqCst);
        let out = self.inner.connect(details, chained);
        let outermost = self.depth.fetch_sub(1, Ordering::SeqCst) == 1;
        if outermost && matches!(out, Ok(Some(_))) {
            self.connected.store(true, Ordering::SeqCst);
        }
        out
    }
}

/// Sends requests with per-attempt budgets.
pub struct Transport {
    agent: Agent,
    follow: Option<u32>,
    connect: Option<Duration>,
    /// Set by the connector once the connection (TLS included) is up.
    connected: Arc<AtomicBool>,
    /// `--compressed`: gzip bodies are decoded.
    decode: bool,
    /// The proxy in use, secrets masked, to name it when it is the one that failed.
    proxy: Option<String>,
}

/// A proxy URL must parse, with a host and a usable port: a typo is a usage error, not a
/// connection refused to be retried six times.
fn check_proxy(p: &str) -> Result<(), UsageError> {
    let shown = crate::http::redact::url_text(p);
    let bad = |why: &str| {
        Err(UsageError(format!(
            "invalid proxy {shown:?} ({why}): expected http://HOST:PORT, https://, socks4:// or socks5://"
        )))
    };
    match Url::parse(p) {
        Ok(u)
            if !matches!(
                u.scheme(),
                "http" | "https" | "socks4" | "socks4a" | "socks5" | "socks5h"
            ) =>
        {
            bad("unsupported scheme")
        }
        Ok(u) if u.host_str().is_none_or(str::is_empty) => bad("no host"),
        Ok(_) => Ok(()),
        Err(e) => bad(&e.to_string()),
    }
}

/// The certificates of the `--cacert` file (a usage error if it holds none).
fn extra_certs(cacert: Option<&std::path::Path>) -> Result<Vec<Certificate<'static>>, UsageError> {
    let Some(path) = cacert else {
        return Ok(Vec::new());
    };
    // A bundle of every public CA is about 200 KB; `/dev/zero` must not fill the memory.
    const MAX_CACERT: u64 = 16 << 20;
    let mut pem = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CACERT + 1).read_to_end(&mut pem))
        .map_err(|e| UsageError(format!("cannot read --cacert {}: {e}", path.display())))?;
    if pem.len() as u64 > MAX_CACERT {
        return Err(UsageError(format!(
            "--cacert {} is larger than 16 MiB: expected a PEM file of certificates",
            path.display()
        )));
    }
    let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(UsageError(format!(
            "--cacert {} holds no PEM certificate: expected one or more -----BEGIN CERTIFICATE----- blocks",
            path.display()
        )));
    }
    Ok(certs)
}

/// The system's trusted certificates plus the extra ones. Reading the system store costs a
/// few milliseconds, so it is done only when a TLS connection may happen.
fn root_certs(extra: Vec<Certificate<'static>>) -> RootCerts {
    let mut certs: Vec<Certificate<'static>> = rustls_native_certs::load_native_certs()
        .certs
        .iter()
        .map(|c| Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    if certs.is_empty() && extra.is_empty() {
        // No system store found: fall back to the bundled Mozilla roots.
        return RootCerts::WebPki;
    }
    certs.extend(extra);
    RootCerts::Specific(Arc::new(certs))
}

impl Transport {
    /// Builds the agent. Fails only on a bad `--cacert` (a usage error).
    pub fn new(req: &RequestConfig, timeouts: &Timeouts) -> Result<Self, UsageError> {
        let removed = |name: &str| req.removed.iter().any(|r| r == name);
        // Accept-Encoding is sent only under --compressed, and by the loop's headers (ureq
        // decodes nothing: see `read_body`).
        let encoding = AutoHeaderValue::None;
        let agent_name = if removed("user-agent") {
            AutoHeaderValue::None
        } else {
            AutoHeaderValue::Provided(Arc::new(USER_AGENT.to_string()))
        };
        let accept = if removed("accept") {
            AutoHeaderValue::None
        } else {
            AutoHeaderValue::Default
        };
        let chosen = crate::http::proxy::choose(
            req.url.scheme(),
            req.url.host_str().unwrap_or(""),
            req.proxy.as_deref(),
            req.noproxy.as_deref(),
            |name| std::env::var(name).ok(),
        )
        // "host:port", as curl takes it, is an http proxy.
        .map(|p| {
            if p.contains("://") {
                p
            } else {
                format!("http://{p}")
            }
        });
        if let Some(p) = &chosen {
            check_proxy(p)?;
        }
        let shown_proxy = chosen.as_deref().map(crate::http::redact::url_text);
        let proxy = match chosen {
            Some(p) => Some(ureq::Proxy::new(&p).map_err(|e| {
                UsageError(format!(
                    "invalid proxy {} ({e}): expected http://HOST:PORT, https://, socks4:// or socks5://",
                    crate::http::redact::url_text(&p)
                ))
            })?),
            None => None,
        };
        let extra = extra_certs(req.cacert.as_deref())?;
        // TLS can happen only for an https URL, a redirect (which may lead to one) or an
        // https proxy; a plain http request skips reading the system's certificate store.
        let tls_possible = req.url.scheme() == "https"
            || req.follow.is_some()
            || proxy
                .as_ref()
                .is_some_and(|p| p.protocol() == ureq::ProxyProtocol::Https);
        let tls = if req.insecure {
            TlsConfig::builder().disable_verification(true).build()
        } else if tls_possible {
            TlsConfig::builder().root_certs(root_certs(extra)).build()
        } else {
            TlsConfig::builder()
                .root_certs(RootCerts::new_with_certs(&extra))
                .build()
        };
        let config = Agent::config_builder()
            .proxy(proxy)
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .allow_non_standard_methods(true)
            .accept_encoding(encoding)
            .user_agent(agent_name)
            .accept(accept)
            .tls_config(tls)
            .timeout_connect(timeouts.connect)
            .timeout_resolve(None)
            .timeout_per_read(timeouts.stall)
            .max_idle_connections(0)
            .build();
        let connected = Arc::new(AtomicBool::new(false));
        let connector = Watched {
            inner: DefaultConnector::default(),
            connected: connected.clone(),
            depth: AtomicUsize::new(0),
        };
        Ok(Transport {
            agent: Agent::with_parts(config, connector, DefaultResolver::default()),
            follow: req.follow,
            connect: timeouts.connect,
            connected,
            decode: req.compressed,
            proxy: shown_proxy,
        })
    }

    /// A handle that can abort requests in flight (see [`Agent::shutdown`]).
    pub fn abort_handle(&self) -> Agent {
        self.agent.clone()
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
        loop {
            let left = budget.map(|b| b.saturating_sub(start.elapsed()));
            let result = if left.is_some_and(|l| l.is_zero()) {
                Err(Failure::new(FailureKind::Timeout, "timed out"))
            } else {
                let body = body.filter(|_| hop.with_body);
                self.send_one(&hop.method, &hop.url, &hop.headers, body, left)
            };
            let next = match &result {
                Ok(ex) => self.redirect(&hop, ex, hops, replay_ok),
                Err(_) => Ok(Next::Answer),
            };
            let end = |result, declined| Chain {
                result,
                last: hop.clone(),
                committed,
                declined,
            };
            let next = match next {
                Ok(Next::Follow(next)) => next,
                Ok(Next::Answer) => return end(result, None),
                Ok(Next::Decline(why)) => return end(result, Some(why)),
                Err(f) => return end(Err(f), None),
            };
            let status = result.as_ref().map_or(0, |ex| ex.head.status);
            if !policy::is_idempotent(&hop.method) && !matches!(status, 307 | 308) {
                committed = true;
            }
            hop = next;
            hops += 1;
        }
    }

    /// What follows `ex` under `-L`: the next hop of a redirect, the answer itself, a
    /// redirect declined, or an error for a redirect that cannot be followed.
    fn redirect(
        &self,
        hop: &Hop,
        ex: &Exchange,
        hops: u32,
        replay_ok: bool,
    ) -> Result<Next, Failure> {
        let Some(max) = self.follow else {
            return Ok(Next::Answer);
        };
        let status = ex.head.status;
        let Some(location) = ex.head.value("location").filter(|_| is_redirect(status)) else {
            return Ok(Next::Answer);
        };
        // A 301/302 keeps the method (curl's way), except POST, which becomes a GET below.
        // For any other non-idempotent method that would send it a second time, to a server
        // that may already have processed the first (only 307/308 prove it did not).
        let resent = matches!(status, 301 | 302)
            && hop.method != "POST"
            && !policy::is_idempotent(&hop.method);
        if resent && !replay_ok {
            return Ok(Next::Decline(format!(
                "not followed: {} answered {status} may have been processed, and following it would send {} again; \
                 send an --idempotency-key (or --retry-unsafe) to allow it",
                hop.method, hop.method
            )));
        }
        if hops >= max {
            return Err(Failure::new(
                FailureKind::TooManyRedirects,
                format!("more than {max} redirects (--max-redirs)"),
            ));
        }
        let url = hop.url.join(location).map_err(|e| {
            Failure::new(
                FailureKind::Protocol,
                format!(
                    "bad redirect Location {:?}: {e}",
                    crate::http::redact::url_text(location)
                ),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Failure::new(
                FailureKind::Protocol,
                format!("redirect to unsupported scheme {:?}", url.scheme()),
            ));
        }
        let mut next = Hop { url, ..hop.clone() };
        if next.url.origin() != hop.url.origin() {
            // Credentials are for the host the user named, not wherever it points.
            next.headers
                .retain(|(n, _)| !crate::http::redact::is_credential_header(n));
        }
        // 303, and 301/302 after POST (as curl and browsers do), become a GET without body.
        if status == 303 && hop.method != "HEAD"
            || matches!(status, 301 | 302) && hop.method == "POST"
        {
            next.method = "GET".into();
            next.with_body = false;
            next.headers.retain(|(n, _)| {
                !n.eq_ignore_ascii_case("content-type") && !n.eq_ignore_ascii_case("content-length")
            });
        }
        Ok(Next::Follow(next))
    }

    fn send_one(
        &self,
        method: &str,
        url: &Url,
        headers: &[(String, String)],
        body: Option<&Payload>,
        budget: Option<Duration>,
    ) -> Result<Exchange, Failure> {
        // The connect timeout must fire before the attempt's budget does, or a connection
        // that never opened looks like a request that was sent (and a POST is not replayed).
        let connect = match (self.connect, budget) {
            (Some(c), Some(b)) => Some(c.min(b.mul_f64(0.9))),
            (c, b) => c.or(b.map(|b| b.mul_f64(0.9))),
        };
        // A resolve timeout makes ureq look names up on a thread of its own; an address
        // needs no lookup, so it gets none.
        let literal = matches!(url.host(), Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)));
        let resolve = if literal { None } else { connect };
        let bad = |e: http::Error| {
            Failure::new(
                FailureKind::Protocol,
                format!("cannot build the request: {e}"),
            )
        };
        let mut builder = http::Request::builder().method(method).uri(url.as_str());
        for (n, v) in headers {
            builder = builder.header(n.as_str(), v.as_str());
        }
        let send_body = match body {
            Some(payload) => {
                builder = builder.header("content-length", payload.len().to_string());
                let reader = payload.reader().map_err(|e| {
                    Failure::new(
                        FailureKind::Local,
                        format!("cannot reread the request body: {e}"),
                    )
                })?;
                ureq::SendBody::from_owned_reader(reader)
            }
            None => ureq::SendBody::none(),
        };
        let request = builder.body(send_body).map_err(bad)?;
        let request = self
            .agent
            .configure_request(request)
            .timeout_global(budget)
            .timeout_connect(connect)
            .timeout_resolve(resolve)
            .build();
        self.connected.store(false, Ordering::SeqCst);
        let response = self.agent.run(request).map_err(|e| {
            let f = classify(&e, false);
            if self.connected.load(Ordering::SeqCst) {
                f
            } else {
                let mut f = before_connection(f, url.scheme() == "https");
                if let Some(p) = &self.proxy {
                    // Through a proxy, a connection that never opened may be the proxy's.
                    f.detail = format!("through the proxy {p}: {}", f.detail);
                }
                f
            }
        })?;
        let (parts, body) = response.into_parts();
        let head = Head {
            status: parts.status.as_u16(),
            reason: parts.status.canonical_reason().unwrap_or("").to_string(),
            version: format!("{:?}", parts.version),
            headers: parts
                .headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            url: url.clone(),
        };
        Ok(Exchange { head, body })
    }

    /// Whether a body with these headers is decoded before it is written: only under
    /// `--compressed`, and only gzip (`Content-Encoding: gzip` or `x-gzip`).
    pub fn decodes(&self, head: &Head) -> bool {
        self.decode
            && head.value("content-encoding").is_some_and(|e| {
                matches!(e.trim().to_ascii_lowercase().as_str(), "gzip" | "x-gzip")
            })
    }

    /// Copies the body into `sink` (decoding gzip when `decode`), failing when it exceeds
    /// `limit` bytes, and calls `progress` with the bytes so far. Returns the number of bytes
    /// written. A body cut short is `Truncated` whether or not it was being decoded; only a
    /// body complete on the wire that does not decode is a protocol error. A write error on
    /// the sink is a local failure; a broken pipe ends the copy quietly.
    pub fn read_body(
        body: ureq::Body,
        decode: bool,
        sink: &mut dyn Write,
        limit: Option<u64>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, Failure> {
        let wire = Wire {
            inner: body.into_with_config().limit(u64::MAX).reader(),
            failed: None,
            seen: 0,
        };
        let mut gz;
        let mut raw;
        let reader: &mut dyn ReadWire = if decode {
            gz = flate2::read::MultiGzDecoder::new(wire);
            &mut gz
        } else {
            raw = wire;
            &mut raw
        };
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => return Ok(total),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // An empty body labelled gzip is an empty body, as curl takes it.
                Err(_) if decode && reader.wire().failed.is_none() && reader.wire().seen == 0 => {
                    return Ok(0);
                }
                Err(e) => {
                    return Err(match &reader.wire().failed {
                        Some(wire) => classify_io(wire, true),
                        None if decode => Failure::new(
                            FailureKind::Protocol,
                            format!("the gzip body does not decode: {e}"),
                        ),
                        None => classify_io(&e, true),
                    });
                }
            };
            total += n as u64;
            if let Some(max) = limit.filter(|m| total > *m) {
                return Err(Failure::new(
                    FailureKind::TooLarge,
                    format!("the body is larger than --max-filesize {max} bytes"),
                ));
            }
            match sink.write_all(&buf[..n]) {
                // The reader of stdout went away (`| head`): stop reading, quietly.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(total),
                Err(e) => {
                    return Err(Failure::new(
                        FailureKind::Local,
                        format!("cannot write the output: {e}"),
                    ));
                }
                Ok(()) => progress(total),
            }
        }
    }
}

/// The body as it comes off the connection, remembering the error that broke it (so a
/// decoder's complaint about a cut stream is not taken for a bad encoding).
struct Wire<R> {
    inner: R,
    failed: Option<io::Error>,
    /// Bytes read off the connection.
    seen: u64,
}

impl<R: Read> Read for Wire<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.seen += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                let copy = io::Error::new(e.kind(), e.to_string());
                self.failed = Some(e);
                Err(copy)
            }
            other => other,
        }
    }
}

/// A body reader that can say whether the wire itself failed, and how much it carried.
trait ReadWire: Read {
    fn wire(&self) -> &Wire<ureq::BodyReader<'static>>;
}

impl ReadWire for Wire<ureq::BodyReader<'static>> {
    fn wire(&self) -> &Wire<ureq::BodyReader<'static>> {
        self
    }
}

impl ReadWire for flate2::read::MultiGzDecoder<Wire<ureq::BodyReader<'static>>> {
    fn wire(&self) -> &Wire<ureq::BodyReader<'static>> {
        self.get_ref()
    }
}

/// A failure before the connection was established (TCP, proxy tunnel, TLS handshake):
/// nothing of the request was sent. A stream cut or stalled there is a handshake that did
/// not complete, not a request that may have been processed.
fn before_connection(f: Failure, tls: bool) -> Failure {
    use FailureKind as K;
    match f.kind {
        K::Timeout | K::Stall => Failure::new(
            K::ConnectTimeout,
            format!("the connection was not established in time ({})", f.detail),
        ),
        K::Reset | K::Truncated if tls => Failure::new(
            K::TlsHandshake,
            format!("the server ended the TLS handshake ({})", f.detail),
        ),
        K::Reset | K::Truncated => Failure::new(K::Refused, f.detail),
        _ => f,
    }
}

/// 301, 302, 303, 307 and 308 carry a Location to follow (RFC 9110 section 15.4).
fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Sorts a ureq error into a failure kind, with a short detail for the log. `in_body`: the
/// response had begun, so a broken stream is a body cut short.
fn classify(e: &ureq::Error, in_body: bool) -> Failure {
    use FailureKind as K;
    match e {
        ureq::Error::Timeout(Timeout::Connect | Timeout::Resolve) => {
            Failure::new(K::ConnectTimeout, "no connection within --connect-timeout")
        }
        ureq::Error::Timeout(Timeout::PerRead) => {
            Failure::new(K::Stall, "no byte within --stall-timeout")
        }
        ureq::Error::Timeout(_) => Failure::new(K::Timeout, "the attempt's time ran out"),
        ureq::Error::HostNotFound => Failure::new(K::Dns, "host not found"),
        ureq::Error::ConnectionFailed => Failure::new(K::Refused, "could not connect"),
        ureq::Error::Io(io) => classify_io(io, in_body),
        ureq::Error::Protocol(p) if in_body => {
            Failure::new(K::Truncated, format!("broken framing: {p}"))
        }
        ureq::Error::Protocol(p) => Failure::new(K::Protocol, format!("invalid response: {p}")),
        ureq::Error::Tls(t) => Failure::new(K::TlsHandshake, *t),
        ureq::Error::Rustls(r) => classify_tls(r),
        // A proxy that is down or overloaded (5xx, 408, 429, silence) may not be next time,
        // and the target never saw the request; one that refuses the tunnel (403, 407 for
        // credentials, any other answer) will refuse it again.
        ureq::Error::ConnectProxyFailed(why) => match proxy_status(why) {
            Some(407) => Failure::new(
                K::Protocol,
                format!("the proxy wants authentication: {why}"),
            ),
            Some(s) if !(s >= 500 || s == 408 || s == 429) => {
                Failure::new(K::Protocol, format!("the proxy refused the tunnel: {why}"))
            }
            _ => Failure::new(K::ProxyFailed, why.clone()),
        },
        ureq::Error::TooManyRedirects => Failure::new(K::TooManyRedirects, ""),
        ureq::Error::BodyExceedsLimit(_) => Failure::new(K::TooLarge, ""),
        other => Failure::new(K::Protocol, other.to_string()),
    }
}

/// The status in ureq's "proxy server responded 403/Forbidden", if any.
fn proxy_status(why: &str) -> Option<u16> {
    let (_, rest) = why.split_once("responded ")?;
    rest.get(..3)?.parse().ok()
}

/// A certificate that fails verification is final; any other TLS failure is a handshake
/// that did not complete, so nothing was sent.
///
/// A peer that is not speaking TLS (plain HTTP on an https port), one that refuses the
/// handshake with an alert (a client certificate demanded, no common version or cipher) or
/// breaks the protocol will do the same on a second try: `TlsRejected`, never retried.
fn classify_tls(r: &rustls::Error) -> Failure {
    use rustls::Error as E;
    match r {
        E::InvalidCertificate(c) => Failure::new(FailureKind::TlsCertificate, certificate_text(c)),
        E::NoCertificatesPresented => Failure::new(FailureKind::TlsCertificate, r.to_string()),
        E::InvalidMessage(_)
        | E::AlertReceived(_)
        | E::PeerIncompatible(_)
        | E::PeerMisbehaved(_)
        | E::InappropriateMessage { .. }
        | E::InappropriateHandshakeMessage { .. }
        | E::NoApplicationProtocol
        | E::UnsupportedNameType => Failure::new(FailureKind::TlsRejected, r.to_string()),
        _ => Failure::new(FailureKind::TlsHandshake, r.to_string()),
    }
}

/// Why a certificate was rejected, in words a user can act on.
fn certificate_text(c: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    let what = match c {
        C::UnknownIssuer | C::BadSignature => {
            "not signed by a trusted authority (self-signed? trust it with --cacert FILE)"
        }
        C::Expired | C::ExpiredContext { .. } => "expired",
        C::NotValidYet | C::NotValidYetContext { .. } => "not valid yet (check the clock)",
        C::NotValidForName | C::NotValidForNameContext { .. } => "not valid for this host name",
        C::Revoked => "revoked",
        C::Other(o) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
            "a CA certificate used as the server's own, which webpki refuses (make it with basicConstraints CA:FALSE, or use a separate CA)"
        }
        _ => return format!("invalid certificate: {c}"),
    };
    format!("the server's certificate is {what}")
}

/// Sorts an I/O error; its inner value may be a ureq or rustls error.
fn classify_io(e: &io::Error, in_body: bool) -> Failure {
    use FailureKind as K;
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>()) {
        return classify(inner, in_body);
    }
    if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return classify_tls(tls);
    }
    let detail = e.to_string();
    let kind = match e.kind() {
        io::ErrorKind::ConnectionRefused => K::Refused,
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => K::Timeout,
        io::ErrorKind::UnexpectedEof if in_body => K::Truncated,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => K::Reset,
        io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable => K::Refused,
        _ => {
            let msg = &detail;
            // DNS failure has no stable ErrorKind; it shows only in the message.
            if msg.contains("lookup") || msg.contains("resolve") || msg.contains("Name or service")
            {
                K::Dns
            } else if in_body {
                K::Truncated
            } else {
                K::Reset
            }
        }
    };
    Failure::new(kind, detail)
}
