//! The Redis store of `--state redis://...` and of a Redis Cluster (`redis+cluster://...`):
//! one key per target (`PREFIX` + the target's key, on a cluster `PREFIX{TARGET}`: see
//! `RedisLocation::key`; `cluster` routes each command to the node serving its key), its
//! value the target's record as JSON with a revision number. Each operation (`op::Op`) is
//! one script on the server (`ops.lua`, sent by `ops`), which reads the record and the
//! server's `TIME`, decides by the same rules as `Op::run`, and writes the record back in
//! one step, so runs never conflict and never retry. The time is always the server's, since
//! hosts' clocks differ; keys expire by themselves when `record::Target::expires_at`
//! passes. `--explain`'s read-only peek reads the key with a smaller script (`READ`) and
//! decides nothing.
//!
//! Every operation, connecting and resolving the server's name included, ends within its
//! bound: the name is resolved on a thread of its own and given up on at the bound, the
//! connection has a connect timeout, and each read and write on it the time left.
//!
//! What is read is bounded too: the scripts never answer a value longer than `MAX_RECORD`
//! (a longer one is measured with `STRLEN` on the server, not sent, and is replaced as a
//! value that is not a record of ours), and the connection (`wire`, speaking `resp`) reads
//! no answer past `resp::MAX_ANSWER` bytes, whatever a server that is not Redis sends. Nor does what it
//! returns repeat the password: a server that quotes what it was sent, even cut short,
//! has each piece of it masked (`RedisStore::unquoted`).

use crate::store::{Clock, Store};
use cluster::Router;
use retry_http_policy::Millis;
use retry_http_policy::op::{Op, Reply};
use retry_http_policy::record::{Limits, Target, target_from_value};
use serde_json::Value;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

mod cluster;
mod ops;
mod resp;
mod wire;

/// The longest value of a key read as a record, in bytes (64 KiB; a record is a few hundred).
/// A longer one is not sent by the server: it is reported and replaced.
pub const MAX_RECORD: u64 = 64 << 10;

/// What the scripts answer instead of the text of a key longer than `MAX_RECORD`: this
/// marker, then its length. No record begins with a NUL byte.
const OVERSIZED: &str = "\0oversized ";

/// The default prefix of the keys.
pub const DEFAULT_PREFIX: &str = "retry-http:";

/// The largest `--state-cacert` read, in bytes.
const MAX_CACERT: u64 = 1 << 20;

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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    /// `redis+cluster://HOST:PORT[,HOST:PORT...]` (`tls: false`) or `rediss+cluster://...`
    /// (`tls: true`): a Redis Cluster, reached through its seed nodes (see `cluster`).
    Cluster {
        /// The seed nodes, in the URL's order: host (IPv6 without brackets) and port.
        seeds: Vec<(String, u16)>,
        /// TLS, to every node.
        tls: bool,
    },
}

/// The number of hash slots of a Redis Cluster: a key's slot is below it.
const SLOTS: u16 = 16384;

impl std::fmt::Debug for RedisLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

/// The form of a Redis URL, for messages.
const FORMS: &str = "redis://[USER:PASSWORD@]HOST[:PORT][/DB][?prefix=P], rediss://..., redis+unix:///PATH[?db=N&prefix=P], or redis+cluster://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...][?prefix=P] or rediss+cluster://...";

impl RedisLocation {
    /// The schemes read as a Redis server or cluster.
    pub const SCHEMES: [&'static str; 5] = [
        "redis",
        "rediss",
        "redis+unix",
        "redis+cluster",
        "rediss+cluster",
    ];

