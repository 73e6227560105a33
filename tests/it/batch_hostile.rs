//! Several URLs in one run, attacked: the summary's counts when the deadline stops a batch
//! whose transfers are waiting on an origin, an origin's first answer that is slow to end
//! (its head in, its body trickling), a hold past the deadline met with and without `-Z`,
//! and a list of URLs each holding a token against the deadline. The server here answers
//! by its path and closes each connection: `/ok/NAME` at once, `/trickle/NAME` a head
//! announcing 20 bytes and then one byte every 150 ms, `/429/SECONDS` a 429 with that
//! Retry-After, `/spent/NAME` a 200 whose RateLimit fields say no request is left for
//! 120 s. It records when each request arrived.

use crate::common::{code, read_head, serve_connections, std_command, stderr};
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When each request arrived, and its path.
type Arrivals = Arc<Mutex<Vec<(Instant, String)>>>;

/// A server on 127.0.0.1 answering by its path (see the module).
struct Server {
    port: u16,
    arrivals: Arrivals,
}

impl Server {
    fn start() -> Server {
        let arrivals = Arrivals::default();
        let shared = arrivals.clone();
        let port = serve_connections(move |conn| serve(conn, &shared));
        Server { port, arrivals }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// When the first request whose path starts with `prefix` arrived.
    fn arrived(&self, prefix: &str) -> Vec<Instant> {
        let a = self.arrivals.lock().unwrap();
        a.iter()
            .filter(|(_, p)| p.starts_with(prefix))
            .map(|(t, _)| *t)
            .collect()
    }
}

/// Answers the one request of a connection, then closes it.
fn serve(conn: TcpStream, arrivals: &Arrivals) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    let Some((path, _)) = read_head(&mut reader) else {
        return;
    };
    arrivals
        .lock()
        .unwrap()
        .push((Instant::now(), path.clone()));
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let _ = match parts.as_slice() {
        ["trickle", ..] => trickle(&mut out),
        ["spent", ..] => write!(
            out,
            "HTTP/1.1 200 OK\r\nRateLimit-Limit: 10\r\nRateLimit-Remaining: 0\r\nRateLimit-Reset: 120\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
        ),
        ["429", secs] => write!(
            out,
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: {secs}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno"
        ),
        _ => {
            let body = format!("body {path}\n");
            write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        }
    };
}

/// A head announcing 20 bytes, then one byte every 150 ms (3 s in all).
fn trickle(out: &mut TcpStream) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Length: 20\r\nConnection: close\r\n\r\n"
    )?;
    for _ in 0..20 {
        out.flush()?;
        std::thread::sleep(Duration::from_millis(150));
        out.write_all(b"x")?;
    }
    out.flush()
}

/// Runs the binary with `args`; returns its output.
fn run(args: &[String]) -> std::process::Output {
    std_command().args(args).output().unwrap()
}

/// The numbers the batch's summary line gives: succeeded, failed, not started.
fn summary_counts(err: &str) -> (usize, usize, usize) {
    let line = err
        .lines()
        .rfind(|l| l.contains(" transfers: "))
        .unwrap_or_else(|| panic!("no summary line in:\n{err}"));
    let number_before = |word: &str| -> usize {
        let at = line
            .find(word)
            .unwrap_or_else(|| panic!("no {word:?} in {line}"));
        let head = line[..at].trim_end();
        let digits = head.rsplit(' ').next().unwrap_or("");
        digits
            .parse()
            .unwrap_or_else(|_| panic!("no count before {word:?} in {line}"))
    };
    (
        number_before("succeeded"),
        number_before("failed"),
        number_before("not started"),
    )
}

/// The deadline ends a batch while transfers wait on an origin whose first answer is still
/// coming: the summary must count the transfer to another origin that succeeded (its log
/// says 200) as succeeded, and the transfers that were under way as failed, not as "not
/// started"; the counts must add up to what the per-transfer lines say.
#[test]
fn the_deadline_summary_counts_what_ended_and_what_was_under_way() {
    let slow = Server::start();
    let fast = Server::start();
    let mut args: Vec<String> = ["-Z", "--parallel-max-host", "8", "--deadline", "1s"]
        .map(String::from)
        .to_vec();
    for i in 0..8 {
        args.push(slow.url(&format!("/trickle/{i}")));
    }
    args.push(fast.url("/ok/last"));
    let out = run(&args);
    let err = stderr(&out);
    assert_eq!(code(&out), 5, "{err}");
    assert!(err.contains("[9/9] attempt 1 GET"), "{err}");
    let (succeeded, failed, not_started) = summary_counts(&err);
    assert_eq!(
        (succeeded, failed, not_started),
        (1, 8, 0),
        "the transfer to the other origin succeeded and the eight others were under way:\n{err}"
    );
}

/// An origin's first answer is its head: once it is in, the other transfers to that origin
/// may go (docs/batch.md: "Until an origin's first answer arrives, one request is in flight to
/// it"). Two slow downloads from one origin under `-Z` must overlap, not run one after the
/// other because the first one's body is still coming.
#[test]
fn a_slow_first_body_does_not_serialise_its_origin() {
    let server = Server::start();
    let args = vec![
        "-Z".to_string(),
        "--deadline".to_string(),
        "20s".to_string(),
        server.url("/trickle/a"),
        server.url("/trickle/b"),
    ];
    let out = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let arrivals = server.arrived("/trickle/");
    assert_eq!(arrivals.len(), 2, "{}", stderr(&out));
    let apart = arrivals[1].duration_since(arrivals[0]);
    // Each body takes 3 s; the second request must not wait for the first body's end.
    assert!(
        apart < Duration::from_millis(1500),
        "the second request arrived {apart:?} after the first:\n{}",
        stderr(&out)
    );
}

