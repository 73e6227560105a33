//! The smoke set: one test per main promise, enough to say that a build works on a machine.
//! In the suite they run cargo's build; `.ci/arm64.sh` runs them (`cargo test --test it
//! smoke::`) against the aarch64 static binary under qemu-user, through
//! `RETRY_HTTP_BIN_UNDER_TEST` and `RETRY_HTTP_BIN_RUNNER` (see `std_command` in common.rs):
//! a GET, a retry on 503 and 429 that waits the Retry-After, the deadline, `-o` written whole
//! or not at all, https trusting `--cacert`, the state file's circuit breaker, a batch, and
//! SIGINT during a transfer (which Wine delivers to a Windows program as the console's
//! Ctrl-C event: `.ci/windows.sh` runs the set against retry-http.exe under Wine).
//!
//! Their time bounds allow for the emulator. Measured on a 2-core x86-64 machine with 14
//! busy loops beside it: under qemu-user the aarch64 binary's `--version` takes 110-250 ms
//! (10-20 ms unloaded), and a run against a server that never answers, with `--deadline 1s`,
//! ends within 1.26 s; every upper bound below leaves more than 1.2 s beyond that. Under Wine
//! 8 (load average 15-20, as above) with a wineserver kept running (`.ci/windows-env.sh`
//! starts it with `-p`), retry-http.exe's `--version` takes 0.1-1.2 s, the Retry-After runs
//! end within 1.72 s, the deadline's within 1.54 s, and Ctrl-C's exit comes within 0.71 s;
//! without it each run that starts a wineserver again takes up to 4.8 s, past the bounds.

use crate::common::*;
use std::time::{Duration, Instant};

/// A body of `len` bytes that is not one byte repeated (a misplaced block shows).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// A job run on a thread of its own.
type Job<T> = Box<dyn FnOnce() -> T + Send>;

/// Runs each job on a thread of its own and returns their results in order: the tests that
/// wait (a Retry-After, a deadline) wait side by side.
fn side_by_side<T: Send + 'static>(jobs: Vec<Job<T>>) -> Vec<T> {
    let handles: Vec<_> = jobs.into_iter().map(std::thread::spawn).collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// A GET's body arrives byte for byte, to stdout and to `-o`, for bodies of no byte, a line
