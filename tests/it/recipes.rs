//! The manual's recipes run as written: each "###" recipe of README's "Recipes" section, and
//! each "### Recipe N: ..." section of docs/guide.md, is read from its file, and its command is given to `sh -c` (a container probe's exec array is run
//! as it is, without a shell), with the binary cargo built first on PATH, against loopback
//! servers standing in for the hosts it names. Each run's documented outcome is checked:
//! the exit code, what reached the server, the files written, what stderr says.
//!
//! What a test changes in the text, and nothing else (the mapping, applied by [`stand_in`]):
//! - every `http://` or `https://` URL's scheme and authority become
//!   `http://127.0.0.1:PORT` of the scripted server (path and query kept);
//! - `redis.internal:6379` becomes the loopback `redis-server` started for the test;
//! - an absolute path under `/etc/` or `/var/` is taken under the test's own folder
//!   (`/dev/null` stays);
//! - a cron line loses its schedule (five fields) and, in an `/etc/cron.d` file, its user
//!   field, and `\%` becomes `%` (cron's own rule); the environment line of the cron file
//!   (`RETRY_HTTP_...=value`) is set in the environment;
//! - a container probe's `/retry-http` is the binary cargo built;
//! - a `--splay` is cut to `--splay 300ms` (its wait is real time);
//! - `logger` is a stand-in on PATH that writes its arguments to a file.

use crate::common::*;
use crate::state_redis::redis_server::RedisServer;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// A file of the manual, as text (`README.md`, `docs/guide.md`).
fn manual(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced code blocks of `text`, each with its info string (`sh`, `yaml`, or empty).
fn code_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), Vec::new())),
            (Some(_), Some(_)) => {
                let (info, lines) = open.take().expect("an open block");
                blocks.push((info, lines.join("\n")));
            }
            (Some((_, lines)), None) => lines.push(line),
            (None, None) => {}
        }
    }
    blocks
}

/// The fenced code blocks of each "###" subsection of `lines` that `is_recipe` accepts by
/// its heading, up to the next heading of level 2 or 3.
fn subsections(lines: &[&str], is_recipe: impl Fn(&str) -> bool) -> Vec<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in lines {
        if line.starts_with("### ") || line.starts_with("## ") {
            if let Some(body) = current.take() {
                out.push(code_blocks(&body.join("\n")));
            }
            current = is_recipe(line).then(Vec::new);
        } else if let Some(body) = current.as_mut() {
            body.push(line);
        }
    }
    if let Some(body) = current {
        out.push(code_blocks(&body.join("\n")));
    }
    out
}

/// The recipes: each "###" subsection of README's "## Recipes", then each "### Recipe"
/// subsection of docs/guide.md, as its fenced code blocks.
fn recipes() -> Vec<Vec<(String, String)>> {
    let readme = manual("README.md");
    let section: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "## Recipes")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect();
    let mut out = subsections(&section, |h| h.starts_with("### "));
    let guide = manual("docs/guide.md");
    let lines: Vec<&str> = guide.lines().collect();
    out.extend(subsections(&lines, |h| h.starts_with("### Recipe ")));
    out
}