    /// Reads a Redis URL (see `FORMS`). Errors say what is wrong and what is accepted, and
    /// never quote the password. A `prefix` that is empty or only white space is an error:
    /// the keys would then be bare origins, which another application may use.
    pub fn parse(value: &str) -> Result<RedisLocation, String> {
        if let Some((rest, tls)) = cluster_scheme(value) {
            return parse_cluster(rest, tls);
        }
        let url = url::Url::parse(value).map_err(|e| bad(&format!("not a valid URL ({e})")))?;
        let unix = url.scheme().eq_ignore_ascii_case("redis+unix");
        let mut parts = Parts::of(&url, unix)?;
        let endpoint = if unix {
            unix_endpoint(&url)?
        } else {
            tcp_endpoint(&url, &mut parts.db)?
        };
        Ok(parts.located(endpoint))
    }

    /// The key of `target`'s record: the prefix, then the target. On a cluster the target is
    /// a hash tag (`PREFIX{TARGET}`), so that every key made from it (this one, and any that
    /// adds to its end, such as `PREFIX{TARGET}:job:DIGEST`) lives in one slot, and one
    /// script may touch them all. On a single server the key stays `PREFIX` + `TARGET`, as
    /// older versions wrote it.
    pub fn key(&self, target: &str) -> String {
        if self.is_cluster() {
            format!("{}{{{target}}}", self.prefix)
        } else {
            format!("{}{target}", self.prefix)
        }
    }

