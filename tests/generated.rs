//! The man page, the shell completions and the README's exit-code table are generated from
//! the clap definition and `exit::Outcome`, and checked in (`--help` itself is in the man
//! page, not copied into the documentation). This test regenerates them and fails on any difference;
//! `RETRY_HTTP_REGENERATE=1 cargo test --test generated` rewrites them.

use clap::CommandFactory;
use clap_complete::Shell;
use retry_http::cli::Cli;
use retry_http::exit::{CURL_HEADING, CURL_TABLE, Outcome};
use roff::{Roff, bold, roman};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn regenerate() -> bool {
    std::env::var_os("RETRY_HTTP_REGENERATE").is_some()
}

/// Compares `fresh` with the file, or rewrites the file when asked.
fn check(path: &Path, fresh: &[u8]) {
    if regenerate() {
        std::fs::write(path, fresh).unwrap();
        return;
    }
    let current = std::fs::read(path).unwrap_or_default();
    assert!(
        current == fresh,
        "{} is stale: run RETRY_HTTP_REGENERATE=1 cargo test --test generated",
        path.display()
    );
}

fn section(out: &mut Vec<u8>, title: &str, body: &Roff) {
    let mut r = Roff::new();
    r.control("SH", [title]);
    out.extend(r.render().into_bytes());
    out.extend(body.render().into_bytes());
}

fn paragraphs(texts: &[&str]) -> Roff {
    let mut r = Roff::new();
    for t in texts {
        r.control("PP", []).text([roman(*t)]);
    }
    r
}

fn tagged(items: &[(String, String)]) -> Roff {
    let mut r = Roff::new();
    for (tag, text) in items {
        r.control("TP", [])
            .text([bold(tag.as_str())])
            .text([roman(text.as_str())]);
    }
    r
}

/// The RETRY RULES section of the man page, one paragraph each.
const RETRY_RULES: &[&str] = &[
    "Retry n (n from 0) has the ceiling min(cap, base * 2^n). Full jitter waits uniform(0, ceiling); equal jitter ceiling/2 + uniform(0, ceiling/2); decorrelated jitter min(cap, uniform(base, previous * 3)); none waits the ceiling; +D waits ceiling + uniform(0, D). (AWS Architecture Blog, Exponential Backoff And Jitter.)",
    "Retry-After (RFC 9110 section 10.2.3) is read as delta-seconds or an HTTP-date (IMF-fixdate, RFC 850, asctime). The wait is max(backoff, hint), never shorter than the hint; a hint above --max-retry-after is clamped and logged; when the hint is the larger, uniform(0, --retry-after-spread) is added. A value that cannot be read is reported and ignored, never read as zero.",
    "The deadline counts from start-up. Each attempt's timeout is cut to what is left. With a deadline and no --attempts, attempts are unlimited: the deadline bounds the run. A server's Retry-After that would end past the deadline stops the run at once (exit 5). A backoff that would end past it becomes a last attempt instead, its start drawn in the second half of the time left once the larger of 10 ms and the longest attempt so far is kept for it; with less than that left, the run stops (exit 5).",
    "Statuses in --retry-on are retried, and failures with no response (refused, DNS, timeouts, resets, stalls, bodies cut short). A rejected TLS certificate, a protocol error, too many redirects and an oversized body are not.",
    "GET, HEAD, OPTIONS, TRACE, PUT and DELETE are idempotent (RFC 9110 section 9.2.2). Other methods are replayed only when the failure proves the request was not processed (no connection; 408, 429, 503), or with an Idempotency-Key or --retry-unsafe.",
];

/// The EXIT STATUS section: every [`Outcome`], its code and meaning; then the codes of
/// `--exit-codes curl` ([`CURL_TABLE`]), each tagged "curl N".
fn exit_status() -> Vec<(String, String)> {
    let own = Outcome::ALL
        .iter()
        .map(|o| (o.code().to_string(), o.meaning().to_string()));
    let heading = ("--exit-codes curl".to_string(), CURL_HEADING.to_string());
    let curl = CURL_TABLE
        .iter()
        .map(|(code, meaning)| (format!("curl {code}"), meaning.to_string()));
    own.chain(std::iter::once(heading)).chain(curl).collect()
}

