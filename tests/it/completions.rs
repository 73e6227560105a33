//! The checked-in completion scripts, run in the real shells: bash, fish and zsh offer the
//! flags of the subcommand being typed, and never curl's retry flags (hidden: they exist
//! only to be answered with a usage error). A missing shell is a failure, not a skip: CI
//! installs them (`.ci/run`).

use std::path::PathBuf;
use std::process::Command;

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("completions")
        .join(name)
}

/// Runs `shell` with `args` in a bare environment (a fresh HOME, so no user configuration
/// is read); returns its stdout. Panics, naming the shell, if it is not installed.
fn shell(shell: &str, args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(shell)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("TERM", "dumb")
        .output()
        .unwrap_or_else(|e| panic!("{shell} is needed for this test (.ci/run installs it): {e}"));
    assert!(
        out.status.success(),
        "{shell} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What bash's completion function offers for `words`, the last one being completed.
fn bash(words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={cword}; _retry__http retry-http '{}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script("retry-http.bash").display(),
        quoted.join(" "),
        words[cword],
    );
    shell("bash", &["--norc", "--noprofile", "-c", &program])
        .lines()
        .map(str::to_string)
        .collect()
}

/// What fish offers for the command line `line`.
fn fish(line: &str) -> Vec<String> {
    let program = format!(
        "source '{}'; complete -C '{line}'",
        script("retry-http.fish").display()
    );
    shell("fish", &["--no-config", "-c", &program])
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect()
}

const CURLS_RETRY_FLAGS: [&str; 5] = [
    "--retry",
    "--retry-delay",
    "--retry-max-time",
    "--retry-connrefused",
    "--retry-all-errors",
];

#[test]
fn bash_completes_the_flags_of_the_subcommand_typed() {
    let sim = bash(&["retry-http", "simulate", "--"]);
    for flag in ["--clients", "--outage", "--strategies"] {
        assert!(sim.iter().any(|w| w == flag), "{flag} in {sim:?}");
    }
    assert!(
        !sim.iter().any(|w| w == "--dump-header"),
        "the request's flags are not simulate's: {sim:?}"
    );
    let top = bash(&["retry-http", "--ret"]);
    assert!(top.iter().any(|w| w == "--retry-on"), "{top:?}");
    assert!(top.iter().any(|w| w == "--retry-unsafe"), "{top:?}");
    for accepted in CURLS_RETRY_FLAGS {
        assert!(
            top.iter().any(|w| w == accepted),
            "{accepted} not in {top:?}"
        );
    }
}

#[test]
fn fish_completes_the_flags_of_the_subcommand_typed() {
    let sim = fish("retry-http simulate --");
    assert!(sim.iter().any(|w| w == "--clients"), "{sim:?}");
    assert!(!sim.iter().any(|w| w == "--dump-header"), "{sim:?}");
    let top = fish("retry-http --ret");
    assert!(top.iter().any(|w| w == "--retry-on"), "{top:?}");
    for accepted in CURLS_RETRY_FLAGS {
        assert!(
            top.iter().any(|w| w == accepted),
            "{accepted} not in {top:?}"
        );
    }
}

/// A zsh script that types `retry-http WORDS<TAB>` into an interactive zsh on a
/// pseudo-terminal (zpty) with the completion folder in `fpath`, and prints "found" once
/// the screen shows the text expected (exit 1 and the screen, if it never does).
const ZPTY: &str = r#"
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1='> '; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w -n z "retry-http $2"$'\t'
out=''
for i in {1..50}; do
  zpty -r -t z chunk && out+=$chunk
  [[ $out == *$3* ]] && { print found; zpty -d z; exit 0 }
  sleep 0.1
done
print -r -- "$out"
zpty -d z
exit 1
"#;

/// Whether zsh completes `typed` (after `retry-http `) to show `expected`.
fn zsh_completes(typed: &str, expected: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let test = dir.path().join("complete.zsh");
    std::fs::write(&test, ZPTY).unwrap();
    let folder = script("").display().to_string();
    let out = Command::new("zsh")
        .args(["-f", &test.display().to_string(), &folder, typed, expected])
        .env("HOME", dir.path())
        .output()
        .unwrap_or_else(|e| panic!("zsh is needed for this test (.ci/run installs it): {e}"));
    String::from_utf8_lossy(&out.stdout).starts_with("found")
}

#[test]
fn zsh_reads_the_script_and_completes_flags() {
    shell("zsh", &["-n", &script("_retry-http").display().to_string()]);
    assert!(zsh_completes("--retry-unsa", "--retry-unsafe"));
    assert!(
        zsh_completes("simulate --cli", "--clients"),
        "simulate's own flags"
    );
    assert!(zsh_completes("sim", "simulate"), "the subcommands");
    assert!(
        zsh_completes("http://x/ -o out --retry-unsa", "--retry-unsafe"),
        "flags after the URL"
    );
    assert!(
        zsh_completes("--retry-conn", "--retry-connrefused"),
        "curl's retry flags are offered: they run"
    );
}

/// The flags whose value is one of a few names, with the names a user expects offered: the
/// four named jitter modes (`+DURATION` is typed), the log's formats, colour's choices, the
/// store's error policy, and simulate's model, output format, population and strategies.
const ENUMERATED: &[(Option<&str>, &str, &[&str])] = &[
    (None, "--jitter", &["full", "equal", "decorrelated", "none"]),
    (None, "--log-format", &["text", "json"]),
    (None, "--color", &["auto", "always", "never"]),
    (None, "--state-on-error", &["open", "closed"]),
    (
        Some("simulate"),
        "--model",
        &["outage", "overload", "failure-rate", "cron", "limiter"],
    ),
    (Some("simulate"), "--format", &["table", "json"]),
    (Some("simulate"), "--population", &["open", "closed"]),
    (
        Some("simulate"),
        "--strategies",
        &[
            "fixed",
            "exponential",
            "full",
            "equal",
            "decorrelated",
            "no-retry",
            "retries",
            "bucket",
            "breaker",
            "shared-budget",
            "shared-breaker",
        ],
    ),
];

/// Every flag of the command line (and of `simulate`) whose parser names its values, with
/// them, as clap knows them: [`ENUMERATED`] and any flag added later with such values.
fn enumerated_flags() -> Vec<(Option<String>, String, Vec<String>)> {
    use clap::CommandFactory;
    let mut cli = retry_http::cli::Cli::command();
    // The subcommands' flags are deferred: build the whole definition, as the generators do.
    cli.build();
    let mut commands = vec![(None, &cli)];
    commands.extend(
        cli.get_subcommands()
            .map(|c| (Some(c.get_name().to_string()), c)),
    );
    let mut out = Vec::new();
    for (sub, cmd) in commands {
        for arg in cmd
            .get_arguments()
            .filter(|a| !a.is_hide_set() && a.get_action().takes_values())
        {
            let (Some(long), Some(values)) =
                (arg.get_long(), arg.get_value_parser().possible_values())
            else {
                continue;
            };
            let names: Vec<String> = values
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_string())
                .collect();
            if !names.is_empty() {
                out.push((sub.clone(), format!("--{long}"), names));
            }
        }
    }
    out
}

