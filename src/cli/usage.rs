//! clap's errors, turned into the tool's own usage error: one line (`retry-http: error:
//! ...; see --help`), every quoted value masked by what it is, the variable named when a
//! bad value came from `RETRY_HTTP_*`, and with the JSON log an error object and a summary
//! object (exit 2 either way). Help and version pass through to stdout.

use crate::exit::Outcome;
use crate::redact;
use crate::{cli, report};
use std::ffi::OsString;
use std::time::Instant;

/// Whether the command line asks for the JSON log. clap's errors come before its parse is
/// done, so this reads the raw arguments: the last `--log-format FORMAT` or
/// `--log-format=FORMAT` before `--` decides, else `$RETRY_HTTP_LOG_FORMAT` (as clap reads
/// them: exactly `json`). A flag given without a usable value means text. The subcommands
/// (`demo`, `simulate`, `help`) have no JSON log.
fn json_requested(args: &[OsString]) -> bool {
    let args: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if args
        .first()
        .is_some_and(|a| matches!(a.as_str(), "demo" | "simulate" | "help"))
    {
        return false;
    }
    let mut given: Option<Option<&str>> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            break;
        }
        if a == "--log-format" {
            given = Some(args.get(i + 1).map(String::as_str));
            i += 2;
            continue;
        }
        if let Some(v) = a.strip_prefix("--log-format=") {
            given = Some(Some(v));
        }
        i += 1;
    }
    match given {
        Some(v) => v == Some("json"),
        None => std::env::var_os("RETRY_HTTP_LOG_FORMAT").is_some_and(|v| v == "json"),
    }
}

/// What a quoted argument is, which says how it is masked.
#[derive(Clone, Copy)]
enum Kind {
    /// The value of `-H`: masked as a header that did not parse.
    Header,
    /// The value of `-u`: masked as credentials.
    User,
    /// The value of `--oauth2-bearer`: masked whole.
    Secret,
    /// Anything else: masked as a URL (only a userinfo, a query or a fragment changes).
    Other,
}

fn mask(kind: Kind, v: &str) -> String {
    match kind {
        Kind::Header => redact::header_arg(v),
        Kind::User => redact::credentials(v),
        Kind::Secret if v.is_empty() => String::new(),
        Kind::Secret => redact::MASK.to_string(),
        Kind::Other => redact::url_text(v),
    }
}

/// clap quotes rejected values as they were typed. Each is masked by what it is: the value
/// of `-H` as a header that did not parse, of `-u` as credentials, anything else as a URL
/// (which changes only what looks like a userinfo, a query or a fragment). The rejected
/// value is masked first; then every argument, wherever clap quotes it (an extra
/// positional, a conflict, ...).
fn mask_clap_text(text: &str, e: &clap::Error, args: &[OsString]) -> String {
    let mut pairs: Vec<(String, String)> = rejected_value(e).into_iter().collect();
    pairs.extend(argument_pairs(args));
    pairs.retain(|(raw, masked)| !raw.is_empty() && raw != masked);
    let variants = quoted_variants(&pairs);
    pairs.extend(variants);
    // The longest first, so a value inside a longer one is not masked half.
    pairs.sort_by_key(|(raw, _)| std::cmp::Reverse(raw.len()));
    pairs.iter().fold(text.to_string(), |acc, (raw, masked)| {
        acc.replace(raw.as_str(), masked)
    })
}

/// A word clap found no place for (`GET URL WORD`, a token whose flag was lost) is not
/// quoted back: it may be a secret. A stray flag (`--x`) is shown, as it is no value.
fn stray_word_masked(text: &str) -> String {
    const STRAY: &str = "unexpected value '";
    let Some(start) = text.find(STRAY).map(|i| i + STRAY.len()) else {
        return text.to_string();
    };
    match text[start..].find("' for ") {
        Some(len) if !text[start..].starts_with('-') => {
            format!("{}{}{}", &text[..start], redact::MASK, &text[start + len..])
        }
        _ => text.to_string(),
    }
}

/// The value clap rejected, with its masked form.
fn rejected_value(e: &clap::Error) -> Option<(String, String)> {
    use clap::error::{ContextKind, ContextValue};
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) else {
        return None;
    };
    let kind = if arg.starts_with("--header") {
        Kind::Header
    } else if arg.starts_with("--user") {
        Kind::User
    } else {
        Kind::Other
    };
    Some((value.clone(), mask(kind, value)))
}

