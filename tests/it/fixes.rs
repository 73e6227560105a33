//! Failures found by attacking the tool, each kept as a test.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_body_from_a_pipe_that_never_closes_cannot_outlive_the_deadline() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_retry-http"))
        .args(["--deadline", "1s", "--data-binary", "@-", &s.url("/")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin_kept_open = child.stdin.take();
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(5));
    assert!(
        t.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(s.requests().len(), 0);
}

/// A listener whose queue is full: new connections hang in the handshake.
fn unanswered_connects() -> (socket2::Socket, std::net::TcpStream, String) {
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    sock.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    sock.listen(0).unwrap();
    let addr = sock.local_addr().unwrap().as_socket().unwrap();
    let filler = std::net::TcpStream::connect(addr).unwrap();
    // Fill any slack the kernel leaves in a zero backlog.
    for _ in 0..4 {
        let _ = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(50))
            .map(std::mem::forget);
    }
    (sock, filler, format!("http://{addr}/"))
}

#[test]
fn a_post_whose_connection_never_opens_ends_on_the_deadline_not_as_unsafe() {
    let (_sock, _filler, url) = unanswered_connects();
    let (out, took) = run(&["--deadline", "1s", "-d", "x", &url]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert!(
        !stderr(&out).contains("may have been processed"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_post_whose_connection_never_opens_is_retried_within_its_attempt_timeout() {
    let (_sock, _filler, url) = unanswered_connects();
    let (out, _) = run(&[
        "--timeout",
        "400ms",
        "--attempts",
        "2",
        "--base",
        "1ms",
        "-d",
        "x",
        &url,
    ]);
    assert_eq!(
        code(&out),
        4,
        "a connect that never finished proves nothing was sent: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("connect timeout"), "{}", stderr(&out));
}

fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .unwrap_or(0o022)
}

#[test]
fn output_files_get_ordinary_modes_and_links_are_followed() {
    let s = Server::start(vec![Step::status(200, "new")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh.txt");
    let (out, _) = run(&["-o", fresh.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 0);
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode,
        0o666 & !umask(),
        "a new file gets 0666 less the umask"
    );

    let kept = dir.path().join("kept.txt");
    std::fs::write(&kept, "old").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (out, _) = run(&["-o", kept.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o640
    );

    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink(&kept, &link).unwrap();
    std::fs::write(&kept, "before").unwrap();
    let (out, _) = run(&["-o", link.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 0);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced"
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "new");
}

#[test]
fn a_fifo_without_a_reader_cannot_outlive_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let (out, took) = run(&[
        "--deadline",
        "1s",
        "-o",
        fifo.to_str().unwrap(),
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(took < Duration::from_millis(2500), "{took:?}");
}

#[test]
fn a_header_given_with_h_beats_the_one_u_would_add() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&[
        "-u",
        "u:p",
        "-H",
        "Authorization: Bearer x",
        "-A",
        "a",
        "-H",
        "User-Agent: b",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0);
    let r = &s.requests()[0];
    let count = |n: &str| {
        r.headers
            .iter()
            .filter(|(h, _)| h.eq_ignore_ascii_case(n))
            .count()
    };
    assert_eq!(count("authorization"), 1);
    assert_eq!(r.header("authorization"), Some("Bearer x"));
    assert_eq!(count("user-agent"), 1);
    assert_eq!(r.header("user-agent"), Some("b"));
}

#[test]
fn stdin_is_not_read_unless_a_body_names_it() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_retry-http"))
        .arg(s.url("/"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _open_stdin = child.stdin.take();
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"ok");
    assert!(t.elapsed() < Duration::from_secs(5), "waited on stdin");
}

#[test]
fn broken_chunked_encoding_is_a_failed_attempt() {
    let broken = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\nZZ\r\n".to_vec();
    let s = Server::start(vec![Step::Raw(broken), Step::status(200, "whole")]).unwrap();
    let (out, _) = run_fast(&[], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        out.stdout, b"whole",
        "bytes of the broken attempt reached stdout"
    );
    assert_eq!(s.requests().len(), 2);
}

#[test]
fn a_proxy_that_cannot_reach_the_target_is_retried_and_407_is_not() {
    let bad_gateway = Server::start(vec![
        Step::Raw(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n".to_vec()),
        Step::status(200, "through"),
    ])
    .unwrap();
    let (out, _) = run_fast(
        &["-x", &bad_gateway.url(""), "-d", "x"],
        "http://origin.example.test/",
    );
    assert_eq!(
        code(&out),
        0,
        "a POST the target never saw may be sent again: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("proxy failed"), "{}", stderr(&out));
    let auth = Server::start(vec![Step::Raw(
        b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n".to_vec(),
    )])
    .unwrap();
    let (out, _) = run_fast(&["-x", &auth.url("")], "http://origin.example.test/");
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(auth.requests().len(), 1);
    // A proxy that refuses the tunnel by policy will refuse it again.
    let forbidden = Server::start(vec![Step::Raw(
        b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".to_vec(),
    )])
    .unwrap();
    let (out, _) = run_fast(&["-x", &forbidden.url("")], "http://origin.example.test/");
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(forbidden.requests().len(), 1);
    assert!(
        stderr(&out).contains("refused the tunnel"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn secrets_in_proxies_redirects_and_query_names_are_masked() {
    let (out, _) = run(&[
        "-x",
        "user:s3cretpw@localhost:notaport",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(code(&out), 2);
    assert!(!stderr(&out).contains("s3cretpw"), "{}", stderr(&out));
    let s = Server::start(vec![Step::with_header(
        302,
        "Location",
        "http://ru:redirpw7@127.0.0.1:9/?access_token=rtok7",
    )])
    .unwrap();
    let (out, _) = run(&[
        "-v",
        &format!(
            "{}?passwd=A1&pwd=B2&session=C3&client_credential=D4",
            s.url("/")
        ),
    ]);
    let err = stderr(&out);
    for secret in ["redirpw7", "rtok7", "A1", "B2", "C3", "D4"] {
        assert!(!err.contains(secret), "{secret} leaked: {err}");
    }
}

#[test]
fn simulate_stays_bounded() {
    let (out, took) = run(&["simulate", "--base", "3650d", "--cap", "3650d"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(took < Duration::from_secs(20), "{took:?}");
    let (out, _) = run(&["simulate", "--clients", "1000000", "--attempts", "1000"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("the limit is"), "{}", stderr(&out));
}
