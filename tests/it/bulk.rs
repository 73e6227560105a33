//! Bodies larger than what arrives with the head: over plain HTTP with a Content-Length,
//! the rest of such a body is moved from the socket to the spool by the kernel (splice),
//! after the bytes ureq read with the head. These tests hold that path to the promises of
//! the other: the output is exactly the body, or nothing (the old file kept); a cut, a
//! reset, a stall or surplus bytes are told apart as before; no temporary file is left;
//! a resumed download is exact. Sizes straddle ureq's 128 KiB head buffer, so the body is
//! in turn all buffered, split between the buffer and the socket, or almost all on the
//! socket.

use crate::common::*;
use std::path::Path;
use std::time::Duration;

/// Body sizes: empty, tiny, around the head buffer, several pipe-fulls.
const SIZES: [usize; 5] = [0, 1, 131_000, 131_073, (3 << 20) + 7];

fn body(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 % 251) as u8).collect()
}

/// Where the body goes in a run.
#[derive(Clone, Copy, Debug)]
enum Out {
    /// `-o` a file that does not exist.
    New,
    /// `-o` a file that exists: replaced only on success.
    Existing,
    /// stdout.
    Stdout,
    /// `-i -o`: the head, then the body, in a new file.
    Include,
}

const OUTS: [Out; 4] = [Out::New, Out::Existing, Out::Stdout, Out::Include];
const OLD: &[u8] = b"the file as it was";

/// Runs the binary for `url` with `extra` flags into `out` (in `dir`); returns the exit
/// code, the bytes delivered (file or stdout; None: no file) and stderr.
fn fetch(dir: &Path, out: Out, extra: &[&str], url: &str) -> (i32, Option<Vec<u8>>, String) {
    let path = dir.join("out.bin");
    if matches!(out, Out::Existing) {
        std::fs::write(&path, OLD).expect("write the old file");
    }
    let p = path.to_str().expect("utf-8 path");
    let mut args: Vec<&str> = match out {
        Out::Stdout => vec![],
        Out::Include => vec!["-i", "-o", p],
        Out::New | Out::Existing => vec!["-o", p],
    };
    args.extend(extra);
    let (o, _) = run_fast(&args, url);
    let delivered = match out {
        Out::Stdout => Some(o.stdout.clone()),
        _ => std::fs::read(&path).ok(),
    };
    (code(&o), delivered, stderr(&o))
}

/// The body part of what was delivered (after the head under `-i`).
fn body_of(out: Out, delivered: &[u8]) -> &[u8] {
    match out {
        Out::Include => {
            let at = delivered
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(0, |p| p + 4);
            &delivered[at..]
        }
        _ => delivered,
    }
}

/// Nothing but the output (or nothing at all) is left in `dir`.
fn no_temp_left(dir: &Path, ctx: &str) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "out.bin")
        .collect();
    assert!(names.is_empty(), "{ctx}: left behind {names:?}");
}

#[test]
fn a_whole_body_arrives_exactly_whatever_its_size_and_destination() {
    for len in SIZES {
        for out in OUTS {
            let expected = body(len);
            let s = Server::start(vec![Step::Respond {
                status: 200,
                headers: vec![],
                body: expected.clone(),
            }])
            .expect("server");
            let dir = tempfile::tempdir().expect("dir");
            let (c, got, err) = fetch(dir.path(), out, &[], &s.url("/b"));
            let ctx = format!("{len} bytes to {out:?}");
            assert_eq!(c, 0, "{ctx}: {err}");
            let got = got.expect("delivered");
            assert!(body_of(out, &got) == expected, "{ctx}: body differs");
            no_temp_left(dir.path(), &ctx);
        }
    }
}

