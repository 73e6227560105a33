//! The connection to a Redis server, with bounds on what it reads: TCP, TLS (rustls, the
//! system's CA certificates or `--state-cacert`'s) or a Unix socket; `AUTH` and `SELECT`
//! when the URL asks for them, written with the first command (one round trip, not three);
//! then one write of commands at a time, each answer read in RESP2 in order. A cluster
//! node's `-MOVED` and `-ASK` are read into a `Redirect` for `cluster` to follow.
//!
//! No answer may be longer than `MAX_ANSWER` bytes: a length announced past what is left
//! of it (a bulk string of 512 MiB, an array of a billion elements) is refused before
//! anything is allocated or read, and every byte read counts, so an answer that never ends
//! is cut at the bound too. No read goes on past the operation's instant either: a worker
//! thread the store gave up on ends by then, holding at most `MAX_ANSWER` bytes, instead of
//! reading whatever the server sends for as long as it sends it.

use super::{Dial, Endpoint, describe, other, resolve, timed_out};
use crate::platform::UnixStream;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// What a new connection sends before its first command (`AUTH`, `SELECT`), packed:
    /// sent in the same write, its answers read first.
    pending: Vec<(Preamble, Vec<u8>)>,
    /// The round trips of the store, counted: one per connection, one per write.
    trips: Arc<AtomicU64>,
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
            // Read once per run, within bounds (`files::certs`).
            for cert in &crate::files::certs::system().certs {
                // One certificate the system holds that rustls cannot use is no reason to
                // refuse the others.
                let _ = roots.add(cert.clone());
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
    /// Connects to `endpoint` as `dial` says, within what is left before `until`: resolves
    /// the name, connects and, for TLS, prepares the handshake (made with the first write).
    /// `AUTH` and `SELECT`, when the URL asks for them, are not sent now: they go in the same
    /// write as the first command (see `query`), so connecting costs one round trip.
    pub fn connect(dial: &Dial, endpoint: &Endpoint, until: Instant) -> std::io::Result<Wire> {
        let stream = open(dial, endpoint, until)?;
        let trips = Arc::clone(&dial.trips);
        trips.fetch_add(1, Ordering::Relaxed);
        let location = &dial.location;
        let mut pending = Vec::new();
        if let Some(password) = &location.password {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = &location.user {
                auth.arg(user);
            }
            auth.arg(password);
            pending.push((Preamble::Auth, auth.get_packed_command()));
        }
        if location.db != 0 {
            let mut select = redis::cmd("SELECT");
            select.arg(location.db);
            pending.push((Preamble::Select, select.get_packed_command()));
        }
        Ok(Wire {
            stream: BufReader::new(stream),
            pending,
            trips,
        })
    }

    /// Sends `commands` (each in RESP) in one write, after what connecting left to send, and
    /// reads every answer in order, before `until`; answers the last command's. `what` names
    /// the step in a time-out. A server error is an error, in words (`describe`), or a
    /// `Redirect`; after any error but a `Redirect` of the last command, the answers are no
    /// longer in step with the commands, and the connection is not to be used again.
    pub fn query(
        &mut self,
        commands: &[&[u8]],
        until: Instant,
        what: &str,
    ) -> std::io::Result<redis::Value> {
        let pending = std::mem::take(&mut self.pending);
        let mut packed = Vec::new();
        for part in pending
            .iter()
            .map(|(_, p)| p.as_slice())
            .chain(commands.iter().copied())
        {
            packed.extend_from_slice(part);
        }
        let stream = self.stream.get_mut();
        stream.timeouts(left(until, what)?)?;
        stream
            .write_all(&packed)
            .and_then(|()| stream.flush())
            .map_err(|e| io(e, what))?;
        self.trips.fetch_add(1, Ordering::Relaxed);
        for (preamble, _) in &pending {
            self.answer(until, "connecting")
                .map_err(|e| preamble.failed(e))?;
        }
        let mut last = Ok(redis::Value::Nil);
        for _ in commands {
            last = Ok(self.answer(until, what)?);
        }
        last
    }

    /// Reads one answer, before `until`.
    fn answer(&mut self, until: Instant, what: &str) -> std::io::Result<redis::Value> {
        let mut answer = Answer {
            stream: &mut self.stream,
            left: MAX_ANSWER,
            until,
            what,
        };
        answer.value(0)
    }
}

