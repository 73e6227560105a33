//! What `--state` names, and the one place that knows every kind of store: `Location`
//! reads the value (a file's path, or a Redis URL), describes it for messages (a password
//! never shown) and opens the store it names behind the `store::Store` seam (a batch run
//! without `--state` names no store: its own records are in the gate's local layer, see
//! `gate::local`). Nothing else matches on the kind of store: the rest of the program asks `Location` what it needs.

use crate::file::FileStore;
use crate::redis::{RedisLocation, RedisStore};
use crate::store::{Clock, Store};
use retry_http_policy::record::Limits;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What `--state` names: a file, or a Redis server. Its kind is private to this file.
#[derive(Clone, PartialEq, Eq)]
pub struct Location(Kind);

/// The kinds of store.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// `--state FILE`.
    File(PathBuf),
    /// `--state redis://...`, `rediss://...`, `redis+unix://...`, `redis+cluster://...` or
    /// `rediss+cluster://...`.
    Redis(RedisLocation),
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// How a store is opened besides where: what it forgets by, whose clock, and for Redis the
/// CA file of `--state-cacert`.
pub struct Opening<'a> {
    /// The breaker's and the budget's settings, which forgetting follows.
    pub limits: &'a Limits,
    /// The clock.
    pub clock: Clock,
    /// `--state-cacert`: the certificates that a `rediss://` server's must chain to.
    pub cacert: Option<&'a Path>,
}

impl Location {
    /// Reads `--state`'s value: a URL of a scheme of Redis's, or else a file's path. Another
    /// scheme (`memcached://...`) is refused rather than taken for a file name: write
    /// `./NAME` for a file whose name looks like one. Errors name what is accepted and never
    /// quote a password.
    pub fn parse(value: &str) -> Result<Location, String> {
        // A Redis URL mistyped (`redis:/h`, `redis//h`, `rediss:h`, ` redis://h`) must not
        // become a file named after it, password and all.
        let trimmed = value.trim();
        let proper = has_redis_scheme(trimmed);
        if !proper && looks_like_redis(trimmed) {
            return Err(
                "--state: this looks like a Redis URL but is not one: write redis://HOST, rediss://HOST, redis+unix:///PATH or redis+cluster://HOST:PORT,... (or ./NAME for a file)"
                    .into(),
            );
        }
        let value = if proper { trimmed } else { value };
        match scheme_of(value) {
            Some(s) if RedisLocation::SCHEMES.contains(&s.to_ascii_lowercase().as_str()) => {
                Ok(Location(Kind::Redis(RedisLocation::parse(value)?)))
            }
            Some(s) => Err(format!(
                "--state does not know the scheme {s}://: give a file's path, or a URL of redis://, rediss://, redis+unix://, redis+cluster:// or rediss+cluster://"
            )),
            None => Ok(Location::file(PathBuf::from(value))),
        }
    }

    /// Reads `--state`'s value as the command line or the environment gave it: a value that
    /// is not UTF-8 can only be a file's path; any other is read by `parse`.
    pub fn from_path(value: &Path) -> Result<Location, String> {
        match value.to_str() {
            Some(text) => Location::parse(text),
            None => Ok(Location::file(value.to_path_buf())),
        }
    }

    /// The state file at `path`.
    pub fn file(path: PathBuf) -> Location {
        Location(Kind::File(path))
    }

    /// The state file's path, when the store is a file (which the run then writes, so it
    /// must not be another output of it).
    pub fn file_path(&self) -> Option<&Path> {
        match &self.0 {
            Kind::File(p) => Some(p),
            Kind::Redis(_) => None,
        }
    }

    /// Whether the store is reached over TLS (`rediss://`, `rediss+cluster://`), the only
    /// kind `--state-cacert` is for.
    pub fn uses_tls(&self) -> bool {
        matches!(&self.0, Kind::Redis(r) if r.uses_tls())
    }

    /// How messages name the store: the file's path, or the URL with its password masked.
    pub fn describe(&self) -> String {
        match &self.0 {
            Kind::File(p) => p.display().to_string(),
            Kind::Redis(r) => r.display(),
        }
    }

    /// "the state file" or "the state store", for messages.
    pub fn noun(&self) -> &'static str {
        match &self.0 {
            Kind::File(_) => "the state file",
            Kind::Redis(_) => "the state store",
        }
    }

    /// How `--explain` names where the record of target `key` is kept: the Redis key (see
    /// `RedisLocation::key`), or the target in the file.
    pub fn record_name(&self, key: &str) -> String {
        match &self.0 {
            Kind::Redis(r) => format!("key {}", r.key(key)),
            Kind::File(_) => format!("target {key}"),
        }
    }

    /// Opens the store named here, within `bound` (Redis connects then). Errors say why it
    /// cannot be used (it is then left untouched).
    pub fn open(&self, how: Opening, bound: Duration) -> Result<Box<dyn Store>, String> {
        match &self.0 {
            Kind::File(path) => Ok(Box::new(FileStore::open(path, how.limits, how.clock)?)),
            Kind::Redis(r) => Ok(Box::new(RedisStore::open(
                r, how.limits, how.clock, how.cacert, bound,
            )?)),
        }
    }
}