#[test]
fn a_body_cut_short_anywhere_delivers_nothing_then_the_retry_delivers_it_whole() {
    let len = (3 << 20) + 7;
    let expected = body(len);
    // Cut inside the head's buffer, just past it, and deep on the socket.
    for cut in [10, 131_073, 2 << 20] {
        for out in OUTS {
            let ctx = format!("cut at {cut} to {out:?}");
            let dir = tempfile::tempdir().expect("dir");
            let once = Server::start(vec![Step::Truncate {
                declared: len,
                body: expected[..cut].to_vec(),
            }])
            .expect("server");
            let (c, got, err) = fetch(dir.path(), out, &["--attempts", "1"], &once.url("/b"));
            assert_eq!(c, 4, "{ctx}: {err}");
            assert!(err.contains("Peer disconnected"), "{ctx}: {err}");
            match out {
                Out::Existing => assert_eq!(got.as_deref(), Some(OLD), "{ctx}: old file changed"),
                Out::Stdout => assert_eq!(got.as_deref(), Some(&b""[..]), "{ctx}: stdout written"),
                Out::New | Out::Include => assert_eq!(got, None, "{ctx}: a file was made"),
            }
            no_temp_left(dir.path(), &ctx);

            let dir = tempfile::tempdir().expect("dir");
            let twice = Server::start(vec![
                Step::Truncate {
                    declared: len,
                    body: expected[..cut].to_vec(),
                },
                Step::Respond {
                    status: 200,
                    headers: vec![],
                    body: expected.clone(),
                },
            ])
            .expect("server");
            let (c, got, err) = fetch(dir.path(), out, &[], &twice.url("/b"));
            assert_eq!(c, 0, "{ctx}: {err}");
            assert!(
                body_of(out, &got.expect("delivered")) == expected,
                "{ctx}: the retry's body differs"
            );
            no_temp_left(dir.path(), &ctx);
        }
    }
}

#[test]
fn a_reset_and_a_stall_mid_body_fail_the_attempt_as_before() {
    let len = 4 << 20;
    let expected = body(len);
    for out in OUTS {
        let ctx = format!("reset, {out:?}");
        let dir = tempfile::tempdir().expect("dir");
        let s = Server::start(vec![Step::ResetMidBody {
            declared: len,
            body: expected[..(1 << 20)].to_vec(),
            pause: Duration::from_millis(50),
        }])
        .expect("server");
        let (c, got, err) = fetch(dir.path(), out, &["--attempts", "1"], &s.url("/b"));
        assert_eq!(c, 4, "{ctx}: {err}");
        if let Out::Existing = out {
            assert_eq!(got.as_deref(), Some(OLD), "{ctx}");
        }
        no_temp_left(dir.path(), &ctx);

        let ctx = format!("stall, {out:?}");
        let dir = tempfile::tempdir().expect("dir");
        let s = Server::start(vec![Step::Stall {
            body: expected[..(1 << 20)].to_vec(),
            declared: len,
            pause: Duration::from_secs(20),
        }])
        .expect("server");
        let started = std::time::Instant::now();
        let flags = ["--attempts", "1", "--stall-timeout", "300ms"];
        let (c, got, err) = fetch(dir.path(), out, &flags, &s.url("/b"));
        assert_eq!(c, 4, "{ctx}: {err}");
        assert!(err.contains("--stall-timeout"), "{ctx}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{ctx}: took {:?}",
            started.elapsed()
        );
        if let Out::Existing = out {
            assert_eq!(got.as_deref(), Some(OLD), "{ctx}");
        }
        no_temp_left(dir.path(), &ctx);
    }
}

