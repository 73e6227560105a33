//! How the agent's connections are made, and one of the two walls around ureq's
//! unversioned API (the other is `connection`, the connections themselves): nothing else in
//! the crate names `ureq::unversioned` or an `unversioned_` setting. Here: the agent put
//! together from its parts ([`agent`]); the resolver that applies `--resolve` and
//! `--connect-to` (the URL's name still goes to TLS and the Host header: only the address
//! changes), timed for `-w`; the connector chain (SOCKS, CONNECT proxy, our TCP, rustls),
//! with the probes that note when TCP and TLS were up, or the `--unix-socket` connector in
//! its place (TLS over it for https); the watch that says when the whole connection is up;
//! and the TLS builder with its crypto provider (see `tls`).

use crate::config::network::{ConnectTo, NetworkConfig, Resolve};
use crate::http::connection::{self, peer};
use crate::http::tap::Tap;
use crate::http::timing::Probe;
use crate::platform::UnixStream;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use ureq::Agent;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::tls::{ClientCert, TlsConfig, TlsConfigBuilder};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    ConnectProxyConnector, ConnectionDetails, Connector, NextTimeout, RustlsConnector,
    SocksConnector, Transport,
};

/// What the agent's connector tells the transport: set once the connection (TLS included)
/// is up, when each step happened, and the plain socket of the request in flight.
pub(crate) struct Watch {
    /// Set by the connector once the connection (TLS included) is up; cleared by the
    /// transport before each request.
    pub(crate) connected: Arc<AtomicBool>,
    /// When each step of the request in flight happened.
    pub(crate) probe: Arc<Probe>,
    /// The plain socket of the request in flight, for its body to be spliced.
    pub(crate) tap: Arc<Tap>,
}

/// The agent: `config`, our resolver (`--resolve`, `--connect-to`, timed), and our
/// connector chain (or the `--unix-socket`), reporting to `watch`.
pub(crate) fn agent(config: Config, net: &NetworkConfig, watch: &Watch) -> Agent {
    let chain = Box::new(chain(watch.probe.clone(), watch.tap.clone()));
    let connector = Watched {
        inner: Connect::new(net, chain, watch.tap.clone()),
        connected: watch.connected.clone(),
        depth: AtomicUsize::new(0),
        probe: watch.probe.clone(),
        tap: watch.tap.clone(),
    };
    let resolver = TimedResolver {
        inner: Directed::new(net),
        probe: watch.probe.clone(),
    };
    Agent::with_parts(config, connector, resolver)
}

/// A TLS builder with the client certificate `client` and, when given, the crypto provider
/// `versions` (narrowed to some TLS versions: see `tls`), set through ureq's unversioned
/// API.
pub(crate) fn tls_builder(
    client: Option<ClientCert>,
    versions: Option<Arc<rustls::crypto::CryptoProvider>>,
) -> TlsConfigBuilder {
    let b = TlsConfig::builder().client_cert(client);
    match versions {
        Some(p) => b.unversioned_rustls_crypto_provider(p),
        None => b,
    }
}

/// Where a connection to a host and port goes.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    /// These addresses (from `--resolve`), in order.
    Addrs(Vec<SocketAddr>),
    /// Look this name up; None: the URL's own.
    Lookup(Option<(String, u16)>),
    /// A name of loopback (see [`is_localhost`]): 127.0.0.1 and ::1 on this port, nothing
    /// looked up.
    Loopback(u16),
}

