//! Silence while sending is silence: an upload to a server that accepts the connection and
//! never reads ends within `--stall-timeout` (no byte accepted by the kernel for that long),
//! the attempt's `--timeout` and the `--deadline`, whatever the body's source; and a POST
//! whose body was partly sent is ambiguous, so it is not sent again. Before, the stall
//! clock started only once the whole body was in the kernel: such an upload hung for ever.

use crate::common::*;
use crate::silent::Silent;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// More than the kernel's send and receive buffers on loopback hold together (at most 4 and
/// 6 MiB by default; a server that does not
/// read does not make its receive window grow).
const BODY: u64 = 16 << 20;

#[derive(Debug, Clone, Copy)]
enum Source {
    Upload,
    DataBinary,
    Data,
    Form,
    Stdin,
}

impl Source {
    /// The flags that send `file` (stdin is the file for `Stdin`), and whether the
    /// method is idempotent (PUT).
    fn flags(self, file: &str) -> (Vec<String>, bool) {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect();
        match self {
            Source::Upload => (v(&["-T", file]), true),
            Source::DataBinary => (v(&["--data-binary", &format!("@{file}")]), false),
            Source::Data => (v(&["-d", &format!("@{file}")]), false),
            Source::Form => (v(&["-F", &format!("f=@{file}")]), false),
            Source::Stdin => (v(&["--data-binary", "@-"]), false),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Limit {
    Stall,
    Timeout,
    Deadline,
}

impl Limit {
    fn flags(self) -> [&'static str; 2] {
        match self {
            Limit::Stall => ["--stall-timeout", "1s"],
            Limit::Timeout => ["--timeout", "2s"],
            Limit::Deadline => ["--deadline", "3s"],
        }
    }

    /// The most the run may take: two attempts of the limit from the first connection (the
    /// body is read before it: `-d @file` of 16 MiB takes seconds in a debug build), or the
    /// deadline from the start.
    fn bound(self) -> Duration {
        match self {
            Limit::Stall => Duration::from_secs(2),
            Limit::Timeout => Duration::from_secs(4),
            Limit::Deadline => Duration::from_secs(3),
        }
    }
}

#[test]
fn an_upload_to_a_server_that_never_reads_ends_within_every_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.bin");
    // Sparse: 16 MiB of zeros at no cost.
    std::fs::File::create(&path).unwrap().set_len(BODY).unwrap();
    let mut cases = Vec::new();
    for source in [
        Source::Upload,
        Source::DataBinary,
        Source::Data,
        Source::Form,
        Source::Stdin,
    ] {
        for limit in [Limit::Stall, Limit::Timeout, Limit::Deadline] {
            cases.push((source, limit));
        }
    }
    assert_eq!(cases.len(), 15);
    // Each run mostly waits for its limit: five at a time keep the test short, and few
    // enough that a loaded machine's start-up stays far below the limits.
    let mut wrong = Vec::new();
    for chunk in cases.chunks(5) {
        let runs: Vec<_> = chunk
            .iter()
            .map(|&(source, limit)| {
                let path = path.clone();
                std::thread::spawn(move || one_upload(source, limit, &path))
            })
            .collect();
        wrong.extend(runs.into_iter().filter_map(|r| r.join().expect("a run")));
    }
    assert!(
        wrong.is_empty(),
        "{} of 15:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// One upload of `source` to a server that never reads, ended by `limit`: what was wrong
/// with it, if anything.
fn one_upload(source: Source, limit: Limit, path: &std::path::Path) -> Option<String> {
    let file = path.to_str().unwrap();
    let server = Silent::start();
    let (flags, idempotent) = source.flags(file);
    let mut cmd = std_command();
    cmd.args(&flags)
        .args(limit.flags())
        .args(["--attempts", "2"])
        .args(FAST)
        .arg(server.url("/upload"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    match source {
        Source::Stdin => cmd.stdin(std::fs::File::open(path).unwrap()),
        _ => cmd.stdin(Stdio::null()),
    };
    let t = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = match limit {
        Limit::Deadline => t.elapsed(),
        _ => server.first().map_or(t.elapsed(), |at| at.elapsed()),
    };
    let err = child
        .stderr
        .take()
        .map(|mut e| {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
            s
        })
        .unwrap_or_default();
    // PUT is retried once more; a POST partly sent may have been processed: never
    // sent again (exit 6). The deadline's own failure is exit 5.
    let (want, connections) = match (limit, idempotent) {
        (Limit::Deadline, _) => (5, None),
        (_, true) => (4, Some(2)),
        (_, false) => (6, Some(1)),
    };
    let made = server.connections();
    let slack = Duration::from_secs(5);
    // A POST that is not sent again says how to allow it.
    let hinted = idempotent
        || matches!(limit, Limit::Deadline)
        || err.to_ascii_lowercase().contains("idempotency-key");
    (status != Some(want)
        || took > limit.bound() + slack
        || connections.is_some_and(|c| c != made)
        || !hinted)
        .then(|| {
            format!(
                "{source:?} x {limit:?}: exit {status:?} (want {want}), {made} connections \
                 (want {connections:?}), after {took:?}\n{err}"
            )
        })
}