/// The ENVIRONMENT section: each flag's variable, then those read besides.
fn environment(cmd: &clap::Command) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = cmd
        .get_arguments()
        .filter_map(|a| {
            let var = a.get_env()?.to_string_lossy().into_owned();
            Some((var, format!("Default for --{}.", a.get_long()?)))
        })
        .collect();
    for (var, text) in [
        (
            "https_proxy, HTTPS_PROXY",
            "Proxy for https URLs (-x overrides).",
        ),
        (
            "http_proxy",
            "Proxy for http URLs; the upper-case form is ignored, as curl does.",
        ),
        (
            "ALL_PROXY",
            "Proxy when no scheme-specific variable is set.",
        ),
        (
            "NO_PROXY",
            "Hosts reached directly, comma-separated (--noproxy overrides).",
        ),
        (
            "NO_COLOR, CLICOLOR_FORCE",
            "Turn colour on stderr off, or force it on.",
        ),
        (
            "RETRY_HTTP_HOST_ID",
            "Names this host for --splay instead of its host name (containers that share one).",
        ),
        (
            "TMPDIR",
            "Where stdout bodies over 1 MiB and large request bodies are spooled.",
        ),
    ] {
        env.push((var.to_string(), text.to_string()));
    }
    env
}

/// The EXAMPLES section: command lines and what they do.
fn examples() -> Vec<(String, String)> {
    vec![
        ("retry-http https://example.test/health".to_string(), "Retry a health check with the default policy.".to_string()),
        (
            "retry-http -s -o /dev/null --deadline 10m --state /var/lib/retry-http/jobs.state --idempotency-key auto --json @job.json POST https://api.example.test/jobs".into(),
            "Submit a JSON job from cron, never past 10 minutes, silent when it succeeds: the key is kept in the state file until the job's answer is final, so a retry, or the next run after an answer was lost, is not processed twice.".into(),
        ),
        (
            "retry-http -s -o /dev/null -w '%{http_code}' --attempts 30 --cap 5s --deadline 2m http://localhost:8080/healthz".into(),
            "Wait in CI for a service to come up.".into(),
        ),
        ("retry-http --explain --attempts 8 --base 100ms https://example.test/".into(), "Show the schedule a policy implies.".into()),
    ]
}

fn man_page() -> Vec<u8> {
    let cmd = Cli::command();
    let man = clap_mangen::Man::new(cmd.clone()).date("2026-11-29");
    let mut out = Vec::new();
    man.render_title(&mut out).unwrap();
    man.render_name_section(&mut out).unwrap();
    man.render_synopsis_section(&mut out).unwrap();
    man.render_description_section(&mut out).unwrap();
    man.render_options_section(&mut out).unwrap();
    man.render_subcommands_section(&mut out).unwrap();
    section(&mut out, "RETRY RULES", &paragraphs(RETRY_RULES));
    section(&mut out, "EXIT STATUS", &tagged(&exit_status()));
    section(&mut out, "ENVIRONMENT", &tagged(&environment(&cmd)));
    section(&mut out, "EXAMPLES", &tagged(&examples()));
    man.render_version_section(&mut out).unwrap();
    // clap_mangen writes the positional as one optional word: it is [METHOD] then a URL.
    String::from_utf8(out)
        .expect("the man page is UTF-8")
        .replace("[\\fI[METHOD] URL\\fR]", "[\\fIMETHOD\\fR] \\fIURL\\fR")
        .into_bytes()
}