    /// Whether the URL names a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.endpoint, Endpoint::Cluster { .. })
    }

    /// Whether the server (or every node of the cluster) is reached over TLS.
    pub fn uses_tls(&self) -> bool {
        matches!(
            self.endpoint,
            Endpoint::Tcp { tls: true, .. } | Endpoint::Cluster { tls: true, .. }
        )
    }

    /// Whether the store is reached over TLS (`rediss://`, `rediss+cluster://`).
    pub fn tls(&self) -> bool {
        matches!(
            self.endpoint,
            Endpoint::Tcp { tls: true, .. } | Endpoint::Cluster { tls: true, .. }
        )
    }

    /// The URL as messages show it: the password masked as `***`, the prefix when it is not
    /// the default.
    pub fn display(&self) -> String {
        use retry_http_redact::MASK;
        let auth = match (&self.user, &self.password) {
            (Some(u), Some(_)) => format!("{u}:{MASK}@"),
            (None, Some(_)) => format!(":{MASK}@"),
            (Some(u), None) => format!("{u}@"),
            (None, None) => String::new(),
        };
        let prefix = (self.prefix != DEFAULT_PREFIX).then(|| format!("prefix={}", self.prefix));
        let query = prefix.clone().map(|p| format!("?{p}")).unwrap_or_default();
        match &self.endpoint {
            Endpoint::Tcp { host, port, tls } => {
                let scheme = if *tls { "rediss" } else { "redis" };
                let host = bracketed(host);
                format!("{scheme}://{auth}{host}:{port}/{}{query}", self.db)
            }
            Endpoint::Cluster { seeds, tls } => {
                let scheme = if *tls {
                    "rediss+cluster"
                } else {
                    "redis+cluster"
                };
                let seeds: Vec<String> = seeds
                    .iter()
                    .map(|(h, p)| format!("{}:{p}", bracketed(h)))
                    .collect();
                format!("{scheme}://{auth}{}{query}", seeds.join(","))
            }
            Endpoint::Unix(path) => {
                let mut query: Vec<String> = Vec::new();
                if self.db != 0 {
                    query.push(format!("db={}", self.db));
                }
                query.extend(prefix);
                if self.password.is_some() {
                    query.push(format!("password={MASK}"));
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

/// A host as a URL writes it: an IPv6 address in brackets.
fn bracketed(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// What follows `redis+cluster://` (TLS: false) or `rediss+cluster://` (true), in any case;
/// `None` for another scheme.
fn cluster_scheme(value: &str) -> Option<(&str, bool)> {
    [("redis+cluster://", false), ("rediss+cluster://", true)]
        .into_iter()
        .find_map(|(scheme, tls)| {
            let head = value.get(..scheme.len())?;
            head.eq_ignore_ascii_case(scheme)
                .then(|| (&value[scheme.len()..], tls))
        })
}

/// Reads a cluster URL, `rest` being what follows its scheme: the seeds (`HOST:PORT`
/// separated by commas, the port 6379 when not written), then what a `redis://` URL has
/// besides its host, read as there. A cluster has only database 0: another is refused.
/// A seed that cannot be read is named by its place, never quoted: a password with a `/`
/// not percent-encoded would end up in it.
fn parse_cluster(rest: &str, tls: bool) -> Result<RedisLocation, String> {
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), authority),
    };
    let mut seeds = Vec::new();
    for (i, seed) in hosts.split(',').enumerate() {
        let n = i + 1;
        let url = url::Url::parse(&format!("redis://{seed}")).map_err(|e| {
            bad(&format!(
                "seed node {n} of the cluster is not HOST:PORT ({e})"
            ))
        })?;
        if seed.is_empty() || !url.username().is_empty() {
            return Err(bad(&format!(
                "seed node {n} of the cluster is not HOST:PORT (write them separated by commas)"
            )));
        }
        if let Endpoint::Tcp { host, port, .. } = tcp_endpoint(&url, &mut None)? {
            seeds.push((host, port));
        }
    }
    let url = url::Url::parse(&format!("redis://{userinfo}cluster{tail}"))
        .map_err(|e| bad(&format!("not a valid URL ({e})")))?;
    let mut parts = Parts::of(&url, false)?;
    tcp_endpoint(&url, &mut parts.db)?;
    if parts.db.is_some_and(|db| db != 0) {
        return Err(bad(
            "a Redis Cluster has only database 0: leave the path out, or write /0",
        ));
    }
    Ok(parts.located(Endpoint::Cluster { seeds, tls }))
}

/// The message of a Redis URL that cannot be read: `why`, then the forms accepted.
fn bad(why: &str) -> String {
    format!("--state: {why} (accepted: {FORMS})")
}

/// What a Redis URL says besides where the server is, as it is read: from the userinfo,
/// then the query.
#[derive(Default)]
struct Parts {
    db: Option<u32>,
    prefix: Option<String>,
    user: Option<String>,
    password: Option<String>,
}

/// The user and the password of the URL's userinfo, percent-decoded. `redis://SECRET@HOST`,
/// a userinfo without a colon, is a password to Redis clients that take it (Redis has no
/// user without one): read, and masked, as one.
fn credentials(url: &url::Url) -> Result<Parts, String> {
    let decode = |s: &str| {
        percent_decode(s).ok_or_else(|| bad("the URL's user or password is not valid UTF-8"))
    };
    let mut user = (!url.username().is_empty())
        .then(|| decode(url.username()))
        .transpose()?;
    let mut password = url.password().map(decode).transpose()?;
    if password.is_none() && user.is_some() {
        password = user.take();
    }
    Ok(Parts {
        user,
        password,
        ..Parts::default()
    })
}

impl Parts {
    /// What `url` says besides where the server is: the credentials, the query (see
    /// `read_query`); a fragment or an empty prefix is refused.
    fn of(url: &url::Url, unix: bool) -> Result<Parts, String> {
        let mut parts = credentials(url)?;
        if url.fragment().is_some() {
            return Err(bad("a Redis URL has no #fragment"));
        }
        parts.read_query(url, unix)?;
        // An empty prefix (`?prefix=$UNSET`) would name the keys by the bare origin, which
        // another application's key may be called: refused, as white space alone is.
        if parts.prefix.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(bad(
                "the prefix is empty: give ?prefix= a non-empty value, or leave it out for the default retry-http:",
            ));
        }
        Ok(parts)
    }

    /// The location of these parts at `endpoint`.
    fn located(self, endpoint: Endpoint) -> RedisLocation {
        RedisLocation {
            endpoint,
            db: self.db.unwrap_or(0),
            user: self.user,
            password: self.password,
            prefix: self.prefix.unwrap_or_else(|| DEFAULT_PREFIX.to_string()),
        }
    }

    /// Reads the URL's query: `prefix` for every scheme; `db`, `user` and `password` too for
    /// a Unix socket (`unix`), whose URL has no path for the database. Each at most once,
    /// and the user and password only when the userinfo gave none; anything else is an
    /// error naming what is accepted.
    fn read_query(&mut self, url: &url::Url, unix: bool) -> Result<(), String> {
        for (k, v) in url.query_pairs() {
            match (&*k, unix) {
                ("prefix", _) if self.prefix.is_none() => self.prefix = Some(v.into_owned()),
                ("db", true) if self.db.is_none() => {
                    self.db = Some(number(&v).ok_or_else(|| {
                        bad(&format!("db={v} is not a database number (0 and up)"))
                    })?)
                }
                ("user", true) if self.user.is_none() => self.user = Some(v.into_owned()),
                ("password", true) if self.password.is_none() => {
                    self.password = Some(v.into_owned())
                }
                (k, _) => {
                    let accepted = if unix {
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
        Ok(())
    }
}

/// The socket of `redis+unix:///PATH`: a URL with no host and a path.
fn unix_endpoint(url: &url::Url) -> Result<Endpoint, String> {
    if url.host_str().is_some_and(|h| !h.is_empty()) {
        return Err(bad(
            "a redis+unix URL names no host: write redis+unix:///PATH (three slashes)",
        ));
    }
    let path = percent_decode(url.path()).ok_or_else(|| bad("the path is not UTF-8"))?;
    if path.is_empty() || path == "/" {
        return Err(bad("a redis+unix URL needs the socket's path"));
    }
    Ok(Endpoint::Unix(PathBuf::from(path)))
}

/// The server of `redis://HOST[:PORT][/DB]` or `rediss://...`: its host (an IPv6 address
/// without its brackets) and port (6379 when not written); the path, when there is one, is
/// the database number, written into `db`.
fn tcp_endpoint(url: &url::Url, db: &mut Option<u32>) -> Result<Endpoint, String> {
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
        *db = Some(number(path).ok_or_else(|| {
            bad("the path must be a database number, such as /0 (the prefix goes in ?prefix=)")
        })?);
    }
    Ok(Endpoint::Tcp {
        host,
        port: url.port().unwrap_or(DEFAULT_PORT),
        tls: url.scheme().eq_ignore_ascii_case("rediss"),
    })
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

/// The text of KEYS[1] as the scripts see it: empty when there is no key, the marker
/// `OVERSIZED` and the length when it is longer than ARGV[1] bytes (measured on the
/// server, never sent), else the text.
macro_rules! current {
    () => {
        r"
local function current(key, max)
  local n = redis.call('STRLEN', key)
  if n > tonumber(max) then
    return '\0oversized ' .. n
  end
  return redis.call('GET', key) or ''
end
"
    };
}

/// The read: the server's `TIME` (seconds, microseconds) and the text of KEYS[1] (see
/// `current!`, ARGV[1] the bound), in one answer.
const READ: &str = concat!(
    current!(),
    r"
local t = redis.call('TIME')
return {t[1], t[2], current(KEYS[1], ARGV[1])}
"
);

/// The store on a Redis server: a `Store`.
pub struct RedisStore {
    location: RedisLocation,
    limits: Limits,
    clock: Clock,
    /// Where to connect, and the PEM of `--state-cacert` (read when the store was opened).
    dial: Arc<Dial>,
    /// The worker that holds a TLS connection, started by the first operation.
    worker: Mutex<Option<Worker>>,
    /// The connection of a plain (TCP or Unix) endpoint, used on the caller's thread.
    plain: Mutex<Option<Router>>,
}

/// What connecting needs, shared with the worker thread.
struct Dial {
    location: RedisLocation,
    cacert: Option<Vec<u8>>,
    /// The round trips made so far: one per connection, one per write of commands.
    trips: Arc<AtomicU64>,
    /// The folder of the cache of a cluster's slot owners (see `cluster`); `None`: no cache.
    cache: Option<PathBuf>,
}

/// A command for the worker, the key whose slot routes it on a cluster, the instant its
/// answer is due, and where to send it.
type Job = (
    resp::Command,
    String,
    Instant,
    mpsc::Sender<std::io::Result<resp::Value>>,
);

/// The thread that owns the connection and sends the commands. The store waits for each
/// answer only until the operation's bound: a server that trickles its answer a byte at a
/// time (which no socket timeout catches) or a resolver that hangs leaves the worker
/// behind, blocked, and the store goes on with a new one at its next operation.
struct Worker {
    jobs: mpsc::Sender<Job>,
}

/// A record as read, tidied, and the server's time.
struct Read {
    target: Target,
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
            retry_http_policy::units::fmt_duration(bound)
        ),
    )
}

impl RedisStore {
    /// The store at `location`, forgetting by `limits`. Nothing is connected yet: the first
    /// operation connects, within its bound. `cacert` is read now, within `bound` (see
    /// `read_cacert`; errors say why not).
    pub fn open(
        location: &RedisLocation,
        limits: &Limits,
        clock: Clock,
        cacert: Option<&Path>,
        bound: Duration,
    ) -> Result<RedisStore, String> {
        let cacert = cacert.map(|p| read_cacert(p, bound)).transpose()?;
        Ok(RedisStore {
            location: location.clone(),
            limits: *limits,
            clock,
            dial: Arc::new(Dial {
                location: location.clone(),
                cacert,
                trips: Arc::new(AtomicU64::new(0)),
                cache: location.is_cluster().then(cluster::cache_dir).flatten(),
            }),
            worker: Mutex::new(None),
            plain: Mutex::new(None),
        })
    }

    /// The key of `target`'s record (see `RedisLocation::key`).
    fn key(&self, target: &str) -> String {
        self.location.key(target)
    }

    /// The round trips this store has made: one per connection, one per write of commands
    /// (pipelined commands count once), whatever node of a cluster they went to.
    #[cfg(all(test, unix))]
    fn round_trips(&self) -> u64 {
        self.dial.trips.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The store with its cluster's slot owners cached in `dir` (`None`: not cached), before
    /// any operation.
    #[cfg(all(test, unix))]
    fn caching_in(mut self, dir: Option<&Path>) -> RedisStore {
        if let Some(dial) = Arc::get_mut(&mut self.dial) {
            dial.cache = dir.map(Path::to_path_buf);
        }
        self
    }

    /// Sends `cmd` through the worker (started first if there is none) and waits for its
    /// answer until `until`; `what` names the step in errors. On a cluster, `key` (a key
    /// the command touches) decides the node: see `cluster::Router`. A step that does not
    /// answer in time leaves its worker behind: the next operation starts another.
    fn send(
        &self,
        cmd: resp::Command,
        key: &str,
        until: Instant,
        what: &str,
    ) -> std::io::Result<resp::Value> {
        if !self.location.tls() {
            return self.send_here(cmd, key, until, what);
        }
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
        if worker.jobs.send((cmd, key.to_string(), until, tx)).is_err() {
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

    /// `send` on the caller's thread, for an endpoint without TLS: every step of it is
    /// bounded by `until` where it happens (the name resolved on a thread of its own, a
    /// connect timeout, each write and each read of the answer given the time left, so a
    /// server that trickles its answer is cut off at `until`), and it costs no hand-over
    /// between threads: on a host whose cores are all busy (a CI runner, 128 runs on 2
    /// cores) every hand-over waits for the scheduler, and three of them made operations
    /// miss their bound. A TLS handshake reads without a fresh deadline for each read, so
    /// TLS goes through the worker, which the store leaves behind at the bound.
    fn send_here(
        &self,
        cmd: resp::Command,
        key: &str,
        until: Instant,
        what: &str,
    ) -> std::io::Result<resp::Value> {
        let mut slot = self
            .plain
            .lock()
            .map_err(|_| other("the store's connection was poisoned".into()))?;
        let router = slot.get_or_insert_with(|| Router::new(Arc::clone(&self.dial)));
        let result = router.run(&cmd, key, until);
        if result.is_err() {
            // A connection that failed or timed out is not to be trusted.
            *slot = None;
        }
        result.map_err(|e| {
            if e.kind() == std::io::ErrorKind::TimedOut {
                timed_out(what)
            } else {
                e
            }
        })
    }

    /// Reads `key` and the server's time in one round trip: one command with one answer
    /// (`READ` sent whole by `EVAL`), so a server that stops answering costs one read
    /// timeout. (A pipeline of `TIME` and `GET` waited out the timeout once per command, and
    /// `EVALSHA` costs two more round trips when the script is not loaded.)
    fn read(&self, key: &str, until: Instant, warn: &dyn Fn(&str)) -> std::io::Result<Read> {
        let mut cmd = resp::Command::new("EVAL");
        cmd.arg(READ).arg("1").arg(key).arg(MAX_RECORD.to_string());
        let answer = self.send(cmd, key, until, "reading the store")?;
        let [secs, micros, text] = read_texts(answer)?;
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
    /// read is reported (and read as a fresh record), as a corrupt state file of ours is;
    /// times in the future that no run could have written are reported and discarded
    /// (`Target::repair`). (The script that makes an operation replaces or repairs the key
    /// itself, and sends what it read here to be reported in these same words.)
    fn parse(&self, key: &str, text: String, now: Millis, warn: &dyn Fn(&str)) -> Read {
        let mut read = Read {
            target: Target::default(),
            now,
        };
        if text.is_empty() {
            return read;
        }
        if let Some(length) = text.strip_prefix(OVERSIZED) {
            warn(&format!(
                "the key {key} in the state store holds {length} bytes, more than the {} KiB a record may have; starting it afresh",
                MAX_RECORD >> 10
            ));
            return read;
        }
        let parsed = serde_json::from_str::<Value>(&text).ok().and_then(|v| {
            v.get("rev")?.as_u64()?;
            if v.get("format")? != retry_http_policy::record::FORMAT {
                return None;
            }
            target_from_value(v.get("target")?, now)
        });
        match parsed {
            Some(mut target) => {
                if let Some(why) = target.repair(now, &self.limits) {
                    warn(&format!(
                        "the key {key} in the state store lies in the future ({why})"
                    ));
                }
                if target.tidy(now, &self.limits) {
                    read.target = target;
                }
            }
            None => warn(&not_ours(key)),
        }
        read
    }
}

/// The warning for the key `key`, whose value is not a record of retry-http's.
fn not_ours(key: &str) -> String {
    format!("the key {key} in the state store is not a record of retry-http's; starting it afresh")
}

impl Store for RedisStore {
    fn apply(
        &self,
        key: &str,
        op: &Op,
        bound: Duration,
        warn: &dyn Fn(&str),
    ) -> std::io::Result<(Reply, Millis)> {
        self.run_op(key, op, bound, warn)
            .map_err(|e| self.unquoted(e))
    }

    fn peek(&self, key: &str, bound: Duration) -> std::io::Result<(Target, Millis)> {
        let until = Instant::now() + bound;
        let read = self
            .read(&self.key(key), until, &|_| {})
            .map_err(|e| self.unquoted(within(e, bound)))?;
        Ok((read.target, read.now))
    }
}

/// The shortest piece of the password masked wherever a server's words quote it, in
/// characters: the whole password is masked from 3 (`redact`), but a server may quote only
/// its beginning (Redis cuts the arguments it quotes in an error at 128 bytes).
const QUOTED_PIECE: usize = 6;

impl RedisStore {
    /// `e` with every piece of the password that its words quote masked: an error's words
    /// may hold what the server answered (an error line, a value it was not to send), and
    /// a server may quote what it was sent, the `AUTH` before.
    /// The words are cut at `MAX_QUOTED` characters first: looking for pieces costs in
    /// proportion to the words' length and the password's, and a server can answer an
    /// error line of a megabyte that repeats a long password, which took longer than a
    /// deadline of seconds to mask.
    fn unquoted(&self, e: std::io::Error) -> std::io::Error {
        let Some(p) = &self.location.password else {
            return e;
        };
        let words = e.to_string();
        let mut kept: String = words.chars().take(MAX_QUOTED).collect();
        if kept.len() < words.len() {
            kept.push_str("...");
        }
        std::io::Error::new(e.kind(), without_pieces(&kept, p))
    }
}

/// The most of an error's words kept when the store has a password, in characters (an
/// error line of Redis is a few dozen).
const MAX_QUOTED: usize = 2048;

/// `text` with every run of at least `QUOTED_PIECE` characters that `secret` holds shown
/// as the mask, the longest run first at each place.
fn without_pieces(text: &str, secret: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let mut piece = QUOTED_PIECE;
        while i + piece <= chars.len() && secret.contains(&String::from_iter(&chars[i..i + piece]))
        {
            piece += 1;
        }
        if piece > QUOTED_PIECE {
            out.push_str(retry_http_redact::MASK);
            i += piece - 1;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// Reads `--state-cacert`: at most `MAX_CACERT` bytes, within `bound`. It is opened
/// without blocking, so a FIFO with no writer, or a device, cannot hang the run; a pipe
/// (`<(...)`) is read as its writer writes, until the bound.
#[cfg(unix)]
fn read_cacert(path: &Path, bound: Duration) -> Result<Vec<u8>, String> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |why: &str| format!("cannot read --state-cacert {}: {why}", path.display());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| cannot(&e.to_string()))?;
    let until = Instant::now() + bound;
    let mut pem = Vec::new();
    let mut buf = [0u8; 16 << 10];
    loop {
        match (&file).read(&mut buf) {
            Ok(0) => return Ok(pem),
            Ok(n) => {
                pem.extend_from_slice(&buf[..n]);
                if pem.len() as u64 > MAX_CACERT {
                    return Err(cannot("larger than 1 MiB"));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(cannot(&format!(
                        "nothing more came within {}",
                        retry_http_policy::units::fmt_duration(bound)
                    )));
                }
                let mut fd = libc::pollfd {
                    fd: file.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ms = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
                // SAFETY: one pollfd of ours, for the time left.
                unsafe { libc::poll(&mut fd, 1, ms) };
            }
            Err(e) => return Err(cannot(&e.to_string())),
        }
    }
}

/// Windows: nothing there blocks an open; the read is bounded by `bound` on a thread of
/// its own (a named pipe that is never written is given up when it passes).
#[cfg(windows)]
fn read_cacert(path: &Path, bound: Duration) -> Result<Vec<u8>, String> {
    let cannot = |why: &str| format!("cannot read --state-cacert {}: {why}", path.display());
    let owned = path.to_path_buf();
    let read = move || {
        std::fs::File::open(owned)
            .and_then(|f| retry_http_system::files::read_bounded(f, MAX_CACERT))
    };
    match retry_http_system::within::within(Some(bound), read) {
        Ok(Ok(Some(pem))) => Ok(pem),
        Ok(Ok(None)) => Err(cannot("larger than 1 MiB")),
        Ok(Err(e)) => Err(cannot(&e.to_string())),
        Err(_) => Err(cannot(&format!(
            "nothing more came within {}",
            retry_http_policy::units::fmt_duration(bound)
        ))),
    }
}

/// Resolves a host name within `bound`, on a thread of its own (the system's resolver
/// cannot be given a timeout); the thread is left behind if it takes longer.
fn resolve(host: &str, port: u16, bound: Duration) -> std::io::Result<SocketAddr> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    // `localhost` and the names under it are loopback, looked up nowhere, as for the
    // request itself (`http::network::is_localhost`): an empty root has no /etc/hosts.
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    use retry_http_system::within::{Missed, within};
    let name = host.to_string();
    let lookup = move || {
        (name.as_str(), port)
            .to_socket_addrs()
            .map(|mut a| a.next())
    };
    match within(Some(bound), lookup) {
        Ok(Ok(Some(addr))) => Ok(addr),
        Ok(Ok(None)) => Err(other(format!("{host} has no address"))),
        Ok(Err(e)) => Err(other(format!("cannot resolve {host}: {e}"))),
        Err(Missed::NoThread(e)) => Err(e),
        Err(Missed::Late) => Err(timed_out(&format!("resolving {host}"))),
    }
}

impl Worker {
    /// Starts the worker thread; it connects at its first command.
    fn start(dial: Arc<Dial>) -> std::io::Result<Worker> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("state-store".into())
            .spawn(move || {
                let mut router = Router::new(dial);
                for (cmd, key, until, answer) in queue {
                    let result = router.run(&cmd, &key, until);
                    if answer.send(result).is_err() {
                        // The store gave up waiting: this connection is not to be trusted.
                        return;
                    }
                }
            })?;
        Ok(Worker { jobs })
    }
}

/// The text of a script's bulk or simple string answer (or of an integer); bytes that
/// are not UTF-8 replaced.
fn string(v: &resp::Value) -> String {
    match v {
        resp::Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        resp::Value::Simple(s) => s.clone(),
        resp::Value::Int(n) => n.to_string(),
        _ => String::new(),
    }
}

/// The three texts of `READ`'s answer (the server's seconds and microseconds, and the
/// key's value): an array of exactly three, each a string (in UTF-8) or an integer.
fn read_texts(answer: resp::Value) -> std::io::Result<[String; 3]> {
    let nonsense = |why: &str| other(format!("the store answered nonsense ({why})"));
    let resp::Value::Array(items) = answer else {
        return Err(nonsense("not an array"));
    };
    let texts: Vec<String> = items
        .iter()
        .map(|v| v.text().ok_or_else(|| nonsense("not a string in UTF-8")))
        .collect::<Result<_, _>>()?;
    texts
        .try_into()
        .map_err(|t: Vec<String>| nonsense(&format!("{} values, not 3", t.len())))
}

/// What a server's error answer (`-CODE detail`) means, in words. Never includes the URL
/// (it may hold a password).
fn describe(code: &str, detail: &str) -> String {
    let detail = detail.trim();
    match code {
        "NOAUTH" => "the server wants a password (give it in the URL)".into(),
        // Redis 7 cuts off an unauthenticated client that sends a long command.
        "ERR" if detail.contains("unauthenticated") => {
            "the server wants a password (give it in the URL)".into()
        }
        "WRONGPASS" => "the server refused the user or password".into(),
        "OOM" => "the server is out of memory (maxmemory)".into(),
        "READONLY" => "the server is a read-only replica".into(),
        "WRONGTYPE" => "the key holds a value of another type than a string".into(),
        "CLUSTERDOWN" => format!("the cluster cannot serve the key now ({detail})"),
        "TRYAGAIN" => "the cluster is moving the key's slot between nodes (TRYAGAIN)".into(),
        "CROSSSLOT" => "the cluster holds the keys of one command in different slots".into(),
        "NOPERM" => {
            format!(
                "the user may not run what the store needs: EVALSHA and EVAL, and in them TIME, STRLEN, GET, SET, DEL, and SELECT for a database other than 0 ({detail})"
            )
        }
        code => format!("the server answered {code} {detail}"),
    }
}

#[cfg(all(test, unix))]
#[path = "../../../../tests/support/redis_server.rs"]
mod redis_server;

#[cfg(all(test, unix))]
#[path = "../../../../tests/support/redis_cluster.rs"]
mod redis_cluster;

#[cfg(all(test, unix))]
#[path = "../../../../tests/support/quoting_redis.rs"]
mod quoting_redis;

// The tests start redis-server and send it signals: Unix only.
#[cfg(all(test, unix))]
mod tests;
