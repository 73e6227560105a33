//! The file store: the circuit breakers and retry budgets of `--state FILE`, kept in the
//! JSON form of `state`. Every update takes an exclusive lock on a companion `FILE.lock`
//! (the state file itself is replaced by rename, so locking it would lose updates), then
//! reads, lets the decision change the target's record, writes a temporary file beside the
//! state file and renames it over it.
//!
//! Only a file that retry-http wrote is ever replaced: one that begins with the marker
//! `{"format": "retry-http-state"`, one laid out exactly as retry-http 0.1.0 wrote it (before
//! the marker), or an empty one. Whose a file is gets judged from its first `PREFIX_BYTES`
//! before the lock file is created, and again under the lock. Anything else is left
//! untouched and the run goes on without state; a file of ours that is corrupt, truncated or
//! too large (past `MAX_FILE_BYTES`, the most read) is reported and replaced, never a crash
//! or a refusal.

use crate::store::{Clock, Store};
use retry_http_policy::Millis;
use retry_http_policy::op::{Op, Reply};
use retry_http_policy::record::{FORMAT, Limits, MAX_FILE_BYTES, State, Target, VERSION};
use retry_http_system::files::owned::{self, Access, NotRegular, kind};
use retry_http_system::files::{follow_link, temp_beside};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How much of a file is read to judge whose it is, in bytes.
const PREFIX_BYTES: usize = 4096;

/// What the names of the temporary files begin with (six letters or digits follow).
const TEMP_PREFIX: &str = ".retry-http-state";

/// How old a temporary file beside the state file must be to be taken for one that a run
/// killed while writing left behind (5 minutes). A run writes, syncs and renames its
/// temporary file within one update, under the lock; the age keeps a live writer's safe
/// also when another state file in the same folder, with a lock of its own, is written.
const STALE_TEMP: Duration = Duration::from_secs(300);

/// The most folder entries looked at for stale temporary files in one update, so that a
/// state file in a huge folder (`/tmp`) costs every run a bounded amount of work.
const MAX_SWEPT: usize = 10_000;

