//! How the connection is made: `--resolve` and `--connect-to` move the connection but not
//! the name (Host header, SNI, certificate); `--unix-socket` carries the request over a
//! socket, retried as a refused connection while the socket is absent; `-E/--cert` gives a
//! client certificate to a server that demands one; `--netrc*` gives credentials; `-Y/-y`
//! bound a slow transfer.

use crate::common::*;
use crate::tls_support::{self, Ca};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn port_of(s: &Server) -> u16 {
    s.url("")
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port")
}

#[test]
fn resolve_points_a_name_at_an_address_and_keeps_the_name() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let port = port_of(&s);
    let entry = format!("+Example.TEST:{port}:[::1],127.0.0.1");
    let url = format!("http://example.test:{port}/x");
    // ::1 refuses (the server is on 127.0.0.1 only): the next address is tried.
    let (out, _) = run(&["--resolve", &entry, &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"ok");
    let reqs = s.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].header("host"),
        Some(format!("example.test:{port}").as_str())
    );
}

#[test]
fn bad_resolve_and_connect_to_entries_are_usage_errors() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    for (flag, value, says) in [
        ("--resolve", "-example.test:80", "cache"),
        ("--resolve", "example.test:80", "expected [+]HOST:PORT:ADDR"),
        (
            "--resolve",
            "example.test:80:not-an-ip",
            "is not an IP address",
        ),
        (
            "--resolve",
            "example.test:99999:127.0.0.1",
            "not from 1 to 65535",
        ),
        ("--connect-to", "a:1:b", "expected HOST1:PORT1:HOST2:PORT2"),
        ("--connect-to", "a:x:b:2", "not from 1 to 65535"),
    ] {
        let (out, _) = run(&[flag, value, &s.url("/")]);
        assert_eq!(code(&out), 2, "{flag} {value}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(says),
            "{flag} {value}: {}",
            stderr(&out)
        );
    }
    assert!(s.requests().is_empty(), "nothing is sent on a usage error");
}

