//! Arguments expanded before clap parses them. `-K FILE` (curl's config file) becomes the
//! flags its lines give, at its place, so they beat the `RETRY_HTTP_*` defaults as typed
//! flags do; then `-H @FILE` (`@-`: stdin) becomes one `--header=LINE` per line, each
//! checked as a `-H` value, so secrets stay out of the process's argv, and `--url @FILE`
//! a list of URLs, one a line, held beside the arguments (see [`Expanded::lists`]). Files are read once, at most 1 MiB each (a URL list 256 MiB). Errors name the file and the line, never a value. `-K` is also
//! declared here for clap ([`ConfigFileFlags`]), so that `--help`, the man page and the
//! completions know it, with what the expansion found.

use crate::cli::values;
use clap::{Args, CommandFactory};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// `-K` as clap declares it (the files were read before clap parses: see [`expand`], whose
/// findings are [`Found`]).
#[derive(Debug, Args, Default)]
#[group(skip)]
#[command(next_help_heading = "Request")]
pub struct ConfigFileFlags {
    /// Read more flags from FILE (curl's syntax): one per line, with or without the
    /// leading --, `name = value`, `name: value` or `name value`, "..." quoting with \
    /// escapes, # comments; `url = URL` adds a URL, as --url does. Its flags count as if
    /// typed at the place of -K. No default file is read (not ~/.curlrc); at most 1 MiB; no -K
    /// inside.
    #[arg(
        hide_short_help = true,
        short = 'K',
        long = "config",
        value_name = "FILE"
    )]
    pub config: Vec<PathBuf>,
}

/// The largest `-K` or `-H @` file read, in bytes.
const MAX_FILE: u64 = 1 << 20;

/// The largest `--url @` file read, in bytes: a million URLs of 200 bytes and more.
const MAX_URL_FILE: u64 = 256 << 20;

/// Why the command line could not be expanded.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A usage error: the message (exit 2, nothing sent).
    Usage(String),
    /// The `--deadline` passed while this file (named) was still being read (exit 5).
    Deadline(String),
}

impl From<String> for Refusal {
    fn from(msg: String) -> Self {
        Refusal::Usage(msg)
    }
}

/// The command line after expansion.
#[derive(Debug)]
pub struct Expanded {
    /// The arguments clap parses (program name first).
    pub args: Vec<OsString>,
    /// What reading the files found.
    pub found: Found,
    /// The text of each `--url @FILE` read, in order: the argument `--url=@N` stands for
    /// the URLs of list N (see [`list_urls`]; `cli::batch::BatchFlags::lists`). A list is
    /// not made into one argument per URL: clap would hold each as a value of its own,
    /// about 0.5 KiB a URL.
    pub lists: Vec<String>,
}

/// What reading the `-K` and `-H @FILE` files found besides the arguments: facts the
/// configuration and the session are built from, not flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Found {
    /// What read stdin (`-H @-`, `--url @-`), if anything: no body nor `-w @-` may read it
    /// again.
    pub stdin_taken: Option<&'static str>,
    /// Some flags came from a `-K` file: their values are not quoted in errors.
    pub from_file: bool,
}

/// What clap knows of each option: its long name (`None` for those with a short only)
/// and whether it takes a value.
struct Options {
    long: HashMap<String, bool>,
    short: HashMap<char, (String, bool)>,
}

impl Options {
    fn of_cli() -> Options {
        let cmd = super::Cli::command();
        let mut long = HashMap::new();
        let mut short = HashMap::new();
        for a in cmd.get_arguments().filter(|a| !a.is_positional()) {
            // `-O` takes one value per occurrence, but none from the command line.
            let takes = a.get_action().takes_values()
                && a.get_num_args().is_none_or(|n| n.max_values() > 0);
            if let Some(l) = a.get_long() {
                long.insert(l.to_string(), takes);
                if let Some(s) = a.get_short() {
                    short.insert(s, (l.to_string(), takes));
                }
            }
        }
        Options { long, short }
    }
}

