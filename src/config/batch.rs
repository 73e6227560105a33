//! The URLs of a run and where each one's body goes, checked before anything is sent: the
//! positional words and `--url` values in command-line order, with the METHOD rule
//! ([`targets`]); every URL parsed, an error naming its place ("URL 3 of 12") when there
//! are several ([`urls`]); `-o` and `-O` paired with the URLs in order,
//! `--remote-name-all`, `--output-dir`, and two transfers writing one file refused
//! ([`outputs`]); the flags that make no sense for several transfers refused
//! ([`several`]); and the schedule (`-Z`, `--parallel-max`, `--parallel-max-host`,
//! `--rate`, `--fail-early`). Nothing here does I/O.

use super::{BatchConfig, Rate, Transfer, UsageError, destination, usage};
use crate::cli::RequestArgs;
use crate::cli::batch::{OutputAt, UrlAt};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use url::Url;

/// Splits the URL words (positionals and `--url` values, in command-line order) into an
/// optional METHOD and the URLs. With two words or more, the first is the METHOD when it
/// is a positional standing before every URL and looks like one ([`looks_like_method`]);
/// a word alone is a URL. A positional METHOD and `-X` together are an error.
pub(super) fn targets(a: &RequestArgs) -> Result<(Option<&str>, Typed<'_>), UsageError> {
    let first: Vec<(bool, &str)> = words(a).take(2).collect();
    let method = match first.as_slice() {
        [first, _] if first.0 && looks_like_method(first.1) => Some(first.1),
        _ => None,
    };
    if method.is_some() && a.request.method.is_some() {
        return usage("the method is given twice (-X and a positional METHOD): give one");
    }
    let skip = usize::from(method.is_some());
    let n = words(a).count() - skip;
    if n == 0 {
        return usage("no URL given: expected [METHOD] URL...");
    }
    Ok((method, Typed { a, skip, n }))
}

/// The URLs of a run as typed, in order: the URL words after the METHOD, if any (see
/// [`targets`]). Read from the flags whenever they are gone through, not collected: a list
/// of many URLs is held once.
#[derive(Clone, Copy)]
pub(super) struct Typed<'a> {
    /// The flags the words are in.
    a: &'a RequestArgs,
    /// 1 when the first word is the METHOD.
    skip: usize,
    /// How many URLs.
    n: usize,
}

impl<'a> Typed<'a> {
    /// How many URLs (at least one).
    pub(super) fn len(&self) -> usize {
        self.n
    }

    /// The URLs as typed, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &'a str> + 'a {
        words(self.a).skip(self.skip).map(|(_, w)| w)
    }
}

/// The URL words in command-line order, each with whether it is a positional; a `--url
/// @FILE` list stands in its place as its URLs (see [`flag_words`]). The order
/// `cli::parse` recorded, or (for arguments parsed otherwise) the positionals first.
fn words<'a>(a: &'a RequestArgs) -> Box<dyn Iterator<Item = (bool, &'a str)> + 'a> {
    let (target, flag) = (&a.target, &a.destination.request.url);
    let order = &a.batch.order.urls;
    let positional = |w: &'a String| (true, w.as_str());
    let flagged = move |w: &'a String| flag_words(a, w).map(|w| (false, w));
    if order.len() != target.len() + flag.len() {
        return Box::new(
            target
                .iter()
                .map(positional)
                .chain(flag.iter().flat_map(flagged)),
        );
    }
    Box::new(
        order
            .iter()
            .flat_map(move |at| -> Box<dyn Iterator<Item = _>> {
                match *at {
                    UrlAt::Positional(i) => Box::new(target.get(i).map(positional).into_iter()),
                    UrlAt::Flag(i) => Box::new(flag.get(i).into_iter().flat_map(flagged)),
                }
            }),
    )
}

/// Every URL word, positionals and `--url` values with the lists' URLs, in no particular
/// order (for marking them secret).
pub(super) fn every_word(a: &RequestArgs) -> impl Iterator<Item = &str> {
    let flags = a.destination.request.url.iter();
    let positionals = a.target.iter().map(String::as_str);
    positionals.chain(flags.flat_map(|w| flag_words(a, w)))
}

/// The URLs a `--url` value stands for: those of list N for `@N` when `--url @FILE` made
/// list N (`cli::config_file::Expanded::lists`), else the value itself.
fn flag_words<'a>(a: &'a RequestArgs, w: &'a str) -> Box<dyn Iterator<Item = &'a str> + 'a> {
    let list = w
        .strip_prefix('@')
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| a.batch.lists.get(n));
    match list {
        Some(text) => Box::new(crate::cli::config_file::list_urls(text)),
        None => Box::new(std::iter::once(w)),
    }
}

