//! A redirect the run does not follow is the final answer: `-w` reports its code and its
//! Location as `%{redirect_url}` (curl's way of reporting a redirect it did not follow), and
//! the JSON log's attempt carries its status, on every path that ends a run at a redirect:
//! `-L` absent, a method change declined (a PATCH answered 301/302 is not sent again),
//! `--max-redirs` reached, a Location of a scheme that is refused (`ftp://`, or one
//! `--proto-redir` leaves out), a redirect with no Location. Over methods x redirect codes x `-L` or not, with curl 7.88
//! as the oracle where it ends at the same answer (without `-L`, or with `--max-redirs 0`).

use crate::common::*;
use std::process::Output;

/// The `-w` variables compared: what the answer that arrived says, and how the run got it.
const W: &str = "%{http_code}|%{response_code}|%{redirect_url}|%{url_effective}|%{num_redirects}|%{method}|%{http_version}|%{content_type}|%header{location}|%{size_upload}\\n";

const METHODS: [&str; 6] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
const CODES: [u16; 5] = [301, 302, 303, 307, 308];

/// A redirect to `to` (no Location when empty).
fn moved(status: u16, to: &str) -> Step {
    let mut headers = vec![("Content-Type".to_string(), "text/html".to_string())];
    if !to.is_empty() {
        headers.push(("Location".into(), to.into()));
    }
    Step::Respond {
        status,
        headers,
        body: b"moved\n".to_vec(),
    }
}

/// The method's flags, the same for both tools: `-I` for HEAD (curl's `-X HEAD` waits for a
/// body), `-X M -d x` for a method with a body, `-X M` else.
fn method_args(method: &str) -> Vec<&str> {
    match method {
        "HEAD" => vec!["-I"],
        "POST" | "PUT" | "PATCH" => vec!["-X", method, "-d", "x"],
        _ => vec!["-X", method],
    }
}

/// Whether retry-http declines to follow `status` to `method` under `-L` (it would send a
/// non-idempotent request again; POST becomes a GET, as in curl).
fn declined(method: &str, status: u16) -> bool {
    method == "PATCH" && matches!(status, 301 | 302)
}

/// One run of retry-http (`--attempts 1`, the JSON log) or curl, against its own server
/// answering `status` with a Location to `to`, then 200. Returns the output and the port.
fn go(curl: bool, method: &str, status: u16, to: &str, extra: &[&str]) -> (Output, u16) {
    let s = Server::start(vec![moved(status, to), Step::status(200, "final\n")]).unwrap();
    let url = s.url("/from?q=1");
    let mut cmd = if curl {
        let mut c = command_for(std::path::Path::new("curl"));
        c.args(["-q", "-s"]);
        c
    } else {
        let mut c = std_command();
        c.args(["--attempts", "1", "--log-format", "json"]);
        c
    };
    cmd.args(method_args(method))
        .args(extra)
        .args(["-o", "/dev/null", "-w", W, &url]);
    let out = cmd.output().expect("runs");
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    (out, port)
}

/// stdout with the port made `PORT`.
fn written(out: &Output, port: u16) -> String {
    String::from_utf8_lossy(&out.stdout).replace(&port.to_string(), "PORT")
}

/// What is wrong with retry-http's JSON log of a run that ended at a `status` redirect:
/// its last attempt carries that status, the summary the exit code.
fn log_problem(out: &Output, status: u16) -> Option<String> {
    let attempts = json_lines(out, "attempt");
    let summary = json_lines(out, "summary");
    let last = attempts.last()?;
    let exit = out.status.code().unwrap_or(-1);
    (last["status"] != status || summary[0]["exit_code"] != exit)
        .then(|| format!("JSON log: attempt {last} summary {:?} exit {exit}", summary))
}

/// One case compared with curl ending at the same answer: `ours` are retry-http's flags,
/// `theirs` curl's. Returns what differs.
fn against_curl(method: &str, status: u16, ours: &[&str], theirs: &[&str]) -> Vec<String> {
    against_curl_to(method, status, "/final?x=1", ours, theirs)
}

