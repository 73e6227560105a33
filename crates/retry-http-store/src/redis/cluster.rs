//! Where a command goes: the one server of `redis://`, or, on a Redis Cluster
//! (`redis+cluster://`), the node that serves its key's slot.
//!
//! A key's slot is the CRC16 (XMODEM) of its hash tag, modulo 16384: the text between the
//! first `{` and the first `}` after it when that text is not empty, else the whole key
//! (the Redis Cluster specification, "Hash tags"). A command goes to the node known to own
//! the slot, else to the seeds in the URL's order; a node that answers `-MOVED SLOT
//! HOST:PORT` is not the owner, and the command is sent again there (the owner is
//! remembered); `-ASK SLOT HOST:PORT` sends this one command there, after `ASKING` in the
//! same write. At most `MAX_REDIRECTS` redirections are followed, all within the
//! operation's instant.
//!
//! A command is only ever sent again after a redirection (the node did not run it) or when
//! the connection could not be made (it was never sent): a node that fails once the
//! command is written may have run it, and the operation fails rather than count it twice.
//! A node that cannot be connected to gives way to the next candidate, and a connection
//! attempt leaves half the time left to the candidates after it.
//!
//! The owners learnt from `MOVED` are kept, best effort, in a small file in the user's cache
//! folder (`$XDG_CACHE_HOME/retry-http/`, else `~/.cache/retry-http/`), one per cluster, so
//! that the next run goes straight to the owner instead of paying a connection and a
//! round trip to a seed that is not. A file that cannot be read or written changes nothing
//! but that. It is one of the run's own files (`files::owned`): read only when it is a
//! regular file of at most 1 MiB, opened without blocking and never through a link, and
//! replaced by a new file made exclusively.

use super::resp::{Command, Value};
use super::wire::{Wire, redirect};
use super::{Dial, Endpoint, SLOTS, other, timed_out};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The most redirections followed for one command (a slot moves once at a time; more is a
/// cluster changing faster than a run can follow).
const MAX_REDIRECTS: usize = 5;

/// The largest cache file read, in bytes (16384 slots of a line each fit in 1 MiB).
const MAX_CACHE: u64 = 1 << 20;

/// The first line of a cache file; a file without it is ignored.
const CACHE_HEADER: &str = "retry-http cluster slots 1";

/// The slot of `key` (0 to 16383): CRC16 of its hash tag (see the module's comment).
pub fn slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|b| *b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|b| *b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) % SLOTS
}

