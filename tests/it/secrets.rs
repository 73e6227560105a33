//! Secrets never reach stderr, in text or JSON, at any verbosity, on success or failure.

use crate::common::*;

const SECRETS: [&str; 6] = [
    "s3cretbearer",
    "k3yvalue",
    "pa55word",
    "urlpa55",
    "t0kenq",
    "sigvalu3",
];

fn check(status: u16, extra: &[&str]) {
    let s = Server::start(vec![Step::status(status, "")]).unwrap();
    let url = s
        .url("/p?access_token=t0kenq&page=2&sig=sigvalu3")
        .replace("http://", "http://bob:urlpa55@");
    for format in ["text", "json"] {
        let mut args = vec![
            "-v",
            "--log-format",
            format,
            "--attempts",
            "2",
            "--base",
            "1ms",
            "-H",
            "Authorization: Bearer s3cretbearer",
            "-H",
            "X-Api-Key: k3yvalue",
            "-u",
            "alice:pa55word",
        ];
        args.extend_from_slice(extra);
        args.push(&url);
        let (out, _) = run(&args);
        let err = stderr(&out);
        for secret in SECRETS {
            assert!(
                !err.contains(secret),
                "{secret} leaked ({format}, status {status}):\n{err}"
            );
        }
        assert!(err.contains("***"), "secrets are shown masked: {err}");
        assert!(
            err.contains("page=2"),
            "ordinary parameters stay visible: {err}"
        );
    }
}

#[test]
fn secrets_are_masked_on_success() {
    check(200, &[]);
}

#[test]
fn secrets_are_masked_on_failure() {
    check(503, &[]);
    check(404, &[]);
}

#[test]
fn secrets_are_masked_when_nothing_answers() {
    let url = closed_port_url().replace("http://", "http://bob:urlpa55@") + "?api_key=k3yvalue";
    let (out, _) = run(&[
        "-v",
        "--attempts",
        "2",
        "--base",
        "1ms",
        "-H",
        "Cookie: s3cretbearer",
        &url,
    ]);
    let err = stderr(&out);
    for secret in SECRETS {
        assert!(!err.contains(secret), "{secret} leaked:\n{err}");
    }
}

#[test]
fn credentials_do_not_follow_a_redirect_to_another_host() {
    let target = Server::start(vec![Step::status(200, "there")]).unwrap();
    let origin = Server::start(vec![Step::with_header(
        302,
        "Location",
        &target.url("/landing"),
    )])
    .unwrap();
    let (out, _) = run(&[
        "-L",
        "-H",
        "Authorization: Bearer s3cretbearer",
        "-H",
        "X-Trace: 1",
        &origin.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reqs = target.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].header("authorization"),
        None,
        "credentials forwarded to another host"
    );
    assert_eq!(reqs[0].header("x-trace"), Some("1"));
    assert!(origin.requests()[0].header("authorization").is_some());
}

#[test]
fn insecure_says_so() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&["-k", &s.url("/")]);
    assert!(
        stderr(&out).contains("verification is off"),
        "{}",
        stderr(&out)
    );
}

/// Runs with `args` in text and JSON; returns both stderr texts with the exit codes.
fn both_formats(args: &[&str], env: &[(&str, &str)]) -> Vec<(i32, String)> {
    ["text", "json"]
        .iter()
        .map(|format| {
            let mut cmd = command();
            cmd.args(["--log-format", format])
                .args(args)
                .timeout(std::time::Duration::from_secs(60));
            for (k, v) in env {
                cmd.env(k, v);
            }
            let out = cmd.output().expect("binary runs");
            (code(&out), stderr(&out))
        })
        .collect()
}

fn assert_hidden(args: &[&str], env: &[(&str, &str)], secrets: &[&str], exit: i32) {
    for (got, err) in both_formats(args, env) {
        assert_eq!(got, exit, "{args:?}: {err}");
        for secret in secrets {
            assert!(!err.contains(secret), "{secret} leaked by {args:?}:\n{err}");
        }
        assert!(err.contains("***"), "{args:?}: shown masked: {err}");
    }
}