/// [`against_curl`] with the redirect pointing `to` (nowhere when empty).
fn against_curl_to(
    method: &str,
    status: u16,
    to: &str,
    ours: &[&str],
    theirs: &[&str],
) -> Vec<String> {
    let name = format!("{method} {status} to {to:?} {ours:?}");
    let (o, op) = go(false, method, status, to, ours);
    let (c, cp) = go(true, method, status, to, theirs);
    let mut found = Vec::new();
    let (mut ow, mut cw) = (written(&o, op), written(&c, cp));
    // curl 7.88 empties %header{} once --max-redirs stops it, though it reports the code
    // and the Location; retry-http keeps the head that arrived (as -D writes it).
    if ours.contains(&"--max-redirs") {
        let without_header = |w: &str| {
            let mut f: Vec<&str> = w.split('|').collect();
            f.remove(8);
            f.join("|")
        };
        (ow, cw) = (without_header(&ow), without_header(&cw));
    }
    if ow != cw || !ow.starts_with(&format!("{status}|")) {
        found.push(format!(
            "{name}: -w differs\n  curl:       {cw:?}\n  retry-http: {ow:?}\n  {}",
            stderr(&o).lines().last().unwrap_or("")
        ));
    }
    found.extend(log_problem(&o, status).map(|p| format!("{name}: {p}")));
    found
}

/// A case where retry-http refuses the redirect's target: checked on its own (curl would go
/// there): the code and where it pointed, the first URL as `url_effective`, no redirect.
fn refused(status: u16, to: &str, extra: &[&str]) -> Vec<String> {
    let name = format!("GET {status} to {to} {extra:?}");
    let mut args = vec!["-L"];
    args.extend(extra);
    let (o, port) = go(false, "GET", status, to, &args);
    let want = format!(
        "{status}|{status}|{to}|http://127.0.0.1:PORT/from?q=1|0|GET|1.1|text/html|{to}|0\n"
    );
    let mut found = Vec::new();
    if written(&o, port) != want || code(&o) != 6 {
        found.push(format!(
            "{name}: exit {}, -w {:?}, expected exit 6, {want:?}",
            code(&o),
            written(&o, port)
        ));
    }
    found.extend(log_problem(&o, status).map(|p| format!("{name}: {p}")));
    found
}

fn all_cases() -> Vec<Box<dyn Fn() -> Vec<String> + Send + Sync>> {
    let mut cases: Vec<Box<dyn Fn() -> Vec<String> + Send + Sync>> = Vec::new();
    for method in METHODS {
        for status in CODES {
            // Without -L: the redirect is the answer, in both tools.
            cases.push(Box::new(move || against_curl(method, status, &[], &[])));
            // With -L: a declined redirect ends the run where curl without -L ends; one
            // followed ends at the 200, and -w says so.
            cases.push(Box::new(move || {
                if declined(method, status) {
                    return against_curl(method, status, &["-L"], &[]);
                }
                let (o, port) = go(false, method, status, "/final?x=1", &["-L"]);
                let w = written(&o, port);
                let ok = w.starts_with("200|200||http://127.0.0.1:PORT/final?x=1|1|");
                let log = log_problem(&o, 200);
                match (ok && code(&o) == 0, log) {
                    (true, None) => vec![],
                    (_, log) => vec![format!("{method} {status} -L followed: -w {w:?} {log:?}")],
                }
            }));
            // --max-redirs 0: the first redirect is the last answer, as in curl (exit 47
            // there, 6 here; a declined one ends first, exit 3).
            cases.push(Box::new(move || {
                let cut = ["-L", "--max-redirs", "0"];
                against_curl(method, status, &cut, &cut)
            }));
        }
    }
    for status in CODES {
        // A redirect with no Location is the answer under -L too, in both tools.
        cases.push(Box::new(move || {
            against_curl_to("GET", status, "", &["-L"], &["-L"])
        }));
        cases.push(Box::new(move || {
            refused(status, "ftp://127.0.0.1:1/f", &[])
        }));
        cases.push(Box::new(move || {
            refused(
                status,
                "https://127.0.0.1:1/tls",
                &["--proto-redir", "=http"],
            )
        }));
    }
    cases
}

#[test]
fn a_redirect_not_followed_is_the_final_answer_in_write_out_and_the_log() {
    let cases = all_cases();
    let found: Vec<String> = judged_four_at_a_time(&cases, |c| c());
    assert!(
        found.is_empty(),
        "{} of {} cases:\n{}",
        found.len(),
        cases.len(),
        found.join("\n")
    );
}