/// CRC16-CCITT as XMODEM computes it (polynomial 0x1021, initial value 0), the checksum of
/// Redis Cluster's key slots.
fn crc16(data: &[u8]) -> u16 {
    let mut crc = 0u16;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The connections of the worker thread, by node, and where each slot is served.
pub struct Router {
    dial: Arc<Dial>,
    /// The open connections: the one server's, or one per cluster node used.
    wires: HashMap<Endpoint, Wire>,
    /// The owners of slots known (cluster only).
    owners: Owners,
}

impl Router {
    /// A router with no connection yet; on a cluster, the owners of slots that earlier runs
    /// learnt are read from the cache file.
    pub fn new(dial: Arc<Dial>) -> Router {
        let owners = match (&dial.location.endpoint, &dial.cache) {
            (Endpoint::Cluster { seeds, tls }, Some(dir)) => Owners::load(dir, seeds, *tls),
            _ => Owners::default(),
        };
        Router {
            dial,
            wires: HashMap::new(),
            owners,
        }
    }

    /// Sends `cmd` to the server, or to the node of the cluster serving `key`, and reads its
    /// answer, before `until`.
    pub fn run(&mut self, cmd: &Command, key: &str, until: Instant) -> std::io::Result<Value> {
        let packed = cmd.packed();
        let endpoint = self.dial.location.endpoint.clone();
        match endpoint {
            Endpoint::Cluster { seeds, tls } => {
                let seeds: Vec<Endpoint> = seeds.iter().map(|n| node(n, tls)).collect();
                self.cluster(&packed, slot(key.as_bytes()), &seeds, until)
            }
            one => {
                self.connect(&one, until)?;
                self.exchange(&one, &[&packed], until)
            }
        }
    }

    /// Connects to `node` unless a connection is open, within `until`.
    fn connect(&mut self, node: &Endpoint, until: Instant) -> std::io::Result<()> {
        if !self.wires.contains_key(node) {
            let wire = Wire::connect(&self.dial, node, until)?;
            self.wires.insert(node.clone(), wire);
        }
        Ok(())
    }

    /// Sends `commands` on the open connection to `node` and reads their answers; after any
    /// error but a redirection the connection is closed (its answers are out of step).
    fn exchange(
        &mut self,
        node: &Endpoint,
        commands: &[&[u8]],
        until: Instant,
    ) -> std::io::Result<Value> {
        let wire = self
            .wires
            .get_mut(node)
            .ok_or_else(|| other("no connection".into()))?;
        let result = wire.query(commands, until, "the store");
        if result.as_ref().is_err_and(|e| redirect(e).is_none()) {
            self.wires.remove(node);
        }
        result
    }

    /// The cluster's routing: the known owner of `slot`, then the seeds, redirections
    /// followed (see the module's comment).
    fn cluster(
        &mut self,
        packed: &[u8],
        slot: u16,
        seeds: &[Endpoint],
        until: Instant,
    ) -> std::io::Result<Value> {
        let owner = self.owners.get(slot);
        let mut queue: VecDeque<Endpoint> = owner.clone().into_iter().collect();
        queue.extend(seeds.iter().filter(|s| owner.as_ref() != Some(*s)).cloned());
        let asking = Command::new("ASKING").packed();
        let (mut ask, mut redirects) = (false, 0);
        let mut unreachable = None;
        while let Some(node) = queue.pop_front() {
            // A node that does not answer leaves time for the candidates after it.
            let by = if queue.is_empty() {
                until
            } else {
                let now = Instant::now();
                now + until.saturating_duration_since(now) / 2
            };
            if let Err(e) = self.connect(&node, by) {
                self.owners.forget(slot, &node);
                unreachable = Some(unreachable_node(&node, e));
                continue;
            }
            let commands: Vec<&[u8]> = if ask {
                vec![&asking, packed]
            } else {
                vec![packed]
            };
            let e = match self.exchange(&node, &commands, until) {
                Ok(answer) => return Ok(answer),
                Err(e) => e,
            };
            let Some(to) = redirect(&e) else {
                return Err(e);
            };
            redirects += 1;
            if redirects > MAX_REDIRECTS {
                return Err(other(format!(
                    "the cluster redirected the command more than {MAX_REDIRECTS} times (its slots are moving)"
                )));
            }
            let host = match (&node, to.host.is_empty()) {
                (Endpoint::Tcp { host, .. }, true) => host.clone(),
                _ => to.host.clone(),
            };
            let next = node_of(&node, host, to.port);
            ask = to.ask;
            if !ask {
                self.owners.learn(slot, &next);
            }
            queue = VecDeque::from([next]);
        }
        Err(unreachable.unwrap_or_else(|| other("the cluster URL names no seed node".into())))
    }
}

/// The endpoint of a seed, `(host, port)`, with TLS or without.
fn node((host, port): &(String, u16), tls: bool) -> Endpoint {
    Endpoint::Tcp {
        host: host.clone(),
        port: *port,
        tls,
    }
}

/// The node at `host:port`, reached as `like` is (TLS or not).
fn node_of(like: &Endpoint, host: String, port: u16) -> Endpoint {
    let tls = matches!(like, Endpoint::Tcp { tls: true, .. });
    Endpoint::Tcp { host, port, tls }
}

/// The error of a node that could not be connected to, naming it (a time-out stays one).
fn unreachable_node(node: &Endpoint, e: std::io::Error) -> std::io::Error {
    let name = match node {
        Endpoint::Tcp { host, port, .. } => format!("{}:{port}", super::bracketed(host)),
        _ => "the node".into(),
    };
    if e.kind() == std::io::ErrorKind::TimedOut {
        timed_out(&format!("connecting to the cluster's node {name}"))
    } else {
        other(format!("cannot connect to the cluster's node {name}: {e}"))
    }
}

/// The owners of slots learnt from `MOVED`, and the cache file that keeps them between runs
/// (`None`: no cache folder, or not a cluster).
#[derive(Default)]
struct Owners {
    file: Option<PathBuf>,
    /// Whether the cluster's nodes are reached over TLS.
    tls: bool,
    known: HashMap<u16, Endpoint>,
}

impl Owners {
    /// The owners that the cache file in `dir` of the cluster with `seeds` holds (none if it
    /// cannot be read).
    fn load(dir: &Path, seeds: &[(String, u16)], tls: bool) -> Owners {
        let mut owners = Owners {
            file: Some(dir.join(cache_name(seeds, tls))),
            tls,
            known: HashMap::new(),
        };
        owners.known = owners.read();
        owners
    }

    /// The known owner of `slot`.
    fn get(&self, slot: u16) -> Option<Endpoint> {
        self.known.get(&slot).cloned()
    }

    /// Remembers that `node` serves `slot`, here and in the cache file.
    fn learn(&mut self, slot: u16, node: &Endpoint) {
        if self.known.get(&slot) != Some(node) {
            self.known.insert(slot, node.clone());
            self.save(slot, Some(node));
        }
    }

    /// Forgets `node` as the owner of `slot` (it could not be reached).
    fn forget(&mut self, slot: u16, node: &Endpoint) {
        if self.known.get(&slot) == Some(node) {
            self.known.remove(&slot);
            self.save(slot, None);
        }
    }

    /// The entries of the cache file: lines `SLOT HOST PORT` after `CACHE_HEADER`; a line
    /// that cannot be read is skipped. The file is read as every file of the run's own is
    /// (`files::owned`): not through a link, without blocking, only a regular file of at
    /// most `MAX_CACHE` bytes; anything else there is no cache (a FIFO cannot hold the run
    /// before the store's own bounds apply).
    fn read(&self) -> HashMap<u16, Endpoint> {
        let Some(file) = &self.file else {
            return HashMap::new();
        };
        let Ok(Some(bytes)) = retry_http_system::files::owned::read(file, MAX_CACHE) else {
            return HashMap::new();
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut lines = text.lines();
        if lines.next() != Some(CACHE_HEADER) {
            return HashMap::new();
        }
        lines
            .filter_map(|line| {
                let mut words = line.split(' ');
                let slot = words.next()?.parse().ok().filter(|s| *s < SLOTS)?;
                let host = words.next()?.to_string();
                let port = words.next()?.parse().ok()?;
                Some((slot, node(&(host, port), self.tls)))
            })
            .collect()
    }

    /// Writes the cache file again with `slot`'s owner changed: what it holds now (another
    /// run may have written since it was read) with this one change, written to a new file
    /// of this run's own (made exclusively under a random name, so never through a link)
    /// then renamed over it, so that no run reads half of it and a link at its name is
    /// replaced, not written through. Any failure is ignored: the cache only saves round
    /// trips.
    fn save(&self, slot: u16, owner: Option<&Endpoint>) {
        use std::io::Write;
        let Some(file) = &self.file else {
            return;
        };
        let mut entries = self.read();
        match owner {
            Some(node) => entries.insert(slot, node.clone()),
            None => entries.remove(&slot),
        };
        let mut text = format!("{CACHE_HEADER}\n");
        for (slot, node) in entries {
            if let Endpoint::Tcp { host, port, .. } = node {
                text.push_str(&format!("{slot} {host} {port}\n"));
            }
        }
        let Some(dir) = file.parent() else {
            return;
        };
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        // A temporary file that is not renamed is removed when dropped.
        let _ = builder.create(dir).and_then(|()| {
            let mut tmp = retry_http_system::files::owned::temp_beside(file, ".cluster-", ".tmp")?;
            tmp.write_all(text.as_bytes())?;
            retry_http_system::files::persist(tmp, file).map_err(|e| e.error)
        });
    }
}

/// The user's cache folder for retry-http: `$XDG_CACHE_HOME/retry-http` (an absolute path
/// only, as the XDG Base Directory specification says), else `$HOME/.cache/retry-http`.
pub fn cache_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = xdg.or_else(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from)?;
        home.is_absolute().then(|| home.join(".cache"))
    })?;
    Some(base.join("retry-http"))
}

