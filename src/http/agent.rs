//! Building the ureq agent a run sends with: the proxy (chosen by `proxy`, checked here),
//! the certificates trusted (`--cacert`, the system's store, or none checked under `-k`),
//! the connect and stall timeouts, ureq's own redirects, status errors and automatic
//! headers off, and a connector that notes when the connection (TLS included) is up.
//! Everything here that can fail is a usage error, found before a byte is sent.

use crate::config::protocols::TlsVersions;
use crate::config::{Family, RequestConfig, Timeouts, UsageError};
use crate::http::splice::Tap;
use crate::http::timing::{self, Probe};
use crate::http::{connection, headers::Automatic, network, proxy};
use crate::redact;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use ureq::config::{AutoHeaderValue, Config, IpFamily};
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::unversioned::transport::{ConnectionDetails, Connector, Transport};
use ureq::{Agent, Proxy};
use url::Url;

/// The largest `--cacert` file read, in bytes: a bundle of every public CA is about
/// 200 KB, and `/dev/zero` must not fill the memory.
const MAX_CACERT: u64 = 16 << 20;

/// The size of each of a connection's two buffers, in bytes (ureq's default). The input
/// buffer holds the response head whole, and is the limit on its size: a head that does not
/// fit is refused as too large (see `connection::Bounded`). ureq's own limit is lifted to the
/// buffer's size, because ureq checks it against all that is buffered when it has just read
/// an interim head (`100 Continue`, `103 Early Hints`): with the final head and the start of
/// the body in the same read, a valid answer was refused as a head too large. A body read
/// through ureq (chunked, over TLS, to /dev/null) comes off the socket in pieces of this
/// size, which `receive` copies out 64 KiB at a time: at 64 KiB + 1 KiB, every 64 KiB
/// written to the output would be followed by a write of 1 KiB (twice the write calls on a
/// 1 GiB body, measured). The output buffer keeps it for a request with a body (the body
/// goes out in pieces of it) or through a proxy (the tunnel's request passes through it).
const FULL_BUFFER: usize = 128 * 1024;

/// The output buffer of a bare request whose whole head fits in it, in bytes. ureq writes
/// the head a line at a time and refuses a line longer than the buffer; a head that fits
/// whole has no such line. ureq zero-fills the buffer when the request is first written, a
/// byte at a time at `opt-level = "z"` (about 6 instructions a byte): 128 KiB of it was 15%
/// of the instructions of a start-up and a small GET.
const BARE_OUTPUT: usize = 8 * 1024;

/// What a head adds around the parts [`output_buffer`] counts, in bytes, rounded up: the
/// spaces and ` HTTP/1.1` of the request line, `: ` and CRLF per header, ureq's `host:`
/// header (its value, the URL's host and port, is counted with the URL), the blank line.
const HEAD_FRAMING: usize = 256;

/// The output buffer size, in bytes, for `request`. A bare request (`bare`: no body, no
/// proxy) whose head surely fits in [`BARE_OUTPUT`] gets that: the method, the URL twice
/// (for the request line and the Host header), each header's name and value with their
/// framing. Any other request keeps ureq's default, so every head sent today still goes.
pub(crate) fn output_buffer<B>(request: &ureq::http::Request<B>, bare: bool) -> usize {
    if !bare {
        return FULL_BUFFER;
    }
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    let uri = request.uri().to_string().len();
    let head = request.method().as_str().len() + 2 * uri + headers + HEAD_FRAMING;
    if head <= BARE_OUTPUT {
        BARE_OUTPUT
    } else {
        FULL_BUFFER
    }
}

/// The agent, and how to tell that its connection is up.
pub struct Built {
    /// The agent, one per run.
    pub agent: Agent,
    /// Set by the connector once the connection (TLS included) is up; cleared by the
    /// transport before each request.
    pub connected: Arc<AtomicBool>,
    /// The proxy in use, secrets masked, to name it when it is the one that failed.
    pub proxy: Option<String>,
    /// When each step of the request in flight happened (see `timing`).
    pub probe: Arc<Probe>,
    /// The plain socket of the request in flight, for its body to be spliced.
    pub(crate) tap: Arc<Tap>,
}

