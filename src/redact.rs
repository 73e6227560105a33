//! Secrets never reach a log line. Every URL or header that is printed (attempt lines,
//! `-v`, redirect notes, `--explain`, usage errors, proxy errors, readiness reasons) goes
//! through one of the functions here; apart from the registry of marked secrets (below),
//! this is pure string work.
//!
//! The rules depend on whether the text parsed, because the name of a value in text that
//! did not parse cannot be trusted:
//!
//! - A URL that parses (an authority with a host): the password of every userinfo (RFC 3986
//!   section 3.2.1) is masked (`bob:***@`), and a userinfo without a colon is a token,
//!   masked whole (`***@`); the user name before a colon stays visible. Query and fragment
//!   parameters (sections 3.4 and 3.5), split on `&`, `;` and `?`, are masked when their
//!   (decoded) name marks them as secret (see [`is_secret_param`]) or when their value,
//!   decoded, holds a secret parameter or a userinfo of its own
//!   (`next=%2Fcb%3Ftoken%3DS`); so is a bare item right after a masked value (the rest of
//!   a secret holding an unencoded separator). A path segment that looks like a userinfo (a
//!   `:` before an `@`, or an `@` right after a `//`: `/ht!tp://u:pw@h/`) is masked up to
//!   its `@`. The rest of the URL is shown as it is.
//! - A URL that does not parse (or parses without a host, such as `bob:pw@host/` read as
//!   scheme `bob`), or whose userinfo the parser split at a delimiter it held (a `?` or `#`
//!   before the `@`: `http://u:12#pw@h/`, see [`hides_userinfo`]; a `/` or `\`:
//!   `http://tok/en@h/`, see [`userinfo_in_first_segment`]): everything up to the last `@`
//!   after the scheme is taken for a userinfo and masked whole, user name included, and
//!   *every* query and fragment value is masked (`?state=***;token=***#***`), whatever its
//!   name.
//! - A header that parses: its value is masked when its name marks it as secret (see
//!   [`is_secret_name`]); `-v` shows the others as they are, except that a URL in one
//!   (Location, Refresh, a Referer or Origin, parsed or not) or a value holding a userinfo
//!   is masked as a URL.
//! - A `-H` argument that does not parse: only a name-like prefix (ASCII letters and `-`,
//!   at most 32 of them) followed by a separator (`:`, `=`, `;`, `,`, space or tab) is
//!   kept, and everything after that separator is masked (`PRIVATE-TOKEN=***`,
//!   `X ***`); anything else (no separator, digits in the first word, a long first word)
//!   is masked whole (`***`), since the first word may then be the secret itself.
//!
//! On top of these rules, a value known to be a secret where it enters (the command line, a
//! `-K` file, netrc, a cookie file, the environment: see [`mark`]) is masked wherever it
//! appears in any text the process writes about the run ([`marked`]), in whatever form a
//! writer would show it (as typed, percent-encoded as a URL shows it, escaped as JSON shows
//! it). The writers (every stderr line from `report`, the forced summary, `--explain`, `-w`
//! on either stream, a panic's message) pass their text through [`marked`] last, so a
//! writer that forgets a rule above still does not print a marked secret.

use std::sync::Mutex;
use url::Url;

/// What a secret is replaced with.
const MASK: &str = "***";

/// Secrets the run knows of, each in every form a writer may show it, longest first (so a
/// secret that holds another is masked whole).
static MARKED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The shortest secret [`marked`] masks wherever it appears, in characters: a shorter one
/// (a password `12`) would mask digits of every count and time in the log. Such a secret is
/// still masked where the rules above find it by its place (a userinfo, a parameter, a
/// header).
const MARK_MIN: usize = 3;

/// The shortest value marked for its name alone, in characters: a query parameter or a
/// header whose name holds a secret word (`code=200`, `X-Auth-Mode: GET`) is a guess, and
/// masking a short everyday word everywhere would hide the log's own words (a method, a
/// status). Values secret by definition (a userinfo, `-u`, Authorization, Cookie, netrc)
/// are marked from [`MARK_MIN`].
const GUESSED_MIN: usize = 6;