/// Whether `host` is `localhost` or a name under it, which are loopback whatever the
/// system's resolver says (RFC 6761 section 6.3, as curl does): a static binary in an
/// empty root, with no /etc/hosts, would otherwise ask a DNS server on 127.0.0.1:53 and
/// wait for its timeout.
fn is_localhost(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// The route for `host` (lower case, no brackets) and `port`: the first `--connect-to`
/// that matches moves the connection, then the last `--resolve` for the (new) host and
/// port gives the addresses, a `*` entry only when no named one does.
fn route(resolve: &[Resolve], connect_to: &[ConnectTo], host: &str, port: u16) -> Route {
    let moved = connect_to.iter().find(|c| {
        c.from_host.as_deref().is_none_or(|h| h == host) && c.from_port.is_none_or(|p| p == port)
    });
    let (to_host, to_port) = match moved {
        Some(c) => (
            c.to_host.as_deref().unwrap_or(host),
            c.to_port.unwrap_or(port),
        ),
        None => (host, port),
    };
    let entry = |name: &str| {
        resolve
            .iter()
            .rev()
            .find(|r| r.host == name && r.port == to_port)
    };
    if let Some(r) = entry(to_host).or_else(|| entry("*")) {
        return Route::Addrs(
            r.addrs
                .iter()
                .map(|a| SocketAddr::new(*a, to_port))
                .collect(),
        );
    }
    if is_localhost(to_host) {
        return Route::Loopback(to_port);
    }
    match moved {
        Some(_) if (to_host, to_port) != (host, port) => {
            Route::Lookup(Some((to_host.to_string(), to_port)))
        }
        _ => Route::Lookup(None),
    }
}

/// The port a URI goes to: its own, else its scheme's.
fn uri_port(uri: &Uri) -> Option<u16> {
    let given = uri.authority().and_then(|a| a.port_u16());
    given.or(match uri.scheme_str()? {
        "http" => Some(80),
        "https" => Some(443),
        "socks4" | "socks4a" | "socks5" | "socks5h" => Some(1080),
        _ => None,
    })
}

/// The resolver of a run: `--resolve` and `--connect-to` first, then the system's.
/// Under `--unix-socket` nothing is looked up (the connector ignores the address).
#[derive(Debug, Default)]
struct Directed {
    resolve: Vec<Resolve>,
    connect_to: Vec<ConnectTo>,
    unix: bool,
    inner: DefaultResolver,
}

impl Directed {
    /// The resolver for these settings.
    fn new(net: &NetworkConfig) -> Self {
        Directed {
            resolve: net.resolve.clone(),
            connect_to: net.connect_to.clone(),
            unix: net.unix_socket.is_some(),
            inner: DefaultResolver::default(),
        }
    }

    /// `addrs` as ureq holds them (at most 16).
    fn addresses(&self, addrs: impl IntoIterator<Item = SocketAddr>) -> ResolvedSocketAddrs {
        let mut out = self.empty();
        for a in addrs.into_iter().take(16) {
            out.push(a);
        }
        out
    }
}

impl Resolver for Directed {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let (Some(authority), Some(port)) = (uri.authority(), uri_port(uri)) else {
            return self.inner.resolve(uri, config, timeout);
        };
        if self.unix {
            return Ok(self.addresses([SocketAddr::new(IpAddr::from([127, 0, 0, 1]), port)]));
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        match route(
            &self.resolve,
            &self.connect_to,
            &host.to_ascii_lowercase(),
            port,
        ) {
            Route::Addrs(addrs) => Ok(self.addresses(addrs)),
            Route::Loopback(port) => {
                let both = [
                    IpAddr::from([127, 0, 0, 1]),
                    IpAddr::from(Ipv6Addr::LOCALHOST),
                ]
                .map(|ip| SocketAddr::new(ip, port));
                Ok(self.addresses(config.ip_family().keep_wanted(both.into_iter())))
            }
            Route::Lookup(None) => self.inner.resolve(uri, config, timeout),
            Route::Lookup(Some((host, port))) => {
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host
                };
                let scheme = uri.scheme_str().unwrap_or("http");
                let moved: Uri = format!("{scheme}://{host}:{port}/")
                    .parse()
                    .map_err(|_| ureq::Error::HostNotFound)?;
                self.inner.resolve(&moved, config, timeout)
            }
        }
    }
}

/// ureq's connector chain, or, under `--unix-socket`, the socket (with TLS over it for
/// an https URL). No proxy is used with a socket.
#[derive(Debug)]
struct Connect {
    socket: Option<PathBuf>,
    chain: Box<dyn Connector<(), Out = Box<dyn Transport>>>,
    tls: RustlsConnector,
    tap: Arc<Tap>,
}

