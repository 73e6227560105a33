//! curl as the oracle: the same command line given to curl and to retry-http (with
//! `--attempts 1`, so retries do not differ), each against its own loopback recording server
//! with the same script and in its own folder holding the same input files. Compared: what
//! reaches the server (method, request target, the headers that matter, the body), the files
//! the run leaves in its folder, stdout (the body or the `-w` output) and the exit code,
//! through the documented mapping of curl's codes to this tool's (README's exit code table
//! and "curl's flags at a glance").
//!
//! Every difference found is either a case's failure or a row of [`DIFFERENCES`], the one
//! list of deliberate differences (docs/curl.md's "Deliberate differences from curl" holds the
//! same list). A case that meets a listed difference names its row, and the test checks the
//! difference is still there, so the list cannot go stale.
//!
//! No timing is asserted: the test holds on a loaded machine.

use crate::common::*;
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The deliberate differences from curl 7.88 this test records: a key a case names, what
/// differs, and why. docs/curl.md's "Deliberate differences from curl" lists the same.
const DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "header-case",
        "request header names go out in lower case",
        "the HTTP library (ureq, through the http crate) keeps field names in lower case; \
         HTTP/1.1 names are case-insensitive (RFC 9110 section 5.1). The test compares names \
         case-insensitively.",
    ),
    (
        "user-agent",
        "User-Agent is retry-http/VERSION, not curl/VERSION",
        "the server sees which tool made the request. Not compared.",
    ),
    (
        "exit-codes",
        "exit codes are retry-http's: an HTTP error under -f is 3 (4 for a retryable status \
         once the attempts run out), not 22; too many redirects is 6 (a failure not retried), not 47; a usage or \
         input-file error is 2, not 26 or 3",
        "one code per outcome of a retried run (README's exit code table); the test maps \
         curl's code through that table",
    ),
    (
        "remote-header-name",
        "-J/--remote-header-name is refused (exit 2, nothing sent)",
        "a name chosen by the server is not written to disk; use -o NAME or -O",
    ),
    (
        "config-unknown-option",
        "an unknown option in a -K file is an error (exit 2, nothing sent); curl warns and \
         goes on",
        "a cron job whose config file has a typo should fail loudly, not run without it",
    ),
    (
        "missing-input-file",
        "an absent --netrc-file or -b FILE is an error (exit 2, nothing sent); curl goes on \
         without credentials or cookies",
        "a request without the credentials it was meant to carry is not sent",
    ),
    (
        "always-fail",
        "an HTTP error status ends the run with exit 3 (or 4 once a retryable status's \
         attempts run out) and writes no body, with or without -f; curl without -f exits 0 \
         and writes the error page",
        "an error page must not reach a pipe or a file as if it were the answer \
         (`retry-http -sSL URL | sh`); --fail-with-body keeps the body",
    ),
    (
        "proto-redir-write-out",
        "after a redirect --proto-redir refuses, -w reports the last answer that came (its URL \
         as url_effective, the refused URL as redirect_url, the redirects followed); curl \
         reports the refused URL as url_effective and counts it as followed",
        "nothing was sent to the refused URL; -w says what happened, as after --max-redirs, \
         where curl agrees",
    ),
    (
        "netrc-url-password",
        "a URL holding a user and a password sends them; curl 7.88 sends the URL's user with \
         the netrc entry's password, even when the entry's login is another user",
        "the credentials written in the URL are the ones meant; pairing one user's name with \
         another's password is never right",
    ),
];

/// Differences this test found that are not deliberate and are not fixed yet: a key, what
/// differs. A case that meets one names it; once fixed the case reports it, and the row goes.
const OPEN: &[(&str, &str)] = &[];

/// The headers compared (case-insensitively, by name): the ones a command line decides, and
/// Accept, sent by default as curl sends it.
const COMPARED: [&str; 10] = [
    "host",
    "accept",
    "authorization",
    "cookie",
    "content-type",
    "content-length",
    "referer",
    "range",
    "x-custom",
    "x-other",
];