/// Every argument (program name excepted) with its masked form: the value of `-H`/`-u`,
/// given apart or attached (`-Hv`, `--header=v`), and also the whole attached argument.
fn argument_pairs(args: &[OsString]) -> Vec<(String, String)> {
    let args: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut pairs = Vec::new();
    let mut next = Kind::Other;
    for a in &args {
        let (kind, value) = match (next, a.as_str()) {
            (Kind::Header | Kind::User | Kind::Secret, v) => (next, v),
            (_, v) if v.starts_with("--oauth2-bearer=") => {
                (Kind::Secret, &v["--oauth2-bearer=".len()..])
            }
            (_, v) if v.starts_with("--header=") => (Kind::Header, &v["--header=".len()..]),
            (_, v) if v.starts_with("--user=") => (Kind::User, &v["--user=".len()..]),
            (_, v) if v.starts_with("-H") && v.len() > 2 => (Kind::Header, &v[2..]),
            (_, v) if v.starts_with("-u") && v.len() > 2 => (Kind::User, &v[2..]),
            (_, v) => (Kind::Other, v),
        };
        next = match a.as_str() {
            "-H" | "--header" => Kind::Header,
            "-u" | "--user" => Kind::User,
            "--oauth2-bearer" => Kind::Secret,
            _ => Kind::Other,
        };
        pairs.push((value.to_string(), mask(kind, value)));
        if value != a {
            pairs.push((
                a.clone(),
                format!("{}{}", &a[..a.len() - value.len()], mask(kind, value)),
            ));
        }
    }
    pairs
}

/// The other forms in which clap may quote a value: value parsers quote with `{:?}`, so a
/// value holding quotes or controls appears escaped; clap strips control characters and
/// escape sequences from what it quotes. Forms already among `pairs` are left out.
fn quoted_variants(pairs: &[(String, String)]) -> Vec<(String, String)> {
    let escaped = |s: &str| {
        let d = format!("{s:?}");
        d[1..d.len() - 1].to_string()
    };
    let stripped = |s: &str| anstream::adapter::strip_str(s).to_string();
    pairs
        .iter()
        .flat_map(|(raw, masked)| {
            [
                (escaped(raw), escaped(masked)),
                (stripped(raw), stripped(masked)),
            ]
        })
        .filter(|(raw, _)| !raw.is_empty() && !pairs.iter().any(|(r, _)| r == raw))
        .collect()
}

/// Help and version go to stdout with exit 0 (no summary: nothing ran); anything else is
/// one usage line (exit 2), or with the JSON log an error object and a summary object.
pub(crate) fn clap_error(e: &clap::Error, args: &[OsString], start: Instant) -> Outcome {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayVersion | ErrorKind::DisplayHelp) {
        bound_by_deadline(args, start);
    }
    if e.kind() == ErrorKind::DisplayVersion {
        let _ = e.print();
        return Outcome::Success;
    }
    if e.kind() == ErrorKind::DisplayHelp {
        let help = cli::target_shown(&e.render().ansi().to_string());
        let mut out = anstream::stdout();
        let _ = std::io::Write::write_all(&mut out, help.as_bytes());
        return Outcome::Success;
    }
    if let Some(line) = curl_flag_line(e) {
        return usage_line(&line, args, start);
    }
    // clap quotes the rejected value: a secret in it must not be printed.
    let text = mask_clap_text(&cli::target_shown(&e.to_string()), e, args);
    let text = stray_word_masked(&text);
    // clap writes paragraphs: the error, an optional tip, usage, a pointer to --help.
    let mut paragraphs = text.split("\n\n");
    let first = paragraphs.next().unwrap_or("invalid command line");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // clap breaks its own lines with an indent; join those. A value holding CR or LF is
    // escaped, so the message stays on one line.
    let first = first
        .replace("\n  ", " ")
        .replace('\r', "\\r")
        .replace('\n', "\\n");
    let first = match env_source(e) {
        Some(var) => format!("{first} (the value comes from ${var})"),
        None => first,
    };
    // clap's tip to pass a flag as a value after `--` misleads (such a word would be a
    // second URL): only the others are kept.
    let tips: Vec<&str> = paragraphs
        .flat_map(str::lines)
        .map(str::trim)
        .filter(|l| l.starts_with("tip:") && !l.contains("as a value, use '--"))
        .collect();
    let message = match tips.as_slice() {
        [] => first,
        tips => format!("{first} ({})", tips.join("; ")),
    };
    usage_line(&message, args, start)
}

