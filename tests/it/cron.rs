//! The cron flags against the scripted server: `-C -` resumes a partial `-o` file only
//! from its size and exactly to its end (else the file stays as it was, exit 6), a 416 for
//! a whole file is a success; `--etag-save` then `--etag-compare` make a 304 a success that
//! leaves the file; `-z` with a date and with a file; `-R`; `-b` strings and cookie files
//! (domain and path matched, not sent to another origin after a redirect); bad input sends
//! nothing. And where they meet curl's everyday use, each compared with curl 7.88 on the
//! same input: `-C -` and `-R` with `-O` (and `--output-dir`); `-w` reports 304 for a 200
//! that showed the `-z` condition unmet; the first run of `-z FILE -o FILE` (no FILE yet)
//! warns and downloads without a condition; a `-w @FILE` has its line ends dropped;
//! `%{redirect_url}`, `%{size_upload}`, `%{referer}`; a POST or PUT without a body carries
//! no chunked framing (checked on the bytes that arrive at a raw socket).

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, SystemTime};

fn resource(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

#[test]
fn continue_at_resumes_a_partial_file_from_its_size() {
    let whole = resource(200_000);
    let range = "bytes 70000-199999/200000";
    let srv = Server::start(vec![Step::with_headers(
        206,
        &[("Content-Range", range)],
        &whole[70_000..],
    )])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.bin");
    std::fs::write(&path, &whole[..70_000]).unwrap();
    let flags = ["-C", "-", "-o", s(&path), "-w", "%{size_download}"];
    let (out, _) = run_fast(&flags, &srv.url("/data"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        out.stdout, b"130000",
        "the bytes received, as curl counts them"
    );
    assert!(
        std::fs::read(&path).unwrap() == whole,
        "the resumed file differs"
    );
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].header("range"), Some("bytes=70000-"));
    assert_eq!(reqs[0].header("if-range"), None, "no validator is known");
    assert!(
        stderr(&out).contains("resumed at byte 70000"),
        "{}",
        stderr(&out)
    );
    assert_eq!(names_in(dir.path()), ["data.bin"]);
}