/// A command sent ahead of the first one on a new connection.
#[derive(Clone, Copy)]
enum Preamble {
    Auth,
    Select,
}

impl Preamble {
    /// The error of its answer: a refused `AUTH` says only that (what the server says of it
    /// is not kept: some servers quote what they were sent); `SELECT`'s as the server said.
    fn failed(self, e: std::io::Error) -> std::io::Error {
        match self {
            Preamble::Auth if e.kind() != std::io::ErrorKind::TimedOut => {
                other("the server refused the user or password".into())
            }
            _ => e,
        }
    }
}

/// Opens the socket of `endpoint` (a single server or a cluster node, never the cluster
/// itself), within what is left before `until`.
fn open(dial: &Dial, endpoint: &Endpoint, until: Instant) -> std::io::Result<Stream> {
    match endpoint {
        Endpoint::Unix(path) => {
            let s = UnixStream::connect(path).map_err(|e| io(e, "connecting"))?;
            Ok(Stream::Unix(s))
        }
        Endpoint::Tcp { host, port, tls } => {
            let addr = resolve(host, *port, left(until, "connecting")?)?;
            let tcp = TcpStream::connect_timeout(&addr, left(until, "connecting")?)
                .map_err(|e| io(e, "connecting"))?;
            let _ = tcp.set_nodelay(true);
            if !*tls {
                return Ok(Stream::Tcp(tcp));
            }
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| other(format!("{host} is not a TLS server name ({e})")))?;
            let conn = rustls::ClientConnection::new(tls_config(dial.cacert.as_deref())?, name)
                .map_err(|e| other(format!("TLS cannot be set up ({e})")))?;
            Ok(Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
        }
        Endpoint::Cluster { .. } => Err(other(
            "a cluster is reached through one of its nodes".into(),
        )),
    }
}

/// What a Redis Cluster node answers instead of running a command on a key it does not
/// serve: `-MOVED SLOT HOST:PORT` (the slot's owner is that node: ask it from now on) or
/// `-ASK SLOT HOST:PORT` (the slot is moving: send this one command there, after `ASKING`).
/// The error of `query` carries it: see `redirect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// `ASK` (this command only), else `MOVED`.
    pub ask: bool,
    /// The slot (0 to 16383).
    pub slot: u16,
    /// The node's host (an IPv6 address without brackets); empty when the node does not
    /// know the name it is reached by, which then is the answering node's.
    pub host: String,
    /// The node's port.
    pub port: u16,
}

impl Redirect {
    /// Reads `-MOVED 3999 127.0.0.1:6381` (`code`, then `detail`); `None` for any other
    /// error, and for a redirection that cannot be read (then shown as the server said it).
    pub fn parse(code: &str, detail: &str) -> Option<Redirect> {
        let ask = match code {
            "MOVED" => false,
            "ASK" => true,
            _ => return None,
        };
        let (slot, node) = detail.trim().split_once(' ')?;
        let (host, port) = node.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Some(Redirect {
            ask,
            slot: slot.parse().ok().filter(|s| *s < super::SLOTS)?,
            host: host.to_string(),
            port: port.parse().ok()?,
        })
    }
}

impl std::fmt::Display for Redirect {
    /// Said to a user only when the redirection is not followed: a `redis://` URL given a
    /// cluster node, or too many redirections.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.ask { "ASK" } else { "MOVED" };
        write!(
            f,
            "the server is a node of a Redis Cluster that sends the key's slot {} to {}:{} ({kind}): name the cluster with redis+cluster://",
            self.slot, self.host, self.port
        )
    }
}

impl std::error::Error for Redirect {}

/// The redirection an error of `Wire::query` carries, if it is one.
pub fn redirect(e: &std::io::Error) -> Option<&Redirect> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<Redirect>())
}

/// An error carrying `redirect`.
fn other_error(redirect: Redirect) -> std::io::Error {
    std::io::Error::other(redirect)
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
                Err(match Redirect::parse(code, detail) {
                    Some(redirect) => other_error(redirect),
                    None => other(describe(code, detail)),
                })
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
