//! `-o` and stdout: written only when complete and successful; an existing file is never
//! clobbered; a new file gets the ordinary mode and a link is followed, not replaced.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;

#[test]
fn failed_run_leaves_existing_file_untouched_and_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.csv");
    std::fs::write(&path, "previous good data").unwrap();
    let s = Server::start(vec![Step::Truncate {
        declared: 100,
        body: b"partial".to_vec(),
    }])
    .unwrap();
    let p = path.to_str().unwrap();
    let (out, _) = run_fast(&["-o", p, "--attempts", "2"], &s.url("/"));
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "previous good data"
    );
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1, "temporary files left behind");
}

#[test]
fn success_replaces_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    std::fs::write(&path, "old").unwrap();
    let s = Server::start(vec![
        Step::status(503, "error page"),
        Step::status(200, "new content"),
    ])
    .unwrap();
    let p = path.to_str().unwrap();
    let (out, _) = run_fast(&["-o", p], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new content");
    assert!(out.stdout.is_empty());
}

#[test]
fn error_status_writes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let s = Server::start(vec![Step::status(404, "not found page")]).unwrap();
    let (out, _) = run(&["-o", path.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(!path.exists());
}

#[test]
fn fail_with_body_writes_the_final_error_body() {
    let s = Server::start(vec![Step::status(404, "not found page")]).unwrap();
    let (out, _) = run(&["--fail-with-body", &s.url("/")]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(out.stdout, b"not found page");
}

#[test]
fn include_adds_the_status_line_and_headers() {
    let s = Server::start(vec![Step::status(200, "body")]).unwrap();
    let (out, _) = run(&["-i", &s.url("/")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\nbody"), "{text}");
}

#[test]
fn dev_null_works_like_any_file() {
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let (out, _) = run(&["-o", "/dev/null", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

fn resource(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn broken_download_resumes_with_range_and_if_range() {
    let body = resource(200_000);
    let etag = "\"v1\"".to_string();
    let s = Server::start(vec![
        Step::Resource {
            body: body.clone(),
            etag: etag.clone(),
            cut_after: Some(150_000),
        },
        // The resumed attempt is cut again, 20,000 bytes further.
        Step::Resource {
            body: body.clone(),
            etag: etag.clone(),
            cut_after: Some(20_000),
        },
        Step::Resource {
            body: body.clone(),
            etag: etag.clone(),
            cut_after: None,
        },
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.bin");
    let (out, _) = run_fast(&["-o", path.to_str().unwrap()], &s.url("/big"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        body,
        "resumed file differs from the source"
    );
    let reqs = s.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[1].header("range"), Some("bytes=150000-"));
    assert_eq!(reqs[2].header("range"), Some("bytes=170000-"));
    for r in &reqs[1..] {
        assert_eq!(r.header("if-range"), Some("\"v1\""));
    }
    // Each resumed attempt's line says where it resumed, the one cut again too.
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("attempt ")).collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[1].contains("resumed at byte 150000"), "{err}");
    assert!(lines[2].contains("resumed at byte 170000"), "{err}");
}

#[test]
fn changed_representation_starts_over_cleanly() {
    let old = resource(100_000);
    let new: Vec<u8> = old.iter().map(|b| b.wrapping_add(1)).collect();
    let s = Server::start(vec![
        Step::Resource {
            body: old,
            etag: "\"v1\"".into(),
            cut_after: Some(60_000),
        },
        Step::Resource {
            body: new.clone(),
            etag: "\"v2\"".into(),
            cut_after: None,
        },
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bin");
    let (out, _) = run_fast(&["-o", path.to_str().unwrap()], &s.url("/f"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        new,
        "a 200 must replace the partial bytes"
    );
    assert!(!stderr(&out).contains("resumed"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "temporary files left behind"
    );
}

#[test]
fn max_filesize_stops_with_exit_6_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let s = Server::start(vec![Step::status(200, &"x".repeat(5000))]).unwrap();
    let (out, _) = run(&[
        "--max-filesize",
        "1k",
        "-o",
        path.to_str().unwrap(),
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(!path.exists());
    assert_eq!(s.requests().len(), 1, "too large is not retried");
}

#[test]
fn no_buffer_streams_and_does_not_retry_after_bytes_escaped() {
    let s = Server::start(vec![
        Step::Truncate {
            declared: 100,
            body: b"partial".to_vec(),
        },
        Step::status(200, "whole"),
    ])
    .unwrap();
    let (out, _) = run_fast(&["--no-buffer"], &s.url("/"));
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(out.stdout, b"partial");
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn stdout_never_sees_a_failed_attempts_bytes() {
    let s = Server::start(vec![
        Step::Truncate {
            declared: 100_000,
            body: vec![b'a'; 50_000],
        },
        Step::status(200, "final"),
    ])
    .unwrap();
    let url = s.url("/");
    let mut args = vec![url.as_str()];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"final");
}

#[test]
fn a_206_that_does_not_continue_is_never_saved_as_the_file() {
    let body = resource(10_000);
    let etag = "\"v1\"".to_string();
    for (range, etag2) in [
        ("bytes 3000-9999/10000", "\"v1\""),
        ("bytes 4000-4999/10000", "\"v1\""),
        ("bytes 4000-9999/10000", "\"v2\""),
    ] {
        let (first, last) = range
            .trim_start_matches("bytes ")
            .split_once('/')
            .unwrap()
            .0
            .split_once('-')
            .unwrap();
        let (first, last): (usize, usize) = (first.parse().unwrap(), last.parse().unwrap());
        let mut wrong = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: {range}\r\nContent-Length: {}\r\nETag: {etag2}\r\nConnection: close\r\n\r\n",
            last - first + 1
        )
        .into_bytes();
        wrong.extend_from_slice(&body[first..=last]);
        let s = Server::start(vec![
            Step::Resource {
                body: body.clone(),
                etag: etag.clone(),
                cut_after: Some(4000),
            },
            Step::Raw(wrong),
            Step::Resource {
                body: body.clone(),
                etag: etag.clone(),
                cut_after: None,
            },
        ])
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        let (out, _) = run_fast(&["-o", path.to_str().unwrap()], &s.url("/f"));
        assert_eq!(code(&out), 0, "{range}: {}", stderr(&out));
        assert_eq!(
            std::fs::read(&path).unwrap(),
            body,
            "{range} {etag2}: a fragment became the file"
        );
        assert_eq!(s.requests().len(), 3, "{range}");
        assert_eq!(
            s.requests()[2].header("range"),
            None,
            "{range}: the start-over asks for everything"
        );
    }
}

#[test]
fn dev_null_after_a_broken_attempt() {
    let s = Server::start(vec![
        Step::Truncate {
            declared: 100,
            body: b"part".to_vec(),
        },
        Step::status(200, "x"),
    ])
    .unwrap();
    let (out, _) = run_fast(
        &["-o", "/dev/null", "-w", "%{http_code} %{size_download}"],
        &s.url("/"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"200 1");
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

/// stdout's body over 1 MiB is spooled in $TMPDIR: for a request that is not idempotent, a
/// $TMPDIR where no file can be made is a usage error found before the request is sent (a
/// POST would otherwise be processed, and a large answer lost with exit 1). `-o FILE` and
/// `--no-buffer` need no spool there.
#[test]
fn an_unusable_tmpdir_is_refused_before_anything_is_sent() {
    let s = Server::start(vec![Step::status(200, "made")]).unwrap();
    let url = s.url("/jobs");
    let out = command()
        .env("TMPDIR", "/nonexistent/retry-http-test")
        .args(["-d", "x", &url])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot make a temporary file in /nonexistent/retry-http-test")
            && stderr(&out).contains("TMPDIR"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.requests().len(), 0, "the request was sent");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.txt");
    let s = Server::start(vec![Step::status(200, "made"), Step::status(200, "made")]).unwrap();
    let url = s.url("/jobs");
    for args in [vec!["-o", file.to_str().unwrap()], vec!["--no-buffer"]] {
        let out = command()
            .env("TMPDIR", "/nonexistent/retry-http-test")
            .args(&args)
            .arg(&url)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"made");
}

/// A $TMPDIR where nothing can be made, as in a `FROM scratch` image with no /tmp.
const NO_TMPDIR: &str = "/nonexistent/retry-http-test";

/// A small body to stdout is held in memory: a GET needs no temporary folder, after a
/// failed attempt too, and neither do `-i`, `-D -`, `-w`, `--compressed`, `--until-body`
/// (the body read back before it is written) nor `-o /dev/null` with a condition. stdout
/// holds exactly the final body and what the flags add.
#[test]
fn a_small_body_to_stdout_needs_no_temporary_folder() {
    let gz = gzip(b"state=ready");
    let cases: Vec<(Vec<&str>, Step, &str)> = vec![
        (vec![], Step::status(200, "healthy"), "healthy"),
        (vec!["-w", "%{http_code}"], Step::status(200, "up"), "up200"),
        (
            vec!["--compressed", "--until-body", "ready", "--attempts", "3"],
            Step::Respond {
                status: 200,
                headers: vec![("Content-Encoding".into(), "gzip".into())],
                body: gz,
            },
            "state=ready",
        ),
    ];
    for (args, step, expected) in cases {
        let s = Server::start(vec![Step::status(503, "busy"), step]).unwrap();
        let out = command()
            .env("TMPDIR", NO_TMPDIR)
            .args(&args)
            .args(FAST)
            .arg(s.url("/health"))
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{args:?}");
        assert_eq!(s.requests().len(), 2, "{args:?}");
    }
    for args in [vec!["-i"], vec!["-D", "-"]] {
        let s = Server::start(vec![Step::status(503, "busy"), Step::status(200, "ok")]).unwrap();
        let out = command()
            .env("TMPDIR", NO_TMPDIR)
            .args(&args)
            .args(FAST)
            .arg(s.url("/"))
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.starts_with("HTTP/1.1 200")
                && text.ends_with("\r\n\r\nok")
                && !text.contains("503"),
            "{args:?}: {text}"
        );
    }
    let s = Server::start(vec![
        Step::status(200, "waiting"),
        Step::status(200, "done"),
    ])
    .unwrap();
    let out = command()
        .env("TMPDIR", NO_TMPDIR)
        .args(["-o", "/dev/null", "--until-body", "done", "--attempts", "3"])
        .args(FAST)
        .arg(s.url("/"))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2);
}

/// Past 1 MiB the body to stdout moves into a temporary file: where none can be made, the
/// run fails with an error that says so, and stdout stays empty; with or without a
/// Content-Length (then the file is asked for before the first byte). 1 MiB itself fits.
#[test]
fn a_large_body_to_stdout_without_a_temporary_folder_fails_clearly() {
    let mib = 1 << 20;
    let s = Server::start(vec![Step::Generate { len: mib }]).unwrap();
    let out = command()
        .env("TMPDIR", NO_TMPDIR)
        .arg(s.url("/"))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout.len() as u64, mib);

    let no_length: Vec<u8> = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
        .iter()
        .copied()
        .chain(std::iter::repeat_n(b'x', 2 << 20))
        .collect();
    for step in [Step::Generate { len: mib + 1 }, Step::Raw(no_length)] {
        let s = Server::start(vec![step]).unwrap();
        let out = command()
            .env("TMPDIR", NO_TMPDIR)
            .args(["--attempts", "1"])
            .arg(s.url("/"))
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(code(&out), 1, "{err}");
        assert!(
            err.contains("over 1 MiB") && err.contains(NO_TMPDIR) && err.contains("TMPDIR"),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "a partial body reached stdout");
    }
}

/// `/dev/null` throws away whatever is written to it, so `-o`, `-D` and the body's file may
/// all name it, as curl lets them (`curl -d @/dev/null -o /dev/null -D /dev/null URL`): it
/// is not "the same file" written twice, nor the body's file overwritten by the answer.
#[test]
fn dev_null_may_take_the_body_and_the_head_and_give_the_request_body() {
    let s = Server::start(vec![Step::status(200, "ok"), Step::status(200, "ok")]).expect("server");
    let (out, _) = run(&["-o", "/dev/null", "-D", "/dev/null", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let (out, _) = run(&["-d", "@/dev/null", "-o", "/dev/null", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2);
}
