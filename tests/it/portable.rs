//! The portable paths (what macOS runs) against the Linux-only calls, on this machine: the
//! debug binary takes them when its environment holds `RETRY_HTTP_TEST_PORTABLE=1` (see
//! crates/retry-http-system/src/platform.rs). Each behaviour runs both ways and must give the
//! same result, and the
//! kernel's view (strace, a test dependency) shows that each way made the calls it names:
//! on the portable paths no `splice`, no `F_SETPIPE_SZ`, no `pipe2(O_CLOEXEC)`, no
//! `close_range`, no `/proc/self/fd`; on the Linux paths the same trace sees them (so a
//! trace that saw nothing could not pass).
//!
//! `.ci/run` also runs the body, deadline, signal and output tests of the suite with the
//! switch set: `command_for` passes it on to the binary (tests/it/common.rs).

use crate::common::*;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// The two ways a run can go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Paths {
    Linux,
    Portable,
}

const PATHS: [Paths; 2] = [Paths::Linux, Paths::Portable];

/// The system calls the trace records: the Linux-only ones, their portable stand-ins, and
/// the fork of the child that frees large spools.
const TRACED: &str = "trace=splice,pipe,pipe2,close_range,fcntl,openat,clone,clone3,fork,vfork";

/// The binary (or strace running it) with the switch set for `paths`.
fn client(program: &Path, paths: Paths) -> std::process::Command {
    let mut cmd = command_for(program);
    match paths {
        Paths::Portable => cmd.env(PORTABLE_SWITCH, "1"),
        // Even in a suite run with the switch set (which command_for passes on).
        Paths::Linux => cmd.env_remove(PORTABLE_SWITCH),
    };
    cmd
}

/// Runs the binary with `args` under `strace -f` in `dir`; returns its output and the
/// trace of the [`TRACED`] calls.
fn traced(paths: Paths, args: &[&str], dir: &Path) -> (Output, String) {
    let log = dir.join("trace.log");
    let out = client(Path::new("strace"), paths)
        .args(["-f", "--seccomp-bpf", "-qq", "-e", TRACED, "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_retry-http"))
        .args(args)
        .env("TMPDIR", dir)
        .output()
        .expect("strace must be installed (Debian package strace)");
    let trace = std::fs::read_to_string(&log).unwrap_or_default();
    (out, trace)
}

/// The lines of `trace` that are Linux-only calls of ours.
fn linux_only(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .filter(|l| {
            l.contains("splice(")
                || l.contains("F_SETPIPE_SZ")
                || l.contains("close_range(")
                || l.contains("/proc/self/fd/")
                || (l.contains("pipe2(") && l.contains("O_CLOEXEC"))
        })
        .collect()
}

fn body(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 % 251) as u8).collect()
}

/// Where a body goes.
#[derive(Clone, Copy, Debug)]
enum Out {
    File,
    Stdout,
    Include,
}

#[test]
fn a_body_arrives_the_same_on_both_paths_and_the_portable_one_calls_nothing_of_linux() {
    for len in [0, 1, 131_073, (3 << 20) + 7] {
        for out in [Out::File, Out::Stdout, Out::Include] {
            for paths in PATHS {
                let ctx = format!("{len} bytes to {out:?} on the {paths:?} paths");
                let expected = body(len);
                let s = Server::start(vec![Step::Respond {
                    status: 200,
                    headers: vec![],
                    body: expected.clone(),
                }])
                .expect("server");
                let dir = tempfile::tempdir().expect("dir");
                let file = dir.path().join("out.bin");
                let f = file.to_str().expect("utf-8");
                let mut args = match out {
                    Out::File => vec!["-o", f],
                    Out::Stdout => vec![],
                    Out::Include => vec!["-i", "-o", f],
                };
                let url = s.url("/b");
                args.extend(["-s", &url]);
                let (o, trace) = traced(paths, &args, dir.path());
                assert_eq!(o.status.code(), Some(0), "{ctx}: {}", stderr(&o));
                let got = match out {
                    Out::Stdout => o.stdout.clone(),
                    _ => std::fs::read(&file).expect("the file"),
                };
                let at = match out {
                    Out::Include => got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4,
                    _ => 0,
                };
                assert!(got[at..] == expected[..], "{ctx}: the body differs");
                assert!(trace.contains("openat("), "{ctx}: the trace is empty");
                let seen = linux_only(&trace);
                match paths {
                    Paths::Portable => assert!(seen.is_empty(), "{ctx}: {seen:#?}"),
                    // A body past ureq's buffer is spliced into its file.
                    Paths::Linux if len > 131_072 && !matches!(out, Out::Stdout) => {
                        assert!(trace.contains("splice("), "{ctx}: {trace}")
                    }
                    Paths::Linux => {}
                }
            }
        }
    }
}

