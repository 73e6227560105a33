//! Inputs that are not what they seem, refused before anything is sent: every URL, status
//! list and duration the run takes, from each place it takes them (the command line, a `-K`
//! file, the environment). A URL whose host the URL standard would make up from its path
//! (`http:///x` sent to a host named `x`), a status list naming what `--retry-on` can never
//! retry (a 3xx, which `-L` follows, a 2xx, a 1xx) or `--until-status` can never see (a 1xx),
//! a positive duration below the 1 ms the timers count in (`-m 1e-10`, which read as 0 ran
//! with no limit) or none at all (NaN, infinite, negative, overflowing): exit 2, one line
//! naming the flag and what is accepted, no request to the listening server, no file.

use crate::common::*;

/// Where a value comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Source {
    Line,
    Config,
    Env,
}

/// A flag, its names in `-K` and the environment, the bad values it is given and what its
/// error line must say besides the flag.
struct Row {
    flag: &'static str,
    config: &'static str,
    env: Option<&'static str>,
    bad: &'static [(&'static str, &'static str)],
}

/// Positive times below 1 ms, and values that are no time at all, as seconds.
const BAD_SECONDS: &[(&str, &str)] = &[
    ("1e-10", "1ms"),
    ("0.0005", "1ms"),
    ("0.0000001s", "1ms"),
    ("500us", "1ms"),
    ("1ns", "1ms"),
    ("-1", "seconds"),
    ("-0", "seconds"),
    ("+1", "seconds"),
    ("nan", "seconds"),
    ("inf", "seconds"),
    ("1e400", "seconds"),
    ("99999999999999999999999s", "seconds"),
];

/// The same for a duration with a unit.
const BAD_DURATIONS: &[(&str, &str)] = &[
    ("1ns", "1ms"),
    ("999us", "1ms"),
    ("0.0000001s", "1ms"),
    ("0.5ms", "1ms"),
    ("-1s", "expected"),
    ("-0s", "expected"),
    ("nan", "expected"),
    ("inf", "expected"),
    ("1e400", "expected"),
    ("99999999999999999999999s", "expected"),
    ("3651d", "10 years"),
];

/// What `--retry-on` can never retry, and lists that are no list.
const BAD_RETRY_ON: &[(&str, &str)] = &[
    ("302", "-L"),
    ("3xx", "-L"),
    ("300-399", "-L"),
    ("5xx,301", "-L"),
    ("100-599", "400 to 599"),
    ("200", "400 to 599"),
    ("2xx", "400 to 599"),
    ("1xx", "400 to 599"),
    ("101", "400 to 599"),
    ("0", "100 to 599"),
    ("600", "100 to 599"),
    ("6xx", "100 to 599"),
    ("5xx,", "100 to 599"),
];

const BAD_UNTIL_STATUS: &[(&str, &str)] = &[
    ("1xx", "200 to 599"),
    ("100", "200 to 599"),
    ("100-200", "200 to 599"),
    ("0", "100 to 599"),
    ("600", "100 to 599"),
];

fn rows() -> Vec<Row> {
    let seconds = |flag, config| Row {
        flag,
        config,
        env: None,
        bad: BAD_SECONDS,
    };
    let duration = |flag, config, env| Row {
        flag,
        config,
        env: Some(env),
        bad: BAD_DURATIONS,
    };
    vec![
        seconds("--max-time", "max-time"),
        seconds("--speed-time", "speed-time"),
        seconds("--retry-delay", "retry-delay"),
        seconds("--retry-max-time", "retry-max-time"),
        Row {
            env: Some("RETRY_HTTP_CONNECT_TIMEOUT"),
            ..seconds("--connect-timeout", "connect-timeout")
        },
        duration("--deadline", "deadline", "RETRY_HTTP_DEADLINE"),
        duration("--timeout", "timeout", "RETRY_HTTP_TIMEOUT"),
        duration("--base", "base", "RETRY_HTTP_BASE"),
        duration("--cap", "cap", "RETRY_HTTP_CAP"),
        duration("--splay", "splay", "RETRY_HTTP_SPLAY"),
        duration(
            "--max-retry-after",
            "max-retry-after",
            "RETRY_HTTP_MAX_RETRY_AFTER",
        ),
        duration(
            "--retry-after-spread",
            "retry-after-spread",
            "RETRY_HTTP_RETRY_AFTER_SPREAD",
        ),
        duration(
            "--stall-timeout",
            "stall-timeout",
            "RETRY_HTTP_STALL_TIMEOUT",
        ),
        duration(
            "--state-timeout",
            "state-timeout",
            "RETRY_HTTP_STATE_TIMEOUT",
        ),
        duration(
            "--breaker-cooldown",
            "breaker-cooldown",
            "RETRY_HTTP_BREAKER_COOLDOWN",
        ),
        duration(
            "--budget-window",
            "budget-window",
            "RETRY_HTTP_BUDGET_WINDOW",
        ),
        duration("--state-ttl", "state-ttl", "RETRY_HTTP_STATE_TTL"),
        Row {
            flag: "--jitter",
            config: "jitter",
            env: Some("RETRY_HTTP_JITTER"),
            bad: &[
                ("+1ns", "1ms"),
                ("+999us", "1ms"),
                ("+-1s", "expected"),
                ("+inf", "expected"),
            ],
        },
        Row {
            flag: "--retry-on",
            config: "retry-on",
            env: Some("RETRY_HTTP_RETRY_ON"),
            bad: BAD_RETRY_ON,
        },
        Row {
            flag: "--until-status",
            config: "until-status",
            env: None,
            bad: BAD_UNTIL_STATUS,
        },
        // curl's, with no effect here, but refused where curl 7.88 refuses it.
        Row {
            flag: "--keepalive-time",
            config: "keepalive-time",
            env: None,
            bad: &[
                ("NaN", "whole number"),
                ("1.5", "whole number"),
                ("-1", "whole number"),
                ("5s", "whole number"),
                ("1e-10", "whole number"),
                ("99999999999999999999999", "whole number"),
            ],
        },
    ]
}

