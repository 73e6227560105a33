//! Which names mark a value as secret: header names (Authorization, Cookie, a name holding
//! a secret word) and query or fragment parameter names (`access_token`, `code`), and the
//! decoding a name or value goes through before it is judged. Pure.

/// Words that mark a header or query parameter name as holding a secret (case-insensitive).
/// (`signature` holds `sig`, `password`, `passwd` hold `pass`, `sessionid` holds `session`,
/// `apikey`, `api_key` hold `key`, `access_token` holds `token`: docs/output.md lists these
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
pub(super) const CREDENTIAL_HEADERS: [&str; 4] = [
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
pub(super) fn is_secret_param(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    if lower.replace('_', "-") == NOT_SECRET_NAME {
        return false;
    }
    SECRET_PARAMS.contains(&lower.as_str()) || SECRET_WORDS.iter().any(|w| lower.contains(w))
}

/// A parameter name as the server reads it: percent-decoded, `+` as a space.
pub(super) fn decoded(name: &str) -> String {
    url::form_urlencoded::parse(name.as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// Text percent-decoded, `+` as a space (invalid UTF-8 replaced), separators included:
/// what a value may become once whoever receives it decodes it.
pub(super) fn decoded_text(s: &str) -> String {
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
