//! The Redis store of `--state redis://...`: one key per target (`PREFIX` + the target's
//! key), its value the target's record as JSON with a revision number. An update reads the
//! key and the server's `TIME` in one round trip, lets the pure decision change the record,
//! and writes it back with a compare-and-set: a small script that replaces the value only
//! if it is still the text that was read (the revision makes every write's text new), and
//! otherwise answers the current text and time, so the decision is made again on it. The
//! loop ends within the operation's bound. The time is always the server's, since hosts'
//! clocks differ; keys expire by themselves when `record::Target::expires_at` passes.
//!
//! Every operation, connecting and resolving the server's name included, ends within its
//! bound: the name is resolved on a thread of its own and given up on at the bound, the
//! connection has a connect timeout, and each read and write on it the time left.

use crate::fleet::Millis;
use crate::fleet::record::{Limits, Target, target_from_value, target_json};
use crate::fleet::store::{Clock, Store};
use serde_json::{Value, json};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// The default prefix of the keys.
pub const DEFAULT_PREFIX: &str = "retry-http:";

/// The largest `--state-cacert` read, in bytes.
const MAX_CACERT: u64 = 1 << 20;

/// The longest pause between two tries of a compare-and-set that conflicted.
const MAX_PAUSE: Duration = Duration::from_millis(128);

/// The default port of a Redis server.
const DEFAULT_PORT: u16 = 6379;

/// Where a Redis server is, as `--state` names it.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisLocation {
    /// TCP (with TLS or without) or a Unix socket.
    pub endpoint: Endpoint,
    /// The database number (`SELECT`).
    pub db: u32,
    /// `USER` of the URL (Redis 6 ACLs), if any.
    pub user: Option<String>,
    /// `PASSWORD` of the URL, if any: never printed.
    pub password: Option<String>,
    /// What every key begins with.
    pub prefix: String,
}

/// How the server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `redis://HOST:PORT` (`tls: false`) or `rediss://HOST:PORT` (`tls: true`).
    Tcp {
        /// The host name or address, as written (brackets of IPv6 removed).
        host: String,
        /// The port (6379 when not written).
        port: u16,
        /// TLS.
        tls: bool,
    },
    /// `redis+unix:///PATH`.
    Unix(PathBuf),
}

impl std::fmt::Debug for RedisLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

/// The form of a Redis URL, for messages.
const FORMS: &str = "redis://[USER:PASSWORD@]HOST[:PORT][/DB][?prefix=P], rediss://... or redis+unix:///PATH[?db=N&prefix=P]";

impl RedisLocation {
    /// The schemes read as a Redis server.
    pub const SCHEMES: [&'static str; 3] = ["redis", "rediss", "redis+unix"];

    /// Reads a Redis URL (see `FORMS`). Errors say what is wrong and what is accepted, and
    /// never quote the password.
    pub fn parse(value: &str) -> Result<RedisLocation, String> {
        let bad = |why: &str| format!("--state: {why} (accepted: {FORMS})");
        let url = url::Url::parse(value).map_err(|e| bad(&format!("not a valid URL ({e})")))?;
        let decode = |s: &str| {
            percent_decode(s).ok_or_else(|| bad("the URL's user or password is not valid UTF-8"))
        };
        let mut user = (!url.username().is_empty())
            .then(|| decode(url.username()))
            .transpose()?;
        let mut password = url.password().map(decode).transpose()?;
        // `redis://SECRET@HOST`, a userinfo without a colon, is a password to Redis clients
        // that take it (Redis has no user without one): read and masked as one.
        if password.is_none() && user.is_some() {
            password = user.take();
        }
        if url.fragment().is_some() {
            return Err(bad("a Redis URL has no #fragment"));
        }
        let scheme = url.scheme().to_ascii_lowercase();
        let mut db: Option<u32> = None;
        let mut prefix = None;
        for (k, v) in url.query_pairs() {
            match (&*k, scheme.as_str()) {
                ("prefix", _) if prefix.is_none() => prefix = Some(v.into_owned()),
                ("db", "redis+unix") if db.is_none() => {
                    db = Some(number(&v).ok_or_else(|| {
                        bad(&format!("db={v} is not a database number (0 and up)"))
                    })?)
                }
                ("user", "redis+unix") if user.is_none() => user = Some(v.into_owned()),
                ("password", "redis+unix") if password.is_none() => password = Some(v.into_owned()),
                (k, _) => {
                    let accepted = if scheme == "redis+unix" {
                        "db, prefix, user, password, each once"
                    } else {
                        "prefix, once"
                    };
                    return Err(bad(&format!(
                        "the URL's query has {k}= (accepted: {accepted})"
                    )));
                }
            }
        }
        let endpoint = if scheme == "redis+unix" {
            if url.host_str().is_some_and(|h| !h.is_empty()) {
                return Err(bad(
                    "a redis+unix URL names no host: write redis+unix:///PATH (three slashes)",
                ));
            }
            let path = percent_decode(url.path()).ok_or_else(|| bad("the path is not UTF-8"))?;
            if path.is_empty() || path == "/" {
                return Err(bad("a redis+unix URL needs the socket's path"));
            }
            Endpoint::Unix(PathBuf::from(path))
        } else {
            let host = match url.host() {
                Some(url::Host::Ipv6(a)) => a.to_string(),
                Some(h) => h.to_string(),
                None => return Err(bad("the URL names no host")),
            };
            if host.is_empty() {
                return Err(bad("the URL names no host"));
            }
            let path = url.path().trim_start_matches('/');
            if !path.is_empty() {
                db = Some(number(path).ok_or_else(|| {
                    bad("the path must be a database number, such as /0 (the prefix goes in ?prefix=)")
                })?);
            }
            Endpoint::Tcp {
                host,
                port: url.port().unwrap_or(DEFAULT_PORT),
                tls: scheme == "rediss",
            }
        };
        Ok(RedisLocation {
            endpoint,
            db: db.unwrap_or(0),
            user,
            password,
            prefix: prefix.unwrap_or_else(|| DEFAULT_PREFIX.to_string()),
        })
    }

    /// The URL as messages show it: the password masked as `***`, the prefix when it is not
    /// the default.
    pub fn display(&self) -> String {
        let auth = match (&self.user, &self.password) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            (None, Some(_)) => ":***@".to_string(),
            (Some(u), None) => format!("{u}@"),
            (None, None) => String::new(),
        };
        let prefix = (self.prefix != DEFAULT_PREFIX).then(|| format!("prefix={}", self.prefix));
        match &self.endpoint {
            Endpoint::Tcp { host, port, tls } => {
                let scheme = if *tls { "rediss" } else { "redis" };
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                let query = prefix.map(|p| format!("?{p}")).unwrap_or_default();
                format!("{scheme}://{auth}{host}:{port}/{}{query}", self.db)
            }
            Endpoint::Unix(path) => {
                let mut query: Vec<String> = Vec::new();
                if self.db != 0 {
                    query.push(format!("db={}", self.db));
                }
                query.extend(prefix);
                if self.password.is_some() {
                    query.push("password=***".into());
                }
                let query = if query.is_empty() {
                    String::new()
                } else {
                    format!("?{}", query.join("&"))
                };
                format!("redis+unix://{}{query}", path.display())
            }
        }
    }
}

