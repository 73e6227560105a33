//! A loopback TCP proxy that counts the round trips its clients make to the server behind
//! it (a `redis-server` of tests/support/redis_server.rs, in the tests of `--state`).
//!
//! The rule counted, per connection: connecting is one round trip; after that, a client
//! write is one more round trip when the server has sent bytes since the client's previous
//! write. Commands pipelined in one write count once, and so do several writes with no
//! server byte between them; AUTH, SELECT and HELLO are writes like any other. Both
//! directions are read into 64 KiB buffers, so one small write of the client (all a RESP
//! pipeline is) is one read here.
//!
//! The proxy cannot tell which process a connection belongs to: it sums over every
//! connection, and a test divides the total by the runs of its batch. The counts are read
//! with [`RoundTripProxy::settle`], once every connection has closed, so that no write of
//! a process that has just exited is still unread. Threads and std only: one thread
//! accepts, two per connection copy the bytes. Dropping the proxy stops the accepting;
//! connections still open end with their peers.

// Each includer uses only part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The buffer each direction is read into, in bytes.
const BUFFER: usize = 64 << 10;

/// What the proxy counted: connections accepted and round trips made on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Client connections accepted (and joined to the server).
    pub connections: u64,
    /// Round trips, by the rule of the module's documentation, summed over connections.
    pub round_trips: u64,
}

impl Counts {
    /// Round trips per run, for a batch of `runs` runs (0 runs: 0).
    pub fn per_run(&self, runs: usize) -> f64 {
        if runs == 0 {
            return 0.0;
        }
        self.round_trips as f64 / runs as f64
    }
}

/// The counters the connections' threads share.
#[derive(Default)]
struct Totals {
    connections: AtomicU64,
    round_trips: AtomicU64,
    /// Bytes read from clients, all connections together (tests wait on it).
    client_bytes: AtomicU64,
    /// Connections whose two directions have not both ended yet.
    open: AtomicU64,
}

/// A running proxy on 127.0.0.1 at a free port, in front of one server.
pub struct RoundTripProxy {
    addr: SocketAddr,
    totals: Arc<Totals>,
    stop: Arc<AtomicBool>,
}

impl RoundTripProxy {
    /// Starts a proxy on a free loopback port that forwards every connection to `upstream`.
    /// A connection that cannot reach `upstream` is closed at once and not counted.
    pub fn start(upstream: SocketAddr) -> RoundTripProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port on 127.0.0.1");
        let addr = listener.local_addr().expect("the proxy's address");
        let totals = Arc::new(Totals::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, stopping) = (totals.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                join(client, server, shared.clone());
            }
        });
        RoundTripProxy { addr, totals, stop }
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The counts so far, whether or not connections are still open.
    pub fn counts(&self) -> Counts {
        Counts {
            connections: self.totals.connections.load(Ordering::SeqCst),
            round_trips: self.totals.round_trips.load(Ordering::SeqCst),
        }
    }

    /// Bytes read from clients so far, all connections together.
    pub fn client_bytes(&self) -> u64 {
        self.totals.client_bytes.load(Ordering::SeqCst)
    }

    /// The counts once every connection accepted has closed (each ends when its client
    /// has closed it and the server has answered the close); panics after `limit`. A
    /// connection through which nothing has passed yet may not have been accepted: a
    /// client that wants it counted waits for `counts().connections` first.
    pub fn settle(&self, limit: Duration) -> Counts {
        let until = Instant::now() + limit;
        while self.totals.open.load(Ordering::SeqCst) > 0 {
            let open = self.totals.open.load(Ordering::SeqCst);
            assert!(
                Instant::now() < until,
                "{open} connections still open after {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        self.counts()
    }
}

impl Drop for RoundTripProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag (this connection is not counted).
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(100));
    }
}

/// Counts a new connection and starts its two copying threads.
fn join(client: TcpStream, server: TcpStream, totals: Arc<Totals>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    totals.connections.fetch_add(1, Ordering::SeqCst);
    // Connecting is the connection's first round trip.
    totals.round_trips.fetch_add(1, Ordering::SeqCst);
    totals.open.fetch_add(1, Ordering::SeqCst);
    // Whether the server sent bytes since the client's last write.
    let answered = Arc::new(AtomicBool::new(false));
    let (Ok(client_back), Ok(server_back)) = (client.try_clone(), server.try_clone()) else {
        totals.open.fetch_sub(1, Ordering::SeqCst);
        return;
    };
    let (up_totals, up_answered) = (totals.clone(), answered.clone());
    let up = std::thread::spawn(move || {
        copy(client, server, |n| {
            up_totals.client_bytes.fetch_add(n, Ordering::SeqCst);
            if up_answered.swap(false, Ordering::SeqCst) {
                up_totals.round_trips.fetch_add(1, Ordering::SeqCst);
            }
        });
    });
    std::thread::spawn(move || {
        // Set before the bytes are passed on: the client's next write follows them.
        copy(server_back, client_back, |_| {
            answered.store(true, Ordering::SeqCst)
        });
        let _ = up.join();
        totals.open.fetch_sub(1, Ordering::SeqCst);
    });
}

