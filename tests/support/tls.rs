//! The TLS servers of the tests: rustls on a loopback port, with certificates made here by
//! rcgen. A certificate is self-signed ([`self_signed`]) or issued by a CA of the test's own
//! ([`Ca`]); [`config`] makes a server's configuration of it (the TLS versions it speaks,
//! whether it demands a client certificate); [`serve`] runs it, each connection on a
//! thread of its own given to a closure that reads and answers on the TLS stream
//! ([`read_head`], [`answer`]). [`tls_server`] is the everyday one: every request answered
//! 200 with a body. Used by tests/it/ and by tests/static_build.rs (included by `#[path]`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A server's TLS stream, as [`serve`] hands it to its closure.
pub type TlsStream = rustls::StreamOwned<rustls::ServerConnection, TcpStream>;

/// A certificate and its key: DER for a server, PEM for the client's files.
pub struct Cert {
    pub der: CertificateDer<'static>,
    pub key_der: Vec<u8>,
    pub pem: String,
    pub key_pem: String,
}

impl Cert {
    /// The key as rustls takes it.
    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::try_from(self.key_der.clone()).expect("a private key")
    }
}

/// A certificate for `names` (host names or addresses) that is its own CA.
pub fn self_signed(names: &[&str]) -> Cert {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let made = rcgen::generate_simple_self_signed(names).expect("a certificate");
    Cert {
        der: made.cert.der().clone(),
        key_der: made.signing_key.serialize_der(),
        pem: made.cert.pem(),
        key_pem: made.signing_key.serialize_pem(),
    }
}

/// A CA of the test's own, named "retry-http test CA", and the certificates it signs.
pub struct Ca {
    pub pem: String,
    pub der: CertificateDer<'static>,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Ca {
    pub fn new() -> Ca {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "retry-http test CA");
        let key = rcgen::KeyPair::generate().expect("a key");
        let cert = params.self_signed(&key).expect("the CA");
        Ca {
            pem: cert.pem(),
            der: cert.der().clone(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A certificate for `names`, signed by this CA.
    pub fn issue(&self, names: &[&str]) -> Cert {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let key = rcgen::KeyPair::generate().expect("a key");
        let cert = rcgen::CertificateParams::new(names)
            .expect("params")
            .signed_by(&key, &self.issuer)
            .expect("a certificate");
        Cert {
            der: cert.der().clone(),
            key_der: key.serialize_der(),
            pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// A server configuration presenting `cert`, speaking `versions` (empty: rustls's safe
/// defaults, TLS 1.2 and 1.3), and demanding a client certificate signed by `client_ca`
/// when given.
pub fn config(
    cert: &Cert,
    versions: &[&'static rustls::SupportedProtocolVersion],
    client_ca: Option<&CertificateDer<'static>>,
) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone());
    let builder = if versions.is_empty() {
        builder.with_safe_default_protocol_versions()
    } else {
        builder.with_protocol_versions(versions)
    }
    .expect("protocol versions");
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.clone()).expect("a CA");
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .build()
                    .expect("a client verifier");
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(vec![cert.der.clone()], cert.key())
        .expect("a TLS configuration");
    Arc::new(config)
}

/// Serves `config` on a free loopback port: each connection, on a thread of its own, is
/// handed to `each` as a TLS stream (the handshake happens at its first read or write).
/// Returns the port and the count of connections accepted (a handshake that fails counts).
pub fn serve(
    config: Arc<rustls::ServerConfig>,
    each: impl Fn(&mut TlsStream) + Send + Sync + 'static,
) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    let each = Arc::new(each);
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let config = config.clone();
            let each = each.clone();
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                each(&mut rustls::StreamOwned::new(conn, tcp));
            });
        }
    });
    (port, connections)
}

/// Reads a request's head, up to its blank line; returns it (empty when the handshake or
/// the connection failed first). The body, if any, is left unread.
pub fn read_head(stream: &mut impl Read) -> String {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        head.push_str(&line);
        line.clear();
    }
    head
}

/// The value of header `name` in a head [`read_head`] returned.
pub fn header_of<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Answers 200 with `body` and `extra` (header lines, each ending in CRLF) in its head,
/// `Connection: close`, then ends the TLS session with a close_notify.
pub fn answer(tls: &mut TlsStream, extra: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    );
    let _ = tls.write_all(head.as_bytes());
    let _ = tls.write_all(body);
    let _ = tls.flush();
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// A server on loopback, every request answered 200 with a fixed body.
pub struct TlsServer {
    /// `https://{name}:{port}/`, the name its certificate holds.
    pub url: String,
    pub port: u16,
    /// Its certificate (its own CA) in PEM.
    pub cert_pem: String,
    connections: Arc<AtomicUsize>,
}

impl TlsServer {
    /// Connections accepted so far (a handshake that fails counts).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// A server whose self-signed certificate names `name`, answering every request 200 with
/// `body` and `extra` (header lines, each ending in CRLF) in its head.
pub fn tls_server(name: &str, body: &[u8], extra: &str) -> TlsServer {
    let cert = self_signed(&[name]);
    let (body, extra) = (body.to_vec(), extra.to_string());
    let (port, connections) = serve(config(&cert, &[], None), move |tls| {
        read_head(tls);
        answer(tls, &extra, &body);
    });
    TlsServer {
        url: format!("https://{name}:{port}/"),
        port,
        cert_pem: cert.pem,
        connections,
    }
}

/// A port that speaks TCP only, for faults of the handshake: `each` is given every
/// connection, on a thread of its own. Returns `https://localhost:{port}/` and the count of
/// connections accepted.
pub fn raw_tls_port(each: fn(TcpStream)) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || each(tcp));
        }
    });
    (format!("https://localhost:{port}/"), count)
}

/// Reads the ClientHello (or whatever comes first).
pub fn read_hello(tcp: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    let _ = tcp.read(&mut buf);
}