#[test]
fn continue_at_with_curl_s_long_name_and_a_missing_file_downloads_it_whole() {
    let srv = Server::start(vec![Step::status(200, "all of it")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.txt");
    let (out, _) = run_fast(&["--continue-at", "-", "-o", s(&path)], &srv.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "all of it");
    assert_eq!(srv.requests()[0].header("range"), None);
}

/// Runs `-C -` on a file holding `kept` against `script`; returns the output, the file's
/// bytes after the run, the requests and what is left in the folder.
fn resume_against(
    kept: &[u8],
    script: Vec<Step>,
) -> (std::process::Output, Vec<u8>, usize, Vec<String>) {
    let srv = Server::start(script).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, kept).unwrap();
    let (out, _) = run_fast(
        &["-C", "-", "-o", s(&path), "--attempts", "3"],
        &srv.url("/f"),
    );
    let after = std::fs::read(&path).unwrap();
    (out, after, srv.requests().len(), names_in(dir.path()))
}

#[test]
fn a_server_that_cannot_resume_leaves_the_file_and_exits_6() {
    let cases = [
        ("a 200", Step::with_headers(200, &[], b"0123456789")),
        (
            "a 206 at another offset",
            Step::with_headers(206, &[("Content-Range", "bytes 3-9/10")], b"3456789"),
        ),
        (
            "a 206 that stops short of the end",
            Step::with_headers(206, &[("Content-Range", "bytes 5-8/10")], b"5678"),
        ),
    ];
    for (what, step) in cases {
        let (out, after, requests, left) = resume_against(b"01234", vec![step]);
        assert_eq!(code(&out), 6, "{what}: {}", stderr(&out));
        assert_eq!(after, b"01234", "{what}: the file changed");
        assert_eq!(requests, 1, "{what}: retried");
        assert!(
            stderr(&out).contains("cannot resume"),
            "{what}: {}",
            stderr(&out)
        );
        assert_eq!(left, ["f"], "{what}");
    }
}

#[test]
fn a_206_cut_short_is_asked_again_and_never_spliced() {
    let mut cut = b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 5-9/10\r\nContent-Length: 5\r\nConnection: close\r\n\r\n".to_vec();
    cut.extend_from_slice(b"56");
    let good = Step::with_headers(206, &[("Content-Range", "bytes 5-9/10")], b"56789");
    let (out, after, requests, left) = resume_against(b"01234", vec![Step::Raw(cut), good]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(after, b"0123456789");
    assert_eq!(requests, 2);
    assert_eq!(left, ["f"]);
}

#[test]
fn a_416_for_a_whole_file_is_a_success_that_leaves_it() {
    let whole = Step::with_headers(416, &[("Content-Range", "bytes */5")], b"not satisfiable");
    let (out, after, _, left) = resume_against(b"01234", vec![whole]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(after, b"01234");
    assert!(stderr(&out).contains("already whole"), "{}", stderr(&out));
    assert_eq!(left, ["f"]);
    // A file longer than the resource is no whole file: the 416 is an error answer.
    let shorter = Step::with_headers(416, &[("Content-Range", "bytes */4")], b"");
    let (out, after, _, _) = resume_against(b"01234", vec![shorter]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(after, b"01234");
}

#[test]
fn etag_save_then_compare_makes_a_304_leave_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (etag, data) = (dir.path().join("etag"), dir.path().join("data.csv"));
    let flags = [
        "--etag-compare",
        s(&etag),
        "--etag-save",
        s(&etag),
        "-o",
        s(&data),
    ];
    let first = Server::start(vec![Step::with_headers(
        200,
        &[("ETag", "\"v1\"")],
        b"a,b\n1,2\n",
    )])
    .unwrap();
    let (out, _) = run_fast(&flags, &first.url("/data.csv"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        first.requests()[0].header("if-none-match"),
        None,
        "no ETag saved yet"
    );
    assert_eq!(std::fs::read_to_string(&etag).unwrap(), "\"v1\"\n");
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "a,b\n1,2\n");
    // The 304 names another ETag: the saved one still describes the file kept.
    let second = Server::start(vec![Step::with_headers(304, &[("ETag", "\"v2\"")], b"")]).unwrap();
    let (out, _) = run_fast(&flags, &second.url("/data.csv"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(second.requests()[0].header("if-none-match"), Some("\"v1\""));
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "a,b\n1,2\n");
    assert_eq!(std::fs::read_to_string(&etag).unwrap(), "\"v1\"\n");
    // A changed resource is fetched and its ETag saved.
    let third = Server::start(vec![Step::with_headers(
        200,
        &[("ETag", "\"v3\"")],
        b"new\n",
    )])
    .unwrap();
    let (out, _) = run_fast(&flags, &third.url("/data.csv"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "new\n");
    assert_eq!(std::fs::read_to_string(&etag).unwrap(), "\"v3\"\n");
    assert_eq!(names_in(dir.path()), ["data.csv", "etag"]);
}

#[test]
fn a_failed_run_does_not_save_the_etag() {
    let dir = tempfile::tempdir().unwrap();
    let etag = dir.path().join("etag");
    std::fs::write(&etag, "\"old\"\n").unwrap();
    let srv = Server::start(vec![Step::with_headers(404, &[("ETag", "\"new\"")], b"")]).unwrap();
    let (out, _) = run_fast(&["--etag-save", s(&etag), "-o", "/dev/null"], &srv.url("/"));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&etag).unwrap(), "\"old\"\n");
}

#[test]
fn time_cond_sends_a_date_or_a_file_s_time() {
    let dir = tempfile::tempdir().unwrap();
    let stamp = dir.path().join("stamp");
    std::fs::write(&stamp, "").unwrap();
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_630_498_680);
    std::fs::File::options()
        .write(true)
        .open(&stamp)
        .unwrap()
        .set_modified(when)
        .unwrap();
    let cases = [
        (
            "Wed 01 Sep 2021 12:18:00",
            "if-modified-since",
            "Wed, 01 Sep 2021 12:18:00 GMT",
        ),
        (
            "20210901",
            "if-modified-since",
            "Wed, 01 Sep 2021 00:00:00 GMT",
        ),
        (
            "-2021-09-01",
            "if-unmodified-since",
            "Wed, 01 Sep 2021 00:00:00 GMT",
        ),
        (
            s(&stamp),
            "if-modified-since",
            "Wed, 01 Sep 2021 12:18:00 GMT",
        ),
    ];
    for (arg, name, want) in cases {
        let srv = Server::start(vec![Step::with_headers(304, &[], b"")]).unwrap();
        let (out, _) = run_fast(&["-o", "/dev/null", "-z", arg], &srv.url("/"));
        assert_eq!(code(&out), 0, "{arg}: {}", stderr(&out));
        assert_eq!(srv.requests()[0].header(name), Some(want), "{arg}");
    }
}

#[test]
fn a_200_older_than_the_time_condition_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, "kept").unwrap();
    let lm = ("Last-Modified", "Wed, 01 Sep 2021 12:18:00 GMT");
    let srv = Server::start(vec![Step::with_headers(
        200,
        &[lm],
        b"ignored the condition",
    )])
    .unwrap();
    let (out, _) = run_fast(&["-o", s(&data), "-z", "1 Sep 2022"], &srv.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "kept");
    assert_eq!(names_in(dir.path()), ["data"]);
}

