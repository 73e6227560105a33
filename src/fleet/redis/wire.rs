//! The connection to a Redis server, with bounds on what it reads: TCP, TLS (rustls, the
//! system's CA certificates or `--state-cacert`'s) or a Unix socket; `AUTH` and `SELECT`
//! when the URL asks for them; then one command at a time, each answer read in RESP2.
//!
//! No answer may be longer than `MAX_ANSWER` bytes: a length announced past what is left
//! of it (a bulk string of 512 MiB, an array of a billion elements) is refused before
//! anything is allocated or read, and every byte read counts, so an answer that never ends
//! is cut at the bound too. No read goes on past the operation's instant either: a worker
//! thread the store gave up on ends by then, holding at most `MAX_ANSWER` bytes, instead of
//! reading whatever the server sends for as long as it sends it.

use super::{Dial, Endpoint, describe, other, resolve, timed_out};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest answer read, in bytes (1 MiB): a record is a few hundred bytes, and the
/// scripts never answer one longer than `super::MAX_RECORD`.
pub const MAX_ANSWER: u64 = 1 << 20;

/// The deepest nesting of arrays read (the scripts answer one level).
const MAX_DEPTH: usize = 4;

/// The socket, with TLS or without.
enum Stream {
    Tcp(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    Unix(UnixStream),
}

impl Stream {
    /// Sets the read and write timeouts of the socket underneath.
    fn timeouts(&self, d: Duration) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s
                .set_read_timeout(Some(d))
                .and(s.set_write_timeout(Some(d))),
            Stream::Tls(s) => s
                .sock
                .set_read_timeout(Some(d))
                .and(s.sock.set_write_timeout(Some(d))),
            Stream::Unix(s) => s
                .set_read_timeout(Some(d))
                .and(s.set_write_timeout(Some(d))),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

/// A connection to the server, ready for commands.
pub struct Wire {
    stream: BufReader<Stream>,
}

/// The time left before `until`, or a time-out naming `what`.
fn left(until: Instant, what: &str) -> std::io::Result<Duration> {
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(timed_out(what))
    } else {
        Ok(left)
    }
}

/// An I/O error of the socket, a time-out said as one (a socket timeout reads as
/// `WouldBlock`), a refusal in words.
fn io(e: std::io::Error, what: &str) -> std::io::Error {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::WouldBlock | K::TimedOut => timed_out(what),
        K::ConnectionRefused => other("the connection was refused".into()),
        _ => e,
    }
}