/// The cache file's name of the cluster with `seeds`: `cluster-` and the FNV-1a hash of the
/// seeds as written and of TLS, so that two clusters never share a file.
fn cache_name(seeds: &[(String, u16)], tls: bool) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let id: Vec<String> = seeds.iter().map(|(h, p)| format!("{h} {p}")).collect();
    let id = format!("{tls} {}", id.join(","));
    for b in id.bytes() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("cluster-{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's examples of hash tags, and the CRC's check value.
    #[test]
    fn a_keys_slot_follows_its_hash_tag() {
        assert_eq!(crc16(b"123456789"), 0x31c3, "XMODEM's check value");
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"{user1000}.followers"), slot(b"user1000"));
        assert_eq!(
            slot(b"foo{}{bar}"),
            crc16(b"foo{}{bar}") % SLOTS,
            "an empty tag"
        );
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
        assert_eq!(slot(b"foo{bar}{zap}"), slot(b"bar"));
        assert_eq!(slot(b"no{close"), crc16(b"no{close") % SLOTS);
    }

    /// `-MOVED` and `-ASK` are read into a `Redirect` (an IPv6 node, a node that does not
    /// know its name); anything else is not one.
    #[test]
    fn redirections_are_read() {
        use crate::redis::wire::Redirect;
        let moved = Redirect::parse("MOVED", "3999 127.0.0.1:6381");
        let want = |ask, host: &str, port| Redirect {
            ask,
            slot: 3999,
            host: host.into(),
            port,
        };
        assert_eq!(moved, Some(want(false, "127.0.0.1", 6381)));
        let ask = Redirect::parse("ASK", "3999 [::1]:7000");
        assert_eq!(ask, Some(want(true, "::1", 7000)));
        assert_eq!(
            Redirect::parse("ASK", "3999 ::1:7000"),
            Some(want(true, "::1", 7000))
        );
        assert_eq!(
            Redirect::parse("MOVED", "3999 :7000"),
            Some(want(false, "", 7000))
        );
        for (code, detail) in [
            ("MOVED", "16384 h:1"),
            ("MOVED", "x h:1"),
            ("MOVED", "1 h"),
            ("MOVED", ""),
            ("ERR", "3999 h:1"),
        ] {
            assert_eq!(Redirect::parse(code, detail), None, "{code} {detail}");
        }
    }

    /// A cache file's name depends on the seeds and TLS, and on nothing else.
    #[test]
    fn each_cluster_has_a_cache_file_of_its_own() {
        let a = [("h".to_string(), 1), ("h".to_string(), 2)];
        let b = [("h".to_string(), 1)];
        assert_eq!(cache_name(&a, false), cache_name(&a, false));
        assert_ne!(cache_name(&a, false), cache_name(&a, true));
        assert_ne!(cache_name(&a, false), cache_name(&b, false));
    }
}
