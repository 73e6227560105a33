//! `-C -` across runs: a download a run ends without (out of attempts, the deadline,
//! SIGTERM, the last two in the middle of a resumed body) leaves its bytes beside the `-o` file (`.NAME.retry-http-partial` and its
//! record), the file keeping its previous content; the next run with `-C -` and the same
//! `-o` resumes them with `Range` and `If-Range` into a byte-exact file. The product runs
//! every ending with an ETag and with a Last-Modified validator (3 x 2 = 6 pairs of runs).
//! A changed validator, another URL's leftover, one older than a day, or one another run
//! has taken is not resumed; without `-C -` nothing is left.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

const LEN: usize = 100_000;
const CUT: usize = 40_000;
const MORE: usize = 20_000;
const OLD: &[u8] = b"the previous complete content\n";
const DATE: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

fn body() -> Vec<u8> {
    (0..LEN).map(|i| (i * 7 % 253) as u8).collect()
}

fn resource(validator: &str, cut_after: Option<usize>) -> Step {
    Step::Resource {
        body: body(),
        etag: validator.into(),
        cut_after,
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// The URL of `path` on `srv` with a user, a password and a token in it.
fn secret_url(srv: &Server, path: &str) -> String {
    srv.url(path)
        .replace("http://", "http://alice:pa55word@")
        .replace(path, &format!("{path}?token=t0k3n"))
}

/// The client, its stdout discarded and its stderr piped.
fn client(args: &[&str]) -> std::process::Command {
    let mut cmd = std_command();
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    cmd
}

#[derive(Debug, Clone, Copy)]
enum Ending {
    AttemptsOut,
    Deadline,
    Sigterm,
}

/// The script of a pair of runs: run 1 is cut and ended by `ending`, run 2 gets the whole
/// body (the same server, so the same URL); and the bytes run 1 leaves.
fn script(validator: &str, ending: Ending) -> (Vec<Step>, usize) {
    let whole = resource(validator, None);
    match ending {
        // Two attempts, each cut: 40,000 bytes, then 40,000 more resumed within the run.
        Ending::AttemptsOut => (
            vec![
                resource(validator, Some(CUT)),
                resource(validator, Some(CUT)),
                whole,
            ],
            2 * CUT,
        ),
        // The second attempt resumes, receives 20,000 bytes more, then the server is silent
        // until the deadline or the signal ends the run in the middle of the body.
        Ending::Deadline | Ending::Sigterm => (
            vec![
                resource(validator, Some(CUT)),
                Step::ResourceStall {
                    body: body(),
                    etag: validator.into(),
                    sent: MORE,
                },
                whole,
            ],
            CUT + MORE,
        ),
    }
}

/// Run 1 of `url` to `file`, ended by `ending`: its stderr and exit code.
fn first_run(srv: &Server, url: &str, file: &Path, ending: Ending) -> (String, i32) {
    let mut args = vec!["-C", "-", "-o", s(file), "--attempts", "2", "--base", "1ms"];
    args.extend(["--cap", "5ms", "--max-time", "60s"]);
    if let Ending::Deadline = ending {
        args.extend(["--deadline", "4s"]);
    }
    args.push(url);
    let child = client(&args).spawn().expect("spawn");
    if let Ending::Sigterm = ending {
        srv.wait_for_requests(2, Duration::from_secs(30));
        // The 20,000 bytes are read well before this (a loopback read of milliseconds).
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: kill only sends a signal to the child this test spawned.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    }
    let out = child.wait_with_output().unwrap();
    (stderr(&out), code(&out))
}

#[test]
fn a_cut_download_survives_to_the_next_run_for_every_ending_and_validator() {
    let mut pairs = 0;
    for ending in [Ending::AttemptsOut, Ending::Deadline, Ending::Sigterm] {
        for validator in ["\"v1\"", DATE] {
            let case = format!("{ending:?} with {validator}");
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("big.bin");
            let (script, kept) = script(validator, ending);
            let srv = Server::start(script).unwrap();
            let url = secret_url(&srv, "/f");
            let (err, rc) = first_run(&srv, &url, &file, ending);
            let want = match ending {
                Ending::AttemptsOut => rc != 0 && rc != 5 && rc != 143,
                Ending::Deadline => rc == 5,
                Ending::Sigterm => rc == 143,
            };
            assert!(want, "{case}: exit {rc}: {err}");
            assert_eq!(
                names_in(dir.path()),
                [
                    ".big.bin.retry-http-partial",
                    ".big.bin.retry-http-partial.info",
                ],
                "{case}: nothing in the file's place: {err}"
            );
            let data = dir.path().join(".big.bin.retry-http-partial");
            assert_eq!(std::fs::read(&data).unwrap(), body()[..kept], "{case}");
            let info = std::fs::read_to_string(dir.path().join(".big.bin.retry-http-partial.info"))
                .unwrap();
            for secret in ["127.0.0.1", "alice", "pa55word", "t0k3n", "/f"] {
                assert!(!info.contains(secret), "{case}: {secret} on disk: {info}");
            }
            assert!(info.contains(&format!("bytes {kept}\n")), "{case}: {info}");
            assert!(err.contains("for the next run"), "{case}: {err}");

            // A complete file from an earlier day is there too: the leftover is preferred
            // over its size, and it keeps its content until the whole body replaces it.
            std::fs::write(&file, OLD).unwrap();
            let before = srv.requests().len();
            let (out, _) = run_fast(&["-C", "-", "-o", s(&file)], &url);
            assert_eq!(code(&out), 0, "{case}: {}", stderr(&out));
            assert!(
                std::fs::read(&file).unwrap() == body(),
                "{case}: not byte-exact"
            );
            let reqs = &srv.requests()[before..];
            assert_eq!(reqs.len(), 1, "{case}");
            assert_eq!(reqs[0].header("range"), Some(&*format!("bytes={kept}-")));
            assert_eq!(reqs[0].header("if-range"), Some(validator), "{case}");
            assert_eq!(
                names_in(dir.path()),
                ["big.bin"],
                "{case}: {}",
                stderr(&out)
            );
            pairs += 1;
        }
    }
    assert_eq!(pairs, 6);
}

/// Leaves a leftover of `CUT` bytes of `/f` beside `file` by a run of one attempt that
/// `srv`'s first step cuts; returns the number of requests so far.
fn leave(srv: &Server, file: &Path) -> usize {
    let (out, _) = run_fast(
        &["-C", "-", "-o", s(file), "--attempts", "1"],
        &srv.url("/f"),
    );
    assert_ne!(code(&out), 0);
    assert!(leftover(file).exists(), "{}", stderr(&out));
    srv.requests().len()
}

fn leftover(file: &Path) -> PathBuf {
    file.with_file_name(".big.bin.retry-http-partial")
}

#[test]
fn a_changed_validator_starts_over_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.bin");
    let srv = Server::start(vec![
        resource("\"v1\"", Some(CUT)),
        resource("\"v2\"", None),
    ])
    .unwrap();
    let n = leave(&srv, &file);
    let (out, _) = run_fast(&["-C", "-", "-o", s(&file)], &srv.url("/f"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(std::fs::read(&file).unwrap() == body());
    assert_eq!(srv.requests()[n].header("if-range"), Some("\"v1\""));
    assert!(
        stderr(&out).contains("representation changed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(names_in(dir.path()), ["big.bin"]);
}

#[test]
fn another_url_s_leftover_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.bin");
    let srv = Server::start(vec![
        resource("\"v1\"", Some(CUT)),
        resource("\"v1\"", None),
    ])
    .unwrap();
    let n = leave(&srv, &file);
    let (out, _) = run_fast(&["-C", "-", "-o", s(&file)], &srv.url("/g"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(srv.requests()[n].header("range"), None);
    assert!(stderr(&out).contains("another URL"), "{}", stderr(&out));
    assert!(std::fs::read(&file).unwrap() == body());
    assert_eq!(names_in(dir.path()), ["big.bin"]);
}

#[test]
fn a_leftover_older_than_a_day_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.bin");
    let srv = Server::start(vec![
        resource("\"v1\"", Some(CUT)),
        resource("\"v1\"", None),
    ])
    .unwrap();
    let n = leave(&srv, &file);
    let info = file.with_file_name(".big.bin.retry-http-partial.info");
    let two_days = SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&info)
        .unwrap()
        .set_modified(two_days)
        .unwrap();
    let (out, _) = run_fast(&["-C", "-", "-o", s(&file)], &srv.url("/f"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(srv.requests()[n].header("range"), None);
    assert!(
        stderr(&out).contains("older than a day"),
        "{}",
        stderr(&out)
    );
    assert_eq!(names_in(dir.path()), ["big.bin"]);
}

#[test]
fn a_leftover_another_run_has_taken_is_not_shared() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.bin");
    let srv = Server::start(vec![
        resource("\"v1\"", Some(CUT)),
        Step::Hang,
        resource("\"v1\"", None),
    ])
    .unwrap();
    let n = leave(&srv, &file);
    // Run A takes the leftover and waits for an answer that does not come.
    let url = srv.url("/f");
    let a = client(&["-C", "-", "-o", s(&file), "--attempts", "1", &url])
        .spawn()
        .unwrap();
    srv.wait_for_requests(n + 1, Duration::from_secs(30));
    // Run B starts meanwhile: it downloads from the first byte.
    let (out, _) = run_fast(&["-C", "-", "-o", s(&file)], &url);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(std::fs::read(&file).unwrap() == body());
    let reqs = srv.requests();
    assert_eq!(reqs[n].header("range"), Some(&*format!("bytes={CUT}-")));
    assert_eq!(reqs[n + 1].header("range"), None, "the leftover was shared");
    // SAFETY: kill only sends a signal to the child this test spawned.
    assert_eq!(unsafe { libc::kill(a.id() as i32, libc::SIGTERM) }, 0);
    let a = a.wait_with_output().unwrap();
    assert_eq!(code(&a), 143, "{}", stderr(&a));
    assert_eq!(
        std::fs::read(leftover(&file)).unwrap(),
        body()[..CUT],
        "run A leaves what it took: {}",
        stderr(&a)
    );
}

#[test]
fn without_continue_at_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.bin");
    std::fs::write(&file, OLD).unwrap();
    let srv = Server::start(vec![resource("\"v1\"", Some(CUT))]).unwrap();
    let (out, _) = run_fast(&["-o", s(&file), "--attempts", "2"], &srv.url("/f"));
    assert_ne!(code(&out), 0);
    assert_eq!(std::fs::read(&file).unwrap(), OLD);
    assert_eq!(names_in(dir.path()), ["big.bin"], "{}", stderr(&out));
}