#[test]
fn the_deadline_and_max_time_hold_in_the_middle_of_a_large_body() {
    let len = 4 << 20;
    let expected = body(len);
    for flags in [&["--deadline", "1s"][..], &["-m", "1", "--attempts", "1"]] {
        let dir = tempfile::tempdir().expect("dir");
        let s = Server::start(vec![Step::Stall {
            body: expected[..(2 << 20)].to_vec(),
            declared: len,
            pause: Duration::from_secs(20),
        }])
        .expect("server");
        let started = std::time::Instant::now();
        let (c, got, err) = fetch(dir.path(), Out::Existing, flags, &s.url("/b"));
        let took = started.elapsed();
        assert!(matches!(c, 4 | 5), "{flags:?}: {c} {err}");
        assert!(
            took < Duration::from_millis(2500),
            "{flags:?}: took {took:?}"
        );
        assert_eq!(got.as_deref(), Some(OLD), "{flags:?}: old file changed");
        no_temp_left(dir.path(), &format!("{flags:?}"));
    }
}

#[test]
fn bytes_past_the_content_length_are_never_written() {
    let expected = body(1 << 20);
    let mut raw = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        expected.len()
    )
    .into_bytes();
    raw.extend(&expected);
    raw.extend(b"SURPLUS BYTES THAT ARE NOT THE BODY");
    for out in OUTS {
        let dir = tempfile::tempdir().expect("dir");
        let s = Server::start(vec![Step::Raw(raw.clone())]).expect("server");
        let (c, got, err) = fetch(dir.path(), out, &[], &s.url("/b"));
        assert_eq!(c, 0, "{out:?}: {err}");
        assert!(
            body_of(out, &got.expect("delivered")) == expected,
            "{out:?}: the surplus was written"
        );
    }
}

#[test]
fn max_filesize_and_a_speed_limit_are_checked_on_the_spliced_part() {
    // A body announced without its length is not spliced; one with a length larger
    // than --max-filesize is refused before it is read: both keep the limit (exit 6).
    let big = body(3 << 20);
    let s = Server::start(vec![Step::Respond {
        status: 200,
        headers: vec![],
        body: big.clone(),
    }])
    .expect("server");
    let dir = tempfile::tempdir().expect("dir");
    let (c, got, err) = fetch(
        dir.path(),
        Out::Existing,
        &["--max-filesize", "1000000"],
        &s.url("/b"),
    );
    assert_eq!(c, 6, "{err}");
    assert_eq!(got.as_deref(), Some(OLD));
    no_temp_left(dir.path(), "max-filesize");

    // 1 MiB at once, then nothing: slower than 1000 bytes/s over 1 s.
    let s = Server::start(vec![Step::Stall {
        body: big[..(1 << 20)].to_vec(),
        declared: big.len(),
        pause: Duration::from_secs(20),
    }])
    .expect("server");
    let dir = tempfile::tempdir().expect("dir");
    let started = std::time::Instant::now();
    let (c, _, err) = fetch(
        dir.path(),
        Out::New,
        &["--attempts", "1", "-Y", "1000", "-y", "1"],
        &s.url("/b"),
    );
    assert_eq!(c, 4, "{err}");
    assert!(err.contains("--speed-limit"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    no_temp_left(dir.path(), "speed limit");
}

#[test]
fn a_download_cut_on_the_socket_resumes_exactly() {
    let whole = body(5 << 20);
    for cut in [100_000, 131_073, (3 << 20) + 1] {
        let s = Server::start(vec![
            Step::Resource {
                body: whole.clone(),
                etag: "\"v1\"".into(),
                cut_after: Some(cut),
            },
            Step::Resource {
                body: whole.clone(),
                etag: "\"v1\"".into(),
                cut_after: None,
            },
        ])
        .expect("server");
        let dir = tempfile::tempdir().expect("dir");
        let (c, got, err) = fetch(dir.path(), Out::New, &[], &s.url("/r"));
        assert_eq!(c, 0, "cut {cut}: {err}");
        assert!(
            got.expect("file") == whole,
            "cut {cut}: resumed file differs"
        );
        assert!(err.contains(&format!("resumed at byte {cut}")), "{err}");
        let reqs = s.requests();
        assert_eq!(reqs[1].header("range"), Some(&*format!("bytes={cut}-")));
        no_temp_left(dir.path(), &format!("cut {cut}"));
    }
}
