//! Building the ureq agent a run sends with: the proxy (chosen by `proxy`, checked here),
//! the TLS settings (`tls`), the connect and stall timeouts, ureq's own redirects, status
//! errors and automatic headers off, the buffer sizes, and the connector and resolver that
//! `network` puts in (noting when the connection, TLS included, is up). Everything here
//! that can fail is a usage error, found before a byte is sent.

use crate::config::{Family, RequestConfig, Timeouts, UsageError};
use crate::http::network::{self, Watch};
use crate::http::tap::Tap;
use crate::http::timing::Probe;
use crate::http::{headers::Automatic, proxy, tls};
use crate::redact;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use ureq::config::{AutoHeaderValue, Config, IpFamily};
use ureq::tls::TlsConfig;
use ureq::{Agent, Proxy};
use url::Url;

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

/// How many origins' idle connections one pooled agent keeps at most (a batch's transport
/// serves one origin, and the origins its redirects lead to).
const POOL_ORIGINS: usize = 4;

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

/// Builds the agent for a run's requests to `url`'s origin (its scheme and host choose the
/// proxy and whether TLS may happen), keeping at most `pool` idle connections per origin
/// (None: none, each request connects anew; see [`agent_config`]). Fails only on a bad
/// proxy or `--cacert` (a usage error).
pub fn build(
    req: &RequestConfig,
    url: &url::Url,
    timeouts: &Timeouts,
    pool: Option<usize>,
) -> Result<Built, UsageError> {
    // A request over a Unix socket goes to the socket, never through a proxy.
    let chosen = chosen_proxy(req, url).filter(|_| req.network.unix_socket.is_none());
    let proxy = chosen.as_deref().map(parse_proxy).transpose()?;
    let tls = tls::config(req, url, proxy.as_ref())?;
    let config = agent_config(req, timeouts, proxy, tls, pool);
    let watch = Watch {
        connected: Arc::new(AtomicBool::new(false)),
        probe: Arc::new(Probe::default()),
        tap: Arc::new(Tap::default()),
    };
    Ok(Built {
        agent: network::agent(config, &req.network, &watch),
        connected: watch.connected,
        proxy: chosen.as_deref().map(redact::url_text),
        probe: watch.probe,
        tap: watch.tap,
    })
}

/// The agent's configuration. ureq follows no redirect (see `redirect`), takes no status
/// for an error, and adds no header of its own but the User-Agent of a CONNECT (the
/// transport adds the others itself: see `headers`). Idle connections are kept only when
/// `pool` says how many per origin (a batch's transports: at most `--parallel-max-host`),
/// and [`POOL_ORIGINS`] times that in all; a run of one URL keeps none, and every attempt
/// opens its own connection. ureq lends a kept connection only to a request whose buffer
/// sizes are the agent's (see `Transport::send`), after checking that the server has not
/// closed it (`connection::Stream::is_open`).
fn agent_config(
    req: &RequestConfig,
    timeouts: &Timeouts,
    proxy: Option<Proxy>,
    tls: TlsConfig,
    pool: Option<usize>,
) -> Config {
    let per_origin = pool.map_or(0, |n| n.max(1));
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
        .max_idle_connections(per_origin.saturating_mul(POOL_ORIGINS))
        .max_idle_connections_per_host(per_origin)
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

/// The proxy for `url` (see `proxy::choose`), as a URL: "host:port", as curl takes it, is
/// an http proxy.
fn chosen_proxy(req: &RequestConfig, url: &url::Url) -> Option<String> {
    proxy::choose(
        url.scheme(),
        url.host_str().unwrap_or(""),
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
    if let Some(why) = crate::config::hostless(p) {
        return Err(bad_proxy(&format!("{:?}", redact::typed_text(p)), why));
    }
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
}