/// One command line given to both tools.
struct Case {
    name: &'static str,
    /// Arguments; `{url}` is `http://127.0.0.1:PORT`, `{port}` the server's port.
    args: Vec<&'static str>,
    /// Files written into the run's folder first (name, content with the same placeholders).
    files: Vec<(&'static str, &'static str)>,
    /// The server's script.
    script: Vec<Step>,
    /// What is compared.
    compare: Compare,
}

/// How a case is judged.
enum Compare {
    /// Everything: requests, files, stdout, the exit code through [`map_curl_exit`].
    All,
    /// Exit codes only (through [`map_curl_exit`]), and retry-http sends nothing.
    ExitOnly,
    /// A difference listed in [`DIFFERENCES`] or [`OPEN`] in what [`Compare::All`] compares:
    /// the comparison must find something.
    Differs(&'static str),
    /// A listed deliberate difference: retry-http exits with this code and sends nothing,
    /// where curl does something else (its code differs).
    Deliberate(&'static str, i32),
}

/// curl's exit code as this tool's, for a run with `--attempts 1` (README's exit code table
/// against curl's: `man curl`, EXIT CODES). `status` is the final answer's status, if any.
fn map_curl_exit(curl: i32, status: Option<u16>) -> i32 {
    match curl {
        0 => 0,
        // An HTTP error under -f: 3, or 4 for a status in the default --retry-on.
        22 => match status {
            Some(408 | 429 | 500 | 502 | 503 | 504 | 529) => 4,
            _ => 3,
        },
        // Bad option, bad URL, unreadable file: a usage error, nothing sent.
        2 | 3 | 26 => 2,
        // A refused or failed connection: retryable, and the attempts ran out.
        7 => 4,
        // Too many redirects: a failure that is not retried (docs/policy.md: "too many redirects
        // ... never retried"), 6.
        47 => 6,
        // A protocol not allowed (--proto-redir): a failure not retried (docs/curl.md's table:
        // "exit 6 where curl exits 1").
        1 => 6,
        // The output cannot be written.
        23 => 1,
        other => panic!("curl exit {other} has no mapping here"),
    }
}

/// What one run left behind.
struct Ran {
    out: Output,
    requests: Vec<Recorded>,
    files: BTreeMap<String, Vec<u8>>,
    port: u16,
}

fn fill(text: &str, port: u16) -> String {
    text.replace("{url}", &format!("http://127.0.0.1:{port}"))
        .replace("{port}", &port.to_string())
}

/// Every file under `dir` (relative names), but the inputs.
fn files_under(dir: &Path, base: &Path, inputs: &[&str], into: &mut BTreeMap<String, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let rel = p
            .strip_prefix(base)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_default();
        if p.is_dir() {
            files_under(&p, base, inputs, into);
        } else if !inputs.contains(&rel.as_str()) && rel != ".curlrc" {
            into.insert(rel, std::fs::read(&p).unwrap_or_default());
        }
    }
}

/// Whether a case speaks to `[::1]`.
fn on_v6(case: &Case) -> bool {
    case.args.iter().any(|a| a.contains("[::1]"))
}

fn run_tool(case: &Case, curl: bool) -> Ran {
    // The IPv6 literal URLs: each request answered `200 v6`.
    let server = if on_v6(case) {
        Server::start_v6(vec![Step::status(200, "v6\n")]).expect("an IPv6 loopback")
    } else {
        Server::start(case.script.clone()).expect("server starts")
    };
    let port: u16 = server
        .url("")
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    let dir = tempfile::tempdir().expect("tempdir");
    let base: PathBuf = dir.path().to_path_buf();
    std::fs::create_dir(base.join("out")).expect("out folder");
    for (name, text) in &case.files {
        std::fs::write(base.join(name), fill(text, port)).expect("input file");
    }
    let args: Vec<String> = case.args.iter().map(|a| fill(a, port)).collect();
    let mut cmd = if curl {
        let mut c = command_for(Path::new("curl"));
        // curl's config file is not read (-q must come first).
        c.arg("-q").arg("-s");
        c
    } else {
        let mut c = std_command();
        c.args(["--attempts", "1", "-s"]);
        c
    };
    cmd.args(&args)
        .current_dir(&base)
        .env("HOME", &base)
        .env_remove("CURL_HOME");
    let out = cmd.output().expect("the tool runs");
    let mut inputs: Vec<&str> = case.files.iter().map(|(n, _)| *n).collect();
    inputs.push("out");
    let mut files = BTreeMap::new();
    files_under(&base, &base, &inputs, &mut files);
    Ran {
        out,
        requests: server.requests(),
        files,
        port,
    }
}

/// A request as compared: method, target, the [`COMPARED`] headers (the port made `PORT`),
/// the body.
fn view(reqs: &[Recorded], port: u16) -> Vec<String> {
    reqs.iter()
        .map(|r| {
            let mut s = format!("{} {}\n", r.method, r.target);
            for name in COMPARED {
                for (n, v) in &r.headers {
                    if n.eq_ignore_ascii_case(name) {
                        s += &format!("{name}: {}\n", v.replace(&port.to_string(), "PORT"));
                    }
                }
            }
            s + &String::from_utf8_lossy(&r.body)
        })
        .collect()
}

fn ok(body: &str) -> Step {
    Step::status(200, body)
}

fn redirect(to: &str) -> Step {
    Step::Respond {
        status: 302,
        headers: vec![("Location".into(), to.into())],
        body: Vec::new(),
    }
}

fn cases() -> Vec<Case> {
    let all = |name, args: Vec<&'static str>| Case {
        name,
        args,
        files: vec![],
        script: vec![ok("hello\n")],
        compare: Compare::All,
    };
    let mut v = vec![
        // URL forms.
        all("plain", vec!["{url}/p/a%20b?q=1&r=%2F"]),
        all("no scheme", vec!["127.0.0.1:{port}/x"]),
        all("explicit port, root", vec!["http://127.0.0.1:{port}"]),
        all("user info", vec!["http://user:secret@127.0.0.1:{port}/u"]),
        all(
            "user info percent-encoded",
            vec!["http://us%3Aer:p%40ss%25w%20rd@127.0.0.1:{port}/u"],
        ),
        all(
            "user info, user only and empty password",
            vec!["http://user:@127.0.0.1:{port}/"],
        ),
        all("-u", vec!["-u", "alice:pa:ss", "{url}/"]),
        all(
            "-u over user info",
            vec!["-u", "alice:pw", "http://bob:x@127.0.0.1:{port}/"],
        ),
        all("--url", vec!["--url", "{url}/via-url"]),
        all("IPv6 literal", vec!["http://[::1]:{port}/six?x=1"]),
        all(
            "IPv6 literal with user info",
            vec!["-d", "b=1", "http://u%40x:p%3Aw@[::1]:{port}/six"],
        ),
        all("IPv6 literal without a scheme", vec!["[::1]:{port}/six"]),
        // Request fields.
        all(
            "headers and a body",
            vec![
                "-H",
                "X-Custom: one",
                "-H",
                "X-Other:   spaced",
                "-H",
                "Content-Type: text/x-thing",
                "-d",
                "a=b",
                "{url}/post",
            ],
        ),
        all("data joined", vec!["-d", "x=1", "-d", "y=2", "{url}/"]),
        all(
            "-X PUT with data",
            vec!["-X", "PUT", "--data-binary", "raw body", "{url}/"],
        ),
        all("-G", vec!["-G", "-d", "a=1", "-d", "b=2", "{url}/s?z=0"]),
        all(
            "values that begin with a dash",
            vec!["-d", "-1", "-d", "--x", "-e", "-ref", "{url}/"],
        ),
        all("--json, a negative number", vec!["--json", "-5", "{url}/"]),
        all(
            "--max-filesize 0 is no limit",
            vec!["--max-filesize", "0", "{url}/"],
        ),
        all(
            "--max-filesize 0 is no limit, to a file",
            vec!["--max-filesize", "0", "-o", "got.txt", "{url}/"],
        ),
        all("referer", vec!["-e", "http://ref.example/from", "{url}/"]),
        all("range header", vec!["-H", "Range: bytes=0-3", "{url}/"]),
        all("cookie string", vec!["-b", "a=1; b=2", "{url}/"]),
        all("-I", vec!["-I", "{url}/head"]),
    ];
    v.push(Case {
        name: "netrc file",
        args: vec!["--netrc-file", "netrc", "{url}/n"],
        files: vec![(
            "netrc",
            "machine other.example login no password no\nmachine 127.0.0.1 login nuser password n%pw\n",
        )],
        script: vec![ok("n")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "netrc file, URL user wins",
        args: vec![
            "--netrc-file",
            "netrc",
            "http://urluser:urlpw@127.0.0.1:{port}/",
        ],
        files: vec![("netrc", "machine 127.0.0.1 login nuser password npw\n")],
        script: vec![ok("n")],
        compare: Compare::Differs("netrc-url-password"),
    });
    v.push(Case {
        name: "netrc file, URL user without a password",
        args: vec!["--netrc-file", "netrc", "http://nuser@127.0.0.1:{port}/"],
        files: vec![("netrc", "machine 127.0.0.1 login nuser password npw\n")],
        script: vec![ok("n")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "netrc optional and absent",
        args: vec!["--netrc-optional", "--netrc-file", "absent", "{url}/"],
        files: vec![],
        script: vec![ok("n")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "config file with output and write-out",
        args: vec!["-K", "cfg"],
        files: vec![(
            "cfg",
            "url = \"{url}/k\"\noutput = \"got.txt\"\nwrite-out = \"%{http_code} %{size_download}\\n\"\nuser = \"cu:cp\"\n",
        )],
        script: vec![ok("k body")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "cookie file",
        args: vec!["-b", "jar.txt", "{url}/c/x"],
        files: vec![(
            "jar.txt",
            "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tabc\n127.0.0.1\tFALSE\t/c\tFALSE\t0\tpath\tyes\n127.0.0.1\tFALSE\t/other\tFALSE\t0\tno\tno\n",
        )],
        script: vec![ok("c")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "config file values",
        args: vec!["-K", "cfg"],
        files: vec![(
            "cfg",
            "# a comment\nurl = \"{url}/k?x=1\"\nheader = \"X-Custom: from config\"\n--data \"k=v\"\nuser-agent = \"same/1\"\n-e http://ref.example/k\n",
        )],
        script: vec![ok("k")],
        compare: Compare::All,
    });
    // -w after every kind of ending.
    let w = "%{http_code} %{response_code} %{num_redirects} %{size_download} %{url_effective} [%{redirect_url}] %{content_type} %{exitcode}\\n";
    v.push(Case {
        name: "-w success",
        args: vec!["-o", "/dev/null", "-w", w, "{url}/w"],
        files: vec![],
        script: vec![Step::Respond {
            status: 200,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: b"12345".to_vec(),
        }],
        compare: Compare::All,
    });
    v.push(Case {
        name: "-w after -f and a 404",
        args: vec!["-f", "-w", w, "{url}/missing"],
        files: vec![],
        script: vec![Step::status(404, "no such page")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "-w after -f and a 503",
        args: vec!["-f", "-w", w, "{url}/down"],
        files: vec![],
        script: vec![Step::status(503, "down")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "-w after a redirect chain followed",
        args: vec!["-L", "-w", w, "{url}/r0"],
        files: vec![],
        script: vec![redirect("/r1"), redirect("/r2"), ok("end")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "-w after a redirect chain cut by --max-redirs",
        args: vec!["-L", "--max-redirs", "1", "-w", w, "{url}/r0"],
        files: vec![],
        script: vec![redirect("/r1"), redirect("/r2"), redirect("/r3"), ok("end")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "-w after a redirect --proto-redir refuses",
        args: vec!["-L", "--proto-redir", "=http", "-w", w, "{url}/r0"],
        files: vec![],
        script: vec![redirect("/r1"), redirect("https://127.0.0.1:1/tls")],
        compare: Compare::Differs("proto-redir-write-out"),
    });
    v.push(Case {
        name: "-w with a redirect not followed",
        args: vec!["-w", w, "{url}/r0"],
        files: vec![],
        script: vec![redirect("/elsewhere")],
        compare: Compare::All,
    });
    // Heads and uploads.
    v.push(all("-i", vec!["-i", "{url}/i"]));
    v.push(all(
        "-D FILE",
        vec!["-D", "head.txt", "-o", "body.txt", "{url}/d"],
    ));
    v.push(Case {
        name: "-H @FILE and --data-urlencode",
        args: vec![
            "-H",
            "@hdrs",
            "--data-urlencode",
            "q=a b&c",
            "--data-urlencode",
            "@body.txt",
            "{url}/h",
        ],
        files: vec![
            ("hdrs", "X-Custom: from file\nX-Other: two\n"),
            ("body.txt", "x y"),
        ],
        script: vec![ok("h")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "-T to a folder URL",
        args: vec!["-T", "up.txt", "{url}/up/"],
        files: vec![("up.txt", "upload body\n")],
        script: vec![ok("u")],
        compare: Compare::All,
    });
    v.push(Case {
        name: "-w without -f after a 404",
        args: vec!["-w", "%{http_code}\n", "{url}/gone"],
        files: vec![],
        script: vec![Step::status(404, "gone")],
        compare: Compare::Differs("always-fail"),
    });
    // Downloads.
    v.push(all(
        "-w after -o",
        vec![
            "-o",
            "f.bin",
            "-w",
            "%{size_download} %{filename_effective}\n",
            "{url}/f",
        ],
    ));
    v.push(all(
        "--create-dirs",
        vec!["--create-dirs", "-o", "a/b/c.txt", "{url}/c"],
    ));
    v.push(all("-o", vec!["-o", "saved.bin", "{url}/d"]));
    v.push(all("-O", vec!["-O", "{url}/dir/file.txt?v=1"]));
    v.push(all(
        "-O --output-dir",
        vec!["-O", "--output-dir", "out", "{url}/a/b.tgz"],
    ));
    v.push(all(
        "-o --output-dir",
        vec!["-o", "n.txt", "--output-dir", "out", "{url}/x"],
    ));
    v.push(Case {
        name: "-J with Content-Disposition",
        args: vec!["-O", "-J", "{url}/dl"],
        files: vec![],
        script: vec![Step::Respond {
            status: 200,
            headers: vec![(
                "Content-Disposition".into(),
                "attachment; filename=\"report.csv\"".into(),
            )],
            body: b"a,b\n".to_vec(),
        }],
        compare: Compare::Deliberate("remote-header-name", 2),
    });
    // -K errors and absent input files: exit codes.
    let exit_only = |name, args: Vec<&'static str>, files| Case {
        name,
        args,
        files,
        script: vec![ok("x")],
        compare: Compare::ExitOnly,
    };
    v.push(exit_only(
        "config file absent",
        vec!["-K", "absent.cfg", "{url}/"],
        vec![],
    ));
    v.push(exit_only(
        "config file with an unclosed quote",
        vec!["-K", "cfg"],
        vec![("cfg", "url = \"{url}/\n")],
    ));
    v.push(exit_only(
        "config file naming no URL",
        vec!["-K", "cfg"],
        vec![("cfg", "header = \"X-Custom: v\"\n")],
    ));
    v.push(Case {
        name: "config file with an unknown option",
        args: vec!["-K", "cfg"],
        files: vec![("cfg", "url = \"{url}/\"\nno-such-option-here\n")],
        script: vec![ok("x")],
        compare: Compare::Deliberate("config-unknown-option", 2),
    });
    v.push(Case {
        name: "netrc file absent",
        args: vec!["--netrc-file", "absent", "{url}/"],
        files: vec![],
        script: vec![ok("x")],
        compare: Compare::Deliberate("missing-input-file", 2),
    });
    v.push(Case {
        name: "cookie file absent",
        args: vec!["-b", "absent.txt", "{url}/"],
        files: vec![],
        script: vec![ok("x")],
        compare: Compare::Deliberate("missing-input-file", 2),
    });
    v
}

fn judge(case: &Case) -> Vec<String> {
    let curl = run_tool(case, true);
    let ours = run_tool(case, false);
    let (cc, oc) = (code(&curl.out), code(&ours.out));
    let mut found = Vec::new();
    let status = curl
        .requests
        .last()
        .map(|_| {
            case.script
                .get(curl.requests.len() - 1)
                .or(case.script.last())
        })
        .and_then(|s| match s {
            Some(Step::Respond { status, .. }) => Some(*status),
            _ => None,
        });
    match case.compare {
        Compare::Deliberate(key, want) => {
            assert!(
                DIFFERENCES.iter().any(|(k, _, _)| *k == key),
                "{}: {key} is not in DIFFERENCES",
                case.name
            );
            if oc != want || !ours.requests.is_empty() {
                found.push(format!(
                    "{}: the listed difference {key} is gone: exit {oc}, {} requests sent ({})",
                    case.name,
                    ours.requests.len(),
                    stderr(&ours.out).trim()
                ));
            }
            if map_curl_exit(cc, status) == want {
                found.push(format!(
                    "{}: curl now agrees (exit {cc}): remove {key} from DIFFERENCES",
                    case.name
                ));
            }
        }
        Compare::ExitOnly => {
            if map_curl_exit(cc, status) != oc {
                found.push(format!(
                    "{}: curl exit {cc} (here {}), retry-http exit {oc}: {}",
                    case.name,
                    map_curl_exit(cc, status),
                    stderr(&ours.out).trim()
                ));
            }
            if oc == 2 && !ours.requests.is_empty() {
                found.push(format!("{}: a usage error sent a request", case.name));
            }
        }
        Compare::All | Compare::Differs(_) => {
            if curl.requests.is_empty() {
                found.push(format!(
                    "{}: curl sent nothing: a case that compares nothing",
                    case.name
                ));
            }
            if map_curl_exit(cc, status) != oc {
                found.push(format!(
                    "{}: curl exit {cc} (here {}), retry-http exit {oc}: {}",
                    case.name,
                    map_curl_exit(cc, status),
                    stderr(&ours.out).trim()
                ));
            }
            let (cv, ov) = (
                view(&curl.requests, curl.port),
                view(&ours.requests, ours.port),
            );
            if cv != ov {
                found.push(format!(
                    "{}: requests differ:\n  curl:       {cv:?}\n  retry-http: {ov:?}",
                    case.name
                ));
            }
            if curl.files != ours.files {
                let names = |f: &BTreeMap<String, Vec<u8>>| {
                    f.iter()
                        .map(|(n, b)| format!("{n} ({} bytes)", b.len()))
                        .collect::<Vec<_>>()
                };
                found.push(format!(
                    "{}: files differ: curl {:?}, retry-http {:?}",
                    case.name,
                    names(&curl.files),
                    names(&ours.files)
                ));
            }
            let norm = |r: &Ran| {
                String::from_utf8_lossy(&r.out.stdout).replace(&r.port.to_string(), "PORT")
            };
            let (cs, os) = (norm(&curl), norm(&ours));
            // %{exitcode} is each tool's own code: mapped before comparing.
            let cs = cs.replace(
                &format!(" {cc}\n"),
                &format!(" {}\n", map_curl_exit(cc, status)),
            );
            if cs != os {
                found.push(format!(
                    "{}: stdout differs:\n  curl:       {cs:?}\n  retry-http: {os:?}",
                    case.name
                ));
            }
        }
    }
    if let Compare::Differs(key) = case.compare {
        assert!(
            DIFFERENCES.iter().any(|(k, _, _)| *k == key) || OPEN.iter().any(|(k, _)| *k == key),
            "{}: {key} is listed nowhere",
            case.name
        );
        return if found.is_empty() {
            vec![format!(
                "{}: curl and retry-http now agree: remove {key} from its list",
                case.name
            )]
        } else {
            Vec::new()
        };
    }
    found
}

#[test]
fn curl_and_retry_http_agree_on_the_same_command_lines() {
    if Command::new("curl").arg("--version").output().is_err() {
        panic!("curl is needed by this test (.ci/run installs it)");
    }
    let cases = cases();
    let v6 = TcpListener::bind("[::1]:0").is_ok();
    let run: Vec<&Case> = cases.iter().filter(|c| v6 || !on_v6(c)).collect();
    // Four at a time: each case is two short processes and two servers of its own.
    let found: Vec<String> = judged_four_at_a_time(&run, |c| judge(c));
    assert!(
        found.is_empty(),
        "{} of {} command lines differ from curl in a way DIFFERENCES does not list:\n{}",
        found.len(),
        cases.len(),
        found.join("\n")
    );
}

/// Every header either tool sends, by command line: names (lower case) and values, but
/// what docs/curl.md says differs: the User-Agent's value (`user-agent`), a multipart
/// boundary and the length it changes (drawn by each tool), `--compressed`'s Accept-Encoding
/// (gzip only), `-T`'s `Expect: 100-continue` (not sent), and a POST without a body
/// (`Content-Length: 0`).
fn sent_headers(reqs: &[Recorded], port: u16, ours: bool, args: &[&str]) -> Vec<String> {
    let multipart = args.contains(&"-F");
    let mut sent: Vec<String> = reqs
        .iter()
        .flat_map(|r| r.headers.iter())
        .filter_map(|(n, v)| {
            let n = n.to_ascii_lowercase();
            let v = match n.as_str() {
                "user-agent" => "(this tool's)".to_string(),
                "accept-encoding" if args.contains(&"--compressed") => "(gzip or more)".into(),
                "content-type" if multipart => v.split("boundary=").next()?.to_string(),
                "content-length" if multipart => "(with the boundary)".into(),
                "content-length" if ours && v == "0" && args.contains(&"-X") => return None,
                "expect" if !ours && args.contains(&"-T") => return None,
                _ => v.replace(&port.to_string(), "PORT"),
            };
            Some(format!("{n}: {v}"))
        })
        .collect();
    sent.sort();
    sent
}

#[test]
fn the_headers_sent_by_default_are_curls_but_the_documented_differences() {
    let lines: [&[&'static str]; 14] = [
        &[],
        &["-d", "a=b"],
        &["-X", "POST"],
        &["--compressed"],
        &["-u", "a:b"],
        &["-e", "http://r.example/"],
        &["-A", "agent/1"],
        &["--json", "{}"],
        &["-F", "a=b"],
        &["-T", "up.txt"],
        &["-I"],
        &["-H", "Accept:"],
        &["-H", "Accept: text/plain"],
        &["-H", "User-Agent:"],
    ];
    let mut found = Vec::new();
    for args in lines {
        let mut all = args.to_vec();
        all.push("{url}/h");
        let case = Case {
            name: "headers",
            args: all,
            files: vec![("up.txt", "up\n")],
            script: vec![ok("h")],
            compare: Compare::All,
        };
        let (curl, ours) = (run_tool(&case, true), run_tool(&case, false));
        let (c, o) = (
            sent_headers(&curl.requests, curl.port, false, args),
            sent_headers(&ours.requests, ours.port, true, args),
        );
        if c != o || c.is_empty() {
            found.push(format!(
                "{args:?}:\n  curl:       {c:?}\n  retry-http: {o:?}"
            ));
        }
        // docs/curl.md never says a header that goes out is not sent ("no `Accept: */*`").
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/curl.md"))
            .expect("docs/curl.md")
            .to_ascii_lowercase();
        for header in &o {
            let name = header.split(':').next().unwrap_or("");
            if page.contains(&format!("no `{name}")) && !args.contains(&"-H") {
                found.push(format!(
                    "{args:?}: docs/curl.md says no `{name}`, but {header:?} is sent"
                ));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn every_listed_difference_is_in_the_manual() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/curl.md"))
        .expect("docs/curl.md");
    let section = page
        .split("\n## Deliberate differences from curl")
        .nth(1)
        .expect("docs/curl.md has a \"Deliberate differences from curl\" section");
    let section = section.split("\n#").next().unwrap_or(section);
    for (key, what, _) in DIFFERENCES {
        assert!(
            section.contains(&format!("`{key}`")),
            "docs/curl.md's list lacks `{key}` ({what})"
        );
    }
    // And the manual lists no difference that is gone (it said no Accept was sent).
    for line in section.lines().filter(|l| l.starts_with("- `")) {
        let key = line[3..].split('`').next().unwrap_or("");
        assert!(
            DIFFERENCES.iter().any(|(k, _, _)| *k == key),
            "docs/curl.md lists `{key}`, which is no difference any more: {line}"
        );
    }
}
