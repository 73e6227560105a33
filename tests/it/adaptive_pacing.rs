//! Adaptive pacing of a batch (`policy::pacer` in the origins' table): against nginx's
//! `limit_req` (a token bucket that answers 429 a request at a time) with and without
//! Retry-After, every transfer succeeds and few requests are throttled; a cut of the rate
//! is said once, in the text and the JSON log, and the rate an origin settled at ends the
//! batch; without a throttle nothing is paced or said.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::Duration;

const NO_NGINX: &str = "nginx is not installed: the adaptive pacing tests run against nginx's \
    limit_req (apt-get install nginx-light; .ci/run installs it)";

/// An nginx of the test's own serving `/f/...` behind `limit_req` (40 r/s, burst 10,
/// nodelay, 429), its 429 with `Retry-After: 1` when `retry_after`; every status it
/// answered is written a line each to its access log.
struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl Nginx {
    fn start(retry_after: bool) -> Nginx {
        let bin = find_binary("nginx").unwrap_or_else(|| panic!("{NO_NGINX}"));
        let dir = tempfile::tempdir().expect("a temp folder");
        let d = dir.path();
        for sub in ["conf", "logs", "tmp", "root"] {
            std::fs::create_dir_all(d.join(sub)).expect("nginx's folders");
        }
        std::fs::write(d.join("root/f"), "ok\n").expect("the file served");
        open_to_all(d);
        let port = free_port();
        let user = if unsafe { libc::geteuid() } == 0 {
            "user nobody nogroup;"
        } else {
            ""
        };
        let ra = if retry_after {
            "error_page 429 = @slow;"
        } else {
            ""
        };
        let conf = format!(
            "{user}\nworker_processes 1;\ndaemon off;\npid logs/nginx.pid;\n\
             error_log logs/error.log warn;\nevents {{ worker_connections 1024; }}\n\
             http {{\n log_format st '$status';\n access_log logs/access.log st;\n\
             client_body_temp_path tmp/cb; proxy_temp_path tmp/p; fastcgi_temp_path tmp/f;\n\
             uwsgi_temp_path tmp/u; scgi_temp_path tmp/s;\n\
             limit_req_zone $server_port zone=one:1m rate=40r/s;\n\
             server {{\n  listen 127.0.0.1:{port};\n  root {root};\n\
             location /f {{ limit_req zone=one burst=10 nodelay; limit_req_status 429; {ra} try_files /f =404; }}\n\
             location @slow {{ add_header Retry-After 1 always; return 429 \"slow down\\n\"; }}\n\
             }}\n}}\n",
            root = d.join("root").display()
        );
        std::fs::write(d.join("conf/nginx.conf"), conf).expect("nginx.conf");
        let child = std::process::Command::new(bin)
            .args(["-p", &d.display().to_string(), "-c", "conf/nginx.conf"])
            .args(["-e", "logs/error.log"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("nginx starts");
        let n = Nginx { child, dir, port };
        let until = std::time::Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < until, "nginx did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        n
    }

    /// The statuses nginx answered, in order.
    fn statuses(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("logs/access.log"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain(["/usr/bin".into(), "/usr/sbin".into()]);
    dirs.map(|d| d.join(name)).find(|p| p.is_file())
}

/// nginx's workers run as nobody when the test runs as root: they must read the files and
/// write the logs.
fn open_to_all(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for p in [dir.to_path_buf(), dir.join("root"), dir.join("logs")] {
        let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777));
    }
    let _ = std::fs::set_permissions(dir.join("root/f"), std::fs::Permissions::from_mode(0o644));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A batch of `n` URLs of `base`, `-Z --parallel-max 50`, bodies dropped, and `extra`.
fn batch(base: &str, n: usize, extra: &[&str]) -> (Output, Duration) {
    let dir = tempfile::tempdir().expect("a temp folder");
    let list = dir.path().join("urls");
    let urls: String = (1..=n).map(|i| format!("{base}/f/{i}\n")).collect();
    std::fs::write(&list, urls).expect("the URL list");
    let at = format!("@{}", list.display());
    let out = dir.path().join("out");
    let out_dir = out.display().to_string();
    let mut args = vec!["-Z", "--parallel-max", "50", "--attempts", "11"];
    args.extend(["--url", &at, "--remote-name-all", "--output-dir", &out_dir]);
    args.extend(["--create-dirs"]);
    args.extend(extra);
    run(&args)
}

#[test]
fn against_nginx_limit_req_all_succeed_and_few_are_throttled() {
    // Before the pacer, 42% of the requests of this batch were throttled without
    // Retry-After and 11% with it (N=160 benches/pacing.sh); with it, 2% or less. The
    // bounds leave room for a loaded machine, which sends more slowly and so is throttled
    // less, not more; at most 6 requests are in flight when the bucket first runs dry.
    for (retry_after, bound) in [(false, 0.10), (true, 0.08)] {
        let nginx = Nginx::start(retry_after);
        std::thread::sleep(Duration::from_millis(300));
        let n = 160;
        let (out, _) = batch(&format!("http://127.0.0.1:{}", nginx.port), n, &["-s"]);
        let statuses = nginx.statuses();
        let throttled = statuses.iter().filter(|s| *s == "429").count();
        let served = statuses.iter().filter(|s| *s == "200").count();
        assert_eq!(code(&out), 0, "Retry-After {retry_after}: {}", stderr(&out));
        assert_eq!(served, n, "Retry-After {retry_after}: each served once");
        let share = throttled as f64 / statuses.len() as f64;
        assert!(
            share <= bound,
            "Retry-After {retry_after}: {throttled} of {} throttled",
            statuses.len()
        );
    }
}

/// The pacing lines of a text log: the cuts ("->"), and the settled rates.
fn pacing_lines(out: &Output) -> (Vec<String>, Vec<String>) {
    let all: Vec<String> = stderr(out)
        .lines()
        .filter(|l| l.contains(" pacing http://"))
        .map(String::from)
        .collect();
    let (changes, settled) = all.into_iter().partition(|l| l.contains(" -> "));
    (changes, settled)
}

/// A server that answers 200 to its first request, then 429 (with `retry_after`) to the
/// next two, both answered only once both have arrived (so both are in flight at once,
/// the most the client lets go after one answer), then 200 to every other; keep-alive.
/// Returns its base URL.
fn throttling_two_at_once(retry_after: Option<&'static str>) -> String {
    use std::io::{BufReader, Read, Write};
    use std::sync::{Arc, Condvar, Mutex};
    let seen = Arc::new((Mutex::new(0usize), Condvar::new()));
    let port = serve_connections(move |conn| {
        let mut reader = BufReader::new(conn.try_clone().expect("the connection"));
        let mut conn = conn;
        while let Some((_, length)) = read_head(&mut reader) {
            let _ = reader
                .by_ref()
                .take(length as u64)
                .read_to_end(&mut Vec::new());
            let (lock, wake) = &*seen;
            let mut n = lock.lock().expect("the count");
            *n += 1;
            let mine = *n;
            wake.notify_all();
            let throttled = (2..=3).contains(&mine);
            if throttled {
                let _ = wake.wait_timeout_while(n, Duration::from_secs(5), |n| *n < 3);
            } else {
                drop(n);
            }
            let head = match (throttled, retry_after) {
                (false, _) => "200 OK\r\nContent-Length: 3\r\n\r\nok\n".to_string(),
                (true, None) => "429 Too Many Requests\r\nContent-Length: 0\r\n\r\n".into(),
                (true, Some(ra)) => format!(
                    "429 Too Many Requests\r\nRetry-After: {ra}\r\nContent-Length: 0\r\n\r\n"
                ),
            };
            if conn
                .write_all(format!("HTTP/1.1 {head}").as_bytes())
                .is_err()
            {
                return;
            }
        }
    });
    format!("http://127.0.0.1:{port}")
}

#[test]
fn throttles_in_flight_make_one_cut_said_once_and_the_settled_rate_ends_the_batch() {
    for retry_after in [None, Some("1")] {
        // Text: one line for the cut, whatever the number of throttles answered at once;
        // one line for the rate the origin settled at, before the batch's summary.
        let base = throttling_two_at_once(retry_after);
        let (out, _) = batch(&base, 8, &[]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let (changes, settled) = pacing_lines(&out);
        assert_eq!(changes.len(), 1, "{retry_after:?}: {changes:?}");
        assert!(
            changes[0].contains("unpaced -> ") && changes[0].contains("throttled: 429"),
            "{}",
            changes[0]
        );
        assert_eq!(settled.len(), 1, "{settled:?}");
        assert!(settled[0].contains("settled at "), "{}", settled[0]);
        let err = stderr(&out);
        let summary = err.find(" transfers: ").expect("the batch's summary");
        assert!(
            err.find(&settled[0]).is_some_and(|at| at < summary),
            "{err}"
        );
        // JSON: the same, as "pacing" objects.
        let base = throttling_two_at_once(retry_after);
        let (out, _) = batch(&base, 8, &["--log-format", "json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let objects = json_lines(&out, "pacing");
        assert_eq!(objects.len(), 2, "{objects:?}");
        let cut = &objects[0];
        assert_eq!(cut["reason"], "throttled", "{cut}");
        assert_eq!(cut["status"], 429, "{cut}");
        assert!(
            cut["from_per_s"].is_null() && cut["to_per_s"].is_number(),
            "{cut}"
        );
        let ra_ms = retry_after.map(|_| 1000);
        assert_eq!(cut["retry_after_ms"], serde_json::json!(ra_ms), "{cut}");
        assert!(cut["message"].as_str().is_some_and(|m| m.contains(" -> ")));
        assert!(objects[1]["settled_per_s"].is_number(), "{}", objects[1]);
    }
}

#[test]
fn without_a_throttle_nothing_is_paced_or_said() {
    // (Not 5xx: a batch's transfers share a circuit breaker, which a run of them opens.)
    for status in [200u16, 404] {
        let server = Server::start(vec![Step::status(status, "x")]).expect("the server");
        let base = server.url("").trim_end_matches('/').to_string();
        let (out, _) = batch(&base, 12, &["--attempts", "1"]);
        let (changes, settled) = pacing_lines(&out);
        assert!(changes.is_empty() && settled.is_empty(), "{}", stderr(&out));
        assert_eq!(server.requests().len(), 12, "{status}");
    }
}

/// A transfer that sent nothing (the deadline passed while it waited for its turn at a
/// throttling origin) says nothing about the server: it is not a failed run for the
/// breaker. A batch against a server that only throttles opens no circuit, its own or the
/// one of `--state`, and the next run sharing that state is not refused.
#[test]
fn transfers_that_sent_nothing_open_no_circuit() {
    let s = Server::start(vec![Step::status(429, "slow down")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state = state.to_str().unwrap();
    let urls: Vec<String> = (0..12).map(|i| s.url(&format!("/t{i}"))).collect();
    let mut args = vec!["-Z", "--deadline", "2s", "--state", state];
    args.extend(urls.iter().map(String::as_str));
    let (out, _) = run(&args);
    let err = stderr(&out);
    assert!(!err.contains("circuit is open"), "{err}");
    assert!(
        s.requests().len() < 12,
        "some transfers sent nothing: {err}"
    );
    let (out, _) = run(&["--state", state, "--attempts", "1", &s.url("/again")]);
    let err = stderr(&out);
    assert_ne!(code(&out), 7, "{err}");
    assert!(!err.contains("circuit is open"), "{err}");
    assert!(s.requests().iter().any(|r| r.target == "/again"), "{err}");
}
