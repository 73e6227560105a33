//! Proxies: `-x` and `--noproxy`, `http_proxy` from the environment, a proxy that fails
//! (502: retried; 407 and 403: not), SOCKS, and bad proxy URLs as usage errors.

use crate::common::*;

#[test]
fn proxy_flag_and_noproxy() {
    let proxy = Server::start(vec![Step::status(200, "via proxy")]).unwrap();
    let (out, _) = run(&["-x", &proxy.url(""), "http://origin.example.test/path"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"via proxy");
    let seen = proxy.requests();
    assert_eq!(seen[0].method, "CONNECT");
    assert_eq!(seen[0].target, "origin.example.test:80");
    assert_eq!(seen[1].target, "/path");

    let direct = Server::start(vec![Step::status(200, "direct")]).unwrap();
    let (out, _) = run(&[
        "-x",
        &proxy.url(""),
        "--noproxy",
        "127.0.0.1",
        &direct.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"direct");
    assert_eq!(
        proxy.requests().len(),
        2,
        "--noproxy host went through the proxy"
    );
}

#[test]
fn proxy_from_the_environment() {
    let proxy = Server::start(vec![Step::status(200, "via env proxy")]).unwrap();
    let out = command()
        .env("http_proxy", proxy.url(""))
        .arg("http://origin.example.test/")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"via env proxy");
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
fn socks_proxies_work_or_fail_cleanly_and_typos_are_usage_errors() {
    let dead = closed_port_url();
    let proxy = dead.trim_start_matches("http://").trim_end_matches('/');
    let (out, _) = run(&[
        "-x",
        &format!("socks5://{proxy}"),
        "--attempts",
        "1",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
    let (out, _) = run(&["-x", "http://127.0.0.1:notaport", "http://127.0.0.1:9/"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let (out, _) = run(&["-x", "ftp://127.0.0.1:21", "http://127.0.0.1:9/"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}
