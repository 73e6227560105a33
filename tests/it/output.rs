//! `-o`: written only when complete and successful; an existing file is never clobbered.

use crate::common::*;

#[test]
fn failed_run_leaves_existing_file_untouched_and_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.csv");
    std::fs::write(&path, "previous good data").unwrap();
    let s = Server::start(vec![Step::Truncate {
        declared: 100,
        body: b"partial".to_vec(),
    }])
    .unwrap();
    let p = path.to_str().unwrap();
    let url = s.url("/");
    let mut args = vec!["-o", p, "--attempts", "2", &url];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "previous good data"
    );
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1, "temporary files left behind");
}

#[test]
fn success_replaces_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    std::fs::write(&path, "old").unwrap();
    let s = Server::start(vec![
        Step::status(503, "error page"),
        Step::status(200, "new content"),
    ])
    .unwrap();
    let p = path.to_str().unwrap();
    let url = s.url("/");
    let mut args = vec!["-o", p, &url];
    args.extend(FAST);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new content");
    assert!(out.stdout.is_empty());
}

#[test]
fn error_status_writes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let s = Server::start(vec![Step::status(404, "not found page")]).unwrap();
    let (out, _) = run(&["-o", path.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(!path.exists());
}

#[test]
fn fail_with_body_writes_the_final_error_body() {
    let s = Server::start(vec![Step::status(404, "not found page")]).unwrap();
    let (out, _) = run(&["--fail-with-body", &s.url("/")]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(out.stdout, b"not found page");
}

#[test]
fn include_adds_the_status_line_and_headers() {
    let s = Server::start(vec![Step::status(200, "body")]).unwrap();
    let (out, _) = run(&["-i", &s.url("/")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\nbody"), "{text}");
}

#[test]
fn dev_null_works_like_any_file() {
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let (out, _) = run(&["-o", "/dev/null", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