/// An unknown argument that is one of curl's flags gets its own line (what it is, why it is
/// not supported here), never clap's tip for a similar flag of this tool.
fn curl_flag_line(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    if !typed.starts_with('-') {
        return None;
    }
    let name = cli::curl_names::find(typed)?;
    Some(cli::curl_names::unsupported(name, typed))
}

/// `--help` and `--version` are no runs, but a deadline typed on the command line (or in
/// `RETRY_HTTP_DEADLINE`) bounds their writing too: a stdout nobody reads ends them with
/// exit 5 at the deadline.
pub(crate) fn bound_by_deadline(args: &[OsString], start: Instant) {
    use crate::process::deadline;
    if let Some(d) = cli::config_file::typed_deadline(args).filter(|d| !d.is_zero()) {
        let until = (start + d).max(Instant::now() + deadline::LAST_WORDS);
        deadline::exit_by(until, Outcome::Deadline.code());
    }
}

/// A usage error found before clap parses (in a `-K` file, a `-H @FILE`): `message` on one
/// line (`; see --help` added), or with the JSON log an error object and a summary object.
/// Exit 2; nothing was sent. The lines wait on their reader until the deadline typed on the
/// command line, or for `USAGE_WORDS` without one (see `process::deadline`).
pub(crate) fn usage_line(message: &str, args: &[OsString], start: Instant) -> Outcome {
    let deadline = cli::config_file::typed_deadline(args).filter(|d| !d.is_zero());
    crate::process::deadline::bound_usage_error(deadline.map(|d| start + d));
    let json = json_requested(args);
    let format = if json {
        cli::LogFormat::Json
    } else {
        cli::LogFormat::Text
    };
    let reporter = report::Reporter::new(crate::report::LogConfig::plain(format));
    let suffix = crate::exit::usage_suffix();
    reporter.error(&format!("{message}; see --help{suffix}"));
    if json {
        let elapsed = start.elapsed();
        reporter.summary(Outcome::Usage, 0, elapsed, 0, "nothing sent", Some(message));
    }
    Outcome::Usage
}

/// The deadline passed while `what` (a `-K` or `-H @` file) was still being read: exit 5,
/// nothing sent, with the summary the log format asks for.
pub(crate) fn deadline_line(what: &str, args: &[OsString], start: Instant) -> Outcome {
    // The deadline has passed: the summary gets its last few milliseconds.
    let until = Instant::now() + crate::process::deadline::LAST_WORDS;
    crate::process::deadline::exit_by(until, Outcome::Deadline.code());
    let format = if json_requested(args) {
        cli::LogFormat::Json
    } else {
        cli::LogFormat::Text
    };
    let reporter = report::Reporter::new(crate::report::LogConfig::plain(format));
    let why = format!("nothing sent: {what} was still being read");
    reporter.summary(Outcome::Deadline, 0, start.elapsed(), 0, &why, Some(&why));
    Outcome::Deadline
}

/// The last words of a run that a signal ends while it still reads a `-K` file or a URL
/// list (stdin still being written, a FIFO): the summary, with the signal's outcome,
/// that nothing was sent. The handler writes it and exits with the signal's status (see
/// `process::interrupt`).
pub(crate) fn interrupted_reading(
    args: &[OsString],
    start: Instant,
) -> impl FnOnce(crate::process::interrupt::Signal) + Send + 'static {
    let format = match json_requested(args) {
        true => cli::LogFormat::Json,
        false => cli::LogFormat::Text,
    };
    move |sig| {
        let why = "nothing sent: a -K file or a URL list was still being read";
        // Our own words only: not masked (see `report::forced_line`).
        let line = report::forced_line(
            format,
            sig.outcome(),
            (0, start.elapsed(), 0),
            why,
            "stopping: interrupted",
            (None, report::StateUse::None),
        );
        crate::process::deadline::last_line(&line);
    }
}

/// The `RETRY_HTTP_*` variable a bad value came from, if it came from one.
fn env_source(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) else {
        return None;
    };
    let flag = arg.strip_prefix("--")?.split([' ', '=']).next()?;
    let var = format!("RETRY_HTTP_{}", flag.to_ascii_uppercase().replace('-', "_"));
    (std::env::var(&var).ok().as_deref() == Some(value.as_str())).then_some(var)
}