/// Builds the agent for a run's requests. Fails only on a bad proxy or `--cacert` (a usage
/// error).
pub fn build(req: &RequestConfig, timeouts: &Timeouts) -> Result<Built, UsageError> {
    // A request over a Unix socket goes to the socket, never through a proxy.
    let chosen = chosen_proxy(req).filter(|_| req.network.unix_socket.is_none());
    let proxy = chosen.as_deref().map(parse_proxy).transpose()?;
    let tls = tls_config(req, proxy.as_ref())?;
    let config = agent_config(req, timeouts, proxy, tls);
    let connected = Arc::new(AtomicBool::new(false));
    let probe = Arc::new(Probe::default());
    let tap = Arc::new(Tap::default());
    let chain = Box::new(timing::connector(probe.clone(), tap.clone()));
    let connector = Watched {
        inner: network::Connect::new(&req.network, chain, tap.clone()),
        connected: connected.clone(),
        depth: AtomicUsize::new(0),
        probe: probe.clone(),
        tap: tap.clone(),
    };
    let resolver = timing::TimedResolver::new(network::Directed::new(&req.network), probe.clone());
    Ok(Built {
        agent: Agent::with_parts(config, connector, resolver),
        connected,
        proxy: chosen.as_deref().map(redact::url_text),
        probe,
        tap,
    })
}

/// The agent's configuration. ureq follows no redirect (see `redirect`), takes no status
/// for an error, and adds no header of its own but the User-Agent of a CONNECT (the
/// transport adds the others itself: see `headers`). Idle connections are not kept: every
/// attempt opens its own.
fn agent_config(
    req: &RequestConfig,
    timeouts: &Timeouts,
    proxy: Option<Proxy>,
    tls: TlsConfig,
) -> Config {
    let tunnel_agent = match Automatic::new(req).tunnel_user_agent() {
        Some(name) => AutoHeaderValue::Provided(Arc::new(name.to_string())),
        None => AutoHeaderValue::None,
    };
    Agent::config_builder()
        .proxy(proxy)
        .http_status_as_error(false)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .allow_non_standard_methods(true)
        .accept_encoding(AutoHeaderValue::None)
        .user_agent(tunnel_agent)
        .accept(AutoHeaderValue::None)
        .tls_config(tls)
        .timeout_connect(timeouts.connect)
        .timeout_resolve(None)
        // Silence while sending is silence too: each write to the socket must see the
        // kernel take a byte within the stall timeout (SO_SNDTIMEO, restarted by every
        // write that made progress), so an upload to a server that stopped reading stalls.
        .timeout_per_read(timeouts.stall)
        .timeout_per_write(timeouts.stall)
        .max_idle_connections(0)
        .input_buffer_size(FULL_BUFFER)
        .max_response_header_size(FULL_BUFFER)
        .output_buffer_size(FULL_BUFFER)
        .ip_family(match req.family {
            Family::Any => IpFamily::Any,
            Family::V4 => IpFamily::Ipv4Only,
            Family::V6 => IpFamily::Ipv6Only,
        })
        .build()
}

/// The proxy for the run's URL (see `proxy::choose`), as a URL: "host:port", as curl
/// takes it, is an http proxy.
fn chosen_proxy(req: &RequestConfig) -> Option<String> {
    proxy::choose(
        req.url.scheme(),
        req.url.host_str().unwrap_or(""),
        req.proxy.as_deref(),
        req.noproxy.as_deref(),
        |name| std::env::var(name).ok(),
    )
    .map(|p| {
        if p.contains("://") {
            p
        } else {
            format!("http://{p}")
        }
    })
}

/// The usage error for a proxy that cannot be used: `named` is how the message names it
/// (masked), `why` says what is wrong.
fn bad_proxy(named: &str, why: &str) -> UsageError {
    UsageError(format!(
        "invalid proxy {named} ({why}): expected http://HOST:PORT, https://, socks4:// or socks5://"
    ))
}

