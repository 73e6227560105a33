//! Secrets never reach a log line. Pure string work; every URL or header that is printed
//! (attempt lines, `-v`, redirect notes, `--explain`, usage errors, proxy errors) goes
//! through one of the functions here.
//!
//! The rules depend on whether the text parsed, because the name of a value in text that
//! did not parse cannot be trusted:
//!
//! - A URL that parses (an authority with a host): the password of every userinfo is
//!   masked (`bob:***@`), and a userinfo without a colon is a token, masked whole (`***@`);
//!   the user name before a colon stays visible. Query and fragment parameters, split on
//!   `&` and `;`, are masked when their (decoded) name marks them as secret (see
//!   [`is_secret_param`]); the rest of the URL is shown as it is.
//! - A URL that does not parse (or parses without a host, such as `bob:pw@host/` read as
//!   scheme `bob`): everything up to the last `@` after the scheme is taken for a userinfo
//!   and masked whole, user name included, and *every* query and fragment value is masked
//!   (`?state=***;token=***#***`), whatever its name.
//! - A header that parses: its value is masked when its name marks it as secret (see
//!   [`is_secret_name`]); `-v` shows the others as they are, except that a URL in one
//!   (Location, Refresh, a Referer) is masked as a URL.
//! - A `-H` argument that does not parse: only a name-like prefix (ASCII letters and `-`,
//!   at most 32 of them) followed by a separator (`:`, `=`, `;`, `,`, space or tab) is
//!   kept, and everything after that separator is masked (`PRIVATE-TOKEN=***`,
//!   `X ***`); anything else (no separator, digits in the first word, a long first word)
//!   is masked whole (`***`), since the first word may then be the secret itself.

use url::Url;

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Words that mark a header or query parameter name as holding a secret (case-insensitive).
const SECRET_WORDS: [&str; 12] = [
    "token",
    "key",
    "secret",
    "pass",
    "pwd",
    "signature",
    "auth",
    "sig",
    "session",
    "credential",
    "cookie",
    "password",
];

/// Query and fragment parameters that hold secrets, though their names hold none of the
/// words above (OAuth's authorization `code`), besides the usual ones.
const SECRET_PARAMS: [&str; 12] = [
    "access_token",
    "id_token",
    "refresh_token",
    "token",
    "code",
    "api_key",
    "apikey",
    "key",
    "secret",
    "password",
    "sig",
    "signature",
];

/// Headers whose names hold a secret word but whose values are not secrets: an
/// Idempotency-Key only names a request, and seeing it helps to trace a replay.
const NOT_SECRET_HEADERS: [&str; 1] = ["idempotency-key"];

/// Headers that carry credentials by definition, whatever their name says.
const CREDENTIAL_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];

/// Whether a header carries credentials that must not follow a redirect to another host.
pub fn is_credential_header(name: &str) -> bool {
    CREDENTIAL_HEADERS
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

/// Whether a header name marks its value as secret: a credential header, or a name holding
/// one of the secret words (`token`, `secret`, `pass`, `auth`, `key`, `cookie`,
/// `session`, ...), Idempotency-Key excepted.
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    if NOT_SECRET_HEADERS.contains(&lower.as_str()) {
        return false;
    }
    is_credential_header(&lower) || SECRET_WORDS.iter().any(|w| lower.contains(w))
}

/// Whether a query or fragment parameter name (decoded) marks its value as secret: one of
/// the usual names (`access_token`, `code`, `sig`, ...) or a name holding a secret word.
pub fn is_secret_param(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    SECRET_PARAMS.contains(&lower.as_str()) || SECRET_WORDS.iter().any(|w| lower.contains(w))
}

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
                && !url_secrets(value.trim()).is_empty() =>
        {
            url(&u)
        }
        _ => value.to_string(),
    }
}

/// A parameter name as the server reads it: percent-decoded, `+` as a space.
fn decoded(name: &str) -> String {
    url::form_urlencoded::parse(name.as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// Parameters (a query or a fragment), split on `&` and `;` with the separators kept, with
/// their values masked: every value when `all`, else those [`is_secret_param`] picks. A
/// bare item (no `=`) is masked only when `all`; an empty value stays empty.
fn params(s: &str, all: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for item in s.split_inclusive(['&', ';']) {
        let (pair, sep) = match item.strip_suffix(['&', ';']) {
            Some(p) => (p, &item[p.len()..]),
            None => (item, ""),
        };
        match pair.split_once('=') {
            Some((k, v)) if !v.is_empty() && (all || is_secret_param(&decoded(k))) => {
                out.push_str(k);
                out.push('=');
                out.push_str(MASK);
            }
            None if all && !pair.is_empty() => out.push_str(MASK),
            _ => out.push_str(pair),
        }
        out.push_str(sep);
    }
    out
}

/// A URL as it may be logged. With a host: the password (or a userinfo without one, a
/// token) and secret query and fragment parameters masked. Without one (`bob:pw@host/`
/// parses as scheme `bob`), it is treated as text that did not parse (see [`untrusted`]).
pub fn url(u: &Url) -> String {
    if u.cannot_be_a_base() || !u.has_host() {
        return untrusted(u.as_str());
    }
    let mut shown = u.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some(MASK));
    } else if !shown.username().is_empty() {
        let _ = shown.set_username(MASK);
    }
    if let Some(q) = u.query() {
        let masked = params(q, false);
        if masked != q {
            shown.set_query(Some(&masked));
        }
    }
    if let Some(f) = u.fragment() {
        let masked = params(f, false);
        if masked != f {
            shown.set_fragment(Some(&masked));
        }
    }
    shown.to_string()
}

