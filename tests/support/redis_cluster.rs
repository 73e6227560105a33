//! A real Redis Cluster started for one test: six `redis-server --cluster-enabled yes`
//! processes (Debian's package) on 127.0.0.1, each with its own temporary directory, a free
//! port and a free cluster bus port, joined by `redis-cli --cluster create ...
//! --cluster-replicas 1` into three primaries with a replica each. A node is declared
//! failed after `NODE_TIMEOUT_MS` (1 s), so a replica takes over a killed primary within a
//! few seconds. The tests of `--state redis+cluster://` run against it.
//!
//! Integration tests include it with `#[path = "../support/redis_cluster.rs"]`, the library's
//! unit tests with `#[path = "../../../tests/support/redis_cluster.rs"]`, so it uses only
//! std, `tempfile` and `libc`. Dropping the `RedisCluster` kills every node (and waits for
//! it) before removing the directories. A missing `redis-server` or `redis-cli` is a
//! failure, never a skip.

// Each includer uses only part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How many nodes: three primaries, three replicas.
const NODES: usize = 6;
/// `--cluster-node-timeout`: how long a node may not answer before it is failed over.
const NODE_TIMEOUT_MS: u64 = 1000;
/// How long a node may take to answer after it is started (10 s).
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the cluster may take to agree after it is created (60 s: a loaded machine).
const AGREE_TIMEOUT: Duration = Duration::from_secs(60);
/// How many port pairs are tried for a node when another process takes one first.
const PORT_ATTEMPTS: usize = 5;

/// One node: its process (`None` once killed), its port, its directory.
struct Node {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

/// A running cluster of six nodes.
pub struct RedisCluster {
    nodes: Vec<Node>,
}

impl RedisCluster {
    /// Starts six nodes, joins them, and waits until every node says `cluster_state:ok`
    /// and knows all six. Panics with the logs if it cannot.
    pub fn start() -> RedisCluster {
        let nodes: Vec<Node> = (0..NODES).map(|_| launch()).collect();
        let cluster = RedisCluster { nodes };
        let mut args = vec!["--cluster".to_string(), "create".to_string()];
        args.extend(cluster.ports().iter().map(|p| format!("127.0.0.1:{p}")));
        args.extend(["--cluster-replicas", "1", "--cluster-yes"].map(String::from));
        let out = cli_output(None, &args).expect("cannot run redis-cli");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.wait_until_ok(AGREE_TIMEOUT, NODES);
        cluster
    }

    /// The ports of all nodes, killed ones included, in the order they were started.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// The ports of the nodes still running.
    pub fn live_ports(&self) -> Vec<u16> {
        let live = self.nodes.iter().filter(|n| n.child.is_some());
        live.map(|n| n.port).collect()
    }

    /// `HOST:PORT` of every node, comma-separated: the seeds of a `redis+cluster://` URL.
    pub fn seeds(&self) -> String {
        let seeds: Vec<String> = self
            .ports()
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        seeds.join(",")
    }

    /// `redis+cluster://` and every node as a seed.
    pub fn url(&self) -> String {
        format!("redis+cluster://{}", self.seeds())
    }

    /// Runs `redis-cli -p PORT ARGS` (no redirection followed) and returns its stdout,
    /// trimmed; panics with its stderr if it fails.
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let out = cli_output(Some(port), &args).expect("cannot run redis-cli");
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let status = out.status;
        assert!(
            status.success(),
            "redis-cli -p {port} {args:?} ({status}): {stderr}{stdout}"
        );
        stdout
    }

    /// The slot of `key`, as the cluster computes it (`CLUSTER KEYSLOT`).
    pub fn slot_of(&self, key: &str) -> u16 {
        let port = self.live_ports()[0];
        let slot = self.cli(port, &["CLUSTER", "KEYSLOT", key]);
        slot.parse()
            .unwrap_or_else(|_| panic!("CLUSTER KEYSLOT said {slot}"))
    }