#[test]
fn urls_that_do_not_parse_leak_nothing() {
    for url in [
        // Without a scheme it is http:// (as in curl); this one's port is out of range.
        "bob:hunt3r2@127.0.0.1:99999/path",
        "http://bob:hunt3r2@exa mple.test/",
        "http://bob:hunt3r2@127.0.0.1:99999/?state=1;access_token=t0kenq#id_token=t0kenf",
        "http://bob:hunt/3r2@exa mple.test/",
        "hunt3r2@exa mple.test",
        "ftp://bob:hunt3r2@h.test/?sig=t0kenq",
    ] {
        assert_hidden(&[url], &[], &["hunt3r2", "3r2", "t0kenq", "t0kenf"], 2);
        // With -u too: its password is never quoted.
        assert_hidden(
            &["-u", "alice:pa55word", url],
            &[],
            &["hunt3r2", "pa55word"],
            2,
        );
    }
}

#[test]
fn headers_that_do_not_parse_leak_nothing() {
    for args in [
        &["-H", "PRIVATE-TOKEN=glpat-S3CRET"][..],
        &["-H", "X Api-Key: glpat-S3CRET"],
        &["-H", "Authorization Bearer glpat-S3CRET"],
        &["-H", "glpat-S3CRET"],
        &["-H", "Bearer glpat-S3CRET: x"],
        &["-H", "X-Api-Key: ok\r\nX-Evil: glpat-S3CRET"],
        &["-H", "X-Plain: a\nglpat-S3CRET"],
        &["-H", "X-Plain: a\u{1}glpat-S3CRET"],
        &["--header=PRIVATE-TOKEN=glpat-S3CRET"],
        &["-HPRIVATE-TOKEN=glpat-S3CRET"],
        &["--header", "Bearer glpat-S3CRET;"],
    ] {
        let mut all = args.to_vec();
        all.push("http://h.test/");
        assert_hidden(&all, &[], &["glpat-S3CRET", "S3CRET"], 2);
    }
}

#[test]
fn rejected_values_with_credentials_are_masked() {
    for args in [
        // A bad URL among several, a value the parser rejects, one from the environment.
        &["GET", "http://h.test/", "http://bob:hunt3r2@h .test/"][..],
        &["--jitter", "http://bob:hunt3r2@h.test/", "http://h.test/"],
        &["--retry-on", "x:hunt3r2@y", "http://h.test/"],
        &[
            "--attempts",
            "http://h.test/?token=hunt3r2",
            "http://h.test/",
        ],
    ] {
        assert_hidden(args, &[], &["hunt3r2"], 2);
    }
    assert_hidden(
        &["http://h.test/"],
        &[("RETRY_HTTP_BASE", "http://bob:hunt3r2@h.test/")],
        &["hunt3r2"],
        2,
    );
}

#[test]
fn proxies_with_credentials_are_masked() {
    let url = closed_port_url();
    for proxy in [
        "http://u:pr0xypw@exa mple:1",
        "u:pr0xypw@exa mple:1",
        "ftp://u:pr0xypw@h.test:1",
        "http://u:pr0xypw@h.test:99999",
    ] {
        assert_hidden(&["-x", proxy, &url], &[], &["pr0xypw"], 2);
        assert_hidden(&[&url], &[("http_proxy", proxy)], &["pr0xypw"], 2);
    }
    // A proxy that parses but cannot be reached: the attempt's error must not quote it.
    let dead = closed_port_url().replace("http://", "http://u:pr0xypw@");
    for (_, err) in both_formats(&["-v", "-x", &dead, "--attempts", "1", &url], &[]) {
        assert!(!err.contains("pr0xypw"), "{err}");
    }
}

