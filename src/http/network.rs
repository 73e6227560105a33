//! Where the agent's connections go, and with which client certificate: the resolver that
//! applies `--resolve` and `--connect-to` (the URL's name still goes to TLS and the Host
//! header: only the address changes), the connector that speaks over `--unix-socket`
//! instead of TCP (TLS over it for https), and the `--cert`/`--key` files read into a
//! client certificate.

use crate::config::UsageError;
use crate::config::network::{ClientCert, ConnectTo, NetworkConfig, Resolve};
use crate::http::splice::{self, Raw, Tap};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use ureq::config::Config;
use ureq::http::Uri;
use ureq::tls::PemItem;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, RustlsConnector,
    ShutdownHandle, Transport,
};

/// The largest `--cert` or `--key` file read, in bytes.
const MAX_PEM: u64 = 1 << 20;

/// Where a connection to a host and port goes.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    /// These addresses (from `--resolve`), in order.
    Addrs(Vec<SocketAddr>),
    /// Look this name up; None: the URL's own.
    Lookup(Option<(String, u16)>),
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
pub(crate) struct Directed {
    resolve: Vec<Resolve>,
    connect_to: Vec<ConnectTo>,
    unix: bool,
    inner: DefaultResolver,
}

impl Directed {
    /// The resolver for these settings.
    pub(crate) fn new(net: &NetworkConfig) -> Self {
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
pub(crate) struct Connect {
    socket: Option<PathBuf>,
    chain: Box<dyn Connector<(), Out = Box<dyn Transport>>>,
    tls: RustlsConnector,
    tap: Arc<Tap>,
}

impl Connect {
    /// The connector for these settings: `chain` (ureq's, with the timing probes) unless
    /// a Unix socket is named; `tap` learns each plain socket opened.
    pub(crate) fn new(
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
        let local = Stream::new(stream, details.config, &self.tap);
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

/// The TCP connections of the chain (in place of ureq's own), made so that the socket of
/// a plain-HTTP body can be spliced (see `splice`): the resolved addresses are tried in
/// order, each with a share of the connect limit that halves from one to the next (the
/// shares sum to the limit; none under 10 ms), moving on when an address refuses or
/// cannot be routed, as ureq does. A connection already made (SOCKS) is passed on.
#[derive(Debug)]
pub(crate) struct Tcp {
    tap: Arc<Tap>,
}

impl Tcp {
    /// The connector; `tap` learns each socket opened.
    pub(crate) fn new(tap: Arc<Tap>) -> Self {
        Tcp { tap }
    }
}

impl<In: Transport> Connector<In> for Tcp {
    type Out = Either<In, Stream<TcpStream>>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(t) = chained {
            return Ok(Some(Either::A(t)));
        }
        let stream = connect_tcp(&details.addrs, details.timeout)?;
        if details.config.no_delay() {
            stream.set_nodelay(true)?;
        }
        let transport = Stream::new(stream, details.config, &self.tap);
        (details.register_shutdown)(transport.shutdown_handle())?;
        Ok(Some(Either::B(transport)))
    }
}

/// The least share of the connect limit one address gets.
const MIN_PER_ADDRESS: Duration = Duration::from_millis(10);

/// Connects to the first of `addrs` that answers, within `timeout` in all.
fn connect_tcp(
    addrs: &ResolvedSocketAddrs,
    timeout: NextTimeout,
) -> Result<TcpStream, ureq::Error> {
    let start = Instant::now();
    let total = timeout.not_zero().map(|t| *t);
    // Shares 1, 1/2, 1/4, ... of a whole that is 2 * (1 - 2^-n).
    let whole = 2.0 * (1.0 - 0.5_f64.powi(i32::try_from(addrs.len()).unwrap_or(i32::MAX)));
    let mut share = 1.0_f64;
    let mut last = None;
    for addr in addrs {
        let own = total.map(|t| t.mul_f64(share / whole).max(MIN_PER_ADDRESS));
        share /= 2.0;
        let tried = match own {
            Some(limit) => TcpStream::connect_timeout(addr, limit),
            None => TcpStream::connect(addr),
        };
        match tried {
            Ok(s) => return Ok(s),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) =>
            {
                if total.is_some_and(|t| start.elapsed() > t) {
                    return Err(ureq::Error::Timeout(timeout.reason));
                }
                last = Some(ureq::Error::Timeout(ureq::Timeout::Connect));
            }
            Err(e) if only_this_address(&e) => last = Some(ureq::Error::Io(e)),
            Err(e) => return Err(ureq::Error::Io(e)),
        }
    }
    Err(last.unwrap_or_else(|| {
        ureq::Error::Io(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            "Connection refused",
        ))
    }))
}

/// Whether a failed connect says nothing of the host's other addresses: this one refused,
/// or has no route (an IPv6 address on a host without IPv6).
fn only_this_address(e: &io::Error) -> bool {
    use io::ErrorKind as E;
    matches!(
        e.kind(),
        E::ConnectionRefused
            | E::HostUnreachable
            | E::NetworkUnreachable
            | E::NetworkDown
            | E::AddrNotAvailable
    )
}

/// What a transport needs of its socket: a TCP or a Unix stream.
pub(crate) trait Socket: Send + Sync + 'static {
    /// `SO_RCVTIMEO` (None: wait for ever).
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    /// `SO_SNDTIMEO` (None: wait for ever).
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    /// One read, of at most `buf.len()` bytes.
    fn read_some(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Writes all of `buf`.
    fn write_all_of(&self, buf: &[u8]) -> io::Result<()>;
    /// Shuts both directions down (a read in flight returns).
    fn shut(&self);
    /// The descriptor, for a splice.
    fn fd(&self) -> RawFd;
    /// How ureq's own transport describes itself (`timing` reads the peer from it).
    fn describe(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result;
}

macro_rules! socket_of {
    ($t:ty, $describe:expr) => {
        impl Socket for $t {
            fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                <$t>::set_read_timeout(self, t)
            }
            fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                <$t>::set_write_timeout(self, t)
            }
            fn read_some(&self, buf: &mut [u8]) -> io::Result<usize> {
                (&*self).read(buf)
            }
            fn write_all_of(&self, buf: &[u8]) -> io::Result<()> {
                (&*self).write_all(buf)
            }
            fn shut(&self) {
                let _ = self.shutdown(std::net::Shutdown::Both);
            }
            fn fd(&self) -> RawFd {
                self.as_raw_fd()
            }
            fn describe(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                #[allow(clippy::redundant_closure_call)]
                ($describe)(self, f)
            }
        }
    };
}