#[test]
fn man_page_is_fresh() {
    let page = man_page();
    let text = String::from_utf8_lossy(&page);
    for needle in [
        "EXIT STATUS",
        "ENVIRONMENT",
        "EXAMPLES",
        "RETRY RULES",
        "RETRY_HTTP_ATTEMPTS",
    ] {
        assert!(text.contains(needle), "{needle}");
    }
    check(&root().join("man/retry-http.1"), &page);
}

#[test]
fn simulate_man_page_is_fresh() {
    let cmd = Cli::command();
    let sub = cmd
        .find_subcommand("simulate")
        .expect("simulate")
        .clone()
        // The command is `retry-http simulate`; the page is retry-http-simulate(1), as git
        // names its subcommands' pages.
        .display_name("retry-http simulate")
        .bin_name("retry-http simulate");
    let mut out = Vec::new();
    clap_mangen::Man::new(sub)
        .title("retry-http-simulate")
        .source(format!("retry-http {}", env!("CARGO_PKG_VERSION")))
        .date("2026-11-29")
        .render(&mut out)
        .unwrap();
    check(&root().join("man/retry-http-simulate.1"), &out);
}

#[test]
fn completions_are_fresh() {
    for (shell, file) in [
        (Shell::Bash, "retry-http.bash"),
        (Shell::Zsh, "_retry-http"),
        (Shell::Fish, "retry-http.fish"),
        (Shell::PowerShell, "_retry-http.ps1"),
        (Shell::Elvish, "retry-http.elv"),
    ] {
        check(&root().join("completions").join(file), &completion(shell));
    }
}