#[test]
fn semicolon_parameters_and_fragments_are_masked() {
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/p?state=1;access_token=t0kenq&page=2;sig=sigvalu3#id_token=t0kenf&x=y");
    let args = [
        "-v",
        "--attempts",
        "2",
        "--base",
        "1ms",
        "-H",
        "Accept: x",
        "-H",
        "X-Trace: tr4ce",
        "-H",
        "PRIVATE-TOKEN: glpat-S3CRET",
        "-H",
        "X-Session-Id: s3ssion",
        "-H",
        "X-Cookie-Jar: c00kie",
        &url,
    ];
    for (exit, err) in both_formats(&args, &[]) {
        assert_eq!(exit, 4, "{err}");
        for secret in [
            "t0kenq",
            "t0kenf",
            "sigvalu3",
            "glpat-S3CRET",
            "s3ssion",
            "c00kie",
        ] {
            assert!(!err.contains(secret), "{secret} leaked:\n{err}");
        }
        for shown in ["state=1", "page=2", "x=y", "Accept: x", "X-Trace: tr4ce"] {
            assert!(err.contains(shown), "{shown} should stay visible:\n{err}");
        }
    }
    // The JSON url key in particular.
    let (out, _) = run(&["--log-format", "json", "--attempts", "1", &url]);
    let attempts = json_lines(&out, "attempt");
    let shown = attempts[0]["url"].as_str().unwrap();
    assert!(
        shown.ends_with("/p?state=1;access_token=***&page=2;sig=***#id_token=***&x=y"),
        "{shown}"
    );
    // --explain quotes the URL on stdout: masked as well.
    let (out, _) = run(&["--explain", &url]);
    let explained = String::from_utf8_lossy(&out.stdout);
    assert!(
        !explained.contains("t0kenq") && explained.contains("state=1"),
        "{explained}"
    );
}

#[test]
fn an_idempotency_key_is_not_a_secret() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&[
        "-v",
        "--idempotency-key",
        "k3y-visible-42",
        "-d",
        "x",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Idempotency-Key: k3y-visible-42"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        s.requests()[0].header("idempotency-key"),
        Some("k3y-visible-42")
    );
}

#[test]
fn a_token_as_the_user_is_masked() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let url = s.url("/").replace("http://", "http://ghp_t0kenuser@");
    let (out, _) = run(&["-v", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("ghp_t0kenuser"), "{}", stderr(&out));
}

#[test]
fn a_question_mark_in_a_value_separates_parameters() {
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    for (query, shown) in [
        ("a=1?token=t0kenq&page=2", "a=1?token=***&page=2"),
        ("page=2#a=1?id_token=t0kenf", "page=2#a=1?id_token=***"),
        ("a=1??jwt=t0kenq;page=2", "a=1??jwt=***;page=2"),
        // Siblings: a value that holds a secret parameter once decoded.
        (
            "next=%2Fcb%3Faccess_token%3Dt0kenq&page=2",
            "next=***&page=2",
        ),
        ("a=1%3Fsessionid%3Dt0kenq&page=2", "a=***&page=2"),
        (
            "next=https%3A%2F%2Fu%3At0kenq%40h%2F&page=2",
            "next=***&page=2",
        ),
    ] {
        let url = s.url(&format!("/p?{query}"));
        let args = ["-v", "--attempts", "2", "--base", "1ms", &url];
        for (exit, err) in both_formats(&args, &[]) {
            assert_eq!(exit, 4, "{err}");
            for secret in ["t0kenq", "t0kenf"] {
                assert!(!err.contains(secret), "{secret} leaked by {query}:\n{err}");
            }
            assert!(err.contains(shown), "{query}: {shown} expected:\n{err}");
        }
    }
}

