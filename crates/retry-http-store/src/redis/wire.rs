//! The connection to a Redis server: TCP, TLS (rustls, the system's CA certificates or
//! `--state-cacert`'s) or a Unix socket; `AUTH` and `SELECT` when the URL asks for them,
//! written with the first command (one round trip, not three); then one write of commands
//! at a time, packed and each answer read in order by `resp`, within its bounds (at most
//! `resp::MAX_ANSWER` bytes an answer, no read past the operation's instant: a worker
//! thread the store gave up on ends by then, holding at most that much, instead of reading
//! whatever the server sends for as long as it sends it). A server's error answer is an
//! error, in words (`describe`); a cluster node's `-MOVED` and `-ASK` are read into a
//! `Redirect` for `cluster` to follow.

use super::resp::{Command, Timed, Value, io, left};
use super::{Dial, Endpoint, describe, other, resolve};
use retry_http_system::platform::UnixStream;
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The socket, with TLS or without.
enum Stream {
    Tcp(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    Unix(UnixStream),
}

impl Timed for Stream {
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
            for cert in &retry_http_system::files::certs::system().certs {
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
            let mut auth = Command::new("AUTH");
            if let Some(user) = &location.user {
                auth.arg(user);
            }
            auth.arg(password);
            pending.push((Preamble::Auth, auth.packed()));
        }
        if location.db != 0 {
            let mut select = Command::new("SELECT");
            select.arg(location.db.to_string());
            pending.push((Preamble::Select, select.packed()));
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
    ) -> std::io::Result<Value> {
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
        let mut last = Ok(Value::Nil);
        for _ in commands {
            last = Ok(self.answer(until, what)?);
        }
        last
    }

