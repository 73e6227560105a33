//! `--compressed`: asks for gzip and decodes it; without it no `Accept-Encoding` is sent, as
//! in curl. (How a gzip body is saved or retried is `trust.rs`'s.)

use crate::common::*;

#[test]
fn compressed_asks_for_gzip_and_decodes_it() {
    let packed = gzip(b"unpacked body");
    let reply = Step::Respond {
        status: 200,
        headers: vec![("Content-Encoding".into(), "gzip".into())],
        body: packed,
    };
    let s = Server::start(vec![reply]).unwrap();
    let (out, _) = run(&["--compressed", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"unpacked body");
    assert!(
        s.requests()[0]
            .header("accept-encoding")
            .is_some_and(|v| v.contains("gzip"))
    );
    let plain = Server::start(vec![Step::status(200, "x")]).unwrap();
    let (out, _) = run(&[&plain.url("/")]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        plain.requests()[0].header("accept-encoding"),
        None,
        "no Accept-Encoding unless asked, as curl"
    );
}
