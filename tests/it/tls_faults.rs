//! A TLS connection that breaks after the request was written: a record that does not
//! decrypt, a plaintext alert or bytes that are no TLS at all, injected on the socket by a
//! server that has read the whole request, at every point of its answer. The handshake was
//! done, so nothing proves the request unprocessed: a POST is sent once, whatever the
//! failure's type; an idempotent request (or one with a key, or under `--retry-unsafe`) is
//! retried and the output holds the final answer only.
//!
//! The product: 2 TLS versions x 3 faults x 4 points x 5 requests x 3 outputs = 360 runs.

use crate::common::*;
use crate::tls_support::{self, TlsStream};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The body of the answer that succeeds.
const BODY: &[u8] = b"job 1 accepted: 0123456789abcdef0123456789abcdef0123456789abcdef";

/// What the `-o FILE` that existed before the run held.
const OLD: &[u8] = b"the file as it was before the run\n";

/// What the server writes on the socket, outside TLS, once part of the answer went out.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// An application-data record whose ciphertext is random: it fails to decrypt.
    Undecryptable,
    /// A fatal alert (bad_record_mac) sent in the clear, as a middlebox might forge one.
    PlainAlert,
    /// Bytes that are not a TLS record at all.
    Garbage,
}

/// How much of the answer went out, inside TLS, before the fault.
#[derive(Debug, Clone, Copy)]
enum Point {
    /// Nothing: the request was read, no byte of an answer sent.
    BeforeAnswer,
    /// Part of the status line and headers.
    InHead,
    /// A `201` head and part of a body of known length.
    InBody,
    /// A chunked `201`, cut inside a chunk.
    MidChunk,
}

/// The request, as the command line asks for it.
#[derive(Debug, Clone, Copy)]
enum Request {
    Get,
    Put,
    Post,
    PostWithKey,
    PostRetryUnsafe,
}

impl Request {
    fn args(self) -> &'static [&'static str] {
        match self {
            Request::Get => &["GET"],
            Request::Put => &["PUT", "-d", "job=1"],
            Request::Post => &["POST", "-d", "job=1"],
            Request::PostWithKey => &["POST", "-d", "job=1", "--idempotency-key", "k-1"],
            Request::PostRetryUnsafe => &["POST", "-d", "job=1", "--retry-unsafe"],
        }
    }

    /// Whether the request may be sent again after an ambiguous failure.
    fn replayable(self) -> bool {
        !matches!(self, Request::Post)
    }
}

/// Where the body goes.
#[derive(Debug, Clone, Copy)]
enum Output {
    Stdout,
    NewFile,
    ExistingFile,
}

/// The bytes of `fault`; `seed` varies the random ones.
fn fault_bytes(fault: Fault, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    match fault {
        Fault::Undecryptable => {
            let mut record = vec![0x17, 0x03, 0x03, 0x00, 0x40];
            record.extend(random(0x40));
            record
        }
        Fault::PlainAlert => vec![0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x14],
        Fault::Garbage => {
            // A first byte that is no record type, then noise.
            let mut bytes = vec![0x00];
            bytes.extend(random(99));
            bytes
        }
    }
}

/// What goes out inside TLS before the fault.
fn prefix(point: Point) -> Vec<u8> {
    match point {
        Point::BeforeAnswer => Vec::new(),
        Point::InHead => b"HTTP/1.1 201 Created\r\nContent-Ty".to_vec(),
        Point::InBody => {
            let mut p = format!(
                "HTTP/1.1 201 Created\r\nContent-Length: {}\r\n\r\n",
                BODY.len()
            )
            .into_bytes();
            p.extend_from_slice(&BODY[..20]);
            p
        }
        Point::MidChunk => {
            let mut p = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            p.extend_from_slice(format!("{:x}\r\n", BODY.len()).as_bytes());
            p.extend_from_slice(&BODY[..10]);
            p
        }
    }
}

/// A server configuration speaking TLS 1.3 (or 1.2 only), its certificate made once for all
/// the servers of this file.
fn server_config(tls13: bool) -> Arc<rustls::ServerConfig> {
    static CONFIGS: OnceLock<[Arc<rustls::ServerConfig>; 2]> = OnceLock::new();
    let configs = CONFIGS.get_or_init(|| {
        let cert = tls_support::self_signed(&["localhost"]);
        [
            tls_support::config(&cert, &[&rustls::version::TLS12], None),
            tls_support::config(&cert, &[&rustls::version::TLS13], None),
        ]
    });
    configs[usize::from(tls13)].clone()
}

/// A TLS server whose first request is answered up to `point`, then broken by `fault`; every
/// later request gets `201` with [`BODY`]. Returns the URL and the methods it received, in
/// order (a request counts once its body was read whole).
fn faulty_server(
    tls13: bool,
    fault: Fault,
    point: Point,
    seed: u64,
) -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let count = AtomicUsize::new(0);
    let (port, _) = tls_support::serve(server_config(tls13), move |tls| {
        let _ = answer(tls, &record, &count, fault, point, seed);
    });
    (format!("https://localhost:{port}/jobs"), seen)
}

