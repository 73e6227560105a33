//! Secrets told by their place in parameters (a query, a fragment, a path segment's
//! `;name=value`): a value whose name is secret, a value that holds a secret of its own (a
//! URL with a userinfo, a secret parameter, encoded once per hop), and what follows a masked
//! value. Masking them ([`params`], [`params_after`]) and finding them as typed
//! ([`param_secrets`]). Pure.

use super::MASK;
use super::names::{decoded, decoded_text, is_secret_param};

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
pub(super) fn userinfo_at(segment: &str, after_slashes: bool) -> Option<usize> {
    let lower = segment.to_ascii_lowercase();
    let at = lower.rfind('@').max(lower.rfind("%40"))?;
    let head = decoded_text(&segment[..at]);
    (after_slashes || head.contains(':') || head.contains("//")).then_some(at)
}

/// Whether text (a decoded value) holds a segment that looks like a userinfo.
pub(super) fn has_userinfo(s: &str) -> bool {
    let segments: Vec<&str> = s.split('/').collect();
    (0..segments.len())
        .any(|i| userinfo_at(segments[i], i >= 2 && segments[i - 1].is_empty()).is_some())
}

/// Parameters (a query or a fragment), split on `&`, `;` and `?` with the separators kept,
/// with their values masked: every value when `all`, else those [`secret_pair`] picks. A
/// bare item (no `=`) is masked when `all`, or when it holds a userinfo (`?http://u:pw@h/`);
/// an empty value stays empty.
pub(super) fn params(s: &str, all: bool) -> String {
    params_after(s, all, false).0
}

/// [`params`], also masking a bare item that follows a masked value (`token=S&S2`, a
/// secret holding an unencoded `&`, `;`, `?` or `#`: its rest reads as a bare item);
/// `after_secret`: the text before `s` ended with a masked value (a query before its
/// fragment). Returns the text and whether it ends with a masked value.
pub(super) fn params_after(s: &str, all: bool, mut after_secret: bool) -> (String, bool) {
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

/// The values of the parameters in `part` (a query, a fragment, a path segment's
/// parameters) that [`params_after`] masks, as typed; `after_secret` as there. Returns
/// whether `part` ends with a masked value.
pub(super) fn param_secrets(part: &str, mut after_secret: bool, found: &mut Vec<String>) -> bool {
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