#[test]
fn connect_to_moves_the_connection_and_keeps_the_name() {
    let s = Server::start(vec![Step::status(200, "one"), Step::status(200, "two")]).unwrap();
    let port = port_of(&s);
    let moved = format!("example.test:80:127.0.0.1:{port}");
    let (out, _) = run(&["--connect-to", &moved, "http://example.test/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"one");
    // Empty parts: any host and port in, the URL's host out (resolved by --resolve).
    let any = format!("::127.0.0.1:{port}");
    let (out, _) = run(&[
        "--connect-to",
        "a.test:1::",
        "--connect-to",
        &any,
        "http://b.test:81/",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs[0].header("host"), Some("example.test"));
    assert_eq!(reqs[1].header("host"), Some("b.test:81"));
}

/// A TLS server on loopback for `names`, signed by `ca`; demanding a client certificate
/// signed by it when `mutual`. Each answer's body is the request's Host header.
fn tls_server(ca: &Ca, names: &[&str], mutual: bool) -> u16 {
    let cert = ca.issue(names);
    let config = tls_support::config(&cert, &[], mutual.then_some(&ca.der));
    let (port, _) = tls_support::serve(config, |tls| {
        let head = tls_support::read_head(tls);
        let host = tls_support::header_of(&head, "host").unwrap_or("");
        tls_support::answer(tls, "", host.as_bytes());
    });
    port
}

fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn tls_verifies_the_url_s_name_wherever_the_connection_goes() {
    let pki = Ca::new();
    let port = tls_server(&pki, &["example.test"], false);
    let dir = tempfile::tempdir().unwrap();
    let ca = write_file(dir.path(), "ca.pem", &pki.pem);
    let ca = ca.to_str().unwrap();
    let entry = format!("example.test:{port}:127.0.0.1");
    let url = format!("https://example.test:{port}/");
    let (out, _) = run(&["--cacert", ca, "--resolve", &entry, &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, format!("example.test:{port}").as_bytes());
    // Moved to "localhost", which the certificate does not name: the URL's name is checked.
    let moved = format!("example.test:443:localhost:{port}");
    let (out, _) = run(&[
        "--cacert",
        ca,
        "--connect-to",
        &moved,
        "https://example.test/",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"example.test");
    // A URL name the certificate does not hold fails, wherever it points.
    let other = format!("other.test:{port}:127.0.0.1");
    let url = format!("https://other.test:{port}/");
    let (out, _) = run(&["--cacert", ca, "--resolve", &other, &url]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not valid for this host name"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_client_certificate_opens_a_server_that_demands_one() {
    let pki = Ca::new();
    let port = tls_server(&pki, &["localhost"], true);
    let url = format!("https://localhost:{port}/");
    let dir = tempfile::tempdir().unwrap();
    let ca = write_file(dir.path(), "ca.pem", &pki.pem);
    let ca = ca.to_str().unwrap();
    let client = pki.issue(&["client"]);
    let (cert, key) = (client.pem, client.key_pem);
    let cert_file = write_file(dir.path(), "client.pem", &cert);
    let key_file = write_file(dir.path(), "client.key", &key);
    let both = write_file(dir.path(), "both.pem", &format!("{cert}{key}"));
    let (out, _) = run(&["--cacert", ca, "--attempts", "3", &url]);
    assert_eq!(code(&out), 6, "without a certificate: {}", stderr(&out));
    assert_eq!(
        attempt_lines(&out).len(),
        1,
        "not retried: {}",
        stderr(&out)
    );
    let (c, k) = (cert_file.to_str().unwrap(), key_file.to_str().unwrap());
    let (out, _) = run(&[
        "--cacert",
        ca,
        "--cert",
        c,
        "--key",
        k,
        "--cert-type",
        "pem",
        &url,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // One file holding both, with a password that an unencrypted key does not need.
    let with_pw = format!("{}:unused-pw", both.display());
    let (out, _) = run(&["--cacert", ca, "-E", &with_pw, "-v", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("unused-pw"), "{}", stderr(&out));
}

#[test]
fn client_certificate_input_that_cannot_be_used_is_a_usage_error() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let pki = Ca::new();
    let cert = pki.issue(&["client"]).pem;
    let dir = tempfile::tempdir().unwrap();
    let cert_only = write_file(dir.path(), "c.pem", &cert);
    let encrypted = write_file(
        dir.path(),
        "k.pem",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n",
    );
    let c = cert_only.to_str().unwrap();
    let with_pw = format!("{c}:s3cret-pw");
    let url = s.url("/");
    for (args, says) in [
        (vec!["--cert", c], "holds no PEM private key"),
        (
            vec!["--cert", &with_pw, "--key", encrypted.to_str().unwrap()],
            "encrypted private key is not supported",
        ),
        (
            vec!["--cert", &with_pw, "--cert-type", "P12"],
            "openssl pkcs12",
        ),
        (
            vec!["--cert", "/nonexistent/c.pem:s3cret-pw"],
            "cannot read --cert /nonexistent/c.pem",
        ),
    ] {
        let mut all = args.clone();
        all.push(&url);
        let (out, _) = run(&all);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("s3cret-pw"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(s.requests().is_empty());
}

/// An HTTP server on a Unix socket at `path`, from `after` on: answers each request with
/// `body`, recording the request heads. Returns the record.
fn unix_server(path: &Path, after: Duration, body: &'static str) -> Arc<Mutex<Vec<String>>> {
    let heads = Arc::new(Mutex::new(Vec::new()));
    let record = heads.clone();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let listener = UnixListener::bind(&path).unwrap();
        for mut conn in listener.incoming().flatten() {
            let mut reader = BufReader::new(&mut conn);
            let mut head = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                head.push_str(&line);
                line.clear();
            }
            if head.contains("content-length: 1") {
                let mut byte = [0u8; 1];
                let _ = reader.read_exact(&mut byte);
            }
            record.lock().unwrap().push(head);
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    heads
}

#[test]
fn a_request_over_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("daemon.sock");
    let heads = unix_server(&sock, Duration::ZERO, "[]");
    std::thread::sleep(Duration::from_millis(100));
    let sock = sock.to_str().unwrap();
    let (out, _) = run(&["--unix-socket", sock, "http://docker/containers/json?all=1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"[]");
    let heads = heads.lock().unwrap();
    assert!(
        heads[0].starts_with("GET /containers/json?all=1 HTTP/1.1\r\n"),
        "{heads:?}"
    );
    assert!(
        heads[0].to_ascii_lowercase().contains("host: docker\r\n"),
        "{heads:?}"
    );
}

/// A body larger than what arrives with the head, over a Unix socket (spliced off it like
/// a TCP one): exactly the body, to stdout and to a file.
#[test]
fn a_large_body_over_a_unix_socket_arrives_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("bulk.sock");
    let text: String = (0..(2 << 20) + 3)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let body: &'static str = Box::leak(text.into_boxed_str());
    unix_server(&sock, Duration::ZERO, body);
    std::thread::sleep(Duration::from_millis(100));
    let sock = sock.to_str().unwrap();
    let (out, _) = run(&["--unix-socket", sock, "http://local/big"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout == body.as_bytes(), "stdout is not the body");
    let file = dir.path().join("big.txt");
    let (out, _) = run(&[
        "--unix-socket",
        sock,
        "-o",
        file.to_str().unwrap(),
        "http://local/big",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        std::fs::read(&file).unwrap() == body.as_bytes(),
        "the file is not the body"
    );
}

#[test]
fn an_absent_socket_is_a_refused_connection_retried_even_for_post() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("late.sock");
    let heads = unix_server(&sock, Duration::from_millis(400), "done");
    let sock = sock.to_str().unwrap();
    let args = [
        "--unix-socket",
        sock,
        "--attempts",
        "30",
        "--base",
        "50ms",
        "--cap",
        "100ms",
    ];
    let mut all = args.to_vec();
    all.extend(["-d", "x", "http://localhost/jobs"]);
    let (out, _) = run(&all);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"done");
    assert_eq!(heads.lock().unwrap().len(), 1, "the POST arrived once");
    assert!(
        stderr(&out).contains("cannot connect to the Unix socket"),
        "{}",
        stderr(&out)
    );

    let absent = dir.path().join("none.sock");
    let absent = absent.to_str().unwrap();
    let (out, _) = run_fast(
        &["--unix-socket", absent, "--attempts", "3"],
        "http://localhost/",
    );
    assert_eq!(attempt_lines(&out).len(), 3, "{}", stderr(&out));
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("refused"), "{}", stderr(&out));
}

#[test]
fn the_socket_is_part_of_the_target_in_the_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("d.sock");
    let _heads = unix_server(&sock, Duration::ZERO, "ok");
    std::thread::sleep(Duration::from_millis(100));
    let state = dir.path().join("state.json");
    let (s, st) = (sock.to_str().unwrap(), state.to_str().unwrap());
    let (out, _) = run(&["--unix-socket", s, "--state", st, "http://localhost/_ping"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(&state).unwrap();
    assert!(
        text.contains(&format!("http://localhost:80 via unix:{s}")),
        "{text}"
    );
}

/// A server on the Unix socket `path` that answers its first request 429 with
/// `Retry-After: 1`, half a second late (so that the other transfer is waiting for the
/// origin's first answer by then, not yet told the Retry-After), and every later one 200.
fn unix_limited(path: &Path) {
    let listener = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for (n, mut conn) in listener.incoming().flatten().enumerate() {
            let mut reader = BufReader::new(&mut conn);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            if n == 0 {
                std::thread::sleep(Duration::from_millis(500));
            }
            let head = match n {
                0 => "429 Too Many Requests\r\nRetry-After: 1",
                _ => "200 OK",
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {head}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            );
        }
    });
}

/// The run's table of origins keys an origin as --parallel-max-host and --state do: under
/// --unix-socket, with the socket. A hold on it is said with the socket, by the transfer
/// that meets it, whichever of the two URL orders.
#[test]
fn the_socket_is_part_of_the_origin_a_hold_names() {
    for urls in [
        ["http://localhost/a", "http://localhost/b"],
        ["http://localhost/b", "http://localhost/a"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("d.sock");
        unix_limited(&sock);
        let s = sock.to_str().unwrap();
        let (out, _) = run(&["--unix-socket", s, "-Z", urls[0], urls[1]]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let said = format!("holding requests to http://localhost:80 via unix:{s} until ");
        assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    }
}

/// A response whose 20-byte body comes a byte at a time, `pause` apart.
fn dribble(pause: Duration) -> Step {
    let mut parts = vec![b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n".to_vec()];
    parts.extend((0..20).map(|_| b"x".to_vec()));
    Step::RawPaced { parts, pause }
}

#[test]
fn a_transfer_slower_than_the_speed_limit_fails_as_a_stall() {
    let s = Server::start(vec![
        dribble(Duration::from_millis(150)),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let (out, took) = run_fast(&["-Y", "100", "-y", "1"], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"ok", "only the final body");
    assert!(
        stderr(&out).contains("slower than --speed-limit 100 bytes/s over --speed-time 1s"),
        "{}",
        stderr(&out)
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_silent_server_fails_once_the_speed_span_passes() {
    let s = Server::start(vec![
        Step::Stall {
            body: b"ab".to_vec(),
            declared: 10,
            pause: Duration::from_secs(20),
        },
        Step::status(200, "ok"),
    ])
    .unwrap();
    let (out, took) = run_fast(&["--speed-limit", "1", "--speed-time", "0.5"], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("slower than --speed-limit 1 bytes/s"),
        "{}",
        stderr(&out)
    );
    assert!(
        took < Duration::from_secs(5),
        "not the 30 s stall timeout: {took:?}"
    );
    // A fast transfer is untouched; -Y 0 is off.
    let s = Server::start(vec![Step::status(200, "fast")]).unwrap();
    let (out, _) = run_fast(&["-Y", "0", "-y", "1"], &s.url("/"));
    assert_eq!((code(&out), out.stdout.as_slice()), (0, b"fast".as_slice()));
}

/// Runs with `HOME` set to `home`.
fn run_home(home: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = command();
    cmd.env("HOME", home)
        .args(args)
        .timeout(Duration::from_secs(60));
    cmd.output().unwrap()
}

#[test]
fn netrc_gives_the_credentials_of_the_host() {
    let s = Server::start(vec![Step::status(200, "ok"); 4]).unwrap();
    let home = tempfile::tempdir().unwrap();
    let netrc = "macdef init\nmachine 127.0.0.1 login evil password evil\n\n\
                 machine 127.0.0.1 login bob password s3cret\ndefault login anon password anon\n";
    write_file(home.path(), ".netrc", netrc);
    let url = s.url("/");
    let out = run_home(home.path(), &["--netrc", "-v", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("s3cret") && !stderr(&out).contains("Ym9iOnMzY3JldA"),
        "{}",
        stderr(&out)
    );
    let file = write_file(
        home.path(),
        "other",
        "machine 127.0.0.1 login eve password pw\n",
    );
    let out = run_home(home.path(), &["--netrc-file", file.to_str().unwrap(), &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // -u and a URL's user win over the file.
    let out = run_home(home.path(), &["--netrc", "-u", "amy:x", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let with_user = url.replace("http://", "http://zed:z@");
    let out = run_home(home.path(), &["--netrc", &with_user]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let auth: Vec<_> = s
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(String::from))
        .collect();
    assert_eq!(
        auth,
        [
            Some("Basic Ym9iOnMzY3JldA==".to_string()), // bob:s3cret
            Some("Basic ZXZlOnB3".into()),              // eve:pw
            Some("Basic YW15Ong=".into()),              // amy:x
            Some("Basic emVkOno=".into()),              // zed:z
        ]
    );
}

#[test]
fn an_absent_netrc_is_an_error_unless_optional() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let home = tempfile::tempdir().unwrap();
    let url = s.url("/");
    let out = run_home(home.path(), &["--netrc", &url]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot read the netrc file"),
        "{}",
        stderr(&out)
    );
    let out = run_home(home.path(), &["--netrc-file", "/nonexistent/netrc", &url]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(s.requests().is_empty(), "nothing sent");
    let out = run_home(home.path(), &["--netrc-optional", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests()[0].header("authorization"), None);
}

#[test]
fn netrc_credentials_do_not_follow_a_redirect_to_another_host() {
    let b = Server::start(vec![Step::status(200, "there")]).unwrap();
    let there = b.url("/").replace("127.0.0.1", "localhost");
    let a = Server::start(vec![Step::with_header(302, "Location", &there)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let netrc = write_file(dir.path(), "netrc", "default login bob password s3cret\n");
    let (out, _) = run(&["--netrc-file", netrc.to_str().unwrap(), "-L", &a.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"there");
    assert!(a.requests()[0].header("authorization").is_some());
    assert_eq!(b.requests()[0].header("authorization"), None);
}
