//! Connections reused within a batch: a serial batch to one origin holds one connection,
//! `-Z` no more than `--parallel-max-host` in flight, a server's `Connection: close` makes
//! the next transfer connect anew, and a request on a kept connection that the server
//! closes once the request arrived counts as sent: a POST is not replayed, a GET is. The
//! server here keeps connections alive (the scripted one closes each), counts connections
//! and the requests that arrived by path, and on a connection's request number `drop_at`
//! (1-based; 0: never) reads the request and closes without an answer.

use crate::common::{FAST, code, command, read_head, serve_connections, stderr};
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the server counted.
#[derive(Default)]
struct Counts {
    connections: AtomicUsize,
    arrived: Mutex<Vec<String>>,
}

/// A keep-alive server on 127.0.0.1 (see the module).
struct Server {
    port: u16,
    counts: Arc<Counts>,
}

impl Server {
    fn start(drop_at: usize) -> Server {
        let counts = Arc::new(Counts::default());
        let shared = counts.clone();
        let port = serve_connections(move |conn| {
            shared.connections.fetch_add(1, Ordering::SeqCst);
            serve(conn, &shared, drop_at)
        });
        Server { port, counts }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn connections(&self) -> usize {
        self.counts.connections.load(Ordering::SeqCst)
    }

    /// How many requests for `path` arrived.
    fn arrivals(&self, path: &str) -> usize {
        let arrived = self.counts.arrived.lock().unwrap();
        arrived.iter().filter(|p| *p == path).count()
    }
}

/// Serves one connection's requests until the client closes it, the path asks for a
/// close (`/close/...`: answered with `Connection: close`), or request `drop_at` arrives.
fn serve(conn: TcpStream, counts: &Counts, drop_at: usize) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    for n in 1.. {
        let Some((path, length)) = read_head(&mut reader) else {
            return;
        };
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        counts.arrived.lock().unwrap().push(path.clone());
        if n == drop_at {
            return;
        }
        let close = path.starts_with("/close/");
        let text = path.rsplit('/').next().unwrap_or("");
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{}\r\n",
            text.len(),
            if close { "Connection: close\r\n" } else { "" }
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(text.as_bytes()).is_err() {
            return;
        }
        if close {
            return;
        }
    }
}

/// Runs the binary with the fast waits and `args`.
fn run(args: &[String]) -> std::process::Output {
    command().args(FAST).args(args).output().unwrap()
}

fn urls(s: &Server, paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| s.url(p)).collect()
}

#[test]
fn a_serial_batch_to_one_origin_holds_one_connection() {
    let s = Server::start(0);
    let out = run(&urls(&s, &["/a/0", "/a/1", "/a/2", "/a/3", "/a/4"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "01234");
    assert_eq!(s.connections(), 1, "{}", stderr(&out));
}

#[test]
fn a_reused_connection_reports_no_connect_in_write_out() {
    let s = Server::start(0);
    let mut args = urls(&s, &["/a/x", "/a/y"]);
    args.extend(["-w".into(), " %{num_connects} %{time_connect}\n".into()]);
    let out = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("x 1 "), "{text}");
    assert!(
        lines[0] != "x 1 0.000000",
        "the first transfer connected: {text}"
    );
    assert_eq!(lines[1], "y 0 0.000000", "{text}");
}

#[test]
fn under_z_the_connections_are_at_most_parallel_max_host() {
    let s = Server::start(0);
    let paths: Vec<String> = (0..8).map(|i| format!("/a/{i}")).collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let mut args = vec!["-Z".to_string(), "--parallel-max-host".into(), "2".into()];
    args.extend(urls(&s, &paths));
    let out = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "01234567");
    let opened = s.connections();
    assert!((1..=2).contains(&opened), "{opened} connections opened");
}

#[test]
fn connection_close_makes_the_next_transfer_connect_anew_without_an_error() {
    let s = Server::start(0);
    let out = run(&urls(&s, &["/close/a", "/close/b", "/close/c"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "abc");
    assert_eq!(s.connections(), 3);
    for p in ["/close/a", "/close/b", "/close/c"] {
        assert_eq!(s.arrivals(p), 1, "{p} sent once: {}", stderr(&out));
    }
}

#[test]
fn a_post_cut_on_a_kept_connection_is_not_replayed() {
    // Each connection's second request is read and then dropped unanswered: the second
    // POST reached the server on the connection the first one left, so it is not sent
    // again, and the batch ends with that transfer's failure.
    let s = Server::start(2);
    let mut args = vec!["-X".to_string(), "POST".into(), "-d".into(), "x=1".into()];
    args.extend(urls(&s, &["/p/1", "/p/2", "/p/3"]));
    let out = run(&args);
    let log = stderr(&out);
    for p in ["/p/1", "/p/2", "/p/3"] {
        assert_eq!(s.arrivals(p), 1, "{p} reached the server once: {log}");
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout), "13", "{log}");
    assert_ne!(code(&out), 0, "{log}");
    assert!(
        log.contains("[2/3]") && log.contains("not retried: POST is not idempotent"),
        "{log}"
    );
    assert_eq!(s.connections(), 2, "{log}");
}

#[test]
fn a_get_cut_on_a_kept_connection_is_replayed() {
    let s = Server::start(2);
    let out = run(&urls(&s, &["/g/1", "/g/2", "/g/3"]));
    let log = stderr(&out);
    assert_eq!(code(&out), 0, "{log}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "123", "{log}");
    assert_eq!(s.arrivals("/g/2"), 2, "the GET was sent again: {log}");
    assert!(log.contains("[2/3]"), "{log}");
}
