//! Interim answers (RFC 9110 section 15.2): a `100 Continue`, `102 Processing` or `103 Early
//! Hints` may carry header fields (CDNs send `103` with `Link` fields), and a client that
//! does not use them ignores them. One or several, with fields or not, CRLF or bare LF, in
//! one write with the final answer or apart from it, over plain HTTP and TLS, before an
//! answer with a body, a chunked one or none: the final answer is delivered as if they were
//! not there, from the one request sent.
//!
//! The product: 4 interim sequences x 3 final answers x 2 deliveries x 2 methods x 2
//! transports = 96 runs.

use crate::common::*;
use crate::tls_faults::tls_paced;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The interim heads sent before the final answer.
const INTERIMS: [&str; 4] = [
    "HTTP/1.1 100 Continue\r\nX-Trace: a1\r\n\r\n",
    "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nLink: </b.js>; rel=preload\r\n\r\n",
    "HTTP/1.1 100 Continue\r\nX-Trace: a1\r\n\r\nHTTP/1.1 102 Processing\r\nX-Progress: 50\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 100 Continue\nX-Trace: a1\n\n",
];

/// Final answers and the body each delivers.
const FINALS: [(&str, &str); 3] = [
    (
        "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\nfinal body!",
        "final body!",
    ),
    (
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n6\r\nchunks\r\n0\r\n\r\n",
        "chunks",
    ),
    ("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", ""),
];

/// The answer in pieces: whole, or cut inside every interim head's fields and before the
/// final head, so the client reads them apart.
fn pieces(interims: &str, last: &str, apart: bool) -> Vec<Vec<u8>> {
    if !apart {
        return vec![format!("{interims}{last}").into_bytes()];
    }
    let mut parts: Vec<Vec<u8>> = Vec::new();
    let mut rest = interims;
    while let Some(at) = rest.find(": ") {
        parts.push(rest.as_bytes()[..at + 1].to_vec());
        rest = &rest[at + 1..];
    }
    parts.push(rest.as_bytes().to_vec());
    parts.push(last.as_bytes().to_vec());
    parts
}

/// One combination: what broke (None: the answer came through).
fn check(
    interims: &str,
    (last, body): (&str, &str),
    apart: bool,
    post: bool,
    tls: bool,
) -> Option<String> {
    let parts = pieces(interims, last, apart);
    let pause = Duration::from_millis(30);
    let mut plain = None;
    let (url, count) = if tls {
        tls_paced(parts, pause)
    } else {
        let server = Server::start(vec![Step::RawPaced { parts, pause }]).unwrap();
        let url = server.url("/");
        plain = Some(server);
        (url, Arc::new(AtomicUsize::new(0)))
    };
    let mut args = vec!["-k", "-s", "--attempts", "2", "--deadline", "30s"];
    args.extend(FAST);
    if post {
        args.extend(["POST", "-d", "job=1"]);
    }
    args.push(&url);
    let (out, _) = run(&args);
    let sent = match &plain {
        Some(server) => server.requests().len(),
        None => count.load(Ordering::SeqCst),
    };
    let name = format!("{interims:?} then {last:?} (apart: {apart}, POST: {post}, TLS: {tls})");
    if code(&out) != 0 || out.stdout != body.as_bytes() || sent != 1 {
        return Some(format!(
            "{name}: exit {}, {sent} requests, stdout {:?}\n{}",
            code(&out),
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        ));
    }
    None
}

#[test]
fn interim_answers_with_fields_are_ignored() {
    let mut all = Vec::new();
    for interims in INTERIMS {
        for last in FINALS {
            for apart in [false, true] {
                for post in [false, true] {
                    for tls in [false, true] {
                        all.push((interims, last, apart, post, tls));
                    }
                }
            }
        }
    }
    assert_eq!(all.len(), 96);
    let broken = judged_four_at_a_time(&all, |&(interims, last, apart, post, tls)| {
        Vec::from_iter(check(interims, last, apart, post, tls))
    });
    assert!(
        broken.is_empty(),
        "{} of {} combinations failed; the first:\n{}",
        broken.len(),
        all.len(),
        broken
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `-i` shows the final head only: the fields of an interim answer are not the answer's.
#[test]
fn the_fields_of_an_interim_answer_are_not_shown_as_the_answer_s() {
    let raw = format!("{}{}", INTERIMS[2], FINALS[0].0);
    let s = Server::start(vec![Step::Raw(raw.into_bytes())]).unwrap();
    let (out, _) = run(&["-s", "-i", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.starts_with("HTTP/1.1 200 OK\r\n"), "{shown}");
    assert!(shown.ends_with("\r\n\r\nfinal body!"), "{shown}");
    for field in ["X-Trace", "Link", "X-Progress"] {
        assert!(
            !shown
                .to_ascii_lowercase()
                .contains(&field.to_ascii_lowercase()),
            "{shown}"
        );
    }
}

/// Under `-H 'Expect: 100-continue'` the body waits for the `100`, which may carry fields,
/// and may follow other interim answers with fields: the body goes, the answer comes.
#[test]
fn a_100_with_fields_lets_an_expected_body_go() {
    use std::io::{BufRead, BufReader, Read, Write};
    for interims in [INTERIMS[0], INTERIMS[2]] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || -> std::io::Result<Vec<u8>> {
            let (tcp, _) = listener.accept()?;
            tcp.set_read_timeout(Some(Duration::from_secs(20)))?;
            let mut reader = BufReader::new(tcp.try_clone()?);
            let mut line = String::new();
            let mut length = 0;
            while reader.read_line(&mut line)? > 2 {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            (&tcp).write_all(interims.as_bytes())?;
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body)?;
            let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n");
            (&tcp).write_all(answer.as_bytes())?;
            (&tcp).write_all(&body)?;
            Ok(body)
        });
        let args = [
            "-s",
            "--attempts",
            "1",
            "-H",
            "Expect: 100-continue",
            "-d",
            "job=1",
        ];
        let (out, _) = run(&[&args[..], &["POST", &url]].concat());
        assert_eq!(code(&out), 0, "{interims:?}: {}", stderr(&out));
        assert_eq!(out.stdout, b"job=1", "{interims:?}");
        assert_eq!(server.join().unwrap().unwrap(), b"job=1");
    }
}
