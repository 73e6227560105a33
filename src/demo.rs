//! `retry-http demo`: a loopback server that fails a few times (503 with Retry-After, 429,
//! a reset) and then answers, with the real client run against it, so a newcomer sees the
//! per-attempt log and the exit code with nothing else installed.

use crate::cli::LogFormat;
use crate::exit::Outcome;
use crate::report::Reporter;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// What the demo server does with each connection in turn.
#[derive(Clone, Copy)]
enum Answer {
    /// A status, its reason, and a Retry-After value if any.
    Status(u16, &'static str, Option<&'static str>),
    /// The connection reset without an answer.
    Reset,
}

/// The demo's script, one answer per connection; the last one repeats.
const SCRIPT: [Answer; 4] = [
    Answer::Status(503, "Service Unavailable", Some("1")),
    Answer::Status(429, "Too Many Requests", None),
    Answer::Reset,
    Answer::Status(200, "OK", None),
];

const BODY: &str = "{\"status\":\"ok\",\"message\":\"hello from the demo server\"}\n";

/// Starts the demo server on a free loopback port; it answers on a thread of its own.
fn start_server() -> io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for (n, conn) in listener.incoming().enumerate() {
            let answer = SCRIPT[n.min(SCRIPT.len() - 1)];
            if let Ok(stream) = conn {
                // A client that goes away mid-answer is its own business.
                let _ = answer_one(stream, answer);
            }
        }
    });
    Ok(format!("http://{addr}/v1/status"))
}

/// Reads one request head and answers it as scripted.
fn answer_one(stream: TcpStream, answer: Answer) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    while reader.read_line(&mut line)? > 0 && line != "\r\n" {
        line.clear();
    }
    let mut stream = stream;
    match answer {
        Answer::Reset => socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO)),
        Answer::Status(code, reason, retry_after) => {
            let body = if code == 200 { BODY } else { "" };
            let extra = retry_after.map_or(String::new(), |v| format!("Retry-After: {v}\r\n"));
            write!(
                stream,
                "HTTP/1.1 {code} {reason}\r\n{extra}Content-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        }
    }
}

/// Runs the demo and returns the client's outcome.
pub fn show(start: Instant) -> Outcome {
    let say = Reporter::new(crate::report::LogConfig::plain(LogFormat::Text));
    let url = match start_server() {
        Ok(url) => url,
        Err(e) => {
            say.error(&format!("cannot start the demo server on 127.0.0.1: {e}"));
            return Outcome::Local;
        }
    };
    say.info(&format!(
        "demo: a server on {url} answers 503 (Retry-After: 1), 429, a reset, then 200."
    ));
    say.info(&format!(
        "demo: running: retry-http --attempts 6 --base 200ms --deadline 20s {url}"
    ));
    let args = [
        "retry-http",
        "--attempts",
        "6",
        "--base",
        "200ms",
        "--deadline",
        "20s",
        &url,
    ];
    let outcome = crate::run_from(args.iter().map(|s| s.into()), start).outcome;
    say.info(&format!(
        "demo: exit code {} ({})",
        outcome.code(),
        outcome.meaning()
    ));
    outcome
}
