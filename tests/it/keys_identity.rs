//! A job's identity is what the user asked for, never bytes the tool made up: with
//! `--idempotency-key auto` and `--state`, a re-run of the same command line with the same
//! inputs is the same job (it sends the key kept for it), and sends the same bytes, over
//! every way a body is given (`-d` inline, from a file and from stdin, `--data-binary`,
//! `--data-urlencode`, `-F` with fields, files, types and filenames, from stdin and large
//! enough to be spooled, `-T` from a file and from stdin, `--json`); a changed input is
//! another job, with another key. A `-F` body stays valid multipart: its boundary, made
//! from the body, opens every part and closes the body, and is found nowhere else.

use crate::common::*;
use crate::state_redis::Backend;
use std::path::Path;

/// One way of giving a body: its flags for the input's two versions (`changed` false:
/// the original; true: one input changed), with the files it reads written by `files`, and
/// what it reads from stdin.
struct Kind {
    name: &'static str,
    args: fn(&Path, bool) -> Vec<String>,
    files: fn(&Path, bool),
    stdin: fn(bool) -> Option<Vec<u8>>,
    /// How many parts a `-F` body has (0: not multipart).
    parts: usize,
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|a| a.to_string()).collect()
}

/// The text files every kind may read: `up.txt` (which `changed` alters) and `data.bin`.
fn texts(dir: &Path, changed: bool) {
    let up = if changed {
        "hello\r\nworld!\n"
    } else {
        "hello\r\nworld\n"
    };
    std::fs::write(dir.join("up.txt"), up).unwrap();
    std::fs::write(dir.join("data.bin"), b"\x00\x01bin").unwrap();
}

/// A file of 1.5 MB (a body spooled to a temporary file), its last byte `changed`.
fn large(dir: &Path, changed: bool) {
    let mut data: Vec<u8> = (0..1_500_000u32).map(|i| (i % 251) as u8).collect();
    if changed {
        data[1_499_999] ^= 1;
    }
    std::fs::write(dir.join("big.bin"), data).unwrap();
}

fn no_stdin(_: bool) -> Option<Vec<u8>> {
    None
}

fn some_stdin(changed: bool) -> Option<Vec<u8>> {
    Some(
        if changed {
            b"from stdin 2\n"
        } else {
            b"from stdin 1\n"
        }
        .to_vec(),
    )
}

