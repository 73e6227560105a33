//! curl's body flags beyond `-d`: `--data-urlencode`, `-G`, `-F` (multipart, the same bytes
//! on every attempt), `-H @FILE` and `-K FILE`. The expected bytes were checked by hand
//! against what curl 7.88.1 sends for the same flags (the tests do not run curl).

use crate::common::*;

/// A temporary directory with the files the tests read.
fn files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a b\nc&d=é\r\n").unwrap();
    std::fs::write(dir.path().join("up.txt"), "hello\r\nworld\n").unwrap();
    std::fs::write(dir.path().join("data.bin"), b"\x00\x01bin").unwrap();
    dir
}

fn path(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

#[test]
fn data_urlencode_sends_curls_bytes_in_order_with_d() {
    let dir = files();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let f = path(&dir, "f.txt");
    let (at_file, named_file) = (format!("@{f}"), format!("m@{f}"));
    let (out, _) = run(&[
        &s.url("/"),
        "--data-urlencode",
        "a b&c=d",
        "--data-urlencode",
        "=x y",
        "-d",
        "raw=1 2",
        "--data-urlencode",
        "n=v w=z&",
        "--data-urlencode",
        &at_file,
        "--data-urlencode",
        &named_file,
        "--data-urlencode",
        "-._~!*()",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = &s.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(
        r.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    // curl 7.88.1 sends the same body for the same flags.
    let want = "a b&c=d&x+y&raw=1 2&n=v+w%3Dz%26&a+b%0Ac%26d%3D%C3%A9%0D%0A&m=a+b%0Ac%26d%3D%C3%A9%0D%0A&-._~%21%2A%28%29";
    assert_eq!(String::from_utf8_lossy(&r.body), want);
}

#[test]
fn data_urlencode_reads_stdin_once() {
    let s = Server::start(vec![Step::status(503, ""), Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    let mut args = vec![url.as_str(), "--data-urlencode", "a@-"];
    args.extend(FAST);
    let (out, _) = run_with_stdin(&args, Some(b"st din&"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    for r in reqs {
        assert_eq!(r.body, b"a=st+din%26");
    }
}

#[test]
fn get_sends_the_data_in_the_query() {
    let dir = files();
    let s = Server::start(vec![
        Step::status(200, "ok"),
        Step::status(200, "ok"),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let (out, _) = run(&[
        "-G",
        "-d",
        "a=1",
        "--data-urlencode",
        "q=a b",
        &s.url("/p?x=y"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let named_file = format!("q@{}", path(&dir, "f.txt"));
    let (out, _) = run(&["-G", "--data-urlencode", &named_file, &s.url("/p")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (out, _) = run(&["-G", "-I", "-d", "a=1", &s.url("/p")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    // curl 7.88.1 sends the same request lines.
    assert_eq!(reqs[0].method, "GET");
    assert_eq!(reqs[0].target, "/p?x=y&a=1&q=a+b");
    assert_eq!(reqs[1].target, "/p?q=a+b%0Ac%26d%3D%C3%A9%0D%0A");
    assert_eq!(reqs[2].method, "HEAD");
    assert_eq!(reqs[2].target, "/p?a=1");
    for r in &reqs {
        assert!(r.body.is_empty());
        assert_eq!(r.header("content-type"), None);
    }
}

/// The multipart body curl 7.88.1 sends for the fields of [`multipart_is_built_once`],
/// with its boundary written `BOUNDARY`.
const CURL_MULTIPART: &str = "--BOUNDARY\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n\
--BOUNDARY\r\nContent-Disposition: form-data; name=\"f\"; filename=\"up.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\nworld\n\r\n\
--BOUNDARY\r\nContent-Disposition: form-data; name=\"g\"\r\n\r\nhello\r\nworld\n\r\n\
--BOUNDARY\r\nContent-Disposition: form-data; name=\"h\"; filename=\"data.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n\x00\x01bin\r\n\
--BOUNDARY\r\nContent-Disposition: form-data; name=\"i\"; filename=\"other.dat\"\r\nContent-Type: text/x-foo\r\n\r\nhello\r\nworld\n\r\n\
--BOUNDARY\r\nContent-Disposition: form-data; name=\"k\"\r\nContent-Type: text/html\r\n\r\nv;w\r\n\
--BOUNDARY--\r\n";

#[test]
fn multipart_is_built_once() {
    let dir = files();
    let s = Server::start(vec![
        Step::status(503, ""),
        Step::status(503, ""),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let up = path(&dir, "up.txt");
    let fields = [
        "a=1".to_string(),
        format!("f=@{up}"),
        format!("g=<{up}"),
        format!("h=@{}", path(&dir, "data.bin")),
        format!("i=@{up};type=text/x-foo;filename=other.dat"),
        "k=\"v;w\";type=text/html".to_string(),
    ];
    let url = s.url("/upload");
    let mut args = vec![url.as_str()];
    for f in &fields {
        args.extend(["-F", f.as_str()]);
    }
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 3);
    let ct = reqs[0].header("content-type").unwrap().to_string();
    let boundary = ct
        .strip_prefix("multipart/form-data; boundary=")
        .expect("multipart content type");
    assert!(boundary.len() >= 40 && boundary.len() <= 70, "{boundary}");
    let want = CURL_MULTIPART.replace("BOUNDARY", boundary);
    for r in &reqs {
        assert_eq!(r.method, "POST");
        assert_eq!(r.header("content-type"), Some(ct.as_str()));
        assert_eq!(String::from_utf8_lossy(&r.body), want);
        assert_eq!(r.header("content-length"), Some(&*want.len().to_string()));
    }
}

#[test]
fn a_large_multipart_body_is_spooled_and_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.bin");
    let data: Vec<u8> = (0..1_500_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&big, &data).unwrap();
    let s = Server::start(vec![Step::status(503, ""), Step::status(200, "ok")]).unwrap();
    let field = format!("file=@{}", big.display());
    let (out, _) = run_fast(&["-F", &field], &s.url("/"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body, reqs[1].body);
    assert!(
        reqs[0]
            .body
            .windows(data.len())
            .any(|w| w == data.as_slice())
    );
}

/// Exit 2, and the server saw nothing.
fn refused(args: &[&str], stdin: Option<&[u8]>) -> String {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    let mut all = args.to_vec();
    all.push(&url);
    let (out, _) = run_with_stdin(&all, stdin);
    assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
    assert!(s.requests().is_empty(), "{args:?}: something was sent");
    assert!(out.stdout.is_empty());
    stderr(&out)
}

#[test]
fn body_flags_that_disagree_are_usage_errors() {
    for args in [
        &["-F", "a=1", "-d", "x"][..],
        &["-F", "a=1", "--data-urlencode", "x"],
        &["-F", "a=1", "-G"],
        &["-F", "a=1", "-I"],
        &["-I", "-d", "x"],
        &["-G", "--json", "{}"],
        &["-F", "noequals"],
        &["-F", "f=@a,b"],
        &["-F", "a=@-", "-F", "b=<-"],
        &["-F", "f=@/nonexistent/x"],
        &["--data-urlencode", "@/nonexistent/x"],
    ] {
        let err = refused(args, None);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_secret_in_a_bad_form_field_is_not_quoted() {
    let err = refused(&["-F", "token=abc;hunter2"], None);
    assert!(!err.contains("hunter2"), "{err}");
    assert!(err.contains("\"token\""), "{err}");
}

#[test]
fn headers_from_a_file_and_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.txt");
    std::fs::write(
        &file,
        "X-A: 1\r\n\r\n\n  X-B:  2  \nX-D;\nAccept:\nX-E: last",
    )
    .unwrap();
    let s = Server::start(vec![Step::status(200, "ok"), Step::status(200, "ok")]).unwrap();
    let arg = format!("@{}", file.display());
    let (out, _) = run(&["-H", &arg, &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (out, _) = run_with_stdin(
        &["-H", "@-", &s.url("/")],
        Some(b"Authorization: Bearer s3cr3t\n"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = s.requests();
    let r = &reqs[0];
    assert_eq!(r.header("x-a"), Some("1"));
    assert_eq!(r.header("x-b"), Some("2"));
    assert_eq!(r.header("x-d"), Some(""));
    assert_eq!(r.header("x-e"), Some("last"));
    assert_eq!(r.header("accept"), None, "'Accept:' removes it, as with -H");
    assert_eq!(reqs[1].header("authorization"), Some("Bearer s3cr3t"));
}

#[test]
fn a_bad_header_line_is_named_by_its_number_not_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.txt");
    std::fs::write(&file, "X-Good: 1\nBearer s3cr3t-token\n").unwrap();
    let arg = format!("@{}", file.display());
    let err = refused(&["-H", &arg], None);
    assert!(err.contains("line 2"), "{err}");
    assert!(!err.contains("s3cr3t"), "{err}");
    let err = refused(&["-H", "@-", "-d", "@-"], Some(b"X-A: 1\n"));
    assert!(err.contains("stdin"), "{err}");
}

#[test]
fn a_config_file_gives_flags_at_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![
        Step::status(503, ""),
        Step::status(503, ""),
        Step::status(200, "ok"),
    ])
    .unwrap();
    let cfg = dir.path().join("retry.cfg");
    let text = format!(
        "# curl's syntax\n  silent\n-H \"X-One: a b\"\nheader = \"X-Two: \\\"q\\\" \\\\ end\"\n\
         header: X-Three:plain\nurl = \"{}\"\nrequest = POST\ndata = \"x=1\"\n\
         attempts 3\nbase = 1ms\ncap: 2ms\nidempotency-key = k-1\n",
        s.url("/cfg")
    );
    std::fs::write(&cfg, text).unwrap();
    let mut cmd = command();
    // The file's flags are typed flags: they beat the environment's defaults.
    cmd.env("RETRY_HTTP_ATTEMPTS", "1");
    cmd.args(["-K", &cfg.display().to_string()]);
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "silent: {}", stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), 3);
    let r = &reqs[2];
    assert_eq!(r.method, "POST");
    assert_eq!(r.target, "/cfg");
    assert_eq!(r.header("x-one"), Some("a b"));
    assert_eq!(r.header("x-two"), Some("\"q\" \\ end"));
    assert_eq!(r.header("x-three"), Some("plain"));
    assert_eq!(r.header("idempotency-key"), Some("k-1"));
    assert_eq!(r.body, b"x=1");
}

#[test]
fn bad_config_lines_name_the_file_and_line_and_mask_values() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.cfg");
    let arg = cfg.display().to_string();
    for (text, line) in [
        ("silent\natempts 3\n", "line 2"),
        ("\nsk_live_hunter2\n", "line 2"),
        ("header = X-Key: hunter2\n", "line 1"),
        ("header = \"X-Key: hunter2\n", "line 1"),
        ("header = \"Bearer hunter2\"\n", "line 1"),
        ("attempts = zero\n", "line 1"),
        ("config = other.cfg\n", "line 1"),
        ("silent = yes\n", "line 1"),
        ("data\n", "line 1"),
    ] {
        std::fs::write(&cfg, text).unwrap();
        let err = refused(&["-K", &arg], None);
        assert!(
            err.contains("bad.cfg") && err.contains(line),
            "{text:?}: {err}"
        );
        assert!(!err.contains("hunter2"), "{text:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{text:?}: {err}");
    }
    let err = refused(&["-K", "-"], Some(b"silent\n"));
    assert!(err.contains("-K -"), "{err}");
}

#[test]
fn stdin_by_another_name_is_still_stdin() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    for name in ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"] {
        let (out, _) = run_with_stdin(&["-K", name, &s.url("/")], Some(b"attempts 2\n"));
        assert_eq!(code(&out), 2, "{name}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("not read from stdin"),
            "{}",
            stderr(&out)
        );
        let at = format!("@{name}");
        let (out, _) = run_with_stdin(
            &["-H", &at, "--data-binary", "@-", &s.url("/")],
            Some(b"X-A: 1\n"),
        );
        assert_eq!(code(&out), 2, "{name}: {}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 0);
}

#[test]
fn d_and_data_binary_join_in_order_as_curl_joins_them() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    // curl 7.88 sends `a=1&b=2\n&c` with the form Content-Type for the same flags.
    let (out, _) = run_with_stdin(
        &[
            "-s",
            "-d",
            "a=1",
            "--data-binary",
            "@-",
            "-d",
            "c",
            &s.url("/"),
        ],
        Some(b"b=2\n"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = s.requests().pop().expect("a request");
    assert_eq!(r.body, b"a=1&b=2\n&c");
    let ct = r
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"));
    assert_eq!(
        ct.map(|(_, v)| v.as_str()),
        Some("application/x-www-form-urlencoded")
    );
}

#[test]
fn a_config_file_takes_bundled_short_flags_as_the_command_line_does() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("k");
    let out_file = dir.path().join("o");
    std::fs::write(&config, format!("-fsSL\n-so {}\n", out_file.display())).unwrap();
    let s = Server::start(vec![Step::status(200, "body")]).unwrap();
    let (out, _) = run(&["-K", config.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "-s came from the file");
    assert_eq!(std::fs::read(&out_file).unwrap(), b"body");
    // A flag of curl's inside a bundle is named, not the bundle's first.
    std::fs::write(&config, "-sU u:pw\n").unwrap();
    let (out, _) = run(&["-K", config.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("-U/--proxy-user"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("u:pw"), "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1);
}
