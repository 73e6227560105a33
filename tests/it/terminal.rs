//! On a terminal, long waits show a countdown and it is erased; off a terminal, nothing of
//! the kind is written. The terminal is a pseudo-terminal opened by the test.

use crate::common::*;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;

/// Runs the binary with stderr on a pseudo-terminal; returns what the terminal showed.
fn on_terminal(args: &[&str]) -> (Option<i32>, String) {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors, which we own from here on.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0);
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = std_command()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(master);
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO marks the end once the child closed the terminal.
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let status = child.wait().unwrap();
    (status.code(), reader.join().unwrap())
}

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
