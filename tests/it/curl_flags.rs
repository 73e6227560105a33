//! curl's flags as real curl lines hold them, against loopback servers: every curl flag
//! retry-http does not implement gets one line saying so (exit 2, nothing sent); `--proto`
//! and `--proto-redir`, the TLS versions, `-T`, `--data-raw`, `--oauth2-bearer`, `-#`,
//! `--no-progress-meter`, `-g`, `--fail-early`, `--connect-timeout` in plain seconds; every
//! curl retry flag named in one line, and in a `-K` file with its line; the help's target.

use crate::common::*;
use crate::tls_support;
use clap::CommandFactory;
use retry_http::cli::Cli;
use retry_http::cli::curl_names::CURL_NAMES;

/// Asserts a usage error: exit 2, one line on stderr holding `needle`.
fn assert_usage(out: &std::process::Output, needle: &str, what: &str) {
    let err = stderr(out);
    assert_eq!(code(out), 2, "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(err.contains(needle), "{what}: {err}");
}

#[test]
fn every_curl_flag_not_implemented_gets_the_curl_line_and_nothing_is_sent() {
    let s = Server::start(vec![Step::status(200, "must not be asked")]).unwrap();
    let url = s.url("/");
    let mut cmd = Cli::command();
    // Built, so that clap's own --help and --version are among the arguments.
    cmd.build();
    let implemented = |long: &str| {
        cmd.get_arguments().any(|a| {
            let named = a.get_long() == Some(long)
                || a.get_all_aliases().is_some_and(|all| all.contains(&long));
            named && !a.is_hide_set()
        })
    };
    let mut checked = 0;
    for name in CURL_NAMES.iter().filter(|n| !implemented(n.long)) {
        let long = format!("--{}", name.long);
        let short = name.short.map(|c| format!("-{c}"));
        for typed in std::iter::once(long).chain(short) {
            let mut args = vec![typed.as_str()];
            if name.value {
                args.push("1");
            }
            args.push(&url);
            let (out, _) = run(&args);
            assert_usage(&out, "is curl's flag", &typed);
            assert!(!stderr(&out).contains("similar argument"), "{typed}");
            assert!(!stderr(&out).contains("use '--"), "{typed}");
            checked += 1;
        }
    }
    assert!(checked > 150, "only {checked} flags checked");
    assert!(s.requests().is_empty(), "a request was sent");
}

#[test]
fn the_rustup_line_runs_and_a_scheme_not_allowed_is_refused() {
    let s = Server::start(vec![Step::status(200, "echo ok")]).unwrap();
    let url = s.url("/install.sh");
    // The URL is http: `--proto '=https'` refuses it before anything is sent (curl exits 1).
    let (out, _) = run(&["--proto", "=https", "--tlsv1.2", "-sSf", &url]);
    assert_usage(&out, "not allowed by --proto", "=https");
    assert!(s.requests().is_empty());
    for list in ["=http,https", "+http", "-all,+http", "all"] {
        let (out, _) = run(&["--proto", list, "--tlsv1.2", "-sSf", &url]);
        assert_eq!(code(&out), 0, "{list}: {}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 4);
    for bad in ["=foo", "=", "https;"] {
        let (out, _) = run(&["--proto", bad, &url]);
        assert_usage(&out, "--proto", bad);
    }
    assert_eq!(s.requests().len(), 4);
}

#[test]
fn a_redirect_to_a_scheme_not_allowed_is_not_followed() {
    let s = Server::start(vec![
        Step::with_header(302, "Location", "https://127.0.0.1:1/"),
        Step::with_header(302, "Location", "https://127.0.0.1:1/"),
        Step::with_header(302, "Location", "/next"),
        Step::status(200, "followed"),
    ])
    .unwrap();
    let url = s.url("/");
    let (out, _) = run(&["-L", "--proto-redir", "=http", &url]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("redirect to https:// not followed"),
        "{}",
        stderr(&out)
    );
    // --proto alone bounds redirects too; not retried either.
    let (out, _) = run(&["-L", "--proto", "=http", &url]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2, "a refused redirect was retried");
    // An allowed one is followed.
    let (out, _) = run(&["-sL", "--proto-redir", "-all,+http", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"followed");
}

/// A TLS server on loopback speaking only `versions`; each answer's body names the version
/// negotiated.
fn tls_server(versions: &[&'static rustls::SupportedProtocolVersion]) -> String {
    let cert = tls_support::self_signed(&["localhost"]);
    let (port, _) = tls_support::serve(tls_support::config(&cert, versions, None), |tls| {
        tls_support::read_head(tls);
        let version = format!("{:?}", tls.conn.protocol_version());
        tls_support::answer(tls, "", version.as_bytes());
    });
    format!("https://localhost:{port}/")
}

#[test]
fn tls_versions_are_narrowed_as_asked() {
    use rustls::version::{TLS12, TLS13};
    let both = tls_server(&[&TLS12, &TLS13]);
    for (flags, version) in [
        (&[][..], "Some(TLSv1_3)"),
        (&["--tlsv1.2"], "Some(TLSv1_3)"),
        (&["--tlsv1.3"], "Some(TLSv1_3)"),
        (&["--tls-max", "1.2"], "Some(TLSv1_2)"),
        (&["--tlsv1.2", "--tls-max", "1.2"], "Some(TLSv1_2)"),
        (&["--tls-max", "1.3"], "Some(TLSv1_3)"),
        (&["--tls-max", "default"], "Some(TLSv1_3)"),
    ] {
        let mut args = vec!["-sk", "--attempts", "1"];
        args.extend_from_slice(flags);
        args.push(&both);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 0, "{flags:?}: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), version, "{flags:?}");
    }
    let only_12 = tls_server(&[&TLS12]);
    let (out, _) = run(&["-sk", "--attempts", "1", "--tlsv1.3", &only_12]);
    assert_ne!(code(&out), 0, "TLS 1.3 only reached a TLS 1.2 server");
    assert!(out.stdout.is_empty());
    let only_13 = tls_server(&[&TLS13]);
    let (out, _) = run(&["-sk", "--attempts", "1", "--tls-max", "1.2", &only_13]);
    assert_ne!(code(&out), 0, "TLS 1.2 at most reached a TLS 1.3 server");
    // Refused: below 1.2, and a range that holds no version.
    for flags in [
        &["--tls-max", "1.1"][..],
        &["--tls-max", "1.0"],
        &["--tls-max", "2"],
        &["--tlsv1.3", "--tls-max", "1.2"],
        &["--tlsv1.1"],
        &["--tlsv1"],
        &["-1"],
        &["--sslv3"],
    ] {
        let mut args = flags.to_vec();
        args.push(&both);
        let (out, _) = run(&args);
        assert_eq!(code(&out), 2, "{flags:?}: {}", stderr(&out));
    }
}

#[test]
fn upload_file_is_a_put_of_the_file_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a b.bin");
    let bytes: Vec<u8> = b"line\r\nnext\n\0@end".to_vec();
    std::fs::write(&file, &bytes).unwrap();
    let file = file.to_str().unwrap();
    let s = Server::start(vec![
        Step::status(503, "busy"),
        Step::status(200, "stored"),
        Step::status(200, "stored"),
        Step::status(200, "stored"),
        Step::status(200, "stored"),
    ])
    .unwrap();
    // A URL ending in / gets the name; a 503 is retried (PUT is idempotent), same bytes.
    let (out, _) = run(&["-s", "--base", "1ms", "-T", file, &s.url("/dir/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"stored");
    let r = s.requests();
    assert_eq!(r.len(), 2);
    for req in &r {
        assert_eq!(req.method, "PUT");
        assert_eq!(req.target, "/dir/a%20b.bin");
        assert_eq!(req.body, bytes);
        assert_eq!(req.header("content-type"), None);
    }
    // A named file is kept; -X wins; --upload-file is the long name.
    let (out, _) = run(&["-s", "-X", "POST", "--upload-file", file, &s.url("/f?q=1")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let last = s.requests().pop().unwrap();
    assert_eq!(
        (last.method.as_str(), last.target.as_str()),
        ("POST", "/f?q=1")
    );
    // stdin: no name appended.
    let (out, _) = run_with_stdin(&["-s", "-T", "-", &s.url("/in/")], Some(b"from\r\nstdin"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let last = s.requests().pop().unwrap();
    assert_eq!(
        (last.method.as_str(), last.target.as_str()),
        ("PUT", "/in/")
    );
    assert_eq!(last.body, b"from\r\nstdin");
    // With another body flag, -G or -I: a usage error, nothing sent.
    let sent = s.requests().len();
    for other in [
        &["-d", "x"][..],
        &["--data-binary", "x"],
        &["--json", "{}"],
        &["-F", "a=b"],
        &["--data-raw", "x"],
        &["--data-urlencode", "a=b"],
        &["-G"],
        &["-I"],
    ] {
        let url = s.url("/");
        let mut args = vec!["-T", file];
        args.extend_from_slice(other);
        args.push(&url);
        let (out, _) = run(&args);
        assert_usage(&out, "cannot be used with", &format!("{other:?}"));
    }
    let (out, _) = run(&["-T", "/nonexistent/file", &s.url("/")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(s.requests().len(), sent, "a refused upload was sent");
}

#[test]
fn data_raw_sends_a_leading_at_sign_as_it_is() {
    let s = Server::start(vec![Step::status(200, "a"), Step::status(200, "b")]).unwrap();
    let (out, _) = run(&["-s", "--data-raw", "@notafile", "-d", "b=2", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = &s.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.body, b"@notafile&b=2");
    assert_eq!(
        r.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    // With -G it goes in the query, in order.
    let (out, _) = run(&["-s", "-G", "-d", "a=1", "--data-raw", "x=@y", &s.url("/q")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests()[1].target, "/q?a=1&x=@y");
}

#[test]
fn oauth2_bearer_is_an_authorization_masked_and_kept_to_its_origin() {
    let other = Server::start(vec![Step::status(200, "there")]).unwrap();
    let s = Server::start(vec![
        Step::status(200, "a"),
        Step::status(200, "b"),
        Step::status(200, "c"),
        Step::with_header(302, "Location", &other.url("/x")),
    ])
    .unwrap();
    let (out, _) = run(&["-v", "--oauth2-bearer", "tok-s3cr3t", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        s.requests()[0].header("authorization"),
        Some("Bearer tok-s3cr3t")
    );
    assert!(!stderr(&out).contains("s3cr3t"), "{}", stderr(&out));
    // -H Authorization wins; the Bearer replaces -u's Basic, as in curl.
    let (out, _) = run(&[
        "-s",
        "--oauth2-bearer",
        "t",
        "-H",
        "Authorization: Mine",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests()[1].header("authorization"), Some("Mine"));
    let (out, _) = run(&["-s", "--oauth2-bearer", "t", "-u", "a:b", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests()[2].header("authorization"), Some("Bearer t"));
    // Not sent to another origin.
    let (out, _) = run(&["-sL", "--oauth2-bearer", "t", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"there");
    assert_eq!(other.requests()[0].header("authorization"), None);
    // A control character is refused without quoting the token.
    let (out, _) = run(&["--oauth2-bearer", "s3cr3t\r\nX: y", &s.url("/")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!stderr(&out).contains("s3cr3t"), "{}", stderr(&out));
}

#[test]
fn curls_no_op_flags_are_accepted() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let (out, _) = run(&[
        "-#",
        "--progress-bar",
        "--no-progress-meter",
        "-g",
        "--globoff",
        "--fail-early",
        "--tlsv1.2",
        "-q",
        "--disable",
        "--basic",
        "-p",
        "--proxytunnel",
        "--remove-on-error",
        "--no-styled-output",
        "--tcp-nodelay",
        "--tcp-fastopen",
        "--no-keepalive",
        "--keepalive-time",
        "60",
        "-s",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"ok");
    assert_eq!(stderr(&out), "");
    // --data-ascii is curl's old name for -d.
    let (out, _) = run(&["-s", "--data-ascii", "a=1", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let last = s.requests().pop().expect("a request");
    assert_eq!(
        (last.method.as_str(), last.body.as_slice()),
        ("POST", &b"a=1"[..])
    );
    // -: (curl's --next) is refused: the URLs of a run share one set of options.
    let (out, _) = run(&["-:", &s.url("/")]);
    assert_usage(&out, "once per set of options", "-:");
    for (flags, says) in [
        (&["-J", "-O"][..], "use -o NAME or -O"),
        (&["--stderr", "e.txt"], "2>FILE"),
        (&["--limit-rate", "100k"], "never slowed down"),
    ] {
        let url = s.url("/");
        let mut args = flags.to_vec();
        args.push(&url);
        let (out, _) = run(&args);
        assert_usage(&out, says, &format!("{flags:?}"));
    }
    assert_eq!(s.requests().len(), 2);
}

#[test]
fn no_progress_meter_hides_the_progress_line_only() {
    let s = Server::start(vec![
        Step::with_header(503, "Retry-After", "3"),
        Step::Generate { len: 4 << 20 },
        Step::Generate { len: 4 << 20 },
    ])
    .unwrap();
    let url = s.url("/");
    let flags = ["--retry-after-spread", "0", "-o", "/dev/null"];
    let mut args = flags.to_vec();
    args.extend(["--no-progress-meter", url.as_str()]);
    let (code_tty, shown) = on_terminal(&args);
    assert_eq!(code_tty, Some(0), "{shown}");
    assert!(!shown.contains("downloading"), "{shown:?}");
    assert!(
        shown.contains("waiting 3s"),
        "the countdown went: {shown:?}"
    );
    assert!(
        shown.contains("200 OK"),
        "the attempt lines went: {shown:?}"
    );
    // Without it (-# changes nothing), the progress line is drawn.
    let mut args = flags.to_vec();
    args.extend(["-#", url.as_str()]);
    let (code_tty, shown) = on_terminal(&args);
    assert_eq!(code_tty, Some(0), "{shown}");
    assert!(shown.contains("downloading "), "{shown:?}");
}

#[test]
fn connect_timeout_takes_curls_plain_seconds() {
    let s = Server::start(vec![Step::status(200, "a"), Step::status(200, "b")]).unwrap();
    for t in ["5", "2.5"] {
        let (out, _) = run(&["-s", "--connect-timeout", t, &s.url("/")]);
        assert_eq!(code(&out), 0, "{t}: {}", stderr(&out));
    }
    let (out, _) = run(&["--connect-timeout", "soon", &s.url("/")]);
    assert_usage(&out, "expected a number of seconds", "soon");
    // This tool's own durations still want a unit.
    let (out, _) = run(&["--timeout", "5", &s.url("/")]);
    assert_usage(&out, "has no unit", "--timeout 5");
    assert_eq!(s.requests().len(), 2);
}

#[test]
fn a_curl_flag_not_implemented_in_a_config_file_is_named_with_its_line() {
    // curl's retry flags run (see curl_retry.rs); the others get their line.
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("curlrc");
    // A curl flag not implemented, in a -K file.
    std::fs::write(&k, "# curl's\nproto-default = https\n").unwrap();
    let (out, _) = run(&["-K", k.to_str().unwrap(), &s.url("/")]);
    assert_usage(
        &out,
        "line 2: --proto-default is curl's flag",
        "-K proto-default",
    );
    assert!(s.requests().is_empty());
}

#[test]
fn other_unknown_flags_keep_only_the_helpful_tip() {
    let (out, _) = run(&["--atempts", "3", "http://127.0.0.1:1/"]);
    assert_usage(&out, "similar argument exists: '--attempts'", "--atempts");
    let (out, _) = run(&["-W", "http://127.0.0.1:1/"]);
    assert_usage(&out, "unexpected argument '-W'", "-W");
    assert!(!stderr(&out).contains("use '--"), "{}", stderr(&out));
}

#[test]
fn the_help_shows_one_method_then_the_urls() {
    for flag in ["-h", "--help"] {
        let (out, _) = run(&[flag]);
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(!help.contains("URL]..."), "{flag}: {help}");
        assert!(help.contains("[METHOD] <URL>..."), "{flag}: {help}");
    }
    let (out, _) = run(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("  [METHOD] <URL>...\n"), "{help}");
    let (out, _) = run(&[]);
    assert_usage(&out, "not provided: [METHOD] <URL>", "no URL");
}

/// What a request carried of a flag's value (with the run's stdout).
type Carried = fn(&Recorded, &[u8]) -> String;

/// A header's value as sent, empty when absent.
fn header(r: &Recorded, name: &str) -> String {
    r.header(name).unwrap_or("").to_string()
}

/// Every option that takes a value takes the next word, whatever it begins with, as curl
/// does: a body, a JSON number, a token, a user agent, a referer, a user name or a -w
/// format that begins with '-' is sent (or printed) as given, on the command line as in a
/// `-K` file, never read as another flag ("a value is required", or `-A -agent` taken for
/// curl's `-a`). 8 flags x 3 values x 2 places.
#[test]
fn a_value_that_begins_with_a_dash_is_the_option_s_value() {
    use base64::Engine;
    let body: Carried = |r, _| String::from_utf8_lossy(&r.body).into_owned();
    let user: Carried = |r, _| {
        let v = r.header("authorization").unwrap_or("");
        let b = base64::engine::general_purpose::STANDARD
            .decode(v.trim_start_matches("Basic "))
            .unwrap_or_default();
        String::from_utf8_lossy(&b).into_owned()
    };
    let rows: [(&str, Carried, &str); 8] = [
        ("data", body, ""),
        ("data-binary", body, ""),
        ("json", body, ""),
        ("user-agent", |r, _| header(r, "user-agent"), ""),
        ("referer", |r, _| header(r, "referer"), ""),
        (
            "oauth2-bearer",
            |r, _| header(r, "authorization"),
            "Bearer ",
        ),
        ("user", user, ""),
        (
            "write-out",
            |_, out| String::from_utf8_lossy(out).into_owned(),
            "ok",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    for (flag, carried, before) in rows {
        for value in ["-1:2", "-x:y", "--y:z"] {
            for in_config in [false, true] {
                let place = if in_config { "-K" } else { "the command line" };
                let what = format!("--{flag} {value} on {place}");
                let long = format!("--{flag}");
                let config = dir.path().join("k");
                let mut args = vec!["-s"];
                if in_config {
                    std::fs::write(&config, format!("{flag} = \"{value}\"\n")).unwrap();
                    args.extend(["-K", config.to_str().unwrap()]);
                } else {
                    args.extend([long.as_str(), value]);
                }
                let url = s.url("/");
                args.push(&url);
                let sent = s.requests().len();
                let (out, _) = run(&args);
                assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
                let reqs = s.requests();
                assert_eq!(reqs.len(), sent + 1, "{what}");
                let got = carried(&reqs[sent], &out.stdout);
                assert_eq!(got, format!("{before}{value}"), "{what}");
            }
        }
    }
}
