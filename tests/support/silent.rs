//! A loopback port that accepts connections and then says nothing: it never reads and never
//! writes, and holds every connection open until it is dropped. What a hung peer, a proxy
//! that never answers CONNECT, a store that never replies, or a server that never reads an
//! upload looks like from the client's side. Counts the connections and when each came.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A silent port; dropping it stops accepting and closes every connection it held.
pub struct Silent {
    pub port: u16,
    held: Arc<Mutex<Vec<(TcpStream, Instant)>>>,
    stop: Arc<AtomicBool>,
}

impl Silent {
    /// Listens on a free port of 127.0.0.1.
    pub fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (keep, stopping) = (held.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn
                    && let Ok(mut held) = keep.lock()
                {
                    held.push((conn, Instant::now()));
                }
            }
            // Closes what was held.
            if let Ok(mut held) = keep.lock() {
                held.clear();
            }
        });
        Silent { port, held, stop }
    }

    /// `http://127.0.0.1:{port}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.held.lock().map(|h| h.len()).unwrap_or_default()
    }

    /// When the first connection came.
    pub fn first(&self) -> Option<Instant> {
        self.held.lock().ok()?.first().map(|(_, at)| *at)
    }
}

impl Drop for Silent {
    /// Stops accepting: the flag, then a connection to wake the accept loop, which then
    /// closes every connection it held.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(
            &([127, 0, 0, 1], self.port).into(),
            Duration::from_millis(100),
        );
    }
}
