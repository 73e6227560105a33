//! State shared by runs through `--state FILE`: a circuit breaker and a retry budget per
//! target (scheme, host, port), so cron jobs and CI steps that run again and again act as
//! one careful client.
//!
//! - Circuit breaker: closed, counting consecutive failed runs (exit 4, 5 or 6); open after
//!   `--breaker-threshold` of them, refusing at once (exit 7) for `--breaker-cooldown`; then
//!   half-open: one run probes with a single attempt under a lease (so a probe that dies does
//!   not hold the circuit), while the others keep getting exit 7. Success closes it, failure
//!   reopens it.
//! - Retry budget (Google SRE book, "Handling Overload"; gRPC retry throttling; Finagle's
//!   RetryBudget): retries within `--budget-window` are limited to `--retry-budget` percent of
//!   the successful requests in that window, with a floor of `--budget-floor` retries.
//! - Memory: a target with no event for `--state-ttl` is forgotten unless its circuit is
//!   open; at most `MAX_TARGETS` targets are kept, and a file never grows past
//!   `MAX_FILE_BYTES`, the most a run reads.
//!
//! The decisions are pure functions of the state and "now"; `StateFile` does the I/O: an
//! exclusive lock on a companion `FILE.lock` (the state file itself is replaced by rename,
//! so locking it would lose updates), then read, change, write to a temporary file, rename.
//!
//! Only a file that retry-http wrote is ever replaced: one that begins with the marker
//! `{"format": "retry-http-state"`, one laid out exactly as retry-http 0.1.0 wrote it (before
//! the marker), or an empty one. Whose a file is gets judged from its first `PREFIX_BYTES`
//! before the lock file is created, and again under the lock. Anything else is left
//! untouched and the run goes on without state; a file of ours that is corrupt, truncated or
//! too large is reported and replaced, never a crash or a refusal.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Timestamps in the state are milliseconds since the Unix epoch.
pub type Millis = u64;

/// The most timestamps kept per list, so the file stays small under heavy use.
const MAX_STAMPS: usize = 10_000;

/// The marker that begins every state file written by this version: the value of the
/// first key, `format`.
pub const FORMAT: &str = "retry-http-state";

/// The format's version. Changes that only add keys keep it: older readers ignore them.
pub const VERSION: u64 = 1;

/// The largest state file read, in bytes (4 MiB). What this tool writes stays below it
/// (`State::bound`); a larger file of ours is replaced, anyone else's left untouched.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// The most targets kept; beyond it, those with the oldest event are forgotten.
pub const MAX_TARGETS: usize = 1000;

/// How much of a file is read to judge whose it is, in bytes.
pub const PREFIX_BYTES: usize = 4096;

/// Room kept in `MAX_FILE_BYTES` for what surrounds the targets.
const FRAME_BYTES: usize = 256;

/// The breaker's settings and the budget's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Consecutive failed runs that open the circuit.
    pub threshold: u32,
    /// How long an open circuit refuses before a probe (also the probe's lease).
    pub cooldown: Duration,
    /// Retries allowed, in percent of successful requests in the window.
    pub budget_pct: f64,
    /// The sliding window of the budget.
    pub window: Duration,
    /// Retries always allowed per window.
    pub floor: u32,
    /// How long a target with no event is remembered, unless its circuit is open.
    pub ttl: Duration,
}

/// The circuit breaker's state for one target.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Breaker {
    /// Consecutive failed runs.
    pub failures: u32,
    /// When the circuit opened, if it is open (or half-open).
    pub opened_at: Option<Millis>,
    /// Until when a probe holds the half-open circuit.
    pub probe_until: Option<Millis>,
}

/// Everything kept for one target.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Target {
    /// The breaker.
    pub breaker: Breaker,
    /// When successful requests ended (within the window).
    pub successes: Vec<Millis>,
    /// When retries were sent (within the window).
    pub retries: Vec<Millis>,
    /// When a run last asked about the target or told how it went: what `--state-ttl`
    /// counts from.
    pub seen: Millis,
}

/// The whole file: targets by "scheme://host:port".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    /// Per-target state.
    pub targets: BTreeMap<String, Target>,
}

/// What the breaker says before a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Closed: run as configured.
    Run,
    /// Half-open: this run is the probe, with a single attempt.
    Probe,
    /// Open (or a probe is in flight): refuse until then.
    Refuse {
        /// When the next probe may start.
        until: Millis,
        /// Why, for the log.
        why: String,
    },
}