/// Copies `from` to `to` until `from` ends (then `to` is told no more comes) or either
/// fails (then both are shut); `seen(n)` runs on every read of `n` bytes before they are
/// passed on.
fn copy(mut from: TcpStream, mut to: TcpStream, mut seen: impl FnMut(u64)) {
    let mut buf = vec![0u8; BUFFER];
    loop {
        match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                seen(n as u64);
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    //! The counting, with a fake pair: a client written here and a line server that
    //! answers `+OK` to each line it receives, and nothing to a partial line.

    use super::*;
    use std::io::BufRead;

    /// A server that answers `+OK\r\n` to every `\n`-ended line, on any number of
    /// connections.
    fn line_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                std::thread::spawn(move || {
                    let Ok(mut out) = conn.try_clone() else {
                        return;
                    };
                    let mut lines = std::io::BufReader::new(conn);
                    let mut line = Vec::new();
                    while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                        if line.ends_with(b"\n") && out.write_all(b"+OK\r\n").is_err() {
                            return;
                        }
                        line.clear();
                    }
                });
            }
        });
        addr
    }

    /// A client of the proxy `p`.
    fn client(p: &RoundTripProxy) -> TcpStream {
        let c = TcpStream::connect(("127.0.0.1", p.port())).expect("connect to the proxy");
        c.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("a timeout");
        c
    }

    /// Reads `n` answers of `+OK\r\n`.
    fn answers(c: &mut TcpStream, n: usize) {
        let mut buf = vec![0u8; 5 * n];
        c.read_exact(&mut buf).expect("the answers");
        assert_eq!(buf, b"+OK\r\n".repeat(n));
    }

    /// Waits until the proxy has read `n` bytes from clients.
    fn wait_for_bytes(p: &RoundTripProxy, n: u64) {
        let until = Instant::now() + Duration::from_secs(10);
        while p.client_bytes() < n {
            assert!(
                Instant::now() < until,
                "the proxy read {}",
                p.client_bytes()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn settled(p: &RoundTripProxy) -> Counts {
        p.settle(Duration::from_secs(10))
    }

    #[test]
    fn connecting_alone_is_one_round_trip() {
        let p = RoundTripProxy::start(line_server());
        let c = client(&p);
        let until = Instant::now() + Duration::from_secs(10);
        while p.counts().connections == 0 {
            assert!(Instant::now() < until, "the proxy accepted nothing");
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(c);
        let counts = settled(&p);
        assert_eq!((counts.connections, counts.round_trips), (1, 1));
    }

    #[test]
    fn commands_pipelined_in_one_write_count_once() {
        let p = RoundTripProxy::start(line_server());
        let mut c = client(&p);
        c.write_all(b"AUTH x\nSELECT 2\nGET k\n").expect("write");
        answers(&mut c, 3);
        drop(c);
        assert_eq!(
            settled(&p).round_trips,
            1,
            "connect and one pipelined write"
        );
    }

    #[test]
    fn each_write_after_an_answer_counts() {
        let p = RoundTripProxy::start(line_server());
        let mut c = client(&p);
        for command in [&b"AUTH x\n"[..], b"SELECT 2\n", b"GET k\n"] {
            c.write_all(command).expect("write");
            answers(&mut c, 1);
        }
        drop(c);
        assert_eq!(
            settled(&p).round_trips,
            3,
            "the first write rides the connect"
        );
    }

    #[test]
    fn writes_with_no_answer_between_them_count_once() {
        let p = RoundTripProxy::start(line_server());
        let mut c = client(&p);
        c.write_all(b"GET k\n").expect("write");
        answers(&mut c, 1);
        // Two writes, the second only once the proxy has read the first: no answer comes
        // between them (the server answers whole lines only).
        c.write_all(b"SET k").expect("write");
        wait_for_bytes(&p, 11);
        c.write_all(b" v\n").expect("write");
        answers(&mut c, 1);
        drop(c);
        assert_eq!(settled(&p).round_trips, 2);
    }

    #[test]
    fn connections_are_summed() {
        let p = RoundTripProxy::start(line_server());
        for _ in 0..3 {
            let mut c = client(&p);
            c.write_all(b"GET k\n").expect("write");
            answers(&mut c, 1);
            c.write_all(b"GET k\n").expect("write");
            answers(&mut c, 1);
        }
        let counts = settled(&p);
        assert_eq!((counts.connections, counts.round_trips), (3, 6));
        assert_eq!(counts.per_run(3), 2.0);
    }

    #[test]
    fn an_answer_not_followed_by_a_write_costs_nothing_more() {
        let p = RoundTripProxy::start(line_server());
        let mut c = client(&p);
        c.write_all(b"GET k\n").expect("write");
        answers(&mut c, 1);
        c.shutdown(Shutdown::Write).expect("shutdown");
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).expect("the end");
        assert_eq!(settled(&p).round_trips, 1);
    }
}