/// Expands `-K` files, then `-H @FILE`. The subcommands' arguments are left as they are.
///
/// Reading a file may block (a FIFO, a pipe that never closes): it is bounded by the
/// `--deadline` typed on the command line (or `RETRY_HTTP_DEADLINE`), counted from `start`.
/// A deadline given inside a `-K` file cannot bound the reading of that file.
pub fn expand(args: Vec<OsString>, start: std::time::Instant) -> Result<Expanded, Refusal> {
    let until = typed_deadline(&args).map(|d| start + d);
    let is_subcommand = args
        .get(1)
        .is_some_and(|a| matches!(a.to_str(), Some("demo" | "simulate" | "help")));
    if is_subcommand {
        return Ok(Expanded {
            args,
            found: Found::default(),
            lists: Vec::new(),
        });
    }
    if !may_expand(&args) {
        // The common case: no -K and no -H @FILE; building clap's table of options (a
        // tenth of the start-up) is not needed to know that.
        return Ok(Expanded {
            args,
            found: Found::default(),
            lists: Vec::new(),
        });
    }
    let opts = Options::of_cli();
    let mut from_file = false;
    let args = rewrite(args, &opts, &mut |long, value| match long {
        "config" => {
            from_file = true;
            config_file(value, &opts, until).map(Some)
        }
        _ => Ok(None),
    })?;
    let mut stdin_taken = None;
    let mut lists = Vec::new();
    let args = rewrite(args, &opts, &mut |long, value| match long {
        "header" if value.starts_with('@') => {
            header_file(&value[1..], &mut stdin_taken, until).map(Some)
        }
        "url" if value.starts_with('@') => {
            lists.push(url_file(&value[1..], &mut stdin_taken, until)?);
            Ok(Some(vec![format!("--url=@{}", lists.len() - 1).into()]))
        }
        _ => Ok(None),
    })?;
    Ok(Expanded {
        args,
        found: Found {
            stdin_taken,
            from_file,
        },
        lists,
    })
}

/// Whether [`expand`] may read files for `args` (a `-K` file, a `-H @FILE`, a `--url @FILE`):
/// not for a subcommand; a false positive is harmless.
pub fn may_read_files(args: &[OsString]) -> bool {
    let is_subcommand = args
        .get(1)
        .is_some_and(|a| matches!(a.to_str(), Some("demo" | "simulate" | "help")));
    !is_subcommand && may_expand(args)
}

/// Whether anything may need expanding: an argument that could be `-K`/`--config` (a
/// short cluster holding `K`, a long option starting `--co`) or an `@` value for `-H`.
/// False negatives are impossible; a false positive only costs the full scan.
fn may_expand(args: &[OsString]) -> bool {
    args.iter().skip(1).any(|a| {
        let a = a.as_encoded_bytes();
        a.contains(&b'@')
            || a.starts_with(b"--co")
            || (a.first() == Some(&b'-') && a.get(1) != Some(&b'-') && a.contains(&b'K'))
    })
}

/// Given an option's long name and value, the arguments that stand for it (`None`: keep
/// it as given), or an error.
type Replacer<'a> = dyn FnMut(&str, &str) -> Result<Option<Vec<OsString>>, Refusal> + 'a;

/// Replaces what `f` replaces: it is called with each option's long name and value (options
/// that take one), and gives the arguments that stand for them, or `None` to keep them as
/// given.
/// Short clusters (`-sKfile`) and `--name=value` are understood; after `--` nothing is.
fn rewrite(
    args: Vec<OsString>,
    opts: &Options,
    f: &mut Replacer,
) -> Result<Vec<OsString>, Refusal> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    out.extend(it.next());
    while let Some(arg) = it.next() {
        let Some(a) = arg.to_str().map(str::to_owned) else {
            out.push(arg);
            continue;
        };
        if a == "--" {
            out.push(arg);
            out.extend(it.by_ref());
            break;
        }
        let Some((before, long, attached)) = split_option(&a, opts) else {
            out.push(arg);
            continue;
        };
        let (value, next) = match attached {
            Some(v) => (v, None),
            None => match it.next() {
                Some(next) => (next.to_string_lossy().into_owned(), Some(next)),
                None => {
                    out.push(arg);
                    continue;
                }
            },
        };
        match f(&long, &value)? {
            Some(replacement) => {
                out.extend(before.map(OsString::from));
                out.extend(replacement);
            }
            // Kept as given: only what is expanded changes.
            None => out.extend(std::iter::once(arg).chain(next)),
        }
    }
    Ok(out)
}