/// Marks `secret` as a secret the run was given: from here on, [`marked`] masks it in every
/// text, as typed, percent-encoded as a URL's userinfo, path or query would show it, and
/// escaped as a JSON string would show it. Leading and trailing white space is not part of
/// it; a value shorter than 3 characters is not marked (see [`MARK_MIN`]).
pub fn mark(secret: &str) {
    mark_from(secret, MARK_MIN);
}

/// Marks a value that is secret only by its name's guess (see [`GUESSED_MIN`]): a secret
/// query parameter's, or what `--until-json` wants at a secret pointer.
pub fn mark_guessed(value: &str) {
    mark_from(value, GUESSED_MIN);
}

/// [`mark`], for values of at least `min` characters.
fn mark_from(secret: &str, min: usize) {
    let s = secret.trim();
    if s.chars().count() < min.max(MARK_MIN) {
        return;
    }
    let mut forms = vec![s.to_string()];
    if let Ok(mut u) = Url::parse("http://h/") {
        if u.set_password(Some(s)).is_ok() {
            forms.extend(u.password().map(str::to_string));
        }
        u.set_path(s);
        forms.push(u.path().trim_start_matches('/').to_string());
        u.set_query(Some(s));
        forms.extend(u.query().map(str::to_string));
    }
    forms.push(url::form_urlencoded::byte_serialize(s.as_bytes()).collect());
    if let Ok(json) = serde_json::to_string(s) {
        forms.push(json.trim_matches('"').to_string());
    }
    let mut known = MARKED.lock().unwrap_or_else(|e| e.into_inner());
    for form in forms {
        if form.chars().count() >= MARK_MIN && !known.contains(&form) {
            known.push(form);
        }
    }
    known.sort_by_key(|f| std::cmp::Reverse(f.len()));
}

/// Marks the secrets of a URL as typed (see [`mark`]): what [`url_secrets`] finds (its
/// password from 3 characters; a token as the userinfo, parameters and path segments as
/// guesses, see [`GUESSED_MIN`]), and, when the text does not parse with a host, what
/// [`untrusted`] masks: everything up to the last `@` after the scheme and its part after
/// the first `:` (the password), or, without a `:`, a token without `/`, `?` or `#`.
pub fn mark_url(typed: &str) {
    let parsed = Url::parse(typed)
        .ok()
        .filter(|u| !u.cannot_be_a_base() && u.has_host());
    let password = parsed
        .as_ref()
        .and_then(|u| u.password().map(str::to_string));
    for s in url_secrets(typed) {
        let mark_it = if password.as_ref() == Some(&s) {
            mark
        } else {
            mark_guessed
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
                mark(userinfo);
                mark(password);
            }
            // A token, unless it holds what a path or a query would (`h/?email=a@b`).
            None if !userinfo.contains(['/', '?', '#']) => mark_guessed(userinfo),
            None => {}
        }
    }
}