/// URLs with no host where one belongs, as typed; `HOST` is the listening server's
/// `127.0.0.1:PORT`, which the URL standard would take from the path.
const HOSTLESS: &[&str] = &[
    "http:///HOST/x",
    "https:///HOST/x",
    "HTTP:///HOST/x",
    "http:////HOST/x",
    "http:\\\\HOST/x",
    "http://\\HOST/x",
    "http:/\\HOST/x",
    "///HOST/x",
];

/// The same for a proxy (the run's URL is the server's, through the proxy).
const HOSTLESS_PROXIES: &[&str] = &[
    "http:///HOST",
    "HTTP:///HOST",
    "http:\\\\HOST",
    "socks5:///HOST",
];

/// `--state` URLs naming no host.
const HOSTLESS_STATES: &[&str] = &[
    "redis:///0",
    "redis://@/0",
    "rediss:///0",
    "redis://:6379/0",
    "redis+cluster:///x",
];

/// One case: the extra arguments, `-K` lines and environment, and what the line must say.
struct Case {
    name: String,
    args: Vec<String>,
    config: Option<String>,
    env: Vec<(String, String)>,
    /// Words the error line must hold: the flag (or what it names), then what is accepted.
    says: Vec<String>,
}

/// A `-K` value in double quotes (a backslash and a quote escaped, as curl reads them).
fn quoted(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

fn value_cases(url: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for row in rows() {
        for &(bad, hint) in row.bad {
            for source in [Source::Line, Source::Config, Source::Env] {
                let mut case = Case {
                    name: format!("{} {bad:?} from {source:?}", row.flag),
                    args: vec![url.to_string()],
                    config: None,
                    env: vec![],
                    says: vec![row.flag.to_string(), hint.to_string()],
                };
                match source {
                    Source::Line => case.args.push(format!("{}={bad}", row.flag)),
                    Source::Config => {
                        case.config = Some(format!("{} = {}\n", row.config, quoted(bad)));
                    }
                    Source::Env => match row.env {
                        Some(var) => case.env.push((var.to_string(), bad.to_string())),
                        None => continue,
                    },
                }
                cases.push(case);
            }
        }
    }
    cases
}

fn url_cases(host: &str, url: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let case = |name: String, args: Vec<String>, config: Option<String>, env, says: &[&str]| Case {
        name,
        args,
        config,
        env,
        says: says.iter().map(|s| s.to_string()).collect(),
    };
    for typed in HOSTLESS {
        let bad = typed.replace("HOST", host);
        let says = ["invalid URL", "http"];
        cases.push(case(
            format!("URL {bad}"),
            vec![bad.clone()],
            None,
            vec![],
            &says,
        ));
        cases.push(case(
            format!("--url {bad}"),
            vec!["--url".into(), bad.clone()],
            None,
            vec![],
            &says,
        ));
        cases.push(case(
            format!("url = {bad} in -K"),
            vec![],
            Some(format!("url = {}\n", quoted(&bad))),
            vec![],
            &says,
        ));
        cases.push(case(
            format!("{bad} in a --url @FILE list"),
            vec!["--url".into(), "@list".into()],
            None,
            vec![],
            &["URL 2 of 2", "invalid URL"],
        ));
    }
    for typed in HOSTLESS_PROXIES {
        let bad = typed.replace("HOST", host);
        let says = ["invalid proxy", "expected"];
        let args = vec![url.to_string()];
        cases.push(case(
            format!("-x {bad}"),
            vec!["-x".into(), bad.clone(), url.into()],
            None,
            vec![],
            &says,
        ));
        cases.push(case(
            format!("proxy = {bad} in -K"),
            args.clone(),
            Some(format!("proxy = {}\n", quoted(&bad))),
            vec![],
            &says,
        ));
        for var in ["http_proxy", "ALL_PROXY"] {
            cases.push(case(
                format!("{var}={bad}"),
                args.clone(),
                None,
                vec![(var.into(), bad.clone())],
                &says,
            ));
        }
    }
    for bad in HOSTLESS_STATES {
        let says = ["--state", "no host"];
        let args = vec![url.to_string()];
        cases.push(case(
            format!("--state {bad}"),
            vec!["--state".into(), bad.to_string(), url.into()],
            None,
            vec![],
            &["--state", "accepted"],
        ));
        cases.push(case(
            format!("state = {bad} in -K"),
            args.clone(),
            Some(format!("state = {}\n", quoted(bad))),
            vec![],
            &["--state"],
        ));
        cases.push(case(
            format!("RETRY_HTTP_STATE={bad}"),
            args,
            None,
            vec![("RETRY_HTTP_STATE".into(), bad.to_string())],
            &[says[0], "accepted"],
        ));
    }
    cases
}

/// Runs one case in a folder of its own (the `-K` file, the `--url @list` file) with `-o`
/// there: what is wrong with what happened.
fn judge(case: &Case, url: &str) -> Option<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = std_command();
    cmd.current_dir(dir.path())
        .args(["--attempts", "1", "-o", "out.bin"])
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy");
    if let Some(text) = &case.config {
        std::fs::write(dir.path().join("k"), text).expect("-K file");
        cmd.args(["-K", "k"]);
    }
    if case.args.iter().any(|a| a == "@list") {
        let bad = case.name.split(' ').next().unwrap_or("");
        std::fs::write(dir.path().join("list"), format!("{url}/ok\n{bad}\n")).expect("list");
    }
    cmd.args(&case.args);
    for (k, v) in &case.env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("runs");
    let err = stderr(&out);
    let line = err.lines().next().unwrap_or("");
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let left = files
        .iter()
        .filter(|n| !matches!(n.to_str(), Some("k" | "list")))
        .count();
    let says = |w: &String| line.contains(w.as_str());
    let ok = out.status.code() == Some(2)
        && err.lines().count() == 1
        && line.starts_with("retry-http: error: ")
        && case.says.iter().all(says)
        && left == 0;
    (!ok).then(|| {
        format!(
            "{}: exit {:?}, {left} files, {err:?}",
            case.name,
            out.status.code()
        )
    })
}

