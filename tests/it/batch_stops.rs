//! What a batch sends once it knows it must stop starting transfers: after the first failure
//! under `--fail-early`, once stdout's reader has gone, and at the deadline; and how it
//! counts the transfers it never sent. Each is checked for every way of giving the URLs
//! (words, a `-K` file, `--url @FILE`, `--url @-`), serial and under `-Z` at several
//! `--parallel-max`.
//!
//! The servers are the scripted one: the answers of the transfers that succeed come after
//! a long pause, so every request the server records after the first failure (or the
//! reader's going) is known would have to be a transfer started after it. The transfers
//! to one origin are paced (one in flight until its first answer, then one more per answer:
//! docs/batch.md), so with those answers late, any request past the first one to that
//! origin is a start the batch released after it knew.

use crate::common::{closed_port_url, command, judged_four_at_a_time, std_command, stderr};
use crate::scripted::{Server, Step};
use std::time::Duration;

/// How the URLs reach the command line.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// Positional words.
    Words,
    /// `url = "..."` lines of a `-K` file.
    ConfigFile,
    /// `--url @FILE`.
    ListFile,
    /// `--url @-`, the list on stdin.
    Stdin,
}

const SOURCES: [Source; 4] = [
    Source::Words,
    Source::ConfigFile,
    Source::ListFile,
    Source::Stdin,
];

/// The schedules: serial (no `-Z`), then `-Z` with `--parallel-max` 1, 2 and 10.
const SCHEDULES: [Option<u32>; 4] = [None, Some(1), Some(2), Some(10)];

/// `flags` and the URLs as `source` gives them: the arguments, and what goes to stdin
/// (`dir` holds the files).
fn command_line(
    flags: &[String],
    urls: &[String],
    source: Source,
    dir: &std::path::Path,
) -> (Vec<String>, Vec<u8>) {
    let mut args = flags.to_vec();
    let lines: String = urls.iter().map(|u| format!("{u}\n")).collect();
    let mut stdin = Vec::new();
    match source {
        Source::Words => args.extend(urls.iter().cloned()),
        Source::ConfigFile => {
            let path = dir.join("config");
            let text: String = urls.iter().map(|u| format!("url = \"{u}\"\n")).collect();
            std::fs::write(&path, text).unwrap();
            args.extend(["-K".into(), path.display().to_string()]);
        }
        Source::ListFile => {
            let path = dir.join("list");
            std::fs::write(&path, lines).unwrap();
            args.extend(["--url".into(), format!("@{}", path.display())]);
        }
        Source::Stdin => {
            args.extend(["--url".into(), "@-".into()]);
            stdin = lines.into_bytes();
        }
    }
    (args, stdin)
}

/// The schedule's flags.
fn schedule_flags(parallel: Option<u32>) -> Vec<String> {
    match parallel {
        None => vec![],
        Some(n) => vec!["-Z".into(), "--parallel-max".into(), n.to_string()],
    }
}

/// An answer of 200 with `body`, after `pause`.
fn late(body: &str, pause: Duration) -> Step {
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    Step::RawPaced {
        parts: vec![Vec::new(), answer.into_bytes()],
        pause,
    }
}

/// The pause before each successful answer: far longer than a loaded machine takes to
/// learn of a failure answered at once, so no answer releases a start before it.
const LATE: Duration = Duration::from_millis(2500);

/// How the failing transfer fails, with the flags that make it fail, and its exit code
/// when run alone (the batch's, since it is the only failure).
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// A 500 with `--retry 0`: attempts exhausted, 4.
    Status500,
    /// A refused connection with `--retry 0`: 4.
    Refused,
    /// A 404 with `--fail`: 3.
    NotFound,
}

impl Failure {
    /// The failing URL (its server kept alive in `keep`), the flags, the exit code.
    fn setup(self, keep: &mut Vec<Server>) -> (String, Vec<String>, i32) {
        let status = |s: u16, keep: &mut Vec<Server>| {
            let server = Server::start(vec![Step::status(s, "failed")]).expect("server");
            let url = server.url("/failing");
            keep.push(server);
            url
        };
        let flags = |f: &[&str]| f.iter().map(|s| s.to_string()).collect();
        match self {
            Failure::Status500 => (status(500, keep), flags(&["--retry", "0"]), 4),
            Failure::Refused => (closed_port_url(), flags(&["--retry", "0"]), 4),
            Failure::NotFound => (status(404, keep), flags(&["--fail"]), 3),
        }
    }
}

