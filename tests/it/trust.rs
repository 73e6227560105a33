//! The trust classes, each over its siblings: a request the server processed is never sent
//! again after a later hop fails; a resumed download is kept only when every byte is
//! accounted for; a body is saved as sent unless `--compressed`; the deadline holds at
//! every length and whatever the reader of the output does.

use crate::common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn methods(reqs: &[Recorded]) -> Vec<String> {
    reqs.iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect()
}

fn see_other(status: u16, to: &str) -> Step {
    Step::with_header(status, "Location", to)
}

#[test]
fn a_post_answered_with_a_redirect_is_never_sent_again() {
    // Every redirect that turns POST into GET, then every retryable failure of the GET.
    for redirect in [301, 302, 303] {
        for failure in [
            Step::status(503, "busy"),
            Step::with_header(429, "Retry-After", "0"),
            Step::status(408, "slow"),
            Step::Reset,
        ] {
            let s = Server::start(vec![
                see_other(redirect, "/job/1"),
                failure.clone(),
                Step::status(200, "the job"),
            ])
            .unwrap();
            let (out, _) = run_fast(
                &["-L", "POST", "-d", "x", "--attempts", "3"],
                &s.url("/jobs"),
            );
            let seen = methods(&s.requests());
            assert_eq!(
                seen,
                ["POST /jobs", "GET /job/1", "GET /job/1"],
                "{redirect} then {failure:?}: {}",
                stderr(&out)
            );
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            assert_eq!(out.stdout, b"the job");
            let lines = attempt_lines(&out);
            assert!(
                lines[0].contains("GET ") && lines[0].contains("/job/1"),
                "the line names the request that failed: {}",
                lines[0]
            );
        }
    }
}

#[test]
fn a_refused_location_retries_the_get_not_the_post() {
    let dead = closed_port_url();
    let s = Server::start(vec![see_other(303, &format!("{dead}job"))]).unwrap();
    let (out, _) = run_fast(
        &[
            "-L",
            "POST",
            "-d",
            "x",
            "--attempts",
            "3",
            "--log-format",
            "json",
        ],
        &s.url("/jobs"),
    );
    assert_eq!(methods(&s.requests()), ["POST /jobs"], "{}", stderr(&out));
    assert_eq!(code(&out), 4, "attempts exhausted: {}", stderr(&out));
    let attempts = json_lines(&out, "attempt");
    assert_eq!(attempts.len(), 3);
    for a in &attempts {
        assert_eq!(a["method"], "GET");
        assert!(a["url"].as_str().unwrap().ends_with("/job"), "{a}");
        assert!(a["start_url"].as_str().unwrap().ends_with("/jobs"), "{a}");
    }
}