/// Whether a word before the URLs is a METHOD: an HTTP token in capitals (digits, `-` and
/// `_` allowed) with no `.` (`GET`, `VERSION-CONTROL`); a host name (`localhost`,
/// `a.example`) or `host:port` is not.
pub fn looks_like_method(w: &str) -> bool {
    crate::cli::values::is_token(w)
        && !w.contains('.')
        && w.bytes().any(|b| b.is_ascii_uppercase())
        && !w.bytes().any(|b| b.is_ascii_lowercase())
}

/// `e` with the place of URL `i` (0-based) of `n` in front, when there are several.
pub(super) fn placed(i: usize, n: usize, e: UsageError) -> UsageError {
    if n < 2 {
        return e;
    }
    UsageError(format!("URL {} of {n}: {}", i + 1, e.0))
}

/// Every URL parsed and checked as [`super::url`] checks one, in order, each the URL of a
/// transfer whose output is not chosen yet (see [`outputs`]); the first bad one is the
/// error, with its place. Among several, a bare word (see [`bare`]) is refused.
pub(super) fn urls<'a>(
    typed: impl Iterator<Item = &'a str>,
    n: usize,
) -> Result<Vec<Transfer>, UsageError> {
    // Checked on every core (a long list); the first bad URL in the list's order is the
    // error, whichever thread found it.
    let checked = super::spread::each(typed, n, |t| {
        if n > 1 && bare(t) {
            return Err(match super::request::known_method_in_any_case(t) {
                Some(m) => Bad::Method(t, m),
                // Not quoted: it may be a secret that lost its flag.
                None => Bad::Word,
            });
        }
        let url = super::url(t).map_err(Bad::Url)?;
        // The secrets its user information makes, marked now (see `userinfo_token`).
        super::network::userinfo_token(&url);
        Ok(Transfer { url, output: None })
    });
    checked.map_err(|(i, bad)| {
        let e = match bad {
            Bad::Method(t, m) => misplaced_method(t, &m, i),
            Bad::Word => UsageError(BARE.into()),
            Bad::Url(e) => e,
        };
        placed(i, n, e)
    })
}

/// Why a URL word was refused, before its place is known.
enum Bad<'a> {
    /// A method's name where a URL goes: the word and the method.
    Method(&'a str, String),
    /// A bare word among several URLs.
    Word,
    /// A URL that does not parse or is not taken.
    Url(UsageError),
}

/// Why a method's name (`m`, in capitals) typed as `word` at place `i` among the URL words
/// is not taken for the method: written in small letters (`get URL`), or after the URL
/// (`URL POST`).
fn misplaced_method(word: &str, m: &str, i: usize) -> UsageError {
    if i == 0 {
        UsageError(format!(
            "{word:?} is read as a host, not as the method {m}: methods are case-sensitive (RFC 9110 section 9.1), so write {m} URL (or -X {m})"
        ))
    } else {
        UsageError(format!(
            "{word:?} after a URL is read as a host, not as the method {m}: give the method first ({m} URL) or as -X {m}"
        ))
    }
}

