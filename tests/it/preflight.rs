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