#[test]
fn a_url_status_list_or_duration_that_is_not_what_it_seems_is_refused_from_every_source() {
    let s = Server::start(vec![Step::status(200, "must not be asked")]).unwrap();
    let url = s.url("");
    let host = url.trim_start_matches("http://").to_string();
    let mut cases = value_cases(&url);
    cases.extend(url_cases(&host, &url));
    let found: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = cases
            .chunks(cases.len().div_ceil(4))
            .map(|chunk| {
                let url = &url;
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|c| judge(c, url))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a worker"))
            .collect()
    });
    let sent = s.requests();
    assert!(
        found.is_empty() && sent.is_empty(),
        "{} of {} cases, {} requests reached the server ({:?}):\n{}",
        found.len(),
        cases.len(),
        sent.len(),
        sent.iter().map(|r| r.target.clone()).collect::<Vec<_>>(),
        found.join("\n")
    );
    assert!(cases.len() > 500, "{} cases", cases.len());
    the_smallest_values_accepted_are_taken();
}

/// Values just inside the bounds are taken: 1 ms, 0, and a status list of errors.
fn the_smallest_values_accepted_are_taken() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let url = s.url("/");
    for args in [
        vec!["-m", "0.001"],
        vec!["-m", "0"],
        vec!["--deadline", "1ms"],
        vec!["--deadline", "0"],
        vec!["--connect-timeout", "1000us"],
        vec!["--retry-on", "400-599"],
        vec!["--until-status", "3xx,200"],
    ] {
        let mut all = args.clone();
        all.extend(["--explain", &url]);
        let (out, _) = run(&all);
        // A deadline of 1 ms is taken, not refused: at a high load it may pass before
        // the policy is printed, and the run then ends as a deadline does (exit 5).
        let deadline_passed = args == ["--deadline", "1ms"]
            && code(&out) == 5
            && stderr(&out).contains("deadline reached");
        assert!(
            code(&out) == 0 || deadline_passed,
            "{args:?}: {}",
            stderr(&out)
        );
    }
}