/// An argument that is an option taking a value: the short flags before it in a cluster
/// (`-s` of `-sK`), its long name, and its value when attached (`None`: the next argument).
fn split_option(a: &str, opts: &Options) -> Option<(Option<String>, String, Option<String>)> {
    if let Some(rest) = a.strip_prefix("--") {
        let (name, value) = match rest.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (rest, None),
        };
        return opts
            .long
            .get(name)
            .filter(|takes| **takes)
            .map(|_| (None, name.to_string(), value));
    }
    let cluster = a.strip_prefix('-').filter(|c| !c.is_empty())?;
    for (i, c) in cluster.char_indices() {
        let (long, takes) = opts.short.get(&c)?;
        if *takes {
            let rest = &cluster[i + c.len_utf8()..];
            let before = (i > 0).then(|| format!("-{}", &cluster[..i]));
            let value = (!rest.is_empty()).then(|| rest.to_string());
            return Some((before, long.clone(), value));
        }
    }
    None
}

/// The `--deadline` of the command line as typed (`--deadline D`, `--deadline=D`), else of
/// `RETRY_HTTP_DEADLINE`; `None` when neither gives one that parses (clap then says why),
/// and for `0`, which means no deadline.
pub(crate) fn typed_deadline(args: &[OsString]) -> Option<std::time::Duration> {
    let mut given = None;
    let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if let Some(v) = a.strip_prefix("--deadline=") {
            given = Some(v.to_string());
        } else if a == "--deadline" {
            given = it.next().map(|v| v.into_owned());
        }
    }
    let value = given.or_else(|| std::env::var("RETRY_HTTP_DEADLINE").ok())?;
    values::duration(&value).ok().filter(|d| !d.is_zero())
}

/// [`read_file`], within `until` when there is one: a file still being read then is the
/// deadline's.
fn read_text(path: &str, what: &str, until: Option<std::time::Instant>) -> Result<String, Refusal> {
    read_up_to(path, what, until, MAX_FILE)
}

/// [`read_text`] of a file of at most `max` bytes.
fn read_up_to(
    path: &str,
    what: &str,
    until: Option<std::time::Instant>,
    max: u64,
) -> Result<String, Refusal> {
    use crate::process::within::{Missed, within};
    let left = until.map(|u| u.saturating_duration_since(std::time::Instant::now()));
    let (p, w) = (path.to_string(), what.to_string());
    match within(left, move || read_file(&p, &w, max)) {
        Ok(read) => Ok(read?),
        Err(Missed::Late) => Err(Refusal::Deadline(what.to_string())),
        Err(Missed::NoThread(e)) => Err(Refusal::Usage(format!("cannot read {what}: {e}"))),
    }
}

/// Reads at most `max` bytes of `path` (`-`: stdin) as text; `what` names it in errors
/// ("config file x", "-H @x").
fn read_file(path: &str, what: &str, max: u64) -> Result<String, String> {
    let read = if path == "-" {
        crate::files::read_bounded(std::io::stdin().lock(), max)
    } else {
        let file = std::fs::File::open(path).map_err(|e| format!("cannot read {what}: {e}"))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(format!("{what} is a directory: expected a file"));
        }
        crate::files::read_bounded(file, max)
    };
    let bytes = read
        .map_err(|e| format!("cannot read {what}: {e}"))?
        .ok_or_else(|| format!("{what} is over {} MiB: expected a smaller file", max >> 20))?;
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        format!("{what} line {line}: not UTF-8 text")
    })
}

/// Whether `path` reads this process's stdin: `-`, or one of the names Linux gives it.
fn is_stdin(path: &str) -> bool {
    ["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"].contains(&path)
}

