//! Special files at every path the run opens, other than the state file and its lock:
//! every input path (`-w @`, `-K`, `--cacert`, `--cert`, `--key`, `-d @` and the other body
//! sources, `-T`, `-H @`, `--netrc-file`, `-b`, `--etag-compare`, `-z`) and every output path
//! (`-o`, `-D`, `--etag-save`), each given a FIFO that no one opens, a folder, a dangling
//! link, an endless device, a link to itself and a socket's file. Whatever the pair, the run ends within its deadline, never
//! panics, sends nothing when the command line is wrong or an input cannot be read, and
//! leaves nothing beside the paths.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// What is at the path an option names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A FIFO with no peer: opening it blocks until a writer (or reader) comes.
    Fifo,
    /// A folder.
    Folder,
    /// A symbolic link to a file in a folder that does not exist.
    Dangling,
    /// A link to `/dev/zero`: a character device that never ends.
    Endless,
    /// A symbolic link to itself: no file can ever be there.
    Loop,
    /// A Unix socket's file, with nothing listening.
    Socket,
}

const KINDS: [Kind; 6] = [
    Kind::Fifo,
    Kind::Folder,
    Kind::Dangling,
    Kind::Endless,
    Kind::Loop,
    Kind::Socket,
];

/// Whether the run reads the path or writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Input,
    Output,
    /// `-z`: only the file's time is read (curl does the same with a FIFO or a folder).
    TimeOnly,
}

/// One option that names a path: its role, and its flags for a path.
struct PathOption {
    name: &'static str,
    role: Role,
    args: fn(&str, &Path) -> Vec<String>,
}

/// Every path option, given `path` (and `cert`, a PEM certificate for `--key`).
fn options() -> Vec<PathOption> {
    let o = |name, role, args| PathOption { name, role, args };
    use Role::*;
    vec![
        o("-w @", Input, |p, _| vec!["-w".into(), format!("@{p}")]),
        o("-K", Input, |p, _| vec!["-K".into(), p.into()]),
        o("--cacert", Input, |p, _| vec!["--cacert".into(), p.into()]),
        o("--cert", Input, |p, _| vec!["--cert".into(), p.into()]),
        o("--key", Input, |p, cert| {
            let cert = cert.display().to_string();
            vec!["--cert".into(), cert, "--key".into(), p.into()]
        }),
        o("-d @", Input, |p, _| vec!["-d".into(), format!("@{p}")]),
        o("--data-binary @", Input, |p, _| {
            vec!["--data-binary".into(), format!("@{p}")]
        }),
        o("--data-urlencode a@", Input, |p, _| {
            vec!["--data-urlencode".into(), format!("a@{p}")]
        }),
        o("-G --data-urlencode a@", Input, |p, _| {
            vec!["-G".into(), "--data-urlencode".into(), format!("a@{p}")]
        }),
        o("-F f=@", Input, |p, _| vec!["-F".into(), format!("f=@{p}")]),
        o("-T", Input, |p, _| vec!["-T".into(), p.into()]),
        o("-H @", Input, |p, _| vec!["-H".into(), format!("@{p}")]),
        o("--netrc-file", Input, |p, _| {
            vec!["--netrc-file".into(), p.into()]
        }),
        o("-b", Input, |p, _| vec!["-b".into(), p.into()]),
        o("--etag-compare", Input, |p, _| {
            vec!["--etag-compare".into(), p.into()]
        }),
        o("-z", TimeOnly, |p, _| vec!["-z".into(), p.into()]),
        o("-o", Output, |p, _| vec!["-o".into(), p.into()]),
        o("-D", Output, |p, _| vec!["-D".into(), p.into()]),
        o("--etag-save", Output, |p, _| {
            vec!["--etag-save".into(), p.into()]
        }),
    ]
}

/// What a pair must end with: the exit codes allowed, and whether a request may be sent.
struct Expected {
    codes: &'static [i32],
    sends: bool,
}

fn expected(option: &PathOption, kind: Kind) -> Expected {
    let e = |codes, sends| Expected { codes, sends };
    match (option.role, kind) {
        // A -z file's time is read, whatever it is; a dangling one is warned about, and
        // one whose time cannot be read (a loop) is a usage error.
        (Role::TimeOnly, Kind::Loop) => e(&[2], false),
        (Role::TimeOnly, _) => e(&[0], true),
        // An input that blocks is cut by the deadline; one that cannot be read is a usage
        // error. An endless one is refused by its size limit, or (a body: no limit but
        // the deadline) cut by the deadline; nothing is sent either way.
        (Role::Input, Kind::Fifo) => e(&[5], false),
        (Role::Input, Kind::Folder | Kind::Dangling | Kind::Loop | Kind::Socket) => e(&[2], false),
        (Role::Input, Kind::Endless) => e(&[2, 5], false),
        // Nothing can be written there (a loop would be replaced, a socket not opened).
        (Role::Output, Kind::Folder | Kind::Dangling | Kind::Loop | Kind::Socket) => e(&[2], false),
        // --etag-save is replaced by rename: only a regular file (or none) will do.
        (Role::Output, Kind::Fifo | Kind::Endless) if option.name == "--etag-save" => {
            e(&[2], false)
        }
        // -o and -D write a FIFO once, at the end: with no reader, the deadline ends it.
        (Role::Output, Kind::Fifo) => e(&[5], true),
        // A device is written as it is (as /dev/null is).
        (Role::Output, Kind::Endless) => e(&[0], true),
    }
}