/// Why a bare word is refused among several URLs.
const BARE: &str = "a bare word (no scheme, '.', ':' or '/'; not quoted) is not taken for a host among several URLs: it is more likely a value that lost its flag (-H 'Authorization: Bearer' TOKEN); write http://NAME/ for a host of that name";

/// A word with no scheme, `.`, `:`, `/`, `@` or `[`, other than `localhost`: the host
/// name curl would make of it is a single label (`web`), but among several URLs such a
/// word is far more often a token or a value whose flag was lost (`-H 'Authorization:
/// Bearer' TOKEN URL`); taken for a host, it would be looked up and logged.
fn bare(w: &str) -> bool {
    !w.eq_ignore_ascii_case("localhost") && !w.contains(['.', ':', '/', '@', '['])
}

/// The flags that make no sense for several transfers, refused with what to do instead
/// (`n`: the number of URLs). `-T` uploads one file; `--etag-save` and `--etag-compare`
/// keep one ETag; `-D FILE` would be replaced by each transfer's head (`-D -` writes
/// each head before its body, so it is allowed).
pub(super) fn several(a: &RequestArgs, n: usize) -> Result<(), UsageError> {
    if n < 2 {
        return Ok(());
    }
    if a.protocols.request.upload_file.is_some() {
        return usage(format!(
            "-T uploads one file to one URL, and {n} URLs are given: run retry-http once per upload"
        ));
    }
    let c = &a.conditional;
    for (flag, given) in [
        ("--etag-save", c.etag_save.is_some()),
        ("--etag-compare", c.etag_compare.is_some()),
    ] {
        if given {
            return usage(format!(
                "{flag} keeps the ETag of one URL, and {n} URLs are given: run retry-http once per URL"
            ));
        }
    }
    if a.output
        .dump_header
        .as_ref()
        .is_some_and(|p| p.as_os_str() != "-")
    {
        return usage(format!(
            "-D FILE keeps the head of one URL, and {n} URLs are given: use -D - (each head before its body) or run once per URL"
        ));
    }
    Ok(())
}

/// Where each URL's body goes (`None`: stdout), set in each of `transfers`. With one URL,
/// as before several were accepted: the last `-o`, or `-O`'s name (`-o` and `-O` together
/// are an error), of its URL (the URL sent, `-T`'s file name included). With several, each
/// `-o` and `-O` goes with the next URL in command-line order, `--remote-name-all` names
/// those left, and more outputs than URLs is an error. `--output-dir` applies to relative
/// paths and names. Two transfers writing one file are refused.
pub(super) fn outputs(a: &RequestArgs, transfers: &mut [Transfer]) -> Result<(), UsageError> {
    let saved = &a.destination.output;
    let n = transfers.len();
    if let [one] = transfers {
        let remote = !saved.remote_name.is_empty();
        let given = a.output.output.last().cloned();
        one.output = match (given, remote || saved.remote_name_all) {
            (None, true) => destination::output_path(None, true, saved, &one.url)?,
            (given, _) => destination::output_path(given, remote, saved, &one.url)?,
        };
        return Ok(());
    }
    let order = output_order(a);
    if order.len() > n {
        return usage(format!(
            "{} outputs (-o, -O) are given for {n} URLs: give at most one per URL, in URL order",
            order.len(),
        ));
    }
    for (i, t) in transfers.iter_mut().enumerate() {
        let (file, remote) = match order.get(i) {
            Some(OutputAt::File(k)) => (a.output.output.get(*k).cloned(), false),
            Some(OutputAt::RemoteName) => (None, true),
            None => (None, saved.remote_name_all),
        };
        t.output =
            destination::output_path(file, remote, saved, &t.url).map_err(|e| placed(i, n, e))?;
    }
    distinct(transfers)
}

