//! Request bodies replayed byte for byte (stdin read once, and only when a body names it),
//! and non-idempotent requests never replayed blindly: only an answer, or a connection that
//! never opened, proves a POST was not processed.

use crate::common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn post_body_from_file_is_replayed_identically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.bin");
    let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 256) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let s = Server::start(vec![
        Step::status(503, ""),
        Step::status(429, ""),
        Step::status(201, "made"),
    ])
    .unwrap();
    let body = format!("@{}", path.display());
    let url = s.url("/jobs");
    let mut args = vec!["POST", &url, "--data-binary", &body];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        assert_eq!(r.method, "POST");
        assert_eq!(r.body, data, "body differs on a replay");
        assert_eq!(r.header("content-length"), Some("50000"));
    }
}

#[test]
fn stdin_body_is_read_once_and_replayed() {
    let s = Server::start(vec![Step::status(503, ""), Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    let mut args = vec!["PUT", &url, "--data-binary", "@-"];
    args.extend(FAST);
    let (out, _) = run_with_stdin(&args, Some(b"line one\nline two\n"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for r in s.requests() {
        assert_eq!(r.body, b"line one\nline two\n");
    }
}

#[test]
fn post_after_a_reset_is_not_replayed_without_a_key() {
    let s = Server::start(vec![Step::Reset, Step::status(200, "ok")]).unwrap();
    let url = s.url("/pay");
    let mut args = vec!["POST", &url, "-d", "amount=5"];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
    assert!(
        stderr(&out).contains("--idempotency-key"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn post_after_a_500_is_not_replayed_without_a_key() {
    let s = Server::start(vec![Step::status(500, ""), Step::status(200, "ok")]).unwrap();
    let url = s.url("/pay");
    let mut args = vec!["POST", &url, "-d", "amount=5"];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn idempotency_key_allows_replay_and_stays_the_same() {
    let s = Server::start(vec![
        Step::Reset,
        Step::status(500, ""),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let url = s.url("/pay");
    let mut args = vec!["POST", &url, "-d", "amount=5", "--idempotency-key", "auto"];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 3);
    let key = reqs[0]
        .header("idempotency-key")
        .expect("key sent")
        .to_string();
    assert_eq!(key.len(), 36, "a UUID: {key}");
    assert!(
        reqs.iter()
            .all(|r| r.header("idempotency-key") == Some(key.as_str()))
    );
    assert!(stderr(&out).contains(&key), "the auto key is logged");
}

#[test]
fn refused_post_is_replayed_because_nothing_was_sent() {
    let url = closed_port_url();
    let mut args = vec!["POST", &url, "-d", "x", "--attempts", "2"];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(attempt_lines(&out).len(), 2);
}

#[test]
fn redirect_307_replays_the_body() {
    let s = Server::start(vec![
        Step::with_header(307, "Location", "/next"),
        Step::status(200, "landed"),
    ])
    .unwrap();
    let url = s.url("/start");
    let (out, _) = run(&["-L", "POST", &url, "--data-binary", "payload"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].target, "/next");
    assert_eq!(reqs[1].method, "POST");
    assert_eq!(reqs[1].body, b"payload");
    assert_eq!(
        attempt_lines(&out).len(),
        1,
        "redirect hops belong to one attempt"
    );
}

#[test]
fn stdin_is_not_read_unless_a_body_names_it() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let mut child = std_command()
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
