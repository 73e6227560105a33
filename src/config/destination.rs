//! The checks of curl's destination flags (`cli::destination`): the scheme curl guesses
//! for a URL without one, `-O`'s file name, `--output-dir`,
//! `-e`, `-4`/`-6`, and `-f` against `--fail-with-body`.
//! Nothing here does I/O.

use super::{UsageError, check_header, has_header, usage};
use crate::cli::RequestArgs;
use crate::cli::destination::SavedFileFlags;
use crate::redact;
use std::borrow::Cow;
use std::net::IpAddr;
use std::path::PathBuf;
use url::{Host, Url};

/// The address family host names are resolved to (`-4`, `-6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    /// Either (the default).
    #[default]
    Any,
    /// IPv4 only (`-4`).
    V4,
    /// IPv6 only (`-6`).
    V6,
}

/// Host-name prefixes for which curl guesses a protocol other than http.
const GUESSED: [(&str, &str); 6] = [
    ("ftp.", "ftp"),
    ("dict.", "dict"),
    ("ldap.", "ldap"),
    ("imap.", "imap"),
    ("smtp.", "smtp"),
    ("pop3.", "pop3"),
];

/// Whether `typed` starts with a scheme and `://` (`HTTP://` too).
fn has_scheme(typed: &str) -> bool {
    // `http:/host/x` and `https:host` have their scheme, as curl and the URL standard read
    // them (one slash or none is mended), not a host named `http`.
    if typed
        .split_once(':')
        .is_some_and(|(s, _)| s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https"))
    {
        return true;
    }
    let Some((scheme, _)) = typed.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The URL with the scheme curl would give it: as typed when it has one; else `http://`
/// in front, as curl does (`localhost:8080/health`, `bob:pw@host/`). A host name that
/// makes curl guess another protocol (`ftp.example.test`), and `file:`, are refused, as
/// their scheme would be.
pub fn with_scheme(typed: &str) -> Result<Cow<'_, str>, UsageError> {
    let typed = typed.trim_start();
    if has_scheme(typed) {
        return Ok(Cow::Borrowed(typed));
    }
    let lower = typed.to_ascii_lowercase();
    // Masked only for an error: a list of many URLs is checked in one go.
    let shown = || redact::url_text(typed);
    if lower.starts_with("file:") {
        return usage(format!(
            "unsupported URL scheme \"file\" in {:?}: only http and https are accepted",
            shown()
        ));
    }
    // The host starts after any userinfo, as curl reads it.
    let host = lower.rsplit_once('@').map_or(lower.as_str(), |(_, h)| h);
    if let Some((_, scheme)) = GUESSED.iter().find(|(p, _)| host.starts_with(p)) {
        return usage(format!(
            "unsupported URL scheme {scheme:?} in {:?} (curl reads a host named {scheme}.* as {scheme}://): give http:// or https:// in front",
            shown()
        ));
    }
    Ok(Cow::Owned(format!("http://{typed}")))
}

/// Why the URL `full` (with its scheme) names no host as it was typed, though the URL
/// standard would find one: three slashes or more (`http:///x`), or a backslash among
/// them (`http:\\x`, `http://\x`), from which the standard takes the first path segment
/// for the host; or nothing before the path (`http://@/x`). curl refuses these (no host,
/// or a malformed URL); `http:/host` and `http:host`, which it mends, stay accepted.
/// `None` when the typed URL has a host where one belongs, or has no `scheme:` at all.
pub fn hostless(full: &str) -> Option<&'static str> {
    let (scheme, rest) = full.split_once(':')?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        return None;
    }
    let slashes = rest.len() - rest.trim_start_matches(['/', '\\']).len();
    let lead = &rest[..slashes];
    if lead.contains('\\') {
        return Some("a backslash where '//' goes, before the host");
    }
    if slashes > 2 {
        return Some("no host between '//' and the path (three slashes or more)");
    }
    if slashes < 2 {
        return None;
    }
    let authority = &rest[2..];
    let authority = &authority[..authority
        .find(['/', '\\', '?', '#'])
        .unwrap_or(authority.len())];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host
        .rsplit_once(':')
        .filter(|(h, _)| !h.ends_with(']'))
        .map_or(host, |(h, _)| h);
    host.is_empty()
        .then_some("no host between '//' and the path")
}

/// `-f` against `--fail-with-body`: this tool does what `-f` asks anyway, and the two
/// disagree about the failed response's body.
pub(super) fn fail_flags(a: &RequestArgs) -> Result<(), UsageError> {
    if a.destination.output.fail && a.output.fail_with_body {
        return usage(
            "-f and --fail-with-body: give one (-f is what retry-http does anyway: a failed response's body is not written)",
        );
    }
    Ok(())
}

