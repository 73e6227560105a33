//! Secrets never reach a log line: header values, URL passwords and query parameters whose
//! names mark them as credentials are shown as `***`. Pure string work.

use url::Url;

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Words that mark a header or query parameter name as holding a secret (case-insensitive).
const SECRET_WORDS: [&str; 10] = [
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
];

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

/// Whether a header or query parameter name marks its value as secret.
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    is_credential_header(&lower) || SECRET_WORDS.iter().any(|w| lower.contains(w))
}

/// A header value as it may be logged: masked when the name marks it as secret; a URL
/// (Location, Content-Location, Refresh) with its password and secret parameters masked.
pub fn header_value(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        return MASK.to_string();
    }
    let lower = name.to_ascii_lowercase();
    if matches!(lower.as_str(), "location" | "content-location" | "refresh") {
        return url_text(value);
    }
    value.to_string()
}

/// A URL as it may be logged: password and secret query values masked.
pub fn url(u: &Url) -> String {
    let mut shown = u.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some(MASK));
    }
    if shown.query().is_some() {
        let pairs: Vec<(String, String)> = shown
            .query_pairs()
            .map(|(k, v)| {
                let v = if is_secret_name(&k) {
                    MASK.to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        if pairs.iter().any(|(_, v)| v == MASK) {
            shown.query_pairs_mut().clear().extend_pairs(pairs);
        }
    }
    shown.to_string()
}

/// A URL as typed, masked even when it does not parse: the password of `user:pass@` and the
/// values of query parameters whose names mark them as secret.
pub fn url_text(s: &str) -> String {
    if let Ok(u) = Url::parse(s) {
        return url(&u);
    }
    let mut out = s.to_string();
    // Without a scheme ("user:pass@host:port", as proxies are often written) the authority
    // starts at once.
    let authority = out.find("://").map_or(Some(0), |i| Some(i + 3));
    if let Some(rest_start) = authority {
        let authority_end = out[rest_start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = &out[rest_start..rest_start + at];
            if let Some(colon) = userinfo.find(':') {
                out.replace_range(rest_start + colon + 1..rest_start + at, MASK);
            }
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let masked: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_secret_name(k) => format!("{k}={MASK}"),
                _ => pair.to_string(),
            })
            .collect();
        out = format!("{head}{}", masked.join("&"));
    }
    out
}

/// A `-H` argument as it may be quoted in an error: the value masked when the name (its
/// first word) marks it as secret.
pub fn header_arg(s: &str) -> String {
    let name_end = s.find([':', ' ', ';']).unwrap_or(s.len());
    if is_secret_name(&s[..name_end]) && name_end < s.len() {
        format!("{}{MASK}", &s[..=name_end])
    } else {
        s.to_string()
    }
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
        assert!(
            !shown.contains("pw9secret") && !shown.contains("tok7"),
            "{shown}"
        );
        assert!(shown.contains("x=1"), "{shown}");
        assert_eq!(
            header_arg("Authorization Bearer s3cret"),
            "Authorization ***"
        );
        assert_eq!(header_arg("X-Plain nocolon"), "X-Plain nocolon");
    }

    #[test]
    fn text_masks_known_secrets() {
        assert_eq!(
            text("bad token s3cret!", &["s3cret".into()]),
            "bad token ***!"
        );
    }
}