/// `-H @FILE`: one `--header=LINE` per line; CR and blank lines are dropped, and each line
/// is checked as a `-H` value (whose errors mask what may be a secret).
fn header_file(
    path: &str,
    stdin_taken: &mut Option<&'static str>,
    until: Option<std::time::Instant>,
) -> Result<Vec<OsString>, Refusal> {
    if is_stdin(path) {
        match stdin_taken {
            Some("-H @-") => {
                return Err(Refusal::Usage(
                    "-H @- is given twice: stdin can be read only once".into(),
                ));
            }
            Some(taken) => {
                return Err(Refusal::Usage(format!(
                    "{taken} and -H @- both want stdin: it can be read only once"
                )));
            }
            None => *stdin_taken = Some("-H @-"),
        }
    }
    let what = if path == "-" {
        "-H @- (stdin)".to_string()
    } else {
        format!("-H @{path}")
    };
    let text = read_text(path, &what, until)?;
    // A byte-order mark at the start (a file saved by a Windows editor) is not part of the
    // first line.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut out = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim_matches([' ', '\t']).is_empty() {
            continue;
        }
        values::header(line).map_err(|e| format!("{what} line {}: {}", n + 1, unquoted(&e)))?;
        out.push(format!("--header={line}").into());
    }
    Ok(out)
}

/// `--url @FILE`: the file's text, a URL a line, in the file's order (see [`list_urls`]);
/// one with no URL is an error. The URLs are checked later, with the others
/// (`config::batch`).
fn url_file(
    path: &str,
    stdin_taken: &mut Option<&'static str>,
    until: Option<std::time::Instant>,
) -> Result<String, Refusal> {
    if is_stdin(path) {
        if let Some(taken) = stdin_taken {
            return Err(Refusal::Usage(format!(
                "{taken} and --url @- both want stdin: it can be read only once"
            )));
        }
        *stdin_taken = Some("--url @-");
    }
    let what = if path == "-" {
        "--url @- (stdin)".to_string()
    } else {
        format!("--url @{path}")
    };
    let text = read_up_to(path, &what, until, MAX_URL_FILE)?;
    if list_urls(&text).next().is_none() {
        return Err(Refusal::Usage(format!(
            "{what} holds no URL (blank lines and lines starting with # are skipped): expected one URL a line"
        )));
    }
    Ok(text)
}

/// The URLs of a URL list, in order: its lines without the blank ones and those whose
/// first non-blank character is `#`, spaces, tabs and a CR around each dropped. A UTF-8
/// byte-order mark at its start (a list saved by a Windows editor) is not part of its first
/// line.
pub fn list_urls(text: &str) -> impl Iterator<Item = &str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .map(|l| l.trim_matches([' ', '\t', '\r']))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// `-K FILE`: the flags its lines give, as `--name=value` or `--name`, at the place of
/// `-K`; a `url` line is `--url=URL`, in order with the command line's URLs (as curl).
fn config_file(
    path: &str,
    opts: &Options,
    until: Option<std::time::Instant>,
) -> Result<Vec<OsString>, Refusal> {
    if is_stdin(path) {
        return Err(Refusal::Usage(format!(
            "-K {path}: flags are not read from stdin here; give a file"
        )));
    }
    let what = format!("config file {path}");
    let text = read_text(path, &what, until)?;
    // A byte-order mark at the start (a file saved by a Windows editor) is not part of the
    // first line.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut out = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        let at = |msg: String| format!("{what} line {}: {msg}", n + 1);
        let Some((name, value)) = config_line(line).map_err(at)? else {
            continue;
        };
        for (name, value) in bundle(&name, value, opts) {
            // The line's value is never quoted back, whichever check quotes it (a value of
            // one or two characters, a count, is too short to find in a message).
            let hide = |m: String| match &value {
                Some(v) if v.chars().count() >= 3 => m.replace(v.as_str(), crate::redact::MASK),
                _ => m,
            };
            config_option(&name, value.clone(), opts, &mut out).map_err(|e| match e {
                Refusal::Usage(m) => Refusal::Usage(at(hide(m))),
                other => other,
            })?;
        }
    }
    Ok(out)
}

/// A config line's short flags bundled as on the command line (`-sS`, `-fsSL`, `-sUu:pw`):
/// one (name, value) per flag; a flag that takes a value takes the rest of the bundle, or
/// the line's value when it comes last. Anything else is one option as written.
fn bundle(name: &str, value: Option<String>, opts: &Options) -> Vec<(String, Option<String>)> {
    let as_written = || vec![(name.to_string(), value.clone())];
    let Some(shorts) = name
        .strip_prefix('-')
        .filter(|s| !s.starts_with('-') && s.chars().count() > 1)
    else {
        return as_written();
    };
    let mut out = Vec::new();
    for (i, c) in shorts.char_indices() {
        let Some((_, takes)) = opts.short.get(&c) else {
            // Named alone, so that the error is about this flag, not the bundle's first.
            out.push((format!("-{c}"), None));
            return out;
        };
        let rest = &shorts[i + c.len_utf8()..];
        match (takes, rest.is_empty()) {
            (true, false) if value.is_none() => {
                out.push((format!("-{c}"), Some(rest.to_string())));
                return out;
            }
            (true, false) => return as_written(),
            (_, true) => out.push((format!("-{c}"), value.clone())),
            (false, false) => out.push((format!("-{c}"), None)),
        }
    }
    out
}

