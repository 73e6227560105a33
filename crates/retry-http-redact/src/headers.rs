//! Headers and header-like arguments as they may be shown: a header's value
//! ([`header_value`]), a `-H` argument that did not parse ([`header_arg`]), a `-u`
//! argument ([`credentials`]); and the marking of a header's secrets as it enters
//! ([`mark_secrets`]).

use super::MASK;
use super::names::{CREDENTIAL_HEADERS, is_secret_name};
use super::params::has_userinfo;
use super::registry;
use super::urls::{self, hides_userinfo, url, url_text};
use url::Url;

/// A header value as it may be logged: masked when the name marks it as secret; a URL
/// (Location, Content-Location, Refresh) with its password and secret parameters masked,
/// as is any other value that is a whole URL (Referer, Origin).
pub fn header_value(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        return MASK.to_string();
    }
    let lower = name.to_ascii_lowercase();
    if matches!(lower.as_str(), "location" | "content-location" | "refresh") {
        return url_text(value);
    }
    match Url::parse(value.trim()) {
        // Shown as it is unless there is something to mask (url() would normalise it).
        Ok(u)
            if value.contains("://")
                && !u.cannot_be_a_base()
                && u.has_host()
                && !hides_userinfo(value) =>
        {
            if url(&u) != u.as_str() {
                url(&u)
            } else {
                value.to_string()
            }
        }
        // A Referer or Origin is a URL even when it does not parse (`bob:pw@intranet/`,
        // a port out of range), and so is any value holding a userinfo.
        _ if matches!(lower.as_str(), "referer" | "origin")
            || has_userinfo(value)
            || hides_userinfo(value) =>
        {
            url_text(value.trim())
        }
        _ => value.to_string(),
    }
}

/// The longest name-like prefix [`header_arg`] keeps.
const SHOWN_NAME_MAX: usize = 32;

/// A `-H` argument that did not parse, as it may be quoted in an error: a name-like first
/// word (ASCII letters and `-`, at most 32) and the separator after it, then `***`; or
/// `***` alone when there is no such word, since the first word may be the secret itself.
/// An empty argument stays empty.
pub fn header_arg(s: &str) -> String {
    if s.is_empty() {
        return String::new();
    }
    let name_end = s
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-'))
        .unwrap_or(s.len());
    let separator = s[name_end..].chars().next();
    match separator {
        Some(sep @ (':' | '=' | ';' | ',' | ' ' | '\t'))
            if name_end > 0 && name_end <= SHOWN_NAME_MAX =>
        {
            format!("{}{sep}{MASK}", &s[..name_end])
        }
        _ => MASK.to_string(),
    }
}

/// A `USER:PASSWORD` argument (`-u`) as it may be quoted: the password masked, or the
/// whole of it when there is no colon (a token).
pub fn credentials(s: &str) -> String {
    match s.split_once(':') {
        Some((user, _)) => format!("{user}:{MASK}"),
        None if s.is_empty() => String::new(),
        None => MASK.to_string(),
    }
}

/// Marks a header's secrets as it enters (`-H`, `-b`): the whole value of a secret header
/// (see [`is_secret_name`]), its credentials after a scheme word (`Bearer TOKEN`,
/// `Basic ...`) and each cookie's value (`a=S1; b=S2`), as guesses (see `registry::GUESSED_MIN`)
/// unless the header carries credentials by definition (Authorization,
/// Proxy-Authorization, Cookie); in any other header, the secrets of a URL in it (see
/// [`urls::mark_secrets`]).
pub(super) fn mark_secrets(name: &str, value: &str) {
    if !is_secret_name(name) {
        if value.contains('@') || value.contains('?') || value.contains('#') {
            urls::mark_secrets(value.trim());
        }
        return;
    }
    let lower = name.trim().to_ascii_lowercase();
    let mark_it = if CREDENTIAL_HEADERS.contains(&lower.as_str()) {
        registry::given
    } else {
        registry::guessed
    };
    mark_it(value);
    if let Some((_, credentials)) = value.trim().split_once(' ') {
        mark_it(credentials);
    }
    for cookie in value.split(';') {
        if let Some((_, v)) = cookie.split_once('=') {
            mark_it(v);
        }
    }
}