/// Whether `name` is that of a temporary file of ours: `TEMP_PREFIX` and six letters or
/// digits, as `files::temp_beside` makes them.
fn temp_name(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .and_then(|n| n.strip_prefix(TEMP_PREFIX))
        .is_some_and(|rest| rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Whose a file is, judged from its first bytes (at most `PREFIX_BYTES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// Empty: ours to fill.
    Empty,
    /// Begins with this format's marker, `{"format": "retry-http-state"` (JSON white space
    /// allowed between the tokens).
    Marked,
    /// Begins exactly as retry-http 0.1.0 wrote its files, before the marker.
    Legacy,
    /// Begins with the marker and then a version newer than this one's: a newer retry-http's,
    /// not to be replaced by an older one.
    Newer(u64),
    /// Anyone else's.
    Foreign,
}

fn skip_ws(b: &[u8]) -> &[u8] {
    let n = b
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        .count();
    &b[n..]
}

/// Follows `tokens` through `b`, with JSON white space before each: what is left after them.
fn tokens<'a>(mut b: &'a [u8], tokens: &[&[u8]]) -> Option<&'a [u8]> {
    for token in tokens {
        b = skip_ws(b).strip_prefix(*token)?;
    }
    Some(b)
}

/// Judges whose a file is from its first bytes.
fn owner(prefix: &[u8]) -> Owner {
    if prefix.is_empty() {
        return Owner::Empty;
    }
    let marker = format!("\"{FORMAT}\"");
    if let Some(rest) = tokens(prefix, &[b"{", b"\"format\"", b":", marker.as_bytes()]) {
        // The version, when it follows (as this tool writes it) and is complete.
        let version = tokens(rest, &[b",", b"\"version\"", b":"]).map(skip_ws);
        let digits = version.map_or(0, |v| v.iter().take_while(|c| c.is_ascii_digit()).count());
        let newer = version
            .filter(|v| digits > 0 && digits < v.len())
            .and_then(|v| std::str::from_utf8(&v[..digits]).ok()?.parse::<u64>().ok())
            .filter(|v| *v > VERSION);
        return match newer {
            Some(v) => Owner::Newer(v),
            None => Owner::Marked,
        };
    }
    if legacy(prefix) {
        Owner::Legacy
    } else {
        Owner::Foreign
    }
}

/// retry-http 0.1.0 wrote `serde_json::to_string_pretty` of `{"targets": ..., "version": 1}`,
/// keys sorted: either no target at all, or a first target whose key is an http(s) origin and
/// whose first field is the breaker's failure count. Nothing else is taken for one of its
/// files, so a JSON file that merely has a "targets" key is not.
fn legacy(b: &[u8]) -> bool {
    if b.starts_with(b"{\n  \"targets\": {},\n  \"version\": 1\n}") {
        return true;
    }
    let Some(rest) = b.strip_prefix(&b"{\n  \"targets\": {\n    \"http"[..]) else {
        return false;
    };
    let rest = rest.strip_prefix(&b"s"[..]).unwrap_or(rest);
    let Some(rest) = rest.strip_prefix(&b"://"[..]) else {
        return false;
    };
    let Some(end) = rest.iter().position(|c| matches!(c, b'"' | b'\\' | b'\n')) else {
        return false;
    };
    rest[end..].starts_with(b"\": {\n      \"breaker\": {\n        \"failures\": ")
}

/// What a state file holds, as judged before it is used.
#[derive(Debug, Clone, PartialEq)]
enum Contents {
    /// Empty: start afresh, silently.
    Fresh,
    /// A state this version can use (of this version or of retry-http 0.1.0), and the
    /// targets whose own records could not be read (left out: they start afresh).
    Valid(State, Vec<String>),
    /// Recognisably ours but unusable: replaced, with a warning that ends with this reason.
    Corrupt(String),
    /// Not ours, or from a newer retry-http: left untouched, for this reason.
    Foreign(String),
}

/// Judges a file from `bytes`, its first bytes; `complete` when they are the whole file,
/// which is then at most `MAX_FILE_BYTES` long.
fn judge(bytes: &[u8], complete: bool, now: Millis) -> Contents {
    let owner = owner(&bytes[..bytes.len().min(PREFIX_BYTES)]);
    match owner {
        Owner::Empty if complete => return Contents::Fresh,
        Owner::Empty | Owner::Foreign => {
            return Contents::Foreign("was not written by retry-http".into());
        }
        Owner::Newer(v) => return Contents::Foreign(newer(v)),
        Owner::Marked | Owner::Legacy => {}
    }
    if !complete {
        return Contents::Corrupt(format!(
            "is larger than {} MiB, the most read",
            MAX_FILE_BYTES >> 20
        ));
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Contents::Corrupt("is not valid".into());
    };
    if let Some((state, dropped)) = State::from_json(text, now) {
        return Contents::Valid(state, dropped);
    }
    let newer = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("version")?.as_u64())
        .filter(|v| *v > VERSION && owner == Owner::Marked);
    match newer {
        Some(v) => Contents::Foreign(self::newer(v)),
        None => Contents::Corrupt("is not valid".into()),
    }
}

/// The targets `keys`, for a line: the first three, and how many more.
fn named(keys: &[String]) -> String {
    let shown: Vec<&str> = keys.iter().take(3).map(String::as_str).collect();
    match keys.len() {
        n if n > 3 => format!("{} and {} more", shown.join(", "), n - 3),
        _ => shown.join(", "),
    }
}

fn newer(version: u64) -> String {
    format!("was written by a newer retry-http (format version {version})")
}

/// Reads what it takes to judge the file at `path`: `None` when there is none, else its first
/// bytes (all of them when `all` and the file is ours and at most `MAX_FILE_BYTES` long) and
/// whether they are the whole file. It is opened as every file of the run's own is
/// (`files::owned`): without blocking, not through a link (`path` is where `--state`'s link
/// led), and only read when it is a regular file, so a FIFO or a device put there meanwhile
/// can neither hang nor be read.
fn read_head(path: &Path, all: bool) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    let Some(file) = owned::open(path, Access::Read)? else {
        return Ok(None);
    };
    let meta = file.metadata()?;
    let mut bytes = Vec::new();
    (&file).take(PREFIX_BYTES as u64).read_to_end(&mut bytes)?;
    if bytes.len() < PREFIX_BYTES {
        return Ok(Some((bytes, true)));
    }
    if !all
        || matches!(owner(&bytes), Owner::Foreign | Owner::Newer(_))
        || meta.len() > MAX_FILE_BYTES
    {
        return Ok(Some((bytes, false)));
    }
    (&file)
        .take(MAX_FILE_BYTES + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)?;
    let complete = bytes.len() as u64 <= MAX_FILE_BYTES;
    Ok(Some((bytes, complete)))
}

/// The state file on disk, with its lock: a `Store`.
#[derive(Debug)]
pub struct FileStore {
    /// The file itself, a link followed.
    path: PathBuf,
    /// How messages name it: "it", or "its link target PATH".
    subject: String,
    /// The settings every update forgets by.
    limits: Limits,
    /// The clock: this host's, or a test's.
    clock: Clock,
}

impl FileStore {
    /// The store in the file at `path` (created on first write), forgetting by `limits`'s
    /// window and TTL. A symbolic link is followed, so runs naming the link and runs naming
    /// its target share one state. Anything but a regular file (or none yet) is refused: a
    /// device, a FIFO or a folder would be destroyed by the rename, or block. So is a file
    /// that retry-http did not write (see `owner`), or one it cannot read: all this is
    /// judged here, before the lock file is created beside it, and nothing is written.
    pub fn open(path: &Path, limits: &Limits, clock: Clock) -> Result<FileStore, String> {
        let resolved = follow_link(path)
            .map_err(|e| format!("cannot follow the link {}: {e}", path.display()))?;
        let typed = path.as_os_str().to_string_lossy();
        let folder_end = typed.ends_with('/') || (cfg!(windows) && typed.ends_with('\\'));
        if resolved.file_name().is_none() || folder_end {
            return Err(format!("{} names a folder, not a file", path.display()));
        }
        match std::fs::metadata(&resolved) {
            Ok(m) if !m.is_file() => {
                return Err(format!("{} is not a regular file", path.display()));
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot examine {} ({e})", path.display()));
            }
            _ => {}
        }
        let subject = if resolved == path {
            "it".to_string()
        } else {
            format!("its link target {}", resolved.display())
        };
        let file = FileStore {
            path: resolved,
            subject,
            limits: *limits,
            clock,
        };
        file.lock_is_ours()?;
        match read_head(&file.path, false) {
            Ok(None) => Ok(file),
            Ok(Some((head, _))) => match owner(&head) {
                Owner::Foreign => Err(file.untouched("was not written by retry-http")),
                Owner::Newer(v) => Err(file.untouched(&newer(v))),
                Owner::Empty | Owner::Marked | Owner::Legacy => Ok(file),
            },
            Err(e) => Err(file.untouched(&format!("cannot be read ({e})"))),
        }
    }

    /// Says why the file is left untouched.
    fn untouched(&self, why: &str) -> String {
        format!(
            "{} {why}, so it is left untouched (give --state a file of its own)",
            self.subject
        )
    }

    /// Checks that the lock file, if there is one, is a regular file (not followed if it is
    /// a link): a FIFO would block the open, and a link (dangling or not) would make the lock
    /// somewhere else. Errors: why the state is left untouched, as for a foreign file.
    fn lock_is_ours(&self) -> Result<(), String> {
        match std::fs::symlink_metadata(self.lock_path()) {
            Ok(m) if !m.file_type().is_file() => Err(self.bad_lock(kind(m.file_type()))),
            _ => Ok(()),
        }
    }

    /// Says why the state is left untouched when its lock file is `what`.
    fn bad_lock(&self, what: &str) -> String {
        self.untouched(&format!(
            "has a lock file {} that is {what}, not a regular file",
            self.lock_path().display()
        ))
    }

    /// Takes the lock, waiting at most `wait`: a run that holds it for ever (stopped with
    /// Ctrl-Z, say) must not hang the others past their deadlines. The lock file is opened
    /// as every file of the run's own is (`files::owned`, [`Access::Lock`]): without blocking
    /// and without following a link, then checked to be a regular file, so nothing put at
    /// its path (a FIFO, a socket, a device, a folder, a link) can hang the run or be locked
    /// in its place: it is refused as in `lock_is_ours`.
    fn lock(&self, wait: Duration) -> std::io::Result<std::fs::File> {
        let refused = |e: std::io::Error| match NotRegular::of(&e) {
            Some(NotRegular(what)) => std::io::Error::other(self.bad_lock(what)),
            None => e,
        };
        let lock = owned::open(&self.lock_path(), Access::Lock)
            .map_err(refused)?
            .ok_or_else(|| std::io::Error::other("the lock file vanished as it was made"))?;
        let until = std::time::Instant::now() + wait;
        loop {
            match lock.try_lock() {
                Ok(()) => return Ok(lock),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "another run held the lock {} too long",
                            self.lock_path().display()
                        ),
                    ));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self
            .path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        name.push(".lock");
        self.path.with_file_name(name)
    }

    /// Reads the state under the lock: a fresh one for an empty or missing file, or for a
    /// corrupt file of ours (`warn` hears about it: it will be replaced); with `true` when
    /// targets whose records could not be read were left out (`warn` names them: the file
    /// is to be written without them, so that the next run does not hear of them again). `now` dates the
    /// targets of a file of retry-http 0.1.0, which have no `seen`. Errors: the file cannot
    /// be read, or is now judged someone else's; it is then to be left as it is.
    fn load(&self, now: Millis, warn: &dyn Fn(&str)) -> std::io::Result<(State, bool)> {
        let contents = match read_head(&self.path, true) {
            Ok(Some((bytes, complete))) => judge(&bytes, complete, now),
            Ok(None) => Contents::Fresh,
            Err(e) => {
                let why = self.untouched(&format!("cannot be read ({e})"));
                return Err(std::io::Error::new(e.kind(), why));
            }
        };
        match contents {
            Contents::Fresh => Ok((State::default(), false)),
            Contents::Valid(state, dropped) => {
                if !dropped.is_empty() {
                    let (what, who) = match dropped.len() {
                        1 => ("the record of", "is not valid; starting it"),
                        _ => ("the records of", "are not valid; starting them"),
                    };
                    warn(&format!(
                        "the state file {}: {what} {} {who} afresh (the other targets are kept)",
                        self.path.display(),
                        named(&dropped),
                    ));
                }
                Ok((state, !dropped.is_empty()))
            }
            Contents::Corrupt(why) => {
                warn(&format!(
                    "the state file {} {why}; starting afresh",
                    self.path.display()
                ));
                Ok((State::default(), false))
            }
            Contents::Foreign(why) => Err(std::io::Error::other(self.untouched(&why))),
        }
    }

    /// Removes the temporary files that runs killed while writing (`SIGKILL`, a power cut)
    /// left beside the state file: called under the lock, so no run writing this state file
    /// owns one; only regular files named as `temp_beside` names ours and last changed
    /// `STALE_TEMP` ago or more are removed (another state file in the same folder has a
    /// lock of its own, and its writer's file is young), looking at `MAX_SWEPT` entries at
    /// most. Returns how many were removed; what cannot be looked at or removed is left.
    fn sweep(&self) -> usize {
        let folder = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let Ok(entries) = std::fs::read_dir(folder) else {
            return 0;
        };
        let now = std::time::SystemTime::now();
        let mut removed = 0;
        for entry in entries.take(MAX_SWEPT).flatten() {
            if !temp_name(&entry.file_name()) {
                continue;
            }
            // `DirEntry::metadata` does not follow a link.
            let stale = entry
                .metadata()
                .ok()
                .filter(|m| m.file_type().is_file())
                .and_then(|m| m.modified().ok())
                .is_some_and(|t| now.duration_since(t).is_ok_and(|age| age >= STALE_TEMP));
            if stale && std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// Replaces the file with `state`'s JSON form, atomically: a temporary file beside it,
    /// synced, then renamed over it. A new file gets 0666 less the umask; an existing one
    /// keeps its mode, so other users' runs that share it can still read it.
    fn save(&self, state: &State) -> std::io::Result<()> {
        let mut tmp = temp_beside(&self.path, TEMP_PREFIX, "")?;
        tmp.write_all(state.to_json().as_bytes())?;
        tmp.as_file().sync_all()?;
        retry_http_system::files::persist(tmp, &self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

impl Store for FileStore {
    /// `op` under the file's lock (see `FileStore::update`).
    fn apply(
        &self,
        key: &str,
        op: &Op,
        bound: Duration,
        warn: &dyn Fn(&str),
    ) -> std::io::Result<(Reply, Millis)> {
        let mut answer = None;
        self.update(key, bound, warn, &mut |t, now| {
            answer = Some((op.run(t, now, &self.limits), now));
        })?;
        answer.ok_or_else(|| std::io::Error::other("the store made no decision"))
    }

    /// Reads the file without the lock (a rename replaces it whole, so what is read is
    /// one version of it) and writes nothing; a missing or corrupt file of ours reads as
    /// fresh.
    fn peek(&self, key: &str, bound: Duration) -> std::io::Result<(Target, Millis)> {
        self.read_only(key, bound)
    }
}

impl FileStore {
    /// Locks (waiting at most `wait`), removes stale temporary files (see `sweep`), reads
    /// (see `load`), discards times in the future
    /// that no run could have written (`State::repair`; `warn` hears which, and the file is
    /// then written even if nothing else changed), forgets what the window and TTL say, lets `change` edit the record of `key`, bounds the state (`State::bound`),
    /// writes it back atomically (see `save`), unlocks. Errors are I/O errors on the lock
    /// or the write, and those of `load`.
    fn update(
        &self,
        key: &str,
        bound: Duration,
        warn: &dyn Fn(&str),
        change: &mut dyn FnMut(&mut Target, Millis),
    ) -> std::io::Result<()> {
        let lock = self.lock(bound)?;
        self.sweep();
        let now = self.clock.host_time();
        let (mut state, dropped) = self.load(now, warn)?;
        let repaired = state.repair(now, &self.limits);
        for (target, why) in &repaired {
            warn(&format!(
                "the state file {}: the record of {target} lies in the future ({why})",
                self.path.display()
            ));
        }
        let before = state.targets.len();
        state.prune(now, &self.limits);
        let pruned = state.targets.len() != before || !repaired.is_empty() || dropped;
        let record = state.targets.entry(key.to_string()).or_default();
        let was = record.clone();
        change(record, now);
        let worth = record.worth_writing(&was, &self.limits);
        if !worth {
            // What is not worth writing is not kept either, written or not, so both
            // stores keep the same record.
            *record = was;
        }
        if pruned || worth {
            for (target, jobs) in state.bound() {
                warn(&format!(
                    "the state file {} keeps at most {} targets in {} MiB: the record of {target}, the oldest, was dropped with its {jobs} Idempotency-Key(s) of jobs whose outcome is unknown (a re-run of those jobs will send a new key)",
                    self.path.display(),
                    retry_http_policy::record::MAX_TARGETS,
                    retry_http_policy::record::MAX_FILE_BYTES >> 20
                ));
            }
            self.save(&state)?;
        }
        drop(lock);
        Ok(())
    }

    /// `Store::peek`.
    fn read_only(&self, key: &str, _bound: Duration) -> std::io::Result<(Target, Millis)> {
        let now = self.clock.host_time();
        let (mut state, _) = self.load(now, &|_| {})?;
        state.repair(now, &self.limits);
        state.prune(now, &self.limits);
        Ok((state.targets.remove(key).unwrap_or_default(), now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::contract;

    fn file_store(dir: &Path, limits: &Limits, clock: Clock) -> Box<dyn Store> {
        let store = FileStore::open(&dir.join("state.json"), limits, clock);
        Box::new(store.expect("a missing file is usable"))
    }

    crate::store::store_contract!(file_store);

    /// What retry-http 0.1.0 wrote, byte for byte.
    const LEGACY: &str = "{\n  \"targets\": {\n    \"http://127.0.0.1:1\": {\n      \"breaker\": {\n        \"failures\": 1,\n        \"opened_at\": null,\n        \"probe_until\": null\n      },\n      \"retries\": [],\n      \"successes\": []\n    }\n  },\n  \"version\": 1\n}\n";

    #[test]
    fn whose_file_it_is_is_judged_from_its_first_bytes() {
        assert_eq!(owner(b""), Owner::Empty);
        for ours in [
            "{\"format\":\"retry-http-state\"",
            " {\n\t\"format\" :\r\n \"retry-http-state\", \"version\": 1, \"targ",
        ] {
            assert_eq!(owner(ours.as_bytes()), Owner::Marked, "{ours}");
        }
        assert_eq!(
            owner(b"{\"format\": \"retry-http-state\", \"version\": 12, \"targets\""),
            Owner::Newer(12)
        );
        for ours in [
            "{\"format\":\"retry-http-state\",\"version\":1,",
            "{\"format\":\"retry-http-state\",\"version\":2",
        ] {
            assert_eq!(
                owner(ours.as_bytes()),
                Owner::Marked,
                "{ours}: 2 may be cut short"
            );
        }
        assert_eq!(owner(LEGACY.as_bytes()), Owner::Legacy);
        assert_eq!(owner(&LEGACY.as_bytes()[..84]), Owner::Legacy, "truncated");
        assert_eq!(
            owner(&LEGACY.as_bytes()[..83]),
            Owner::Foreign,
            "too short to tell"
        );
        assert_eq!(
            owner(b"{\n  \"targets\": {},\n  \"version\": 1\n}\n"),
            Owner::Legacy
        );
        for foreign in [
            "notes: buy milk\n",
            "{\"a\":1}",
            "{\n  \"name\": \"pkg\",\n  \"version\": \"1.0.0\"\n}\n",
            "{\"version\":1,\"targets\":{}}",
            "{\n  \"targets\": {\n    \"build\": {\n      \"command\": \"make\"\n    }\n  }\n}\n",
            "{\"format\":\"retry-http-stat",
            "{\"version\":1,\"format\":\"retry-http-state\",\"targets\":{}}",
            "\u{0}\u{0}\u{0}",
        ] {
            assert_eq!(owner(foreign.as_bytes()), Owner::Foreign, "{foreign}");
        }
    }

    #[test]
    fn a_file_is_fresh_valid_corrupt_or_foreign() {
        assert_eq!(judge(b"", true, 0), Contents::Fresh);
        let Contents::Valid(legacy, _) = judge(LEGACY.as_bytes(), true, 42) else {
            panic!("a file of 0.1.0 is read");
        };
        let t = &legacy.targets["http://127.0.0.1:1"];
        assert_eq!((t.breaker.failures, t.seen), (1, 42), "dated now");
        let ours = State::default().to_json();
        assert_eq!(
            judge(ours.as_bytes(), true, 0),
            Contents::Valid(State::default(), Vec::new())
        );
        // One target's bad record leaves that target out, not the file.
        let bad_x = "{\"format\":\"retry-http-state\",\"version\":1,\"targets\":{\"x\":{\"breaker\":{\"failures\":-1}}}}";
        assert_eq!(
            judge(bad_x.as_bytes(), true, 0),
            Contents::Valid(State::default(), vec!["x".to_string()])
        );
        for corrupt in [
            &ours[..45],
            "{\"format\":\"retry-http-state\",\"version\":\"one\"}",
            &LEGACY[..LEGACY.len() - 20],
        ] {
            assert!(
                matches!(judge(corrupt.as_bytes(), true, 0), Contents::Corrupt(_)),
                "{corrupt}"
            );
        }
        assert!(matches!(
            judge(ours.as_bytes(), false, 0),
            Contents::Corrupt(why) if why.contains("larger than 4 MiB")
        ));
        assert!(matches!(
            judge(b"{\"format\":\"retry-http-state\",\"version\":3,\"targets\":[]}", true, 0),
            Contents::Foreign(why) if why.contains("newer retry-http (format version 3)")
        ));
        for foreign in ["{\"a\":1}", "hello", "{\"version\":1,\"targets\":{}}"] {
            assert!(
                matches!(judge(foreign.as_bytes(), true, 0), Contents::Foreign(_)),
                "{foreign}"
            );
            assert!(
                matches!(judge(foreign.as_bytes(), false, 0), Contents::Foreign(_)),
                "{foreign}"
            );
        }
    }

    #[test]
    fn what_this_version_writes_is_judged_ours() {
        let mut s = State::default();
        s.targets.insert("http://h:80".into(), Target::default());
        assert_eq!(owner(s.to_json().as_bytes()), Owner::Marked);
        assert_eq!(owner(State::default().to_json().as_bytes()), Owner::Marked);
    }

    #[test]
    fn the_file_is_written_whole_and_a_foreign_one_left_alone() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("state.json");
        let store = FileStore::open(&path, &contract::limits(), Clock::manual(7)).expect("usable");
        let quiet = |m: &str| panic!("{m}");
        store
            .update("http://h:80", Duration::ZERO, &quiet, &mut |t, now| {
                t.hold(now, Duration::from_secs(1))
            })
            .expect("written");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(
            text,
            "{\n  \"format\": \"retry-http-state\",\n  \"version\": 2,\n  \"targets\": {\n    \"http://h:80\": {\"breaker\":{\"failures\":0,\"opened_at\":null,\"probe_id\":null,\"probe_until\":null},\"budget\":[],\"hold_until\":1007,\"seen\":7}\n  }\n}\n"
        );
        assert!(dir.path().join("state.json.lock").exists());
        std::fs::write(&path, "notes: buy milk\n").expect("write");
        let refused = store.update("http://h:80", Duration::ZERO, &quiet, &mut |_, _| {
            panic!("no decision on someone else's file")
        });
        let why = refused.expect_err("refused").to_string();
        assert_eq!(
            why,
            "it was not written by retry-http, so it is left untouched (give --state a file of its own)"
        );
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "notes: buy milk\n"
        );
        let why =
            FileStore::open(&path, &contract::limits(), Clock::manual(7)).expect_err("refused");
        assert!(why.contains("left untouched"), "{why}");
    }

    #[test]
    fn a_corrupt_file_of_ours_is_reported_and_replaced() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("state.json");
        std::fs::write(&path, &LEGACY[..LEGACY.len() - 20]).expect("write");
        let store = FileStore::open(&path, &contract::limits(), Clock::manual(7)).expect("ours");
        let heard = std::sync::Mutex::new(Vec::new());
        let warn = |m: &str| heard.lock().expect("one thread").push(m.to_string());
        store
            .update("http://h:80", Duration::ZERO, &warn, &mut |t, now| {
                t.hold(now, Duration::from_secs(1))
            })
            .expect("replaced");
        assert_eq!(
            heard.into_inner().expect("one thread"),
            [format!(
                "the state file {} is not valid; starting afresh",
                path.display()
            )]
        );
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(owner(text.as_bytes()), Owner::Marked);
    }
}