/// `-e URL`: the Referer header to add, unless `-H` gave one (in `headers`) or removed one
/// (in `removed`, lower case): as in curl, `-H` wins; an empty URL sends none. curl's
/// `;auto` is refused.
pub(super) fn referer(
    a: &RequestArgs,
    headers: &[(String, String)],
    removed: &[String],
) -> Result<Option<(String, String)>, UsageError> {
    let Some(given) = a.destination.request.referer.as_deref() else {
        return Ok(None);
    };
    if given.ends_with(";auto") {
        return usage(format!(
            "-e {:?}: ';auto' (a Referer on each redirect) is not supported: give the Referer URL alone",
            redact::url_text(given)
        ));
    }
    if given.is_empty() || has_header(headers, "referer") || removed.iter().any(|n| n == "referer")
    {
        return Ok(None);
    }
    check_header("Referer", given)?;
    Ok(Some(("Referer".into(), given.to_string())))
}

/// `-4` or `-6` (clap keeps the last of the two). An address in the URL of the other
/// family could never be reached: a usage error, unless `-x` names a proxy (the proxy
/// then reaches it).
pub(super) fn family(a: &RequestArgs, url: &Url) -> Result<Family, UsageError> {
    let d = &a.destination.request;
    let family = match (d.ipv4, d.ipv6) {
        (true, _) => Family::V4,
        (_, true) => Family::V6,
        _ => return Ok(Family::Any),
    };
    let address = match url.host() {
        Some(Host::Ipv4(a)) => Some(IpAddr::V4(a)),
        Some(Host::Ipv6(a)) => Some(IpAddr::V6(a)),
        _ => None,
    };
    let (flag, wanted) = match family {
        Family::V6 => ("-6", "IPv6"),
        _ => ("-4", "IPv4"),
    };
    match address {
        Some(ip) if a.request.proxy.is_none() && ip.is_ipv4() != (family == Family::V4) => {
            usage(format!(
                "{flag} asks for {wanted} but the URL's host {ip} is not an {wanted} address: drop {flag}, or give a host name or an {wanted} address"
            ))
        }
        _ => Ok(family),
    }
}

/// The `-o` path `given`, or with `remote` (`-O`) the name from `url`, under
/// `--output-dir` when relative; `-` stays stdout. `-o` and `-O` together are an error.
pub(super) fn output_path(
    given: Option<PathBuf>,
    remote: bool,
    b: &SavedFileFlags,
    url: &Url,
) -> Result<Option<PathBuf>, UsageError> {
    let path = match (given, remote) {
        (Some(_), true) => return usage("-o and -O both name the output file: give one"),
        (Some(p), false) if p.as_os_str() == "-" => return Ok(Some(p)),
        (Some(p), false) => p,
        (None, true) => PathBuf::from(remote_name(url)?),
        (None, false) => return Ok(None),
    };
    Ok(Some(match &b.output_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }))
}

/// `-O`'s file name: the URL path's last segment as it stands (not percent-decoded, as in
/// curl 7.88). A path ending in `/` names no file; `.` and `..` name folders (the URL
/// parser has usually removed them already).
pub fn remote_name(url: &Url) -> Result<String, UsageError> {
    let name = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .unwrap_or("");
    match name {
        "" | "." | ".." => usage(format!(
            "-O: the URL {} names no file (its path ends in {:?}): give -o FILE",
            redact::url(url),
            if name.is_empty() { "/" } else { name }
        )),
        // `-` would be stdout to -o, and a file named `-` to --output-dir: neither is what
        // a name from the URL should quietly become.
        "-" => usage(format!(
            "-O: the URL {} ends in '-', which would mean stdout: give -o FILE (or -o - for stdout)",
            redact::url(url)
        )),
        // On Windows `:` would name a stream of another file (`a:b`), and the others are
        // refused in a name.
        n if cfg!(windows) && n.contains(WINDOWS_REFUSED) => usage(format!(
            "-O: the URL {} ends in a name Windows refuses (it holds one of < > : \" | ? * \\): give -o FILE",
            redact::url(url)
        )),
        n => Ok(n.to_string()),
    }
}

/// What Windows refuses in a file name (besides `/` and the control characters, which a
/// URL path segment cannot hold unencoded).
const WINDOWS_REFUSED: [char; 8] = ['<', '>', ':', '"', '|', '?', '*', '\\'];