#[test]
fn a_userinfo_in_a_redirected_path_is_masked() {
    for location in [
        // Not a URL (the scheme does not parse): resolved as a relative path.
        "ht!tp://u:l0cpa55@x y/?token=t0kenl",
        "/a/u:l0cpa55@x/b",
        "/a//l0cpa55tok@x/b",
        "/a/ht%3A%2F%2Fu%3Al0cpa55%40x/b",
    ] {
        for format in ["text", "json"] {
            let s = Server::start(vec![
                Step::with_header(302, "Location", location),
                Step::status(200, "landed"),
            ])
            .unwrap();
            let (out, _) = run(&["--log-format", format, "-L", "-v", &s.url("/start")]);
            let err = stderr(&out);
            assert_eq!(code(&out), 0, "{location}: {err}");
            for secret in ["l0cpa55", "t0kenl"] {
                assert!(
                    !err.contains(secret),
                    "{secret} leaked by {location}:\n{err}"
                );
            }
            assert!(
                err.contains("***@x") || err.contains("***%40x"),
                "{location}: shown masked:\n{err}"
            );
            // The request did follow the redirect, secret and all: only the log masks it.
            let reqs = s.requests();
            assert_eq!(reqs.len(), 2, "{location}: {reqs:?}");
            assert!(reqs[1].target.contains("l0cpa55"), "{:?}", reqs[1].target);
        }
    }
    // An ordinary path stays readable.
    let s = Server::start(vec![
        Step::with_header(302, "Location", "/v1/users/@me/a:b"),
        Step::status(200, "landed"),
    ])
    .unwrap();
    let (out, _) = run(&["-L", "-v", &s.url("/start")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/v1/users/@me/a:b"),
        "{}",
        stderr(&out)
    );
}

/// Headers that hold a secret by their name, as `-H` gives them.
const SECRET_HEADERS: [(&str, &str); 8] = [
    ("Authorization", "Bearer s3cretbearer"),
    ("Cookie", "sid=c00kie"),
    ("X-Api-Key", "k3yvalue"),
    ("PRIVATE-TOKEN", "glpat-S3CRET"),
    ("X-Auth-Token", "t0kenh"),
    ("X-Session-Id", "s3ssion"),
    ("X-Client-Secret", "cl1ent"),
    ("X-Jwt", "eyJ0eXAi"),
];

fn redirect_run(origin: &Server, extra: &[&str]) {
    let mut args = vec!["-L".to_string()];
    for (n, v) in SECRET_HEADERS {
        args.extend(["-H".to_string(), format!("{n}: {v}")]);
    }
    args.extend(["-H".into(), "X-Trace: tr4ce".into()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(origin.url("/"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn secret_headers_do_not_follow_a_redirect_to_another_origin() {
    for key in [
        &["--idempotency-key", "k3y-visible-42"][..],
        &["-H", "Idempotency-Key: k3y-visible-42"],
    ] {
        let target = Server::start(vec![Step::status(200, "there")]).unwrap();
        let origin = Server::start(vec![Step::with_header(
            302,
            "Location",
            &target.url("/landing"),
        )])
        .unwrap();
        redirect_run(&origin, key);
        let reqs = target.requests();
        assert_eq!(reqs.len(), 1);
        let there = &reqs[0];
        for (n, _) in SECRET_HEADERS {
            assert_eq!(there.header(n), None, "{n} forwarded to another origin");
            assert!(origin.requests()[0].header(n).is_some(), "{n} not sent");
        }
        assert_eq!(there.header("x-trace"), Some("tr4ce"));
        assert_eq!(
            there.header("idempotency-key"),
            Some("k3y-visible-42"),
            "the key must follow: the new location deduplicates with it"
        );
    }
}

#[test]
fn secret_headers_follow_a_redirect_on_the_same_origin() {
    let s = Server::start(vec![
        Step::with_header(302, "Location", "/landing"),
        Step::status(200, "here"),
    ])
    .unwrap();
    redirect_run(&s, &[]);
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    for (n, v) in SECRET_HEADERS {
        assert_eq!(reqs[1].header(n), Some(v), "{n} dropped on the same origin");
    }
}

#[test]
fn an_idempotency_key_of_unicode_white_space_is_sent() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&["-v", "-H", "Idempotency-Key: \u{a0}", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("> Idempotency-Key: \u{a0}"),
        "{}",
        stderr(&out)
    );
    // (The scripted server trims what it records; the header's presence is the point.)
    assert!(
        s.requests()[0].header("idempotency-key").is_some(),
        "the header was dropped"
    );
}

#[test]
fn secrets_in_proxies_redirects_and_query_names_are_masked() {
    let (out, _) = run(&[
        "-x",
        "user:s3cretpw@localhost:notaport",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(code(&out), 2);
    assert!(!stderr(&out).contains("s3cretpw"), "{}", stderr(&out));
    let s = Server::start(vec![Step::with_header(
        302,
        "Location",
        "http://ru:redirpw7@127.0.0.1:9/?access_token=rtok7",
    )])
    .unwrap();
    let (out, _) = run(&[
        "-v",
        &format!(
            "{}?passwd=A1&pwd=B2&session=C3&client_credential=D4",
            s.url("/")
        ),
    ]);
    let err = stderr(&out);
    for secret in ["redirpw7", "rtok7", "A1", "B2", "C3", "D4"] {
        assert!(!err.contains(secret), "{secret} leaked: {err}");
    }
}

#[test]
fn write_out_masks_the_user_s_secrets_and_shows_the_server_s_on_stdout_as_asked() {
    let s = Server::start(vec![Step::with_header(
        200,
        "Set-Cookie",
        "sid=COOKIESECRET",
    )])
    .unwrap();
    let port = s
        .url("/")
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let url = format!("http://bob:URLSECRET@127.0.0.1:{port}/?token=QUERYSECRET");
    let format =
        "%{url}|%header{set-cookie}|%{json}\n%{stderr}%{url}|%header{set-cookie}|%{json}\n";
    let (out, _) = run(&["-s", "-w", format, &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    for secret in ["URLSECRET", "QUERYSECRET", "COOKIESECRET"] {
        assert!(!err.contains(secret), "{secret} on stderr: {err}");
    }
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("COOKIESECRET"), "{shown}");
    assert!(
        !shown.contains("URLSECRET") && !shown.contains("QUERYSECRET"),
        "{shown}"
    );
}

#[test]
fn values_read_from_files_are_not_quoted_back_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let headers = dir.path().join("h");
    std::fs::write(&headers, "CorrectHorseBatteryStaple more\n").unwrap();
    let at = format!("@{}", headers.display());
    let (out, _) = run(&["-H", &at, &s.url("/")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!stderr(&out).contains("CorrectHorse"), "{}", stderr(&out));
    for line in [
        "resolve = \"h:80:SECRETADDR\"",
        "connect-to = \"h:80:SECRETHOST:x\"",
        "attempts = \"0SECRET\"",
        "retry-on = \"SECRET\"",
        "max-filesize = \"SECRET\"",
    ] {
        let config = dir.path().join("k");
        std::fs::write(&config, format!("{line}\n")).unwrap();
        let (out, _) = run(&["-K", config.to_str().unwrap(), &s.url("/")]);
        assert_eq!(code(&out), 2, "{line}: {}", stderr(&out));
        assert!(!stderr(&out).contains("SECRET"), "{line}: {}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 0);
}

#[test]
fn a_stray_word_is_neither_sent_as_a_method_nor_printed() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let url = s.url("/");
    for args in [
        vec!["-H", "Authorization: Bearer", "STRAYSECRET", &url],
        vec!["--oauth2-bearer", "TOK1", "STRAYSECRET", &url],
        vec!["GET", &url, "STRAYSECRET"],
    ] {
        let (out, _) = run(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("STRAYSECRET"), "{}", stderr(&out));
    }
    // A known method before the URL still is one, and -X still takes any token.
    let (out, _) = run(&["PROPFIND", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (out, _) = run(&["-X", "FOOBAR", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let methods: Vec<String> = s.requests().into_iter().map(|r| r.method).collect();
    assert_eq!(methods, ["PROPFIND", "FOOBAR"]);
}

#[test]
fn short_values_secret_only_by_their_name_do_not_hide_the_log_s_own_words() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let url = s.url("/p?code=200&auth_mode=OK");
    let (out, _) = run(&["-H", "X-Auth-Method: GET", "-u", "alice:pa55word", &url]);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(err.contains(" GET ") && err.contains("200 OK"), "{err}");
    assert!(!err.contains("pa55word"), "{err}");
}