/// The TLS settings: the certificates of `--state-cacert` (PEM) if given, else the
/// system's, with the ring provider the HTTPS side uses.
fn tls_config(cacert: Option<&[u8]>) -> std::io::Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match cacert {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert =
                    cert.map_err(|e| other(format!("--state-cacert is not valid PEM ({e})")))?;
                roots
                    .add(cert)
                    .map_err(|e| other(format!("--state-cacert holds a bad certificate ({e})")))?;
            }
            if roots.is_empty() {
                return Err(other("--state-cacert holds no certificate".into()));
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                // One certificate the system holds that rustls cannot use is no reason to
                // refuse the others.
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| other(format!("TLS cannot be set up ({e})")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

impl Wire {
    /// Connects as `dial` says, within what is left before `until`: resolves the name,
    /// connects, shakes hands (TLS), authenticates and selects the database.
    pub fn connect(dial: &Dial, until: Instant) -> std::io::Result<Wire> {
        let stream = match &dial.location.endpoint {
            Endpoint::Unix(path) => {
                let s = UnixStream::connect(path).map_err(|e| io(e, "connecting"))?;
                Stream::Unix(s)
            }
            Endpoint::Tcp { host, port, tls } => {
                let addr = resolve(host, *port, left(until, "connecting")?)?;
                let tcp = TcpStream::connect_timeout(&addr, left(until, "connecting")?)
                    .map_err(|e| io(e, "connecting"))?;
                let _ = tcp.set_nodelay(true);
                if *tls {
                    let name = rustls::pki_types::ServerName::try_from(host.clone())
                        .map_err(|e| other(format!("{host} is not a TLS server name ({e})")))?;
                    let conn =
                        rustls::ClientConnection::new(tls_config(dial.cacert.as_deref())?, name)
                            .map_err(|e| other(format!("TLS cannot be set up ({e})")))?;
                    Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
                } else {
                    Stream::Tcp(tcp)
                }
            }
        };
        let mut wire = Wire {
            stream: BufReader::new(stream),
        };
        if let Some(password) = &dial.location.password {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = &dial.location.user {
                auth.arg(user);
            }
            auth.arg(password);
            wire.query(&auth.get_packed_command(), until, "connecting")
                .map_err(|e| {
                    if e.kind() == std::io::ErrorKind::TimedOut {
                        e
                    } else {
                        // What the server says of a refused AUTH is not kept: some
                        // servers quote what they were sent.
                        other("the server refused the user or password".into())
                    }
                })?;
        }
        if dial.location.db != 0 {
            let mut select = redis::cmd("SELECT");
            select.arg(dial.location.db);
            wire.query(&select.get_packed_command(), until, "connecting")?;
        }
        Ok(wire)
    }

    /// Sends `packed` (a command in RESP) and reads its answer, before `until`; `what`
    /// names the step in a time-out. A server error is an error, in words (`describe`).
    pub fn query(
        &mut self,
        packed: &[u8],
        until: Instant,
        what: &str,
    ) -> std::io::Result<redis::Value> {
        let stream = self.stream.get_mut();
        stream.timeouts(left(until, what)?)?;
        stream
            .write_all(packed)
            .and_then(|()| stream.flush())
            .map_err(|e| io(e, what))?;
        let mut answer = Answer {
            stream: &mut self.stream,
            left: MAX_ANSWER,
            until,
            what,
        };
        answer.value(0)
    }
}

/// One answer being read: what is left of `MAX_ANSWER`, and of the time.
struct Answer<'a> {
    stream: &'a mut BufReader<Stream>,
    left: u64,
    until: Instant,
    what: &'a str,
}

impl Answer<'_> {
    /// The error of an answer longer than `MAX_ANSWER`.
    fn too_long(&self) -> std::io::Error {
        other(format!(
            "the store answered more than {} KiB, the most read",
            MAX_ANSWER >> 10
        ))
    }

    /// Takes `n` bytes from what is left, or says the answer is too long.
    fn spend(&mut self, n: u64) -> std::io::Result<()> {
        self.left = self.left.checked_sub(n).ok_or_else(|| self.too_long())?;
        Ok(())
    }

    /// Fills the buffer, with the time left as the socket's timeout.
    fn fill(&mut self) -> std::io::Result<&[u8]> {
        let left = left(self.until, self.what)?;
        self.stream.get_ref().timeouts(left)?;
        match self.stream.fill_buf() {
            Ok([]) => Err(other("the store closed the connection".into())),
            Ok(b) => Ok(b),
            Err(e) => Err(io(e, self.what)),
        }
    }

    /// A line without its CRLF.
    fn line(&mut self) -> std::io::Result<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            let buf = self.fill()?;
            let (take, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            line.extend_from_slice(&buf[..take]);
            self.stream.consume(take);
            self.spend(take as u64)?;
            if done {
                break;
            }
        }
        if line.ends_with(b"\r\n") {
            line.truncate(line.len() - 2);
            Ok(line)
        } else {
            Err(self.nonsense())
        }
    }

    /// `n` bytes and the CRLF after them.
    fn exact(&mut self, n: u64) -> std::io::Result<Vec<u8>> {
        // Checked before anything is allocated.
        self.spend(n.saturating_add(2))?;
        let mut out = Vec::with_capacity(n as usize + 2);
        while out.len() < n as usize + 2 {
            let want = n as usize + 2 - out.len();
            let buf = self.fill()?;
            let take = want.min(buf.len());
            out.extend_from_slice(&buf[..take]);
            self.stream.consume(take);
        }
        if !out.ends_with(b"\r\n") {
            return Err(self.nonsense());
        }
        out.truncate(n as usize);
        Ok(out)
    }

    fn nonsense(&self) -> std::io::Error {
        other("the store answered nonsense (not RESP)".into())
    }

    /// A number of a header line (`$5`, `*3`, `:42`).
    fn number(&self, digits: &[u8]) -> std::io::Result<i64> {
        std::str::from_utf8(digits)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| self.nonsense())
    }

    /// One value, nested `depth` arrays deep.
    fn value(&mut self, depth: usize) -> std::io::Result<redis::Value> {
        let line = self.line()?;
        let Some((&kind, rest)) = line.split_first() else {
            return Err(self.nonsense());
        };
        match kind {
            b'+' => Ok(redis::Value::SimpleString(
                String::from_utf8_lossy(rest).into_owned(),
            )),
            b'-' => {
                let text = String::from_utf8_lossy(rest);
                let (code, detail) = text.split_once(' ').unwrap_or((&text, ""));
                Err(other(describe(code, detail)))
            }
            b':' => Ok(redis::Value::Int(self.number(rest)?)),
            b'$' => match self.number(rest)? {
                -1 => Ok(redis::Value::Nil),
                n if n < 0 => Err(self.nonsense()),
                n => Ok(redis::Value::BulkString(self.exact(n as u64)?)),
            },
            b'*' => match self.number(rest)? {
                -1 => Ok(redis::Value::Nil),
                n if n < 0 => Err(self.nonsense()),
                _ if depth >= MAX_DEPTH => Err(self.nonsense()),
                n => {
                    // Each element takes 3 bytes at least (`:0` CRLF): a count past what
                    // is left cannot be honest, and is refused before anything is made.
                    if (n as u64).saturating_mul(3) > self.left {
                        return Err(self.too_long());
                    }
                    (0..n)
                        .map(|_| self.value(depth + 1))
                        .collect::<Result<_, _>>()
                        .map(redis::Value::Array)
                }
            },
            _ => Err(self.nonsense()),
        }
    }
}
