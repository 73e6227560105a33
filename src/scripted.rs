//! A scripted HTTP/1.1 server on 127.0.0.1 that fails on cue: statuses with headers,
//! resets, hangs, bodies cut short, stalls. `demo` runs the client against it, and the
//! integration tests use it too. No crate can reset a connection or cut a body at a chosen
//! moment, hence this small std::net server.
//!
//! Each connection serves one request and closes (`Connection: close`). Steps are used in
//! order; the last one repeats once the script runs out.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Step {
    /// Answer with this status, extra headers and body (Content-Length is added).
    Respond {
        /// Status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// Body bytes.
        body: Vec<u8>,
    },
    /// Read the request, then reset the connection (RST).
    Reset,
    /// Read the request and never answer (until the server stops or 120 s pass).
    Hang,
    /// Send the status line, headers with this Content-Length, then only `body`, then close.
    Truncate {
        /// The length announced.
        declared: usize,
        /// What is actually sent.
        body: Vec<u8>,
    },
    /// Send headers and part of the body, then stall (no byte) for the given time.
    Stall {
        /// Bytes sent before the stall.
        body: Vec<u8>,
        /// Length announced.
        declared: usize,
        /// How long to stay silent.
        pause: Duration,
    },
    /// Send these raw bytes, then close.
    Raw(Vec<u8>),
    /// Serve a resource with an ETag and `Accept-Ranges: bytes`, honouring `Range` with
    /// `If-Range`; send only the first `cut_after` body bytes, when set, then close.
    Resource {
        /// The whole representation.
        body: Vec<u8>,
        /// Its strong ETag, quotes included.
        etag: String,
        /// Cut the response body after this many bytes.
        cut_after: Option<usize>,
    },
}

impl Step {
    /// A plain response with a body.
    pub fn status(status: u16, body: &str) -> Step {
        Step::Respond {
            status,
            headers: vec![],
            body: body.as_bytes().to_vec(),
        }
    }

    /// A response with one extra header.
    pub fn with_header(status: u16, name: &str, value: &str) -> Step {
        Step::Respond {
            status,
            headers: vec![(name.into(), value.into())],
            body: Vec::new(),
        }
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Method.
    pub method: String,
    /// Request target (path and query).
    pub target: String,
    /// Headers in order.
    pub headers: Vec<(String, String)>,
    /// Body, de-chunked.
    pub body: Vec<u8>,
    /// When the request's head arrived.
    pub at: Instant,
}

impl Recorded {
    /// The first value of a header (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A running scripted server; stops accepting when dropped.
pub struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Starts the server on an ephemeral loopback port.
    pub fn start(script: Vec<Step>) -> io::Result<Server> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script = Arc::new(script);
        let next = Arc::new(AtomicUsize::new(0));
        let (reqs, stopping) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (script, next, reqs, stopping) =
                    (script.clone(), next.clone(), reqs.clone(), stopping.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &script, &next, &reqs, &stopping);
                });
            }
        });
        Ok(Server {
            addr,
            requests,
            stop,
        })
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(100));
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> io::Result<Recorded> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let at = Instant::now();
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((n, v)) = h.trim_end().split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut rec = Recorded {
        method,
        target,
        headers,
        body: Vec::new(),
        at,
    };
    if let Some(len) = rec
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        rec.body = vec![0; len];
        reader.read_exact(&mut rec.body)?;
    } else if rec
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            rec.body.extend_from_slice(&chunk[..n]);
        }
    }
    Ok(rec)
}

/// `Range: bytes=N-` with its `If-Range` value, when the request has both.
fn requested_range(rec: &Recorded) -> Option<(u64, String)> {
    let from = rec
        .header("range")?
        .strip_prefix("bytes=")?
        .strip_suffix('-')?
        .parse()
        .ok()?;
    Some((from, rec.header("if-range")?.to_string()))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn head(status: u16, headers: &[(String, String)], len: usize) -> Vec<u8> {
    let mut s = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {len}\r\nConnection: close\r\n",
        reason(status)
    );
    for (n, v) in headers {
        s.push_str(&format!("{n}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s.into_bytes()
}

fn serve(
    conn: TcpStream,
    script: &[Step],
    next: &AtomicUsize,
    reqs: &Mutex<Vec<Recorded>>,
    stopping: &AtomicBool,
) -> io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let rec = read_request(&mut reader)?;
    if rec.method.is_empty() {
        return Ok(());
    }
    let i = next.fetch_add(1, Ordering::SeqCst);
    let range_from = requested_range(&rec);
    if let Ok(mut r) = reqs.lock() {
        r.push(rec);
    }
    let Some(step) = script.get(i).or(script.last()) else {
        return Ok(());
    };
    let mut out = conn;
    match step {
        Step::Respond {
            status,
            headers,
            body,
        } => {
            out.write_all(&head(*status, headers, body.len()))?;
            out.write_all(body)?;
        }
        Step::Reset => {
            socket2::SockRef::from(&out).set_linger(Some(Duration::ZERO))?;
            drop(out);
        }
        Step::Hang => {
            let until = Instant::now() + Duration::from_secs(120);
            while Instant::now() < until && !stopping.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Step::Truncate { declared, body } => {
            out.write_all(&head(200, &[], *declared))?;
            out.write_all(body)?;
        }
        Step::Stall {
            body,
            declared,
            pause,
        } => {
            out.write_all(&head(200, &[], *declared))?;
            out.write_all(body)?;
            out.flush()?;
            std::thread::sleep(*pause);
        }
        Step::Raw(bytes) => out.write_all(bytes)?,
        Step::Resource {
            body,
            etag,
            cut_after,
        } => {
            let from = range_from
                .filter(|(_, tag)| tag == etag)
                .map(|(f, _)| f as usize);
            let (head_bytes, rest) = match from.filter(|f| *f < body.len()) {
                Some(f) => {
                    let range = format!("bytes {f}-{}/{}", body.len() - 1, body.len());
                    let h = vec![
                        ("ETag".to_string(), etag.clone()),
                        ("Accept-Ranges".to_string(), "bytes".to_string()),
                        ("Content-Range".to_string(), range),
                    ];
                    (head(206, &h, body.len() - f), &body[f..])
                }
                None => {
                    let h = vec![
                        ("ETag".to_string(), etag.clone()),
                        ("Accept-Ranges".to_string(), "bytes".to_string()),
                    ];
                    (head(200, &h, body.len()), &body[..])
                }
            };
            out.write_all(&head_bytes)?;
            let n = cut_after.unwrap_or(rest.len()).min(rest.len());
            out.write_all(&rest[..n])?;
        }
    }
    Ok(())
}