    /// Reads one answer, before `until`; an error answer is an error (`failed`).
    fn answer(&mut self, until: Instant, what: &str) -> std::io::Result<Value> {
        let answer = super::resp::read(&mut self.stream, until, what)?;
        match answer.error() {
            Some(line) => Err(failed(line)),
            None => Ok(answer),
        }
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

/// The error of a server's error answer `line` (`CODE detail`, as after `-`): a `Redirect`
/// for `-MOVED` and `-ASK`, else what it means, in words (`describe`).
pub fn failed(line: &str) -> std::io::Error {
    let (code, detail) = line.split_once(' ').unwrap_or((line, ""));
    match Redirect::parse(code, detail) {
        Some(redirect) => other_error(redirect),
        None => other(describe(code, detail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::RedisLocation;
    use std::net::TcpListener;

    /// A server on loopback that reads what one connection sends (until `commands`
    /// arrays of bulk strings have come) and answers `answer`; what it read comes back on
    /// the channel.
    fn server(answer: Vec<u8>, commands: usize) -> (u16, std::sync::mpsc::Receiver<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let Ok((c, _)) = listener.accept() else {
                return;
            };
            let _ = c.set_read_timeout(Some(Duration::from_secs(30)));
            let mut c = BufReader::new(c);
            let mut got = Vec::new();
            for _ in 0..commands {
                let until = Instant::now() + Duration::from_secs(30);
                let Ok(cmd) = super::super::resp::read(&mut c, until, "the test") else {
                    return;
                };
                got.push(cmd);
            }
            let _ = c.get_mut().write_all(&answer);
            let packed: Vec<u8> = got.iter().flat_map(encode).collect();
            let _ = tx.send(packed);
            std::thread::sleep(Duration::from_millis(200));
        });
        (port, rx)
    }

    impl Timed for TcpStream {
        fn timeouts(&self, d: Duration) -> std::io::Result<()> {
            self.set_read_timeout(Some(d))
        }
    }

    /// A command read back as the server saw it, packed again.
    fn encode(v: &Value) -> Vec<u8> {
        let Value::Array(args) = v else {
            panic!("a command is an array: {v:?}");
        };
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let Value::Bulk(b) = a else {
                panic!("an argument is a bulk string: {a:?}");
            };
            out.extend(format!("${}\r\n", b.len()).into_bytes());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    /// Connects to `url` and sends `cmd` once.
    fn ask(url: &str, cmd: &Command) -> std::io::Result<Value> {
        let location = RedisLocation::parse(url).expect("a valid URL");
        let dial = Dial {
            location: location.clone(),
            cacert: None,
            trips: Arc::default(),
            cache: None,
        };
        let until = Instant::now() + Duration::from_secs(30);
        let mut wire = Wire::connect(&dial, &location.endpoint, until)?;
        wire.query(&[&cmd.packed()], until, "asking")
    }

    /// What the server is sent is the command packed, after `AUTH` (user and password,
    /// percent-decoded, CR LF in them) and `SELECT` when the URL names them, in one write.
    #[test]
    fn auth_and_select_go_with_the_first_command() {
        let mut get = Command::new("GET");
        get.arg("retry-http:{k}\r\n\0\u{ff}");
        for (userinfo, db, auth) in [
            ("", "", None),
            (":p%0D%0Aw@", "", Some(vec!["p\r\nw"])),
            ("ops:s%20e@", "/7", Some(vec!["ops", "s e"])),
            ("", "/15", None),
        ] {
            let preamble = usize::from(auth.is_some()) + usize::from(!db.is_empty());
            let answers = "+OK\r\n".repeat(preamble) + "$2\r\nhi\r\n";
            let (port, sent) = server(answers.into_bytes(), preamble + 1);
            let url = format!("redis://{userinfo}127.0.0.1:{port}{db}");
            let answer = ask(&url, &get).expect("an answer");
            assert_eq!(answer, Value::Bulk(b"hi".to_vec()), "{url}");
            let mut want = Vec::new();
            if let Some(args) = auth {
                let mut cmd = Command::new("AUTH");
                for a in args {
                    cmd.arg(a);
                }
                want.extend(cmd.packed());
            }
            if let Some(n) = db.strip_prefix('/') {
                want.extend(Command::new("SELECT").arg(n).packed());
            }
            want.extend(get.packed());
            let sent = sent.recv_timeout(Duration::from_secs(30)).expect("sent");
            assert_eq!(sent, want, "{url}");
        }
    }

    /// A server's error answer, at the top or inside an array, is an error: `-MOVED` and
    /// `-ASK` a `Redirect`, `-NOSCRIPT` one that names it (the store then sends the script
    /// whole), `-ERR` and the others in words.
    #[test]
    fn error_answers_are_errors() {
        let cases: [(&str, &str); 6] = [
            ("-MOVED 3999 127.0.0.1:6381\r\n", "MOVED"),
            ("-ASK 3999 [::1]:7000\r\n", "ASK"),
            (
                "-NOSCRIPT No matching script. Please use EVAL.\r\n",
                "NOSCRIPT",
            ),
            (
                "-ERR unknown command 'X'\r\n",
                "the server answered ERR unknown command",
            ),
            (
                "*2\r\n:1\r\n-ERR inside\r\n",
                "the server answered ERR inside",
            ),
            (
                "-NOAUTH Authentication required.\r\n",
                "the server wants a password",
            ),
        ];
        for (answer, said) in cases {
            let (port, _sent) = server(answer.as_bytes().to_vec(), 1);
            let e = ask(&format!("redis://127.0.0.1:{port}"), &Command::new("PING"))
                .expect_err("an error answer");
            let text = e.to_string();
            assert!(text.contains(said), "{answer:?}: {text}");
            let redirect = redirect(&e);
            assert_eq!(
                redirect.map(|r| r.ask),
                match said {
                    "MOVED" => Some(false),
                    "ASK" => Some(true),
                    _ => None,
                },
                "{answer:?}"
            );
            if let Some(r) = redirect {
                assert_eq!(r.slot, 3999);
            }
        }
    }
}
