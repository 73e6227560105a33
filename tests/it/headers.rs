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

/// A long head (a 60 KB URL, a 100 KB header, 300 headers) goes out whole: the small output
/// buffer of a plain GET is only used when the head surely fits in it.
#[test]
fn long_request_heads_are_sent_whole() {
    let path = format!("/{}", "p".repeat(60_000));
    let value = "v".repeat(100_000);
    let many: Vec<String> = (0..300)
        .map(|i| format!("X-H{i}: {}", "w".repeat(30)))
        .collect();
    let s = Server::start(vec![
        Step::status(200, "a"),
        Step::status(200, "b"),
        Step::status(200, "c"),
    ])
    .unwrap();
    let long_header = format!("X-Long: {value}");
    let url = s.url("/");
    let long_url = s.url(&path);
    let (out, _) = run(&[&long_url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (out, _) = run(&["-H", &long_header, &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut args: Vec<&str> = many.iter().flat_map(|h| ["-H", h.as_str()]).collect();
    args.push(&url);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = s.requests();
    assert_eq!(r[0].target, path);
    assert_eq!(r[1].header("x-long"), Some(value.as_str()));
    assert_eq!(r[2].header("x-h299").map(str::len), Some(30));
}