/// Makes `kind` at `path`.
fn make(kind: Kind, path: &Path) {
    match kind {
        Kind::Fifo => {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("a path");
            // SAFETY: a NUL-terminated path, a plain mode.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        }
        Kind::Folder => std::fs::create_dir(path).expect("a folder"),
        Kind::Dangling => {
            let nowhere = path.with_extension("missing").join("file");
            std::os::unix::fs::symlink(nowhere, path).expect("a link");
        }
        Kind::Endless => std::os::unix::fs::symlink("/dev/zero", path).expect("a link"),
        Kind::Loop => std::os::unix::fs::symlink(path, path).expect("a link"),
        Kind::Socket => drop(std::os::unix::net::UnixListener::bind(path).expect("a socket")),
    }
}

/// A PEM certificate (without its key) in `dir`, for `--cert` beside `--key`.
fn certificate(dir: &Path) -> PathBuf {
    let c = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("a cert");
    let path = dir.join("client.pem");
    std::fs::write(&path, c.cert.pem()).expect("write the certificate");
    path
}

/// Runs one pair; returns what went wrong, if anything.
fn check(option: &PathOption, kind: Kind) -> Option<String> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("special");
    make(kind, &path);
    let cert = certificate(dir.path());
    let before = names_in(dir.path());
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let mut args = (option.args)(path.to_str().expect("utf-8"), &cert);
    args.extend(["--deadline", "2s", "--attempts", "1"].map(String::from));
    args.push(s.url("/"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, took) = run(&args);
    let want = expected(option, kind);
    let err = stderr(&out);
    let what = format!("{} {kind:?}", option.name);
    let sent = s.requests().len();
    let problem = if out.status.code().is_none() || err.contains("panicked") {
        format!("died: {:?}", out.status)
    } else if !want.codes.contains(&code(&out)) {
        format!("exit {}, expected one of {:?}", code(&out), want.codes)
    } else if sent > 0 && !want.sends {
        format!("{sent} requests sent")
    } else if took > Duration::from_secs(12) {
        format!("took {took:?} with a deadline of 2s")
    } else if names_in(dir.path()) != before {
        format!("left {:?} (was {before:?})", names_in(dir.path()))
    } else if code(&out) == 5 && sent == 0 && !err.is_empty() && !err.contains("being read") {
        // (The watchdog gives its last line a few milliseconds to be written before it
        // ends the process: on a loaded machine the line may be lost, never the exit.)
        "the deadline's line does not say what was being read".into()
    } else if code(&out) == 2 && !err.contains(path.to_str().expect("utf-8")) {
        "the error does not name the path".into()
    } else {
        return None;
    };
    Some(format!("{what}: {problem}\n{err}"))
}

/// Every path option x every special kind: 19 options x 6 kinds, 114 runs (16 of them wait
/// for the 2 s deadline), a few at a time.
#[test]
fn special_files_at_every_path_are_bounded_and_refused_before_sending() {
    let pairs: Vec<(usize, Kind)> = (0..options().len())
        .flat_map(|i| KINDS.map(|k| (i, k)))
        .collect();
    assert_eq!(pairs.len(), 114);
    let mut failures = Vec::new();
    for chunk in pairs.chunks(8) {
        let runs: Vec<_> = chunk
            .iter()
            .map(|&(i, kind)| std::thread::spawn(move || check(&options()[i], kind)))
            .collect();
        failures.extend(runs.into_iter().filter_map(|r| r.join().expect("a run")));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The outputs that are devices keep working: `-o /dev/null` and `-D /dev/null`.
#[test]
fn dev_null_is_still_an_output() {
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    for flag in ["-o", "-D"] {
        let (out, _) = run(&[flag, "/dev/null", "--deadline", "5s", &s.url("/")]);
        assert_eq!(code(&out), 0, "{flag}: {}", stderr(&out));
    }
}

/// The standard streams by name, as curl's users write them, when they are pipes (as here,
/// where the test reads them): `/dev/stdout` and `/dev/stderr` lead to `/proc/self/fd/N`, a
/// pipe written in place; the head lands in that stream, and `-o` keeps the body apart.
#[test]
fn the_standard_streams_by_name_are_outputs_when_they_are_pipes() {
    let s = Server::start(vec![Step::Respond {
        status: 200,
        headers: vec![("X-Mark".into(), "here".into())],
        body: b"the body".to_vec(),
    }])
    .expect("server");
    for (flag, path) in [
        ("-D", "/dev/stderr"),
        ("-D", "/dev/stdout"),
        ("-o", "/dev/stdout"),
        ("-o", "/dev/stderr"),
    ] {
        let (out, _) = run(&[
            flag,
            path,
            "--deadline",
            "5s",
            "--max-time",
            "5",
            &s.url("/"),
        ]);
        let err = stderr(&out);
        assert_eq!(code(&out), 0, "{flag} {path}: {err}");
        let stream = if path.ends_with("stderr") {
            err.clone()
        } else {
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        if flag == "-D" {
            assert!(stream.contains("X-Mark: here"), "{flag} {path}: {stream}");
        } else {
            assert!(stream.contains("the body"), "{flag} {path}: {stream}");
        }
    }
}

/// A FIFO is read when its writer comes: the deadline bounds the wait, it does not refuse
/// a FIFO (nor a pipe, as `-d @<(cmd)` gives).
#[test]
fn a_fifo_whose_writer_comes_is_read() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let fifo = dir.path().join("fifo");
    make(Kind::Fifo, &fifo);
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            std::fs::write(&fifo, "job=1").expect("the FIFO is written");
        })
    };
    let at = format!("@{}", fifo.display());
    let (out, _): (Output, _) = run(&["-d", &at, "--deadline", "20s", &s.url("/")]);
    writer.join().expect("the writer");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests()[0].body, b"job=1");
}