socket_of!(
    TcpStream,
    |s: &TcpStream, f: &mut std::fmt::Formatter<'_>| f
        .debug_struct("TcpTransport")
        .field("addr", &s.peer_addr().ok())
        .finish()
);
socket_of!(
    UnixStream,
    |_: &UnixStream, f: &mut std::fmt::Formatter<'_>| f.debug_struct("Local").finish()
);

/// A socket shared with the agent, so that `shutdown` (the deadline, a signal) can end a
/// read (or a splice) in flight, and with the tap, so that a body can be spliced off it.
struct Shared<S>(S);

impl<S: Socket> ShutdownHandle for Shared<S> {
    fn shutdown(&self) {
        self.0.shut();
    }
}

impl<S: Socket> Raw for Shared<S> {
    fn fd(&self) -> RawFd {
        self.0.fd()
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.0.set_read_timeout(t)
    }
}

/// The HTTP exchange over a plain socket, within ureq's timeouts; it hands the socket
/// over when its tap is armed (see `splice`).
pub(crate) struct Stream<S> {
    socket: Arc<Shared<S>>,
    buffers: LazyBuffers,
    tap: Arc<Tap>,
}

impl<S: Socket> Stream<S> {
    fn new(socket: S, config: &Config, tap: &Arc<Tap>) -> Self {
        let socket = Arc::new(Shared(socket));
        let raw: Arc<dyn Raw> = socket.clone();
        tap.opened(Arc::downgrade(&raw));
        Stream {
            socket,
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
            tap: tap.clone(),
        }
    }

    fn shutdown_handle(&self) -> Weak<dyn ShutdownHandle> {
        let handle: Arc<dyn ShutdownHandle> = self.socket.clone();
        Arc::downgrade(&handle)
    }
}

impl<S: Socket> std::fmt::Debug for Stream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.socket.0.describe(f)
    }
}

/// The time left of `timeout` (None: no limit), or the timeout error when none is.
fn time_left(timeout: NextTimeout) -> Result<Option<std::time::Duration>, ureq::Error> {
    if timeout.after.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    Ok(timeout.not_zero().map(|d| *d))
}

/// An I/O error of the socket, a timeout being ureq's.
fn io_error(e: io::Error, timeout: NextTimeout) -> ureq::Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ureq::Error::Timeout(timeout.reason),
        _ => ureq::Error::Io(e),
    }
}

