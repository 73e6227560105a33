//! The final response's head: `-I` (HEAD, the head on stdout, error responses too) and `-D
//! FILE`.

use crate::common::*;

#[test]
fn head_and_dump_header() {
    let s = Server::start(vec![Step::status(200, "")]).unwrap();
    let (out, _) = run(&["-I", &s.url("/")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(s.requests()[0].method, "HEAD");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("HTTP/1.1 200 OK\r\n"));

    let dir = tempfile::tempdir().unwrap();
    let headers = dir.path().join("h.txt");
    let s = Server::start(vec![Step::with_header(404, "X-Why", "gone")]).unwrap();
    let (out, _) = run(&["-D", headers.to_str().unwrap(), &s.url("/")]);
    assert_eq!(code(&out), 3);
    let text = std::fs::read_to_string(&headers).unwrap();
    assert!(
        text.starts_with("HTTP/1.1 404 Not Found\r\n") && text.contains("X-Why: gone\r\n"),
        "{text}"
    );
}

#[test]
fn head_shows_the_head_of_an_error_response_too() {
    let s = Server::start(vec![Step::with_header(404, "X-Why", "gone")]).unwrap();
    let (out, _) = run(&["-I", &s.url("/")]);
    assert_eq!(code(&out), 3);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("HTTP/1.1 404 Not Found\r\n") && text.contains("X-Why: gone\r\n"),
        "{text}"
    );
}

/// The head the server sends in the tests below: names in mixed case, a field repeated
/// around another, a reason phrase of its own, and `ending` as every line's end.
fn sent_head(ending: &str) -> Vec<u8> {
    [
        "HTTP/1.1 200 Fine",
        "Content-Length: 2",
        "Set-Cookie: a=1",
        "X-CUSTOM-thing:  v ",
        "Set-Cookie: b=2",
        "",
        "",
    ]
    .join(ending)
    .into_bytes()
}

/// What `-v` shows of [`sent_head`]: each line as sent, values without the spaces around
/// them, the cookies masked.
const SHOWN: [&str; 5] = [
    "< HTTP/1.1 200 Fine",
    "< Content-Length: 2",
    "< Set-Cookie: ***",
    "< X-CUSTOM-thing: v",
    "< Set-Cookie: ***",
];

/// The `-v` lines about response heads, in order.
fn shown_heads(out: &std::process::Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter_map(|l| l.strip_prefix("retry-http: "))
        .filter(|l| l.starts_with("< "))
        .map(str::to_string)
        .collect()
}

/// `-i`, `-I`, `-D FILE`, `-D -` and `-v` write the final head as the server sent it (the
/// case of its names, their order, a repeated field, the reason phrase, the line ends: curl
/// passes them through as received), whether it answered directly or after a redirect
/// followed with `-L` (whose head, as before, is neither written nor shown), with CRLF or bare LF line
/// ends: 5 outputs x 2 routes x 2 line ends, 20 runs.
#[test]
fn the_head_is_written_as_the_server_sent_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = 0;
    for ending in ["\r\n", "\n"] {
        let head = sent_head(ending);
        let mut answer = head.clone();
        answer.extend_from_slice(b"hi");
        for redirected in [false, true] {
            for mode in ["-i", "-I", "-D file", "-D -", "-v"] {
                let mut script = Vec::new();
                if redirected {
                    script.push(Step::Raw(
                        b"HTTP/1.1 302 Moved\r\nLOCATION: /there\r\nContent-Length: 0\r\n\r\n"
                            .to_vec(),
                    ));
                }
                script.push(Step::Raw(answer.clone()));
                let s = Server::start(script).unwrap();
                let file = dir.path().join(format!("h{runs}"));
                let url = s.url("/");
                let mut args = vec!["-sL", "--attempts", "1"];
                match mode {
                    "-D file" => args.extend(["-D", file.to_str().unwrap()]),
                    "-D -" => args.extend(["-D", "-"]),
                    other => args.push(other),
                }
                args.push(&url);
                let (out, _) = run(&args);
                let what = format!("{mode}, redirected: {redirected}, ending {ending:?}");
                assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
                let stdout = out.stdout.clone();
                match mode {
                    "-i" | "-D -" => assert_eq!(stdout, answer, "{what}"),
                    "-I" => assert_eq!(stdout, head, "{what}"),
                    "-D file" => {
                        assert_eq!(std::fs::read(&file).unwrap(), head, "{what}");
                        assert_eq!(stdout, b"hi", "{what}");
                    }
                    _ => {
                        // Only the final head, as before: -v does not show a redirect's.
                        assert_eq!(shown_heads(&out), SHOWN, "{what}");
                    }
                }
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 20);
}

/// Lookups by name stay case-insensitive: `-w '%header{...}'` and a readiness condition
/// find a field whatever case the server wrote it in, and `%{header_json}` names it in
/// lower case as curl does.
#[test]
fn lookups_ignore_the_case_the_head_was_sent_in() {
    let s = Server::start(vec![Step::Raw(
        sent_head("\r\n").into_iter().chain(*b"hi").collect(),
    )])
    .unwrap();
    let (out, _) = run(&[
        "-s",
        "-o",
        "/dev/null",
        "--until-header",
        "x-custom-THING: ^v$",
        "-w",
        "%header{x-custom-thing}|%header{SET-COOKIE}|%{header_json}",
        &s.url("/"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("v|a=1, b=2|{"), "{text}");
    assert!(text.contains("\"x-custom-thing\":[\"v\"]"), "{text}");
    assert!(text.contains("\"set-cookie\":[\"a=1\",\"b=2\"]"), "{text}");
}

/// curl's line works: `retry-http -sI URL | grep '^Content-Length'` finds the field.
#[test]
fn a_grep_for_a_capitalised_name_finds_it() {
    let s = Server::start(vec![Step::Raw(sent_head("\r\n"))]).unwrap();
    let bin = env!("CARGO_BIN_EXE_retry-http");
    let line = format!("'{bin}' -sI '{}' | grep '^Content-Length'", s.url("/"));
    let out = std::process::Command::new("sh")
        .args(["-c", &line])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"Content-Length: 2\r\n");
}

/// Through a proxy's CONNECT tunnel, `-i` writes the target's head, not the proxy's answer
/// to CONNECT (which the connection saw first).
#[test]
fn through_a_tunnel_the_head_is_the_targets() {
    let proxy = Server::start(vec![Step::Respond {
        status: 200,
        headers: vec![
            ("Set-Cookie".into(), "a=1".into()),
            ("X-CUSTOM-thing".into(), "v".into()),
            ("Set-Cookie".into(), "b=2".into()),
        ],
        body: b"hi".to_vec(),
    }])
    .unwrap();
    let (out, _) = run(&["-si", "-x", &proxy.url(""), "http://origin.example.test/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(proxy.requests()[0].method, "CONNECT");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\nSet-Cookie: a=1\r\n\
         X-CUSTOM-thing: v\r\nSet-Cookie: b=2\r\n\r\nhi"
    );
}