/// One connection: reads a request, then breaks it (the first) or answers it.
fn answer(
    tls: &mut TlsStream,
    record: &Mutex<Vec<String>>,
    count: &AtomicUsize,
    fault: Fault,
    point: Point,
    seed: u64,
) -> std::io::Result<()> {
    tls.sock.set_read_timeout(Some(Duration::from_secs(20)))?;
    let method = read_request(tls)?;
    record.lock().unwrap().push(method);
    if count.fetch_add(1, Ordering::SeqCst) > 0 {
        let head = format!(
            "HTTP/1.1 201 Created\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            BODY.len()
        );
        tls.write_all(head.as_bytes())?;
        tls.write_all(BODY)?;
        tls.conn.send_close_notify();
        return tls.flush();
    }
    tls.write_all(&prefix(point))?;
    tls.flush()?;
    // Let the client take in what was sent before the fault arrives on its own.
    std::thread::sleep(Duration::from_millis(20));
    tls.sock.write_all(&fault_bytes(fault, seed))?;
    tls.sock.flush()?;
    // Until the client gives up on the connection, so that nothing it has not read is reset.
    let mut sink = [0u8; 4096];
    while tls.sock.read(&mut sink).is_ok_and(|n| n > 0) {}
    Ok(())
}

/// Reads a request's head and its body (of Content-Length bytes); returns its method.
fn read_request(tls: &mut TlsStream) -> std::io::Result<String> {
    let mut reader = BufReader::new(tls);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let method = line.split(' ').next().unwrap_or("").to_string();
    let mut length = 0usize;
    loop {
        line.clear();
        if reader.read_line(&mut line)? <= 2 {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    Ok(method)
}

/// A TLS server that answers every request with `parts`, pausing between them; counts
/// requests.
pub(crate) fn tls_paced(parts: Vec<Vec<u8>>, pause: Duration) -> (String, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let (port, _) = tls_support::serve(server_config(true), move |tls| {
        let _ = (|| -> std::io::Result<()> {
            read_request(tls)?;
            seen.fetch_add(1, Ordering::SeqCst);
            for part in &parts {
                tls.write_all(part)?;
                tls.flush()?;
                std::thread::sleep(pause);
            }
            tls.conn.send_close_notify();
            tls.flush()
        })();
    });
    (format!("https://localhost:{port}/"), count)
}

/// One combination: runs it, and says what broke the promise (None: it held).
fn check(
    tls13: bool,
    fault: Fault,
    point: Point,
    request: Request,
    output: Output,
    seed: u64,
) -> Option<String> {
    let (url, seen) = faulty_server(tls13, fault, point, seed);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.txt");
    if matches!(output, Output::ExistingFile) {
        std::fs::write(&file, OLD).unwrap();
    }
    let mut args: Vec<&str> = vec![
        "-k",
        "--attempts",
        "3",
        "--stall-timeout",
        "10s",
        "--deadline",
        "40s",
    ];
    args.extend(FAST);
    args.extend(request.args());
    let path = file.to_str().unwrap().to_string();
    if !matches!(output, Output::Stdout) {
        args.extend(["-o", path.as_str()]);
    }
    args.push(&url);
    let (out, _) = run(&args);
    let err = stderr(&out);
    let methods = seen.lock().unwrap().clone();
    let name = format!(
        "TLS 1.{} {fault:?} {point:?} {request:?} {output:?}",
        if tls13 { 3 } else { 2 }
    );
    let broke = |why: String| Some(format!("{name}: {why}\n{err}"));
    let written = match output {
        Output::Stdout => Some(out.stdout.clone()),
        _ => std::fs::read(&file).ok(),
    };
    if request.replayable() {
        if code(&out) != 0 || methods.len() != 2 {
            return broke(format!(
                "exit {}, {} requests, expected 0 and 2",
                code(&out),
                methods.len()
            ));
        }
        if written.as_deref() != Some(BODY) {
            return broke(format!("the output is {written:?}, not the final body"));
        }
    } else {
        if code(&out) != 6 || methods.len() != 1 {
            return broke(format!(
                "exit {}, {} requests, expected 6 and 1",
                code(&out),
                methods.len()
            ));
        }
        let left = match output {
            Output::Stdout => (!out.stdout.is_empty()).then(|| written.clone()),
            Output::NewFile => written.is_some().then(|| written.clone()),
            Output::ExistingFile => (written.as_deref() != Some(OLD)).then(|| written.clone()),
        };
        if let Some(left) = left {
            return broke(format!("the output was changed: {left:?}"));
        }
        if !err.contains("may have been processed") {
            return broke("the stop does not say why".into());
        }
    }
    if err.contains("TLS handshake failed") {
        return broke("a failure after the handshake is logged as a handshake".into());
    }
    let first = attempt_lines(&out).into_iter().next().unwrap_or_default();
    if !first.contains("TLS failed after the handshake") {
        return broke(format!(
            "the first attempt does not say what failed: {first}"
        ));
    }
    if !stray_files(dir.path(), &file).is_empty() {
        return broke(format!("files left: {:?}", stray_files(dir.path(), &file)));
    }
    None
}

/// Files in `dir` other than `file`.
fn stray_files(dir: &Path, file: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path() != file)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Every combination, four at a time.
#[test]
fn a_tls_record_that_fails_after_the_request_never_replays_a_post() {
    let mut all = Vec::new();
    for tls13 in [false, true] {
        for fault in [Fault::Undecryptable, Fault::PlainAlert, Fault::Garbage] {
            for point in [
                Point::BeforeAnswer,
                Point::InHead,
                Point::InBody,
                Point::MidChunk,
            ] {
                for request in [
                    Request::Get,
                    Request::Put,
                    Request::Post,
                    Request::PostWithKey,
                    Request::PostRetryUnsafe,
                ] {
                    for output in [Output::Stdout, Output::NewFile, Output::ExistingFile] {
                        all.push((tls13, fault, point, request, output));
                    }
                }
            }
        }
    }
    assert_eq!(all.len(), 360);
    let seeded: Vec<_> = all.into_iter().enumerate().collect();
    let broken = judged_four_at_a_time(&seeded, |&(i, (tls13, fault, point, request, output))| {
        Vec::from_iter(check(tls13, fault, point, request, output, i as u64))
    });
    assert!(
        broken.is_empty(),
        "{} of {} combinations broke the promise; the first:\n{}",
        broken.len(),
        seeded.len(),
        broken
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// An answer too large to take, over TLS: a head line or an interim head over the 128 KiB
/// input buffer, more header fields than ureq reads, a body over `--max-filesize` with a
/// length or chunked. Each is refused once (exit 6, one request) and leaves no file, no
/// temporary file, and an existing `-o` file as it was.
///
/// The product: 5 answers x 3 outputs = 15 runs.
#[test]
fn oversized_answers_over_tls_are_refused_once_and_leave_nothing() {
    let big = "v".repeat(200_000);
    let many: String = (0..200).map(|i| format!("X-H{i}: v\r\n")).collect();
    let body = "b".repeat(2_000_000);
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let answers = [
        (
            "a long head line",
            format!("HTTP/1.1 200 OK\r\nX-Long: {big}\r\nContent-Length: 2\r\n\r\nok"),
            "the response head does not end within",
        ),
        (
            "a long interim head",
            format!(
                "HTTP/1.1 103 Early Hints\r\nLink: {big}\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            ),
            "the response head does not end within",
        ),
        (
            "too many fields",
            format!("HTTP/1.1 200 OK\r\n{many}Content-Length: 2\r\n\r\nok"),
            "protocol error",
        ),
        (
            "a long body",
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
            "--max-filesize",
        ),
        (
            "a long chunked body",
            format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{chunked}"),
            "--max-filesize",
        ),
    ];
    let mut runs = 0;
    for (what, answer, said) in &answers {
        for output in [Output::Stdout, Output::NewFile, Output::ExistingFile] {
            runs += 1;
            let (url, requests) = tls_paced(vec![answer.clone().into_bytes()], Duration::ZERO);
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("out.txt");
            if matches!(output, Output::ExistingFile) {
                std::fs::write(&file, OLD).unwrap();
            }
            let path = file.to_str().unwrap().to_string();
            let mut args = vec![
                "-k",
                "--attempts",
                "3",
                "--max-filesize",
                "1000000",
                "--deadline",
                "30s",
            ];
            args.extend(FAST);
            if !matches!(output, Output::Stdout) {
                args.extend(["-o", path.as_str()]);
            }
            args.push(&url);
            let (out, _) = run(&args);
            let err = stderr(&out);
            let name = format!("{what}, {output:?}");
            assert_eq!(code(&out), 6, "{name}: {err}");
            assert_eq!(requests.load(Ordering::SeqCst), 1, "{name}: {err}");
            assert!(err.contains(said), "{name}: {err}");
            assert!(out.stdout.is_empty(), "{name}: stdout was written");
            let left = std::fs::read(&file).ok();
            match output {
                Output::ExistingFile => assert_eq!(left.as_deref(), Some(OLD), "{name}"),
                _ => assert_eq!(left, None, "{name}"),
            }
            assert!(
                stray_files(dir.path(), &file).is_empty(),
                "{name}: {:?}",
                stray_files(dir.path(), &file)
            );
        }
    }
    assert_eq!(runs, 15);
}