/// One recipe as a command for `sh -c` and the environment its cron file sets, per the
/// mapping of the module's comment (the URLs, paths and Redis address not yet replaced).
fn command_of(recipe: &str) -> (String, Vec<(String, String)>) {
    let mut env = Vec::new();
    let mut lines = Vec::new();
    for line in recipe.lines() {
        if let Some(comment) = line.trim_start().strip_prefix('#') {
            let c = comment.trim();
            if let Some((name, value)) = c.split_once('=')
                && name.starts_with("RETRY_HTTP_")
                && !name.contains(' ')
            {
                env.push((name.to_string(), value.to_string()));
            }
            continue;
        }
        // A cron file's environment line (NAME=value, before the schedule's lines).
        if let Some((name, value)) = line.split_once('=')
            && name.starts_with("RETRY_HTTP_")
            && !name.contains(' ')
        {
            env.push((name.to_string(), value.to_string()));
            continue;
        }
        lines.push(line);
    }
    let text = lines.join("\n");
    let cron = text.starts_with("* ") || text.starts_with("*/") || text.starts_with("0 ");
    if !cron {
        return (text, env);
    }
    let mut rest = text.as_str();
    for _ in 0..5 {
        rest = rest
            .trim_start()
            .split_once(' ')
            .expect("a schedule field")
            .1;
    }
    // An /etc/cron.d line names the user before the command.
    let first = rest.trim_start().split(' ').next().unwrap_or("");
    if first != "retry-http" {
        rest = rest.trim_start().split_once(' ').expect("a user field").1;
    }
    (rest.trim_start().replace("\\%", "%"), env)
}

/// `text` with every URL's scheme and authority replaced by `http://127.0.0.1:PORT`, the
/// Redis address by `redis`, and the absolute paths under /etc and /var taken under `root`.
fn stand_in(text: &str, port: u16, redis: Option<&str>, root: &Path) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("http") {
        let tail = &rest[at..];
        let scheme = ["http://", "https://"]
            .into_iter()
            .find(|s| tail.starts_with(s));
        match scheme {
            Some(s) => {
                out.push_str(&rest[..at]);
                let after = &tail[s.len()..];
                let end = after
                    .find(['/', ' ', '\'', '"', '\n'])
                    .unwrap_or(after.len());
                out.push_str(&format!("http://127.0.0.1:{port}"));
                rest = &after[end..];
            }
            None => {
                out.push_str(&rest[..at + 4]);
                rest = &rest[at + 4..];
            }
        }
    }
    out.push_str(rest);
    if let Some(r) = redis {
        out = out.replace("redis.internal:6379", r);
    }
    if let Some(at) = out.find("--splay ") {
        let value = at + "--splay ".len();
        let end = out[value..].find(' ').map_or(out.len(), |e| value + e);
        out.replace_range(value..end, "300ms");
    }
    let root = root.display().to_string();
    for dir in ["/etc/", "/var/"] {
        for before in [' ', '@', '='] {
            out = out.replace(&format!("{before}{dir}"), &format!("{before}{root}{dir}"));
        }
    }
    out
}

/// A recipe's run: its output, how long it took, and the `logger` lines it wrote.
struct Ran {
    out: Output,
    took: Duration,
    logged: String,
}