#[test]
fn remote_time_sets_the_file_s_modification_time() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let lm = ("Last-Modified", "Wed, 01 Sep 2021 12:18:00 GMT");
    let srv = Server::start(vec![Step::with_headers(200, &[lm], b"body")]).unwrap();
    let (out, _) = run_fast(&["-R", "-o", s(&data)], &srv.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mtime = std::fs::metadata(&data).unwrap().modified().unwrap();
    assert_eq!(
        mtime,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_630_498_680)
    );
}

#[test]
fn cookies_from_a_string_and_from_a_file_where_they_match() {
    let dir = tempfile::tempdir().unwrap();
    let jar = dir.path().join("cookies.txt");
    std::fs::write(
        &jar,
        "# Netscape HTTP Cookie File\n\
         127.0.0.1\tFALSE\t/\tFALSE\t0\tsess\tabc\n\
         127.0.0.1\tFALSE\t/api\tFALSE\t0\tapi\tv1\n\
         127.0.0.1\tFALSE\t/other\tFALSE\t0\tother\tno\n\
         127.0.0.1\tFALSE\t/\tTRUE\t0\tsecure\tno\n\
         127.0.0.1\tFALSE\t/\tFALSE\t1000\texpired\tno\n\
         example.test\tTRUE\t/\tFALSE\t0\telsewhere\tno\n",
    )
    .unwrap();
    let srv = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let (out, _) = run_fast(
        &["-o", "/dev/null", "-b", s(&jar), "-b", "a=1; b=2"],
        &srv.url("/api/list"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (out, _) = run_fast(&["-o", "/dev/null", "-b", "only=this"], &srv.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = srv.requests();
    assert_eq!(reqs[0].header("cookie"), Some("api=v1; sess=abc; a=1; b=2"));
    assert_eq!(reqs[1].header("cookie"), Some("only=this"));
}

#[test]
fn cookies_are_masked_and_not_sent_to_another_origin() {
    let other = Server::start(vec![Step::status(200, "there")]).unwrap();
    let first = Server::start(vec![Step::with_headers(
        302,
        &[("Location", &other.url("/x"))],
        b"",
    )])
    .unwrap();
    let (out, _) = run_fast(
        &["-v", "-L", "-o", "/dev/null", "-b", "sid=s3cr3t-cookie"],
        &first.url("/"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        first.requests()[0].header("cookie"),
        Some("sid=s3cr3t-cookie")
    );
    assert_eq!(other.requests()[0].header("cookie"), None);
    assert!(!stderr(&out).contains("s3cr3t"), "{}", stderr(&out));
}

#[test]
fn bad_input_is_a_usage_error_that_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "01234").unwrap();
    let missing = dir.path().join("missing");
    let f = s(&file);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["-C", "5", "-o", f], "only '-C -'"),
        (vec!["-C", "-"], "give -o FILE"),
        (vec!["-C", "-", "-o", "-"], "give -o FILE"),
        (vec!["-C", "-", "-i", "-o", f], "-i or -I"),
        (vec!["-C", "-", "-o", "/dev/null"], "not one"),
        (vec!["-C", "-", "-H", "Range: bytes=0-", "-o", f], "Range"),
        (vec!["--etag-compare", s(&missing)], "--etag-save"),
        (vec!["--etag-save", "-"], "file name"),
        (vec!["-z", ""], "-z needs a date or a file name"),
        (vec!["-z", "=20210901"], "-z =DATE"),
        (vec!["-b", s(&missing)], "no such file"),
        (vec!["-b", "-"], "stdin"),
        (vec!["-b", "sid=s3cr3t\r\nX-Evil: 1"], "control character"),
        (vec!["-c", "jar.txt"], "not stored"),
        (vec!["-R"], "give -o FILE"),
    ];
    let srv = Server::start(vec![Step::status(200, "sent")]).unwrap();
    for (args, says) in cases {
        let (out, _) = run_fast(&args, &srv.url("/"));
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.contains("error:")).count(),
            1,
            "{err}"
        );
        assert!(!err.contains("s3cr3t"), "{err}");
    }
    assert!(srv.requests().is_empty(), "a usage error sent a request");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "01234");
}

#[test]
fn a_206_longer_than_its_range_cannot_resume_and_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "abc").unwrap();
    let raw = b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 3-9/10\r\n\
                Content-Length: 10\r\nConnection: close\r\n\r\ndefghijXYZ"
        .to_vec();
    let s = Server::start(vec![Step::Raw(raw)]).unwrap();
    let (out, _) = run_fast(&["-C", "-", "-o", file.to_str().unwrap()], &s.url("/"));
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(
        s.requests().len(),
        1,
        "not retried: asking again changes nothing"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"abc");
}

