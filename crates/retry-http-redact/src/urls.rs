//! URLs as they may be shown: [`url()`] for one that parsed, [`url_text`] for one as
//! typed, masked by the rules in `redact`'s opening comment whether or not it parses; what
//! in a URL is secret, as typed ([`url_secrets`]); and the marking of those secrets as a
//! URL enters ([`mark_secrets`]).

use super::MASK;
use super::names::decoded_text;
use super::params::{param_secrets, params, params_after, userinfo_at};
use super::registry;
use url::Url;

/// A URL as it may be logged. With a host: the password (or a userinfo without one, a
/// token), path segments that look like a userinfo (a relative Location such as
/// `ht!tp://u:pw@h/`, resolved into the path) and secret query and fragment parameters
/// masked. Without one (`bob:pw@host/` parses as scheme `bob`), it is treated as text that
/// did not parse (see [`untrusted`]).
pub fn url(u: &Url) -> String {
    if u.cannot_be_a_base() || !u.has_host() || userinfo_in_first_segment(u) {
        return untrusted(u.as_str());
    }
    let mut shown = u.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some(MASK));
    } else if !shown.username().is_empty() {
        let _ = shown.set_username(MASK);
    }
    let (path, _) = path_masked(u.path());
    if path != u.path() {
        shown.set_path(&path);
    }
    // A path parameter's secret value may go on into the query (`;jsessionid=S1?S2`).
    let mut after_secret = last_path_params_end_masked(u);
    if let Some(q) = u.query() {
        let (masked, ended) = params_after(q, false, after_secret);
        after_secret = ended;
        if masked != q {
            shown.set_query(Some(&masked));
        }
    }
    if let Some(f) = u.fragment() {
        let (masked, _) = params_after(f, false, after_secret);
        if masked != f {
            shown.set_fragment(Some(&masked));
        }
    }
    shown.to_string()
}

/// A URL's path with every segment that looks like a userinfo masked up to its `@`
/// (`/ht!tp://***@x%20y/`); with the secrets so masked, as typed.
fn path_masked(path: &str) -> (String, Vec<String>) {
    let segments: Vec<&str> = path.split('/').collect();
    let mut found = Vec::new();
    let shown: Vec<String> = (0..segments.len())
        .map(|i| {
            let seg = segments[i];
            match userinfo_at(seg, i >= 2 && segments[i - 1].is_empty()) {
                Some(at) => {
                    let userinfo = &seg[..at];
                    found.push(userinfo.to_string());
                    // The password, whether it holds a `:` or follows a scheme and a user.
                    for (_, password) in [userinfo.split_once(':'), userinfo.rsplit_once(':')]
                        .into_iter()
                        .flatten()
                    {
                        found.push(password.to_string());
                    }
                    format!("{MASK}{}", &seg[at..])
                }
                // Path parameters (`/app;jsessionid=S`) are masked as query parameters are.
                None => match seg.split_once(';') {
                    Some((name, rest)) => format!("{name};{}", params(rest, false)),
                    None => seg.to_string(),
                },
            }
        })
        .collect();
    (shown.join("/"), found)
}

/// Whether the parameters of a URL's last path segment end with a masked value.
fn last_path_params_end_masked(u: &Url) -> bool {
    let last = u.path().rsplit('/').next().unwrap_or("");
    last.split_once(';')
        .is_some_and(|(_, rest)| params_after(rest, false, false).1)
}

/// Whether a URL without a userinfo has, as its path's first segment, what reads as the
/// end of one: `X@HOST[:PORT]` with `X` not empty (`http://tok/en@h/`, a token holding an
/// unencoded `/` or `\\`, which the parser took for the host `tok` and a path). Such a URL
/// is shown as text that did not parse ([`untrusted`]): its host may be the secret's
/// first part. `/@scope/pkg` and `/users/bob@example.test` are not; nor is a segment
/// [`path_masked`] masks as a userinfo of its own (`/u:pw@h`).
pub fn userinfo_in_first_segment(u: &Url) -> bool {
    if !u.username().is_empty() || u.password().is_some() {
        return false;
    }
    // A segment that looks like a userinfo of its own (`u:pw@h`) is masked by `path_masked`;
    // one with path parameters (`p;email=a@b`) is not a userinfo.
    let first = first_segment(u);
    let Some((before, after)) = first.rsplit_once('@') else {
        return false;
    };
    let host_like = !after.is_empty()
        && after
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-[]:".contains(&b));
    !before.is_empty() && !before.contains(';') && host_like && userinfo_at(first, false).is_none()
}

/// The first segment of a URL's path (`a` of `/a/b`; empty for `//x`).
fn first_segment(u: &Url) -> &str {
    let path = u.path();
    let path = path.strip_prefix('/').unwrap_or(path);
    path.split('/').next().unwrap_or("")
}

/// A URL as typed, masked even when it does not parse: by [`url()`]'s rules when it parses
/// with a host, else by [`untrusted`]'s.
pub fn url_text(s: &str) -> String {
    match Url::parse(s) {
        Ok(u) if !u.cannot_be_a_base() && u.has_host() && !hides_userinfo(s) => url(&u),
        _ => untrusted(s),
    }
}

/// A URL exactly as typed, masked as [`untrusted`] text (the userinfo whole, every query
/// and fragment value): for an error about the text itself, which a parsed and rewritten
/// form (`http:///x` shown as `http://x/`) would hide.
pub fn typed_text(s: &str) -> String {
    untrusted(s)
}