/// A database number: decimal digits, at most 2^31 - 1 (Redis's own limit).
fn number(s: &str) -> Option<u32> {
    s.parse::<u32>()
        .ok()
        .filter(|n| *n <= i32::MAX as u32 && s.bytes().all(|b| b.is_ascii_digit()))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(h) = bytes.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(std::str::from_utf8(h).ok()?, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The compare-and-set: replaces KEYS[1] with ARGV[2] (deletes it when ARGV[2] is empty;
/// expires it in ARGV[3] ms) only if it still holds ARGV[1] (empty: no key). Answers
/// `{1}`, or `{0, current text, seconds, microseconds}` when another run wrote first.
const CAS: &str = r"
local cur = redis.call('GET', KEYS[1])
if (cur or '') ~= ARGV[1] then
  local t = redis.call('TIME')
  return {0, cur or '', t[1], t[2]}
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return {1}
";

/// The read: the server's `TIME` (seconds, microseconds) and the text of KEYS[1] (empty:
/// no key), in one answer.
const READ: &str = r"
local t = redis.call('TIME')
return {t[1], t[2], redis.call('GET', KEYS[1]) or ''}
";

/// The store on a Redis server: a `Store`.
pub struct RedisStore {
    location: RedisLocation,
    limits: Limits,
    clock: Clock,
    /// Where to connect, and the PEM of `--state-cacert` (read when the store was opened).
    dial: Arc<Dial>,
    /// The worker that holds the connection, started by the first operation.
    worker: Mutex<Option<Worker>>,
}

/// What connecting needs, shared with the worker thread.
struct Dial {
    location: RedisLocation,
    cacert: Option<Vec<u8>>,
}

/// A command for the worker, the instant its answer is due, and where to send it.
type Job = (
    redis::Cmd,
    Instant,
    mpsc::Sender<std::io::Result<redis::Value>>,
);

/// The thread that owns the connection and sends the commands. The store waits for each
/// answer only until the operation's bound: a server that trickles its answer a byte at a
/// time (which no socket timeout catches) or a resolver that hangs leaves the worker
/// behind, blocked, and the store goes on with a new one at its next operation.
struct Worker {
    jobs: mpsc::Sender<Job>,
}

/// A record as read: the key's text (what the compare-and-set compares with), the record,
/// its revision, and the server's time.
struct Read {
    text: String,
    target: Target,
    rev: u64,
    now: Millis,
}

fn other(why: String) -> std::io::Error {
    std::io::Error::other(why)
}

fn timed_out(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_string())
}

/// An operation's error, with a time-out said in one way: what took too long, and the
/// bound it had.
fn within(e: std::io::Error, bound: Duration) -> std::io::Error {
    if e.kind() != std::io::ErrorKind::TimedOut {
        return e;
    }
    std::io::Error::new(
        e.kind(),
        format!(
            "{e} timed out after {} (--state-timeout, and at most half the time left before the deadline)",
            crate::units::fmt_duration(bound)
        ),
    )
}

impl RedisStore {
    /// The store at `location`, forgetting by `limits`. Nothing is connected yet: the first
    /// operation connects, within its bound. `cacert` is read now (errors say why not).
    pub fn open(
        location: &RedisLocation,
        limits: &Limits,
        clock: Clock,
        cacert: Option<&Path>,
        _bound: Duration,
    ) -> Result<RedisStore, String> {
        let cacert = match cacert {
            None => None,
            Some(p) => {
                let cannot =
                    |why: String| format!("cannot read --state-cacert {}: {why}", p.display());
                let file = std::fs::File::open(p).map_err(|e| cannot(e.to_string()))?;
                let pem = crate::files::read_bounded(file, MAX_CACERT)
                    .map_err(|e| cannot(e.to_string()))?
                    .ok_or_else(|| cannot("larger than 1 MiB".into()))?;
                Some(pem)
            }
        };
        Ok(RedisStore {
            location: location.clone(),
            limits: *limits,
            clock,
            dial: Arc::new(Dial {
                location: location.clone(),
                cacert,
            }),
            worker: Mutex::new(None),
        })
    }

    fn key(&self, target: &str) -> String {
        format!("{}{target}", self.location.prefix)
    }

    /// Sends `cmd` through the worker (started first if there is none) and waits for its
    /// answer until `until`; `what` names the step in errors. A step that does not answer
    /// in time leaves its worker behind: the next operation starts another.
    fn send(&self, cmd: redis::Cmd, until: Instant, what: &str) -> std::io::Result<redis::Value> {
        let mut slot = self
            .worker
            .lock()
            .map_err(|_| other("the store's worker was poisoned".into()))?;
        if slot.is_none() {
            *slot = Some(Worker::start(Arc::clone(&self.dial))?);
        }
        let Some(worker) = slot.as_ref() else {
            return Err(other("no worker".into()));
        };
        let (tx, rx) = mpsc::channel();
        if worker.jobs.send((cmd, until, tx)).is_err() {
            *slot = None;
            return Err(other("the store's worker stopped".into()));
        }
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                *slot = None;
                Err(if e.kind() == std::io::ErrorKind::TimedOut {
                    timed_out(what)
                } else {
                    e
                })
            }
            Err(_) => {
                *slot = None;
                Err(timed_out(what))
            }
        }
    }

    /// Reads `key` and the server's time in one round trip: one command with one answer
    /// (`READ` sent whole by `EVAL`), so a server that stops answering costs one read
    /// timeout. (A pipeline of `TIME` and `GET` waited out the timeout once per command, and
    /// `EVALSHA` costs two more round trips when the script is not loaded.)
    fn read(&self, key: &str, until: Instant, warn: &dyn Fn(&str)) -> std::io::Result<Read> {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(READ).arg(1).arg(key);
        let answer = self.send(cmd, until, "reading the store")?;
        let (secs, micros, text): (String, String, String) = redis::from_redis_value(answer)
            .map_err(|e| other(format!("the store answered nonsense ({e})")))?;
        let now = self.time(&secs, &micros)?;
        Ok(self.parse(key, text, now, warn))
    }

    /// The time of a `TIME` answer in milliseconds, or the test's clock.
    fn time(&self, secs: &str, micros: &str) -> std::io::Result<Millis> {
        if let Some(t) = self.clock.manual_time() {
            return Ok(t);
        }
        let s: u64 = secs
            .parse()
            .map_err(|_| other("TIME answered nonsense".into()))?;
        let us: u64 = micros
            .parse()
            .map_err(|_| other("TIME answered nonsense".into()))?;
        Ok(s.saturating_mul(1000).saturating_add(us / 1000))
    }

    /// The record in `text` (empty: none), tidied as of `now`. A value retry-http cannot
    /// read is reported and replaced, as a corrupt state file of ours is.
    fn parse(&self, key: &str, text: String, now: Millis, warn: &dyn Fn(&str)) -> Read {
        let mut read = Read {
            text,
            target: Target::default(),
            rev: 0,
            now,
        };
        if read.text.is_empty() {
            return read;
        }
        let parsed = serde_json::from_str::<Value>(&read.text)
            .ok()
            .and_then(|v| {
                let rev = v.get("rev")?.as_u64()?;
                if v.get("format")? != crate::fleet::record::FORMAT {
                    return None;
                }
                Some((rev, target_from_value(v.get("target")?, now)?))
            });
        match parsed {
            Some((rev, mut target)) => {
                read.rev = rev;
                if !target.tidy(now, &self.limits) {
                    target = Target::default();
                }
                read.target = target;
            }
            None => warn(&format!(
                "the key {key} in the state store is not a record of retry-http's; starting it afresh"
            )),
        }
        read
    }

    /// The text that replaces a record: empty when there is nothing left to remember (the
    /// key is deleted), with the milliseconds it lives.
    fn text(&self, target: &mut Target, rev: u64, now: Millis) -> (String, Millis) {
        if !target.tidy(now, &self.limits) {
            return (String::new(), 0);
        }
        let v = json!({
            "format": crate::fleet::record::FORMAT,
            "rev": rev.wrapping_add(1),
            "target": target_json(target),
        });
        let ttl = target.expires_at(&self.limits).saturating_sub(now).max(1);
        (v.to_string(), ttl)
    }
}

