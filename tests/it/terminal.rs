//! On a terminal, long waits show a countdown and it is erased; off a terminal, nothing of
//! the kind is written. The terminal is a pseudo-terminal opened by the test.

use crate::common::*;

#[test]
fn long_wait_shows_a_countdown_on_a_terminal_only() {
    let s = Server::start(vec![
        Step::with_header(503, "Retry-After", "3"),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let url = s.url("/");
    let args = ["--retry-after-spread", "0", "--base", "1ms", url.as_str()];
    let (code_tty, shown) = on_terminal(&args);
    assert_eq!(code_tty, Some(0), "{shown}");
    assert!(
        shown.contains("waiting 3s: Retry-After from 503 Service Unavailable, Ctrl-C to stop"),
        "{shown:?}"
    );
    assert!(shown.contains("waiting 1s"), "{shown:?}");
    assert!(
        shown.contains("\r\x1b[K"),
        "the countdown is erased: {shown:?}"
    );

    let (out, _) = run(&args);
    assert_eq!(code(&out), 0);
    assert!(
        !stderr(&out).contains("waiting"),
        "countdown written off a terminal"
    );
    assert!(!stderr(&out).contains('\r'));
}

#[test]
fn download_progress_on_a_terminal_only() {
    let s = Server::start(vec![Step::Generate { len: 4 << 20 }]).unwrap();
    let url = s.url("/");
    let (code_tty, shown) = on_terminal(&["-o", "/dev/null", &url]);
    assert_eq!(code_tty, Some(0), "{shown}");
    assert!(
        shown.contains("downloading ") && shown.contains("of 4.0 MiB"),
        "{shown:?}"
    );
    let (out, _) = run(&["-o", "/dev/null", &url]);
    assert!(!stderr(&out).contains("downloading"));
}