fn kinds() -> Vec<Kind> {
    vec![
        Kind {
            name: "-d inline",
            args: |_, c| strings(&["-d", if c { "a=2" } else { "a=1" }, "-d", "b=x"]),
            files: texts,
            stdin: no_stdin,
            parts: 0,
        },
        Kind {
            name: "-d @file",
            args: |d, _| strings(&["-d", &format!("@{}", p(d, "up.txt"))]),
            files: texts,
            stdin: no_stdin,
            parts: 0,
        },
        Kind {
            name: "-d @-",
            args: |_, _| strings(&["-d", "@-"]),
            files: texts,
            stdin: some_stdin,
            parts: 0,
        },
        Kind {
            name: "--data-binary @file",
            args: |d, _| strings(&["--data-binary", &format!("@{}", p(d, "up.txt"))]),
            files: texts,
            stdin: no_stdin,
            parts: 0,
        },
        Kind {
            name: "--data-binary @-",
            args: |_, _| strings(&["--data-binary", "@-"]),
            files: texts,
            stdin: some_stdin,
            parts: 0,
        },
        Kind {
            name: "--data-urlencode",
            args: |d, _| {
                let file = format!("q@{}", p(d, "up.txt"));
                strings(&["--data-urlencode", &file, "--data-urlencode", "r=a b&c"])
            },
            files: texts,
            stdin: no_stdin,
            parts: 0,
        },
        Kind {
            name: "--data-urlencode @-",
            args: |_, _| strings(&["--data-urlencode", "q@-"]),
            files: texts,
            stdin: some_stdin,
            parts: 0,
        },
        Kind {
            name: "-F fields and files",
            args: |d, _| form(d, "text/x-foo"),
            files: texts,
            stdin: no_stdin,
            parts: 5,
        },
        Kind {
            name: "-F with a type changed",
            args: |d, c| form(d, if c { "text/x-bar" } else { "text/x-foo" }),
            files: |d, _| texts(d, false),
            stdin: no_stdin,
            parts: 5,
        },
        Kind {
            name: "-F @- and a field",
            args: |_, _| strings(&["-F", "a=1", "-F", "s=@-;type=text/plain"]),
            files: texts,
            stdin: some_stdin,
            parts: 2,
        },
        Kind {
            name: "-F a large file",
            args: |d, _| strings(&["-F", "n=1", "-F", &format!("big=@{}", p(d, "big.bin"))]),
            files: large,
            stdin: no_stdin,
            parts: 2,
        },
        Kind {
            name: "-T file",
            args: |d, _| strings(&["-T", &p(d, "up.txt")]),
            files: texts,
            stdin: no_stdin,
            parts: 0,
        },
        Kind {
            name: "-T -",
            args: |_, _| strings(&["-T", "-"]),
            files: texts,
            stdin: some_stdin,
            parts: 0,
        },
        Kind {
            name: "--json",
            args: |_, c| strings(&["--json", if c { r#"{"a":2}"# } else { r#"{"a":1}"# }]),
            files: texts,
            stdin: no_stdin,
            parts: 0,
        },
        Kind {
            name: "--json @file",
            args: |d, _| strings(&["--json", &format!("@{}", p(d, "up.txt"))]),
            files: texts,
            stdin: no_stdin,
            parts: 0,
        },
    ]
}

/// `-F` with a text field, a file upload (its name sent), a file's content as a value
/// with `type`, an upload under another filename, and a quoted value with a type.
fn form(d: &Path, ty: &str) -> Vec<String> {
    let up = p(d, "up.txt");
    strings(&[
        "-F",
        "a=1",
        "-F",
        &format!("f=@{up}"),
        "-F",
        &format!("g=<{up};type={ty}"),
        "-F",
        &format!("h=@{};filename=other.dat", p(d, "data.bin")),
        "-F",
        "k=\"v;w\";type=text/html",
    ])
}

/// What one run sent: its Idempotency-Key, Content-Type and body.
struct Sent {
    key: String,
    content_type: String,
    body: Vec<u8>,
}

/// One run of `kind` (the input `changed` or not) to `url` with the job's key kept in
/// `state`: a single attempt answered 503, so the job's outcome stays unknown.
fn run_once(kind: &Kind, dir: &Path, changed: bool, state: &str, s: &Server) -> Sent {
    (kind.files)(dir, changed);
    let mut args = strings(&[
        "--state",
        state,
        "--idempotency-key",
        "auto",
        "--attempts",
        "1",
    ]);
    args.extend((kind.args)(dir, changed));
    args.push(s.url("/jobs"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let before = s.requests().len();
    let (out, _) = run_with_stdin(&args, (kind.stdin)(changed).as_deref());
    assert_eq!(code(&out), 4, "{}: {}", kind.name, stderr(&out));
    let reqs = s.requests();
    assert_eq!(reqs.len(), before + 1, "{}", kind.name);
    let r = reqs.last().unwrap();
    Sent {
        key: r.header("idempotency-key").unwrap_or_default().to_string(),
        content_type: r.header("content-type").unwrap_or_default().to_string(),
        body: r.body.clone(),
    }
}

/// A multipart/form-data body as RFC 2046 and RFC 7578 make it: the Content-Type names a
/// boundary (here 24 dashes and 32 hex digits), which opens each of the `parts` parts,
/// closes the body, and is found nowhere else; each part has a Content-Disposition.
fn assert_valid_multipart(sent: &Sent, parts: usize, what: &str) {
    let boundary = sent
        .content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("{what}: {}", sent.content_type));
    assert_eq!(boundary.len(), 56, "{what}: {boundary}");
    assert!(boundary.starts_with(&"-".repeat(24)), "{what}: {boundary}");
    assert!(
        boundary[24..].bytes().all(|b| b.is_ascii_hexdigit()),
        "{what}: {boundary}"
    );
    let body = &sent.body;
    let delimiter = format!("--{boundary}");
    let found = body
        .windows(delimiter.len())
        .filter(|w| *w == delimiter.as_bytes())
        .count();
    assert_eq!(
        found,
        parts + 1,
        "{what}: one delimiter a part, and the close"
    );
    assert!(
        body.starts_with(format!("{delimiter}\r\n").as_bytes()),
        "{what}"
    );
    assert!(
        body.ends_with(format!("\r\n{delimiter}--\r\n").as_bytes()),
        "{what}"
    );
    let opening = format!("\r\n{delimiter}\r\nContent-Disposition: form-data; name=\"");
    let opened = body
        .windows(opening.len())
        .filter(|w| *w == opening.as_bytes())
        .count();
    assert_eq!(
        opened,
        parts - 1,
        "{what}: each later part opens after a CRLF"
    );
}

/// Over every way a body is given: two runs of the same command line with the same inputs
/// send the same key and the same bytes; a changed input sends another key (another job);
/// the original again sends the first key (its job is still pending). 15 kinds x 4 runs.
#[test]
fn the_same_command_line_is_the_same_job_whatever_the_body() {
    let mut checked = 0;
    for kind in kinds() {
        let dir = tempfile::tempdir().unwrap();
        let state = Backend::file();
        let s = Server::start(vec![Step::status(503, "busy")]).unwrap();
        let first = run_once(&kind, dir.path(), false, &state.state(), &s);
        let again = run_once(&kind, dir.path(), false, &state.state(), &s);
        let changed = run_once(&kind, dir.path(), true, &state.state(), &s);
        let back = run_once(&kind, dir.path(), false, &state.state(), &s);
        let name = kind.name;
        assert_eq!(first.key.len(), 36, "{name}: a UUID");
        assert_eq!(again.key, first.key, "{name}: a re-run is the same job");
        assert_eq!(again.body, first.body, "{name}: the same bytes");
        assert_eq!(again.content_type, first.content_type, "{name}");
        assert_ne!(changed.body, first.body, "{name}: the input changed");
        assert_ne!(
            changed.key, first.key,
            "{name}: a changed input is another job"
        );
        assert_eq!(
            back.key, first.key,
            "{name}: the first job is still pending"
        );
        if kind.parts > 0 {
            for sent in [&first, &changed] {
                assert_valid_multipart(sent, kind.parts, name);
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 15);
}

/// `--explain` reads a `-F` body as the run does, so the job it names is the run's: after
/// a run whose outcome is unknown, it shows the key kept for that job.
#[test]
fn explain_knows_a_multipart_job_s_key() {
    let dir = tempfile::tempdir().unwrap();
    let state = Backend::file();
    let s = Server::start(vec![Step::status(503, "busy")]).unwrap();
    let kind = &kinds()[7];
    let first = run_once(kind, dir.path(), false, &state.state(), &s);
    let mut args = strings(&[
        "--explain",
        "--state",
        &state.state(),
        "--idempotency-key",
        "auto",
    ]);
    args.extend((kind.args)(dir.path(), false));
    args.push(s.url("/jobs"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, _) = run(&args);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        shown.contains(&format!(
            "Idempotency-Key of this job: {} pending, made ",
            first.key
        )),
        "{shown}"
    );
}
