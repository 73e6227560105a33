//! curl's everyday flags against a loopback server: `-f` and `-S` (and bundles such as
//! `-fsSL`), `-s` with `-v`, `--url`, a URL without a scheme, `-O` with `--output-dir` and
//! `--create-dirs`, `-e`, `--http1.1`, `--http2` and `--http3` (and the refused `--http2-prior-knowledge`), `-4` and `-6`; the short
//! `-h`; the summary of a run the deadline stops early.

use crate::common::*;
use std::path::Path;
use std::process::Output;

/// Runs the binary in `dir` (for `-O`, which writes in the current folder).
fn run_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = std_command();
    cmd.current_dir(dir).args(args);
    cmd.output().expect("binary runs")
}

#[test]
fn bundled_curl_flags_are_accepted() {
    for flags in ["-fsSL", "-sSf", "-sS", "-fsS", "-sSLf", "-Ss"] {
        let s = Server::start(vec![Step::status(200, "fine")]).unwrap();
        let (out, _) = run(&[flags, &s.url("/")]);
        assert_eq!(code(&out), 0, "{flags}: {}", stderr(&out));
        assert_eq!(out.stdout, b"fine", "{flags}");
        assert_eq!(stderr(&out), "", "{flags}");
    }
}

#[test]
fn fail_and_show_error_keep_the_error_line_and_write_no_error_body() {
    let s = Server::start(vec![Step::status(404, "not found page")]).unwrap();
    let (out, _) = run(&["-fsS", &s.url("/")]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "an error body was written");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("404 Not Found"), "{err}");
    // curl refuses the two together; so does retry-http, sending nothing.
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let (out, _) = run(&["-f", "--fail-with-body", &s.url("/")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(s.requests().is_empty());
}

#[test]
fn silent_with_verbose_shows_what_verbose_shows() {
    for flags in [&["-sv"][..], &["-s", "-v"], &["-v", "-s"], &["-svL"]] {
        let s = Server::start(vec![Step::with_header(200, "X-Served", "yes")]).unwrap();
        let mut args = flags.to_vec();
        let url = s.url("/v");
        args.push(&url);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{flags:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("> GET "), "{flags:?}: {err}");
        assert!(err.contains("< X-Served: yes"), "{flags:?}: {err}");
        assert!(err.contains("seed "), "{flags:?}: {err}");
    }
}

#[test]
fn url_flag_gives_a_url_in_order() {
    let s = Server::start(vec![Step::status(200, "by --url")]).unwrap();
    let (out, _) = run(&["-s", "--url", &s.url("/u")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"by --url");
    assert_eq!(s.requests()[0].target, "/u");
    // With -X, and with a body.
    let (out, _) = run(&["-s", "-X", "PUT", "-d", "b", "--url", &s.url("/p")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests()[1].method, "PUT");

    // With positionals or more --url, each is a URL of its own, in order.
    for args in [
        &["--explain", "--url", &s.url("/a"), &s.url("/b")][..],
        &["--explain", "--url", &s.url("/a"), "--url", &s.url("/b")],
    ] {
        let (out, _) = run(args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("transfers     2, "), "{args:?}: {text}");
    }
    // A capital word after a URL is no method: a bare word among URLs is refused, and a
    // method's name there, or in small letters before the URL, is named as one.
    let (out, _) = run(&["--url", &s.url("/a"), "POST"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("give the method first (POST URL) or as -X POST"),
        "{}",
        stderr(&out)
    );
    for word in ["get", "Delete"] {
        let (out, _) = run(&[word, &s.url("/a")]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        let upper = word.to_ascii_uppercase();
        assert!(
            stderr(&out).contains(&format!(
                "methods are case-sensitive (RFC 9110 section 9.1), so write {upper} URL"
            )),
            "{}",
            stderr(&out)
        );
    }
    // A token that lost its flag is not quoted back, and the line says what it may be.
    let (out, _) = run(&["-H", "Authorization: Bearer", "S3CRETTOKEN", &s.url("/a")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!stderr(&out).contains("S3CRETTOKEN"), "{}", stderr(&out));
    assert!(stderr(&out).contains("lost its flag"), "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2, "a refused run sent something");
}

#[test]
fn a_url_without_a_scheme_is_http() {
    let s = Server::start(vec![Step::status(200, "plain")]).unwrap();
    let bare = s.url("/health?x=1").replacen("http://", "", 1);
    let (out, _) = run(&["-s", &bare]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"plain");
    let port = bare.split(['/', ':']).nth(1).expect("a port").to_string();
    let (out, _) = run(&["-s", &format!("localhost:{port}/l")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (out, _) = run(&["-s", "--url", &format!("127.0.0.1:{port}")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // One slash after the scheme (old docs, blog posts) is mended, as curl mends it: not
    // a host named `http`.
    let (out, _) = run(&["-s", &format!("http:/127.0.0.1:{port}/one")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let targets: Vec<String> = s.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(targets, ["/health?x=1", "/l", "/", "/one"]);
    // Other schemes are still refused, and so is a host curl would read as ftp.
    for (url, says) in [
        (
            format!("ftp://127.0.0.1:{port}/"),
            "unsupported URL scheme \"ftp\"",
        ),
        (
            format!("ftp.localhost:{port}/"),
            "unsupported URL scheme \"ftp\"",
        ),
        (
            "file:/etc/passwd".to_string(),
            "unsupported URL scheme \"file\"",
        ),
    ] {
        let (out, _) = run(&[&url]);
        assert_eq!(code(&out), 2, "{url}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{url}: {}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 4);
}

#[test]
fn a_password_in_a_url_without_a_scheme_is_masked() {
    let (out, _) = run(&["bob:hunter2@exa mple/"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!stderr(&out).contains("hunter2"), "{}", stderr(&out));
    let url = closed_port_url().replacen("http://", "bob:hunter2@", 1);
    let (out, _) = run(&["--attempts", "1", &url]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("http://bob:***@127.0.0.1:"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("hunter2"), "{}", stderr(&out));
}

#[test]
fn remote_name_saves_under_the_urls_last_segment() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "report")]).unwrap();
    let out = run_in(dir.path(), &["-sO", &s.url("/files/a%20b.csv?v=2")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(names_in(dir.path()), ["a%20b.csv"]);
    assert_eq!(
        std::fs::read(dir.path().join("a%20b.csv")).unwrap(),
        b"report"
    );
    // --output-dir takes it, and a relative -o.
    std::fs::create_dir(dir.path().join("od")).unwrap();
    let out = run_in(
        dir.path(),
        &["-s", "-O", "--output-dir", "od", &s.url("/r.txt")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run_in(
        dir.path(),
        &["-s", "-o", "o.txt", "--output-dir", "od", &s.url("/")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(names_in(&dir.path().join("od")), ["o.txt", "r.txt"]);
}

#[test]
fn remote_name_without_a_name_is_refused_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    for path in ["/", "/dir/", "/x/..", ""] {
        let out = run_in(dir.path(), &["-O", &s.url(path)]);
        assert_eq!(code(&out), 2, "{path}: {}", stderr(&out));
        assert!(stderr(&out).contains("names no file"), "{}", stderr(&out));
    }
    let out = run_in(dir.path(), &["-O", "-o", "f", &s.url("/f")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(s.requests().is_empty(), "a refused run sent something");
    assert!(names_in(dir.path()).is_empty());
}

#[test]
fn create_dirs_makes_the_folders_only_for_a_successful_body() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(503, "down")]).unwrap();
    let out = run_in(
        dir.path(),
        &[
            "-s",
            "--create-dirs",
            "-o",
            "a/b/f.txt",
            "--attempts",
            "2",
            "--base",
            "1ms",
            &s.url("/"),
        ],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(
        names_in(dir.path()).is_empty(),
        "{:?}",
        names_in(dir.path())
    );

    let s = Server::start(vec![Step::status(503, "down"), Step::status(200, "up")]).unwrap();
    let out = run_in(
        dir.path(),
        &[
            "-s",
            "--create-dirs",
            "--output-dir",
            "d",
            "-O",
            "--base",
            "1ms",
            &s.url("/f.txt"),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read(dir.path().join("d/f.txt")).unwrap(), b"up");
    assert_eq!(
        names_in(&dir.path().join("d")),
        ["f.txt"],
        "a temporary file was left"
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join("d"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o007, 0, "curl makes folders 0750");
}

#[test]
fn a_missing_folder_is_still_a_usage_error_without_create_dirs() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let out = run_in(dir.path(), &["-o", "none/f.txt", &s.url("/")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--create-dirs"), "{}", stderr(&out));
    std::fs::write(dir.path().join("file"), "").unwrap();
    let out = run_in(
        dir.path(),
        &["--create-dirs", "-o", "file/f.txt", &s.url("/")],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(s.requests().is_empty());
}

#[test]
fn referer_is_sent_unless_h_decides() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let cases: [(&[&str], Option<&str>); 4] = [
        (
            &["-e", "http://from.test/page"],
            Some("http://from.test/page"),
        ),
        (
            &["--referer", "http://a/", "-H", "Referer: http://b/"],
            Some("http://b/"),
        ),
        (&["-e", "http://a/", "-H", "Referer:"], None),
        (&["-e", ""], None),
    ];
    for (i, (flags, sent)) in cases.iter().enumerate() {
        let mut args = flags.to_vec();
        let url = s.url("/");
        args.push(&url);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{flags:?}: {}", stderr(&out));
        assert_eq!(s.requests()[i].header("referer"), *sent, "{flags:?}");
    }
    let (out, _) = run(&["-e", "http://a/;auto", &s.url("/")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains(";auto"), "{}", stderr(&out));
    assert_eq!(s.requests().len(), cases.len());
}

/// `--http1.1`, and curl's `--http2` and `--http3` (try a newer version, fall back to
/// HTTP/1.1) are accepted and sent over HTTP/1.1; the versions with no fall-back are refused
/// before anything is sent.
#[test]
fn http1_1_2_and_3_are_accepted_and_the_versions_without_fallback_refused() {
    let s = Server::start(vec![Step::status(200, "one"); 3]).unwrap();
    for flag in ["--http1.1", "--http2", "--http3"] {
        let (out, _) = run(&["-s", flag, &s.url("/")]);
        assert_eq!(code(&out), 0, "{flag}: {}", stderr(&out));
        assert_eq!(out.stdout, b"one", "{flag}");
    }
    for flag in ["--http2-prior-knowledge", "--http3-only"] {
        let (out, _) = run(&[flag, &s.url("/")]);
        assert_eq!(code(&out), 2, "{flag}: {}", stderr(&out));
        assert!(stderr(&out).contains("HTTP/1.1 only"), "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
    let requests = s.requests();
    assert_eq!(requests.len(), 3);
    // HTTP/1.1 as it is: no h2c upgrade asked (the scripted server speaks only HTTP/1.1).
    assert!(
        requests.iter().all(|q| q.header("upgrade").is_none()),
        "{requests:?}"
    );
}

#[test]
fn ipv4_and_ipv6_choose_the_address_family() {
    let s = Server::start(vec![Step::status(200, "four")]).unwrap();
    let port = s.url("").rsplit(':').next().expect("a port").to_string();
    let local = format!("http://localhost:{port}/");
    let (out, _) = run(&["-s", "-4", &local]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"four");
    // localhost has an IPv4 address only here (/etc/hosts): -6 finds none, and the last
    // of -4 and -6 counts.
    for flags in [&["-6"][..], &["-4", "-6"]] {
        let mut args = vec!["--attempts", "1"];
        args.extend(flags);
        args.push(&local);
        let (out, _) = run(&args);
        assert_ne!(code(&out), 0, "{flags:?}: {}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 1, "-6 reached the IPv4 server");
    let (out, _) = run(&["-6", &s.url("/")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not an IPv6 address"),
        "{}",
        stderr(&out)
    );

    let Ok(six) = Server::start_v6(vec![Step::status(200, "six!")]) else {
        return; // no IPv6 loopback on this machine
    };
    let url6 = six.url("/");
    let (out, _) = run(&["-s", "-6", &url6]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"six!");
    let (out, _) = run(&["-4", &url6]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not an IPv4 address"),
        "{}",
        stderr(&out)
    );
    assert_eq!(six.requests().len(), 1);
}

#[test]
fn short_help_is_a_summary_and_long_help_has_everything() {
    let out = command().arg("-h").output().unwrap();
    assert_eq!(code(&out), 0);
    let short = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        short.lines().count() <= 40,
        "-h has {} lines:\n{short}",
        short.lines().count()
    );
    assert!(short.contains("Exit codes: 0 success"), "{short}");
    let out = command().arg("--help").output().unwrap();
    let long = String::from_utf8_lossy(&out.stdout).into_owned();
    for flag in [
        "--url <URL>",
        "--referer <URL>",
        "--http1.1",
        "--ipv4",
        "--ipv6",
        "--remote-name",
        "--output-dir <DIR>",
        "--create-dirs",
        "--fail",
        "--show-error",
        "--stall-timeout",
        "--state-ttl",
        "--noproxy",
    ] {
        assert!(long.contains(flag), "--help lacks {flag}");
    }
}

#[test]
fn a_deadline_that_stops_early_says_why_in_the_summary() {
    let url = closed_port_url();
    let (out, _) = run(&[
        "-s",
        "--deadline",
        "400ms",
        "--base",
        "1s",
        "--cap",
        "1s",
        "--jitter",
        "none",
        &url,
    ]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("deadline reached after ")
            // Why: the time left is less than another attempt needs (the 1 s backoff made
            // way for attempts drawn before the deadline), or, on a loaded machine, the
            // last of them was cut by the deadline.
            && (err.contains("left before the deadline; ")
                && err.contains("would end past the deadline")
                || err.contains("stopping: the deadline passed")),
        "{err}"
    );
}
