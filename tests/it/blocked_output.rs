//! Every write the run makes is bounded by the deadline, its last words included: a stdout
//! or a stderr that is a full pipe nobody reads cannot hold the process past `--deadline`.
//! Before, the run stood its watchdog down before writing its summary, so `-s --deadline 2s`
//! against 503s with stderr full was still running long after.
//!
//! The rule the exit codes follow (docs/policy.md, "Retry policy", Deadline): a write still blocked
//! at the deadline ends the run with exit 5 if the outcome was not settled yet (a log line
//! of an attempt, the body, `-w`, `--explain`'s policy); once the outcome is settled, only
//! the summary remains, and a summary still blocked at the deadline ends the run with that
//! outcome's code. A usage error waits on its reader until the deadline typed on the
//! command line, or 2 s without one, then exits 2.

use crate::common::*;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The run's deadline, and the most it may take beyond it (a debug binary starting on a
/// machine at a load average of 15 included).
const DEADLINE: Duration = Duration::from_secs(2);
const SLACK: Duration = Duration::from_secs(4);

/// A pipe whose buffer is full: the read end (kept open, never read) and the write end,
/// blocking, for the child. Its buffer is made as small as the kernel allows (on Linux;
/// macOS's cannot be set), then filled.
fn full_pipe() -> (OwnedFd, OwnedFd) {
    let (read, write) = std::io::pipe().expect("a pipe");
    let (read, write) = (OwnedFd::from(read), OwnedFd::from(write));
    let w = write.as_raw_fd();
    // SAFETY: fcntl and write on a descriptor we own, with a buffer of our own.
    unsafe {
        #[cfg(target_os = "linux")]
        libc::fcntl(w, libc::F_SETPIPE_SZ, 4096);
        let flags = libc::fcntl(w, libc::F_GETFL);
        libc::fcntl(w, libc::F_SETFL, flags | libc::O_NONBLOCK);
        let block = [b'.'; 4096];
        while libc::write(w, block.as_ptr().cast(), block.len()) > 0 {}
        // The child must block on it, not fail with EAGAIN.
        libc::fcntl(w, libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    (read, write)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Full {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Log {
    Silent,
    Default,
    Verbose,
    Json,
}

impl Log {
    fn flags(self) -> &'static [&'static str] {
        match self {
            Log::Silent => &["-s"],
            Log::Default => &[],
            Log::Verbose => &["-v"],
            Log::Json => &["--log-format", "json"],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// A GET whose 3 MiB body goes to stdout (more than the 1 MiB the run makes the pipe).
    Success,
    /// 503 on every attempt: exit 4.
    Exhausted,
    /// `--attempts 0`: exit 2, nothing sent.
    Usage,
    /// The policy on stdout, nothing sent.
    Explain,
    /// The body to `-o FILE`, then `-w` on stdout and on stderr.
    WriteOut,
}

/// The exit code the run must end with (see the module's comment for the rule).
fn expected(full: Full, log: Log, scenario: Scenario) -> i32 {
    use Scenario::*;
    match (full, scenario) {
        // Output the user asked for, not taken: the deadline's.
        (Full::Stdout, Success | Explain | WriteOut) => 5,
        (Full::Stdout, Exhausted) => 4,
        (Full::Stdout | Full::Stderr, Usage) => 2,
        // -w writes on stderr after %{stderr}, under -s too.
        (Full::Stderr, WriteOut) => 5,
        // With -s the only line is the summary, written once the outcome is settled.
        (Full::Stderr, Exhausted) if log == Log::Silent => 4,
        // A success writes no text summary: under -s nothing reaches stderr; --explain
        // writes nothing else there but its JSON summary.
        (Full::Stderr, Success) if log == Log::Silent => 0,
        (Full::Stderr, Explain) => 0,
        // Attempt lines (and -v's request lines) are written while the run goes on.
        (Full::Stderr, Success | Exhausted) => 5,
    }
}

struct Servers {
    big: Server,
    unavailable: Server,
    small: Server,
}

fn args_for(scenario: Scenario, servers: &Servers, out_file: &str) -> Vec<String> {
    let mut a: Vec<String> = FAST.iter().map(|s| s.to_string()).collect();
    let url = match scenario {
        Scenario::Success | Scenario::Explain => servers.big.url("/big"),
        Scenario::Exhausted => {
            a.extend(["--attempts", "3"].map(String::from));
            servers.unavailable.url("/busy")
        }
        Scenario::Usage => {
            a.extend(["--attempts", "0"].map(String::from));
            servers.small.url("/never")
        }
        Scenario::WriteOut => {
            a.extend(
                [
                    "-o",
                    out_file,
                    "-w",
                    "%{http_code}\\n%{stderr}%{http_code}\\n",
                ]
                .map(String::from),
            );
            servers.small.url("/small")
        }
    };
    if scenario == Scenario::Explain {
        a.push("--explain".into());
    }
    a.push(url);
    a
}

/// One cell of the product: how it ended, how long it took, and what it left behind.
struct Ran {
    code: Option<i32>,
    took: Duration,
    leftovers: Vec<String>,
}

fn run_cell(full: Full, log: Log, scenario: Scenario, servers: &Servers) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out_file = dir.path().join("out.bin");
    let (_reader, writer) = full_pipe();
    let mut cmd = std_command();
    cmd.args(log.flags())
        .args(["--deadline", "2s"])
        .args(args_for(scenario, servers, out_file.to_str().unwrap()))
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null());
    match full {
        Full::Stdout => cmd.stdout(Stdio::from(writer)).stderr(Stdio::null()),
        Full::Stderr => cmd.stderr(Stdio::from(writer)).stdout(Stdio::null()),
    };
    let t = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if t.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = t.elapsed();
    let leftovers = std::fs::read_dir(dir.path())
        .unwrap()
        .chain(std::fs::read_dir(&tmp).unwrap())
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "tmp" && n != "out.bin")
        .collect();
    Ran {
        code,
        took,
        leftovers,
    }
}

#[test]
fn a_full_stdout_or_stderr_cannot_hold_the_run_past_its_deadline() {
    let servers = Servers {
        big: Server::start(vec![Step::Generate { len: 3 << 20 }]).unwrap(),
        unavailable: Server::start(vec![Step::status(503, "busy")]).unwrap(),
        small: Server::start(vec![Step::status(200, "small")]).unwrap(),
    };
    let mut cells = Vec::new();
    for full in [Full::Stdout, Full::Stderr] {
        for log in [Log::Silent, Log::Default, Log::Verbose, Log::Json] {
            for scenario in [
                Scenario::Success,
                Scenario::Exhausted,
                Scenario::Usage,
                Scenario::Explain,
                Scenario::WriteOut,
            ] {
                cells.push((full, log, scenario));
            }
        }
    }
    assert_eq!(cells.len(), 40);
    // The cells run side by side: most of them wait on their deadline.
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = cells
            .iter()
            .map(|&(full, log, scenario)| {
                let servers = &servers;
                scope.spawn(move || run_cell(full, log, scenario, servers))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut wrong = Vec::new();
    for ((full, log, scenario), ran) in cells.iter().zip(&results) {
        let want = expected(*full, *log, *scenario);
        if ran.code != Some(want) || ran.took > DEADLINE + SLACK || !ran.leftovers.is_empty() {
            wrong.push(format!(
                "{full:?} full, {log:?}, {scenario:?}: exit {:?} (want {want}) after {:?}, left {:?}",
                ran.code, ran.took, ran.leftovers
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of 40 cells:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // The usage error sent nothing.
    assert!(
        servers
            .small
            .requests()
            .iter()
            .all(|r| r.target != "/never")
    );
}

#[test]
fn a_usage_error_into_a_full_stderr_ends_by_its_bound_at_every_stage() {
    // Found by clap, by the configuration's checks, and once the inputs are read; each
    // with a deadline (its bound) and without one (2 s).
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let url = s.url("/");
    let stages: [&[&str]; 3] = [
        &["--attempts", "0"],
        &["-I", "-d", "x=1"],
        &["--cacert", "/nonexistent/ca.pem"],
    ];
    let mut ran = 0;
    for stage in stages {
        for deadline in [Some("1s"), None] {
            for log in [Log::Silent, Log::Json] {
                let (_reader, writer) = full_pipe();
                let mut cmd = std_command();
                cmd.args(log.flags()).args(stage);
                if let Some(d) = deadline {
                    cmd.args(["--deadline", d]);
                }
                cmd.arg(&url)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::from(writer));
                let t = Instant::now();
                let mut child = cmd.spawn().unwrap();
                let code = loop {
                    if let Some(status) = child.try_wait().unwrap() {
                        break status.code();
                    }
                    if t.elapsed() > Duration::from_secs(30) {
                        let _ = child.kill();
                        let _ = child.wait();
                        break None;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                };
                let took = t.elapsed();
                let bound = if deadline.is_some() { 1 } else { 2 };
                assert_eq!(code, Some(2), "{stage:?} {deadline:?} {log:?}");
                assert!(
                    took < Duration::from_secs(bound) + SLACK,
                    "{stage:?} {deadline:?} {log:?}: {took:?}"
                );
                ran += 1;
            }
        }
    }
    assert_eq!(ran, 12);
    assert!(s.requests().is_empty(), "nothing is sent");
}

#[test]
fn help_and_version_into_a_full_stdout_end_by_a_typed_deadline() {
    // Not runs, but a deadline given on the command line or in the environment bounds
    // them too: exit 5 at the deadline, as for a body nobody reads.
    let cases: [(&[&str], Option<&str>); 4] = [
        (&["--help", "--deadline", "1s"], None),
        (&["-h", "--deadline=1s"], None),
        (&["--help"], Some("1s")),
        (&["--version"], Some("1s")),
    ];
    for (args, env) in cases {
        let (_reader, writer) = full_pipe();
        let mut cmd = std_command();
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::null());
        if let Some(d) = env {
            cmd.env("RETRY_HTTP_DEADLINE", d);
        }
        let t = Instant::now();
        let mut child = cmd.spawn().unwrap();
        let code = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status.code();
            }
            if t.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(code, Some(5), "{args:?} {env:?}");
        assert!(
            t.elapsed() < Duration::from_secs(1) + SLACK,
            "{args:?} {env:?}: {:?}",
            t.elapsed()
        );
    }
}
