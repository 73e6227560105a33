//! The command line of several URLs: a URL list that cannot be run as given is a usage
//! error (exit 2, one line, nothing sent) that names the place of what is wrong and masks
//! secrets; the URL order of positionals, `--url`, `--url @FILE` and `-K`'s `url` lines;
//! a URL list that never closes is bounded by the deadline; a long list is read quickly.

use crate::common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs `args` and asserts a usage error: exit 2, one `retry-http: error:` line holding
/// `needle`, no secret of the URLs below, and no request at the server `s`.
fn assert_refused(s: &Server, args: &[&str], needle: &str) -> String {
    let (out, _) = run(args);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line expected: {err}");
    assert!(err.starts_with("retry-http: error: "), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    for secret in ["pw9secret", "tok7secret"] {
        assert!(!err.contains(secret), "{args:?}: a secret shown: {err}");
    }
    assert!(s.requests().is_empty(), "{args:?}: a request was sent");
    err
}

#[test]
fn command_lines_of_several_urls_that_cannot_run_send_nothing() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let (a, b, dir_url) = (s.url("/a.txt"), s.url("/b.txt"), s.url("/dir/"));
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let f = f.to_str().unwrap();
    let upload = dir.path().join("up.txt");
    std::fs::write(&upload, "x").unwrap();
    let upload = upload.to_str().unwrap();
    let bad = "http://u:pw9secret@exa mple/?access_token=tok7secret";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![&a, &b, bad, &a], "URL 3 of 4: invalid URL"),
        (
            vec![&a, "ftp://h/x", &b],
            "URL 2 of 3: unsupported URL scheme",
        ),
        (
            vec!["-o", f, "-o", "g", "-o", "h", &a, &b],
            "3 outputs (-o, -O) are given for 2 URLs",
        ),
        (
            vec!["-o", f, "-o", f, &a, &b],
            "URL 1 and URL 2 of 2 both write",
        ),
        (vec!["-O", "-O", &a, &dir_url], "URL 2 of 2: -O"),
        (vec!["-T", upload, &a, &b], "-T uploads one file"),
        (
            vec!["--etag-save", f, &a, &b],
            "--etag-save keeps the ETag of one URL",
        ),
        (vec!["-D", f, &a, &b], "-D FILE keeps the head of one URL"),
        (
            vec!["-C", "-", "-o", f, &a, &b],
            "URL 2 of 2 goes to stdout",
        ),
        (vec!["--rate", "0/s", &a, &b], "invalid rate"),
        (vec!["--rate", "2/x", &a, &b], "N/UNIT"),
        (vec!["--rate", "1001/s", &a, &b], "at most 1000/s"),
        (vec!["-Z", "--parallel-max", "0", &a, &b], "--parallel-max"),
        (
            vec!["-Z", "--parallel-max", "1001", &a, &b],
            "--parallel-max",
        ),
        (
            vec!["-Z", "--parallel-max-host", "0", &a, &b],
            "--parallel-max-host",
        ),
        (vec!["-:", &a, &b], "run retry-http once per set of options"),
        (
            vec!["-X", "PUT", "POST", &a, &b],
            "the method is given twice",
        ),
    ];
    for (args, needle) in cases {
        assert_refused(&s, &args, needle);
    }
}

/// URLs are taken in command-line order, positionals, `--url`, `--url @FILE` and `-K`'s
/// `url` lines mixed: the place an error names shows it.
#[test]
fn urls_keep_their_command_line_order() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let a = s.url("/a");
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    let text = format!("# the list\n{a}\n\n   {a}  \r\n# {a}\nftp://h/x\n");
    std::fs::write(&list, text).unwrap();
    let at = format!("@{}", list.display());
    // a, a (list line 2), a (line 4), ftp (line 6), then a.
    assert_refused(
        &s,
        &[&a, "--url", &at, &a],
        "URL 4 of 5: unsupported URL scheme",
    );
    let cfg = dir.path().join("cfg");
    std::fs::write(&cfg, "url = \"ftp://h/y\"\n").unwrap();
    let cfg = cfg.to_str().unwrap();
    assert_refused(
        &s,
        &[&a, "-K", cfg, &a],
        "URL 2 of 3: unsupported URL scheme",
    );
    assert_refused(
        &s,
        &[&a, "--url", &a, "-K", cfg],
        "URL 3 of 3: unsupported URL scheme",
    );
    // A METHOD comes before every URL; after one, a capital word is a URL.
    assert_refused(
        &s,
        &["POST", &a, "-K", cfg],
        "URL 2 of 2: unsupported URL scheme",
    );
    assert_refused(
        &s,
        &["--url", "ftp://h/", "GET", &a],
        "URL 1 of 3: unsupported URL scheme",
    );
}