impl Connect {
    /// The connector for these settings: `chain` (ureq's, with the timing probes) unless
    /// a Unix socket is named; `tap` learns each plain socket opened.
    fn new(
        net: &NetworkConfig,
        chain: Box<dyn Connector<(), Out = Box<dyn Transport>>>,
        tap: Arc<Tap>,
    ) -> Self {
        Connect {
            socket: net.unix_socket.clone(),
            chain,
            tls: RustlsConnector::default(),
            tap,
        }
    }
}

impl Connector<()> for Connect {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(path) = &self.socket else {
            return self.chain.connect(details, chained);
        };
        let stream = UnixStream::connect(path).map_err(|e| unreachable_socket(path, &e))?;
        let local = connection::Stream::new(stream, details.config, &self.tap);
        (details.register_shutdown)(local.shutdown_handle())?;
        let boxed: Box<dyn Transport> = Box::new(local);
        let wrapped = self.tls.connect(details, Some(boxed))?;
        Ok(wrapped.map(|t| Box::new(t) as Box<dyn Transport>))
    }
}

/// A socket that cannot be reached: absent, refusing, not a socket, not allowed. Nothing
/// was sent, so it is a refused connection, retried as one.
fn unreachable_socket(path: &Path, e: &io::Error) -> ureq::Error {
    ureq::Error::Io(io::Error::new(
        io::ErrorKind::ConnectionRefused,
        format!("cannot connect to the Unix socket {}: {e}", path.display()),
    ))
}

/// The connector chain of ureq's default one (SOCKS, CONNECT proxy, TCP, rustls), with a
/// probe after TCP and one after TLS. The TCP connector is ours (`connection::Tcp`), telling
/// `tap` of each socket it opens.
fn chain(probe: Arc<Probe>, tap: Arc<Tap>) -> impl Connector<(), Out = Box<dyn Transport>> {
    ().chain(SocksConnector::default())
        .chain(ConnectProxyConnector::default())
        .chain(connection::Tcp::new(tap))
        .chain(TcpProbe(probe.clone()))
        .chain(RustlsConnector::default())
        .chain(TlsProbe(probe))
}

/// Notes the first TCP connection of a hop (through a proxy, the proxy's) and its peer.
#[derive(Debug)]
struct TcpProbe(Arc<Probe>);

impl<In: Transport> Connector<In> for TcpProbe {
    type Out = In;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<In>, ureq::Error> {
        if let Some(t) = &chained {
            self.0.tcp_up(|| peer(&format!("{t:?}")));
        }
        Ok(chained)
    }
}

/// Notes the first TLS handshake of a hop; hands the transport on boxed.
#[derive(Debug)]
struct TlsProbe(Arc<Probe>);

impl<In: Transport> Connector<In> for TlsProbe {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(t) = &chained
            && t.is_tls()
        {
            self.0.secured();
        }
        Ok(chained.map(|t| Box::new(t) as Box<dyn Transport>))
    }
}

/// A resolver (`--resolve`, `--connect-to`, else the system's), noting when the lookup
/// was done.
#[derive(Debug)]
struct TimedResolver<R> {
    inner: R,
    probe: Arc<Probe>,
}

impl<R: Resolver> Resolver for TimedResolver<R> {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let found = self.inner.resolve(uri, config, timeout);
        self.probe.looked_up();
        found
    }
}

/// The connector chain (or the Unix socket), noting whether the connection was
/// established. A failure before that (a TLS handshake cut short or stalled, a proxy
/// tunnel refused) proves that no byte of the HTTP request was sent.
///
/// Through a CONNECT proxy ureq calls the whole chain again, from inside it, to reach the
/// proxy: only the outermost call's success means the tunnel to the target is up.
#[derive(Debug)]
struct Watched {
    inner: Connect,
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
            t.map(|t| {
                let reuse = connection::Reuse {
                    connected: self.connected.clone(),
                    probe: self.probe.clone(),
                };
                Box::new(connection::Bounded::new(t, self.tap.clone(), reuse)) as Box<dyn Transport>
            })
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

