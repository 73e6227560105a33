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
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// The store on a Redis server: a `Store`.
pub struct RedisStore {
    location: RedisLocation,
    limits: Limits,
    clock: Clock,
    /// The PEM of `--state-cacert`, read when the store was opened.
    cacert: Option<Vec<u8>>,
    /// The connection, made by the first operation.
    connection: Mutex<Option<redis::Connection>>,
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

fn timed_out(what: &str, bound: Duration) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "{what} took longer than --state-timeout allows ({})",
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
            cacert,
            connection: Mutex::new(None),
        })
    }

    fn key(&self, target: &str) -> String {
        format!("{}{target}", self.location.prefix)
    }

    /// Resolves a host name within `bound`, on a thread of its own (the system's resolver
    /// cannot be given a timeout); the thread is left behind if it takes longer.
    fn resolve(host: &str, port: u16, bound: Duration) -> std::io::Result<SocketAddr> {
        if let Ok(ip) = host.parse::<std::net::IpAddr>() {
            return Ok(SocketAddr::new(ip, port));
        }
        let (tx, rx) = std::sync::mpsc::channel();
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
            Err(_) => Err(timed_out(&format!("resolving {host}"), bound)),
        }
    }

    /// Connects, within what is left before `until`.
    fn connect(&self, until: Instant) -> std::io::Result<redis::Connection> {
        let left = |what: &str| {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                Err(timed_out(what, until.elapsed()))
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
                let a = Self::resolve(host, *port, left("connecting")?)?;
                redis::ConnectionAddr::Tcp(a.ip().to_string(), a.port())
            }
            Endpoint::Tcp {
                host,
                port,
                tls: true,
            } => {
                // Resolved here within the bound; the TLS connection names the host again
                // (for the certificate), which the resolver then answers from what it knows.
                Self::resolve(host, *port, left("connecting")?)?;
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

    /// Runs `work` on the connection (made first if there is none), with each read and
    /// write on it bounded by what is left before `until`. A failure drops the connection.
    fn with_connection<T>(
        &self,
        until: Instant,
        work: impl FnOnce(&mut redis::Connection) -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let mut slot = self
            .connection
            .lock()
            .map_err(|_| other("the store's connection was poisoned".into()))?;
        if slot.is_none() {
            *slot = Some(self.connect(until)?);
        }
        let Some(c) = slot.as_mut() else {
            return Err(other("no connection".into()));
        };
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            *slot = None;
            return Err(timed_out("the store", Duration::ZERO));
        }
        let bounded = c
            .set_read_timeout(Some(left))
            .and_then(|()| c.set_write_timeout(Some(left)));
        let result = match bounded {
            Ok(()) => work(c),
            Err(e) => Err(io_error(&e, "the store", until)),
        };
        if result.is_err() {
            *slot = None;
        }
        result
    }

    /// Reads `key` and the server's time in one round trip.
    fn read(&self, key: &str, until: Instant, warn: &dyn Fn(&str)) -> std::io::Result<Read> {
        let (time, text): ((String, String), Option<String>) =
            self.with_connection(until, |c| {
                redis::pipe()
                    .cmd("TIME")
                    .cmd("GET")
                    .arg(key)
                    .query(c)
                    .map_err(|e| io_error(&e, "reading the store", until))
            })?;
        let now = self.time(&time.0, &time.1)?;
        Ok(self.parse(key, text.unwrap_or_default(), now, warn))
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
        let until = Instant::now() + bound;
        let key = self.key(key);
        let mut read = self.read(&key, until, warn)?;
        let script = redis::Script::new(CAS);
        loop {
            let mut target = read.target.clone();
            change(&mut target, read.now);
            let (text, ttl) = self.text(&mut target, read.rev, read.now);
            if text.is_empty() && read.text.is_empty() {
                return Ok(());
            }
            let answer: Vec<redis::Value> = self.with_connection(until, |c| {
                script
                    .key(&key)
                    .arg(&read.text)
                    .arg(&text)
                    .arg(ttl)
                    .invoke(c)
                    .map_err(|e| io_error(&e, "writing to the store", until))
            })?;
            match answer.as_slice() {
                [redis::Value::Int(1)] => return Ok(()),
                [redis::Value::Int(0), current, secs, micros] => {
                    let text = string(current);
                    let now = self.time(&string(secs), &string(micros))?;
                    read = self.parse(&key, text, now, warn);
                    if Instant::now() >= until {
                        return Err(timed_out("agreeing with other runs on the record", bound));
                    }
                }
                _ => return Err(other("the store's script answered nonsense".into())),
            }
        }
    }

    fn peek(&self, key: &str, bound: Duration) -> std::io::Result<(Target, Millis)> {
        let until = Instant::now() + bound;
        let read = self.read(&self.key(key), until, &|_| {})?;
        Ok((read.target, read.now))
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
        let mut err = timed_out(what, Duration::ZERO);
        err = std::io::Error::new(err.kind(), format!("{what} timed out (--state-timeout)"));
        return err;
    }
    other(describe(e))
}

/// What went wrong, in words, from the server's error code where there is one (also when
/// it comes inside a pipeline's failure). Never includes the URL (it may hold a password).
fn describe(e: &redis::RedisError) -> String {
    let text = e.to_string();
    let code = e.code().map(str::to_string).or_else(|| {
        [
            "NOAUTH",
            "WRONGPASS",
            "OOM",
            "READONLY",
            "WRONGTYPE",
            "NOPERM",
        ]
        .into_iter()
        .find(|c| text.contains(&format!("\"{c}\"")))
        .map(str::to_string)
    });
    let detail = e.detail().unwrap_or("").trim();
    match code.as_deref().unwrap_or("") {
        "NOAUTH" => "the server wants a password (give it in the URL)".into(),
        "WRONGPASS" => "the server refused the user or password".into(),
        "OOM" => "the server is out of memory (maxmemory)".into(),
        "READONLY" => "the server is a read-only replica".into(),
        "WRONGTYPE" => "the key holds a value of another type than a string".into(),
        "NOPERM" => {
            "the user is not allowed the commands the store needs (GET, TIME, EVALSHA)".into()
        }
        "" if e.kind() == redis::ErrorKind::AuthenticationFailed => {
            "the server refused the user or password".into()
        }
        "" if e.is_connection_refusal() => "the connection was refused".into(),
        "" => text,
        code => format!("the server answered {code} {detail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
