//! `--exit-codes curl`: every ending exits with curl's code for it (README's second exit-code
//! table, `exit::CURL_TABLE`). Each row curl can produce is checked against curl 7.88 on the
//! same case: the same fault from a loopback server of its own, the same flags, each tool's
//! retries ending on the same last attempt; the exit code must be the documented one for
//! both. The rows curl has no word for (a refusal by the breaker, not ready, a batch, a
//! signal) are checked against the documented value, and so are the usage errors of the
//! mode itself and `--health-exit`'s precedence. No timing is asserted.

use crate::common::*;
use crate::tls_support::{raw_tls_port, read_hello, tls_server};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// Where a case's requests go: a scripted server (each tool gets one of its own, with the
/// same script), or a fault that needs no script.
#[derive(Clone)]
enum Target {
    /// A scripted server on loopback, and the path asked for.
    Scripted(Vec<Step>, &'static str),
    /// A loopback port nothing listens on.
    Refused,
    /// A host name that cannot resolve (RFC 6761: `.invalid` never does).
    Unresolvable,
    /// A TLS server whose certificate no root trusts.
    UntrustedTls,
    /// A TLS port that answers the ClientHello in plain HTTP.
    PlainOnTls,
    /// A TLS port that closes after the ClientHello: a handshake cut.
    CutHandshake,
}

/// One case given to both tools.
struct Case {
    /// The row of the table it checks.
    row: &'static str,
    target: Target,
    /// Flags given to both.
    args: Vec<&'static str>,
    /// Flags given to retry-http only (its retries).
    ours: Vec<&'static str>,
    /// Flags given to curl only (its retries: the same number of attempts).
    curl: Vec<&'static str>,
    /// The documented code.
    want: i32,
}

/// curl's retries as retry-http's `--attempts 2`: one retry whatever failed, a second apart.
const CURL_RETRY: [&str; 5] = ["--retry", "1", "--retry-all-errors", "--retry-delay", "1"];

fn case(row: &'static str, target: Target, args: Vec<&'static str>, want: i32) -> Case {
    Case {
        row,
        target,
        args,
        ours: vec!["--attempts", "2"],
        curl: CURL_RETRY.to_vec(),
        want,
    }
}

fn scripted(steps: Vec<Step>) -> Target {
    Target::Scripted(steps, "/")
}

fn redirect_loop() -> Step {
    Step::with_header(302, "Location", "/again")
}

/// The rows curl can produce, each with a two-attempt script where the first attempt fails
/// otherwise than the last (so the code is the last attempt's).
fn cases() -> Vec<Case> {
    let ok = || Step::status(200, "fine\n");
    let reset = || Step::Reset;
    vec![
        case("0: success", scripted(vec![reset(), ok()]), vec![], 0),
        case(
            "0: an error status without -f",
            scripted(vec![Step::status(404, "gone")]),
            vec![],
            0,
        ),
        case(
            "22: an error status with -f",
            scripted(vec![Step::status(404, "gone")]),
            vec!["-f"],
            22,
        ),
        case(
            "0: a retried status, the run ending on it, without -f",
            scripted(vec![reset(), Step::status(503, "down")]),
            vec![],
            0,
        ),
        case(
            "22: a retried status, the run ending on it, with -f",
            scripted(vec![reset(), Step::status(503, "down")]),
            vec!["-f"],
            22,
        ),
        case(
            "28: the last attempt timed out",
            scripted(vec![Step::status(503, ""), Step::Hang]),
            vec!["-m", "1"],
            28,
        ),
        Case {
            row: "28: the deadline passed during an attempt (curl: -m)",
            target: scripted(vec![Step::Hang]),
            args: vec![],
            ours: vec!["--deadline", "1s"],
            curl: vec!["-m", "1"],
            want: 28,
        },
        case("7: refused", Target::Refused, vec![], 7),
        case("6: a name not resolved", Target::Unresolvable, vec![], 6),
        case(
            "60: TLS verification failed",
            Target::UntrustedTls,
            vec![],
            60,
        ),
        case(
            "35: another TLS failure (plain HTTP on a TLS port)",
            Target::PlainOnTls,
            vec![],
            35,
        ),
        case(
            "35: another TLS failure (the handshake cut)",
            Target::CutHandshake,
            vec![],
            35,
        ),
        case(
            "56: a reset before the answer",
            scripted(vec![Step::status(503, ""), reset()]),
            vec![],
            56,
        ),
        case(
            "56: a reset in the body",
            scripted(vec![
                Step::status(503, ""),
                Step::ResetMidBody {
                    declared: 100,
                    body: b"abc".to_vec(),
                    pause: Duration::from_millis(200),
                },
            ]),
            vec![],
            56,
        ),
        case(
            "23: the output cannot be written",
            scripted(vec![ok()]),
            vec!["-o", "/dev/full"],
            23,
        ),
        case(
            "47: too many redirects",
            scripted(vec![redirect_loop()]),
            vec!["-L", "--max-redirs", "2"],
            47,
        ),
        case(
            "63: --max-filesize",
            scripted(vec![Step::status(200, &"x".repeat(1000))]),
            vec!["--max-filesize", "10"],
            63,
        ),
        case(
            "8: the answer is not HTTP as expected",
            scripted(vec![Step::Raw(
                b"HTTP/1.1 200 OK\r\nBad Header Line\r\nContent-Length: 0\r\n\r\n".to_vec(),
            )]),
            vec![],
            8,
        ),
        case(
            "33: -C - and the server does not continue the file",
            scripted(vec![Step::status(200, "0123456789")]),
            vec!["-C", "-", "-o", "partial"],
            33,
        ),
        case(
            "2: a usage error",
            scripted(vec![ok()]),
            vec!["--no-such-flag"],
            2,
        ),
    ]
}

/// Runs one tool on `case` in a folder of its own; returns its output and the requests
/// its server saw (none for a target without a server).
fn run_tool(case: &Case, curl: bool) -> (Output, usize) {
    let dir = tempfile::tempdir().expect("a folder");
    // What `-C -` continues.
    std::fs::write(dir.path().join("partial"), "abc").expect("a partial file");
    let (url, server) = target_url(&case.target);
    let mut cmd = if curl {
        let mut c = command_for(Path::new("curl"));
        // curl's config file is not read (-q must come first).
        c.args(["-q", "-s"]).args(&case.curl);
        c
    } else {
        let mut c = std_command();
        c.args(["--exit-codes", "curl", "-s"])
            .args(FAST)
            .args(&case.ours);
        c
    };
    // The body goes nowhere, unless the case says where (curl takes the first -o).
    if !case.args.contains(&"-o") {
        cmd.args(["-o", "/dev/null"]);
    }
    cmd.args(&case.args)
        .arg(&url)
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env_remove("CURL_HOME");
    let out = cmd.output().expect("the tool runs");
    let seen = server.map_or(0, |s| s.requests().len());
    (out, seen)
}

/// The URL of `target`, and its scripted server (kept alive by the caller).
fn target_url(target: &Target) -> (String, Option<Server>) {
    match target {
        Target::Scripted(steps, path) => {
            let server = Server::start(steps.clone()).expect("a server");
            (server.url(path), Some(server))
        }
        Target::Refused => (closed_port_url(), None),
        Target::Unresolvable => ("http://no-such-host.invalid/".into(), None),
        Target::UntrustedTls => (tls_server("localhost", b"secure", "").url, None),
        Target::PlainOnTls => (
            raw_tls_port(|mut tcp| {
                read_hello(&mut tcp);
                let _ = std::io::Write::write_all(
                    &mut tcp,
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                );
            })
            .0,
            None,
        ),
        Target::CutHandshake => (raw_tls_port(|mut tcp| read_hello(&mut tcp)).0, None),
    }
}

/// What differs from the documented code, for one case: curl's code, retry-http's.
fn judge(case: &Case) -> Vec<String> {
    let (curl, _) = run_tool(case, true);
    let (ours, _) = run_tool(case, false);
    let (cc, oc) = (code(&curl), code(&ours));
    let mut found = Vec::new();
    if cc != case.want {
        found.push(format!(
            "{}: curl exits {cc}, the table says {}",
            case.row, case.want
        ));
    }
    if oc != case.want {
        found.push(format!(
            "{}: retry-http --exit-codes curl exits {oc}, the table says {}: {}",
            case.row,
            case.want,
            stderr(&ours).trim()
        ));
    }
    found
}

fn curl_is_here() {
    if Command::new("curl").arg("--version").output().is_err() {
        panic!("curl is needed by this test (.ci/run installs it)");
    }
}

/// Every row curl can produce: curl and retry-http exit with the documented code.
#[test]
fn each_row_curl_can_produce_exits_as_curl_does() {
    curl_is_here();
    let cases = cases();
    let found: Vec<String> = judged_four_at_a_time(&cases, judge);
    assert!(
        found.is_empty(),
        "{} of {} rows differ:\n{}",
        found.len(),
        cases.len(),
        found.join("\n")
    );
}

/// Where curl 7.88 is finer than the failure kinds it is mapped from (docs/curl.md lists
/// them): an empty reply (curl 52) is a reset here (56); a body that ends before its
/// announced length (curl 18) is cut as a reset in the body is (56, one failure kind
/// here); a status line that is not HTTP (curl 1, "unsupported protocol") a protocol error
/// (8). Checked still so, so that the list cannot go stale.
#[test]
fn the_listed_differences_from_curl_are_still_there() {
    curl_is_here();
    for (row, step, curl_code, ours_code) in [
        ("an empty reply", Step::Raw(Vec::new()), 52, 56),
        (
            "a body shorter than announced",
            Step::Truncate {
                declared: 100,
                body: b"abc".to_vec(),
            },
            18,
            56,
        ),
        (
            "a status line that is not HTTP",
            Step::Raw(b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n".to_vec()),
            1,
            8,
        ),
    ] {
        let c = Case {
            row,
            target: scripted(vec![step]),
            args: vec![],
            ours: vec!["--attempts", "1"],
            curl: vec![],
            want: ours_code,
        };
        let (curl, _) = run_tool(&c, true);
        let (ours, _) = run_tool(&c, false);
        assert_eq!(code(&curl), curl_code, "{row}: curl");
        assert_eq!(code(&ours), ours_code, "{row}: {}", stderr(&ours));
    }
}

/// Variables set for a run: name, value.
type Env<'a> = &'a [(&'a str, &'a str)];

/// retry-http with `args` (and `env` set), against nothing but what `args` names.
fn ours(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command();
    cmd.args(FAST).args(args).timeout(Duration::from_secs(60));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("binary runs")
}

/// The rows curl has no word for: refused by the breaker (7, curl's "could not connect"),
/// not ready (22, with -f or without), and a signal (its own code, as in the default mode).
#[test]
fn the_rows_curl_cannot_produce_exit_as_documented() {
    // The breaker: a first run fails and opens it; the second is refused before sending,
    // while the server would now answer 200.
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let server = Server::start(vec![Step::status(503, ""), Step::status(200, "up")]).unwrap();
    let url = server.url("/");
    let flags = [
        "--exit-codes",
        "curl",
        "--state",
        state.to_str().unwrap(),
        "--breaker-threshold",
        "1",
        "--attempts",
        "1",
        &url,
    ];
    let first = ours(&flags, &[]);
    assert_eq!(code(&first), 0, "a 503 without -f: {}", stderr(&first));
    let refused = ours(&flags, &[]);
    assert_eq!(code(&refused), 7, "{}", stderr(&refused));
    assert_eq!(server.requests().len(), 1, "the refused run sent nothing");
    // Not ready: the answer is a 200 whose body never says ready.
    for fail in [false, true] {
        let s = Server::start(vec![Step::status(200, "starting")]).unwrap();
        let mut args = vec![
            "--exit-codes",
            "curl",
            "--attempts",
            "2",
            "--until-body",
            "ready",
        ];
        if fail {
            args.push("-f");
        }
        let url = s.url("/");
        args.push(&url);
        let out = ours(&args, &[]);
        assert_eq!(code(&out), 22, "-f {fail}: {}", stderr(&out));
    }
    // A signal keeps its code.
    let hang = Server::start(vec![Step::Hang]).unwrap();
    let mut child = std_command()
        .args(["--exit-codes", "curl", "-s", &hang.url("/")])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while hang.requests().is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill sends a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
}

/// A batch exits as its first transfer in URL order whose code is not 0, mapped by the
/// same table: without -f an error status is 0 and the refused transfer after it decides;
/// with -f the error status does.
#[test]
fn a_batch_exits_with_its_first_failure_in_url_order_mapped() {
    let gone = Server::start(vec![Step::status(404, "gone")]).unwrap();
    let ok = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let (gone, ok) = (gone.url("/"), ok.url("/"));
    let refused = closed_port_url();
    for (extra, want) in [(None, 7), (Some("-f"), 22)] {
        for parallel in [false, true] {
            let mut args = vec!["--exit-codes", "curl", "--attempts", "1", "-s"];
            args.extend(extra);
            if parallel {
                args.push("-Z");
            }
            args.extend(["-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null"]);
            args.extend([ok.as_str(), gone.as_str(), refused.as_str()]);
            let out = ours(&args, &[]);
            assert_eq!(code(&out), want, "{args:?}: {}", stderr(&out));
            // The default table: the first failure's own code.
            let own: Vec<&str> = args.iter().skip(2).copied().collect();
            assert_eq!(code(&ours(&own, &[])), 3, "{own:?}");
        }
    }
}

/// The mode comes from the flag, the variable or a -K line, the flag over the variable;
/// without any, the codes are retry-http's own.
#[test]
fn the_mode_comes_from_the_flag_the_variable_or_a_config_file() {
    let gone = Server::start(vec![Step::status(404, "gone")]).unwrap();
    let url = gone.url("/");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cfg");
    std::fs::write(&cfg, "exit-codes = curl\n").unwrap();
    let cfg = cfg.to_str().unwrap();
    let env = [("RETRY_HTTP_EXIT_CODES", "curl")];
    let own_env = [("RETRY_HTTP_EXIT_CODES", "retry-http")];
    let cases: Vec<(Vec<&str>, Env, i32)> = vec![
        (vec![&url], &[], 3),
        (vec!["--exit-codes", "curl", &url], &[], 0),
        (vec!["--exit-codes", "retry-http", &url], &[], 3),
        (vec![&url], &env, 0),
        (vec!["--exit-codes", "retry-http", &url], &env, 3),
        (vec!["--exit-codes", "curl", &url], &own_env, 0),
        (vec!["-K", cfg, &url], &[], 0),
        (vec!["-K", cfg, "-f", &url], &[], 22),
    ];
    for (args, env, want) in cases {
        let out = ours(&args, env);
        assert_eq!(code(&out), want, "{args:?} {env:?}: {}", stderr(&out));
        // The summary keeps retry-http's code, and says the status when it differs.
        let err = stderr(&out);
        let end = match want {
            3 => "; exit 3\n".to_string(),
            other => format!("; exit 3 (status {other}, --exit-codes curl)\n"),
        };
        assert!(err.ends_with(&end), "{args:?} {env:?}: {err}");
    }
}

/// Any other mode is a usage error (exit 2) on one line naming both modes, from the
/// command line, the variable or a -K line, with nothing sent; so is a usage error under
/// curl's table.
#[test]
fn an_unknown_mode_is_a_usage_error_naming_both() {
    let server = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cfg");
    std::fs::write(&cfg, "exit-codes = CURL\n").unwrap();
    let cfg = cfg.to_str().unwrap();
    let env = [("RETRY_HTTP_EXIT_CODES", "curl7")];
    let cases: Vec<(Vec<&str>, Env)> = vec![
        (vec!["--exit-codes", "bogus", &url], &[]),
        (vec!["--exit-codes=", &url], &[]),
        (vec![&url], &env),
        (vec!["-K", cfg, &url], &[]),
        (
            vec!["--exit-codes", "curl", "--attempts", "zero", &url],
            &[],
        ),
    ];
    for (args, env) in cases {
        let out = ours(&args, env);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?} {env:?}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].starts_with("retry-http: error: "), "{err}");
        if !args.contains(&"zero") {
            assert!(
                lines[0].contains("retry-http") && lines[0].contains("curl]"),
                "names both modes: {err}"
            );
        }
    }
    assert!(server.requests().is_empty(), "a usage error sent a request");
}