/// Whether zsh, after `retry-http TYPED<TAB>`, shows every one of `expected` on the screen.
fn zsh_shows_all(typed: &str, expected: &[&str]) -> Result<(), String> {
    const ZPTY_ALL: &str = r#"
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1='> '; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w -n z "retry-http $2"$'\t'
shift 2
out=''
for i in {1..80}; do
  zpty -r -t z chunk && out+=$chunk
  missing=0
  for w in "$@"; do [[ $out == *$w* ]] || missing=1; done
  (( missing )) || { print found; zpty -d z; exit 0 }
  sleep 0.1
done
print -r -- "$out"
zpty -d z
exit 1
"#;
    let dir = tempfile::tempdir().unwrap();
    let test = dir.path().join("complete.zsh");
    std::fs::write(&test, ZPTY_ALL).unwrap();
    let out = Command::new("zsh")
        .args(["-f", &test.display().to_string()])
        .arg(script("").display().to_string())
        .arg(typed)
        .args(expected)
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .output()
        .unwrap_or_else(|e| panic!("zsh is needed for this test (.ci/run installs it): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    if stdout.starts_with("found") {
        Ok(())
    } else {
        Err(stdout.into_owned())
    }
}

/// Every flag that takes one of a few names completes to those names in bash, fish and zsh
/// (not to file names): the flags of [`ENUMERATED`] and every other flag clap knows values
/// for, each in the three shells. The values offered must be exactly the names (bash, fish),
/// or all shown (zsh), so file names offered instead fail it, as fish did for every flag at
/// the top level (its argparse failed on the flag still waiting for its value).
#[test]
fn every_enumerated_flag_completes_to_its_values_in_the_three_shells() {
    let known = enumerated_flags();
    for (sub, flag, values) in ENUMERATED {
        let found = known
            .iter()
            .find(|(s, f, _)| s.as_deref() == *sub && f == flag)
            .unwrap_or_else(|| panic!("{flag} names no values for the completion scripts"));
        assert_eq!(&found.2, values, "{flag}'s values");
    }
    let mut checked = 0;
    for (sub, flag, values) in &known {
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let prefix: Vec<&str> = std::iter::once("retry-http")
            .chain(sub.as_deref())
            .chain([flag.as_str()])
            .collect();
        let typed = prefix[1..].join(" ");

        let mut words = prefix.clone();
        words.push("");
        let mut offered = bash(&words);
        offered.sort();
        let mut wanted: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        wanted.sort();
        assert_eq!(offered, wanted, "bash: {typed} <TAB>");

        let mut offered = fish(&format!("{} ", prefix.join(" ")));
        offered.sort();
        assert_eq!(offered, wanted, "fish: {typed} <TAB>");

        if let Err(screen) = zsh_shows_all(&format!("{typed} "), &values) {
            panic!("zsh: {typed} <TAB> did not show {values:?}:\n{screen}");
        }
        checked += 1;
    }
    assert!(checked >= ENUMERATED.len(), "{checked} flags checked");
}