#[test]
fn a_body_cut_short_and_a_stall_end_the_same_on_both_paths() {
    let len = (3 << 20) + 7;
    let expected = body(len);
    for paths in PATHS {
        // Cut deep on the socket.
        let s = Server::start(vec![Step::Truncate {
            declared: len,
            body: expected[..(2 << 20)].to_vec(),
        }])
        .expect("server");
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("out.bin");
        let f = file.to_str().expect("utf-8");
        let (out, trace) = traced(
            paths,
            &["--attempts", "1", "-o", f, &s.url("/b")],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(4), "{paths:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("Peer disconnected"),
            "{}",
            stderr(&out)
        );
        assert!(!file.exists(), "{paths:?}: a file was made");
        assert_eq!(
            only_the_trace(dir.path()),
            0,
            "{paths:?}: a temporary file is left"
        );
        same_calls(paths, &trace);

        // 1 MiB, then silence: --stall-timeout ends the attempt, on either path.
        let s = Server::start(vec![Step::Stall {
            body: expected[..(1 << 20)].to_vec(),
            declared: len,
            pause: Duration::from_secs(20),
        }])
        .expect("server");
        let started = Instant::now();
        let flags = ["--attempts", "1", "--stall-timeout", "300ms", "-o", f];
        let (out, trace) = traced(paths, &[&flags[..], &[&s.url("/b")]].concat(), dir.path());
        assert_eq!(out.status.code(), Some(4), "{paths:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--stall-timeout"), "{}", stderr(&out));
        assert!(started.elapsed() < Duration::from_secs(10), "{paths:?}");
        assert!(!file.exists(), "{paths:?}: a file was made");
        same_calls(paths, &trace);
    }
}

/// The entries of `dir` but the trace's log.
fn only_the_trace(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name() != "trace.log")
        .count()
}

/// On the portable paths, no Linux-only call in `trace`; on the Linux paths, the splice
/// of a body past ureq's buffer.
fn same_calls(paths: Paths, trace: &str) {
    let seen = linux_only(trace);
    match paths {
        Paths::Portable => assert!(seen.is_empty(), "{seen:#?}"),
        Paths::Linux => assert!(trace.contains("splice("), "{trace}"),
    }
}

/// What ends a run whose stdout spool holds 80 MiB.
#[derive(Clone, Copy, Debug)]
enum End {
    Deadline,
    Term,
}

/// Descriptors of any process that lead to a file in `dir` (the spool, freed when the last
/// one closes): "PID/fd/N -> target".
fn held_in(dir: &Path) -> Vec<String> {
    let mut held = Vec::new();
    for p in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        for fd in std::fs::read_dir(p.path().join("fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(target) = std::fs::read_link(fd.path())
                && target.starts_with(dir)
            {
                held.push(format!("{} -> {}", fd.path().display(), target.display()));
            }
        }
    }
    held
}

/// Waits until the spool of process `pid` (a file in `dir`) holds `size` bytes.
fn wait_for_spool(pid: u32, dir: &Path, size: u64) {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten();
        let full = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|t| t.starts_with(dir))
                && std::fs::metadata(fd.path()).is_ok_and(|m| m.len() >= size)
        });
        if full {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the spool never reached {size} bytes");
}

#[test]
fn a_large_spool_is_freed_after_the_exit_on_both_paths_with_each_paths_calls() {
    let size: usize = 80 << 20;
    for end in [End::Deadline, End::Term] {
        for paths in PATHS {
            let ctx = format!("{end:?} on the {paths:?} paths");
            let s = Server::start(vec![Step::Stall {
                body: vec![b's'; size],
                declared: size + 1,
                pause: Duration::from_secs(60),
            }])
            .expect("server");
            let dir = tempfile::tempdir().expect("dir");
            let started = Instant::now();
            let mut child = client(Path::new(env!("CARGO_BIN_EXE_retry-http")), paths)
                .args(["--deadline", "8s", &s.url("/big")])
                .env("TMPDIR", dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn");
            if let End::Term = end {
                wait_for_spool(child.id(), dir.path(), size as u64);
                // SAFETY: kill on the child's pid.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            }
            let status = child.wait().expect("wait");
            let took = started.elapsed();
            let (code, bound) = match end {
                End::Deadline => (5, Duration::from_secs(12)),
                End::Term => (143, Duration::from_secs(30)),
            };
            assert_eq!(status.code(), Some(code), "{ctx}");
            assert!(took < bound, "{ctx}: took {took:?}");
            // The detached child frees the spool once the run is gone.
            let until = Instant::now() + Duration::from_secs(20);
            while !held_in(dir.path()).is_empty() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(held_in(dir.path()), Vec::<String>::new(), "{ctx}");
            assert_eq!(
                std::fs::read_dir(dir.path()).expect("dir").count(),
                0,
                "{ctx}"
            );
        }
    }
    the_child_is_made_with_each_paths_calls(size);
}

/// The same run under strace: the child that frees the spool is made, with each path's
/// calls (`pipe2(O_CLOEXEC)` and `close_range`, or `pipe`, `FD_CLOEXEC` and `close`).
fn the_child_is_made_with_each_paths_calls(size: usize) {
    for paths in PATHS {
        let s = Server::start(vec![Step::Stall {
            body: vec![b's'; size],
            declared: size + 1,
            pause: Duration::from_secs(60),
        }])
        .expect("server");
        let dir = tempfile::tempdir().expect("dir");
        let url = s.url("/big");
        let (o, trace) = traced(paths, &["-s", "--deadline", "8s", &url], dir.path());
        assert_eq!(o.status.code(), Some(5), "{paths:?}: {}", stderr(&o));
        let forked = trace
            .lines()
            .any(|l| l.contains("clone(") || l.contains("fork("));
        assert!(forked, "{paths:?}: no child was made: {trace}");
        match paths {
            Paths::Linux => {
                assert!(trace.contains("close_range("), "{trace}");
                assert!(trace.contains("O_CLOEXEC)"), "{trace}");
            }
            Paths::Portable => {
                let seen = linux_only(&trace);
                assert!(seen.is_empty(), "{seen:#?}");
                assert!(trace.contains("F_SETFD, FD_CLOEXEC"), "{trace}");
            }
        }
    }
}
