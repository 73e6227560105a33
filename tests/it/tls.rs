//! TLS: a certificate that fails verification is never retried (exit 6); `--cacert` adds
//! trust; `-k` turns verification off and says so. The server is rustls on loopback with a
//! certificate made for the test.

use crate::common::*;
use crate::tls_support::{answer, config, raw_tls_port, read_head, read_hello, serve, tls_server};
use std::io::Write;
use std::sync::atomic::Ordering;

/// A large body over TLS arrives exactly, to a file and to stdout: its socket carries TLS
/// records, which must never be spliced into the output as the plain-HTTP path does.
#[test]
fn a_large_body_over_tls_is_decrypted_not_spliced() {
    let body: Vec<u8> = (0..(3 << 20) + 5).map(|i| (i * 7 % 253) as u8).collect();
    let s = tls_server("localhost", &body, "");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.bin");
    let (out, _) = run(&["-k", "-s", "-o", file.to_str().unwrap(), &s.url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        std::fs::read(&file).unwrap() == body,
        "the file is not the body"
    );
    let (out, _) = run(&["-k", "-s", &s.url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout == body, "stdout is not the body");
}

/// A head larger than the input buffer over TLS is refused as too large, not taken for a
/// connection cut and retried.
#[test]
fn a_head_too_large_over_tls_is_a_protocol_error() {
    let s = tls_server(
        "localhost",
        b"x",
        &format!("X-Long: {}\r\n", "v".repeat(200_000)),
    );
    let mut args = vec!["-k", "--attempts", "3", &s.url];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the response head does not end within"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.connections(), 1, "retried");
}

#[test]
fn unknown_certificate_is_not_retried() {
    let s = tls_server("localhost", b"secure", "");
    let mut args = vec!["--attempts", "4", &s.url];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(s.connections(), 1, "a rejected certificate was retried");
    assert!(
        stderr(&out).contains("TLS certificate rejected") && stderr(&out).contains("--cacert"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn cacert_adds_trust() {
    let s = tls_server("localhost", b"secure", "");
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("ca.pem");
    std::fs::write(&pem, &s.cert_pem).unwrap();
    let (out, _) = run(&["--cacert", pem.to_str().unwrap(), &s.url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"secure");
}

/// Over TLS too, `-i`, `-D -` and `-v` write the head as the server sent it: the names'
/// case, a repeated field in its place (see `response_head.rs` for plain HTTP).
#[test]
fn the_head_over_tls_is_written_as_sent() {
    let extra = "Set-Cookie: a=1\r\nX-CUSTOM-thing: v\r\nSet-Cookie: b=2\r\n";
    let s = tls_server("localhost", b"hi", extra);
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n{extra}\r\n");
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("ca.pem");
    std::fs::write(&pem, &s.cert_pem).unwrap();
    for mode in ["-i", "-D", "-v"] {
        let mut args = vec!["-s", "--cacert", pem.to_str().unwrap(), mode];
        if mode == "-D" {
            args.push("-");
        }
        args.push(&s.url);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{mode}: {}", stderr(&out));
        if mode == "-v" {
            let err = stderr(&out);
            assert!(
                err.contains("< Content-Length: 2\n")
                    && err.contains("< Set-Cookie: ***\nretry-http: < X-CUSTOM-thing: v\n"),
                "{err}"
            );
        } else {
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                format!("{head}hi"),
                "{mode}"
            );
        }
    }
}

#[test]
fn insecure_skips_verification_and_warns() {
    let s = tls_server("localhost", b"secure", "");
    let (out, _) = run(&["-k", &s.url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("verification is off"));
}

#[test]
fn cacert_without_a_certificate_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("empty.pem");
    std::fs::write(&pem, "not a certificate").unwrap();
    let (out, _) = run(&["--cacert", pem.to_str().unwrap(), "https://localhost:1/"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no PEM certificate"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_handshake_that_never_completed_lets_a_post_be_retried() {
    // Closed after the ClientHello, or silent after it: no HTTP request was sent.
    let closes: fn(std::net::TcpStream) = |mut tcp| read_hello(&mut tcp);
    let stalls: fn(std::net::TcpStream) = |mut tcp| {
        read_hello(&mut tcp);
        std::thread::sleep(std::time::Duration::from_secs(10));
    };
    for (what, each) in [("closed", closes), ("stalled", stalls)] {
        let (url, connections) = raw_tls_port(each);
        let mut args = vec![
            "POST",
            "-d",
            "x",
            "--attempts",
            "3",
            "--timeout",
            "400ms",
            &url,
        ];
        args.extend(FAST);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 4, "{what}: {}", stderr(&out));
        assert_eq!(connections.load(Ordering::SeqCst), 3, "{what}");
    }
}

#[test]
fn plain_http_on_an_https_port_is_not_retried() {
    let (url, connections) = raw_tls_port(|mut tcp| {
        read_hello(&mut tcp);
        let _ = tcp.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let mut args = vec!["--attempts", "3", &url];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(connections.load(Ordering::SeqCst), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("TLS refused"), "{}", stderr(&out));
}

#[test]
fn a_demanded_client_certificate_is_not_retried() {
    let cert = crate::tls_support::self_signed(&["localhost"]);
    let (port, handshakes) = serve(config(&cert, &[], Some(&cert.der)), |tls| {
        read_head(tls);
        answer(tls, "", b"secure");
    });
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("ca.pem");
    std::fs::write(&pem, &cert.pem).unwrap();
    let url = format!("https://localhost:{port}/");
    let mut args = vec!["--cacert", pem.to_str().unwrap(), "--attempts", "3", &url];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(handshakes.load(Ordering::SeqCst), 1, "{}", stderr(&out));
}

/// `SSL_CERT_FILE` naming what is no file of certificates (`/dev/zero`, a FIFO) is read
/// as `--cacert` is, never without bound: it is a usage error (exit 2, nothing sent) that
/// names the variable, not a run whose memory grows by a gigabyte a second until the
/// deadline or the kernel ends it.
#[test]
fn ssl_cert_file_that_is_no_file_is_a_usage_error() {
    let started = std::time::Instant::now();
    let out = std_command()
        .env("SSL_CERT_FILE", "/dev/zero")
        .args(["--deadline", "20s", "https://127.0.0.1:1/"])
        .output()
        .expect("runs");
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("SSL_CERT_FILE /dev/zero"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
