//! Under `-s` the final error line is the only one shown: it names the last attempt's result
//! as that attempt's line does, detail and note included (why a timeout happened, through
//! which proxy a connection failed, which hop of a redirect chain failed, what a 409 to a
//! keyed request means), never the kind of failure alone ("connect timeout" where the line
//! knew the name's lookup never finished).

use crate::common::*;
use std::time::Duration;

/// The request, the result and the note of the last attempt line of `log`: `GET URL`,
/// `RESULT` and `NOTE` of "attempt 1/1 GET URL -> RESULT in 12ms (NOTE); giving up ...".
fn result_and_note(log: &str) -> (String, String, Option<String>) {
    let line = log
        .lines()
        .rfind(|l| l.starts_with("retry-http: attempt "))
        .unwrap_or_else(|| panic!("no attempt line: {log}"));
    let arrow = line.find(" -> ").expect("an arrow");
    let request = line[..arrow]
        .splitn(4, ' ')
        .nth(3)
        .unwrap_or("")
        .to_string();
    let rest = &line[arrow + 4..];
    // " in " followed by the attempt's duration ends the result.
    let end = rest
        .match_indices(" in ")
        .map(|(i, _)| i)
        .find(|&i| rest[i + 4..].starts_with(|c: char| c.is_ascii_digit()))
        .expect("a duration");
    let result = rest[..end].to_string();
    let after = &rest[end + 4..];
    let after = &after[after.find([' ', ';']).unwrap_or(after.len())..];
    let note = after.strip_prefix(" (").map(|n| {
        let close = n
            .find("); ")
            .unwrap_or_else(|| n.rfind(')').unwrap_or(n.len()));
        n[..close].to_string()
    });
    (request, result, note)
}

/// One way a run ends on a failure: the server's script and the flags.
struct Ending {
    name: &'static str,
    script: Vec<Step>,
    args: Vec<String>,
    /// A path on the server (`{closed}`: a closed port's URL).
    path: &'static str,
}

fn endings() -> Vec<Ending> {
    let closed = closed_port_url();
    let s = |v: &[&str]| v.iter().map(|a| a.replace("{closed}", &closed)).collect();
    vec![
        Ending {
            name: "attempt timeout",
            script: vec![Step::Hang],
            args: s(&["--timeout", "300ms"]),
            path: "/",
        },
        Ending {
            name: "stall",
            script: vec![Step::Stall {
                body: b"ab".to_vec(),
                declared: 10,
                pause: Duration::from_secs(5),
            }],
            args: s(&["--stall-timeout", "300ms"]),
            path: "/",
        },
        Ending {
            name: "body cut short",
            script: vec![Step::Truncate {
                declared: 10,
                body: b"abc".to_vec(),
            }],
            args: vec![],
            path: "/",
        },
        Ending {
            name: "reset",
            script: vec![Step::Reset],
            args: vec![],
            path: "/",
        },
        Ending {
            name: "a proxy that refuses",
            script: vec![Step::status(200, "not asked")],
            args: s(&["-x", "{closed}"]),
            path: "/",
        },
        Ending {
            name: "a redirect to a closed port",
            script: vec![Step::with_header(
                302,
                "Location",
                &format!("{closed}/gone"),
            )],
            args: s(&["-L"]),
            path: "/",
        },
        Ending {
            name: "a 409 to a keyed POST",
            script: vec![Step::status(409, "busy")],
            args: s(&["-d", "x", "--idempotency-key", "k-1"]),
            path: "/",
        },
    ]
}

#[test]
fn the_final_line_under_s_names_the_result_as_the_attempt_line_did() {
    let mut found = Vec::new();
    let mut checked = 0;
    for e in endings() {
        for attempts in ["1", "2"] {
            let run_once = |quiet: bool| {
                let server = Server::start(e.script.clone()).unwrap();
                let mut args = vec!["--attempts", attempts, "--base", "1ms", "--cap", "1ms"];
                if quiet {
                    args.push("-s");
                }
                args.extend(e.args.iter().map(String::as_str));
                let url = server.url(e.path);
                args.push(&url);
                let port = url
                    .rsplit(':')
                    .next()
                    .unwrap_or("")
                    .trim_end_matches(e.path);
                (
                    stderr(&run(&args).0).replace(port, "PORT"),
                    url.replace(port, "PORT"),
                )
            };
            let ((loud, url), (last, _)) = (run_once(false), run_once(true));
            let (request, result, note) = result_and_note(&loud);
            checked += 1;
            // The request that failed is named when it is not the run's own.
            let named = request.ends_with(&format!(" {url}")) || last.contains(&request);
            let holds = last.lines().count() == 1
                && last.contains(&result)
                && named
                && note.as_ref().is_none_or(|n| last.contains(n.as_str()));
            if !holds {
                found.push(format!(
                    "{} ({attempts} attempts): the line said {request:?} -> {result:?} ({note:?}); under -s: {last:?}",
                    e.name
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} of {checked}:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// A run the deadline stops before another attempt says why in terms a reader can check: the
/// time left and what an attempt took, the first shorter than the second.
#[test]
fn a_stop_before_the_deadline_says_the_time_left_and_what_an_attempt_took() {
    let s = Server::start(vec![Step::Hang]).unwrap();
    let url = s.url("/");
    let (out, _) = run(&[
        "-s",
        "--attempts",
        "5",
        "--timeout",
        "2s",
        "--deadline",
        "3s",
        &url,
    ]);
    let err = stderr(&out);
    assert_eq!(code(&out), 5, "{err}");
    let words = err
        .split("stopping: ")
        .nth(1)
        .and_then(|r| r.split_once(" left before the deadline; the longest attempt so far took "))
        .and_then(|(left, rest)| {
            let (took, tail) = rest.split_once(':')?;
            tail.starts_with(" another would end past the deadline")
                .then_some((left, took))
        });
    let Some((left, took)) = words else {
        panic!("the line does not say the rule: {err}")
    };
    let read = |d: &str| retry_http::cli::values::duration(d).expect(d);
    assert!(read(left) < read(took), "{left} left, {took} taken: {err}");
    assert!(read(took) >= std::time::Duration::from_secs(2), "{err}");
}