/// `--fail-early`: with the second of 12 URLs failing at once and the others answered
/// late by one origin, nothing is sent to that origin once the failure is known. Serial
/// (and `-Z --parallel-max 1`), transfer 1 alone was sent before it; under `-Z` at most
/// the one request the origin's pacing let go before the failure. The exit code is the
/// failing transfer's, the summary counts the others not started, and stdout holds only
/// the bodies of the transfers that were sent.
#[test]
fn fail_early_sends_nothing_once_a_failure_is_known() {
    let failures = [Failure::Status500, Failure::Refused, Failure::NotFound];
    let mut cases = Vec::new();
    for failure in failures {
        for parallel in SCHEDULES {
            for source in SOURCES {
                cases.push((failure, parallel, source));
            }
        }
    }
    let found = judged_four_at_a_time(&cases, |&(failure, parallel, source)| {
        let ok = Server::start(vec![late("ok", LATE)]).expect("server");
        let mut keep = Vec::new();
        let (failing, flags, want) = failure.setup(&mut keep);
        let mut urls: Vec<String> = (0..12).map(|i| ok.url(&format!("/{i}"))).collect();
        urls[1] = failing;
        let dir = tempfile::tempdir().unwrap();
        let mut all = vec!["--fail-early".to_string()];
        all.extend(flags);
        all.extend(schedule_flags(parallel));
        let (args, stdin) = command_line(&all, &urls, source, dir.path());
        let out = command()
            .args(&args)
            .write_stdin(stdin)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = stderr(&out);
        let sent = ok.requests().len();
        // Serial, transfer 1 was sent before the failure; under -Z, at most one.
        let exact = parallel.is_none_or(|p| p == 1);
        let mut wrong = Vec::new();
        if (exact && sent != 1) || sent > 1 {
            wrong.push(format!("{sent} requests to the other origin"));
        }
        if out.status.code() != Some(want) {
            wrong.push(format!("exit {:?}, not {want}", out.status.code()));
        }
        let counted = format!(
            "12 transfers: {sent} succeeded, 1 failed (exit {want}), {} not started",
            11 - sent
        );
        if !err.contains(&counted) {
            wrong.push(format!("no {counted:?}"));
        }
        if String::from_utf8_lossy(&out.stdout).matches("ok").count() != sent {
            wrong.push(format!("stdout {:?}", String::from_utf8_lossy(&out.stdout)));
        }
        match wrong.is_empty() {
            true => vec![],
            false => vec![format!(
                "{failure:?} {parallel:?} {source:?}: {}\n{err}",
                wrong.join("; ")
            )],
        }
    });
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// What holds a transfer back before its first send, besides the schedule.
#[derive(Debug, Clone, Copy)]
enum Held {
    /// The origin's pacing: one request in flight until its first answer.
    Pacing,
    /// `--rate 1/m`: the next start a minute away.
    Rate,
}

/// `--deadline` passing while one transfer waits for its late answer: the transfers that
/// never sent a request (waiting for the origin's first answer, or for `--rate`'s next
/// start, or never picked) count as not started, the one cut as failed; exit 5, whether
/// the batch ends by itself or the watchdog ends it.
#[test]
fn the_deadline_counts_the_transfers_never_sent_as_not_started() {
    let mut cases = Vec::new();
    for held in [Held::Pacing, Held::Rate] {
        for parallel in SCHEDULES {
            for source in SOURCES {
                cases.push((held, parallel, source));
            }
        }
    }
    let found = judged_four_at_a_time(&cases, |&(held, parallel, source)| {
        let s = Server::start(vec![late("ok", Duration::from_secs(20))]).expect("server");
        let urls: Vec<String> = (0..6).map(|i| s.url(&format!("/{i}"))).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut flags = vec!["--deadline".to_string(), "2s".into()];
        if let Held::Rate = held {
            flags.extend(["--rate".into(), "1/m".into()]);
        }
        flags.extend(schedule_flags(parallel));
        let (args, stdin) = command_line(&flags, &urls, source, dir.path());
        let out = command()
            .args(&args)
            .write_stdin(stdin)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = stderr(&out);
        let sent = s.requests().len();
        let mut wrong = Vec::new();
        if sent != 1 {
            wrong.push(format!("{sent} requests"));
        }
        if out.status.code() != Some(5) {
            wrong.push(format!("exit {:?}", out.status.code()));
        }
        let counted = "6 transfers: 0 succeeded, 1 failed (exit 5), 5 not started";
        if !err.contains(counted) {
            wrong.push(format!("no {counted:?}"));
        }
        match wrong.is_empty() {
            true => vec![],
            false => vec![format!(
                "{held:?} {parallel:?} {source:?}: {}\n{err}",
                wrong.join("; ")
            )],
        }
    });
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// stdout's reader going away (`| head -c 3`) once the first body is out: the batch starts
/// nothing new. The first URL is answered at once by one server, the 19 others late by
/// another, whose pacing lets one request go before that answer: it sees at most that
/// one, serial or under `-Z`; the exit code is the one earned, 0.
#[test]
fn a_reader_gone_sends_nothing_more() {
    use std::io::{Read, Write};
    let mut cases = Vec::new();
    for parallel in SCHEDULES {
        for source in SOURCES {
            cases.push((parallel, source));
        }
    }
    let found = judged_four_at_a_time(&cases, |&(parallel, source)| {
        let first = Server::start(vec![Step::status(200, "first body")]).expect("server");
        let rest = Server::start(vec![late("later", LATE)]).expect("server");
        let mut urls = vec![first.url("/0")];
        urls.extend((1..20).map(|i| rest.url(&format!("/{i}"))));
        let dir = tempfile::tempdir().unwrap();
        let flags = schedule_flags(parallel);
        let (args, stdin) = command_line(&flags, &urls, source, dir.path());
        let mut child = std_command()
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(&stdin).unwrap();
        drop(input);
        let mut three = [0u8; 3];
        child.stdout.take().unwrap().read_exact(&mut three).unwrap();
        // The pipe's read end is closed here, as `head -c 3` closes it.
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        let sent = rest.requests().len();
        let mut wrong = Vec::new();
        if sent > 1 {
            wrong.push(format!("{sent} requests after the reader went"));
        }
        if out.status.code() != Some(0) {
            wrong.push(format!("exit {:?}", out.status.code()));
        }
        match wrong.is_empty() {
            true => vec![],
            false => vec![format!(
                "{parallel:?} {source:?}: {}\n{err}",
                wrong.join("; ")
            )],
        }
    });
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Where a URL list still being written comes from.
#[derive(Debug, Clone, Copy)]
enum Unfinished {
    /// `--url @-`, stdin a pipe the test keeps open.
    Stdin,
    /// `--url @FIFO`.
    ListFifo,
    /// `-K FIFO`, its `url =` lines.
    ConfigFifo,
}

/// Waits until the process `pid` has a second thread, its signal handling installed (the
/// handler thread is started once the handlers are registered), or 10 s have passed (a
/// process that never installs it is then signalled anyway, and dies of the signal).
fn wait_for_handler(pid: u32) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    let tasks = format!("/proc/{pid}/task");
    while std::fs::read_dir(&tasks).map_or(0, |d| d.count()) < 2
        && std::time::Instant::now() < until
    {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A signal while the list of URLs (or the `-K` file holding them) is still being read
/// ends the run as any signal does: exit 128 + its number, one summary line saying that
/// nothing was sent and why, no request, no `-o` file; serial or `-Z`, with a deadline
/// (the list read on a thread of its own) or without.
#[test]
fn a_signal_while_the_list_is_read_ends_the_run_with_its_code_and_one_summary() {
    use std::io::Write;
    let mut cases = Vec::new();
    for from in [
        Unfinished::Stdin,
        Unfinished::ListFifo,
        Unfinished::ConfigFifo,
    ] {
        for (sig, status) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
            for parallel in [false, true] {
                for deadline in [false, true] {
                    cases.push((from, sig, status, parallel, deadline));
                }
            }
        }
    }
    let found = judged_four_at_a_time(&cases, |&(from, sig, status, parallel, deadline)| {
        let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let output = dir.path().join("out");
        let mut args = vec!["-o".to_string(), output.display().to_string()];
        if parallel {
            args.push("-Z".into());
        }
        if deadline {
            args.extend(["--deadline".into(), "1m".into()]);
        }
        let first = match from {
            Unfinished::ConfigFifo => format!("url = \"{}\"\n", s.url("/a")),
            _ => format!("{}\n", s.url("/a")),
        };
        match from {
            Unfinished::Stdin => args.extend(["--url".into(), "@-".into()]),
            Unfinished::ListFifo => args.extend(["--url".into(), format!("@{}", fifo.display())]),
            Unfinished::ConfigFifo => args.extend(["-K".into(), fifo.display().to_string()]),
        }
        let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
        // SAFETY: mkfifo reads the path given.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut child = std_command()
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // The writer is kept open (the list is never finished) until the run has ended.
        let _writer = match from {
            Unfinished::Stdin => {
                stdin.write_all(first.as_bytes()).unwrap();
                None
            }
            _ => {
                // Opening a FIFO for writing waits for its reader: the run is reading it.
                let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                w.write_all(first.as_bytes()).unwrap();
                Some(w)
            }
        };
        wait_for_handler(child.id());
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: kill only sends a signal to the child we spawned.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        let err = stderr(&out);
        let mut wrong = Vec::new();
        if out.status.code() != Some(status) {
            wrong.push(format!("ended {:?}", out.status));
        }
        let summaries = err.lines().filter(|l| l.contains("exit ")).count();
        if summaries != 1 || !err.contains("nothing sent") {
            wrong.push("not one summary saying nothing was sent".into());
        }
        if !s.requests().is_empty() || output.exists() {
            wrong.push("a request sent, or an -o file".into());
        }
        match wrong.is_empty() {
            true => vec![],
            false => vec![format!(
                "{from:?} signal {sig} -Z {parallel} deadline {deadline}: {}\n{err}",
                wrong.join("; ")
            )],
        }
    });
    assert!(found.is_empty(), "{}", found.join("\n"));
}