/// How a run ended, as far as the breaker cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunResult {
    /// Exit 0.
    Success,
    /// Exit 4, 5 or 6: the target failed.
    Failure,
    /// Anything else (a 404, a usage error, an interrupt): says nothing about the target.
    Neutral,
}

fn ms(d: Duration) -> Millis {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

impl Target {
    /// Drops timestamps older than the window.
    pub fn prune(&mut self, now: Millis, window: Duration) {
        let since = now.saturating_sub(ms(window));
        self.successes.retain(|t| *t >= since);
        self.retries.retain(|t| *t >= since);
        for list in [&mut self.successes, &mut self.retries] {
            if list.len() > MAX_STAMPS {
                list.drain(..list.len() - MAX_STAMPS);
            }
        }
    }

    /// Decides whether a run may start, taking the probe lease (for `lease`, at least the
    /// cooldown) when it is the probe.
    pub fn admit(&mut self, now: Millis, limits: &Limits, lease: Duration) -> Admission {
        self.seen = now;
        let Some(opened) = self.breaker.opened_at else {
            return Admission::Run;
        };
        let reopen = opened.saturating_add(ms(limits.cooldown));
        if now < reopen {
            return Admission::Refuse {
                until: reopen,
                why: format!(
                    "the circuit is open after {} failed runs in a row",
                    self.breaker.failures
                ),
            };
        }
        if let Some(lease) = self.breaker.probe_until.filter(|l| now < *l) {
            return Admission::Refuse {
                until: lease,
                why: "the circuit is half-open and a probe is in flight".into(),
            };
        }
        self.breaker.probe_until = Some(now.saturating_add(ms(lease.max(limits.cooldown))));
        Admission::Probe
    }

    /// Records how a run ended.
    pub fn finish(&mut self, now: Millis, result: RunResult, probe: bool, limits: &Limits) {
        self.seen = now;
        match result {
            RunResult::Success => {
                self.successes.push(now);
                self.breaker = Breaker::default();
            }
            RunResult::Failure => {
                self.breaker.failures = self.breaker.failures.saturating_add(1);
                self.breaker.probe_until = None;
                if probe || self.breaker.failures >= limits.threshold {
                    self.breaker.opened_at = Some(now);
                }
            }
            RunResult::Neutral => {
                if probe {
                    self.breaker.probe_until = None;
                }
            }
        }
    }

    /// Takes one retry from the budget, or says how it is spent.
    pub fn take_retry(&mut self, now: Millis, limits: &Limits) -> Result<(), String> {
        self.seen = now;
        self.prune(now, limits.window);
        let earned = (self.successes.len() as f64 * limits.budget_pct / 100.0).floor() as u64;
        let allowed = earned.max(u64::from(limits.floor));
        if self.retries.len() as u64 >= allowed {
            return Err(format!(
                "the retry budget is spent: {} retries in the last {} (allowed: {}% of {} successes, at least {})",
                self.retries.len(),
                humantime::format_duration(limits.window),
                limits.budget_pct,
                self.successes.len(),
                limits.floor
            ));
        }
        self.retries.push(now);
        Ok(())
    }
}

/// The latest timestamp accepted: the end of year 9999, as far as HTTP dates go.
pub const MAX_STAMP: Millis = 253_402_300_799_000;

fn stamp(v: &Value) -> Option<Millis> {
    v.as_u64().filter(|t| *t <= MAX_STAMP)
}

fn stamps(v: &Value) -> Option<Vec<Millis>> {
    v.as_array()?.iter().map(stamp).collect()
}

/// A timestamp that may be absent or null; any other type or value makes the file invalid
/// (read as "closed" it would hide an open circuit).
fn optional_stamp(v: Option<&Value>) -> Option<Option<Millis>> {
    match v {
        None | Some(Value::Null) => Some(None),
        Some(other) => stamp(other).map(Some),
    }
}

impl State {
    /// Forgets what is no longer worth keeping: every target's timestamps older than the
    /// budget window; targets with no event for `ttl`, unless their circuit is open (or
    /// half-open), so that sparse failures still add up to an open circuit within the TTL
    /// while a target that failed once is not remembered for ever; and targets left with
    /// nothing to remember (no recent requests, a closed circuit without failures).
    pub fn prune(&mut self, now: Millis, window: Duration, ttl: Duration) {
        let ttl = ms(ttl);
        self.targets.retain(|_, t| {
            // A date in the future (a clock set back) counts from now.
            t.seen = t.seen.min(now);
            t.prune(now, window);
            let open = t.breaker.opened_at.is_some();
            let idle = now - t.seen >= ttl;
            let empty =
                t.successes.is_empty() && t.retries.is_empty() && t.breaker == Breaker::default();
            open || !(idle || empty)
        });
    }

    /// Keeps the file within `MAX_TARGETS` targets and `MAX_FILE_BYTES` bytes, forgetting the
    /// targets with the oldest event first (the current run's target is the newest). Cheap
    /// when there is nothing to cut.
    pub fn bound(&mut self) {
        let mut order: Vec<(Millis, &String, usize)> = self
            .targets
            .iter()
            .map(|(k, t)| (t.seen, k, target_entry(k, t).len() + 6))
            .collect();
        let total: usize = order.iter().map(|(_, _, n)| n).sum();
        if order.len() <= MAX_TARGETS && total <= MAX_FILE_BYTES as usize - FRAME_BYTES {
            return;
        }
        order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let mut room = MAX_FILE_BYTES as usize - FRAME_BYTES;
        let mut cut = Vec::new();
        for (i, (_, key, len)) in order.into_iter().enumerate() {
            if cut.is_empty() && i < MAX_TARGETS && len <= room {
                room -= len;
            } else {
                cut.push(key.clone());
            }
        }
        for key in cut {
            self.targets.remove(&key);
        }
    }

    /// Reads the JSON form (see README, "State file"); `None` when it does not match. The
    /// `format` marker may be absent (files of retry-http 0.1.0); a target without `seen`
    /// (the same files) counts as seen `now`.
    pub fn from_json(text: &str, now: Millis) -> Option<State> {
        let v: Value = serde_json::from_str(text).ok()?;
        match v.get("format") {
            None => {}
            Some(f) if f == FORMAT => {}
            Some(_) => return None,
        }
        if v.get("version")?.as_u64()? != VERSION {
            return None;
        }
        let mut state = State::default();
        for (key, t) in v.get("targets")?.as_object()? {
            let b = t.get("breaker")?;
            let breaker = Breaker {
                failures: u32::try_from(b.get("failures")?.as_u64()?).ok()?,
                opened_at: optional_stamp(b.get("opened_at"))?,
                probe_until: optional_stamp(b.get("probe_until"))?,
            };
            let target = Target {
                breaker,
                successes: stamps(t.get("successes")?)?,
                retries: stamps(t.get("retries")?)?,
                seen: optional_stamp(t.get("seen"))?.unwrap_or(now),
            };
            state.targets.insert(key.clone(), target);
        }
        Some(state)
    }

    /// The JSON form: the marker first, then one line per target.
    pub fn to_json(&self) -> String {
        let mut text = format!(
            "{{\n  \"format\": \"{FORMAT}\",\n  \"version\": {VERSION},\n  \"targets\": {{"
        );
        for (i, (k, t)) in self.targets.iter().enumerate() {
            text.push_str(if i == 0 { "\n    " } else { ",\n    " });
            text.push_str(&target_entry(k, t));
        }
        if !self.targets.is_empty() {
            text.push_str("\n  ");
        }
        text.push_str("}\n}\n");
        text
    }
}

/// One target as `"key": {...}`, on one line.
fn target_entry(key: &str, t: &Target) -> String {
    let v = json!({
        "breaker": {
            "failures": t.breaker.failures,
            "opened_at": t.breaker.opened_at,
            "probe_until": t.breaker.probe_until,
        },
        "seen": t.seen,
        "successes": t.successes,
        "retries": t.retries,
    });
    format!("{}: {v}", Value::String(key.to_string()))
}

/// Whose a file is, judged from its first bytes (at most `PREFIX_BYTES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
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
pub fn owner(prefix: &[u8]) -> Owner {
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
pub enum Contents {
    /// Empty: start afresh, silently.
    Fresh,
    /// A state this version can use (of this version or of retry-http 0.1.0).
    Valid(State),
    /// Recognisably ours but unusable: replaced, with a warning that ends with this reason.
    Corrupt(String),
    /// Not ours, or from a newer retry-http: left untouched, for this reason.
    Foreign(String),
}

/// Judges a file from `bytes`, its first bytes; `complete` when they are the whole file,
/// which is then at most `MAX_FILE_BYTES` long.
pub fn judge(bytes: &[u8], complete: bool, now: Millis) -> Contents {
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
    if let Some(state) = State::from_json(text, now) {
        return Contents::Valid(state);
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

fn newer(version: u64) -> String {
    format!("was written by a newer retry-http (format version {version})")
}

/// Reads what it takes to judge the file at `path`: `None` when there is none, else its first
/// bytes (all of them when `all` and the file is ours and at most `MAX_FILE_BYTES` long) and
/// whether they are the whole file. It is opened without blocking and only read when it is
/// a regular file, so a FIFO or a device put there meanwhile can neither hang nor be read.
fn read_head(path: &Path, all: bool) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
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

/// The state file on disk, with its lock.
#[derive(Debug, Clone)]
pub struct StateFile {
    /// The file itself, a link followed.
    path: PathBuf,
    /// How messages name it: "it", or "its link target PATH".
    subject: String,
}

impl StateFile {
    /// A state file at `path` (created on first write). A symbolic link is followed, so
    /// runs naming the link and runs naming its target share one state. Anything but a
    /// regular file (or none yet) is refused: a device, a FIFO or a folder would be
    /// destroyed by the rename, or block. So is a file that retry-http did not write (see
    /// `owner`), or one it cannot read: all this is judged here, before the lock file is
    /// created beside it, and nothing is written.
    pub fn new(path: &Path) -> Result<StateFile, String> {
        let resolved = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)
                .or_else(|_| {
                    std::fs::read_link(path)
                        .map(|t| path.parent().unwrap_or(Path::new(".")).join(t))
                })
                .map_err(|e| format!("cannot follow the link {}: {e}", path.display()))?,
            _ => path.to_path_buf(),
        };
        if resolved.file_name().is_none() || path.as_os_str().to_string_lossy().ends_with('/') {
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
        let file = StateFile {
            path: resolved,
            subject,
        };
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

    /// Takes the lock, waiting at most `wait`: a run that holds it for ever (stopped with
    /// Ctrl-Z, say) must not hang the others past their deadlines.
    fn lock(&self, wait: Duration) -> std::io::Result<std::fs::File> {
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.lock_path())?;
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

    /// Locks (waiting at most `wait`), reads, lets `change` edit the state, bounds it
    /// (`State::bound`), writes it back atomically, unlocks. `now` dates the targets of a
    /// file of retry-http 0.1.0, which have no `seen`.
    /// `warn` hears about a corrupt file of ours (which is then replaced). Errors are I/O
    /// errors on the lock or the write, and a file judged again under the lock to be
    /// someone else's or unreadable: it is then left as it is.
    pub fn update<T>(
        &self,
        wait: Duration,
        now: Millis,
        warn: &dyn Fn(&str),
        change: impl FnOnce(&mut State) -> T,
    ) -> std::io::Result<T> {
        let lock = self.lock(wait)?;
        let contents = match read_head(&self.path, true) {
            Ok(Some((bytes, complete))) => judge(&bytes, complete, now),
            Ok(None) => Contents::Fresh,
            Err(e) => {
                let why = self.untouched(&format!("cannot be read ({e})"));
                return Err(std::io::Error::new(e.kind(), why));
            }
        };
        let mut state = match contents {
            Contents::Fresh => State::default(),
            Contents::Valid(state) => state,
            Contents::Corrupt(why) => {
                warn(&format!(
                    "the state file {} {why}; starting afresh",
                    self.path.display()
                ));
                State::default()
            }
            Contents::Foreign(why) => return Err(std::io::Error::other(self.untouched(&why))),
        };
        let out = change(&mut state);
        state.bound();
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        // A new file gets 0666 less the umask; an existing one keeps its mode, so other
        // users' runs that share it can still read it.
        use std::os::unix::fs::PermissionsExt;
        let existing = std::fs::metadata(&self.path)
            .ok()
            .map(|m| m.permissions().mode());
        let mut tmp = tempfile::Builder::new()
            .prefix(".retry-http-state")
            .permissions(std::fs::Permissions::from_mode(existing.unwrap_or(0o666)))
            .tempfile_in(dir)?;
        if let Some(mode) = existing {
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        tmp.write_all(state.to_json().as_bytes())?;
        tmp.as_file().sync_all()?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
        drop(lock);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            threshold: 3,
            cooldown: Duration::from_secs(30),
            budget_pct: 10.0,
            window: Duration::from_secs(600),
            floor: 2,
            ttl: Duration::from_secs(DAY_S),
        }
    }

    const DAY_S: u64 = 24 * 3600;
    const HOUR: Millis = 3600 * 1000;

    #[test]
    fn breaker_opens_after_threshold_then_probes_once() {
        let l = limits();
        let mut t = Target::default();
        for i in 0..3 {
            assert_eq!(t.admit(i, &l, Duration::ZERO), Admission::Run);
            t.finish(i, RunResult::Failure, false, &l);
        }
        assert!(matches!(
            t.admit(1_000, &l, Duration::ZERO),
            Admission::Refuse { until: 30_002, .. }
        ));
        assert_eq!(t.admit(40_000, &l, Duration::ZERO), Admission::Probe);
        assert!(
            matches!(
                t.admit(40_001, &l, Duration::ZERO),
                Admission::Refuse { .. }
            ),
            "one probe at a time"
        );
        t.finish(41_000, RunResult::Failure, true, &l);
        assert!(
            matches!(
                t.admit(42_000, &l, Duration::ZERO),
                Admission::Refuse { until: 71_000, .. }
            ),
            "a failed probe reopens"
        );
        assert_eq!(t.admit(80_000, &l, Duration::ZERO), Admission::Probe);
        t.finish(80_500, RunResult::Success, true, &l);
        assert_eq!(
            t.admit(80_600, &l, Duration::ZERO),
            Admission::Run,
            "a successful probe closes"
        );
    }

    #[test]
    fn a_dead_probe_frees_the_circuit_after_its_lease() {
        let l = limits();
        let mut t = Target {
            breaker: Breaker {
                failures: 5,
                opened_at: Some(0),
                probe_until: None,
            },
            ..Target::default()
        };
        assert_eq!(t.admit(30_000, &l, Duration::ZERO), Admission::Probe);
        assert!(matches!(
            t.admit(59_999, &l, Duration::ZERO),
            Admission::Refuse { .. }
        ));
        assert_eq!(
            t.admit(60_000, &l, Duration::ZERO),
            Admission::Probe,
            "the lease expired"
        );
    }

    #[test]
    fn budget_has_a_floor_and_grows_with_successes() {
        let l = limits();
        let mut t = Target::default();
        assert!(t.take_retry(1, &l).is_ok());
        assert!(t.take_retry(2, &l).is_ok());
        assert!(t.take_retry(3, &l).is_err(), "floor of 2 spent");
        t.successes = (0..50).map(|i| 10 + i).collect();
        for i in 0..3 {
            assert!(t.take_retry(100 + i, &l).is_ok(), "10% of 50 is 5");
        }
        assert!(t.take_retry(200, &l).is_err());
        assert!(
            t.take_retry(700_000, &l).is_ok(),
            "the window slid past the old retries"
        );
    }

    #[test]
    fn json_round_trips_and_rejects_garbage() {
        let mut s = State::default();
        s.targets.insert(
            "http://h:80".into(),
            Target {
                breaker: Breaker {
                    failures: 2,
                    opened_at: Some(5),
                    probe_until: None,
                },
                successes: vec![1, 2],
                retries: vec![3],
                seen: 7,
            },
        );
        s.targets
            .insert("https://\"odd\\key:443".into(), Target::default());
        let text = s.to_json();
        assert_eq!(State::from_json(&text, 0), Some(s));
        assert_eq!(owner(text.as_bytes()), Owner::Marked);
        assert!(
            text.starts_with("{\n  \"format\": \"retry-http-state\",\n  \"version\": 1,"),
            "{text}"
        );
        assert_eq!(
            State::default().to_json(),
            "{\n  \"format\": \"retry-http-state\",\n  \"version\": 1,\n  \"targets\": {}\n}\n"
        );
        for bad in [
            "",
            "{",
            "[]",
            "{\"version\":2,\"targets\":{}}",
            "{\"version\":1}",
            "{\"format\":\"other\",\"version\":1,\"targets\":{}}",
        ] {
            assert_eq!(State::from_json(bad, 0), None, "{bad}");
        }
    }

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
        let Contents::Valid(legacy) = judge(LEGACY.as_bytes(), true, 42) else {
            panic!("a file of 0.1.0 is read");
        };
        let t = &legacy.targets["http://127.0.0.1:1"];
        assert_eq!((t.breaker.failures, t.seen), (1, 42), "dated now");
        let ours = State::default().to_json();
        assert_eq!(
            judge(ours.as_bytes(), true, 0),
            Contents::Valid(State::default())
        );
        for corrupt in [
            &ours[..45],
            "{\"format\":\"retry-http-state\",\"version\":1,\"targets\":{\"x\":{\"breaker\":{\"failures\":-1}}}}",
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
            judge(b"{\"format\":\"retry-http-state\",\"version\":2,\"targets\":[]}", true, 0),
            Contents::Foreign(why) if why.contains("newer retry-http (format version 2)")
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

    fn failed_once(seen: Millis) -> Target {
        Target {
            breaker: Breaker {
                failures: 1,
                ..Breaker::default()
            },
            seen,
            ..Target::default()
        }
    }

    #[test]
    fn targets_idle_past_the_ttl_are_forgotten_unless_open() {
        let l = limits();
        let now = 10 * 24 * HOUR;
        let mut s = State::default();
        s.targets
            .insert("idle".into(), failed_once(now - 24 * HOUR));
        s.targets
            .insert("recent".into(), failed_once(now - 23 * HOUR));
        s.targets
            .insert("future".into(), failed_once(now + 100 * 24 * HOUR));
        let mut open = failed_once(now - 9 * 24 * HOUR);
        open.breaker.opened_at = Some(now - 9 * 24 * HOUR);
        s.targets.insert("open".into(), open);
        s.prune(now, l.window, l.ttl);
        let kept: Vec<&str> = s.targets.keys().map(String::as_str).collect();
        assert_eq!(kept, ["future", "open", "recent"]);
        assert_eq!(
            s.targets["future"].seen, now,
            "a future date counts from now"
        );
        s.prune(now + 24 * HOUR, l.window, l.ttl);
        let kept: Vec<&str> = s.targets.keys().map(String::as_str).collect();
        assert_eq!(kept, ["open"], "an open circuit outlives the TTL");
    }

    #[test]
    fn sparse_failures_add_up_within_the_ttl_but_not_beyond() {
        let l = Limits {
            threshold: 5,
            ..limits()
        };
        let run = |gap: Millis| {
            let mut s = State::default();
            for i in 0..5 {
                let now = 1_000 + i * gap;
                s.prune(now, l.window, l.ttl);
                let t = s.targets.entry("t".into()).or_default();
                assert_eq!(t.admit(now, &l, Duration::ZERO), Admission::Run);
                t.finish(now, RunResult::Failure, false, &l);
            }
            s.targets["t"].breaker.opened_at.is_some()
        };
        assert!(
            run(5 * HOUR),
            "five failures five hours apart open the circuit"
        );
        assert!(
            !run(25 * HOUR),
            "failures more than a day apart are forgotten"
        );
    }

    #[test]
    fn the_bound_keeps_the_newest_targets_and_the_file_small() {
        let mut s = State::default();
        for i in 0..(MAX_TARGETS as u64 + 5) {
            s.targets
                .insert(format!("http://h{i:05}:80"), failed_once(i));
        }
        s.bound();
        assert_eq!(s.targets.len(), MAX_TARGETS);
        assert!(!s.targets.contains_key("http://h00004:80"));
        assert!(s.targets.contains_key("http://h00005:80"));
        // Busy targets: the largest timestamp lists allowed, more than the file may hold.
        let mut s = State::default();
        for i in 0..20u64 {
            let busy = Target {
                successes: vec![MAX_STAMP; MAX_STAMPS],
                retries: vec![MAX_STAMP; MAX_STAMPS],
                ..failed_once(i)
            };
            s.targets.insert(format!("http://busy{i:02}:80"), busy);
        }
        s.bound();
        let text = s.to_json();
        assert!(text.len() as u64 <= MAX_FILE_BYTES, "{}", text.len());
        assert!(s.targets.len() < 20 && s.targets.contains_key("http://busy19:80"));
        assert!(!s.targets.contains_key("http://busy00:80"));
    }
}