/// Runs `recipe` per the mapping against `server`, in `root`, with `env` and the cron
/// file's environment (its Redis address mapped to `redis`).
fn run_recipe(
    recipe: &str,
    server: &Server,
    redis: Option<&str>,
    root: &Path,
    env: &[(&str, &str)],
) -> Ran {
    let port: u16 = server
        .url("/")
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .expect("the server's port");
    let (command, cron_env) = command_of(recipe);
    let command = stand_in(&command, port, redis, root);
    let tools = root.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let logger = tools.join("logger");
    let log = root.join("logger.out");
    std::fs::write(
        &logger,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&logger, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_retry-http"));
    let path = format!(
        "{}:{}:{}",
        tools.display(),
        bin.parent().expect("the binary's folder").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The binary's environment as every test has it (no RETRY_HTTP_* of the developer's).
    let mut cmd = command_for(Path::new("sh"));
    cmd.arg("-c")
        .arg(&command)
        .current_dir(root)
        .env("PATH", path);
    for (name, value) in &cron_env {
        cmd.env(name, stand_in(value, port, redis, root));
    }
    for (name, value) in env {
        cmd.env(name, value);
    }
    let t = Instant::now();
    let out = cmd.output().expect("sh runs");
    let took = t.elapsed();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    Ran { out, took, logged }
}

/// The code blocks of the recipe whose text contains `marker` (each is told apart by a
/// word of its own).
fn recipe_blocks(marker: &str) -> Vec<(String, String)> {
    let found: Vec<Vec<(String, String)>> = recipes()
        .into_iter()
        .filter(|r| r.iter().any(|(_, b)| b.contains(marker)))
        .collect();
    assert_eq!(found.len(), 1, "one recipe with {marker:?}: {found:?}");
    found[0].clone()
}

/// The command of the recipe whose text contains `marker`: its first code block.
fn recipe(marker: &str) -> String {
    let blocks = recipe_blocks(marker);
    blocks.first().expect("a recipe has a code block").1.clone()
}

fn ok(status: u16, body: &str) -> Step {
    Step::status(status, body)
}

fn show(r: &Ran) -> String {
    format!(
        "exit {:?} after {:?}\nstdout: {}\nstderr: {}\nlogger: {}",
        r.out.status.code(),
        r.took,
        String::from_utf8_lossy(&r.out.stdout),
        stderr(&r.out),
        r.logged
    )
}

/// Every recipe is one the tests below run: a new recipe in README or the guide needs its
/// test here.
#[test]
fn every_recipe_is_run_by_a_test() {
    const MARKERS: [&str; 10] = [
        "api.example.test/jobs",
        "report.csv",
        "localhost:8080/healthz",
        "HEALTHCHECK",
        "redis.internal",
        "install.sh",
        "urls.txt",
        "X-App-Version",
        "_cluster/health",
        "data.etag",
    ];
    let all = recipes();
    assert_eq!(all.len(), MARKERS.len(), "the manual's recipes: {all:#?}");
    for r in &all {
        assert!(!r.is_empty(), "a recipe without a code block");
        let text: Vec<&str> = r.iter().map(|(_, b)| b.as_str()).collect();
        let text = text.join("\n");
        let n = MARKERS.iter().filter(|m| text.contains(*m)).count();
        assert_eq!(n, 1, "a recipe no test (or two) runs:\n{text}");
    }
}

/// The cron job: a 503 is retried under the key `auto` made (the same key twice, the body
/// from the file, the Content-Type given), exit 0, nothing logged and the state file
/// written; a 400 is not retried and `logger` gets "job submit failed: 3".
#[test]
fn the_cron_job_submits_once_under_its_key_and_logs_a_failure() {
    let r = recipe("api.example.test/jobs");
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("etc/jobs")).unwrap();
    std::fs::create_dir_all(root.path().join("var/lib/retry-http")).unwrap();
    let job = br#"{"job":"export"}"#;
    std::fs::write(root.path().join("etc/jobs/export.json"), job).unwrap();

    let server = Server::start(vec![ok(503, "busy"), ok(201, "accepted")]).unwrap();
    let ran = run_recipe(&r, &server, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    assert_eq!(ran.logged, "", "{}", show(&ran));
    assert_eq!(stderr(&ran.out), "", "-s: {}", show(&ran));
    assert!(
        ran.out.stdout.is_empty(),
        "cron would mail it: {}",
        show(&ran)
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", show(&ran));
    let key = reqs[0].header("idempotency-key").unwrap_or_default();
    assert_eq!(key.len(), 36, "a random UUID: {key:?}");
    for q in &reqs {
        assert_eq!((q.method.as_str(), q.target.as_str()), ("POST", "/jobs"));
        assert_eq!(
            q.header("idempotency-key"),
            Some(key),
            "the same key on a retry"
        );
        assert_eq!(q.header("content-type"), Some("application/json"));
        assert_eq!(q.body, job);
    }
    let state = root.path().join("var/lib/retry-http/jobs.state");
    let written = std::fs::read_to_string(&state).unwrap_or_default();
    assert!(
        written.contains("retry-http-state"),
        "the state file: {written:?}"
    );

    // A bad minute longer than the state's default retry budget (a floor of 3 retries, one
    // of them spent by the run above): the recipe sets no floor, since a run's own retries
    // do not count against it, and the run rides it out within its deadline as it would
    // without the state (short waits through the environment, which the recipe's line
    // does not set).
    assert!(!r.contains("--budget-floor"), "{r}");
    let outage: Vec<Step> = (0..10)
        .map(|_| ok(503, "busy"))
        .chain([ok(201, "ok")])
        .collect();
    let long = Server::start(outage).unwrap();
    let quick = [("RETRY_HTTP_BASE", "1ms"), ("RETRY_HTTP_CAP", "2ms")];
    let ran = run_recipe(&r, &long, None, root.path(), &quick);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    assert_eq!(long.requests().len(), 11, "{}", show(&ran));

    // The next hour: the server takes the POST and the answer is lost (a reset, one attempt
    // allowed here). The hour after, the same job is sent again under the same key; once it
    // is answered, the key is retired and the next job gets a new one.
    // (One server for the three runs: the job is the method, the URL and the body, and a
    // server on another port would be another URL.)
    let host = Server::start(vec![Step::Reset, ok(201, "accepted"), ok(201, "accepted")]).unwrap();
    let ran = run_recipe(
        &r,
        &host,
        None,
        root.path(),
        &[("RETRY_HTTP_ATTEMPTS", "1")],
    );
    assert_eq!(ran.logged, "job submit failed: 4\n", "{}", show(&ran));
    let ran = run_recipe(&r, &host, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    run_recipe(&r, &host, None, root.path(), &[]);
    let keys: Vec<String> = host
        .requests()
        .iter()
        .map(|q| q.header("idempotency-key").unwrap_or_default().to_string())
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().all(|k| k.len() == 36), "{keys:?}");
    assert_eq!(keys[1], keys[0], "the re-run sends the kept key");
    assert_ne!(
        keys[2], keys[1],
        "a new job after a final answer, a new key"
    );

    // README: a run with --idempotency-key new starts the job afresh, a new key in place
    // of the one kept.
    let fresh = Server::start(vec![Step::Reset, ok(201, "accepted")]).unwrap();
    run_recipe(
        &r,
        &fresh,
        None,
        root.path(),
        &[("RETRY_HTTP_ATTEMPTS", "1")],
    );
    let renewed = r.replace("--idempotency-key auto", "--idempotency-key new");
    assert_ne!(renewed, r, "the recipe names --idempotency-key auto");
    let ran = run_recipe(&renewed, &fresh, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    let keys: Vec<String> = fresh
        .requests()
        .iter()
        .map(|q| q.header("idempotency-key").unwrap_or_default().to_string())
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert_ne!(keys[0], keys[1], "new: not the key kept");

    let refused = Server::start(vec![ok(400, "bad job")]).unwrap();
    let ran = run_recipe(&r, &refused, None, root.path(), &[]);
    assert_eq!(refused.requests().len(), 1, "a 400 is not retried");
    assert_eq!(ran.out.status.code(), Some(0), "logger ran: {}", show(&ran));
    assert_eq!(ran.logged, "job submit failed: 3\n", "{}", show(&ran));

    // README: a state that cannot be used (here its lock is not a file) stops the run
    // before anything is sent, rather than sending the job under a fresh key.
    let lock = root.path().join("var/lib/retry-http/jobs.state.lock");
    let _ = std::fs::remove_file(&lock);
    std::fs::create_dir(&lock).unwrap();
    let unused = Server::start(vec![ok(201, "accepted")]).unwrap();
    let ran = run_recipe(&r, &unused, None, root.path(), &[]);
    assert_eq!(unused.requests().len(), 0, "{}", show(&ran));
    assert_eq!(ran.logged, "job submit failed: 7\n", "{}", show(&ran));
}

/// The CI step: 503s are retried until the service answers; exit 0, nothing printed.
#[test]
fn the_ci_step_waits_for_the_service() {
    let r = recipe("localhost:8080/healthz");
    let root = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        ok(503, "starting"),
        ok(503, "starting"),
        ok(200, "up"),
    ])
    .unwrap();
    let ran = run_recipe(&r, &server, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    assert!(
        ran.out.stdout.is_empty() && ran.out.stderr.is_empty(),
        "{}",
        show(&ran)
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs.iter().all(|q| q.target == "/healthz"));
}

/// The deploy step: an old version is not ready, the new one ends the wait with exit 0.
#[test]
fn the_deploy_step_waits_for_the_new_version() {
    let r = recipe("X-App-Version");
    let root = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        Step::with_header(200, "X-App-Version", "1.4.1"),
        Step::with_header(200, "X-App-Version", "1.4.2"),
    ])
    .unwrap();
    let ran = run_recipe(&r, &server, None, root.path(), &[("VERSION", "1.4.2")]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    assert_eq!(server.requests().len(), 2, "{}", show(&ran));
}

/// The cluster health wait: yellow (a 200) is not ready, green is; the query is sent as
/// written.
#[test]
fn the_cluster_wait_ends_on_green() {
    let r = recipe("_cluster/health");
    let root = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        ok(200, r#"{"status":"yellow"}"#),
        ok(200, r#"{"status":"green"}"#),
    ])
    .unwrap();
    let ran = run_recipe(&r, &server, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", show(&ran));
    assert_eq!(
        reqs[0].target,
        "/_cluster/health?wait_for_status=green&timeout=10s"
    );
}

/// The download: a 503 then a cut body leave no file; the whole body then lands in
/// report.csv, with exit 0.
#[test]
fn the_download_is_complete_or_absent() {
    let r = recipe("report.csv");
    let root = tempfile::tempdir().unwrap();
    let body = "day,count\n2026-12-01,42\n";
    let server = Server::start(vec![
        ok(503, "busy"),
        Step::Truncate {
            declared: body.len(),
            body: body.as_bytes()[..10].to_vec(),
        },
        ok(200, body),
    ])
    .unwrap();
    let ran = run_recipe(&r, &server, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    assert_eq!(server.requests().len(), 3, "{}", show(&ran));
    let written = std::fs::read_to_string(root.path().join("report.csv")).unwrap();
    assert_eq!(written, body);
}

/// The fleet's cron job, two hosts and one Redis (a user `report` with its password, the
/// prefix of the recipe): a success writes the file and nothing to stderr (`-s`: nothing
/// for cron to mail); then a 429 with `Retry-After: 120`
/// told to one host ends its run with 5 at once (the hint reaches past its 50 s deadline)
/// and holds the next run on another host without a request (7); `--explain` shows the
/// hold for two minutes, not the default clamp's one; and the circuit stays closed.
#[test]
fn the_fleet_recipe_shares_a_two_minute_retry_after() {
    let r = recipe("redis.internal");
    let redis =
        RedisServer::start_with(&["--user", "report", "on", ">s3cret", "~*", "&*", "+@all"]);
    let address = format!("127.0.0.1:{}", redis.port().expect("a TCP port"));
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("var/lib/report")).unwrap();
    let file = root.path().join("var/lib/report/latest.json");

    let server = Server::start(vec![
        ok(200, r#"{"report":1}"#),
        Step::Respond {
            status: 429,
            headers: vec![("Retry-After".into(), "120".into())],
            body: b"slow down".to_vec(),
        },
        ok(200, r#"{"report":2}"#),
    ])
    .unwrap();
    let ran = run_recipe(&r, &server, Some(&address), root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    // Nothing for cron to mail: no line at all, so no warning either (the store was used).
    assert_eq!(stderr(&ran.out), "", "{}", show(&ran));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), r#"{"report":1}"#);
    let keys = [
        "--user", "report", "--pass", "s3cret", "-n", "2", "KEYS", "report:*",
    ];
    assert!(
        !redis.cli(&keys).is_empty(),
        "the runs share the store under the recipe's prefix"
    );

    let ran = run_recipe(&r, &server, Some(&address), root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(5), "{}", show(&ran));
    assert!(
        ran.took < Duration::from_secs(20),
        "at once: {}",
        show(&ran)
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), r#"{"report":1}"#);

    let ran = run_recipe(&r, &server, Some(&address), root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(7), "held: {}", show(&ran));
    assert_eq!(server.requests().len(), 2, "nothing sent while held");

    let explain = r.replace("retry-http ", "retry-http --explain ");
    let ran = run_recipe(&explain, &server, Some(&address), root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&ran.out.stdout),
        stderr(&ran.out)
    );
    assert!(
        text.contains("circuit closed"),
        "the circuit stays closed: {text}"
    );
    assert!(
        text.contains("splay         offset ") && text.contains(" of 300ms for host "),
        "the recipe's splay: {text}"
    );
    let held = held_for(&text).unwrap_or_else(|| panic!("a shared Retry-After: {text}"));
    assert!(
        held > Duration::from_secs(90) && held <= Duration::from_secs(120),
        "held for {held:?}, two minutes less the runs' time, not the default clamp's one: {text}"
    );
}

/// The time `--explain` says a shared Retry-After still holds ("holds for 1m59s",
/// "holds for 59.96s").
fn held_for(explain: &str) -> Option<Duration> {
    let rest = &explain[explain.find("holds for ")? + "holds for ".len()..];
    let word = rest.split_whitespace().next()?;
    let (minutes, seconds) = match word.split_once('m') {
        Some((m, s)) => (m.parse::<u64>().ok()?, s),
        None => (0, word),
    };
    let seconds = match seconds.strip_suffix('s') {
        Some(s) => s.parse::<f64>().ok()?,
        None if seconds.is_empty() => 0.0,
        None => return None,
    };
    Some(Duration::from_secs(minutes * 60) + Duration::from_secs_f64(seconds))
}

/// The JSON array that follows `key` in `text` (an exec-form command, written on one line).
fn exec_array(text: &str, key: &str) -> Vec<String> {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("{key:?} in {text}"))
        + key.len();
    let rest = text[at..].trim_start();
    let array = &rest[..=rest.find(']').expect("the array's end")];
    serde_json::from_str(array).unwrap_or_else(|e| panic!("{array}: {e}"))
}

/// The container probe: a `--health-exit` run, the binary for `/retry-http` and the
/// scripted server (or a closed port) for the URL, run without a shell.
fn probe(argv: &[String], url: &str, extra: &[&str]) -> (Output, Duration) {
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a loopback URL");
    let root = tempfile::tempdir().unwrap();
    assert_eq!(argv[0], "/retry-http", "the binary of the image");
    let mut cmd = std_command();
    let (url_arg, flags) = argv[1..].split_last().expect("a URL last");
    cmd.args(flags).args(extra);
    cmd.arg(stand_in(url_arg, port, None, root.path()));
    let t = Instant::now();
    let out = cmd.output().expect("the probe runs");
    (out, t.elapsed())
}

/// The container health check: the Dockerfile's exec-form HEALTHCHECK, the Compose test
/// and the Kubernetes exec probe run the same command; run as it is (no shell), it exits 0
/// when the service answers, and 1 (Docker's "unhealthy", never 2) on a 503, a refused
/// connection and a usage error, where the same run without `--health-exit` gives 4, 4
/// and 2.
#[test]
fn the_container_probe_is_healthy_or_1() {
    let blocks = recipe_blocks("HEALTHCHECK");
    let block = |word: &str| -> String {
        let found: Vec<&(String, String)> =
            blocks.iter().filter(|(_, b)| b.contains(word)).collect();
        assert_eq!(found.len(), 1, "one block with {word:?}: {blocks:?}");
        found[0].1.clone()
    };
    let dockerfile = block("HEALTHCHECK");
    assert!(dockerfile.starts_with("FROM scratch\n"), "{dockerfile}");
    let docker = exec_array(&dockerfile, "CMD");
    let compose = exec_array(&block("healthcheck:"), "test:");
    let k8s = exec_array(&block("exec:"), "command:");
    assert_eq!(compose[0], "CMD", "Compose's exec form");
    assert_eq!(
        compose[1..],
        docker[..],
        "Compose runs the Dockerfile's probe"
    );
    assert_eq!(k8s, docker, "Kubernetes runs the Dockerfile's probe");
    assert!(docker.iter().any(|a| a == "--health-exit"), "{docker:?}");
    let without: Vec<String> = docker
        .iter()
        .filter(|a| *a != "--health-exit")
        .cloned()
        .collect();

    let healthy = Server::start(vec![ok(200, "ok")]).unwrap();
    let (out, _) = probe(&docker, &healthy.url("/"), &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(healthy.requests()[0].target, "/health");

    let sick = Server::start(vec![ok(503, "down")]).unwrap();
    let (out, took) = probe(&docker, &sick.url("/"), &[]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(sick.requests().len(), 3, "the probe's three attempts");
    // The probe's deadline is 4 s, inside Docker's 5 s timeout; a loaded machine may add.
    assert!(took < Duration::from_secs(30), "{took:?}");
    let (out, _) = probe(&without, &sick.url("/"), &[]);
    assert_eq!(code(&out), 4, "without the flag: {}", stderr(&out));

    let refused = closed_port_url();
    let (out, _) = probe(&docker, &refused, &[]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let (out, _) = probe(&without, &refused, &[]);
    assert_eq!(code(&out), 4, "without the flag: {}", stderr(&out));

    let (out, _) = probe(&docker, &healthy.url("/"), &["--attempts", "0"]);
    assert_eq!(code(&out), 1, "a usage error: {}", stderr(&out));
    let (out, _) = probe(&without, &healthy.url("/"), &["--attempts", "0"]);
    assert_eq!(code(&out), 2, "without the flag: {}", stderr(&out));
}

/// The curl line: a 503 is retried (curl's --retry as this tool's policy), the whole
/// script lands in install.sh and `sh` runs it; a 404 is not retried, and neither a file
/// nor `sh` runs.
#[test]
fn the_curl_line_runs_the_whole_script_or_nothing() {
    let r = recipe("install.sh");
    let root = tempfile::tempdir().unwrap();
    let script = "echo installed\n";
    let server = Server::start(vec![ok(503, "busy"), ok(200, script)]).unwrap();
    let ran = run_recipe(&r, &server, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    assert_eq!(String::from_utf8_lossy(&ran.out.stdout), "installed\n");
    assert_eq!(stderr(&ran.out), "", "-s: {}", show(&ran));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", show(&ran));
    let gap = gaps(&reqs)[0];
    assert!(gap >= Duration::from_secs(1), "--retry-delay 1: {gap:?}");
    let written = std::fs::read_to_string(root.path().join("install.sh")).unwrap();
    assert_eq!(written, script);

    let gone = tempfile::tempdir().unwrap();
    let missing = Server::start(vec![ok(404, "echo wrong")]).unwrap();
    let ran = run_recipe(&r, &missing, None, gone.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(3), "{}", show(&ran));
    assert_eq!(missing.requests().len(), 1, "a 404 is not retried");
    assert!(ran.out.stdout.is_empty(), "{}", show(&ran));
    assert!(!gone.path().join("install.sh").exists());
}

/// The batch: three URLs from urls.txt, one answered 503 first, each saved under its
/// remote name in the output folder (made by the run); exit 0.
#[test]
fn the_batch_saves_every_url() {
    let r = recipe("urls.txt");
    let root = tempfile::tempdir().unwrap();
    let body = "<feed/>\n";
    let server = Server::start(vec![ok(503, "busy"), ok(200, body)]).unwrap();
    let list: Vec<String> = ["a.xml", "b.xml", "c.xml"]
        .iter()
        .map(|n| server.url(&format!("/feeds/{n}")))
        .collect();
    let urls = format!("# the feeds\n{}\n\n", list.join("\n"));
    std::fs::write(root.path().join("urls.txt"), urls).unwrap();
    let ran = run_recipe(&r, &server, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    assert_eq!(server.requests().len(), 4, "{}", show(&ran));
    for name in ["a.xml", "b.xml", "c.xml"] {
        let path = root.path().join("var/cache/feeds").join(name);
        let saved = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(saved, body, "{}: {}", path.display(), show(&ran));
    }
}

/// The fetch that downloads only what changed: the first run saves the file and its ETag;
/// the next sends the ETag, and its 304 leaves both as they were (exit 0).
#[test]
fn the_etag_fetch_downloads_only_what_changed() {
    let r = recipe("data.etag");
    let root = tempfile::tempdir().unwrap();
    let body = "day,count\n2026-12-01,42\n";
    let first = Server::start(vec![Step::Respond {
        status: 200,
        headers: vec![("ETag".into(), "\"v1\"".into())],
        body: body.as_bytes().to_vec(),
    }])
    .unwrap();
    let ran = run_recipe(&r, &first, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    assert_eq!(first.requests()[0].header("if-none-match"), None);
    let data = root.path().join("data.csv");
    let etag = root.path().join("data.etag");
    assert_eq!(std::fs::read_to_string(&data).unwrap(), body);
    assert_eq!(std::fs::read_to_string(&etag).unwrap(), "\"v1\"\n");

    let unchanged = Server::start(vec![Step::with_header(304, "ETag", "\"v1\"")]).unwrap();
    let ran = run_recipe(&r, &unchanged, None, root.path(), &[]);
    assert_eq!(ran.out.status.code(), Some(0), "{}", show(&ran));
    assert_eq!(
        unchanged.requests()[0].header("if-none-match"),
        Some("\"v1\"")
    );
    assert_eq!(std::fs::read_to_string(&data).unwrap(), body);
    assert_eq!(std::fs::read_to_string(&etag).unwrap(), "\"v1\"\n");
}

/// The fleet recipe's worked example in the guide quotes a simulation: its command runs as
/// written, and the figures quoted beside it are what it prints (the simulation is seeded,
/// so they change only when the model does). The text is read with its lines joined.
#[test]
fn the_fleet_recipes_simulation_says_what_the_guide_quotes() {
    let text = manual("docs/guide.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let start = text
        .find("`retry-http simulate --clients")
        .expect("the simulate line");
    let rest = &text[start + 1..];
    let command = &rest[..rest.find('`').expect("its closing backtick")];
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    let (out, _) = run(&words);
    assert_eq!(code(&out), 0, "{command}: {}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    let row = |name: &str| -> Vec<String> {
        let line = table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {table}"));
        line.split_whitespace().map(str::to_string).collect()
    };
    let full = row("full ");
    let calls: u64 = full[2].parse().expect("calls");
    let quoted = |figure: &str| text.contains(figure);
    assert!(
        quoted(&format!("{},{:03} requests", calls / 1000, calls % 1000)),
        "the guide quotes another count than {calls}: {table}"
    );
    assert!(
        quoted(&format!(
            "{:.1} per success",
            full[3].parse::<f64>().unwrap()
        )),
        "{table}"
    );
    for shared in ["shared-budget", "shared-breaker"] {
        let r = row(shared);
        // Every run fails but the one that took the floor's last retry, whose own retries
        // do not count against it.
        assert_eq!(r[6], "299.0", "{shared}: {table}");
        assert!(
            quoted(&format!("{} requests are sent", r[2])),
            "{shared}: {table}"
        );
    }
}
