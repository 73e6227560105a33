//! A store that failed is never silent: giving `--state` asks to hear about it, so its one
//! warning line is written under `-s` too, and `-w '%{state}'` and the JSON summary's
//! `state` say what became of the store (none, used, refused, unavailable).

use crate::common::*;
use serde_json::Value;

/// The lines of stderr that are warnings about the store, in text or JSON.
fn store_warnings(err: &str) -> Vec<String> {
    err.lines()
        .filter(|l| {
            let text = l.starts_with("retry-http: warning:");
            let json = serde_json::from_str::<Value>(l).is_ok_and(|v| v["type"] == "warning");
            (text || json) && (l.contains("cannot use") || l.contains("cannot record"))
        })
        .map(String::from)
        .collect()
}

/// The class: a store that cannot be used (a dead `redis://` port, a file that is not a
/// state file) x how the run logs (`-s`, the default, `--log-format json`, `-s` with JSON) x
/// `--state-on-error` (open, closed). Open: the request is sent (exit 0) and exactly one
/// warning line names the store, under `-s` too; closed: nothing is sent, exit 7, and the
/// final error line says why. Both: `%{state}` and the JSON summary say `unavailable`.
#[test]
fn a_store_that_cannot_be_used_is_reported_under_silent_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let foreign = dir.path().join("notes.txt");
    std::fs::write(&foreign, "buy milk\n").expect("written");
    let dead = format!("redis://127.0.0.1:{}", closed_port());
    let stores = [dead.as_str(), foreign.to_str().expect("utf-8")];
    let logs: [&[&str]; 4] = [
        &["-s"],
        &[],
        &["--log-format", "json"],
        &["-s", "--log-format", "json"],
    ];
    let mut runs = 0;
    for store in stores {
        for log in logs {
            for on_error in ["open", "closed"] {
                let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
                let url = s.url("/");
                let mut args = vec!["--state", store, "--state-on-error", on_error];
                args.extend_from_slice(log);
                args.extend(["-w", "[%{state}]", &url]);
                let (out, _) = run(&args);
                runs += 1;
                let err = stderr(&out);
                let what = format!("{store} {log:?} {on_error}");
                let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                if on_error == "open" {
                    assert_eq!(code(&out), 0, "{what}: {err}");
                    assert_eq!(stdout, "ok[unavailable]", "{what}: {err}");
                    assert_eq!(store_warnings(&err).len(), 1, "{what}: {err}");
                    assert_eq!(s.requests().len(), 1, "{what}: {err}");
                } else {
                    assert_eq!(code(&out), 7, "{what}: {err}");
                    assert_eq!(stdout, "[unavailable]", "{what}: {err}");
                    assert!(err.contains("--state-on-error is closed"), "{what}: {err}");
                    assert_eq!(s.requests().len(), 0, "{what}: {err}");
                }
                if log.contains(&"json") {
                    let summary = json_lines(&out, "summary");
                    assert_eq!(summary.len(), 1, "{what}: {err}");
                    assert_eq!(summary[0]["state"], "unavailable", "{what}: {err}");
                } else if log.contains(&"-s") {
                    // -s keeps the store's warning line (open) or the final error line
                    // (closed), and nothing else.
                    assert_eq!(err.lines().count(), 1, "{what}: {err}");
                }
            }
        }
    }
    assert_eq!(runs, 2 * 4 * 2);
}

/// The other values: `none` without `--state`, `used` with a store that answered, `refused`
/// when it refused the run (an open circuit), in `%{state}`, in `%{json}` and in the JSON
/// summary.
#[test]
fn the_state_names_what_became_of_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("state.json");
    let file = file.to_str().expect("utf-8");
    let ok = Server::start(vec![Step::status(200, "")]).expect("server");
    let down = Server::start(vec![Step::status(503, "")]).expect("server");
    let circuit = ["--breaker-threshold", "1", "--attempts", "1"];
    let cases: Vec<(Vec<&str>, String, &str)> = vec![
        (vec![], ok.url("/"), "none"),
        (vec!["--state", file], ok.url("/"), "used"),
        // The first run against the 503 opens the circuit; it was used.
        (
            [&["--state", file][..], &circuit[..]].concat(),
            down.url("/"),
            "used",
        ),
        // The second is refused by it.
        (
            [&["--state", file][..], &circuit[..]].concat(),
            down.url("/"),
            "refused",
        ),
    ];
    for (flags, url, expected) in cases {
        let mut args = flags.clone();
        args.extend([
            "--log-format",
            "json",
            "-w",
            "%{state} %{json}",
            url.as_str(),
        ]);
        let (out, _) = run(&args);
        let err = stderr(&out);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let (word, json) = stdout.split_once(' ').expect("two parts");
        assert_eq!(word, expected, "{flags:?}: {err}");
        let j: Value = serde_json::from_str(json).expect("%{json} is JSON");
        assert_eq!(j["state"], expected, "{flags:?}");
        let summary = json_lines(&out, "summary");
        assert_eq!(summary[0]["state"], expected, "{flags:?}: {err}");
    }
}