    fn resolve(host: &str, port: u16, addr: &str) -> Resolve {
        Resolve {
            host: host.into(),
            port,
            addrs: vec![addr.parse().unwrap()],
        }
    }

    fn to(from: (Option<&str>, Option<u16>), to: (Option<&str>, Option<u16>)) -> ConnectTo {
        ConnectTo {
            from_host: from.0.map(str::to_string),
            from_port: from.1,
            to_host: to.0.map(str::to_string),
            to_port: to.1,
        }
    }

    #[test]
    fn resolve_entries_give_the_addresses() {
        let r = [
            resolve("a.test", 80, "10.0.0.1"),
            resolve("*", 80, "10.0.0.9"),
        ];
        let at = |a: &str, p| Route::Addrs(vec![SocketAddr::new(a.parse().unwrap(), p)]);
        assert_eq!(route(&r, &[], "a.test", 80), at("10.0.0.1", 80));
        assert_eq!(
            route(&r, &[], "b.test", 80),
            at("10.0.0.9", 80),
            "the wildcard"
        );
        assert_eq!(
            route(&r, &[], "a.test", 81),
            Route::Lookup(None),
            "another port"
        );
        let later = [
            resolve("a.test", 80, "10.0.0.1"),
            resolve("a.test", 80, "10.0.0.2"),
        ];
        assert_eq!(route(&later, &[], "a.test", 80), at("10.0.0.2", 80));
    }

    #[test]
    fn connect_to_moves_the_connection_first() {
        let c = [
            to(
                (Some("a.test"), Some(443)),
                (Some("node1.test"), Some(8443)),
            ),
            to((None, Some(80)), (None, Some(8080))),
        ];
        let moved = |h: &str, p| Route::Lookup(Some((h.to_string(), p)));
        assert_eq!(route(&[], &c, "a.test", 443), moved("node1.test", 8443));
        assert_eq!(route(&[], &c, "b.test", 80), moved("b.test", 8080));
        assert_eq!(route(&[], &c, "b.test", 443), Route::Lookup(None));
        let r = [resolve("node1.test", 8443, "127.0.0.1")];
        assert_eq!(
            route(&r, &c, "a.test", 443),
            Route::Addrs(vec![SocketAddr::from(([127, 0, 0, 1], 8443))]),
            "--resolve applies to where --connect-to leads"
        );
        let same = [to((None, None), (None, None))];
        assert_eq!(route(&[], &same, "a.test", 1), Route::Lookup(None));
    }

    #[test]
    fn localhost_is_loopback_without_a_lookup() {
        for name in ["localhost", "localhost.", "LocalHost", "api.localhost"] {
            assert_eq!(route(&[], &[], name, 80), Route::Loopback(80), "{name}");
        }
        for name in ["localhost.test", "notlocalhost", "localhostx"] {
            assert_eq!(route(&[], &[], name, 80), Route::Lookup(None), "{name}");
        }
        let r = [resolve("localhost", 80, "10.0.0.1")];
        let at = Route::Addrs(vec![SocketAddr::from(([10, 0, 0, 1], 80))]);
        assert_eq!(route(&r, &[], "localhost", 80), at, "--resolve first");
        let c = [to((Some("a.test"), None), (Some("localhost"), Some(8080)))];
        assert_eq!(route(&[], &c, "a.test", 80), Route::Loopback(8080));
    }

    #[test]
    fn the_peer_is_read_from_ureqs_description() {
        let v4 = peer("Either::B(TcpTransport { addr: Some(127.0.0.1:8080) })");
        assert_eq!(v4, "127.0.0.1:8080".parse().ok());
        let v6 = peer("TcpTransport { addr: Some([::1]:443) }");
        assert_eq!(v6, "[::1]:443".parse().ok());
        assert_eq!(peer("TcpTransport { addr: None }"), None);
        assert_eq!(peer("SocksTransport"), None);
    }
}