/// Marks a header's secrets as it enters (`-H`, `-b`): the whole value of a secret header
/// (see [`is_secret_name`]), its credentials after a scheme word (`Bearer TOKEN`,
/// `Basic ...`) and each cookie's value (`a=S1; b=S2`), as guesses (see [`GUESSED_MIN`])
/// unless the header carries credentials by definition (Authorization,
/// Proxy-Authorization, Cookie); in any other header, the secrets of a URL in it (see
/// [`mark_url`]).
pub fn mark_header(name: &str, value: &str) {
    if !is_secret_name(name) {
        if value.contains('@') || value.contains('?') || value.contains('#') {
            mark_url(value.trim());
        }
        return;
    }
    let lower = name.trim().to_ascii_lowercase();
    let mark_it = if CREDENTIAL_HEADERS.contains(&lower.as_str()) {
        mark
    } else {
        mark_guessed
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

/// `text` with every marked secret (see [`mark`]) shown as `***`.
pub fn marked(text: &str) -> String {
    let known = MARKED.lock().unwrap_or_else(|e| e.into_inner());
    mask_all(&known, text)
}

/// [`marked`] for a writer that must not wait on the registry (a panic's message, which may
/// come from a thread holding it): `None` when the registry is busy.
pub fn marked_now(text: &str) -> Option<String> {
    match MARKED.try_lock() {
        Ok(known) => Some(mask_all(&known, text)),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(mask_all(&e.into_inner(), text)),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// `text` with every one of `known` shown as `***`, in order.
fn mask_all(known: &[String], text: &str) -> String {
    known
        .iter()
        .fold(text.to_string(), |acc, s| acc.replace(s.as_str(), MASK))
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

/// Words that mark a header or query parameter name as holding a secret (case-insensitive).
/// (`signature` holds `sig`, `password`, `passwd` hold `pass`, `sessionid` holds `session`,
/// `apikey`, `api_key` hold `key`, `access_token` holds `token`: the README lists these
/// words exactly.)
const SECRET_WORDS: [&str; 11] = [
    "token",
    "key",
    "secret",
    "pass",
    "pwd",
    "jwt",
    "auth",
    "sig",
    "session",
    "cookie",
    "credential",
];

/// Query and fragment parameters that hold secrets, though their names hold none of the
/// words above: OAuth's authorization `code`.
const SECRET_PARAMS: [&str; 1] = ["code"];

/// The one name that holds a secret word but whose value is not a secret: an
/// Idempotency-Key only names a request, and seeing it helps to trace a replay.
const NOT_SECRET_NAME: &str = "idempotency-key";

/// Headers that carry credentials by definition, whatever their name says (RFC 9110
/// sections 11.6.2 and 11.7.2, RFC 6265 sections 4.1 and 4.2).
const CREDENTIAL_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];

/// Whether a header must not follow a redirect to another origin (RFC 9110 section 15.4
/// asks a client to consider removing Authorization, Cookie and the like): every header
/// whose value is a secret by [`is_secret_name`] (Authorization, Cookie, X-Api-Key,
/// PRIVATE-TOKEN, X-Auth-Token, ...). Idempotency-Key is not one: it stays, since the
/// server at the new location needs it to deduplicate.
pub fn is_credential_header(name: &str) -> bool {
    is_secret_name(name)
}

/// Whether a header name marks its value as secret: a credential header (Authorization,
/// Proxy-Authorization, Cookie, Set-Cookie), or a name holding one of the secret words
/// (`token`, `key`, `secret`, `pass`, `pwd`, `jwt`, `auth`, `sig`, `session`, `cookie`,
/// `credential`), Idempotency-Key excepted.
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    if lower == NOT_SECRET_NAME {
        return false;
    }
    CREDENTIAL_HEADERS.contains(&lower.as_str()) || SECRET_WORDS.iter().any(|w| lower.contains(w))
}

/// Whether a query or fragment parameter name (decoded) marks its value as secret: `code`,
/// or a name holding a secret word (`access_token`, `api_key`, `passwd`, `sessionid`,
/// `jwt`, ...), an idempotency key (`idempotency_key`, `Idempotency-Key`) excepted.
fn is_secret_param(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    if lower.replace('_', "-") == NOT_SECRET_NAME {
        return false;
    }
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

/// A parameter name as the server reads it: percent-decoded, `+` as a space.
fn decoded(name: &str) -> String {
    url::form_urlencoded::parse(name.as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// Text percent-decoded, `+` as a space (invalid UTF-8 replaced), separators included:
/// what a value may become once whoever receives it decodes it.
fn decoded_text(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let digit = |j: usize| b.get(j).and_then(|&c| hex(c));
                match (digit(i + 1), digit(i + 2)) {
                    (Some(h), Some(l)) => {
                        out.push(h << 4 | l);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What separates parameters, for masking: `&` and `;`, and `?`, since a value that holds
/// one (`a=1?token=S`) may be read as a query again by whoever receives it.
const PARAM_SEPARATORS: [char; 3] = ['&', ';', '?'];

/// How many times a parameter value is decoded in search of secrets of its own (a URL in a
/// parameter, encoded once per hop). A value still encoded after that is masked.
const NESTING_MAX: usize = 3;

/// Whether a parameter's value is masked (`all`: every non-empty one): its name is secret,
/// or the value, decoded, holds a secret of its own (see [`holds_secret`]).
fn secret_pair(name: &str, value: &str, all: bool) -> bool {
    !value.is_empty()
        && (all || is_secret_param(&decoded(name)) || holds_secret(value, NESTING_MAX))
}

/// Whether a parameter value, decoded, holds a secret: a userinfo (`https://u:pw@h/`,
/// `//TOKEN@h`, `u:pw@h`; see [`userinfo_at`]) or a parameter that is masked
/// (`/cb?token=S`, `token=S`), searched `depth` decodings deep (a value encoded twice is
/// decoded twice).
fn holds_secret(value: &str, depth: usize) -> bool {
    let d = decoded_text(value);
    if depth == 0 {
        // Still encoded: when in doubt, mask.
        return d != value;
    }
    has_userinfo(&d)
        || (d != value && holds_secret(&d, depth - 1))
        || d.split(['&', ';', '?', '#']).any(|pair| {
            pair.split_once('=').is_some_and(|(k, v)| {
                !v.is_empty() && (is_secret_param(&decoded(k)) || holds_secret(v, depth - 1))
            })
        })
}

/// Where a `/`-separated segment of a path (or of a value) that looks like a userinfo ends:
/// the index of its last `@` (or `%40`) when, before it, there is a `:` (`u:pw@h`,
/// `ht!tp:u:pw@h`; `%3A` counts too) or a `//`, or when the segment follows a `//`
/// (`after_slashes`: `//TOKEN@h`). `@me`, `bob@example.test` and `a:b` are not.
fn userinfo_at(segment: &str, after_slashes: bool) -> Option<usize> {
    let lower = segment.to_ascii_lowercase();
    let at = lower.rfind('@').max(lower.rfind("%40"))?;
    let head = decoded_text(&segment[..at]);
    (after_slashes || head.contains(':') || head.contains("//")).then_some(at)
}

/// Whether text (a decoded value) holds a segment that looks like a userinfo.
fn has_userinfo(s: &str) -> bool {
    let segments: Vec<&str> = s.split('/').collect();
    (0..segments.len())
        .any(|i| userinfo_at(segments[i], i >= 2 && segments[i - 1].is_empty()).is_some())
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

/// Parameters (a query or a fragment), split on `&`, `;` and `?` with the separators kept,
/// with their values masked: every value when `all`, else those [`secret_pair`] picks. A
/// bare item (no `=`) is masked when `all`, or when it holds a userinfo (`?http://u:pw@h/`);
/// an empty value stays empty.
fn params(s: &str, all: bool) -> String {
    params_after(s, all, false).0
}

/// [`params`], also masking a bare item that follows a masked value (`token=S&S2`, a
/// secret holding an unencoded `&`, `;`, `?` or `#`: its rest reads as a bare item);
/// `after_secret`: the text before `s` ended with a masked value (a query before its
/// fragment). Returns the text and whether it ends with a masked value.
fn params_after(s: &str, all: bool, mut after_secret: bool) -> (String, bool) {
    let mut out = String::with_capacity(s.len());
    for item in s.split_inclusive(PARAM_SEPARATORS) {
        let (pair, sep) = match item.strip_suffix(PARAM_SEPARATORS) {
            Some(p) => (p, &item[p.len()..]),
            None => (item, ""),
        };
        match pair.split_once('=') {
            Some((k, v)) if secret_pair(k, v, all) => {
                out.push_str(k);
                out.push('=');
                out.push_str(MASK);
                after_secret = true;
            }
            None if !pair.is_empty()
                && (all || after_secret || has_userinfo(&decoded_text(pair))) =>
            {
                out.push_str(MASK);
                after_secret = true;
            }
            _ => {
                out.push_str(pair);
                after_secret = false;
            }
        }
        out.push_str(sep);
    }
    (out, after_secret)
}

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

/// Text that should have been a URL but did not parse: nothing in it can be trusted to be
/// what it looks like. Everything up to the last `@` after the scheme (`x://`, when there is
/// one) is taken for a userinfo and masked whole; after it, every query and fragment value
/// is masked, whatever its name.
fn untrusted(s: &str) -> String {
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
/// password (or a userinfo without one), what [`url()`] masks in the path, and the values of
/// the parameters it masks, as typed.
pub fn url_secrets(s: &str) -> Vec<String> {
    let mut found = Vec::new();
    match Url::parse(s) {
        Ok(u) => {
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
            let mut after_secret = last_path_params_end_masked(&u);
            for part in [u.query(), u.fragment()].into_iter().flatten() {
                after_secret = param_secrets(part, after_secret, &mut found);
            }
            if userinfo_in_first_segment(&u) {
                let hidden = first_segment(&u).rsplit_once('@').map(|(x, _)| x);
                found.extend(hidden.map(str::to_string));
            }
        }
        // Text that does not parse: the secret parameters after its first `?`, `#` or `;`.
        Err(_) => {
            if let Some(at) = s.find(['?', '#', ';']) {
                param_secrets(&s[at + 1..], false, &mut found);
            }
        }
    }
    found
}

/// The values of the parameters in `part` (a query, a fragment, a path segment's
/// parameters) that [`params_after`] masks, as typed; `after_secret` as there. Returns
/// whether `part` ends with a masked value.
fn param_secrets(part: &str, mut after_secret: bool, found: &mut Vec<String>) -> bool {
    for pair in part.split([&PARAM_SEPARATORS[..], &['#']].concat().as_slice()) {
        match pair.split_once('=') {
            Some((k, v)) if secret_pair(k, v, false) => found.push(v.to_string()),
            None if !pair.is_empty() && (after_secret || has_userinfo(&decoded_text(pair))) => {
                found.push(pair.to_string())
            }
            _ => {
                after_secret = false;
                continue;
            }
        }
        after_secret = true;
    }
    after_secret
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_secrets_are_masked_in_every_form_a_writer_shows() {
        mark("Mk1 \"q\"/ä#x");
        mark("ab");
        let forms = [
            "Mk1 \"q\"/ä#x",
            "Mk1%20%22q%22%2F%C3%A4%23x",
            "Mk1+%22q%22%2F%C3%A4%23x",
            "Mk1 \\\"q\\\"/ä#x",
        ];
        for form in forms {
            let shown = marked(&format!("<{form}>"));
            assert_eq!(shown, "<***>", "{form}");
        }
        // A secret of one or two characters is masked only where the rules find it.
        assert_eq!(marked("ab 12"), "ab 12");
    }

    #[test]
    fn a_secret_holding_a_delimiter_is_masked_whole() {
        // A token holding '/' or '\\': the parser reads its first part as the host.
        for typed in ["http://tokA/tokB@h.test:8/p", "http://tokA\\tokB@h.test/p"] {
            let shown = url_text(typed);
            assert_eq!(
                shown.split_once('@').map(|(a, _)| a),
                Some("http://***"),
                "{shown}"
            );
            assert!(!shown.to_lowercase().contains("tok"), "{shown}");
        }
        // A secret value holding '&', ';', '?' or '#': its rest is a bare item, masked too.
        for (typed, shown) in [
            ("http://h/?token=S1&S2&a=1", "http://h/?token=***&***&a=1"),
            (
                "http://h/?token=S1;S2?S3&a=1",
                "http://h/?token=***;***?***&a=1",
            ),
            ("http://h/?token=S1#S2&a=1", "http://h/?token=***#***&a=1"),
            (
                "http://h/p;jsessionid=S1?S2",
                "http://h/p;jsessionid=***?***",
            ),
            ("http://h/?a=1&b&token=S1", "http://h/?a=1&b&token=***"),
        ] {
            assert_eq!(url_text(typed), shown, "{typed}");
        }
        assert_eq!(
            url_secrets("http://h/?token=S1&S2#S3&a=1"),
            ["S1", "S2", "S3"]
        );
        // Ordinary paths with an '@' stay readable.
        for typed in [
            "http://h/@scope/pkg",
            "http://h/users/bob@example.test",
            "http://h/p;email=a@b",
            "http://h/a@b%2Fc",
        ] {
            assert_eq!(url_text(typed), typed);
        }
    }

    #[test]
    fn a_writer_that_must_not_wait_masks_too() {
        mark("Mn1secret");
        assert_eq!(marked_now("a Mn1secret b").as_deref(), Some("a *** b"));
        let held = MARKED.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(marked_now("Mn1secret"), None);
        drop(held);
    }

    #[test]
    fn only_what_reads_as_a_userinfo_is_marked_in_text_that_does_not_parse() {
        mark_url("http://exa mple/Mv1path/?email=Mv2mail@b");
        mark_url("http://bob@Mv3host.test/");
        mark_url("http://Mv4token@exa mple/");
        mark_url("http://bob:Mv5pw@exa mple/");
        assert_eq!(
            marked("Mv1path Mv2mail Mv3host bob Mv4token Mv5pw"),
            "Mv1path Mv2mail Mv3host bob *** ***"
        );
    }

    #[test]
    fn short_values_secret_only_by_their_name_are_not_marked() {
        mark_url("http://h/?code=200&auth_mode=POST&token=Mg1long");
        mark_header("X-Auth-Method", "GET");
        mark_header("Cookie", "a=Mg2");
        assert_eq!(marked("GET 200 POST"), "GET 200 POST");
        assert_eq!(marked("Mg1long Mg2"), "*** ***");
    }

    #[test]
    fn a_url_s_secrets_are_marked_as_typed_even_when_it_does_not_parse() {
        mark_url("http://bob:Mu1pw@exa mple/?token=Mu2tok");
        mark_url("bob:Mu3pw@intranet/page");
        mark_url("http://u:12#Mu4pw@h/");
        mark_url("http://h/report.csv;jsessionid=Mu5jsid");
        mark_header("Cookie", "a=1; sid=Mu6ck");
        mark_header("Authorization", "Bearer Mu7br");
        mark_header("Origin", "http://bob:Mu8or@host:99999/");
        let shown = marked("Mu1pw Mu2tok Mu3pw 12#Mu4pw Mu5jsid Mu6ck Mu7br Mu8or");
        assert!(!shown.contains("Mu"), "{shown}");
    }

    #[test]
    fn a_userinfo_behind_a_question_mark_or_hash_is_masked() {
        for typed in [
            "http://u:12#pw@h/",
            "http://u:12?pw@h/",
            "http://u:a#b?c@h:8/x",
        ] {
            assert!(hides_userinfo(typed), "{typed}");
            let shown = url_text(typed);
            assert!(shown.starts_with("http://***@h"), "{typed}: {shown}");
            assert!(!shown.contains("12") && !shown.contains("pw"), "{shown}");
        }
        for typed in [
            "http://h/?email=a@b",
            "http://u:pw@h/?x=1#y",
            "http://h:8/#a",
            "http://a@b/?c",
        ] {
            assert!(!hides_userinfo(typed), "{typed}");
        }
    }

    #[test]
    fn referer_and_origin_values_that_do_not_parse_are_masked_as_urls() {
        assert_eq!(
            header_value("Referer", "bob:PW1@intranet/page"),
            "***@intranet/page"
        );
        assert_eq!(
            header_value("Origin", "http://bob:PW2@host:99999/"),
            "http://***@host:99999/"
        );
        assert_eq!(
            header_value("X-Back", "ftp://bob:PW3@h/"),
            "ftp://bob:***@h/"
        );
        assert_eq!(header_value("X-Where", "u:PW4@h"), "***@h");
        assert_eq!(header_value("From", "bob@example.test"), "bob@example.test");
        assert_eq!(header_value("Referer", "intranet/page"), "intranet/page");
    }

    #[test]
    fn path_parameters_are_among_a_url_s_secrets() {
        assert_eq!(
            url_secrets("http://h/d/report.csv;jsessionid=S1;v=2/x;token=S2?page=1"),
            ["S1", "S2"]
        );
        assert_eq!(url_secrets("http://bob:pw@exa mple/?token=S3&a=1"), ["S3"]);
    }

    #[test]
    fn path_parameters_are_masked_in_relative_and_unparsable_urls_too() {
        for shown in [
            header_value("Content-Location", "/a;jsessionid=S1"),
            header_value("Referer", "http://h/c;jsessionid=S2"),
            url_text("http://exa mple/app;jsessionid=S3"),
        ] {
            assert!(
                !shown.contains("S1") && !shown.contains("S2") && !shown.contains("S3"),
                "{shown}"
            );
        }
        assert_eq!(header_value("Referer", "http://h/plain"), "http://h/plain");
    }

    #[test]
    fn path_parameters_are_masked_like_query_parameters() {
        let u = Url::parse("http://h/app;jsessionid=S1/x;v=2;token=S2?q=1").unwrap();
        let shown = url(&u);
        assert!(!shown.contains("S1") && !shown.contains("S2"), "{shown}");
        assert!(shown.contains(";v=2"), "{shown}");
    }

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
    fn question_marks_separate_parameters_too() {
        let u = Url::parse("http://h/?a=1?token=SECRET").unwrap();
        assert_eq!(url(&u), "http://h/?a=1?token=***");
        let u = Url::parse("http://h/?a=1?b=2;c=3&sig=S#x=1?id_token=S2?y=2").unwrap();
        assert_eq!(
            url(&u),
            "http://h/?a=1?b=2;c=3&sig=***#x=1?id_token=***?y=2"
        );
        // A leading or repeated '?' is a separator, no more.
        let u = Url::parse("http://h/??token=S??page=2").unwrap();
        assert_eq!(url(&u), "http://h/??token=***??page=2");
        let s = url_secrets("http://h/?a=1?token=S3CRET#b=2?jwt=S3CRET2");
        assert_eq!(s, ["S3CRET", "S3CRET2"]);
        // Text that does not parse: every value is masked, split the same way.
        assert_eq!(
            untrusted("http://exa mple/?a=1?b=2"),
            "http://exa mple/?a=***?b=***"
        );
    }

    #[test]
    fn values_that_hold_secrets_of_their_own_are_masked() {
        for q in [
            "a=1%3Ftoken%3DSECRET",
            "a=1%26token%3DSECRET",
            "a=token=SECRET",
            "next=%2Fcb%3Faccess_token%3DSECRET",
            "next=https%3A%2F%2Fh%2Fcb%3Fpage%3D2%26code%3DSECRET",
            // Encoded twice.
            "next=%252Fcb%253Ftoken%253DSECRET",
            "next=https%3A%2F%2Fu%3ASECRET%40h%2F",
            "next=https://TOKSECRET@h/",
        ] {
            let u = Url::parse(&format!("http://h/?{q}&page=2")).unwrap();
            let shown = url(&u);
            assert!(!shown.contains("SECRET"), "{q}: {shown}");
            assert!(shown.ends_with("=***&page=2"), "{q}: {shown}");
            assert!(
                url_secrets(u.as_str()).iter().any(|s| s.contains("SECRET")),
                "{q}"
            );
        }
        // A bare item that is a URL with a userinfo.
        let u = Url::parse("http://h/r?https://u:SECRET@x/&page=2").unwrap();
        assert_eq!(url(&u), "http://h/r?***&page=2");
        // Ordinary nested values stay visible.
        for q in [
            "next=%2Fcb%3Fpage%3D2",
            "email=bob%40example.test",
            "q=a%3Db",
            "next=https%3A%2F%2Fh%2Fv1%2Fusers%2F%40me",
            "t=10:30",
        ] {
            let u = Url::parse(&format!("http://h/?{q}")).unwrap();
            assert_eq!(url(&u), format!("http://h/?{q}"), "{q}");
        }
    }

    #[test]
    fn userinfo_in_the_path_is_masked() {
        // A Location that does not parse as a URL resolves as a relative path.
        let base = Url::parse("http://127.0.0.1:9/").unwrap();
        let u = base.join("ht!tp://u:SECRET@x y/?token=S").unwrap();
        assert_eq!(url(&u), "http://127.0.0.1:9/ht!tp://***@x%20y/?token=***");
        for (path, shown) in [
            ("/a/u:SECRET@h/b", "/a/***@h/b"),
            ("/a//TSECRET@h/b", "/a//***@h/b"),
            ("//TSECRET@h", "//***@h"),
            ("/x:u:SECRET@h", "/***@h"),
            ("/p/u%3ASECRET%40h", "/p/***%40h"),
            ("/p/u%3ASECRET@h", "/p/***@h"),
            ("/p/ht%3A%2F%2Fu%3ASECRET%40h", "/p/***%40h"),
            ("/u:SE@CRET@h", "/***@h"),
        ] {
            let u = Url::parse(&format!("http://h.test{path}")).unwrap();
            assert_eq!(url(&u), format!("http://h.test{shown}"), "{path}");
            let found = url_secrets(u.as_str());
            assert!(
                found
                    .iter()
                    .any(|s| s.contains("SECRET") || s.contains("SE@CRET")),
                "{path}: {found:?}"
            );
        }
        // Ordinary paths stay readable.
        for path in [
            "/a:b/c",
            "/v1/users/@me",
            "/@scope/pkg",
            "/users/bob@example.test",
            "/a//b",
            "/files/2024-01-01T10:30:00Z",
            "/",
        ] {
            let u = Url::parse(&format!("http://h.test{path}")).unwrap();
            assert_eq!(url(&u), format!("http://h.test{path}"), "{path}");
            assert!(url_secrets(u.as_str()).is_empty(), "{path}");
        }
        // The Location header itself, unresolved, as -v shows it.
        assert_eq!(
            header_value("Location", "ht!tp://u:SECRET@x y/?token=S"),
            "ht!tp://***@x y/?token=***"
        );
        assert_eq!(
            header_value("Location", "/ht!tp://u:SECRET@x/"),
            "/ht!tp://***@x/"
        );
    }

    #[test]
    fn secret_words_and_names() {
        for n in [
            "jwt",
            "JWT",
            "pwd",
            "passwd",
            "pass",
            "session",
            "sessionid",
            "auth",
            "key",
            "apikey",
            "api-key",
            "x_jwt_assertion",
            "monkey",
            "auth_code",
            "code",
        ] {
            assert!(is_secret_param(n), "{n}");
        }
        for n in ["idempotency_key", "Idempotency-Key", "page", "state"] {
            assert!(!is_secret_param(n), "{n}");
        }
        for n in [
            "X-Jwt",
            "X-Pwd",
            "X-Auth-Token",
            "PRIVATE-TOKEN",
            "X-Api-Key",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn secret_headers_do_not_follow_a_redirect() {
        for n in [
            "Authorization",
            "proxy-authorization",
            "Cookie",
            "X-Api-Key",
            "PRIVATE-TOKEN",
            "X-Auth-Token",
            "X-Session-Id",
            "X-Amz-Signature",
            "X-Client-Secret",
            "X-Jwt",
        ] {
            assert!(is_credential_header(n), "{n}");
        }
        for n in [
            "Idempotency-Key",
            "idempotency-key",
            "Accept",
            "X-Trace",
            "Content-Type",
        ] {
            assert!(!is_credential_header(n), "{n}");
        }
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
}
