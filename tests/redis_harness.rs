//! The redis-server harness itself (tests/support/redis_server.rs): each kind of server
//! starts and answers, a frozen one thaws, nothing is persisted.

#[path = "support/redis_server.rs"]
mod redis_server;

use redis_server::RedisServer;
use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

#[test]
fn tcp_server_answers_and_persists_nothing() {
    let server = RedisServer::start();
    let port = server.port().expect("a TCP server has a port");
    assert_eq!(server.url(), format!("redis://127.0.0.1:{port}"));
    assert_eq!(server.socket(), None);
    assert_eq!(server.ca_file(), None);
    assert_eq!(server.cli(&["PING"]), "PONG");
    assert_eq!(server.cli(&["CONFIG", "GET", "save"]), "save");
    assert_eq!(
        server.cli(&["CONFIG", "GET", "appendonly"]),
        "appendonly\nno"
    );

    let dir = server.cli(&["CONFIG", "GET", "dir"]);
    let dir = std::path::PathBuf::from(dir.lines().nth(1).expect("CONFIG GET dir gives the dir"));
    assert!(dir.is_dir(), "{}", dir.display());
    assert_eq!(server.cli(&["SET", "k", "v"]), "OK");
    assert_eq!(server.cli(&["GET", "k"]), "v");
    // SHUTDOWN saves only when save points are set: none are.
    server.cli(&["SHUTDOWN"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !dir.join("dump.rdb").exists(),
        "dump.rdb written in {}",
        dir.display()
    );
    assert!(
        !dir.join("appendonlydir").exists(),
        "AOF written in {}",
        dir.display()
    );
    drop(server);
    assert!(!dir.exists(), "the temporary directory outlived the server");
}

#[test]
fn unix_socket_server_answers() {
    let server = RedisServer::start_unix();
    let sock = server.socket().expect("a Unix server has a socket");
    assert_eq!(server.port(), None);
    assert_eq!(server.url(), format!("redis+unix://{}", sock.display()));
    assert_eq!(server.cli(&["PING"]), "PONG");
    assert_eq!(server.cli(&["CONFIG", "GET", "port"]), "port\n0");
}

#[test]
fn tls_server_answers_with_its_ca() {
    let server = RedisServer::start_tls();
    let port = server.port().expect("a TLS server has a port");
    assert_eq!(server.url(), format!("rediss://localhost:{port}"));
    assert!(server.ca_file().expect("a TLS server has a CA").is_file());
    assert_eq!(server.cli(&["PING"]), "PONG");
    assert_eq!(server.cli(&["CONFIG", "GET", "port"]), "port\n0");
    // TLS only: a plain-text PING on the TLS port gets no PONG.
    let out = stranger_with(&port.to_string(), &["PING"]);
    assert!(!out.contains("PONG"), "{out}");
}

#[test]
fn requirepass_server_needs_the_password() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret"]);
    // cli() authenticates with the password it was started with.
    assert_eq!(server.cli(&["PING"]), "PONG");
    let port = server.port().expect("a TCP server has a port").to_string();
    let out = stranger_with(&port, &["PING"]);
    assert!(out.contains("NOAUTH"), "{out}");
    let out = stranger_with(&port, &["AUTH", "wrong"]);
    assert!(out.contains("WRONGPASS"), "{out}");
    let out = stranger_with(&port, &["AUTH", "s3cret"]);
    assert_eq!(out, "OK");
}

fn stranger_with(port: &str, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", port])
        .args(args)
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn extra_arguments_reach_the_server() {
    let server =
        RedisServer::start_with(&["--maxmemory", "1mb", "--maxmemory-policy", "noeviction"]);
    assert_eq!(
        server.cli(&["CONFIG", "GET", "maxmemory"]),
        "maxmemory\n1048576"
    );
    assert_eq!(
        server.cli(&["CONFIG", "GET", "maxmemory-policy"]),
        "maxmemory-policy\nnoeviction"
    );
}

#[test]
fn a_stopped_server_does_not_answer_until_continued() {
    let server = RedisServer::start();
    let port = server.port().expect("a TCP server has a port");
    server.stop_signal();
    // A frozen server still accepts (the kernel does) but never answers. (redis-cli 7.0
    // has no -t timeout, hence a raw PING with a 300 ms read timeout.)
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("the kernel accepts");
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("a read timeout");
    stream
        .write_all(b"*1\r\n$4\r\nPING\r\n")
        .expect("the kernel takes the request");
    let mut reply = [0u8; 16];
    let err = stream
        .read(&mut reply)
        .expect_err("a stopped server answered");
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err}"
    );
    server.cont_signal();
    // The request sent while frozen is answered once thawed, and new ones too.
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a read timeout");
    let n = stream.read(&mut reply).expect("the thawed server answers");
    assert_eq!(&reply[..n], b"+PONG\r\n");
    assert_eq!(server.cli(&["PING"]), "PONG");
}

#[test]
fn a_stopped_server_still_dies_on_drop() {
    let server = RedisServer::start();
    let pid = server.pid();
    server.stop_signal();
    drop(server);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "redis-server {pid} outlived its drop"
    );
}