/// A proxy URL must parse, with a supported scheme, a host and a usable port: a typo is a
/// usage error, not a connection refused to be retried six times.
fn parse_proxy(p: &str) -> Result<Proxy, UsageError> {
    let quoted = format!("{:?}", redact::url_text(p));
    match Url::parse(p) {
        Ok(u)
            if !matches!(
                u.scheme(),
                "http" | "https" | "socks4" | "socks4a" | "socks5" | "socks5h"
            ) =>
        {
            Err(bad_proxy(&quoted, "unsupported scheme"))
        }
        Ok(u) if u.host_str().is_none_or(str::is_empty) => Err(bad_proxy(&quoted, "no host")),
        // ureq's own complaint names the proxy unquoted.
        Ok(_) => Proxy::new(p).map_err(|e| bad_proxy(&redact::url_text(p), &e.to_string())),
        Err(e) => Err(bad_proxy(&quoted, &e.to_string())),
    }
}

/// The TLS settings: no verification under `-k`; else the `--cacert` certificates, with the
/// system's store too when TLS may happen at all (an https URL, a redirect, which may lead
/// to one, or an https proxy): a plain http request skips reading the store.
fn tls_config(req: &RequestConfig, proxy: Option<&Proxy>) -> Result<TlsConfig, UsageError> {
    let client = network::client_cert(req.network.client_cert.as_ref())?;
    let extra = extra_certs(req.cacert.as_deref())?;
    let versions = versions_provider(req.protocols.tls);
    let builder = || {
        let b = TlsConfig::builder().client_cert(client.clone());
        match &versions {
            Some(p) => b.unversioned_rustls_crypto_provider(p.clone()),
            None => b,
        }
    };
    let tls_possible = req.url.scheme() == "https"
        || req.follow.is_some()
        || proxy.is_some_and(|p| p.protocol() == ureq::ProxyProtocol::Https);
    Ok(if req.insecure {
        builder().disable_verification(true).build()
    } else if tls_possible {
        builder().root_certs(root_certs(extra)).build()
    } else {
        builder()
            .root_certs(RootCerts::new_with_certs(&extra))
            .build()
    })
}

/// A crypto provider narrowed to the TLS versions asked for (`--tlsv1.3`, `--tls-max 1.2`),
/// or `None` for rustls's default (1.2 and 1.3). rustls offers only the versions its
/// provider has cipher suites for, so keeping only one version's suites keeps only it.
fn versions_provider(tls: TlsVersions) -> Option<Arc<rustls::crypto::CryptoProvider>> {
    let keep = match (tls.min_1_3, tls.max_1_2) {
        (true, _) => &rustls::version::TLS13,
        (false, true) => &rustls::version::TLS12,
        (false, false) => return None,
    };
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites.retain(|s| s.version() == keep);
    Some(Arc::new(provider))
}

/// The certificates of a PEM text (other blocks, and blocks that do not parse, left out).
pub(crate) fn pem_certificates(pem: &[u8]) -> Vec<Certificate<'static>> {
    ureq::tls::parse_pem(pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect()
}

/// The certificates of the `--cacert` file, at most [`MAX_CACERT`] bytes of PEM (a usage
/// error if it cannot be read, is larger, or holds none).
fn extra_certs(cacert: Option<&Path>) -> Result<Vec<Certificate<'static>>, UsageError> {
    let Some(path) = cacert else {
        return Ok(Vec::new());
    };
    let pem = std::fs::File::open(path)
        .and_then(|f| crate::files::read_bounded(f, MAX_CACERT))
        .map_err(|e| UsageError(format!("cannot read --cacert {}: {e}", path.display())))?
        .ok_or_else(|| {
            UsageError(format!(
                "--cacert {} is larger than 16 MiB: expected a PEM file of certificates",
                path.display()
            ))
        })?;
    let certs = pem_certificates(&pem);
    if certs.is_empty() {
        return Err(UsageError(format!(
            "--cacert {} holds no PEM certificate: expected one or more -----BEGIN CERTIFICATE----- blocks",
            path.display()
        )));
    }
    Ok(certs)
}