/// A URL as typed, masked even when it does not parse: by [`url`]'s rules when it parses
/// with a host, else by [`untrusted`]'s.
pub fn url_text(s: &str) -> String {
    match Url::parse(s) {
        Ok(u) if !u.cannot_be_a_base() && u.has_host() => url(&u),
        _ => untrusted(s),
    }
}

/// Text that should have been a URL but did not parse: nothing in it can be trusted to be
/// what it looks like. Everything up to the last `@` after the scheme (`x://`, when there is
/// one) is taken for a userinfo and masked whole; after it, every query and fragment value
/// is masked, whatever its name.
pub fn untrusted(s: &str) -> String {
    let start = s.find("://").map_or(0, |i| i + 3);
    let (scheme, rest) = s.split_at(start);
    let (userinfo, rest) = match rest.rfind('@') {
        Some(at) => (format!("{MASK}@"), &rest[at + 1..]),
        None => (String::new(), rest),
    };
    let cut = rest.find(['?', '#']).unwrap_or(rest.len());
    let (head, tail) = rest.split_at(cut);
    let mut out = format!("{scheme}{userinfo}{head}");
    if let Some(query) = tail.strip_prefix('?') {
        let (query, fragment) = match query.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (query, None),
        };
        out.push('?');
        out.push_str(&params(query, true));
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(&params(f, true));
        }
    } else if let Some(fragment) = tail.strip_prefix('#') {
        out.push('#');
        out.push_str(&params(fragment, true));
    }
    out
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

/// Values in a URL's text that error messages from libraries might quote: the userinfo's
/// password (or a userinfo without one) and the values of secret parameters, as typed.
pub fn url_secrets(s: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(u) = Url::parse(s) {
        match u.password() {
            Some(p) => found.push(p.to_string()),
            None if !u.username().is_empty() => found.push(u.username().to_string()),
            None => {}
        }
        for part in [u.query(), u.fragment()].into_iter().flatten() {
            for pair in part.split(['&', ';']) {
                if let Some((k, v)) = pair.split_once('=')
                    && !v.is_empty()
                    && is_secret_param(&decoded(k))
                {
                    found.push(v.to_string());
                }
            }
        }
    }
    found
}