impl<S: Socket> Transport for Stream<S> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        let socket = &self.socket.0;
        socket.set_write_timeout(time_left(timeout)?)?;
        let output = &self.buffers.output()[..amount];
        socket
            .write_all_of(output)
            .map_err(|e| io_error(e, timeout))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        if self.tap.hand_over() {
            return Err(ureq::Error::Io(splice::handed_over()));
        }
        let timeout = timeout.for_read();
        let socket = &self.socket.0;
        socket.set_read_timeout(time_left(timeout)?)?;
        let input = self.buffers.input_append_buf();
        let amount = loop {
            match socket.read_some(input) {
                // A signal: its handler has had its say (a shutdown, if the run ends).
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other.map_err(|e| io_error(e, timeout))?,
            }
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        // Connections are never reused (no idle pool), so none is probed.
        false
    }
}

/// A connection whose response head must fit its input buffer: asked for more input while
/// the buffer is full of what has not been read, it refuses the head as too large, a
/// protocol error (without this the exchange would end as a read that made no progress,
/// a connection cut, and be retried for an answer that will not change). Only a head can
/// fill the buffer: a body's bytes are taken out as they arrive.
pub(crate) struct Bounded(Box<dyn Transport>);

impl Bounded {
    /// `inner`, bounded.
    pub(crate) fn new(inner: Box<dyn Transport>) -> Self {
        Bounded(inner)
    }
}

impl std::fmt::Debug for Bounded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Transport for Bounded {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.0.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.0.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let buffers = self.0.buffers();
        if buffers.input_append_buf().is_empty() {
            let held = buffers.input().len();
            return Err(ureq::Error::LargeResponseHeader(held, held));
        }
        self.0.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.0.is_open()
    }

    fn is_tls(&self) -> bool {
        self.0.is_tls()
    }
}

/// The `--cert` chain and key, read from their PEM files: a usage error when one cannot
/// be read, holds no certificate or key, or the key is encrypted. The password is never
/// named.
pub(crate) fn client_cert(
    spec: Option<&ClientCert>,
) -> Result<Option<ureq::tls::ClientCert>, UsageError> {
    let Some(spec) = spec else {
        return Ok(None);
    };
    let cert_pem = read_pem(&spec.cert, "--cert")?;
    let certs = crate::http::agent::pem_certificates(&cert_pem);
    if certs.is_empty() {
        return Err(UsageError(format!(
            "--cert {} holds no PEM certificate: expected a -----BEGIN CERTIFICATE----- block (convert DER or P12 with openssl)",
            spec.cert.display()
        )));
    }
    let (key_path, flag) = match &spec.key {
        Some(k) => (k.as_path(), "--key"),
        None => (spec.cert.as_path(), "--cert"),
    };
    let key_pem = match &spec.key {
        Some(k) => read_pem(k, "--key")?,
        None => cert_pem.clone(),
    };
    let text = String::from_utf8_lossy(&key_pem);
    if text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(UsageError(format!(
            "{flag} {}: an encrypted private key is not supported; decrypt it with openssl pkey -in KEY -out KEY.pem (and keep that file private)",
            key_path.display()
        )));
    }
    let key = ureq::tls::parse_pem(&key_pem).find_map(|i| match i {
        Ok(PemItem::PrivateKey(k)) => Some(k),
        _ => None,
    });
    let Some(key) = key else {
        let hint = if spec.key.is_none() {
            " (or name it with --key FILE)"
        } else {
            ""
        };
        return Err(UsageError(format!(
            "{flag} {} holds no PEM private key{hint}: expected a -----BEGIN PRIVATE KEY----- block",
            key_path.display()
        )));
    };
    Ok(Some(ureq::tls::ClientCert::new_with_certs(&certs, key)))
}

/// A PEM file of at most [`MAX_PEM`] bytes.
fn read_pem(path: &Path, flag: &str) -> Result<Vec<u8>, UsageError> {
    let pem = std::fs::File::open(path)
        .and_then(|f| crate::files::read_bounded(f, MAX_PEM))
        .map_err(|e| UsageError(format!("cannot read {flag} {}: {e}", path.display())))?
        .ok_or_else(|| {
            UsageError(format!(
                "{flag} {} is larger than 1 MiB: expected a PEM file",
                path.display()
            ))
        })?;
    Ok(pem)
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
    fn unusable_cert_files_are_usage_errors_that_never_name_the_password() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("c.pem");
        std::fs::write(
            &cert,
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
        )
        .unwrap();
        let spec = ClientCert {
            cert: cert.clone(),
            key: Some(cert.clone()),
            password: Some("s3cret".into()),
        };
        let e = client_cert(Some(&spec)).map(|_| ()).unwrap_err();
        assert!(e.0.contains("holds no PEM certificate"), "{}", e.0);
        let missing = ClientCert {
            cert: dir.path().join("none"),
            ..spec
        };
        let e = client_cert(Some(&missing)).map(|_| ()).unwrap_err();
        assert!(
            e.0.starts_with("cannot read --cert") && !e.0.contains("s3cret"),
            "{}",
            e.0
        );
    }
}
