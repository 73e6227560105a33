//! The final response's head: `-I` (HEAD, the head on stdout, error responses too) and `-D
//! FILE`.

use crate::common::*;

#[test]
fn head_and_dump_header() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&["-I", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests()[0].method, "HEAD");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("HTTP/1.1 200 OK\r\n"));

    let dir = tempfile::tempdir().unwrap();
    let headers = dir.path().join("h.txt");
    let s = Server::start(vec![Step::with_header(404, "X-Why", "gone")]).unwrap();
    let (out, _) = run(&["-D", headers.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 3);
    let text = std::fs::read_to_string(&headers).unwrap();
    assert!(
        text.starts_with("HTTP/1.1 404 Not Found\r\n") && text.contains("x-why: gone"),
        "{text}"
    );
}

#[test]
fn head_shows_the_head_of_an_error_response_too() {
    let s = Server::start(vec![Step::with_header(404, "X-Why", "gone")]).unwrap();
    let (out, _) = run(&["-I", &s.url("/")]);
    assert_eq!(code(&out), 3);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("HTTP/1.1 404 Not Found\r\n") && text.contains("x-why: gone"),
        "{text}"
    );
}
