//! `-w/--write-out` as scripts use it: the variables after a success and after a run with
//! no response at all, curl's variables, `%{json}`, `%header{}`, the stream switches,
//! `%{onerror}`; `-D -` before the body, and the Idempotency-Key named when a run fails.

use crate::common::*;
use serde_json::Value;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn redirect(to: &str) -> Step {
    Step::Respond {
        status: 302,
        headers: vec![("Location".into(), to.into())],
        body: Vec::new(),
    }
}

#[test]
fn json_describes_the_run_with_curls_keys() {
    let s = Server::start(vec![
        Step::status(503, ""),
        redirect("/b"),
        Step::with_header(200, "Content-Type", "text/plain"),
    ])
    .unwrap();
    let url = s.url("/a");
    let (out, took) = run_fast(&["-s", "-L", "-o", "/dev/null", "-w", "%{json}"], &url);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let j: Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    assert_eq!(j["http_code"], 200);
    assert_eq!(j["response_code"], 200);
    assert_eq!(j["exitcode"], 0);
    assert_eq!(j["errormsg"], Value::Null);
    assert_eq!(j["content_type"], "text/plain");
    assert_eq!(j["num_retries"], 1);
    assert_eq!(j["num_redirects"], 1);
    assert_eq!(j["num_connects"], 3, "one for the 503, one per hop after");
    assert_eq!(j["remote_ip"], "127.0.0.1");
    let port = url::Url::parse(&url).unwrap().port();
    assert_eq!(j["remote_port"].as_u64(), port.map(u64::from));
    assert_eq!(j["url"], url.as_str());
    assert_eq!(j["url_effective"], s.url("/b").as_str());
    assert_eq!(j["http_version"], "1.1");
    assert_eq!(j["scheme"], "HTTP");
    assert_eq!(j["method"], "GET");
    assert_eq!(j["filename_effective"], "/dev/null");
    assert_eq!(j["idempotency_key"], Value::Null);
    let t = |k: &str| {
        j[k].as_f64()
            .unwrap_or_else(|| panic!("{k} is a number: {j}"))
    };
    assert_eq!(t("time_appconnect"), 0.0, "no TLS");
    let steps = [
        "time_namelookup",
        "time_connect",
        "time_pretransfer",
        "time_starttransfer",
        "time_total",
    ];
    for w in steps.windows(2) {
        assert!(t(w[0]) <= t(w[1]), "{} <= {}: {j}", w[0], w[1]);
    }
    assert!(t("time_connect") > 0.0, "{j}");
    assert!(
        t("time_redirect") > 0.0 && t("time_redirect") <= t("time_namelookup"),
        "{j}"
    );
    assert!(t("time_total") <= took.as_secs_f64(), "{j}");
}

#[test]
fn times_have_six_decimals_and_a_failed_run_has_none_but_the_lookup() {
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let (out, _) = run_fast(
        &[
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{time_connect} %{time_total}",
        ],
        &s.url("/"),
    );
    let text = stdout(&out);
    for field in text.split(' ') {
        let (_, decimals) = field.split_once('.').expect("seconds.micros");
        assert_eq!(decimals.len(), 6, "{text}");
    }
    let (out, _) = run(&[
        "-s",
        "--attempts",
        "1",
        "-w",
        "%{http_code} %{time_connect} %{time_starttransfer} %{num_connects} [%{remote_ip}] %{remote_port}",
        &closed_port_url(),
    ]);
    assert_eq!(code(&out), 4);
    assert_eq!(stdout(&out), "000 0.000000 0.000000 0 [] 0");
}

#[test]
fn headers_by_name_and_the_content_type() {
    let s = Server::start(vec![Step::Respond {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("X-Part".into(), "one".into()),
            ("x-part".into(), "two".into()),
        ],
        body: b"{}".to_vec(),
    }])
    .unwrap();
    let (out, _) = run_fast(
        &[
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%header{content-TYPE}|%{content_type}|%header{X-PART}|%header{missing}|%{num_headers}",
        ],
        &s.url("/"),
    );
    let text = stdout(&out);
    let (fields, count) = text.rsplit_once('|').unwrap();
    assert_eq!(fields, "application/json|application/json|one, two|");
    assert!(count.parse::<u32>().unwrap() >= 3, "{text}");
}