/// One option of a config file, added to `out`.
fn config_option(
    name: &str,
    value: Option<String>,
    opts: &Options,
    out: &mut Vec<OsString>,
) -> Result<(), Refusal> {
    {
        let long = option_name(name, opts)?;
        match (long.as_str(), opts.long.get(&long), value) {
            ("url", _, Some(v)) => out.push(format!("--url={v}").into()),
            ("config", _, _) => {
                return Err(Refusal::Usage(
                    "-K inside a config file is not followed: put its lines here".into(),
                ));
            }
            (_, Some(true), Some(v)) => {
                check_value(&long, &v)?;
                refused(&long, Some(&v))?;
                out.push(format!("--{long}={v}").into());
            }
            (_, Some(false), None) => {
                refused(&long, None)?;
                if long == "health-exit" {
                    // Docker's rule holds from this line on, for a later line's error too.
                    crate::exit::health_exit_from(&["".into(), "--health-exit".into()]);
                }
                out.push(format!("--{long}").into());
            }
            ("url", _, None) | (_, Some(true), None) => {
                return Err(Refusal::Usage(format!("--{long} needs a value")));
            }
            _ => return Err(Refusal::Usage(format!("--{long} takes no value"))),
        }
    }
    Ok(())
}

/// Runs the flag's own value parser on a config line's value, so a bad value is named with
/// its line. The parsers' messages mask what may be a secret (clap's own text, which
/// quotes the value, is not used).
fn check_value(long: &str, value: &str) -> Result<(), String> {
    use clap::error::{ContextKind, ContextValue};
    let probe = [
        "retry-http".to_string(),
        format!("--{long}={value}"),
        "http://h/".into(),
    ];
    let Err(e) = super::Cli::command().try_get_matches_from(probe) else {
        return Ok(());
    };
    let about_this_flag = matches!(
        e.get(ContextKind::InvalidArg),
        Some(ContextValue::String(a)) if a.starts_with(&format!("--{long} ")) || a == &format!("--{long}")
    );
    if !about_this_flag {
        return Ok(());
    }
    // A flag with a list of values (--exit-codes, --log-format...) names the list, as the
    // command line's error does, without the rejected value.
    let listed = match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) => Some(format!(
            "this value is not accepted [possible values: {}]",
            values.join(", ")
        )),
        _ => None,
    };
    let why = std::error::Error::source(&e)
        .map(ToString::to_string)
        .or(listed)
        .unwrap_or_else(|| "this value is not accepted".to_string());
    Err(format!("--{long}: {}", unquoted(&why)))
}

/// `msg` with every double-quoted part shown as `"***"`: a value read from a file is never
/// quoted back (a header line or a config line may hold a secret, and the parsers' own
/// messages quote what they reject, masking only what they know to be secret).
pub(crate) fn unquoted(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut parts = msg.split('"');
    out.extend(parts.next());
    let mut inside = true;
    for part in parts {
        out.push('"');
        out.push_str(if inside { crate::redact::MASK } else { part });
        inside = !inside;
    }
    out
}

/// A flag that is refused whatever else is given (curl's `http2-prior-knowledge`, `limit-rate`, ...): its
/// line, so the error names the file and the line as other config errors do.
fn refused(long: &str, value: Option<&str>) -> Result<(), String> {
    use clap::FromArgMatches;
    let flag = match value {
        Some(v) => format!("--{long}={v}"),
        None => format!("--{long}"),
    };
    let probe = ["retry-http".to_string(), flag, "http://h/".into()];
    let Ok(matches) = super::Cli::command().try_get_matches_from(probe) else {
        return Ok(());
    };
    let Ok(cli) = super::Cli::from_arg_matches(&matches) else {
        return Ok(());
    };
    cli.request.refusals()
}

