//! `RETRY_HTTP_*` variables set the policy's defaults; a flag beats its variable; a bad
//! variable is a usage error that names it and sends nothing.

use crate::common::*;

#[test]
fn environment_sets_policy_defaults_and_flags_win() {
    let s = Server::start(vec![Step::status(503, "")]).unwrap();
    let url = s.url("/");
    let out = command()
        .env("RETRY_HTTP_ATTEMPTS", "2")
        .env("RETRY_HTTP_BASE", "1ms")
        .env("RETRY_HTTP_CAP", "2ms")
        .arg(&url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(s.requests().len(), 2);
    let out = command()
        .env("RETRY_HTTP_ATTEMPTS", "2")
        .env("RETRY_HTTP_BASE", "1ms")
        .args(["--attempts", "3", "--cap", "2ms", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(s.requests().len(), 5, "the flag beats the variable");
    let out = command()
        .env("RETRY_HTTP_MAX_RETRY_AFTER", "forever")
        .arg(&url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RETRY_HTTP_MAX_RETRY_AFTER"), "{err}");
    assert_eq!(s.requests().len(), 5, "a bad variable sent a request");
}
