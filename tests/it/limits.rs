//! Every size limit on an input read from a file or stdin is checked while reading: an
//! endless source (`/dev/zero`, stdin that never ends) stops at the limit with a usage
//! error that names it, promptly, with nothing sent and no temporary file left. Before,
//! `-G --data-urlencode a@/dev/zero` read until `$TMPDIR` was full, and only then compared
//! the query with its 1 MiB.

use crate::common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Each bounded input, fed from `/dev/zero` (as a file, then as stdin where the flag takes
/// `-`), with the limit its message must name.
fn sources() -> Vec<(Vec<&'static str>, bool, &'static str)> {
    // (arguments before the URL, stdin is /dev/zero, the limit named)
    vec![
        (
            vec!["-G", "--data-urlencode", "a@/dev/zero"],
            false,
            "1 MiB",
        ),
        (vec!["-G", "--data-urlencode", "@/dev/zero"], false, "1 MiB"),
        (vec!["-G", "-d", "@/dev/zero"], false, "1 MiB"),
        (vec!["-G", "--data-binary", "@/dev/zero"], false, "1 MiB"),
        (vec!["-G", "-d", "@-"], true, "1 MiB"),
        (vec!["-G", "--data-urlencode", "a@-"], true, "1 MiB"),
        (
            vec!["-G", "-d", "x=1", "--data-urlencode", "b@/dev/zero"],
            false,
            "1 MiB",
        ),
        (vec!["-K", "/dev/zero"], false, "1 MiB"),
        (vec!["-H", "@/dev/zero"], false, "1 MiB"),
        (vec!["-H", "@-"], true, "1 MiB"),
        (vec!["-w", "@/dev/zero"], false, "1 MiB"),
        (vec!["-w", "@-"], true, "1 MiB"),
        (vec!["--cacert", "/dev/zero"], false, "16 MiB"),
        (vec!["-b", "/dev/zero"], false, "4 MiB"),
        (vec!["--netrc-file", "/dev/zero"], false, "1 MiB"),
        (vec!["--etag-compare", "/dev/zero"], false, "8 KiB"),
        (
            vec!["--cert", "/dev/zero", "--key", "/dev/zero"],
            false,
            "1 MiB",
        ),
    ]
}

#[test]
fn an_endless_input_stops_at_its_limit_while_it_is_read() {
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let mut ran = 0;
    for (args, stdin_zero, limit) in sources() {
        let tmp = tempfile::tempdir().unwrap();
        let mut cmd = std_command();
        cmd.args(&args)
            .args(["--deadline", "8s", &s.url("/")])
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if stdin_zero {
            cmd.stdin(std::fs::File::open("/dev/zero").unwrap());
        } else {
            cmd.stdin(Stdio::null());
        }
        let t = Instant::now();
        let out = cmd.output().unwrap();
        let took = t.elapsed();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        // Reading 16 MiB and stopping takes milliseconds; reading on would take minutes.
        assert!(took < Duration::from_secs(7), "{args:?}: {took:?}");
        assert!(
            err.contains(limit),
            "{args:?} names its limit {limit}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert!(left.is_empty(), "{args:?} left {left:?} in $TMPDIR");
        ran += 1;
    }
    assert_eq!(s.requests().len(), 0, "nothing is sent");
    assert_eq!(ran, 17);
}