/// The `-o` and `-O` flags in command-line order (as `cli::parse` recorded it, or every
/// `-o` then every `-O` for arguments parsed otherwise).
fn output_order(a: &RequestArgs) -> Vec<OutputAt> {
    let (files, remote) = (
        a.output.output.len(),
        a.destination.output.remote_name.len(),
    );
    let order = &a.batch.order.outputs;
    if order.len() == files + remote {
        return order.clone();
    }
    (0..files)
        .map(OutputAt::File)
        .chain((0..remote).map(|_| OutputAt::RemoteName))
        .collect()
}

/// Two transfers writing one file would overwrite each other (curl does not check): an
/// error naming both places. stdout (`-`) and `/dev/null` may be shared. Paths are compared
/// as written, `.` components and repeated slashes aside, relative ones from the current
/// folder.
fn distinct(transfers: &[Transfer]) -> Result<(), UsageError> {
    let here = std::env::current_dir().ok();
    let mut seen: HashMap<PathBuf, usize> = HashMap::new();
    let n = transfers.len();
    for (i, t) in transfers.iter().enumerate() {
        let Some(p) = t.output.as_deref().filter(|p| !shareable(p)) else {
            continue;
        };
        let key = normal(here.as_deref(), p);
        if let Some(first) = seen.insert(key, i) {
            return usage(format!(
                "URL {} and URL {} of {n} both write {}: they would overwrite each other; give each its own -o",
                first + 1,
                i + 1,
                p.display()
            ));
        }
    }
    Ok(())
}

/// Outputs that several transfers may share: stdout and `/dev/null`.
fn shareable(p: &Path) -> bool {
    p.as_os_str() == "-" || p == Path::new("/dev/null")
}

/// `p` without `.` components (and the repeated slashes `components` drops), under
/// `here` when relative.
fn normal(here: Option<&Path>, p: &Path) -> PathBuf {
    let kept = p.components().filter(|c| *c != Component::CurDir);
    match here {
        Some(h) if p.is_relative() => h.components().chain(kept).collect(),
        _ => kept.collect(),
    }
}

/// The checks every transfer's URL gets that the request's own URL got while the request
/// was made: the scheme `--proto` allows, and the address family of `-4`/`-6`.
fn per_url(a: &RequestArgs, i: usize, n: usize, url: &Url) -> Result<(), UsageError> {
    let check = || -> Result<(), UsageError> {
        if a.protocols.request.proto.is_some() {
            super::protocols::protocols(a, url)?;
        }
        destination::family(a, url)?;
        Ok(())
    };
    check().map_err(|e| placed(i, n, e))
}

/// With `-C -` or `-R`, every transfer of several must write a file: stdout can be neither
/// resumed nor given a time.
fn each_writes_a_file(
    conditional: &super::conditional::ConditionalConfig,
    transfers: &[Transfer],
) -> Result<(), UsageError> {
    let flag = match (conditional.resume, conditional.remote_time) {
        (true, _) => "-C -",
        (_, true) => "-R",
        _ => return Ok(()),
    };
    let n = transfers.len();
    match transfers
        .iter()
        .position(|t| t.output.as_deref().is_none_or(|p| p.as_os_str() == "-"))
    {
        Some(i) if n > 1 => usage(format!(
            "URL {} of {n} goes to stdout, and {flag} applies to each transfer's file: give every URL an -o or -O (or --remote-name-all)",
            i + 1
        )),
        _ => Ok(()),
    }
}

/// The transfers of the run and their schedule: `list` as typed and parsed (see
/// [`urls`]), the first URL replaced by the request's (`sent`: with `-G`'s data and `-T`'s
/// file name), the others given `-G`'s inline data (`added`) and checked as the request's
/// was; each one's output (see [`outputs`]). The list is finished where it stands: a
/// list of many URLs is never held twice.
pub(super) fn transfers(
    a: &RequestArgs,
    sent: Url,
    mut list: Vec<Transfer>,
    added: Option<&[u8]>,
    conditional: &super::conditional::ConditionalConfig,
) -> Result<BatchConfig, UsageError> {
    let n = list.len();
    if let Some(first) = list.first_mut() {
        first.url = sent;
    }
    for (i, t) in list.iter_mut().enumerate().skip(1) {
        if let Some(data) = added {
            super::append_query(&mut t.url, data);
        }
        per_url(a, i, n, &t.url)?;
    }
    outputs(a, &mut list)?;
    each_writes_a_file(conditional, &list)?;
    Ok(schedule(a, list))
}