#[test]
fn an_o_name_of_a_dash_is_refused_and_r_without_a_date_says_so() {
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let (out, _) = run(&["-O", &s.url("/d/-")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("ends in '-'"), "{}", stderr(&out));
    assert_eq!(s.requests().len(), 0);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    let (out, _) = run(&["-R", "-o", file.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("-R: the response has no single Last-Modified"),
        "{}",
        stderr(&out)
    );
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = std_command();
    cmd.current_dir(dir).args(args).args(FAST);
    cmd.output().expect("the binary runs")
}

const LM: (&str, &str) = ("Last-Modified", "Wed, 01 Sep 2021 12:18:00 GMT");

#[test]
fn continue_at_resumes_the_file_o_names_in_the_output_dir_too() {
    for in_dir in [false, true] {
        let srv = Server::start(vec![Step::with_headers(
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
        assert_eq!(names_in(&folder), ["f.bin"], "no temporary file left");
    }
}

#[test]
fn remote_time_takes_o_s_file_and_stdout_is_still_refused() {
    let srv = Server::start(vec![Step::with_headers(200, &[LM], b"body")]).unwrap();
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
    let srv = Server::start(vec![Step::with_headers(
        200,
        &[LM],
        b"ignored the condition",
    )])
    .unwrap();
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
    let srv = Server::start(vec![Step::with_headers(200, &[LM], b"new")]).unwrap();
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
    let srv = Server::start(vec![
        Step::with_headers(200, &[LM], b"a,b\n"),
        Step::with_headers(304, &[], b""),
    ])
    .unwrap();
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
    let srv = Server::start(vec![Step::with_headers(200, &[], b"x")]).unwrap();
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
        let srv = Server::start(vec![Step::with_headers(200, &[], b"b")]).unwrap();
        let fmt = dir.path().join(format!("fmt{i}"));
        std::fs::write(&fmt, text).unwrap();
        let at = format!("@{}", s(&fmt));
        let (out, _) = run_fast(&["-s", "-o", "/dev/null", "-w", &at], &srv.url("/"));
        assert_eq!(code(&out), 0, "{text:?}: {}", stderr(&out));
        assert_eq!(out.stdout, *want, "{text:?}");
    }
    let srv = Server::start(vec![Step::with_headers(200, &[], b"b")]).unwrap();
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
        Step::with_headers(302, &[("Location", "/next?a=1")], b""),
        Step::with_headers(302, &[("Location", "/next?a=1")], b""),
        Step::with_headers(200, &[], b"done"),
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

/// `-C -` with the file's ETag (`--etag-compare`, as recipe 10 keeps it) sends it as
/// `If-Range`: a server whose copy changed sends it whole (200), which replaces the file,
/// never appended to it; an unchanged one sends the rest (206; this server does not
/// evaluate If-None-Match, which nginx answers first with a 304). Without it, a complete
/// file of yesterday's version got today's tail appended, exit 0.
#[test]
fn continue_at_with_the_file_s_etag_never_appends_another_version() {
    let (v1, v2) = (
        resource(1_000),
        resource(1_500).into_iter().rev().collect::<Vec<u8>>(),
    );
    let cases: [(&str, &[u8], &str, usize); 2] = [
        ("changed since", &v1, "\"v1\"", 200),
        ("a part of the same version", &v2[..700], "\"v2\"", 206),
    ];
    for (case, kept, tag, status) in cases {
        let srv = Server::start(vec![Step::Resource {
            body: v2.clone(),
            etag: "\"v2\"".into(),
            cut_after: None,
        }])
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (etag, data) = (dir.path().join("etag"), dir.path().join("data.bin"));
        std::fs::write(&data, kept).unwrap();
        std::fs::write(&etag, format!("{tag}\n")).unwrap();
        let flags = [
            "-C",
            "-",
            "--etag-compare",
            s(&etag),
            "--etag-save",
            s(&etag),
            "-o",
            s(&data),
            "-w",
            "%{http_code}",
        ];
        let (out, _) = run_fast(&flags, &srv.url("/data.bin"));
        let err = stderr(&out);
        assert_eq!(code(&out), 0, "{case}: {err}");
        assert_eq!(out.stdout, status.to_string().as_bytes(), "{case}: {err}");
        assert!(
            std::fs::read(&data).unwrap() == v2,
            "{case}: the file is not v2"
        );
        assert_eq!(
            std::fs::read_to_string(&etag).unwrap(),
            "\"v2\"\n",
            "{case}"
        );
        let reqs = srv.requests();
        assert_eq!(reqs.len(), 1, "{case}");
        let asked = format!("bytes={}-", kept.len());
        assert_eq!(reqs[0].header("range"), Some(asked.as_str()), "{case}");
        assert_eq!(reqs[0].header("if-range"), Some(tag), "{case}");
        assert_eq!(reqs[0].header("if-none-match"), Some(tag), "{case}");
        assert_eq!(names_in(dir.path()), ["data.bin", "etag"], "{case}");
    }
}