/// The completion script for `shell`: clap_complete's, with the hidden flags (curl's retry
/// flags, which exist only to be answered with a usage error) left out, fish's option spec
/// without `http1.1` (a `.` is not allowed there) and parsed without a flag still waiting
/// for its value, and the bash
/// script's subcommand states named alike (with a hyphenated binary name clap_complete
/// sets `retry__http__subcmd__simulate` but matches `retry__subcmd__http__subcmd__simulate`,
/// clap-rs/clap#6421, so `retry-http simulate --<TAB>` offered file names).
fn completion(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "retry-http", &mut out);
    let mut text = String::from_utf8(out).expect("completion scripts are UTF-8");
    if shell == Shell::Bash {
        text = text.replace("retry__subcmd__http__subcmd__", "retry__http__subcmd__");
    }
    if shell == Shell::Fish {
        // fish's argparse takes only letters, digits, - and _ in an option spec's long name,
        // and a letter or digit as its short one: `http1.1`, `tlsv1.2` or `#/progress-bar`
        // there make argparse fail, and every completion with it. The spec only parses (the
        // `complete` lines offer the flag), so such a long name leaves the spec alone, and
        // `-#` and `-:` keep only their long names. In a `complete` line a bare `#` starts a
        // comment: it is quoted.
        text = text
            .lines()
            .map(|l| match l.trim_start().starts_with("string join") {
                true => fish_spec(l),
                false => l.replace(" -s # ", " -s '#' "),
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        // With a flag that takes a value last (`--jitter <TAB>`), argparse fails for want of
        // the value, the condition of every top-level `complete` line with it, and fish
        // offered file names instead of the flag's values: the words before it are parsed.
        let parse = "    argparse -s (__fish_retry_http_global_optspecs) -- $cmd 2>/dev/null\n";
        assert!(text.contains(parse), "clap_complete's fish script changed");
        text = text.replacen(
            parse,
            &format!(
                "{parse}    or argparse -s (__fish_retry_http_global_optspecs) -- $cmd[1..-2] 2>/dev/null\n"
            ),
            1,
        );
    }
    if shell == Shell::Zsh {
        text = zsh_subcommands_first(&text);
    }
    for long in hidden_longs(&Cli::command()) {
        text = without_flag(&text, &long, shell == Shell::Bash);
    }
    for short in hidden_shorts(&Cli::command()) {
        text = without_short(&text, short);
    }
    text.into_bytes()
}

/// fish's option spec line without what argparse refuses (see [`completion`]).
fn fish_spec(line: &str) -> String {
    line.split(' ')
        .filter_map(|t| {
            let t = t.strip_prefix("#/").or(t.strip_prefix(":/")).unwrap_or(t);
            let long = t.rsplit('/').next().unwrap_or(t).trim_end_matches('=');
            (!long.contains('.')).then_some(t)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// clap_complete's zsh script takes the first word for the optional `[METHOD] URL` and
/// the second for a subcommand, so `retry-http simulate --<TAB>` offered the request's
/// flags. Without the positional's spec the first word is the subcommand (`$line[1]`); a
/// first word that is none (a URL) goes back to the top level's completion, so flags after
/// the URL still complete.
fn zsh_subcommands_first(text: &str) -> String {
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("'::target -- "))
        .collect();
    let mut text = kept.join("\n") + "\n";
    let state = text
        .find("    (retry-http)\n")
        .expect("the top level's state");
    let case = text[state..]
        .find("        case $line[2] in")
        .map(|i| state + i + "        case $line[2] in".len())
        .expect("the subcommand dispatch");
    let dispatch = text[state..case].replace("$line[2]", "$line[1]");
    text.replace_range(state..case, &dispatch);
    let end = "        esac\n    ;;\nesac\n}\n";
    let commands = text
        .find("(( $+functions[_retry-http_commands] ))")
        .expect("commands");
    let close = text[..commands].rfind(end).expect("the dispatch's end");
    text.insert_str(close, "(*)\nwords[1]=retry-http\n_retry-http\n;;\n");
    text
}

/// The long names of the hidden flags, the subcommands' included.
fn hidden_longs(cmd: &clap::Command) -> Vec<String> {
    let mut names: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.is_hide_set())
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect();
    for sub in cmd.get_subcommands() {
        names.extend(hidden_longs(sub));
    }
    names
}

/// The one-letter names of the top level's hidden flags (curl's refused `-J`, `-:`, ...).
fn hidden_shorts(cmd: &clap::Command) -> Vec<char> {
    cmd.get_arguments()
        .filter(|a| a.is_hide_set())
        .filter_map(|a| a.get_short())
        .collect()
}

/// `text` without the short flag `-c`: the word in bash's `opts="..."` lists, the line that
/// offers it in zsh (`'-c[`), PowerShell (`new('-c',`) and elvish (`cand -c `); fish names
/// it on its long name's line, which is gone already.
fn without_short(text: &str, c: char) -> String {
    let flag = format!("-{c}");
    let offers = |line: &str| {
        let l = line.trim_start();
        l.starts_with(&format!("'{flag}["))
            || l.contains(&format!("new('{flag}',"))
            || l.starts_with(&format!("cand {flag} "))
    };
    text.split_inclusive('\n')
        .filter(|line| !offers(line))
        .map(|line| match line.trim_start().starts_with("opts=\"") {
            true => line.replace(&format!(" {flag} "), " "),
            false => line.to_string(),
        })
        .collect()
}

/// Whether `line` names the flag `long` (`--long` or fish's `-l long`) as a whole word.
fn names_flag(line: &str, long: &str) -> bool {
    let whole = |needle: &str| {
        line.match_indices(needle).any(|(i, _)| {
            !line[i + needle.len()..]
                .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
    };
    whole(&format!("--{long}")) || whole(&format!("-l {long}"))
}

/// `text` without the flag `long`: the lines that offer it are dropped; in bash, the word
/// is taken out of each `opts="..."` list and its value's `case` branch (four lines) goes.
fn without_flag(text: &str, long: &str, bash: bool) -> String {
    let flag = format!("--{long}");
    let mut out = String::new();
    let mut skip = 0;
    for line in text.split_inclusive('\n') {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        if bash && line.trim_start().starts_with("opts=\"") {
            let kept: Vec<&str> = line.split(' ').filter(|w| *w != flag).collect();
            out.push_str(&kept.join(" "));
        } else if bash && line.trim() == format!("{flag})") {
            skip = 3;
        } else if bash || !names_flag(line, long) {
            out.push_str(line);
        }
    }
    out
}

/// Replaces what lies between the `start` and `end` markers of `text` with `body`.
fn fill_block(text: &str, start: &str, end: &str, body: &str) -> String {
    let (Some(a), Some(b)) = (text.find(start), text.find(end)) else {
        panic!("README.md lacks the markers {start:?} and {end:?}");
    };
    assert!(a + start.len() <= b, "{start:?} comes after {end:?}");
    format!("{}{start}{body}{}", &text[..a], &text[b..])
}

/// The README's exit-code table, one row per [`Outcome`], in `Outcome::ALL`'s order, with
/// the code and the meaning `--help` and the man page show.
fn exit_table() -> String {
    let mut t = String::from("| code | outcome |\n|---|---|\n");
    for o in Outcome::ALL {
        let meaning = o.meaning();
        assert!(!meaning.contains('|'), "a | would split the row: {meaning}");
        t.push_str(&format!("| {} | {meaning} |\n", o.code()));
    }
    t
}

/// The README's table of `--exit-codes curl`, one row per code of [`CURL_TABLE`].
fn curl_exit_table() -> String {
    let mut t = String::from("| curl's code | when |\n|---|---|\n");
    for (code, meaning) in CURL_TABLE {
        assert!(!meaning.contains('|'), "a | would split the row: {meaning}");
        t.push_str(&format!("| {code} | {meaning} |\n"));
    }
    t
}

/// The README's generated blocks, the exit-code tables, are fresh.
#[test]
fn readme_exit_table_is_fresh() {
    let readme_path = root().join("README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let fresh = fill_block(
        &readme,
        "<!-- exits:start -->\n",
        "<!-- exits:end -->",
        &exit_table(),
    );
    let fresh = fill_block(
        &fresh,
        "<!-- curl-exits:start -->\n",
        "<!-- curl-exits:end -->",
        &curl_exit_table(),
    );
    check(&readme_path, fresh.as_bytes());
}

#[test]
fn exit_table_has_one_row_per_outcome() {
    let table = exit_table();
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(rows.len(), Outcome::ALL.len());
    for (row, o) in rows.iter().zip(Outcome::ALL) {
        assert_eq!(*row, format!("| {} | {} |", o.code(), o.meaning()));
    }
}

/// Every flag docs/curl.md's "curl's flags at a glance" names is one the command line knows
/// (accepted, or hidden to be refused with its equivalent), so the table cannot promise a
/// flag that is not there.
#[test]
fn the_curl_table_names_only_known_flags() {
    let page = std::fs::read_to_string(root().join("docs/curl.md")).expect("docs/curl.md");
    let start = page
        .find("## curl's flags at a glance")
        .expect("the table's section");
    let section = &page[start..];
    let table: Vec<&str> = section
        .lines()
        .skip_while(|l| !l.starts_with("| curl flag"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(table.len() > 20, "the table: {table:?}");
    let cmd = Cli::command();
    let longs: Vec<String> = cmd
        .get_arguments()
        .flat_map(|a| {
            let aliases = a.get_all_aliases().unwrap_or_default();
            a.get_long().into_iter().chain(aliases).map(str::to_string)
        })
        .collect();
    let shorts: Vec<char> = cmd.get_arguments().filter_map(|a| a.get_short()).collect();
    for row in &table[2..] {
        let flags = row.split('|').nth(1).unwrap_or_default();
        for word in flags.split(['`', ' ', ',', '/']) {
            if let Some(long) = word.strip_prefix("--") {
                let long = long.split(['=', ' ']).next().unwrap_or_default();
                assert!(longs.iter().any(|l| l == long), "--{long} in {row}");
            } else if let Some(short) = word.strip_prefix('-').filter(|s| s.len() == 1) {
                let c = short.chars().next().unwrap_or(' ');
                assert!(shorts.contains(&c), "-{c} in {row}");
            }
        }
    }
}