/// Text that should have been a URL but did not parse: nothing in it can be trusted to be
/// what it looks like. Everything up to the last `@` after the scheme (`x://`, when there is
/// one) is taken for a userinfo and masked whole; after it, every query and fragment value
/// is masked, whatever its name.
pub(super) fn untrusted(s: &str) -> String {
    let start = s.find("://").map_or(0, |i| i + 3);
    let (scheme, rest) = s.split_at(start);
    let (userinfo, rest) = match rest.rfind('@') {
        Some(at) => (format!("{MASK}@"), &rest[at + 1..]),
        None => (String::new(), rest),
    };
    let cut = rest.find(['?', '#']).unwrap_or(rest.len());
    let (head, tail) = rest.split_at(cut);
    // Path parameters (`;jsessionid=S`): every value, as for the query.
    let head: Vec<String> = head
        .split('/')
        .map(|seg| match seg.split_once(';') {
            Some((name, params_text)) => format!("{name};{}", params(params_text, true)),
            None => seg.to_string(),
        })
        .collect();
    let head = head.join("/");
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

/// Whether a URL as typed hides a userinfo behind a `?` or `#` that the userinfo was meant
/// to hold (`http://u:12#pw@h/`, `http://u:pw?x@h/`): between the `//` and the first `/`
/// after it, a `?` or `#` comes before an `@`. A URL parser reads the authority as ending
/// at the `?` or `#` (RFC 3986 section 3.2), so the password's first part would be read as
/// the host or port and the rest as a query or fragment.
pub fn hides_userinfo(typed: &str) -> bool {
    let Some(i) = typed.find("//") else {
        return false;
    };
    let rest = &typed[i + 2..];
    let zone = &rest[..rest.find('/').unwrap_or(rest.len())];
    match (zone.find(['?', '#']), zone.rfind('@')) {
        (Some(q), Some(at)) => q < at,
        _ => false,
    }
}

/// Values in a URL's text that error messages from libraries might quote: the userinfo's
/// password (or a userinfo without one), what [`url()`] masks in the path, and the values of
/// the parameters it masks, as typed.
#[cfg(test)]
pub(super) fn url_secrets(s: &str) -> Vec<String> {
    secrets_of(s, Url::parse(s).as_ref().ok())
}

/// What [`url_secrets`] finds in `s`, given its parse (`None` when it does not parse): a
/// list of many URLs is parsed once for its marks.
fn secrets_of(s: &str, parsed: Option<&Url>) -> Vec<String> {
    let mut found = Vec::new();
    match parsed {
        Some(u) => {
            match u.password() {
                Some(p) => found.push(p.to_string()),
                None if !u.username().is_empty() => found.push(u.username().to_string()),
                None => {}
            }
            if !u.cannot_be_a_base() {
                found.extend(path_masked(u.path()).1);
                // Path parameters (`/report.csv;jsessionid=S`), which `-O` may take for a
                // file name.
                for segment in u.path().split('/') {
                    if let Some((_, rest)) = segment.split_once(';') {
                        param_secrets(rest, false, &mut found);
                    }
                }
            }
            let mut after_secret = last_path_params_end_masked(u);
            for part in [u.query(), u.fragment()].into_iter().flatten() {
                after_secret = param_secrets(part, after_secret, &mut found);
            }
            if userinfo_in_first_segment(u) {
                let hidden = first_segment(u).rsplit_once('@').map(|(x, _)| x);
                found.extend(hidden.map(str::to_string));
            }
        }
        // Text that does not parse: the secret parameters after its first `?`, `#` or `;`.
        None => {
            if let Some(at) = s.find(['?', '#', ';']) {
                param_secrets(&s[at + 1..], false, &mut found);
            }
        }
    }
    found
}

/// Marks the secrets of a URL as typed (see `Secret::Url`): what [`url_secrets`] finds (its
/// password from 3 characters; a token as the userinfo, parameters and path segments as
/// guesses, see `registry::GUESSED_MIN`), and, when the text does not parse with a host, what
/// [`untrusted`] masks: everything up to the last `@` after the scheme and its part after
/// the first `:` (the password), or, without a `:`, a token without `/`, `?` or `#`.
pub(super) fn mark_secrets(typed: &str) {
    let whole = Url::parse(typed).ok();
    let found = secrets_of(typed, whole.as_ref());
    let parsed = whole.filter(|u| !u.cannot_be_a_base() && u.has_host());
    let password = parsed
        .as_ref()
        .and_then(|u| u.password().map(str::to_string));
    for s in found {
        let mark_it = if password.as_ref() == Some(&s) {
            registry::given
        } else {
            registry::guessed
        };
        // Decoded too: an error may quote what the server or a library decoded.
        mark_it(&decoded_text(&s));
        mark_it(&s);
    }
    if parsed.is_none() || hides_userinfo(typed) {
        let start = typed.find("://").map_or(0, |i| i + 3);
        let rest = &typed[start..];
        let Some(at) = rest.rfind('@') else {
            return;
        };
        let userinfo = &rest[..at];
        match userinfo.split_once(':') {
            Some((_, password)) => {
                registry::given(userinfo);
                registry::given(password);
            }
            // A token, unless it holds what a path or a query would (`h/?email=a@b`).
            None if !userinfo.contains(['/', '?', '#']) => registry::guessed(userinfo),
            None => {}
        }
    }
}