/// The schedule of the run: `transfers` (the first the request's), and the scheduling
/// flags.
fn schedule(a: &RequestArgs, transfers: Vec<Transfer>) -> BatchConfig {
    let b = &a.batch;
    BatchConfig {
        transfers: transfers.into_boxed_slice(),
        parallel: b.parallel,
        parallel_max: usize::try_from(b.parallel_max).unwrap_or(super::PARALLEL_MAX),
        parallel_max_host: usize::try_from(b.parallel_max_host).unwrap_or(super::PARALLEL_MAX_HOST),
        fail_early: b.fail_early,
        rate: b.rate.map(|r| Rate {
            count: r.count,
            per: r.per,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::args_of as args;
    use super::*;

    fn urls_of(typed: &[&String]) -> Result<Vec<Transfer>, UsageError> {
        urls(typed.iter().map(|t| t.as_str()), typed.len())
    }

    fn split(line: &[&str]) -> Result<(Option<String>, Vec<String>), UsageError> {
        let a = args(line);
        let (m, u) = targets(&a)?;
        Ok((m.map(String::from), u.iter().map(String::from).collect()))
    }

    fn ok(m: Option<&str>, urls: &[&str]) -> Result<(Option<String>, Vec<String>), UsageError> {
        Ok((
            m.map(String::from),
            urls.iter().map(|u| u.to_string()).collect(),
        ))
    }

    /// The first of two words or more is a METHOD only when in capitals with no `.`, `:`
    /// or `/`, and before every URL.
    #[test]
    fn the_method_rule() {
        assert_eq!(
            split(&["GET", "a.example", "b.example"]),
            ok(Some("GET"), &["a.example", "b.example"])
        );
        assert_eq!(
            split(&["localhost:8080", "b"]),
            ok(None, &["localhost:8080", "b"])
        );
        assert_eq!(
            split(&["POST", "http://h/"]),
            ok(Some("POST"), &["http://h/"])
        );
        assert_eq!(split(&["GET"]), ok(None, &["GET"]));
        assert_eq!(
            split(&["get", "http://h/"]),
            ok(None, &["get", "http://h/"])
        );
        assert_eq!(
            split(&["A.B", "http://h/"]),
            ok(None, &["A.B", "http://h/"])
        );
        assert_eq!(
            split(&["VERSION-CONTROL", "h"]),
            ok(Some("VERSION-CONTROL"), &["h"])
        );
        assert_eq!(split(&["PUT", "--url", "h"]), ok(Some("PUT"), &["h"]));
        assert_eq!(split(&["--url", "h", "PUT"]), ok(None, &["h", "PUT"]));
        assert_eq!(
            split(&["--url", "a", "b", "--url", "c"]),
            ok(None, &["a", "b", "c"])
        );
        assert!(split(&["-X", "GET", "POST", "http://h/"]).is_err());
        assert!(
            looks_like_method("M-SEARCH") && !looks_like_method("Get") && !looks_like_method("1")
        );
    }

    /// In a list long enough to be checked on several threads, the error is still the
    /// first bad URL in the list's order, whichever kind of refusal each one is.
    #[test]
    fn a_long_list_names_its_first_bad_url() {
        let n = 40_000;
        for (first, later) in [
            ("ftp://c/", "get"),
            ("get", "ftp://c/"),
            ("token", "http://"),
        ] {
            let mut words: Vec<String> = (0..n).map(|i| format!("http://h/{i}")).collect();
            words[30_001] = first.to_string();
            words[30_002] = later.to_string();
            words[39_999] = "ftp://late/".to_string();
            let refs: Vec<&String> = words.iter().collect();
            let e = urls_of(&refs).expect_err(first);
            assert!(e.0.starts_with("URL 30002 of 40000: "), "{}", e.0);
        }
        let words: Vec<String> = (0..n).map(|i| format!("http://h/{i}")).collect();
        let refs: Vec<&String> = words.iter().collect();
        let list = urls_of(&refs).expect("all good");
        assert!(
            list.iter()
                .enumerate()
                .all(|(i, t)| t.url.path() == format!("/{i}"))
        );
    }

    /// A bad URL names its place among several; alone, it does not.
    #[test]
    fn a_bad_url_is_named_by_its_place() {
        let (a, b, bad) = (
            "http://a/".to_string(),
            "http://b/".to_string(),
            "ftp://c/".to_string(),
        );
        let e = urls_of(&[&a, &b, &bad]).expect_err("ftp");
        assert!(e.0.starts_with("URL 3 of 3: "), "{}", e.0);
        let e = urls_of(&[&bad]).expect_err("ftp");
        assert!(e.0.starts_with("unsupported URL scheme"), "{}", e.0);
        let secret = "http://u:pw7secret@exa mple/".to_string();
        let e = urls_of(&[&a, &secret]).expect_err("a space");
        assert!(
            e.0.starts_with("URL 2 of 2: ") && !e.0.contains("pw7secret"),
            "{}",
            e.0
        );
        // A bare word among several is refused, unquoted; alone (or localhost) it is a host.
        let (word, host) = ("SKtoken9".to_string(), "localhost".to_string());
        let e = urls_of(&[&a, &word]).expect_err("a bare word");
        assert!(e.0.starts_with("URL 2 of 2: a bare word"), "{}", e.0);
        assert!(!e.0.contains("SKtoken9"), "{}", e.0);
        assert!(urls_of(&[&word]).is_ok() && urls_of(&[&host, &a]).is_ok());
    }

    fn paths(line: &[&str]) -> Result<Vec<Option<PathBuf>>, UsageError> {
        let a = args(line);
        let (_, typed) = targets(&a)?;
        let mut parsed = urls(typed.iter(), typed.len())?;
        outputs(&a, &mut parsed)?;
        Ok(parsed.into_iter().map(|t| t.output).collect())
    }

    fn some(p: &[Option<&str>]) -> Result<Vec<Option<PathBuf>>, UsageError> {
        Ok(p.iter().map(|p| p.map(PathBuf::from)).collect())
    }

    /// `-o` and `-O` pair with the URLs in order, wherever they stand; the others go to
    /// stdout, or take their remote names with `--remote-name-all`.
    #[test]
    fn outputs_pair_with_urls_in_order() {
        let (a, b, c) = ("http://h/a.txt", "http://h/b.txt", "http://h/c.txt");
        assert_eq!(paths(&["-o", "x", a, b, c]), some(&[Some("x"), None, None]));
        assert_eq!(
            paths(&[a, b, "-o", "x", "-O"]),
            some(&[Some("x"), Some("b.txt")])
        );
        assert_eq!(paths(&[a, b, c, "-O"]), some(&[Some("a.txt"), None, None]));
        assert_eq!(
            paths(&["-O", a, "-o", "y", b, c]),
            some(&[Some("a.txt"), Some("y"), None])
        );
        assert_eq!(
            paths(&["--remote-name-all", "-o", "x", a, b, c]),
            some(&[Some("x"), Some("b.txt"), Some("c.txt")])
        );
        assert_eq!(
            paths(&["--output-dir", "d", "-o", "x", "-o", "/abs", "-O", a, b, c]),
            some(&[Some("d/x"), Some("/abs"), Some("d/c.txt")])
        );
        assert_eq!(
            paths(&["-o", "-", "-o", "-", a, b]),
            some(&[Some("-"), Some("-")])
        );
        assert_eq!(
            paths(&["-o", "/dev/null", "-o", "/dev/null", a, b]),
            some(&[Some("/dev/null"), Some("/dev/null")])
        );
    }

    /// One URL keeps the rules from before: the last `-o` counts; `-o` with `-O` is an
    /// error; `--remote-name-all` names it when nothing else does.
    #[test]
    fn one_url_keeps_its_rules() {
        let a = "http://h/a.txt";
        assert_eq!(paths(&["-o", "x", "-o", "y", a]), some(&[Some("y")]));
        assert!(paths(&["-o", "x", "-O", a]).is_err());
        assert_eq!(paths(&["-O", "-O", a]), some(&[Some("a.txt")]));
        assert_eq!(paths(&["--remote-name-all", a]), some(&[Some("a.txt")]));
        assert_eq!(
            paths(&["--remote-name-all", "-o", "x", a]),
            some(&[Some("x")])
        );
        assert!(paths(&["-O", "http://h/"]).is_err());
    }

    #[test]
    fn outputs_that_cannot_be_paired_are_refused() {
        let (a, b) = ("http://h/a.txt", "http://h/dir/");
        let e = paths(&["-o", "x", "-o", "y", "-o", "z", a, a]).expect_err("three for two");
        assert!(
            e.0.contains("3 outputs (-o, -O) are given for 2 URLs"),
            "{}",
            e.0
        );
        let e = paths(&["-O", "-O", a, b]).expect_err("no name");
        assert!(e.0.starts_with("URL 2 of 2: -O: "), "{}", e.0);
        let e = paths(&["--remote-name-all", a, b]).expect_err("no name");
        assert!(e.0.starts_with("URL 2 of 2: "), "{}", e.0);
    }

    /// Two transfers writing one file are named, whatever the spelling of the path.
    #[test]
    fn two_transfers_writing_one_file_are_refused() {
        let (a, b, c) = ("http://h/a.txt", "http://h/x/a.txt", "http://h/c");
        let e = paths(&["-O", "-O", a, b]).expect_err("a.txt twice");
        assert!(
            e.0.contains("URL 1 and URL 2 of 2 both write a.txt"),
            "{}",
            e.0
        );
        let e = paths(&["-o", "f", "-o", "g", "-o", "./f", a, b, c]).expect_err("f twice");
        assert!(e.0.contains("URL 1 and URL 3 of 3"), "{}", e.0);
        let e = paths(&["--output-dir", "d", "-o", "a.txt", "-O", c, a]).expect_err("d/a.txt");
        assert!(e.0.contains("URL 1 and URL 2"), "{}", e.0);
        let here = std::env::current_dir().expect("a current folder");
        let abs = here.join("f");
        let abs = abs.to_str().expect("UTF-8");
        assert!(paths(&["-o", "f", "-o", abs, a, b]).is_err());
        assert!(paths(&["-o", "f", "-o", "sub/f", a, b]).is_ok());
    }

    /// Each transfer has its URL and output, `--output-dir` applied and `--create-dirs`
    /// kept for all; transfer 0 is the request's own; the schedule's flags are read.
    #[test]
    fn each_transfer_gets_its_url_and_output() {
        let line = [
            "--create-dirs",
            "--output-dir",
            "d",
            "-O",
            "-o",
            "sub/x",
            "-Z",
            "--parallel-max",
            "9",
            "--parallel-max-host",
            "2",
            "--fail-early",
            "--rate",
            "3/m",
            "-G",
            "-d",
            "q=1",
            "http://h/a.txt",
            "http://h/b.txt",
            "http://h/c.txt",
        ];
        let cfg = super::super::build(&args(&line), Default::default()).expect("a valid line");
        let b = &cfg.batch;
        assert_eq!(b.transfers.len(), 3);
        assert!(b.is_batch() && b.parallel && b.fail_early);
        assert_eq!((b.parallel_max, b.parallel_max_host), (9, 2));
        let per = std::time::Duration::from_secs(60);
        assert_eq!(b.rate, Some(Rate { count: 3, per }));
        let got: Vec<(&str, Option<&Path>)> = b
            .transfers
            .iter()
            .map(|t| (t.url.as_str(), t.output.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("http://h/a.txt?q=1", Some(Path::new("d/a.txt"))),
                ("http://h/b.txt?q=1", Some(Path::new("d/sub/x"))),
                ("http://h/c.txt?q=1", None),
            ]
        );
        assert!(cfg.output.create_dirs);
        let one = super::super::build(&args(&["http://h/"]), Default::default()).expect("one");
        assert!(!one.batch.is_batch());
        assert_eq!(one.batch.parallel_max, super::super::PARALLEL_MAX);
        assert_eq!(one.batch.parallel_max_host, super::super::PARALLEL_MAX_HOST);
    }

    /// For every count of URLs, every way of naming outputs and with or without `-G`'s
    /// data, transfer `i` of the configuration built has URL `i` of the list and output `i`
    /// as paired, whatever else the transfers share.
    #[test]
    fn each_transfer_s_url_and_output_come_from_the_list() {
        type Named = fn(usize) -> (Vec<String>, Option<String>);
        let ways: [(&str, Named); 4] = [
            ("stdout", |_| (vec![], None)),
            ("-o each", |i| {
                (
                    vec!["-o".into(), format!("out{i}")],
                    Some(format!("out{i}")),
                )
            }),
            ("-O each", |i| {
                (vec!["-O".into()], Some(format!("f{i}.txt")))
            }),
            ("--remote-name-all", |_| (vec![], None)),
        ];
        for n in [1, 2, 3, 7] {
            for (way, named) in ways {
                for g in [false, true] {
                    let mut line: Vec<String> = Vec::new();
                    let mut want = Vec::new();
                    for i in 0..n {
                        let (flags, mut out) = named(i);
                        line.extend(flags);
                        line.push(format!("http://h{i}.test/d/f{i}.txt"));
                        if way == "--remote-name-all" {
                            out = Some(format!("f{i}.txt"));
                        }
                        let q = if g { "?q=1" } else { "" };
                        want.push((format!("http://h{i}.test/d/f{i}.txt{q}"), out));
                    }
                    if way == "--remote-name-all" {
                        line.push(way.into());
                    }
                    if g {
                        line.extend(["-G", "-d", "q=1"].map(String::from));
                    }
                    let line: Vec<&str> = line.iter().map(String::as_str).collect();
                    let cfg = super::super::build(&args(&line), Default::default())
                        .unwrap_or_else(|e| panic!("{line:?}: {}", e.0));
                    let got: Vec<(String, Option<String>)> = cfg
                        .batch
                        .transfers
                        .iter()
                        .map(|t| {
                            (
                                t.url.to_string(),
                                t.output.as_ref().map(|p| p.display().to_string()),
                            )
                        })
                        .collect();
                    assert_eq!(got, want, "{line:?}");
                    assert_eq!(cfg.batch.first().url.as_str(), want[0].0, "{line:?}");
                }
            }
        }
    }

    #[test]
    fn flags_of_one_transfer_are_refused_for_several() {
        let two = ["http://h/a", "http://h/b"];
        for (flags, says) in [
            (&["-T", "f"][..], "-T uploads one file"),
            (&["--etag-save", "e"], "--etag-save keeps"),
            (&["--etag-compare", "e"], "--etag-compare keeps"),
            (&["-D", "h.txt"], "-D FILE keeps"),
        ] {
            let mut line = flags.to_vec();
            line.extend(two);
            let e = several(&args(&line), 2).expect_err(says);
            assert!(e.0.contains(says), "{}", e.0);
            line.pop();
            assert!(several(&args(&line), 1).is_ok(), "{line:?}");
        }
        assert!(several(&args(&["-D", "-", two[0], two[1]]), 2).is_ok());
    }
}