/// The long name a config line's option stands for (`url` included); unknown names are
/// errors, quoted only when they look like an option's name (a stray secret does not).
fn option_name(name: &str, opts: &Options) -> Result<String, String> {
    let long = if let Some(l) = name.strip_prefix("--") {
        Some(l.to_string())
    } else if let Some(s) = name.strip_prefix('-') {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => opts.short.get(&c).map(|(l, _)| l.clone()),
            _ => None,
        }
    } else {
        Some(name.to_string())
    };
    match long {
        Some(l) if l == "url" || opts.long.contains_key(&l) => Ok(l),
        _ => {
            let typed = if name.starts_with('-') {
                name.to_string()
            } else {
                format!("--{name}")
            };
            if let Some(curl) = crate::cli::curl_names::find(&typed) {
                return Err(crate::cli::curl_names::unsupported(curl, &typed));
            }
            // Quoted only when it is a misspelt option (within two edits of one, `retyr`):
            // any other word may be a stray value, a token as likely as a name.
            let bare = name.trim_start_matches('-');
            let near = opts
                .long
                .keys()
                .filter(|known| within_two_edits(bare, known))
                .min();
            Err(match near {
                Some(known) if name.len() <= 32 => {
                    format!("unknown option {name:?} (did you mean --{known}?)")
                }
                _ => "unknown option (not quoted: it may be a value)".into(),
            })
        }
    }
}

/// Whether `a` becomes `b` by at most two insertions, deletions or substitutions
/// (Levenshtein distance), for names of up to 64 bytes.
fn within_two_edits(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() > 64 || b.len() > 64 || a.len().abs_diff(b.len()) > 2 {
        return false;
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()] <= 2
}

/// One line of a curl config file: `None` for a blank line or a `#` comment, else the
/// option as written and its value (`None`: none given). The value is `"..."` with `\`
/// escapes (`\t`, `\n`, `\r`, `\v`, any other character as itself), or a word.
fn config_line(line: &str) -> Result<Option<(String, Option<String>)>, String> {
    let line = line.strip_suffix('\r').unwrap_or(line).trim_start();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let end = line
        .find(|c: char| c.is_whitespace() || c == '=' || c == ':')
        .unwrap_or(line.len());
    let (name, rest) = line.split_at(end);
    let rest = rest.trim_start();
    let rest = rest.strip_prefix(['=', ':']).map_or(rest, str::trim_start);
    let (value, after) = if let Some(quoted) = rest.strip_prefix('"') {
        let (v, after) = unquote(quoted)?;
        (Some(v), after)
    } else {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (v, after) = rest.split_at(end);
        ((!v.is_empty()).then(|| v.to_string()), after)
    };
    let after = after.trim_start();
    if !(after.is_empty() || after.starts_with('#')) {
        return Err(format!(
            "text after the value of {name:?}: quote a value holding white space (\"...\")"
        ));
    }
    Ok(Some((name.to_string(), value)))
}