/// Masks every occurrence of the given secrets in a free-form message (error texts from
/// libraries may quote a URL or header).
pub fn text(msg: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| s.len() >= 3)
        .fold(msg.to_string(), |acc, s| acc.replace(s.as_str(), MASK))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in [
            "Authorization",
            "X-Api-Key",
            "X-Amz-Signature",
            "cookie",
            "access_token",
            "sig",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in ["Accept", "Content-Type", "page"] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn url_masks_password_and_query() {
        let u = Url::parse("https://bob:hunter2@h.test/p?api_key=abc&page=2").unwrap();
        let shown = url(&u);
        assert!(
            !shown.contains("hunter2") && !shown.contains("abc"),
            "{shown}"
        );
        assert!(shown.contains("page=2") && shown.contains("bob"), "{shown}");
    }

    #[test]
    fn unparseable_urls_and_header_args_are_masked() {
        let shown = url_text("http://user:pw9secret@127.0.0.1:99999/?access_token=tok7&x=1");
        assert_eq!(shown, "http://***@127.0.0.1:99999/?access_token=***&x=***");
        assert_eq!(
            header_arg("Authorization Bearer s3cret"),
            "Authorization ***"
        );
        assert_eq!(header_arg("X-Plain nocolon"), "X-Plain ***");
    }

    #[test]
    fn secret_names_by_kind() {
        for n in [
            "PRIVATE-TOKEN",
            "X-Session-Id",
            "X-Cookie-Jar",
            "X-Password",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in ["Idempotency-Key", "idempotency-key", "Accept", "X-Trace"] {
            assert!(!is_secret_name(n), "{n}");
        }
        for n in [
            "access_token",
            "id_token",
            "refresh_token",
            "token",
            "code",
            "CODE",
            "api_key",
            "apikey",
            "key",
            "secret",
            "password",
            "sig",
            "signature",
            "my_token_2",
            "client_secret",
            "db_password",
        ] {
            assert!(is_secret_param(n), "{n}");
        }
        for n in ["state", "page", "zipcode", "id"] {
            assert!(!is_secret_param(n), "{n}");
        }
    }

    #[test]
    fn semicolons_and_fragments_are_parameters_too() {
        let u =
            Url::parse("http://h.test/p?state=1;access_token=S1&page=2#id_token=S2&x=y").unwrap();
        assert_eq!(
            url(&u),
            "http://h.test/p?state=1;access_token=***&page=2#id_token=***&x=y"
        );
        // Encoded names are read as the server reads them; encodings are kept.
        let u = Url::parse("http://h.test/?access%5Ftoken=S1&q=a%20b+c").unwrap();
        assert_eq!(url(&u), "http://h.test/?access%5Ftoken=***&q=a%20b+c");
        // Nothing to hide: the URL is shown as it is.
        let u = Url::parse("http://h.test/p?a=1;b=2#frag").unwrap();
        assert_eq!(url(&u), "http://h.test/p?a=1;b=2#frag");
        // An empty value stays empty.
        let u = Url::parse("http://h.test/?token=&a=1").unwrap();
        assert_eq!(url(&u), "http://h.test/?token=&a=1");
    }

    #[test]
    fn every_userinfo_is_masked() {
        let u = Url::parse("http://bob:hunter2@h.test/").unwrap();
        assert_eq!(url(&u), "http://bob:***@h.test/");
        let u = Url::parse("https://ghp_T0KEN@h.test/").unwrap();
        assert_eq!(url(&u), "https://***@h.test/");
    }

    #[test]
    fn urls_that_do_not_parse_mask_every_value() {
        // Parses, as scheme "bob" with no host: not to be trusted.
        assert_eq!(
            url_text("bob:hunter2@127.0.0.1:9/path"),
            "***@127.0.0.1:9/path"
        );
        assert_eq!(
            url_text("http://bob:hunter2@exa mple.test/"),
            "http://***@exa mple.test/"
        );
        // A password holding '/', '?' or '#' is masked whole.
        assert_eq!(
            url_text("http://bob:pa/ss?wo#rd@exa mple/"),
            "http://***@exa mple/"
        );
        assert_eq!(
            untrusted("http://exa mple/?state=1;access_token=S&flag#id_token=S2"),
            "http://exa mple/?state=***;access_token=***&***#id_token=***"
        );
        assert_eq!(untrusted("http://exa mple/#S2"), "http://exa mple/#***");
        assert_eq!(untrusted("plain"), "plain");
        // Any header whose value is a URL; others as they are.
        assert_eq!(
            header_value("Referer", "http://u:pw@h.test/?token=t"),
            "http://u:***@h.test/?token=***"
        );
        assert_eq!(header_value("Accept", "text/html"), "text/html");
        assert_eq!(header_value("Origin", "http://h.test"), "http://h.test");
        assert_eq!(
            header_value("Link", "<http://h.test/?page=2>; rel=next"),
            "<http://h.test/?page=2>; rel=next"
        );
        // A Refresh value holding a URL.
        assert_eq!(
            header_value("Refresh", "5; url=http://u:pw@h.test/?a=1"),
            "5; url=http://***@h.test/?a=***"
        );
    }

    #[test]
    fn header_args_that_do_not_parse() {
        assert_eq!(
            header_arg("PRIVATE-TOKEN=glpat-SECRET"),
            "PRIVATE-TOKEN=***"
        );
        assert_eq!(header_arg("X Api-Key: SECRET"), "X ***");
        assert_eq!(header_arg("X-A: a\nb"), "X-A:***");
        // The first word may be the secret: masked whole.
        assert_eq!(header_arg("glpat-SECRET"), "***");
        assert_eq!(header_arg("glpat9SECRET value"), "***");
        assert_eq!(header_arg(&format!("{} x", "A".repeat(33))), "***");
        assert_eq!(header_arg(": v"), "***");
        assert_eq!(header_arg(""), "");
    }

    #[test]
    fn user_credentials() {
        assert_eq!(credentials("alice:pa55"), "alice:***");
        assert_eq!(credentials("t0ken"), "***");
        assert_eq!(credentials(""), "");
    }

    #[test]
    fn url_secrets_are_found() {
        let s = url_secrets("http://u:pw9@h.test/?token=t0k&page=2#sig=s1g");
        assert_eq!(s, ["pw9", "t0k", "s1g"]);
        assert_eq!(url_secrets("http://tok3n@h.test/"), ["tok3n"]);
        assert!(url_secrets("not a url").is_empty());
    }

    #[test]
    fn text_masks_known_secrets() {
        assert_eq!(
            text("bad token s3cret!", &["s3cret".into()]),
            "bad token ***!"
        );
    }
}