#[test]
fn onerror_and_errormsg_speak_only_of_failures() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let format = "done%{onerror} failed (%{exitcode}): %{errormsg}";
    let (out, _) = run_fast(&["-s", "-o", "/dev/null", "-w", format], &s.url("/"));
    assert_eq!(stdout(&out), "done");
    let (out, _) = run(&["-s", "--attempts", "1", "-w", format, &closed_port_url()]);
    let text = stdout(&out);
    assert!(text.starts_with("done failed (4): "), "{text}");
    assert!(text.contains("connection refused"), "{text}");
}

#[test]
fn stderr_and_stdout_switch_the_stream() {
    let s = Server::start(vec![Step::status(200, "body")]).unwrap();
    let (out, _) = run_fast(
        &["-s", "-w", "[out%{stderr}err %{http_code}\\n%{stdout}more]"],
        &s.url("/"),
    );
    assert_eq!(stdout(&out), "body[outmore]");
    assert_eq!(stderr(&out), "err 200\n", "-s does not hide -w text");
}

#[test]
fn an_unknown_variable_is_dropped_with_curls_warning() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run_fast(&["-s", "-w", "a%{nope}b"], &s.url("/"));
    assert_eq!(code(&out), 0);
    assert_eq!(stdout(&out), "ab", "dropped, as curl drops it");
    assert!(
        stderr(&out).contains("unknown --write-out variable: 'nope'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn dump_header_to_stdout_comes_before_the_body_and_only_the_final_one() {
    let s = Server::start(vec![
        Step::with_header(503, "X-Attempt", "first"),
        Step::Respond {
            status: 200,
            headers: vec![("X-Attempt".into(), "second".into())],
            body: b"BODY".to_vec(),
        },
    ])
    .unwrap();
    let (out, _) = run_fast(&["-s", "-D", "-", "-w", "|%{http_code}"], &s.url("/"));
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text:?}");
    assert!(text.ends_with("\r\n\r\nBODY|200"), "{text:?}");
    assert!(
        text.contains("second") && !text.contains("first"),
        "{text:?}"
    );
    assert_eq!(text.matches("HTTP/1.1").count(), 1, "{text:?}");

    // The run fails: the last answer's head is still written, once.
    let s = Server::start(vec![Step::status(503, "no")]).unwrap();
    let (out, _) = run(&["-s", "--attempts", "1", "-D", "-", &s.url("/")]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("HTTP/1.1 503"), "{}", stdout(&out));
    assert!(
        !stdout(&out).contains("no"),
        "no error body without --fail-with-body"
    );
}

#[test]
fn a_failed_run_names_its_idempotency_key() {
    let s = Server::start(vec![Step::status(503, ""), Step::status(503, "")]).unwrap();
    let url = s.url("/jobs");
    let args = [
        "-s",
        "--attempts",
        "2",
        "--idempotency-key",
        "auto",
        "-w",
        "%{idempotency_key}",
        "POST",
        "-d",
        "x=1",
    ];
    let (out, _) = run_fast(&args, &url);
    assert_eq!(code(&out), 4);
    let sent = s.requests()[0]
        .header("idempotency-key")
        .expect("a key was sent")
        .to_string();
    assert_eq!(stdout(&out), sent);
    let last = stderr(&out);
    assert!(
        last.trim_end()
            .ends_with(&format!("; Idempotency-Key: {sent}; exit 4")),
        "{last}"
    );

    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let (out, _) = run_fast(
        &[
            "--log-format",
            "json",
            "--attempts",
            "1",
            "--idempotency-key",
            "job-42",
            "POST",
            "-d",
            "x",
        ],
        &s.url("/"),
    );
    let summary = json_lines(&out, "summary");
    assert_eq!(summary[0]["idempotency_key"], "job-42", "{summary:?}");

    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let (out, _) = run_fast(&["--log-format", "json", "--attempts", "1"], &s.url("/"));
    assert_eq!(
        json_lines(&out, "summary")[0]["idempotency_key"],
        Value::Null
    );
}

#[test]
fn write_out_after_success_and_failure() {
    let s = Server::start(vec![Step::status(503, ""), Step::status(200, "body")]).unwrap();
    let url = s.url("/w");
    let (out, _) = run_fast(
        &[
            "-w",
            "\\n%{http_code} %{num_retries} %{exitcode} %{size_download} %{url_effective}\\n",
        ],
        &url,
    );
    assert_eq!(code(&out), 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("body\n200 1 0 4 {url}\n")
    );

    let dead = closed_port_url();
    let (out, _) = run(&[
        "-o",
        "/dev/null",
        "-s",
        "--attempts",
        "1",
        "-w",
        "%{http_code}",
        &dead,
    ]);
    assert_eq!(code(&out), 4);
    assert_eq!(out.stdout, b"000", "no response at all is 000, as in curl");
}