/// A transfer whose deadline an origin's hold would pass ends with exit 5 (docs/batch.md, "Rate
/// limits and pacing"), the same when the hold was set by an earlier transfer of a serial
/// run as under `-Z`.
#[test]
fn a_hold_past_the_deadline_ends_a_transfer_with_5_with_and_without_z() {
    for parallel in [false, true] {
        let server = Server::start();
        let mut args = vec!["--deadline".to_string(), "5s".to_string()];
        if parallel {
            args.push("-Z".to_string());
            args.push("--parallel-max-host".to_string());
            args.push("1".to_string());
        }
        args.push(server.url("/429/120"));
        args.push(server.url("/ok/after"));
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(code(&out), 5, "{err}");
        let second = err
            .lines()
            .find(|l| l.contains("[2/2] error:"))
            .unwrap_or_else(|| panic!("no error line for transfer 2:\n{err}"));
        assert!(
            second.ends_with("exit 5"),
            "-Z {parallel}: transfer 2 ended {second}"
        );
        assert!(
            server.arrived("/ok/").is_empty(),
            "nothing is sent to a held origin:\n{err}"
        );
    }
}

/// The exit status follows the same rule with and without `-Z` (docs/batch.md, "The exit status"): a
/// first transfer whose answer says the quota is spent for 120 s holds its origin, and the
/// second transfer, whose 5 s deadline the hold passes, ends the batch with the same code
/// either way.
#[test]
fn a_spent_quota_past_the_deadline_ends_the_batch_alike_with_and_without_z() {
    let mut codes = Vec::new();
    for parallel in [false, true] {
        let server = Server::start();
        let mut args = vec!["--deadline".to_string(), "5s".to_string()];
        if parallel {
            args.push("-Z".to_string());
        }
        args.push(server.url("/spent/1"));
        args.push(server.url("/spent/2"));
        let out = run(&args);
        assert_eq!(
            server.arrived("/spent/").len(),
            1,
            "one request, then the hold:\n{}",
            stderr(&out)
        );
        codes.push(code(&out));
    }
    assert_eq!(codes[0], codes[1], "serial, then -Z");
    assert_eq!(
        codes[0], 5,
        "a hold past the deadline ends a transfer with 5"
    );
}

/// The deadline bounds a batch whose URL list holds a secret per URL (a token in each
/// query string): 20,000 such URLs to a closed port with a 2 s deadline must end within
/// 10 s (exit 5 or a refusal), not spend minutes marking and masking the secrets (it ended
/// in 2.0 s, from minutes when each mark searched and sorted every secret known and each
/// line was masked against them one by one).
#[test]
fn a_list_of_urls_each_with_a_token_ends_by_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls");
    let text: String = (0..20_000)
        .map(|i| format!("http://127.0.0.1:1/f{i}?token=abcdef{i}\n"))
        .collect();
    std::fs::write(&list, text).unwrap();
    let mut child = std_command()
        .args(["--deadline", "2s", "--url"])
        .arg(format!("@{}", list.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if began.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let status = status.expect("a 2 s deadline, still running after 10 s");
    // The deadline (5), or the retry budget the transfers to the closed port spent (7).
    assert!(
        matches!(status.code(), Some(5 | 7)),
        "ended with {status:?}"
    );
}

/// A batch of URLs with user information adds no secret as it runs: each transfer's
/// `Authorization: Basic` token is marked when its URL is checked. 5,000 such URLs under
/// `-Z` end well within 20 s, each sent with its own credentials, none shown on stderr.
/// Each transfer marked its token as it started, which made the masking's matcher again
/// for the next line: 21 s of CPU for 5,000 URLs (0.6 s without the passwords), quadratic
/// in the list's length.
#[test]
fn a_batch_of_urls_with_passwords_adds_no_secret_as_it_runs() {
    use crate::common::{Server, Step};
    use base64::Engine as _;
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls");
    let n = 5_000;
    let text: String = (0..n)
        .map(|i| {
            s.url(&format!("/f{i}"))
                .replace("://", &format!("://u{i}:pw%40secret{i}@"))
        })
        .map(|u| u + "\n")
        .collect();
    std::fs::write(&list, text).unwrap();
    let at = format!("@{}", list.display());
    let began = Instant::now();
    let out = std_command()
        .args(["-Z", "--deadline", "20s", "--url", &at])
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    let took = began.elapsed();
    let err = stderr(&out);
    assert_eq!(
        code(&out),
        0,
        "after {took:?}: {}",
        err.lines().last().unwrap_or("")
    );
    assert!(
        !err.contains("secret"),
        "a password shown: {}",
        &err[..err.len().min(2000)]
    );
    let reqs = s.requests();
    assert_eq!(reqs.len(), n);
    for r in reqs.iter().step_by(997) {
        let i: usize = r.target.trim_start_matches("/f").parse().unwrap();
        let pair = format!("u{i}:pw@secret{i}");
        let want = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        );
        assert_eq!(
            r.header("authorization"),
            Some(want.as_str()),
            "{}",
            r.target
        );
    }
}