/// and 300 KiB (more than one read, less than the 1 MiB held in memory).
#[test]
fn a_get_delivers_its_body_to_stdout_and_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    for len in [0, 6, 300 << 10] {
        let body = pattern(len);
        let s = Server::start(vec![Step::Respond {
            status: 200,
            headers: vec![],
            body: body.clone(),
        }])
        .unwrap();
        let file = dir.path().join(format!("body-{len}"));
        for to_file in [false, true] {
            let mut args = vec![s.url("/get")];
            if to_file {
                args.extend(["-o".into(), file.to_str().unwrap().into()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (out, _) = run(&args);
            assert_eq!(code(&out), 0, "{len} bytes, -o {to_file}: {}", stderr(&out));
            let got = if to_file {
                std::fs::read(&file).unwrap()
            } else {
                out.stdout.clone()
            };
            assert!(
                got == body,
                "{len} bytes, -o {to_file}: {} arrived",
                got.len()
            );
            assert!(!to_file || out.stdout.is_empty());
        }
        let reqs = s.requests();
        assert_eq!(reqs.len(), 2);
        assert!(reqs.iter().all(|r| r.method == "GET" && r.target == "/get"));
    }
}

/// A 503 or a 429 with `Retry-After: 1` is retried after at least that second (no spread),
/// and the run ends with the answer that followed.
#[test]
fn a_retry_after_answer_is_retried_after_the_time_it_names() {
    let jobs: Vec<Job<_>> = [503, 429]
        .into_iter()
        .map(|status| {
            Box::new(move || {
                let s = Server::start(vec![
                    Step::with_header(status, "Retry-After", "1"),
                    Step::status(200, "after"),
                ])
                .unwrap();
                let (out, took) = run(&["--retry-after-spread", "0", &s.url("/")]);
                (status, out, took, gaps(&s.requests()))
            }) as Job<(u16, std::process::Output, Duration, Vec<Duration>)>
        })
        .collect();
    for (status, out, took, gaps) in side_by_side(jobs) {
        assert_eq!(code(&out), 0, "{status}: {}", stderr(&out));
        assert_eq!(out.stdout, b"after", "{status}");
        assert_eq!(gaps.len(), 1, "{status}: two requests");
        assert!(gaps[0] >= Duration::from_secs(1), "{status}: {gaps:?}");
        assert!(took < Duration::from_secs(3), "{status}: {took:?}");
    }
}

/// The deadline ends a run whose server never answers, or stops in the middle of the body,
/// with exit 5 and nothing on stdout, soon after it passes.
#[test]
fn the_deadline_ends_a_run_that_gets_no_whole_answer() {
    let steps = [
        Step::Hang,
        Step::Stall {
            body: b"part".to_vec(),
            declared: 100,
            pause: Duration::from_secs(60),
        },
    ];
    let jobs: Vec<Job<_>> = steps
        .into_iter()
        .map(|step| {
            Box::new(move || {
                let s = Server::start(vec![step.clone()]).unwrap();
                let (out, took) = run(&["--deadline", "1s", &s.url("/")]);
                (step, out, took)
            }) as Job<(Step, std::process::Output, Duration)>
        })
        .collect();
    for (step, out, took) in side_by_side(jobs) {
        assert_eq!(code(&out), 5, "{step:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{step:?}");
        assert!(took >= Duration::from_millis(950), "{step:?}: {took:?}");
        assert!(took < Duration::from_millis(2500), "{step:?}: {took:?}");
    }
}

/// `-o FILE` is written whole or not at all: a body cut short is fetched again and the file
/// holds the whole of it; when every answer is cut, no file is left, temporary ones included.
#[test]
fn o_is_written_whole_or_not_at_all() {
    let body = pattern(64 << 10);
    let cut = Step::Truncate {
        declared: body.len(),
        body: body[..5000].to_vec(),
    };
    let whole = Step::Respond {
        status: 200,
        headers: vec![],
        body: body.clone(),
    };
    for (script, whole_file) in [(vec![cut.clone(), whole], true), (vec![cut], false)] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out");
        let s = Server::start(script).unwrap();
        let (out, _) = run_fast(
            &["--attempts", "2", "-o", file.to_str().unwrap()],
            &s.url("/"),
        );
        assert_eq!(s.requests().len(), 2);
        if whole_file {
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            assert!(std::fs::read(&file).unwrap() == body);
        } else {
            assert_eq!(code(&out), 4, "{}", stderr(&out));
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert!(left.is_empty(), "{left:?}");
        }
    }
}

/// https with a certificate the system does not trust: refused without `--cacert` (exit 6,
/// not retried), fetched with it.
#[test]
fn https_trusts_the_certificate_that_cacert_names() {
    let s = crate::tls_support::tls_server("localhost", b"secure", "");
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("ca.pem");
    std::fs::write(&pem, &s.cert_pem).unwrap();
    let (out, _) = run(&["--cacert", pem.to_str().unwrap(), &s.url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"secure");
    let (out, _) = run_fast(&[], &s.url);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
}

/// The state file carries the circuit breaker from run to run: two failed runs open it, the
/// third is refused (exit 7) without a request.
#[test]
fn the_state_file_opens_the_circuit_for_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/");
    let args = [
        "--state",
        file.to_str().unwrap(),
        "--breaker-threshold",
        "2",
        "--breaker-cooldown",
        "1h",
        "--attempts",
        "1",
        &url,
    ];
    for expected in [4, 4, 7] {
        let (out, _) = run(&args);
        assert_eq!(code(&out), expected, "{}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 2, "the open circuit sent a request");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        serde_json::from_str::<serde_json::Value>(&text).is_ok(),
        "{text}"
    );
}

/// A batch of three URLs, serial and with `-Z`, to stdout and to one `-o` each: every body
/// in its place in URL order, the one that failed first retried.
#[test]
fn a_batch_delivers_each_body_in_url_order() {
    let dir = tempfile::tempdir().unwrap();
    for parallel in [false, true] {
        for to_files in [false, true] {
            let servers = [
                Server::start(vec![Step::status(200, "first")]).unwrap(),
                Server::start(vec![Step::status(503, ""), Step::status(200, "second")]).unwrap(),
                Server::start(vec![Step::status(200, "third")]).unwrap(),
            ];
            let mut args: Vec<String> = FAST.iter().map(|a| a.to_string()).collect();
            if parallel {
                args.push("-Z".into());
            }
            let files: Vec<_> = (0..3)
                .map(|i| dir.path().join(format!("{parallel}-{i}")))
                .collect();
            for (s, f) in servers.iter().zip(&files) {
                if to_files {
                    args.extend(["-o".into(), f.to_str().unwrap().into()]);
                }
                args.push(s.url("/"));
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (out, _) = run(&args);
            let case = format!("-Z {parallel}, -o {to_files}");
            assert_eq!(code(&out), 0, "{case}: {}", stderr(&out));
            if to_files {
                assert!(out.stdout.is_empty(), "{case}");
                for (f, want) in files.iter().zip(["first", "second", "third"]) {
                    assert_eq!(std::fs::read_to_string(f).unwrap(), want, "{case}");
                }
            } else {
                assert_eq!(out.stdout, b"firstsecondthird", "{case}");
            }
            assert_eq!(servers[1].requests().len(), 2, "{case}");
        }
    }
}

/// SIGINT during a transfer to `-o` (Ctrl-C; under Wine, the console's Ctrl-C event): the
/// run ends at once with 130 and leaves no file, the temporary one included. The time is
/// the child's exit, not the end of its stderr: Wine's helper processes, started beside
/// the first program of a prefix, hold the pipes they inherited for seconds after.
#[test]
fn ctrl_c_ends_a_transfer_with_130_and_no_file() {
    let s = Server::start(vec![Step::Stall {
        body: vec![b'a'; 1000],
        declared: 5000,
        pause: Duration::from_secs(30),
    }])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.bin");
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("stderr");
    let mut child = std_command()
        .args(["-o", file.to_str().unwrap(), &s.url("/")])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // The signal lands mid-body: once the temporary file holds the first bytes.
    let until = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_dir(dir.path()).unwrap().any(|e| {
        let e = e.unwrap();
        e.file_name().to_string_lossy().ends_with(".part") && e.metadata().unwrap().len() > 0
    }) {
        assert!(Instant::now() < until, "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Instant::now();
    // SAFETY: kill only sends a signal to the child spawned here.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(said.contains("interrupted"), "{said}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    // The temporary file is removed while still open (on Windows, a deletion pending until
    // the last handle closes). Windows closes a process's handles before its exit is seen;
    // Wine's wineserver closes them, and unlinks the file, a moment after: up to a second.
    let exited = Instant::now();
    loop {
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        if left.is_empty() {
            break;
        }
        assert!(exited.elapsed() < Duration::from_secs(1), "{left:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A path as the binary under test names it: under Wine, the Windows form of `path`
/// (Wine's drive `Z:` is the host's root, every `/` a `\`), so that drive letters and
/// backslashes are what `-o`, `--output-dir`, `-K` and `--state` are given; elsewhere the
/// path as it is.
fn as_the_binary_names_it(path: &std::path::Path) -> String {
    let text = path.to_str().expect("a UTF-8 path").to_string();
    let runner = std::env::var("RETRY_HTTP_BIN_RUNNER").unwrap_or_default();
    match runner.contains("wine") {
        true => format!("Z:{}", text.replace('/', "\\")),
        false => text,
    }
}

/// The paths a user gives (`-o`, `--output-dir` with `-O`, `-K`, `--state`) in the
/// machine's own form (under Wine: `Z:\...\out`): the files land where they name.
#[test]
fn paths_in_the_machine_s_own_form_are_where_files_go() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(vec![
        Step::status(200, "one"),
        Step::status(200, "two"),
        Step::status(200, "three"),
    ])
    .unwrap();
    let out_file = as_the_binary_names_it(&dir.path().join("out.txt"));
    let (out, _) = run(&["-o", &out_file, &s.url("/a")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read(dir.path().join("out.txt")).unwrap(), b"one");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let config = dir.path().join("config.txt");
    let state = as_the_binary_names_it(&dir.path().join("state.json"));
    std::fs::write(
        &config,
        format!("state = \"{}\"\n", state.replace('\\', "\\\\")),
    )
    .unwrap();
    let (out, _) = run(&[
        "-K",
        &as_the_binary_names_it(&config),
        "--output-dir",
        &as_the_binary_names_it(&sub),
        "-O",
        &s.url("/named.txt"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read(sub.join("named.txt")).unwrap(), b"two");
    let text = std::fs::read_to_string(dir.path().join("state.json")).unwrap();
    assert!(text.contains("retry-http-state"), "{text}");
}
