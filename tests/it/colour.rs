//! Colour: on stderr only, never in the body; `--color always|never|auto`, `NO_COLOR` and
//! `CLICOLOR_FORCE`.

use crate::common::*;

#[test]
fn colour_on_stderr_only_and_as_asked() {
    let s = Server::start(vec![Step::status(200, "plain body")]).unwrap();
    let url = s.url("/");
    let (out, _) = run(&["--color", "always", &url]);
    assert!(
        stderr(&out).contains("\x1b["),
        "no colour with --color always"
    );
    assert_eq!(out.stdout, b"plain body", "the body is never coloured");
    let (out, _) = run(&["--color", "never", &url]);
    assert!(!stderr(&out).contains("\x1b["));
    let (out, _) = run(&[&url]);
    assert!(!stderr(&out).contains("\x1b["), "auto: no colour on a pipe");
    let forced = command()
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&forced.stderr).contains("\x1b["),
        "CLICOLOR_FORCE ignored"
    );
}