/// The system's trusted certificates plus the extra ones. Reading the system store costs a
/// few milliseconds, so it is done only when a TLS connection may happen. Without a system
/// store (no `SSL_CERT_FILE`, `SSL_CERT_DIR` or `/etc/ssl/certs`), only `--cacert` is
/// trusted, as with curl: no copy of the public roots is built in (it would cost 64 KB of
/// binary, and go stale).
fn root_certs(extra: Vec<Certificate<'static>>) -> RootCerts {
    let mut certs: Vec<Certificate<'static>> = rustls_native_certs::load_native_certs()
        .certs
        .iter()
        .map(|c| Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    certs.extend(extra);
    RootCerts::Specific(Arc::new(certs))
}

/// ureq's own connector chain (proxy, TCP, TLS, with `timing`'s probes), noting whether the connection was
/// established. A failure before that (a TLS handshake cut short or stalled, a proxy
/// tunnel refused) proves that no byte of the HTTP request was sent.
///
/// Through a CONNECT proxy ureq calls the whole chain again, from inside it, to reach the
/// proxy: only the outermost call's success means the tunnel to the target is up.
#[derive(Debug)]
struct Watched {
    inner: network::Connect,
    connected: Arc<AtomicBool>,
    depth: AtomicUsize,
    probe: Arc<Probe>,
    /// Forgets the socket when TLS runs over it (to the server or to a proxy): its bytes
    /// are records, not the body, and never spliced.
    tap: Arc<Tap>,
}

impl Connector<()> for Watched {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        self.depth.fetch_add(1, Ordering::SeqCst);
        let out = self.inner.connect(details, chained);
        let outermost = self.depth.fetch_sub(1, Ordering::SeqCst) == 1;
        if let Ok(Some(t)) = &out
            && t.is_tls()
        {
            self.tap.forget();
        }
        let out = out.map(|t| {
            t.map(|t| Box::new(connection::Bounded::new(t, self.tap.clone())) as Box<dyn Transport>)
        });
        if outermost && matches!(out, Ok(Some(_))) {
            self.connected.store(true, Ordering::SeqCst);
            self.probe.ready();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(p: &str) -> String {
        match parse_proxy(p) {
            Ok(_) => String::new(),
            Err(e) => e.0,
        }
    }

    #[test]
    fn proxies_that_cannot_be_used_are_usage_errors() {
        assert_eq!(message("http://proxy.test:3128"), "");
        assert_eq!(message("socks5h://proxy.test:1080"), "");
        assert!(
            message("ftp://proxy.test:21").contains("(unsupported scheme)"),
            "{}",
            message("ftp://proxy.test:21")
        );
        let typo = message("http://u:s3cret@proxy.test:99999");
        assert!(typo.starts_with("invalid proxy \"http://"), "{typo}");
        assert!(!typo.contains("s3cret"), "{typo}");
    }

    fn get(uri: &str, headers: &[(&str, &str)]) -> ureq::http::Request<()> {
        let mut b = ureq::http::Request::builder().method("GET").uri(uri);
        for (n, v) in headers {
            b = b.header(*n, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn only_a_bare_request_with_a_small_head_gets_the_small_output_buffer() {
        let small = get("http://h.test/x", &[("x-a", "1")]);
        assert_eq!(output_buffer(&small, true), BARE_OUTPUT);
        assert_eq!(
            output_buffer(&small, false),
            FULL_BUFFER,
            "a body or a proxy"
        );
        let line = "v".repeat(BARE_OUTPUT);
        assert_eq!(
            output_buffer(&get("http://h.test/x", &[("x-long", &line)]), true),
            FULL_BUFFER
        );
        let url = format!("http://h.test/{}", "p".repeat(BARE_OUTPUT / 2));
        assert_eq!(output_buffer(&get(&url, &[]), true), FULL_BUFFER);
        let many: Vec<(String, String)> = (0..300)
            .map(|i| (format!("x-h{i}"), "v".repeat(30)))
            .collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(
            output_buffer(&get("http://h.test/", &many), true),
            FULL_BUFFER
        );
    }

    #[test]
    fn a_cacert_must_hold_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let err = extra_certs(Some(&path)).map(|c| c.len()).unwrap_err();
        assert!(err.0.contains("holds no PEM certificate"), "{}", err.0);
        let missing = extra_certs(Some(&dir.path().join("none"))).map(|c| c.len());
        assert!(missing.unwrap_err().0.starts_with("cannot read --cacert"));
        assert_eq!(extra_certs(None).map(|c| c.len()).ok(), Some(0));
    }
}