impl Store for RedisStore {
    fn update(
        &self,
        key: &str,
        bound: Duration,
        warn: &dyn Fn(&str),
        change: &mut dyn FnMut(&mut Target, Millis),
    ) -> std::io::Result<()> {
        self.agree(key, bound, warn, change)
            .map_err(|e| within(e, bound))
    }

    fn peek(&self, key: &str, bound: Duration) -> std::io::Result<(Target, Millis)> {
        let until = Instant::now() + bound;
        let read = self
            .read(&self.key(key), until, &|_| {})
            .map_err(|e| within(e, bound))?;
        Ok((read.target, read.now))
    }
}

impl RedisStore {
    /// `Store::update`'s loop: read, decide, compare-and-set; on a conflict, decide again on
    /// the record the script answered with, after a short random pause that grows with
    /// each conflict (up to `MAX_PAUSE`), so runs that collide spread out instead of
    /// colliding again in step. A decision that changes nothing worth writing (see
    /// `Target::worth_writing`) writes nothing.
    fn agree(
        &self,
        key: &str,
        bound: Duration,
        warn: &dyn Fn(&str),
        change: &mut dyn FnMut(&mut Target, Millis),
    ) -> std::io::Result<()> {
        let until = Instant::now() + bound;
        let key = self.key(key);
        let mut read = self.read(&key, until, warn)?;
        let mut conflicts = 0u32;
        loop {
            let mut target = read.target.clone();
            change(&mut target, read.now);
            let worth = target.worth_writing(&read.target, &self.limits);
            let (text, ttl) = self.text(&mut target, read.rev, read.now);
            // Nothing to write: no key and nothing to remember, or a key whose record the
            // decision did not change enough (a key with nothing left is still deleted).
            if text.is_empty() && read.text.is_empty() || !text.is_empty() && !worth {
                return Ok(());
            }
            // Sent whole (`EVAL`): one round trip, and nothing to reload when the server's
            // scripts were flushed.
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(CAS)
                .arg(1)
                .arg(&key)
                .arg(&read.text)
                .arg(&text)
                .arg(ttl);
            let answer: Vec<redis::Value> =
                redis::from_redis_value(self.send(cmd, until, "writing to the store")?)
                    .map_err(|e| other(format!("the store answered nonsense ({e})")))?;
            match answer.as_slice() {
                [redis::Value::Int(1)] => return Ok(()),
                [redis::Value::Int(0), current, secs, micros] => {
                    let text = string(current);
                    let now = self.time(&string(secs), &string(micros))?;
                    read = self.parse(&key, text, now, warn);
                    conflicts = conflicts.saturating_add(1);
                    // Full jitter, doubling from 1 ms, never more than a quarter of the
                    // time left: the run keeps time to write once it is its turn.
                    let left = until.saturating_duration_since(Instant::now());
                    let ceiling = MAX_PAUSE
                        .min(Duration::from_micros(500) * (1 << conflicts.min(10)))
                        .min(left / 4);
                    if left.is_zero() {
                        return Err(timed_out("agreeing with other runs on the record"));
                    }
                    std::thread::sleep(crate::policy::backoff::uniform(&mut rand::rng(), ceiling));
                }
                _ => return Err(other("the store's script answered nonsense".into())),
            }
        }
    }
}

/// Resolves a host name within `bound`, on a thread of its own (the system's resolver
/// cannot be given a timeout); the thread is left behind if it takes longer.
fn resolve(host: &str, port: u16, bound: Duration) -> std::io::Result<SocketAddr> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let (tx, rx) = mpsc::channel();
    let name = host.to_string();
    std::thread::Builder::new()
        .name("state-resolve".into())
        .spawn(move || {
            let _ = tx.send(
                (name.as_str(), port)
                    .to_socket_addrs()
                    .map(|mut a| a.next()),
            );
        })?;
    match rx.recv_timeout(bound) {
        Ok(Ok(Some(addr))) => Ok(addr),
        Ok(Ok(None)) => Err(other(format!("{host} has no address"))),
        Ok(Err(e)) => Err(other(format!("cannot resolve {host}: {e}"))),
        Err(_) => Err(timed_out(&format!("resolving {host}"))),
    }
}

impl Worker {
    /// Starts the worker thread; it connects at its first command.
    fn start(dial: Arc<Dial>) -> std::io::Result<Worker> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("state-store".into())
            .spawn(move || {
                let mut connection: Option<redis::Connection> = None;
                for (cmd, until, answer) in queue {
                    let result = Worker::run(&dial, &mut connection, &cmd, until);
                    if result.is_err() {
                        connection = None;
                    }
                    if answer.send(result).is_err() {
                        // The store gave up waiting: this connection is not to be trusted.
                        return;
                    }
                }
            })?;
        Ok(Worker { jobs })
    }

    /// One command: connects first if needed, each read and write bounded by the time left.
    fn run(
        dial: &Dial,
        connection: &mut Option<redis::Connection>,
        cmd: &redis::Cmd,
        until: Instant,
    ) -> std::io::Result<redis::Value> {
        if connection.is_none() {
            *connection = Some(dial.connect(until)?);
        }
        let Some(c) = connection.as_mut() else {
            return Err(other("no connection".into()));
        };
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out("the store"));
        }
        c.set_read_timeout(Some(left))
            .and_then(|()| c.set_write_timeout(Some(left)))
            .and_then(|()| cmd.query::<redis::Value>(c))
            .map_err(|e| io_error(&e, "the store", until))
    }
}

