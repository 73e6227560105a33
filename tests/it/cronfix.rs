//! Where the cron flags met curl's everyday use, each compared with curl 7.88 on the same
//! input: `-C -` and `-R` with `-O` (and `--output-dir`) name the file to resume; `-w`
//! reports 304 for a 200 that showed the `-z` condition unmet; the first run of `-z FILE
//! -o FILE` (no FILE yet) warns and downloads without a condition; a `-w @FILE` has its
//! line ends dropped; `%{redirect_url}`, `%{size_upload}`, `%{referer}` and the cheap
//! variables of curl's `%{json}`; a POST or PUT without a body carries no chunked framing
//! (checked on the bytes that arrive at a raw socket).

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

fn answer(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Step {
    Step::Respond {
        status,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: body.to_vec(),
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = std_command();
    cmd.current_dir(dir).args(args).args(FAST);
    cmd.output().expect("the binary runs")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const LM: (&str, &str) = ("Last-Modified", "Wed, 01 Sep 2021 12:18:00 GMT");

#[test]
fn continue_at_resumes_the_file_o_names_in_the_output_dir_too() {
    for in_dir in [false, true] {
        let srv = Server::start(vec![answer(
            206,
            &[("Content-Range", "bytes 3-9/10")],
            b"3456789",
        )])
        .unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let folder = if in_dir {
            std::fs::create_dir(cwd.path().join("d")).unwrap();
            cwd.path().join("d")
        } else {
            cwd.path().to_path_buf()
        };
        std::fs::write(folder.join("f.bin"), "012").unwrap();
        let mut args = vec!["-s", "-C", "-", "-O"];
        if in_dir {
            args.extend(["--output-dir", "d"]);
        }
        let url = srv.url("/f.bin");
        args.push(&url);
        let out = run_in(cwd.path(), &args);
        assert_eq!(code(&out), 0, "{in_dir}: {}", stderr(&out));
        assert_eq!(
            std::fs::read_to_string(folder.join("f.bin")).unwrap(),
            "0123456789"
        );
        assert_eq!(srv.requests()[0].header("range"), Some("bytes=3-"));
        assert_eq!(names(&folder), ["f.bin"], "no temporary file left");
    }
}

#[test]
fn remote_time_takes_o_s_file_and_stdout_is_still_refused() {
    let srv = Server::start(vec![answer(200, &[LM], b"body")]).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = run_in(cwd.path(), &["-s", "-R", "-O", &srv.url("/r.txt")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mtime = std::fs::metadata(cwd.path().join("r.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(mtime, httpdate::parse_http_date(LM.1).unwrap());
    for args in [vec!["-C", "-"], vec!["-C", "-", "-o", "-"], vec!["-R"]] {
        let (out, _) = run_fast(&args, &srv.url("/r.txt"));
        assert_eq!(code(&out), 2, "{args:?}");
        assert!(
            stderr(&out).contains("give -o FILE or -O"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(srv.requests().len(), 1, "a usage error sent nothing");
}

#[test]
fn an_unmet_time_condition_is_reported_as_304_as_curl_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let head = dir.path().join("head");
    std::fs::write(&data, "kept").unwrap();
    let srv = Server::start(vec![answer(200, &[LM], b"ignored the condition")]).unwrap();
    let w = "%{http_code} %{response_code} %{size_download} %{json}";
    let flags = [
        "-s",
        "-o",
        s(&data),
        "-D",
        s(&head),
        "-z",
        "2 Sep 2021",
        "-w",
        w,
    ];
    let (out, _) = run_fast(&flags, &srv.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let (codes, json) = text.split_at(text.find('{').unwrap());
    assert_eq!(codes, "304 304 0 ");
    let j: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(
        (j["http_code"].clone(), j["response_code"].clone()),
        (304.into(), 304.into())
    );
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "kept");
    // -D shows the head as it came, as curl's does.
    let dumped = std::fs::read_to_string(&head).unwrap();
    assert!(dumped.starts_with("HTTP/1.1 200 OK\r\n"), "{dumped}");
    // A condition that was met is not touched: the 200 is delivered and reported.
    let srv = Server::start(vec![answer(200, &[LM], b"new")]).unwrap();
    let flags = [
        "-s",
        "-o",
        s(&data),
        "-z",
        "1 Sep 2021",
        "-w",
        "%{http_code}",
    ];
    let (out, _) = run_fast(&flags, &srv.url("/"));
    assert_eq!(out.stdout, b"200");
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "new");
}

#[test]
fn the_first_run_of_the_cron_idiom_downloads_without_a_condition() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.csv");
    let srv = Server::start(vec![answer(200, &[LM], b"a,b\n"), answer(304, &[], b"")]).unwrap();
    let flags = ["-z", s(&data), "-o", s(&data)];
    let (out, _) = run_fast(&flags, &srv.url("/data.csv"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning:") && err.contains("neither a date nor an existing file"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "a,b\n");
    assert_eq!(srv.requests()[0].header("if-modified-since"), None);
    // The next run sends the file's time, and the 304 leaves the file.
    let (out, _) = run_fast(
        &["-s", "-z", s(&data), "-o", s(&data)],
        &srv.url("/data.csv"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(srv.requests()[1].header("if-modified-since").is_some());
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "a,b\n");
    // -s hides the warning, as curl's -s does; a text that is no date at all is the same.
    let srv = Server::start(vec![answer(200, &[], b"x")]).unwrap();
    let (out, _) = run_fast(&["-s", "-z", "next tuesday"], &srv.url("/"));
    assert_eq!((code(&out), out.stdout.as_slice()), (0, &b"x"[..]));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    // Nothing after the sign is still a usage error, nothing sent.
    for bad in ["", "-", "+"] {
        let (out, _) = run_fast(&["-z", bad], &srv.url("/"));
        assert_eq!(code(&out), 2, "{bad:?}: {}", stderr(&out));
    }
    assert_eq!(srv.requests().len(), 1);
}

#[test]
fn a_write_out_file_has_its_line_ends_dropped_as_curl_does() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8]); 6] = [
        ("%{http_code} %{size_download}\\n\n", b"200 1\n"),
        ("%{http_code}\\n\n\n", b"200\n"),
        ("%{http_code}\r\n", b"200"),
        ("%{http_code}  \n", b"200  "),
        ("%{http_code}\nX\n", b"200X"),
        ("A\rB\nC", b"AC"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let srv = Server::start(vec![answer(200, &[], b"b")]).unwrap();
        let fmt = dir.path().join(format!("fmt{i}"));
        std::fs::write(&fmt, text).unwrap();
        let at = format!("@{}", s(&fmt));
        let (out, _) = run_fast(&["-s", "-o", "/dev/null", "-w", &at], &srv.url("/"));
        assert_eq!(code(&out), 0, "{text:?}: {}", stderr(&out));
        assert_eq!(out.stdout, *want, "{text:?}");
    }
    let srv = Server::start(vec![answer(200, &[], b"b")]).unwrap();
    let mut args = vec!["-s", "-o", "/dev/null", "-w", "@-"];
    args.extend(FAST);
    let url = srv.url("/");
    args.push(&url);
    let (out, _) = run_with_stdin(&args, Some(b"%{http_code}\n"));
    assert_eq!(out.stdout, b"200", "stdin is read the same way");
}

#[test]
fn redirect_url_size_upload_and_referer_as_curl_names_them() {
    let srv = Server::start(vec![
        answer(302, &[("Location", "/next?a=1")], b""),
        answer(302, &[("Location", "/next?a=1")], b""),
        answer(200, &[], b"done"),
    ])
    .unwrap();
    let w = "%{redirect_url}|%{size_upload}|%{referer}|%{size_header}|%{urlnum}\\n";
    let base = srv.url("/a/b");
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head");
    let (out, _) = run_fast(&["-s", "-D", s(&head), "-w", w], &base);
    let size = std::fs::metadata(&head).unwrap().len();
    let first = format!("{}|0||{size}|0\n", srv.url("/next?a=1"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), first);
    let flags = [
        "-s",
        "-e",
        "http://ref.example/",
        "-d",
        "abcdef",
        "--retry-unsafe",
    ];
    let (out, _) = run_fast(&[&flags[..], &["-w", "%{json}"]].concat(), &base);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["redirect_url"], srv.url("/next?a=1"));
    assert_eq!(j["size_upload"], 6);
    assert_eq!(j["referer"], "http://ref.example/");
    assert_eq!(j["urlnum"], 0);
    assert!(
        j["speed_upload"].is_u64() && j["speed_download"].is_u64(),
        "{j}"
    );
    assert!(j["size_header"].is_u64(), "{j}");
    // After the redirect is followed there is none to report.
    let (out, _) = run_fast(&["-s", "-L", "-w", "[%{redirect_url}]%{json}"], &base);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("done[]{"), "{text}");
    let j: serde_json::Value = serde_json::from_str(&text["done[]".len()..]).unwrap();
    assert_eq!(j["redirect_url"], serde_json::Value::Null);
    assert_eq!(j["referer"], serde_json::Value::Null);
    assert_eq!(j["size_upload"], 0);
}

/// A server that records the exact bytes of one request (its head, and whatever follows
/// within a moment) and answers 200.
fn raw_request(args: &[&str]) -> (Output, Vec<u8>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/p", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = c.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        c.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        while let Ok(n) = c.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        got
    });
    let (out, _) = run_fast(args, &url);
    (out, server.join().unwrap())
}

#[test]
fn a_post_or_put_without_a_body_carries_no_chunked_framing() {
    for method in ["POST", "PUT", "PATCH", "DELETE"] {
        let (out, bytes) = raw_request(&["-s", "-X", method]);
        assert_eq!(code(&out), 0, "{method}: {}", stderr(&out));
        let text = String::from_utf8(bytes).unwrap().to_ascii_lowercase();
        assert!(
            text.starts_with(&format!("{} /p ", method.to_ascii_lowercase())),
            "{text}"
        );
        assert!(!text.contains("transfer-encoding"), "{method}: {text}");
        assert!(
            text.ends_with("\r\n\r\n"),
            "{method}: no body after the head: {text:?}"
        );
        // ureq would frame a POST, PUT or PATCH as chunked; Content-Length: 0 says there is
        // nothing (curl's -d ''). A DELETE gets neither, as curl sends it.
        let length = text.contains("\r\ncontent-length: 0\r\n");
        assert_eq!(length, method != "DELETE", "{method}: {text}");
    }
    let (_, bytes) = raw_request(&["-s", "-d", "", "-X", "POST"]);
    let text = String::from_utf8(bytes).unwrap().to_ascii_lowercase();
    assert!(text.contains("\r\ncontent-length: 0\r\n") && !text.contains("transfer-encoding"));
}