#[test]
fn a_non_idempotent_request_answered_301_or_302_is_not_sent_again() {
    // A 301/302 keeps the method (only POST becomes GET): following it would send the
    // PATCH (or any method that is not idempotent) a second time.
    for (method, redirect) in [("PATCH", 302), ("PATCH", 301), ("LOCK", 302), ("post", 302)] {
        let s = Server::start(vec![see_other(redirect, "/b"), Step::status(200, "done")]).unwrap();
        let (out, _) = run_fast(&["-L", "-X", method, "-d", "x"], &s.url("/a"));
        assert_eq!(
            methods(&s.requests()),
            [format!("{method} /a")],
            "{method} {redirect}: {}",
            stderr(&out)
        );
        assert_eq!(code(&out), 3, "{}", stderr(&out));
        assert!(stderr(&out).contains("not followed"), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
    // A key lets the server deduplicate: then the redirect is followed, method and body
    // kept, and a failure of that hop is retried from that hop.
    let s = Server::start(vec![
        see_other(302, "/b"),
        Step::status(503, "busy"),
        Step::status(200, "done"),
    ])
    .unwrap();
    let (out, _) = run_fast(
        &["-L", "-X", "PATCH", "-d", "x", "--idempotency-key", "k1"],
        &s.url("/a"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(methods(&s.requests()), ["PATCH /a", "PATCH /b", "PATCH /b"]);
    assert!(
        s.requests()
            .iter()
            .all(|r| r.header("idempotency-key") == Some("k1"))
    );
}

#[test]
fn a_switching_protocols_answer_is_not_a_success() {
    let s = Server::start(vec![Step::Raw(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
            .to_vec(),
    )])
    .unwrap();
    let (out, _) = run_fast(&["--attempts", "2"], &s.url("/health"));
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn a_post_redirected_with_307_may_be_sent_again() {
    // 307 proves the first POST was not processed, 503 the second: replay from the start.
    let s = Server::start(vec![
        see_other(307, "/b"),
        Step::status(503, "busy"),
        see_other(307, "/b"),
        Step::status(200, "made"),
    ])
    .unwrap();
    let (out, _) = run_fast(&["-L", "POST", "-d", "x"], &s.url("/a"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        methods(&s.requests()),
        ["POST /a", "POST /b", "POST /a", "POST /b"]
    );
    assert!(s.requests().iter().all(|r| r.body == b"x"));
}

#[test]
fn an_empty_idempotency_key_does_not_allow_replay() {
    for header in ["Idempotency-Key;", "Idempotency-Key:    "] {
        let s = Server::start(vec![Step::Reset, Step::status(200, "ok")]).unwrap();
        let (out, _) = run_fast(&["POST", "-d", "x", "-H", header], &s.url("/"));
        assert_eq!(s.requests().len(), 1, "{header:?}: {}", stderr(&out));
        assert_eq!(code(&out), 6, "{}", stderr(&out));
    }
}

/// A response written by hand.
fn raw(status: &str, headers: &[(&str, String)], body: &[u8]) -> Step {
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    Step::Raw(bytes)
}

/// The first answer of a resumable download: a 200 with a validator and Accept-Ranges that
/// announces all of `whole` and sends only its first `kept` bytes.
fn cut_first_answer(whole: &[u8], kept: usize) -> Step {
    let head = format!(
        "HTTP/1.1 200 OK\r\nConnection: close\r\nAccept-Ranges: bytes\r\nETag: \"v1\"\r\nContent-Length: {}\r\n\r\n",
        whole.len()
    );
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&whole[..kept]);
    Step::Raw(bytes)
}

/// 206 answers to `Range: bytes=kept-` that do not account for every byte of `whole`
/// (300 000 bytes), each named.
fn unaccounted_continuations(whole: &[u8], kept: usize) -> Vec<(&'static str, Step)> {
    let range = |total: usize| {
        (
            "Content-Range",
            format!("bytes {kept}-{}/{total}", total - 1),
        )
    };
    let etag = ("ETag", "\"v1\"".to_string());
    let partial =
        |headers: &[(&str, String)], body: &[u8]| raw("206 Partial Content", headers, body);
    let rest = &whole[kept..];
    let with = |extra: &[u8]| [rest, extra].concat();
    let loose = format!("bytes  {kept} - 299999 / 300000");
    vec![
        (
            "a body shorter than its range",
            partial(&[range(300_000), etag.clone()], &whole[kept..295_000]),
        ),
        (
            "a body longer than its range",
            partial(&[range(300_000), etag.clone()], &with(b"trailing junk")),
        ),
        (
            "another total",
            partial(&[range(301_000), etag.clone()], &with(&[7u8; 1000])),
        ),
        ("no ETag", partial(&[range(300_000)], rest)),
        (
            "an encoded 206",
            partial(
                &[
                    range(300_000),
                    etag.clone(),
                    ("Content-Encoding", "gzip".into()),
                ],
                rest,
            ),
        ),
        (
            "a loosely written Content-Range",
            partial(&[("Content-Range", loose), etag.clone()], rest),
        ),
        (
            "another ETag",
            partial(&[range(300_000), ("ETag", "\"v2\"".into())], rest),
        ),
    ]
}

#[test]
fn a_resumed_download_is_kept_only_when_every_byte_is_accounted_for() {
    let whole: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let kept = 100_000;
    let etag = ("ETag", "\"v1\"".to_string());
    for (what, second) in unaccounted_continuations(&whole, kept) {
        let s = Server::start(vec![
            cut_first_answer(&whole, kept),
            second,
            raw("200 OK", std::slice::from_ref(&etag), &whole),
        ])
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out.bin");
        let (out, _) = run_fast(&["-o", file.to_str().unwrap()], &s.url("/f"));
        assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
        let got = std::fs::read(&file).unwrap();
        assert!(got == whole, "{what}: a file of {} bytes", got.len());
        assert_eq!(s.requests().len(), 3, "{what}: {}", stderr(&out));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{what}: a temporary file was left");
    }
}

#[test]
fn a_good_continuation_is_appended() {
    let whole: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    let s = Server::start(vec![
        Step::Resource {
            body: whole.clone(),
            etag: "\"r1\"".into(),
            cut_after: Some(120_000),
        },
        Step::Resource {
            body: whole.clone(),
            etag: "\"r1\"".into(),
            cut_after: None,
        },
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.bin");
    let (out, _) = run_fast(&["-o", file.to_str().unwrap()], &s.url("/f"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(std::fs::read(&file).unwrap() == whole);
    assert_eq!(s.requests()[1].header("range"), Some("bytes=120000-"));
    assert!(
        stderr(&out).contains("resumed at byte 120000"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("redirected"), "{}", stderr(&out));
}

#[test]
fn a_gzip_body_is_saved_as_sent_without_compressed() {
    let packed = gzip(b"a tar archive, say");
    let s = Server::start(vec![Step::Respond {
        status: 200,
        headers: vec![("Content-Encoding".into(), "gzip".into())],
        body: packed.clone(),
    }])
    .unwrap();
    let (out, _) = run(&[&s.url("/x.tar.gz")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, packed);
    assert_eq!(s.requests()[0].header("accept-encoding"), None);
}

#[test]
fn compressed_decodes_and_a_cut_gzip_body_is_retried() {
    let packed = gzip(&vec![b'q'; 100_000]);
    let s = Server::start(vec![
        Step::Truncate {
            declared: packed.len(),
            body: packed[..packed.len() / 2].to_vec(),
        },
        Step::Respond {
            status: 200,
            headers: vec![("Content-Encoding".into(), "gzip".into())],
            body: packed.clone(),
        },
    ])
    .unwrap();
    let (out, _) = run_fast(&["--compressed"], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, vec![b'q'; 100_000]);
    assert_eq!(s.requests().len(), 2);
    assert_eq!(s.requests()[0].header("accept-encoding"), Some("gzip"));
}

#[test]
fn a_gzip_body_cut_by_a_reset_is_retried() {
    let packed = gzip(
        &(0..200_000u32)
            .map(|i| (i * 7 % 256) as u8)
            .collect::<Vec<_>>(),
    );
    let s = Server::start(vec![
        Step::ResetMidBody {
            declared: packed.len(),
            body: packed[..packed.len() / 3].to_vec(),
            pause: Duration::from_millis(50),
        },
        Step::Respond {
            status: 200,
            headers: vec![("Content-Encoding".into(), "gzip".into())],
            body: packed,
        },
    ])
    .unwrap();
    let (out, _) = run_fast(&["--compressed"], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2, "{}", stderr(&out));
    assert_eq!(out.stdout.len(), 200_000);
}

#[test]
fn a_complete_body_that_does_not_decode_is_a_protocol_error() {
    let s = Server::start(vec![Step::Respond {
        status: 200,
        headers: vec![("Content-Encoding".into(), "gzip".into())],
        body: b"not gzip at all".to_vec(),
    }])
    .unwrap();
    let (out, _) = run_fast(&["--compressed"], &s.url("/"));
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
    assert!(out.stdout.is_empty());
}

/// Runs against a server that accepts and never answers; returns the wall time.
fn hang_for(deadline: &str) -> Duration {
    let s = Server::start(vec![Step::Hang]).unwrap();
    let (out, took) = run(&["--deadline", deadline, &s.url("/")]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    took
}

#[test]
fn the_deadline_holds_at_every_length() {
    // The socket timeouts that used to keep it run on Linux's timer wheel, whose slots are
    // 2 s wide for timeouts of 16 s to 2 min: such a deadline ended up to 2 s late, 1 s on
    // average. Three of them all within the bound by chance is rare (under 1%); the bound is
    // still wide enough for a loaded machine.
    let lengths = [
        ("1s", 1.0),
        ("5s", 5.0),
        ("17s", 17.0),
        ("23s", 23.0),
        ("30s", 30.0),
    ];
    let handles: Vec<_> = lengths
        .iter()
        .map(|&(d, secs)| std::thread::spawn(move || (d, secs, hang_for(d))))
        .collect();
    for h in handles {
        let (d, secs, took) = h.join().unwrap();
        let took = took.as_secs_f64();
        assert!(took >= secs, "--deadline {d} ended early, at {took:.3}s");
        assert!(took < secs + 0.25, "--deadline {d} ended at {took:.3}s");
    }
}

/// Starts the binary with stdout to a pipe that nobody reads.
fn run_unread(args: &[&str], tmp: &std::path::Path) -> (std::process::ExitStatus, Duration) {
    let t = Instant::now();
    let mut child = std_command()
        .args(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Hold the read end without reading, until the run ends.
    let _unread = child.stdout.take();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (status, t.elapsed())
}

#[test]
fn a_reader_that_stops_reading_does_not_hold_the_run() {
    for extra in [&[][..], &["-N"][..]] {
        let s = Server::start(vec![Step::Generate { len: 16 << 20 }]).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let url = s.url("/big");
        let mut args = extra.to_vec();
        args.extend(["--deadline", "2s", url.as_str()]);
        let (status, took) = run_unread(&args, tmp.path());
        assert_eq!(status.code(), Some(5), "{extra:?}");
        assert!(took < Duration::from_millis(2500), "{extra:?}: {took:?}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}

#[test]
fn a_fifo_whose_reader_never_reads_does_not_hold_the_run() {
    let s = Server::start(vec![Step::Generate { len: 16 << 20 }]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path we own.
    assert_eq!(unsafe { libc::mkfifo(made.as_ptr(), 0o600) }, 0);
    let reader_path = fifo.clone();
    // The reader opens the FIFO and never reads.
    let reader = std::thread::spawn(move || {
        let f = std::fs::File::open(reader_path).unwrap();
        std::thread::sleep(Duration::from_secs(4));
        drop(f);
    });
    let tmp = tempfile::tempdir().unwrap();
    let url = s.url("/big");
    let (status, took) = run_unread(
        &["-o", fifo.to_str().unwrap(), "--deadline", "2s", &url],
        tmp.path(),
    );
    assert_eq!(status.code(), Some(5));
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    reader.join().unwrap();
}

#[test]
fn a_large_spool_cut_by_the_deadline_does_not_delay_the_exit() {
    // 600 MB arrive, then the server stalls; freeing the spool must not hold the exit.
    let s = Server::start(vec![Step::Stall {
        body: vec![b's'; 600 << 20],
        declared: 700 << 20,
        pause: Duration::from_secs(60),
    }])
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let url = s.url("/big");
    let (status, took) = run_unread(&["--deadline", "6s", &url], tmp.path());
    assert_eq!(status.code(), Some(5));
    assert!(took < Duration::from_millis(6400), "{took:?}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn a_proxy_that_refuses_is_named_with_its_password_masked() {
    let dead = closed_port_url();
    let proxy = dead.replace("http://", "http://u:proxy-SECRET@");
    let (out, _) = run_fast(&["--attempts", "1", "-x", &proxy], "http://example.test/");
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("through the proxy"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("proxy-SECRET"), "{}", stderr(&out));
}

fn fifo_in(dir: &std::path::Path) -> String {
    let fifo = dir.join("fifo");
    let made = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path we own.
    assert_eq!(unsafe { libc::mkfifo(made.as_ptr(), 0o600) }, 0);
    fifo.to_str().unwrap().to_string()
}

#[test]
fn a_file_argument_that_blocks_does_not_hold_the_run() {
    // A FIFO nobody writes (read before the first attempt), or nobody reads (-D, after it).
    for flag in ["-w", "--cacert", "-D"] {
        let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo_in(dir.path());
        let value = if flag == "-w" {
            format!("@{fifo}")
        } else {
            fifo
        };
        let url = s.url("/");
        let (out, took) = run(&[
            "--deadline",
            "1s",
            "--log-format",
            "json",
            "-o",
            "/dev/null",
            flag,
            &value,
            &url,
        ]);
        assert_eq!(code(&out), 5, "{flag}: {}", stderr(&out));
        assert!(took < Duration::from_millis(1500), "{flag}: {took:?}");
        assert_eq!(
            json_lines(&out, "summary").len(),
            1,
            "{flag}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn the_deadline_still_holds_after_the_file_is_put_in_place() {
    // -o is renamed into place, then -D waits on a FIFO nobody opens.
    let s = Server::start(vec![Step::status(200, "the body")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo_in(dir.path());
    let file = dir.path().join("out.bin");
    let url = s.url("/");
    let (out, took) = run(&[
        "--deadline",
        "1s",
        "--log-format",
        "json",
        "-o",
        file.to_str().unwrap(),
        "-D",
        &fifo,
        &url,
    ]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(took < Duration::from_millis(1500), "{took:?}");
    assert_eq!(json_lines(&out, "summary").len(), 1, "{}", stderr(&out));
    // What was put in place is the final body, whole.
    assert_eq!(std::fs::read(&file).unwrap(), b"the body");
}

#[test]
fn an_endless_file_argument_is_refused_in_bounded_memory() {
    for (flag, value) in [("-w", "@/dev/zero"), ("--cacert", "/dev/zero")] {
        let (out, _) = run(&["--deadline", "5s", flag, value, "http://127.0.0.1:9/"]);
        assert_eq!(code(&out), 2, "{flag}: {}", stderr(&out));
        assert!(stderr(&out).contains("larger than"), "{}", stderr(&out));
    }
}

#[test]
fn a_proxy_that_never_answers_connect_lets_a_post_be_retried() {
    // The tunnel was never opened: the target cannot have seen the request.
    let silent = crate::silent::Silent::start();
    let proxy = format!("http://127.0.0.1:{}", silent.port);
    let (out, _) = run_fast(
        &[
            "-x",
            &proxy,
            "--stall-timeout",
            "300ms",
            "--attempts",
            "3",
            "POST",
            "-d",
            "x",
        ],
        "http://example.test/",
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(silent.connections(), 3);
}

#[test]
fn an_empty_body_labelled_gzip_is_an_empty_body() {
    let s = Server::start(vec![Step::Respond {
        status: 200,
        headers: vec![("Content-Encoding".into(), "gzip".into())],
        body: Vec::new(),
    }])
    .unwrap();
    let (out, _) = run_fast(&["--compressed"], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
}

#[test]
fn kept_bytes_survive_an_error_answer_to_the_range_request() {
    let whole: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
    let resource = |cut| Step::Resource {
        body: whole.clone(),
        etag: "\"k1\"".into(),
        cut_after: cut,
    };
    let s = Server::start(vec![
        resource(Some(80_000)),
        Step::status(503, "busy"),
        resource(None),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.bin");
    let (out, _) = run_fast(&["-o", file.to_str().unwrap()], &s.url("/f"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(std::fs::read(&file).unwrap() == whole);
    let reqs = s.requests();
    assert_eq!(reqs[1].header("range"), Some("bytes=80000-"));
    assert_eq!(
        reqs[2].header("range"),
        Some("bytes=80000-"),
        "still kept after the 503"
    );
}