    /// The port of the primary that serves `slot`, as the node at `asked` sees it; `None` if
    /// no primary it holds as live serves it.
    pub fn owner_seen_by(&self, asked: u16, slot: u16) -> Option<u16> {
        let nodes = self.cli(asked, &["CLUSTER", "NODES"]);
        nodes.lines().find_map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            let flags = words.get(2)?;
            if !flags.contains("master") || flags.contains("fail") {
                return None;
            }
            let serves = words.iter().skip(8).any(|range| {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                match (a.parse::<u16>(), b.parse::<u16>()) {
                    (Ok(a), Ok(b)) => (a..=b).contains(&slot),
                    _ => false,
                }
            });
            let address = words.get(1)?.split(['@', ',']).next()?;
            let port = address.rsplit_once(':')?.1.parse().ok()?;
            serves.then_some(port)
        })
    }

    /// The port of the primary serving `key`, as every live node agrees it is.
    pub fn owner_of(&self, key: &str) -> u16 {
        let slot = self.slot_of(key);
        let views: Vec<Option<u16>> = (self.live_ports().iter())
            .map(|p| self.owner_seen_by(*p, slot))
            .collect();
        match views[0] {
            Some(owner) if views.iter().all(|v| *v == Some(owner)) => owner,
            _ => panic!("the nodes do not agree on the owner of slot {slot}: {views:?}"),
        }
    }

    /// The ports of the primaries that serve slots, as the first live node sees them.
    pub fn primaries(&self) -> Vec<u16> {
        let port = self.live_ports()[0];
        let mut owners: Vec<u16> = [0, 8192, 16383]
            .iter()
            .filter_map(|s| self.owner_seen_by(port, *s))
            .collect();
        owners.sort();
        owners.dedup();
        owners
    }

    /// The value of `key` on the node at `port` (`GET`; empty when there is none). Asked of a
    /// node that does not serve the key, it is the `MOVED` answer's text.
    pub fn get(&self, port: u16, key: &str) -> String {
        self.cli(port, &["GET", key])
    }

    /// Kills the node at `port` (SIGKILL, as a machine that dies) and waits for it.
    pub fn kill(&mut self, port: u16) {
        let node = self.nodes.iter_mut().find(|n| n.port == port);
        let node = node.unwrap_or_else(|| panic!("no node listens on {port}"));
        if let Some(mut child) = node.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The port of the replica of the primary at `port`, as that primary sees it. A replica
    /// that has just been told whom to follow may not be in the primary's view yet (it is
    /// still listed as a primary without slots): the view is read again for a while.
    pub fn replica_of(&self, port: u16) -> u16 {
        let id = self.cli(port, &["CLUSTER", "MYID"]);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let nodes = self.cli(port, &["CLUSTER", "NODES"]);
            let replica = nodes.lines().find_map(|line| {
                let words: Vec<&str> = line.split(' ').collect();
                let is_replica = words.get(2)?.contains("slave") && *words.get(3)? == id;
                let address = words.get(1)?.split(['@', ',']).next()?;
                let port = address.rsplit_once(':')?.1.parse().ok()?;
                is_replica.then_some(port)
            });
            match replica {
                Some(p) => return p,
                None if std::time::Instant::now() < until => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                None => panic!("the primary at {port} has no replica:\n{nodes}"),
            }
        }
    }

    /// Freezes the node at `port` (SIGSTOP): it neither answers nor takes part in a
    /// failover until `cont`.
    pub fn stop(&self, port: u16) {
        self.signal(port, libc::SIGSTOP);
    }

    /// Thaws a node frozen by `stop` (SIGCONT).
    pub fn cont(&self, port: u16) {
        self.signal(port, libc::SIGCONT);
    }

    fn signal(&self, port: u16, signal: libc::c_int) {
        let node = self.nodes.iter().find(|n| n.port == port);
        let child = node.and_then(|n| n.child.as_ref());
        let child = child.unwrap_or_else(|| panic!("no node runs on {port}"));
        let pid = libc::pid_t::try_from(child.id()).expect("a pid fits in pid_t");
        // SAFETY: kill(2) only sends a signal, to our own child, not yet waited for.
        if unsafe { libc::kill(pid, signal) } != 0 {
            panic!(
                "signal {signal} to node {port}: {}",
                std::io::Error::last_os_error()
            );
        }
    }

    /// Waits until every live node says `cluster_state:ok` and knows `known` nodes, `timeout`
    /// at most (a panic, with what the nodes say, after it).
    pub fn wait_until_ok(&self, timeout: Duration, known: usize) {
        let give_up = Instant::now() + timeout;
        loop {
            let states: Vec<(u16, bool)> = (self.live_ports().into_iter())
                .map(|p| (p, self.is_ok(p, known)))
                .collect();
            if states.iter().all(|(_, ok)| *ok) {
                return;
            }
            if Instant::now() >= give_up {
                let info = self.cli(self.live_ports()[0], &["CLUSTER", "NODES"]);
                panic!("the cluster is not ok after {timeout:?}: {states:?}\n{info}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every live node says a live primary serves `key`'s slot (after a
    /// failover: the replica is promoted and everyone knows it); its port.
    pub fn wait_for_owner(&self, key: &str, timeout: Duration) -> u16 {
        let slot = self.slot_of(key);
        let give_up = Instant::now() + timeout;
        loop {
            let live = self.live_ports();
            let views: Vec<Option<u16>> =
                live.iter().map(|p| self.owner_seen_by(*p, slot)).collect();
            if let Some(Some(owner)) = views.first()
                && live.contains(owner)
                && views.iter().all(|v| *v == Some(*owner))
                && live.iter().all(|p| self.is_ok(*p, 0))
            {
                return *owner;
            }
            assert!(
                Instant::now() < give_up,
                "no live primary serves slot {slot} after {timeout:?}: {views:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether the node at `port` says `cluster_state:ok` and lists `known` nodes or more.
    fn is_ok(&self, port: u16, known: usize) -> bool {
        let info = self.cli(port, &["CLUSTER", "INFO"]);
        let ok = info.lines().any(|l| l.trim() == "cluster_state:ok");
        let listed = info
            .lines()
            .find_map(|l| l.trim().strip_prefix("cluster_known_nodes:"));
        ok && listed.and_then(|n| n.parse::<usize>().ok()).unwrap_or(0) >= known
    }

    /// The log of the node at `port`, for a failure's message.
    pub fn log(&self, port: u16) -> String {
        let node = self.nodes.iter().find(|n| n.port == port);
        node.map(|n| read_log(&n.dir.path().join("redis.log")))
            .unwrap_or_default()
    }
}

impl Drop for RedisCluster {
    /// Kills every node still running (SIGCONT first, so a frozen one can die) and waits for
    /// it; the directories go after.
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                    // SAFETY: a signal to our own child, not yet waited for; harmless if it fails.
                    unsafe { libc::kill(pid, libc::SIGCONT) };
                }
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Two ports free now: the node's and its cluster bus's (both listeners held at once, so
/// they differ, then released).
fn free_ports() -> (u16, u16) {
    let bind = || TcpListener::bind("127.0.0.1:0").expect("no free port on 127.0.0.1");
    let (a, b) = (bind(), bind());
    let port = |l: &TcpListener| l.local_addr().expect("a bound address").port();
    (port(&a), port(&b))
}

/// Starts one cluster node on free ports and waits until it answers PING; another pair of
/// ports is tried if one was taken meanwhile. Panics with its log if it does not start.
fn launch() -> Node {
    let bin = find_binary("redis-server").unwrap_or_else(|| {
        panic!(
            "redis-server is not installed: the tests of --state redis+cluster:// need \
             Debian's redis-server (apt-get install redis-server); .ci/run installs it"
        )
    });
    let mut log = String::new();
    for _ in 0..PORT_ATTEMPTS {
        let dir = tempfile::tempdir().expect("cannot create a temporary directory");
        let (port, bus) = free_ports();
        let mut cmd = Command::new(&bin);
        cmd.args(["--save", "", "--appendonly", "no", "--daemonize", "no"]);
        cmd.args(["--bind", "127.0.0.1", "--protected-mode", "no"]);
        cmd.args(["--port", &port.to_string(), "--cluster-enabled", "yes"]);
        cmd.args(["--cluster-port", &bus.to_string()]);
        cmd.arg("--cluster-config-file")
            .arg(dir.path().join("nodes.conf"));
        cmd.args(["--cluster-node-timeout", &NODE_TIMEOUT_MS.to_string()]);
        // A replica takes over however long ago it last heard from its primary.
        cmd.args(["--cluster-replica-validity-factor", "0"]);
        cmd.arg("--dir").arg(dir.path());
        let log_path = dir.path().join("redis.log");
        let file = std::fs::File::create(&log_path).expect("cannot create redis.log");
        let file2 = file.try_clone().expect("cannot dup redis.log");
        cmd.stdin(Stdio::null()).stdout(file).stderr(file2);
        let mut child = cmd.spawn().expect("cannot run redis-server");
        let deadline = Instant::now() + READY_TIMEOUT;
        log = loop {
            if answers(port) {
                if is_ours(port, child.id()) {
                    return Node {
                        child: Some(child),
                        port,
                        dir,
                    };
                }
                break format!("another redis answers on {port}: Address already in use");
            }
            let exited = matches!(child.try_wait(), Ok(Some(_)));
            if exited || Instant::now() >= deadline {
                let why = if exited { "exited" } else { "did not answer" };
                break format!("redis-server {why}; its log:\n{}", read_log(&log_path));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = child.kill();
        let _ = child.wait();
        if !log.contains("Address already in use") {
            break;
        }
    }
    panic!("a cluster node failed to start: {log}")
}

/// Whether something on `port` answers PING with PONG.
fn answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let mut reply = [0u8; 16];
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let sent = stream.write_all(b"*1\r\n$4\r\nPING\r\n");
    let n = sent.and_then(|()| stream.read(&mut reply)).unwrap_or(0);
    reply[..n].starts_with(b"+PONG")
}

/// Whether the server on `port` is the process `pid` (not another test's).
fn is_ours(port: u16, pid: u32) -> bool {
    let want = format!("process_id:{pid}");
    let args = ["INFO".to_string(), "server".to_string()];
    cli_output(Some(port), &args).is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .any(|l| l.trim() == want)
    })
}

/// Runs `redis-cli [-h 127.0.0.1 -p PORT] ARGS`; its output, whatever the outcome.
fn cli_output(port: Option<u16>, args: &[String]) -> std::io::Result<std::process::Output> {
    let bin = find_binary("redis-cli").unwrap_or_else(|| {
        panic!("redis-cli is not installed: apt-get install redis-tools (.ci/run does)")
    });
    let mut cmd = Command::new(bin);
    if let Some(port) = port {
        cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()]);
    }
    cmd.args(args).stdin(Stdio::null()).output()
}

/// `name` on PATH, else in /usr/bin or /usr/sbin.
fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain(["/usr/bin".into(), "/usr/sbin".into()]);
    dirs.map(|d| d.join(name)).find(|p| p.is_file())
}

fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| format!("(cannot read it: {e})"))
}
