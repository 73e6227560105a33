//! The request headers as sent: a header given with `-H` replaces the one `-u` or `-A`
//! would add.

use crate::common::*;

#[test]
fn a_header_given_with_h_beats_the_one_u_would_add() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&[
        "-u",
        "u:p",
        "-H",
        "Authorization: Bearer x",
        "-A",
        "a",
        "-H",
        "User-Agent: b",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0);
    let r = &s.requests()[0];
    let count = |n: &str| {
        r.headers
            .iter()
            .filter(|(h, _)| h.eq_ignore_ascii_case(n))
            .count()
    };
    assert_eq!(count("authorization"), 1);
    assert_eq!(r.header("authorization"), Some("Bearer x"));
    assert_eq!(count("user-agent"), 1);
    assert_eq!(r.header("user-agent"), Some("b"));
}
