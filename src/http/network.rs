//! Where the agent's connections go, and with which client certificate: the resolver that
//! applies `--resolve` and `--connect-to` (the URL's name still goes to TLS and the Host
//! header: only the address changes), the connector that speaks over `--unix-socket`
//! instead of TCP (TLS over it for https), and the `--cert`/`--key` files read into a
//! client certificate.

use crate::config::UsageError;
use crate::config::network::{ClientCert, ConnectTo, NetworkConfig, Resolve};
use crate::http::connection;
use crate::http::splice::Tap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::tls::PemItem;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    ConnectionDetails, Connector, NextTimeout, RustlsConnector, Transport,
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