/// `--health-exit` wins over both tables: 0 for a success, 1 for everything else, an
/// error status that curl's table makes 0 included.
#[test]
fn health_exit_wins_over_both_modes() {
    let ok = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let gone = Server::start(vec![Step::status(404, "gone")]).unwrap();
    let (ok, gone) = (ok.url("/"), gone.url("/"));
    let refused = closed_port_url();
    for mode in ["retry-http", "curl"] {
        for (url, want) in [(&ok, 0), (&gone, 1), (&refused, 1)] {
            let args = ["--exit-codes", mode, "--attempts", "1", url.as_str()];
            let mut flag = vec!["--health-exit"];
            flag.extend(args);
            let out = ours(&flag, &[]);
            assert_eq!(code(&out), want, "{flag:?}: {}", stderr(&out));
            let out = ours(&args, &[("RETRY_HTTP_HEALTH_EXIT", "1")]);
            assert_eq!(code(&out), want, "{args:?} with the variable");
        }
        let out = ours(
            &["--health-exit", "--exit-codes", mode, "--no-such-flag"],
            &[],
        );
        assert_eq!(code(&out), 1, "a usage error under --health-exit");
    }
}

/// Only the exit status changes: stdout and the -o file are the same in both modes, for
/// a success after a retry, an error status, and a body cut short; the status is each
/// table's.
#[test]
fn only_the_exit_status_changes() {
    let scripts = || {
        vec![
            vec![Step::Reset, Step::status(200, "the body\n")],
            vec![Step::status(404, "an error page\n")],
            vec![Step::Truncate {
                declared: 50,
                body: b"part".to_vec(),
            }],
        ]
    };
    let codes = [(0, 0), (3, 0), (4, 56)];
    for (i, script) in scripts().into_iter().enumerate() {
        for to_file in [false, true] {
            let mut seen = Vec::new();
            let (own, curl) = codes[i];
            for (mode, want) in [("retry-http", own), ("curl", curl)] {
                let server = Server::start(script.clone()).unwrap();
                let dir = tempfile::tempdir().unwrap();
                let file = dir.path().join("out");
                let url = server.url("/");
                let mut args = vec!["--exit-codes", mode, "--attempts", "2", "-s"];
                if to_file {
                    args.extend(["-o", file.to_str().unwrap()]);
                }
                args.push(&url);
                let out = ours(&args, &[]);
                assert_eq!(code(&out), want, "script {i}, {mode}: {}", stderr(&out));
                seen.push((out.stdout, std::fs::read(&file).ok()));
            }
            assert_eq!(seen[0], seen[1], "script {i}, -o {to_file}");
        }
    }
}