/// A quoted value, its opening quote already taken: the value and what follows the closing
/// quote.
fn unquote(s: &str) -> Result<(String, &str), String> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &s[i + 1..])),
            '\\' => match chars.next() {
                Some((_, 't')) => value.push('\t'),
                Some((_, 'n')) => value.push('\n'),
                Some((_, 'r')) => value.push('\r'),
                Some((_, 'v')) => value.push('\u{b}'),
                Some((_, other)) => value.push(other),
                None => break,
            },
            c => value.push(c),
        }
    }
    Err("a quoted value has no closing quote".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_is_quoted_only_when_it_is_a_misspelt_option() {
        let opts = Options::of_cli();
        let err = |n: &str| option_name(n, &opts).expect_err("unknown");
        assert_eq!(
            err("retyr-on"),
            "unknown option \"retyr-on\" (did you mean --retry-on?)"
        );
        for token in ["skkbad30", "ghp0abcdef", "correcthorse", "a1b2c3d4e5"] {
            let why = err(token);
            assert!(!why.contains(token), "{why}");
        }
        assert!(within_two_edits("atempts", "attempts"));
        assert!(!within_two_edits("abc", "url"));
    }

    fn line(s: &str) -> Option<(String, Option<String>)> {
        config_line(s).expect("parses")
    }

    #[test]
    fn config_lines_in_curls_forms() {
        assert_eq!(line("  # comment"), None);
        assert_eq!(line(""), None);
        assert_eq!(line("silent"), Some(("silent".into(), None)));
        assert_eq!(
            line("url = \"http://h/a b\""),
            Some(("url".into(), Some("http://h/a b".into())))
        );
        assert_eq!(
            line("header: X-A:b"),
            Some(("header".into(), Some("X-A:b".into())))
        );
        assert_eq!(
            line("-H \"X: \\\"q\\\" \\\\ \\t\"\r"),
            Some(("-H".into(), Some("X: \"q\" \\ \t".into())))
        );
        assert_eq!(
            line("--max-time 5 # five"),
            Some(("--max-time".into(), Some("5".into())))
        );
        assert_eq!(
            line("data = \"\""),
            Some(("data".into(), Some(String::new())))
        );
    }

    #[test]
    fn bad_config_lines_name_no_value() {
        let e = config_line("header = X-Key: hunter2").unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
        let e = config_line("header = \"X-Key: hunter2").unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[test]
    fn values_from_files_are_never_quoted_back() {
        assert_eq!(
            unquoted("invalid header \"Correct Horse ***\": expected Name: value"),
            "invalid header \"***\": expected Name: value"
        );
        assert_eq!(unquoted("no quotes at all"), "no quotes at all");
        assert_eq!(unquoted("a \"x\" and \"y\""), "a \"***\" and \"***\"");
    }

    #[test]
    fn only_arguments_that_may_expand_cost_the_scan() {
        let may = |v: &[&str]| may_expand(&os(v));
        assert!(!may(&[
            "retry-http",
            "-sS",
            "--deadline",
            "5s",
            "http://h/"
        ]));
        assert!(may(&["retry-http", "-sK", "f", "http://h/"]));
        assert!(may(&["retry-http", "--config=f", "http://h/"]));
        assert!(may(&["retry-http", "-H", "@h.txt", "http://h/"]));
        assert!(may(&["retry-http", "-H@h.txt", "http://h/"]));
    }

    #[test]
    fn bundled_short_flags_in_a_config_line() {
        let opts = Options::of_cli();
        let names = |name: &str, value: Option<&str>| -> Vec<(String, Option<String>)> {
            bundle(name, value.map(String::from), &opts)
        };
        let s = |x: &str| x.to_string();
        assert_eq!(
            names("-fsSL", None),
            [
                (s("-f"), None),
                (s("-s"), None),
                (s("-S"), None),
                (s("-L"), None)
            ]
        );
        assert_eq!(
            names("-so", Some("f")),
            [(s("-s"), None), (s("-o"), Some(s("f")))]
        );
        assert_eq!(
            names("-sofile", None),
            [(s("-s"), None), (s("-o"), Some(s("file")))]
        );
        assert_eq!(names("-sU", None), [(s("-s"), None), (s("-U"), None)]);
        assert_eq!(names("--silent", None), [(s("--silent"), None)]);
    }

    #[test]
    fn option_names() {
        let opts = Options::of_cli();
        assert_eq!(option_name("-H", &opts).unwrap(), "header");
        assert_eq!(option_name("--silent", &opts).unwrap(), "silent");
        assert_eq!(option_name("url", &opts).unwrap(), "url");
        assert!(
            option_name("atempts", &opts)
                .unwrap_err()
                .contains("atempts")
        );
        let e = option_name("Bearer_s3cr3t", &opts).unwrap_err();
        assert!(!e.contains("s3cr3t"), "{e}");
    }

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn options_are_found_in_every_form() {
        let opts = Options::of_cli();
        let mut seen = Vec::new();
        let args = os(&[
            "retry-http",
            "-sKa",
            "--config",
            "b",
            "--config=c",
            "-d",
            "-K",
            "-K",
            "d",
            "--",
            "-K",
            "e",
        ]);
        let out = rewrite(args, &opts, &mut |long, value| {
            if long == "config" {
                seen.push(value.to_string());
                Ok(Some(vec![]))
            } else {
                Ok(None)
            }
        })
        .unwrap();
        assert_eq!(seen, ["a", "b", "c", "d"]);
        assert_eq!(out, os(&["retry-http", "-s", "-d", "-K", "--", "-K", "e"]));
    }
}