/// Whether `value` begins with a Redis scheme and `://`, in any case.
fn has_redis_scheme(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    RedisLocation::SCHEMES
        .iter()
        .any(|s| lower.starts_with(&format!("{s}://")))
}

/// Whether `value` begins like a Redis URL mistyped: `redis`, `rediss`, `redis+unix`,
/// `redis+cluster` or `rediss+cluster`, then `:` or `/` (`redis:/h`, `redis//h`,
/// `rediss:h`, `redis+cluster:/h`).
fn looks_like_redis(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("redis") else {
        return false;
    };
    let rest = rest.strip_prefix('s').unwrap_or(rest);
    let rest = ["+unix", "+cluster"]
        .iter()
        .find_map(|s| rest.strip_prefix(s))
        .unwrap_or(rest);
    rest.starts_with([':', '/'])
}

/// The scheme of `value` when it begins like a URL (`LETTERS://`, letters, digits, `+`,
/// `-`, `.`), else `None`.
fn scheme_of(value: &str) -> Option<&str> {
    let (scheme, _) = value.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_redis(l: &Location) -> bool {
        matches!(l.0, Kind::Redis(_))
    }

    #[test]
    fn a_state_location_is_a_file_or_a_redis_url() {
        assert_eq!(
            Location::parse("s.json"),
            Ok(Location::file("s.json".into()))
        );
        assert_eq!(
            Location::parse("./x://y"),
            Ok(Location::file("./x://y".into()))
        );
        assert!(Location::parse("redis://h:1/2").is_ok_and(|l| is_redis(&l)));
        let why = Location::parse("memcached://u:pw@h/").expect_err("refused");
        assert!(why.contains("memcached://") && !why.contains("pw"), "{why}");
        for typo in [
            "redis:/u:pw@h",
            "rediss:/u:pw@h",
            "redis//u:pw@h",
            "redis:u:pw@h",
            "redis:pw@h",
            "redis+unix:",
            "REDIS:/h",
        ] {
            let why = Location::parse(typo).expect_err(typo);
            assert!(
                why.contains("looks like a Redis URL") && !why.contains("pw"),
                "{why}"
            );
        }
        assert!(Location::parse(" redis://h ").is_ok_and(|l| is_redis(&l)));
        for file in ["redis.json", "redis-state", "./redis:/x"] {
            assert!(
                Location::parse(file).is_ok_and(|l| l.file_path().is_some()),
                "{file}"
            );
        }
    }

    /// What the rest of the program asks of a location, for a file and for each kind of
    /// Redis URL: the file's path, TLS, the name in messages (no password), the noun, and
    /// how `--explain` names a target's record.
    #[test]
    fn a_location_answers_what_the_run_asks_without_its_kind() {
        let file = Location::parse("state.json").expect("a file");
        assert_eq!(file.file_path(), Some(Path::new("state.json")));
        assert!(!file.uses_tls());
        assert_eq!(file.describe(), "state.json");
        assert_eq!(file.noun(), "the state file");
        assert_eq!(file.record_name("http://a:80"), "target http://a:80");

        let tls = Location::parse("rediss://:pw@h:7/1?prefix=p:").expect("a Redis URL");
        assert_eq!(tls.file_path(), None);
        assert!(tls.uses_tls());
        assert_eq!(tls.describe(), "rediss://:***@h:7/1?prefix=p:");
        assert_eq!(tls.noun(), "the state store");
        assert_eq!(tls.record_name("http://a:80"), "key p:http://a:80");

        for plain in ["redis://h", "redis+unix:///run/r.sock"] {
            let l = Location::parse(plain).expect(plain);
            assert!(!l.uses_tls() && l.file_path().is_none(), "{plain}");
        }
    }

    /// A cluster URL is a Redis location: TLS with `rediss+cluster`, the password masked,
    /// its records under hash-tagged keys; a mistyped one is refused, not taken for a file.
    #[test]
    fn a_cluster_url_is_a_redis_location() {
        let l = Location::parse("redis+cluster://:pw@h:7000,g:7001?prefix=p:").expect("valid");
        assert!(is_redis(&l) && !l.uses_tls());
        assert_eq!(l.describe(), "redis+cluster://:***@h:7000,g:7001?prefix=p:");
        assert_eq!(l.record_name("http://a:80"), "key p:{http://a:80}");
        let tls = Location::parse("rediss+cluster://h:7000").expect("valid");
        assert!(tls.uses_tls());
        for typo in [
            "redis+cluster:/u:pw@h",
            "rediss+cluster:h",
            "redis+cluster//h",
        ] {
            let why = Location::parse(typo).expect_err(typo);
            assert!(
                why.contains("looks like a Redis URL") && !why.contains("pw"),
                "{why}"
            );
        }
    }

    /// A `--state` value that is not UTF-8 is a file's path; one that is, is parsed.
    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_utf8_is_a_file() {
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"st\xffte"));
        assert_eq!(Location::from_path(odd), Ok(Location::file(odd.into())));
        assert!(Location::from_path(Path::new("redis:/h")).is_err());
        assert!(Location::from_path(Path::new("redis://h")).is_ok_and(|l| is_redis(&l)));
    }
}