#[cfg(test)]
mod tests {
    use super::super::tests::args_of as args;
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).expect("a URL")
    }

    /// `-e` alone: its Referer, unless `-H` gave or removed one; empty sends none.
    #[test]
    fn a_referer_is_a_value_of_its_own() {
        let a = args(&["-e", "http://r/", "http://h/"]);
        let sent = Some(("Referer".to_string(), "http://r/".to_string()));
        assert_eq!(referer(&a, &[], &[]), Ok(sent));
        let given = [("referer".to_string(), "x".to_string())];
        assert_eq!(referer(&a, &given, &[]), Ok(None));
        assert_eq!(referer(&a, &[], &["referer".into()]), Ok(None));
        assert_eq!(referer(&args(&["-e", "", "http://h/"]), &[], &[]), Ok(None));
        assert!(referer(&args(&["-e", "http://r/;auto", "http://h/"]), &[], &[]).is_err());
    }

    /// `-4`/`-6` alone: the family, refused for an address of the other one unless a
    /// proxy reaches it.
    #[test]
    fn the_family_is_a_value_of_its_own() {
        let v4 = u("http://127.0.0.1/");
        assert_eq!(family(&args(&["http://h/"]), &v4), Ok(Family::Any));
        assert_eq!(family(&args(&["-4", "http://h/"]), &v4), Ok(Family::V4));
        assert!(family(&args(&["-6", "http://h/"]), &v4).is_err());
        let proxied = args(&["-6", "-x", "http://p:3128", "http://h/"]);
        assert_eq!(family(&proxied, &v4), Ok(Family::V6));
    }

    #[test]
    fn a_url_without_a_scheme_is_http() {
        for (typed, sent) in [
            ("localhost:8080/health", "http://localhost:8080/health"),
            ("http:/127.0.0.1:8080/x", "http:/127.0.0.1:8080/x"),
            ("HTTPS:example.com/", "HTTPS:example.com/"),
            ("127.0.0.1/x", "http://127.0.0.1/x"),
            ("example.com", "http://example.com"),
            ("bob:pw@host/", "http://bob:pw@host/"),
            ("host/?next=http://x/", "http://host/?next=http://x/"),
            ("HTTPS://h/", "HTTPS://h/"),
        ] {
            assert_eq!(with_scheme(typed).expect(typed), sent);
        }
    }

    #[test]
    fn guessed_protocols_and_file_are_refused() {
        for typed in [
            "ftp.example.test/x",
            "u:p@FTP.h/",
            "file:/etc/passwd",
            "pop3.h",
        ] {
            let e = with_scheme(typed).expect_err(typed);
            assert!(e.0.contains("unsupported URL scheme"), "{}", e.0);
        }
        let e = with_scheme("bob:secret@ftp.h/").expect_err("ftp");
        assert!(!e.0.contains("secret"), "{}", e.0);
    }

    #[test]
    fn remote_name_is_the_last_segment_undecoded() {
        assert_eq!(
            remote_name(&u("http://h/d/a%20b.txt?x=1#f")).expect("a name"),
            "a%20b.txt"
        );
        assert_eq!(remote_name(&u("http://h/a%2Fb")).expect("a name"), "a%2Fb");
        for bad in [
            "http://h/x/-",
            "http://h/",
            "http://h",
            "http://h/dir/",
            "http://h/x/..",
            "http://h/%2e%2e",
        ] {
            assert!(remote_name(&u(bad)).is_err(), "{bad}");
        }
    }

    /// A name Windows refuses (`a:b` would be a stream of `a`) is a usage error there, and
    /// a file name elsewhere.
    #[test]
    fn a_remote_name_windows_refuses_is_refused_there() {
        for url in ["http://h/a:b", "http://h/x%22y/a|b", "http://h/a*"] {
            let got = remote_name(&u(url));
            assert_eq!(got.is_err(), cfg!(windows), "{url}: {got:?}");
        }
        assert_eq!(remote_name(&u("http://h/d/f.txt")), Ok("f.txt".to_string()));
    }

    #[test]
    fn the_output_dir_takes_relative_paths_only() {
        let b = |dir: Option<&str>, o: bool| {
            let flags = SavedFileFlags {
                remote_name: Vec::new(),
                remote_name_all: false,
                output_dir: dir.map(PathBuf::from),
                create_dirs: false,
                fail: false,
            };
            (flags, o)
        };
        let url = u("http://h/f.txt");
        let path = |given: Option<&str>, (b, o): &(SavedFileFlags, bool)| {
            output_path(given.map(PathBuf::from), *o, b, &url).expect("a path")
        };
        assert_eq!(path(Some("x"), &b(Some("d"), false)), Some("d/x".into()));
        assert_eq!(
            path(Some("/a/x"), &b(Some("d"), false)),
            Some("/a/x".into())
        );
        assert_eq!(path(Some("-"), &b(Some("d"), false)), Some("-".into()));
        assert_eq!(path(None, &b(Some("d"), true)), Some("d/f.txt".into()));
        assert_eq!(path(None, &b(None, true)), Some("f.txt".into()));
        assert_eq!(path(None, &b(Some("d"), false)), None);
        let (flags, _) = b(None, true);
        assert!(output_path(Some("x".into()), true, &flags, &url).is_err());
    }
}