impl Dial {
    /// Connects, within what is left before `until`.
    fn connect(&self, until: Instant) -> std::io::Result<redis::Connection> {
        let left = |what: &str| {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                Err(timed_out(what))
            } else {
                Ok(left)
            }
        };
        let addr = match &self.location.endpoint {
            Endpoint::Unix(path) => redis::ConnectionAddr::Unix(path.clone()),
            Endpoint::Tcp {
                host,
                port,
                tls: false,
            } => {
                let a = resolve(host, *port, left("connecting")?)?;
                redis::ConnectionAddr::Tcp(a.ip().to_string(), a.port())
            }
            Endpoint::Tcp {
                host,
                port,
                tls: true,
            } => {
                // Resolved here within the bound; the TLS connection names the host again
                // (for the certificate), which the resolver then answers from what it knows.
                resolve(host, *port, left("connecting")?)?;
                redis::ConnectionAddr::TcpTls {
                    host: host.clone(),
                    port: *port,
                    insecure: false,
                    tls_params: None,
                }
            }
        };
        let mut settings = redis::RedisConnectionInfo::default()
            .set_db(i64::from(self.location.db))
            .set_skip_set_lib_name();
        if let Some(u) = &self.location.user {
            settings = settings.set_username(u);
        }
        if let Some(p) = &self.location.password {
            settings = settings.set_password(p);
        }
        let info = redis::IntoConnectionInfo::into_connection_info(addr)
            .map_err(|e| other(describe(&e)))?
            .set_redis_settings(settings);
        let client = match &self.cacert {
            Some(pem) if matches!(self.location.endpoint, Endpoint::Tcp { tls: true, .. }) => {
                redis::Client::build_with_tls(
                    info,
                    redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem.clone()),
                    },
                )
            }
            _ => redis::Client::open(info),
        }
        .map_err(|e| other(describe(&e)))?;
        let connection = client
            .get_connection_with_timeout(left("connecting")?)
            .map_err(|e| io_error(&e, "connecting", until))?;
        Ok(connection)
    }
}

/// The text of a script's bulk or simple string answer (or of an integer).
fn string(v: &redis::Value) -> String {
    match v {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        redis::Value::SimpleString(s) => s.clone(),
        redis::Value::Int(n) => n.to_string(),
        _ => String::new(),
    }
}

/// A Redis error as an I/O error, its kind `TimedOut` when the time ran out.
fn io_error(e: &redis::RedisError, what: &str, until: Instant) -> std::io::Error {
    if e.is_timeout() || Instant::now() >= until {
        return timed_out(what);
    }
    other(describe(e))
}

/// What went wrong, in words, from the server's error code where there is one (also when
/// it comes inside a pipeline's failure). Never includes the URL (it may hold a password).
fn describe(e: &redis::RedisError) -> String {
    // A pipeline's or a transaction's error carries the server's errors inside it: the
    // first one says why.
    let inner = e.clone().into_server_errors();
    let first = inner
        .as_deref()
        .and_then(|errors| errors.first())
        .map(|(_, s)| s);
    let code = first.map_or(e.code().unwrap_or(""), |s| s.code());
    let detail = first
        .map_or(e.detail(), |s| s.details())
        .unwrap_or("")
        .trim();
    match code {
        "NOAUTH" => "the server wants a password (give it in the URL)".into(),
        "WRONGPASS" => "the server refused the user or password".into(),
        "OOM" => "the server is out of memory (maxmemory)".into(),
        "READONLY" => "the server is a read-only replica".into(),
        "WRONGTYPE" => "the key holds a value of another type than a string".into(),
        "NOPERM" => {
            format!("the user may not run what the store needs: GET, TIME, EVAL ({detail})")
        }
        "" if e.is_connection_refusal() => "the connection was refused".into(),
        // What the client makes of a refused AUTH: the server's words are not kept.
        "" if e.kind() == redis::ErrorKind::AuthenticationFailed => {
            "the server refused the user or password".into()
        }
        "" => e.to_string(),
        code => format!("the server answered {code} {detail}"),
    }
}

#[cfg(test)]
#[path = "../../tests/support/redis_server.rs"]
mod redis_server;

