//! What a run will write or connect to is checked before anything is sent: a path that
//! cannot work is a usage error (exit 2) with no request, not a local failure (exit 1)
//! after the server has acted on the request and the old file was replaced.

use crate::common::*;

#[test]
fn paths_that_cannot_work_are_refused_before_sending() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("f");
    std::fs::write(&file, "old").unwrap();
    let s = Server::start(vec![Step::with_header(200, "ETag", "\"v1\"")]).unwrap();
    let url = s.url("/");
    let keep = d.join("keep");
    std::fs::write(&keep, "OLD").unwrap();
    let p = |x: &std::path::Path| x.display().to_string();
    let long = p(&d.join("n".repeat(300)));
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--etag-save".into(),
                p(&d.join("none/e")),
                "-o".into(),
                p(&keep),
            ],
            "does not exist",
        ),
        (
            vec!["--etag-save".into(), p(d), "-o".into(), p(&keep)],
            "is a directory",
        ),
        (
            vec!["-d".into(), "x".into(), "-o".into(), long],
            "longer than 255",
        ),
        (vec!["-o".into(), p(&file.join("x"))], "is not a folder"),
        (vec!["-D".into(), p(&file.join("x"))], "is not a folder"),
        (
            vec!["-D".into(), p(&keep), "-o".into(), p(&keep)],
            "the same file",
        ),
        (vec!["--unix-socket".into(), p(&file)], "is not a socket"),
        (
            vec!["--unix-socket".into(), format!("/tmp/{}", "s".repeat(120))],
            "at most 107 bytes",
        ),
    ];
    for (mut args, says) in cases {
        args.push(url.clone());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, _) = run(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(s.requests().len(), 0, "nothing is sent");
    assert_eq!(std::fs::read(&keep).unwrap(), b"OLD");
    let left: Vec<_> = std::fs::read_dir(d).unwrap().flatten().collect();
    assert_eq!(left.len(), 2, "no temporary file is left: {left:?}");
}

#[test]
fn a_legal_long_name_is_written_though_its_temporary_file_must_be_shorter() {
    let dir = tempfile::tempdir().unwrap();
    let name = dir.path().join("n".repeat(250));
    let s = Server::start(vec![Step::status(200, "body")]).unwrap();
    let (out, _) = run(&["-o", name.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read(&name).unwrap(), b"body");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn files_that_would_clobber_each_other_or_a_device_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = |name: &str| d.join(name).display().to_string();
    std::fs::write(d.join("ok"), "UPLOAD").unwrap();
    let fifo = std::ffi::CString::new(p("fifo")).unwrap();
    // SAFETY: mkfifo reads the path we own.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let s = Server::start(vec![Step::with_header(200, "ETag", "\"v\"")]).unwrap();
    let url = s.url("/");
    let dot_x = format!("{}/./x", d.display());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--etag-save".into(), p("fifo")], "not a regular file"),
        (
            vec!["-o".into(), p("x"), "--etag-save".into(), p("x")],
            "the same file",
        ),
        (
            vec!["-o".into(), p("x"), "-D".into(), dot_x],
            "the same file",
        ),
        (
            vec!["-o".into(), format!("{}/", p("new"))],
            "names a folder",
        ),
        (
            vec!["-o".into(), format!("{}/.", p("ok"))],
            "names a folder",
        ),
        (vec!["-D".into(), format!("{}/", p("ok"))], "names a folder"),
        (
            vec!["--etag-save".into(), format!("{}/", p("ok"))],
            "names a folder",
        ),
        (
            vec!["-T".into(), p("ok"), "-o".into(), p("ok")],
            "the file the body is read from",
        ),
    ];
    for (mut args, says) in cases {
        args.push(url.clone());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, _) = run(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 0, "nothing is sent");
    assert_eq!(std::fs::read(d.join("ok")).unwrap(), b"UPLOAD");
    let fifo_kind = std::fs::symlink_metadata(d.join("fifo"))
        .unwrap()
        .file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&fifo_kind));
}

#[test]
fn an_empty_idempotency_key_after_a_real_one_is_refused() {
    let s = Server::start(vec![Step::Reset]).unwrap();
    for second in ["Idempotency-Key;", "IDEMPOTENCY-KEY: other"] {
        let (out, _) = run_fast(
            &["-H", "Idempotency-Key: k", "-H", second, "-d", "x"],
            &s.url("/"),
        );
        assert_eq!(code(&out), 2, "{second}: {}", stderr(&out));
        assert!(stderr(&out).contains("given twice"), "{}", stderr(&out));
    }
    assert_eq!(s.requests().len(), 0);
}