#[test]
fn url_lists_that_hold_nothing_or_fight_for_stdin_are_refused() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "# nothing\n\n  \n").unwrap();
    let at = format!("@{}", empty.display());
    assert_refused(&s, &["--url", &at], "holds no URL");
    let (out, _) = run_with_stdin(&["--url", "@-", "-d", "@-"], Some(b"http://h/\n"));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("both want stdin"), "{}", stderr(&out));
    let missing = format!("@{}", dir.path().join("none").display());
    assert_refused(&s, &["--url", &missing], "cannot read --url @");
}

/// A URL list from a pipe that never closes ends with the deadline (exit 5), nothing
/// sent.
#[test]
fn a_url_list_that_never_closes_cannot_outlive_the_deadline() {
    let s = Server::start(vec![Step::status(200, "x")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let at = format!("@{}", fifo.display());
    let (out, took) = run(&["--deadline", "1s", "--url", &at]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("was still being read"),
        "{}",
        stderr(&out)
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    let mut child = std_command()
        .args(["--deadline", "1s", "--url", "@-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _stdin_kept_open = child.stdin.take();
    let t = Instant::now();
    assert_eq!(child.wait().unwrap().code(), Some(5));
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(s.requests().is_empty());
}

/// A list of 100,000 URLs is read and every URL checked quickly: the last one is bad, and
/// the error names it.
#[test]
fn a_long_url_list_is_checked_quickly() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    let mut text = String::with_capacity(4 << 20);
    for i in 0..100_000 {
        text.push_str(&format!("{}\n", s.url(&format!("/file/{i}.json?page={i}"))));
    }
    text.push_str("http://exa mple/\n");
    std::fs::write(&list, text).unwrap();
    let at = format!("@{}", list.display());
    let t = Instant::now();
    let err = assert_refused(&s, &["--url", &at], "URL 100001 of 100001: invalid URL");
    let took = t.elapsed();
    assert!(took < Duration::from_secs(30), "{took:?}: {err}");
}

/// `n` URLs of the server `s`, each with a password and four token parameters of 54
/// characters, one a line; the URL at `bad_at` (from 0) is
/// `http://u:pw9secret@exa mple/?access_token=tok7secret`, which does not parse.
fn list_of_secrets(s: &Server, n: usize, bad_at: Option<usize>) -> String {
    let bad = "http://u:pw9secret@exa mple/?access_token=tok7secret";
    let mut text = String::with_capacity(32 << 20);
    for i in 0..n {
        if Some(i) == bad_at {
            text.push_str(bad);
        } else {
            let v = |k: &str| format!("{k}{i:07}").repeat(6);
            let (pw, tk, ak, at, ps) = (v("pw"), v("tk"), v("ak"), v("at"), v("ps"));
            let q = format!("token={tk}&api_key={ak}&access_token={at}&password={ps}");
            text.push_str(
                &s.url(&format!("/{i}?{q}"))
                    .replace("://", &format!("://u:{pw}@")),
            );
        }
        text.push('\n');
    }
    text
}

/// The deadline is kept while a long list is checked (parsed, its secrets marked), which
/// takes seconds for 60,000 URLs with secrets: the run ends by its deadline with exit 5
/// and one summary line saying nothing was sent, whether the list is read from a file or
/// from stdin, whatever the log's format. It ended seconds past it (the watchdog started
/// once the list was checked, its summary then masked against every secret), with no line.
#[test]
fn a_long_list_being_checked_cannot_outlive_the_deadline() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = list_of_secrets(&s, 60_000, None);
    let path = dir.path().join("urls.txt");
    std::fs::write(&path, &text).unwrap();
    let at = format!("@{}", path.display());
    for (from_stdin, json) in [(false, false), (true, false), (false, true)] {
        let mut args = vec!["--deadline", "2s", "-o", "/dev/null"];
        if json {
            args.extend(["--log-format", "json"]);
        }
        let what = format!("stdin {from_stdin}, json {json}");
        let (out, took) = match from_stdin {
            true => run_with_stdin(
                &[&args[..], &["--url", "@-"]].concat(),
                Some(text.as_bytes()),
            ),
            false => run(&[&args[..], &["--url", &at]].concat()),
        };
        let err = stderr(&out);
        assert_eq!(code(&out), 5, "{what}: {err}");
        assert!(
            took < Duration::from_secs(5),
            "{what}: ended after {took:?}: {err}"
        );
        assert_eq!(
            err.lines().count(),
            1,
            "{what}: one summary expected: {err:?}"
        );
        assert!(err.contains("nothing sent"), "{what}: {err}");
        assert!(s.requests().is_empty(), "{what}: a request was sent");
    }
}

/// A long list whose every URL holds secrets (a password and four token parameters) still
/// gets its one line for a bad URL, first or last, read from a file or from stdin: masking
/// the line against some 300,000 marked secrets first makes their matcher, which took
/// longer than the 2 s a usage error's line is given, and the run ended with exit 2 and
/// nothing on stderr.
#[test]
fn a_bad_url_in_a_long_list_of_secrets_is_still_told() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = 60_000;
    for (bad_at, from_stdin) in [(0, false), (n - 1, false), (n - 1, true)] {
        let text = list_of_secrets(&s, n, Some(bad_at));
        let needle = format!("URL {} of {n}: invalid URL", bad_at + 1);
        let out = if from_stdin {
            run_with_stdin(&["--url", "@-"], Some(text.as_bytes())).0
        } else {
            let path = dir.path().join("urls.txt");
            std::fs::write(&path, &text).unwrap();
            run(&["--url", &format!("@{}", path.display())]).0
        };
        let err = stderr(&out);
        let what = format!("bad URL {} of {n}, stdin {from_stdin}", bad_at + 1);
        assert_eq!(code(&out), 2, "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: one line expected: {err:?}");
        assert!(err.contains(&needle), "{what}: {err:?} lacks {needle:?}");
        for secret in ["pw9secret", "tok7secret", "0000001"] {
            assert!(!err.contains(secret), "{what}: a secret shown: {err}");
        }
        assert!(s.requests().is_empty(), "{what}: a request was sent");
    }
}

/// `--explain` lists the transfers in URL order with their outputs: `-o` and `-O` paired in
/// order wherever they stand, `--output-dir` applied, the rest to stdout; nothing is sent.
#[test]
fn explain_lists_the_transfers_with_their_outputs() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let (a, b, c) = (s.url("/a.txt"), s.url("/b.txt"), s.url("/c.txt"));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let cfg = dir.path().join("cfg");
    std::fs::write(&cfg, format!("url = \"{c}\"\n")).unwrap();
    let cfg = cfg.to_str().unwrap();
    let (out, _) = run(&[
        "--explain",
        "--output-dir",
        d,
        "GET",
        "-o",
        "x.json",
        &a,
        "-K",
        cfg,
        "-O",
        "--url",
        &b,
        "-Z",
        "--parallel-max",
        "7",
        "--rate",
        "5/15s",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with(&format!("policy for GET {a}")), "{text}");
    assert!(
        text.contains(
            "transfers     3, at most 7 at once, 6 to one origin (-Z); at most 5 started per 15s"
        ),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(" -> ")).collect();
    assert_eq!(
        lines,
        [
            format!("        1  {a} -> {d}/x.json"),
            format!("        2  {c} -> {d}/c.txt"),
            format!("        3  {b} -> stdout"),
        ],
        "{text}"
    );
    // One URL is no batch: nothing listed.
    let (out, _) = run(&["--explain", &a]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("transfers "));
    assert!(s.requests().is_empty());
}

/// Each `--url @FILE` list stands where it is given among the other URLs (positionals,
/// `--url`, another list, `-K`'s `url = @FILE`), its URLs in the file's order, and the
/// `-o` flags pair with the URLs so ordered: for every order of the four sources, with and
/// without a METHOD first, `--explain` lists the transfers in that order with the outputs
/// in order; nothing is sent.
#[test]
fn url_lists_stand_in_their_place_among_the_urls() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let list = |name: &str, urls: &[String]| {
        let path = dir.path().join(name);
        let text: String = urls
            .iter()
            .map(|u| format!("# a comment\n  {u}\n\n"))
            .collect();
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let one: Vec<String> = (0..2).map(|i| s.url(&format!("/one/{i}"))).collect();
    let two: Vec<String> = (0..3).map(|i| s.url(&format!("/two/{i}"))).collect();
    let (one_at, two_at) = (format!("@{}", list("one", &one)), list("two", &two));
    let cfg = dir.path().join("cfg");
    std::fs::write(&cfg, format!("url = \"@{two_at}\"\n")).unwrap();
    let cfg = cfg.to_str().unwrap().to_string();
    let (p, f) = (s.url("/positional"), s.url("/flag"));
    let sources: [(Vec<&str>, Vec<String>); 4] = [
        (vec![&p], vec![p.clone()]),
        (vec!["--url", &f], vec![f.clone()]),
        (vec!["--url", &one_at], one.clone()),
        (vec!["-K", &cfg], two.clone()),
    ];
    let orders = [
        [0, 1, 2, 3],
        [2, 0, 3, 1],
        [3, 2, 1, 0],
        [1, 3, 0, 2],
        [2, 3, 0, 1],
    ];
    for order in orders {
        for method in [false, true] {
            let mut args = vec!["--explain", "-o", "o1", "-o", "o2", "-o", "o3"];
            if method {
                args.push("GET");
            }
            let mut want = Vec::new();
            for &k in &order {
                args.extend(sources[k].0.iter().copied());
                want.extend(sources[k].1.iter().cloned());
            }
            let (out, _) = run(&args);
            assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
            let text = String::from_utf8_lossy(&out.stdout);
            let got: Vec<&str> = text.lines().filter(|l| l.contains(" -> ")).collect();
            let want: Vec<String> = want
                .iter()
                .enumerate()
                .map(|(i, u)| {
                    let to = ["o1", "o2", "o3"].get(i).copied().unwrap_or("stdout");
                    format!("    {:>5}  {u} -> {to}", i + 1)
                })
                .collect();
            assert_eq!(got, want, "{args:?}");
        }
    }
    assert!(s.requests().is_empty());
}

/// A URL list or `-K` file saved with a byte-order mark is read as if it had none; a URL
/// holding a control character (NUL, a tab, DEL) or a byte-order mark elsewhere is a usage
/// error naming it, from every place a URL is given, and nothing is sent.
#[test]
fn byte_order_marks_are_dropped_and_control_characters_refused() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list");
    std::fs::write(&list, format!("\u{feff}{}\n{}\n", s.url("/1"), s.url("/2"))).unwrap();
    let conf = dir.path().join("conf");
    std::fs::write(&conf, format!("\u{feff}url = \"{}\"\n", s.url("/3"))).unwrap();
    let list_arg = format!("@{}", list.display());
    let (out, _) = run(&["--url", &list_arg, "-K", conf.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"okokok");
    let targets: Vec<String> = s.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(targets, ["/1", "/2", "/3"]);

    let quiet = Server::start(vec![Step::status(200, "ok")]).unwrap();
    for bad in ["\0", "\t", "\u{7f}", "\u{feff}", "\u{1b}"] {
        let url = format!("{}/a{bad}b", quiet.url(""));
        std::fs::write(&list, format!("{}\n{url}\n", quiet.url("/fine"))).unwrap();
        std::fs::write(&conf, format!("url = \"{url}\"\n")).unwrap();
        let places: [Vec<&str>; 2] = [vec!["--url", &list_arg], vec!["-K", conf.to_str().unwrap()]];
        for args in places {
            let err = assert_refused(&quiet, &args, "which no URL holds");
            assert!(err.contains("U+"), "{err}");
        }
    }
}

/// A `--state` file or an `--etag-save` file that cannot be written where it is, in a run of
/// several URLs, is one usage line (not one per URL), and nothing is sent.
#[test]
fn a_shared_file_that_cannot_be_written_is_one_line_for_the_batch() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().to_str().unwrap().to_string();
    let missing = dir.path().join("no/such/folder/st");
    let missing = missing.to_str().unwrap();
    let urls: Vec<String> = (0..5).map(|i| s.url(&format!("/{i}"))).collect();
    for (flag, path, needle) in [
        ("--state", folder.as_str(), "--state"),
        ("--state", missing, "--state"),
        ("--etag-save", folder.as_str(), "--etag-save"),
    ] {
        for z in [false, true] {
            let mut args = vec![flag, path];
            if z {
                args.push("-Z");
            }
            args.extend(urls.iter().map(String::as_str));
            assert_refused(&s, &args, needle);
        }
    }
}

/// A signal while a long list is checked (parsed, its secrets marked) ends the run within
/// the handler's grace with one summary, its exit status 128 + the signal's number, and
/// nothing sent, for each stopping signal. The handler's line was masked against the
/// secrets marked so far (seconds to make their matcher), and a session that took the
/// handler over after the signal could write a second summary.
#[test]
fn a_signal_while_a_long_list_is_checked_ends_the_run_at_once() {
    let s = Server::start(vec![Step::status(200, "ok")]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("urls.txt");
    std::fs::write(&path, list_of_secrets(&s, 60_000, None)).unwrap();
    let at = format!("@{}", path.display());
    for (sig, status) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let child = std_command()
            .args(["--url", &at, "-o", "/dev/null"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(2));
        // SAFETY: kill only sends a signal to the child we spawned.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let sent = Instant::now();
        let out = child.wait_with_output().unwrap();
        let took = sent.elapsed();
        let err = stderr(&out);
        assert_eq!(code(&out), status, "signal {sig}: {err}");
        assert!(
            took < Duration::from_secs(3),
            "signal {sig}: ended {took:?} after it: {err}"
        );
        assert_eq!(
            err.lines().count(),
            1,
            "signal {sig}: one summary expected: {err:?}"
        );
        assert!(err.contains("nothing sent"), "signal {sig}: {err}");
        assert!(s.requests().is_empty(), "signal {sig}: a request was sent");
    }
}