#[cfg(test)]
mod tests {
    use super::redis_server::RedisServer;
    use super::*;
    use crate::fleet::breaker::{Admission, Breaker, RunResult};
    use crate::fleet::file::FileStore;
    use crate::fleet::store::contract;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestRunner};
    use std::cell::{Cell, RefCell};
    use std::sync::Barrier;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The bound of the operations that must succeed: generous, so a loaded machine does
    /// not fail them.
    const BOUND: Duration = Duration::from_secs(10);

    /// The bound of the operations that must fail, and how late past it they may end.
    const SHORT: Duration = Duration::from_millis(300);
    const LATE: Duration = Duration::from_millis(200);

    /// A time of the manual clocks: some day in 2023, in milliseconds.
    const T0: Millis = 1_700_000_000_000;

    fn quiet(m: &str) {
        panic!("no warning expected, got: {m}");
    }

    fn open_url(url: &str, limits: &Limits, clock: Clock) -> RedisStore {
        let location = RedisLocation::parse(url).expect("the server's URL is valid");
        RedisStore::open(&location, limits, clock, None, Duration::from_secs(2))
            .expect("opening connects to nothing")
    }

    fn open_on(server: &RedisServer, limits: &Limits, clock: Clock) -> RedisStore {
        open_url(&server.url(), limits, clock)
    }

    /// A Redis store with the server it talks to, which lives as long as the store (the
    /// store is dropped first, then the server is killed).
    struct Served {
        store: RedisStore,
        _server: RedisServer,
    }

    impl Store for Served {
        fn update(
            &self,
            key: &str,
            bound: Duration,
            warn: &dyn Fn(&str),
            change: &mut dyn FnMut(&mut Target, Millis),
        ) -> std::io::Result<()> {
            self.store.update(key, bound, warn, change)
        }

        fn peek(&self, key: &str, bound: Duration) -> std::io::Result<(Target, Millis)> {
            self.store.peek(key, bound)
        }
    }

    /// The contract's store: a server of its own for each test.
    fn redis_store(_: &Path, limits: &Limits, clock: Clock) -> Box<dyn Store> {
        let server = RedisServer::start();
        let store = open_on(&server, limits, clock);
        Box::new(Served {
            store,
            _server: server,
        })
    }

    crate::fleet::store::store_contract!(redis_store);

    /// `Store::decide` on a concrete store.
    fn decide<T>(
        store: &dyn Store,
        key: &str,
        decide: impl FnMut(&mut Target, Millis) -> T,
    ) -> std::io::Result<T> {
        store.decide(key, BOUND, &quiet, decide)
    }

    /// The decision that records a failed run.
    fn fail(l: &Limits) -> impl Fn(&mut Target, Millis) + '_ {
        move |t, now| t.finish(now, RunResult::Failure, None, l)
    }

    /// A connection of the test's own, to look at the keys behind the store's back.
    fn connection(server: &RedisServer) -> redis::Connection {
        redis::Client::open(server.url().as_str())
            .expect("the server's URL is valid")
            .get_connection_with_timeout(BOUND)
            .expect("the test connects to its server")
    }

    /// How many runs race in the concurrency tests.
    const RUNS: usize = 64;

    /// Runs `each(i, store)` on `RUNS` threads at once, each with a store (and so a
    /// connection) of its own on `server`, connected before they all start; their answers
    /// in the order of `i`.
    fn race<T: Send>(
        server: &RedisServer,
        limits: &Limits,
        each: impl Fn(usize, &dyn Store) -> T + Sync,
    ) -> Vec<T> {
        let url = server.url();
        let start = Barrier::new(RUNS);
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..RUNS)
                .map(|i| {
                    let (url, start, each) = (&url, &start, &each);
                    s.spawn(move || {
                        let store = open_url(url, limits, Clock::own());
                        store.peek("warm-up", BOUND).expect("the store connects");
                        start.wait();
                        each(i, &store)
                    })
                })
                .collect();
            runs.into_iter()
                .map(|r| r.join().expect("a run panicked"))
                .collect()
        })
    }

    /// 64 runs, each on its own connection, record a failure at the same moment: the
    /// compare-and-set loses none of them.
    #[test]
    fn sixty_four_concurrent_updates_lose_none() {
        let server = RedisServer::start();
        let l = Limits {
            threshold: 1000,
            ..contract::limits()
        };
        let calls = AtomicUsize::new(0);
        let seen = race(&server, &l, |_, store| {
            decide(store, "http://down:80", |t, now| {
                calls.fetch_add(1, Ordering::SeqCst);
                t.finish(now, RunResult::Failure, None, &l);
                t.breaker.failures
            })
            .expect("the update succeeds within its bound")
        });
        let (t, _) = open_on(&server, &l, Clock::own())
            .peek("http://down:80", BOUND)
            .expect("the store answers");
        assert_eq!(t.breaker.failures, RUNS as u32);
        let mut seen = seen;
        seen.sort_unstable();
        let each: Vec<u32> = (1..=RUNS as u32).collect();
        assert_eq!(seen, each, "each run saw its own failure counted last");
        assert!(calls.load(Ordering::SeqCst) >= RUNS);
    }

    /// 64 runs ask a half-open circuit at the same moment: exactly one is the probe, and
    /// the record holds its number. Ten rounds, each on a circuit opened afresh, since a
    /// store that loses updates may still hand out one probe in a given round.
    #[test]
    fn sixty_four_runs_race_for_one_probe() {
        let server = RedisServer::start();
        let l = contract::limits();
        let key = "http://flaky:80";
        let opener = open_on(&server, &l, Clock::own());
        for round in 0..10 {
            decide(&opener, key, |t, now| {
                t.seen = now;
                t.breaker = Breaker {
                    failures: 3,
                    opened_at: Some(now - 60_000),
                    probe_until: None,
                    probe_id: None,
                };
            })
            .expect("the record is written");
            let answers = race(&server, &l, |i, store| {
                decide(store, key, |t, now| {
                    t.admit(now, &l, Duration::from_secs(60), i as u64 + 1)
                })
                .expect("the admission succeeds within its bound")
            });
            let probes: Vec<usize> = (0..RUNS)
                .filter(|i| answers[*i] == Admission::Probe)
                .collect();
            assert_eq!(probes.len(), 1, "round {round}: {answers:?}");
            for a in &answers {
                assert!(
                    *a == Admission::Probe
                        || matches!(a, Admission::Refuse { why, .. } if why.contains("probe is in flight")),
                    "round {round}: {a:?}"
                );
            }
            let (t, _) = opener.peek(key, BOUND).expect("the store answers");
            assert_eq!(
                t.breaker.probe_id,
                Some(probes[0] as u64 + 1),
                "round {round}"
            );
        }
    }

    /// 64 runs ask for a retry at the same moment from a budget that allows its floor of
    /// 10: exactly 10 are granted.
    #[test]
    fn sixty_four_runs_share_one_budget_exactly() {
        let server = RedisServer::start();
        let l = Limits {
            budget_pct: 0.0,
            floor: 10,
            ..contract::limits()
        };
        let answers = race(&server, &l, |_, store| {
            decide(store, "http://busy:80", |t, now| t.take_retry(now, &l))
                .expect("the budget answers within its bound")
        });
        assert_eq!(answers.iter().filter(|a| a.is_ok()).count(), 10);
        let (t, _) = open_on(&server, &l, Clock::own())
            .peek("http://busy:80", BOUND)
            .expect("the store answers");
        assert_eq!(t.budget.counts(), (0, 10));
    }

    /// A write by another run between the read and the compare-and-set makes the decision
    /// again, on the record that run wrote: both updates count.
    #[test]
    fn a_conflicting_write_makes_the_decision_again_on_the_new_record() {
        let server = RedisServer::start();
        let l = contract::limits();
        let ours = open_on(&server, &l, Clock::own());
        let theirs = open_on(&server, &l, Clock::own());
        let calls = Cell::new(0);
        let failures = decide(&ours, "t", |t, now| {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                decide(&theirs, "t", fail(&l)).expect("the other run writes");
            }
            t.finish(now, RunResult::Failure, None, &l);
            t.breaker.failures
        })
        .expect("the update succeeds after the conflict");
        assert_eq!((calls.get(), failures), (2, 2));
        let (t, _) = theirs.peek("t", BOUND).expect("the store answers");
        assert_eq!(t.breaker.failures, 2);
    }

    /// The store over a Unix socket, over TLS with `--state-cacert`, and in another
    /// database under another prefix: each keeps the record where the URL says. Without
    /// the CA, the TLS server's certificate is refused.
    #[test]
    fn every_kind_of_endpoint_keeps_records() {
        let l = contract::limits();
        let unix = RedisServer::start_unix();
        let tls = RedisServer::start_tls();
        let tcp = RedisServer::start();
        let ca = tls.ca_file().expect("a TLS server has a CA");
        let location = RedisLocation::parse(&tls.url()).expect("valid");
        let stores = [
            (&unix, open_on(&unix, &l, Clock::own()), "0", "retry-http:t"),
            (
                &tls,
                RedisStore::open(&location, &l, Clock::own(), Some(&ca), BOUND)
                    .expect("the CA is read"),
                "0",
                "retry-http:t",
            ),
            (
                &tcp,
                open_url(&format!("{}/3?prefix=ci:", tcp.url()), &l, Clock::own()),
                "3",
                "ci:t",
            ),
        ];
        for (server, store, db, key) in &stores {
            decide(store, "t", fail(&l)).expect("the update succeeds");
            let (t, _) = store.peek("t", BOUND).expect("the store answers");
            assert_eq!(t.breaker.failures, 1, "{}", server.url());
            let text = server.cli(&["-n", db, "GET", key]);
            assert!(text.contains("\"failures\":1"), "{}: {text}", server.url());
        }
        let no_ca = RedisStore::open(&location, &l, Clock::own(), None, BOUND).expect("opens");
        let e = decide(&no_ca, "t", fail(&l)).expect_err("an unknown CA is refused");
        assert!(e.to_string().contains("certificate"), "{e}");
    }

    /// Asserts that `op` fails within `SHORT` plus `LATE`, and returns its error.
    fn fails_in_time<T: std::fmt::Debug>(
        op: impl FnOnce(Duration) -> std::io::Result<T>,
    ) -> std::io::Error {
        let t0 = Instant::now();
        let e = op(SHORT).expect_err("the store cannot be used");
        let took = t0.elapsed();
        assert!(took <= SHORT + LATE, "{took:?}: {e}");
        e
    }

    /// Nothing listens on the port: the update fails at once, saying so.
    #[test]
    fn a_port_with_nothing_listening_fails_within_the_bound() {
        let l = contract::limits();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .expect("a free port")
            .port();
        let store = open_url(&format!("redis://127.0.0.1:{port}"), &l, Clock::own());
        let e = fails_in_time(|b| store.update("t", b, &quiet, &mut fail(&l)));
        assert!(e.to_string().contains("refused"), "{e}");
        let e = fails_in_time(|b| store.peek("t", b));
        assert!(e.to_string().contains("refused"), "{e}");
    }

    /// A frozen server (SIGSTOP: the kernel still accepts, nothing answers) or a paused one
    /// (`CLIENT PAUSE`): the update gives up at its bound, on a connection made before and
    /// on a new one; the store reconnects once the server answers again.
    #[test]
    fn a_frozen_or_paused_server_fails_within_the_bound_and_is_used_again() {
        let server = RedisServer::start();
        let l = contract::limits();
        let warm = open_on(&server, &l, Clock::own());
        decide(&warm, "t", fail(&l)).expect("the server answers");
        server.stop_signal();
        let fresh = open_on(&server, &l, Clock::own());
        for store in [&warm, &fresh] {
            let e = fails_in_time(|b| store.update("t", b, &quiet, &mut fail(&l)));
            assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
            assert!(e.to_string().contains("--state-timeout"), "{e}");
        }
        server.cont_signal();
        decide(&warm, "t", fail(&l)).expect("the store reconnects");
        let (t, _) = fresh.peek("t", BOUND).expect("the store reconnects");
        assert_eq!(t.breaker.failures, 2, "the frozen attempts changed nothing");
        server.cli(&["CLIENT", "PAUSE", "10000", "ALL"]);
        let e = fails_in_time(|b| warm.update("t", b, &quiet, &mut fail(&l)));
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    }

    /// A key of the record's name holding a hash: the update fails, says why, and leaves
    /// the key alone.
    #[test]
    fn a_key_of_another_type_is_an_error_and_left_alone() {
        let server = RedisServer::start();
        let l = contract::limits();
        server.cli(&["HSET", "retry-http:t", "f", "v"]);
        let store = open_on(&server, &l, Clock::own());
        let e = decide(&store, "t", fail(&l)).expect_err("a hash is not a record");
        assert!(e.to_string().contains("another type"), "{e}");
        let e = store.peek("t", BOUND).expect_err("nor for a peek");
        assert!(e.to_string().contains("another type"), "{e}");
        assert_eq!(server.cli(&["TYPE", "retry-http:t"]), "hash");
    }

    /// A string that is not a record of ours (garbage, another format's JSON) is replaced
    /// by a fresh record, with one warning that names the key; the next update has none.
    #[test]
    fn a_key_holding_garbage_is_replaced_with_one_warning() {
        let server = RedisServer::start();
        let l = contract::limits();
        let store = open_on(&server, &l, Clock::own());
        for garbage in ["garbage", "{\"format\":\"other\",\"rev\":1,\"target\":{}}"] {
            server.cli(&["SET", "retry-http:t", garbage]);
            let warnings = RefCell::new(Vec::new());
            let warn = |m: &str| warnings.borrow_mut().push(m.to_string());
            store
                .update("t", BOUND, &warn, &mut fail(&l))
                .expect("the record is replaced");
            let warnings = warnings.into_inner();
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(warnings[0].contains("retry-http:t"), "{warnings:?}");
            decide(&store, "t", fail(&l)).expect("no warning the second time");
            let (t, _) = store.peek("t", BOUND).expect("the store answers");
            assert_eq!(t.breaker.failures, 2, "{garbage}: afresh");
            let text = server.cli(&["GET", "retry-http:t"]);
            let v: Value = serde_json::from_str(&text).expect("a record of ours is JSON");
            assert_eq!(v["format"], crate::fleet::record::FORMAT);
        }
    }

    /// `SCRIPT FLUSH` between updates: the script is loaded again, nothing is lost.
    #[test]
    fn flushed_scripts_are_loaded_again() {
        let server = RedisServer::start();
        let l = contract::limits();
        let store = open_on(&server, &l, Clock::own());
        decide(&store, "t", fail(&l)).expect("the first update");
        assert_eq!(server.cli(&["SCRIPT", "FLUSH"]), "OK");
        decide(&store, "t", fail(&l)).expect("the script is loaded again");
        let (t, _) = store.peek("t", BOUND).expect("the store answers");
        assert_eq!(t.breaker.failures, 2);
    }

    /// A server that wants a password (set after it started): a store without one is told
    /// so, a wrong one is refused, and neither message quotes the URL or the password; the
    /// right one works.
    #[test]
    fn a_password_the_server_wants_is_asked_for_without_the_url() {
        let server = RedisServer::start();
        let l = contract::limits();
        assert_eq!(server.cli(&["CONFIG", "SET", "requirepass", "x"]), "OK");
        let url = server.url();
        let port = server.port().expect("TCP").to_string();
        let without = open_on(&server, &l, Clock::own());
        let e = decide(&without, "t", fail(&l)).expect_err("a password is wanted");
        let e = e.to_string();
        assert!(e.contains("wants a password"), "{e}");
        assert!(!e.contains(&url) && !e.contains(&port), "{e}");
        let wrong = open_url(&url.replace("//", "//:s3cret@"), &l, Clock::own());
        let e = decide(&wrong, "t", fail(&l)).expect_err("a wrong password");
        let e = e.to_string();
        assert!(e.contains("refused the user or password"), "{e}");
        assert!(!e.contains("s3cret") && !e.contains(&port), "{e}");
        let right = open_url(&url.replace("//", "//:x@"), &l, Clock::own());
        decide(&right, "t", fail(&l)).expect("the right password works");
    }

    /// A server out of memory, and a read-only replica: the update fails and says which.
    #[test]
    fn a_server_that_refuses_writes_says_why() {
        let server = RedisServer::start();
        let l = contract::limits();
        let store = open_on(&server, &l, Clock::own());
        server.cli(&["CONFIG", "SET", "maxmemory", "1"]);
        let e = decide(&store, "t", fail(&l)).expect_err("out of memory");
        assert!(e.to_string().contains("out of memory"), "{e}");
        server.cli(&["CONFIG", "SET", "maxmemory", "0"]);
        decide(&store, "t", fail(&l)).expect("memory again");
        // A replica of a primary that is not there: it serves reads, refuses writes.
        server.cli(&["REPLICAOF", "127.0.0.1", "1"]);
        let e = decide(&store, "t", fail(&l)).expect_err("a replica");
        assert!(e.to_string().contains("read-only replica"), "{e}");
        let (t, _) = store.peek("t", BOUND).expect("a replica answers a peek");
        assert_eq!(t.breaker.failures, 1);
    }

    /// The milliseconds the key of `target` has left to live (`PTTL`: -2 when there is no
    /// key).
    fn pttl(server: &RedisServer, target: &str) -> i64 {
        let key = format!("{DEFAULT_PREFIX}{target}");
        let text = server.cli(&["PTTL", &key]);
        text.parse()
            .unwrap_or_else(|_| panic!("PTTL answered {text}"))
    }

    /// The key lives until the record expires: `--state-ttl` after its last event, or
    /// longer while its circuit refuses or a Retry-After holds.
    #[test]
    fn a_key_lives_until_its_record_expires() {
        let server = RedisServer::start();
        let l = Limits {
            cooldown: Duration::from_secs(48 * 3600),
            ..contract::limits()
        };
        let clock = Clock::manual(T0);
        let store = open_on(&server, &l, clock.clone());
        let hour: Millis = 3600 * 1000;
        type Change<'a> = &'a dyn Fn(&mut Target, Millis);
        let cases: [(&str, Change, Millis); 3] = [
            (
                "failed",
                &|t, now| t.finish(now, RunResult::Failure, None, &l),
                24 * hour,
            ),
            (
                "open",
                &|t, now| {
                    for _ in 0..3 {
                        t.finish(now, RunResult::Failure, None, &l);
                    }
                },
                48 * hour,
            ),
            (
                "held",
                &|t, now| t.hold(now, Duration::from_secs(30 * 3600)),
                30 * hour,
            ),
        ];
        for (target, change, lives) in cases {
            decide(&store, target, change).expect("the update succeeds");
            let (t, now) = store.peek(target, BOUND).expect("the store answers");
            assert_eq!(t.expires_at(&l) - now, lives, "{target}");
            let left = pttl(&server, target);
            let lives = lives as i64;
            assert!(
                left <= lives && left > lives - 10_000,
                "{target}: {left} of {lives}"
            );
        }
    }

    /// A record left with nothing to remember deletes its key; one that never held
    /// anything makes none.
    #[test]
    fn a_record_with_nothing_to_remember_deletes_its_key() {
        let server = RedisServer::start();
        let l = contract::limits();
        let clock = Clock::manual(T0);
        let store = open_on(&server, &l, clock.clone());
        let exists = |target: &str| server.cli(&["EXISTS", &format!("{DEFAULT_PREFIX}{target}")]);
        decide(&store, "admitted", |t, now| {
            t.admit(now, &l, Duration::ZERO, 1)
        })
        .expect("admitted");
        assert_eq!(
            exists("admitted"),
            "0",
            "a closed circuit's admission keeps nothing"
        );
        decide(&store, "held", |t, now| t.hold(now, Duration::from_secs(5))).expect("held");
        decide(&store, "failed", fail(&l)).expect("failed");
        assert_eq!((exists("held"), exists("failed")), ("1".into(), "1".into()));
        clock.set(T0 + 6_000);
        let held = decide(&store, "held", |t, now| t.held(now)).expect("read");
        assert_eq!(
            (held, exists("held")),
            (None, "0".into()),
            "the hold passed"
        );
        clock.set(T0 + 24 * 3600 * 1000);
        decide(&store, "failed", |_, _| {}).expect("read");
        assert_eq!(exists("failed"), "0", "idle for the TTL: forgotten");
    }

    /// One event of the property test, on one of the targets.
    #[derive(Debug, Clone)]
    enum Event {
        /// A run asks to start, with a lease of this many ms, as run number `id`.
        Admit { key: usize, lease: u64, id: u64 },
        /// A run ends (`probe`: the lease number it says it took).
        Finish {
            key: usize,
            result: RunResult,
            probe: Option<u64>,
        },
        /// A run asks for a retry.
        TakeRetry { key: usize },
        /// A run was told Retry-After: this many ms.
        Hold { key: usize, wait: u64 },
        /// A run asks whether a Retry-After holds.
        Held { key: usize },
        /// Time passes: this many ms.
        Advance(u64),
    }

    const HOUR: u64 = 3600 * 1000;

    fn event() -> impl Strategy<Value = Event> {
        let key = 0usize..3;
        let result = prop_oneof![
            1 => Just(RunResult::Success),
            3 => Just(RunResult::Failure),
            1 => Just(RunResult::Neutral)
        ];
        prop_oneof![
            4 => (key.clone(), 0u64..=120_000, 1u64..=4)
                .prop_map(|(key, lease, id)| Event::Admit { key, lease, id }),
            4 => (key.clone(), result, proptest::option::of(1u64..=4))
                .prop_map(|(key, result, probe)| Event::Finish { key, result, probe }),
            2 => key.clone().prop_map(|key| Event::TakeRetry { key }),
            1 => (key.clone(), prop_oneof![0u64..=60_000, 0u64..=30 * HOUR])
                .prop_map(|(key, wait)| Event::Hold { key, wait }),
            1 => key.prop_map(|key| Event::Held { key }),
            // Mostly within a cooldown or two, so that circuits get probed; now and then
            // up to 30 hours, past windows and TTLs.
            3 => prop_oneof![3 => 0u64..=1_000, 4 => 0u64..=120_000, 1 => 0u64..=30 * HOUR]
                .prop_map(Event::Advance),
        ]
    }

    fn limits_strategy() -> impl Strategy<Value = Limits> {
        (
            1u32..=4,
            1_000u64..=60_000,
            1_000u64..=600_000,
            0u32..=3,
            0u32..=2_000,
            1_000u64..=48 * HOUR,
        )
            .prop_map(|(threshold, cooldown, window, floor, pct, ttl)| Limits {
                threshold,
                cooldown: Duration::from_millis(cooldown),
                budget_pct: f64::from(pct) / 10.0,
                window: Duration::from_millis(window),
                floor,
                ttl: Duration::from_millis(ttl),
            })
    }

    /// What a decision answered, to compare the stores'.
    #[derive(Debug, PartialEq)]
    enum Answer {
        Admission(Admission),
        Done,
        Retry(Result<(), String>),
        Held(Option<Duration>),
    }

    fn store_error(e: std::io::Error) -> TestCaseError {
        TestCaseError::fail(format!("the store failed: {e}"))
    }

    /// The same events, fed to a file store and to a Redis store with clocks that agree,
    /// get the same answers, and leave the same records.
    #[test]
    fn the_file_and_redis_stores_decide_alike() {
        let server = RedisServer::start();
        let conn = RefCell::new(connection(&server));
        let mut runner = TestRunner::new(Config {
            cases: 24,
            failure_persistence: None,
            ..Config::default()
        });
        let cases = (
            limits_strategy(),
            T0..T0 + 100 * 24 * HOUR,
            1usize..=3,
            proptest::collection::vec(event(), 8..=40),
        );
        let result = runner.run(&cases, |(l, start, targets, events)| {
            let dir = tempfile::tempdir().map_err(store_error)?;
            let (file_clock, redis_clock) = (Clock::manual(start), Clock::manual(start));
            let file = FileStore::open(&dir.path().join("state.json"), &l, file_clock.clone())
                .map_err(TestCaseError::fail)?;
            redis::cmd("FLUSHALL")
                .exec(&mut *conn.borrow_mut())
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let redis = open_on(&server, &l, redis_clock.clone());
            let (file, redis): (&dyn Store, &dyn Store) = (&file, &redis);
            let name = |key: usize| format!("http://t{}:80", key % targets);
            let mut now = start;
            // The text of each key after the last event that touched it: a decision that
            // wrote nothing leaves the key (and its expiry, taken off below) as it was.
            let mut texts: std::collections::HashMap<usize, Option<String>> =
                std::collections::HashMap::new();
            for (i, event) in events.iter().enumerate() {
                let both = |key: usize, d: &dyn Fn(&mut Target, Millis) -> Answer| {
                    let f = decide(file, &name(key), d).map_err(store_error)?;
                    let r = decide(redis, &name(key), d).map_err(store_error)?;
                    prop_assert_eq!(&f, &r, "event {} {:?}", i, event);
                    Ok(Some(key))
                };
                let touched = match *event {
                    Event::Admit { key, lease, id } => both(key, &|t, now| {
                        Answer::Admission(t.admit(now, &l, Duration::from_millis(lease), id))
                    })?,
                    Event::Finish { key, result, probe } => both(key, &|t, now| {
                        t.finish(now, result, probe, &l);
                        Answer::Done
                    })?,
                    Event::TakeRetry { key } => {
                        both(key, &|t, now| Answer::Retry(t.take_retry(now, &l)))?
                    }
                    Event::Hold { key, wait } => both(key, &|t, now| {
                        t.hold(now, Duration::from_millis(wait));
                        Answer::Held(t.held(now))
                    })?,
                    Event::Held { key } => both(key, &|t, now| Answer::Held(t.held(now)))?,
                    Event::Advance(by) => {
                        now += by;
                        file_clock.set(now);
                        redis_clock.set(now);
                        None
                    }
                };
                if let Some(key) = touched {
                    // The key lives until the record expires; then its expiry is taken
                    // off, since the server's clock does not follow the test's.
                    let k = format!("{DEFAULT_PREFIX}{}", name(key));
                    let (text, left, _): (Option<String>, i64, i64) = redis::pipe()
                        .cmd("GET")
                        .arg(&k)
                        .cmd("PTTL")
                        .arg(&k)
                        .cmd("PERSIST")
                        .arg(&k)
                        .query(&mut *conn.borrow_mut())
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    let unwritten = texts.insert(key % targets, text.clone()) == Some(text);
                    let (t, at) = redis.peek(&name(key), BOUND).map_err(store_error)?;
                    if unwritten {
                        // Written earlier, its expiry already checked and taken off.
                    } else if t == Target::default() {
                        prop_assert_eq!(left, -2, "event {} {:?}: a key for nothing", i, event);
                    } else {
                        let lives = (t.expires_at(&l) - at) as i64;
                        let late = left == -2 && lives <= 10_000;
                        prop_assert!(
                            late || (left <= lives && left > lives - 10_000),
                            "event {} {:?}: PTTL {} of {}",
                            i,
                            event,
                            left,
                            lives
                        );
                    }
                }
                for key in 0..targets {
                    let f = file.peek(&name(key), BOUND).map_err(store_error)?;
                    let r = redis.peek(&name(key), BOUND).map_err(store_error)?;
                    prop_assert_eq!(&f, &r, "after event {} {:?}, {}", i, event, name(key));
                    prop_assert_eq!(f.1, now);
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
    }

    #[test]
    fn redis_urls_are_read_and_shown_masked() {
        let r = RedisLocation::parse("redis://u:p%40ss@cache.example:6380/3?prefix=ci:")
            .expect("valid");
        assert_eq!(
            r.endpoint,
            Endpoint::Tcp {
                host: "cache.example".into(),
                port: 6380,
                tls: false
            }
        );
        assert_eq!(
            (
                r.db,
                r.user.as_deref(),
                r.password.as_deref(),
                r.prefix.as_str()
            ),
            (3, Some("u"), Some("p@ss"), "ci:")
        );
        assert_eq!(r.display(), "redis://u:***@cache.example:6380/3?prefix=ci:");
        let r = RedisLocation::parse("redis://s3cret@h").expect("valid");
        assert_eq!(
            (r.user.as_deref(), r.password.as_deref()),
            (None, Some("s3cret"))
        );
        assert_eq!(r.display(), "redis://:***@h:6379/0");
        let r = RedisLocation::parse("rediss://:tok@[::1]").expect("valid");
        assert_eq!(r.display(), "rediss://:***@[::1]:6379/0");
        let r =
            RedisLocation::parse("redis+unix:///run/redis.sock?db=2&password=pw").expect("valid");
        assert_eq!(r.endpoint, Endpoint::Unix("/run/redis.sock".into()));
        assert_eq!(
            r.display(),
            "redis+unix:///run/redis.sock?db=2&password=***"
        );
        assert_eq!(
            RedisLocation::parse("redis://h").expect("valid").prefix,
            DEFAULT_PREFIX
        );
    }

    #[test]
    fn bad_redis_urls_say_why_without_the_password() {
        for (bad, why) in [
            ("redis://u:s3cret@h/notadb", "database number"),
            ("redis://u:s3cret@h/0?pfx=a", "pfx="),
            ("redis://u:s3cret@h:99999/0", "not a valid URL"),
            ("redis://u:s3cret@/0", "host"),
            ("redis+unix://h/sock?password=s3cret", "three slashes"),
            ("redis+unix://?password=s3cret", "path"),
            ("redis://u:s3cret@h/0#x", "fragment"),
            ("redis://u:s3cret@h/0?prefix=a&prefix=b", "prefix="),
            ("redis://u:s3cret@h/-1", "database number"),
        ] {
            let e = RedisLocation::parse(bad).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
            assert!(!e.contains("s3cret"), "{bad}: {e}");
            assert!(e.starts_with("--state: "), "{e}");
        }
    }
}
