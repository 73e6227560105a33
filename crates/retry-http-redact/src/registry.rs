//! The registry of secrets the run was given: each marked where it enters (see
//! [`mark`](super::mark)), then masked in every text a writer shows ([`marked`]), in every
//! form a writer may show it (as typed, percent-encoded as a URL shows it, escaped as JSON
//! shows it).

use super::MASK;
use aho_corasick::AhoCorasick;
use std::collections::HashSet;
use std::sync::Mutex;
use url::Url;

/// Secrets the run knows of, each in every form a writer may show it.
pub(super) static MARKED: Mutex<Marked> = Mutex::new(Marked::new());

/// The marked secrets, and a matcher of them all, built when a text is first masked after
/// a secret was added. A run of many URLs may mark a secret per URL (a token in each
/// query): a set and one matcher keep marking and masking in time linear in the texts, where
/// a list searched and sorted per mark, and scanned per secret for every line, took minutes
/// past the deadline for 20,000 URLs.
pub(super) struct Marked {
    /// Every form of every secret, once.
    forms: Option<HashSet<String>>,
    /// A matcher of `forms` (None: not built since the last mark, or nothing marked).
    matcher: Option<AhoCorasick>,
}

impl Marked {
    const fn new() -> Marked {
        Marked {
            forms: None,
            matcher: None,
        }
    }

    /// Adds `form` (the matcher is built again when it was new).
    fn add(&mut self, form: String) {
        if self.forms.get_or_insert_with(HashSet::new).insert(form) {
            self.matcher = None;
        }
    }

    /// `text` with every occurrence of every form shown as `***`: the bytes of all
    /// occurrences (overlapping ones included) are masked, each run of overlapping ones
    /// as one `***`.
    fn mask(&mut self, text: &str) -> String {
        let Some(forms) = self.forms.as_ref().filter(|f| !f.is_empty()) else {
            return text.to_string();
        };
        if self.matcher.is_none() {
            self.matcher = AhoCorasick::new(forms.iter()).ok();
        }
        match &self.matcher {
            Some(m) => mask_spans(text, m),
            // A matcher that cannot be built (too many patterns for its limits): one by one.
            None => forms
                .iter()
                .fold(text.to_string(), |acc, f| acc.replace(f.as_str(), MASK)),
        }
    }
}

/// `text` with the spans `m` finds (overlapping ones merged) shown as `***`.
fn mask_spans(text: &str, m: &AhoCorasick) -> String {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for found in m.find_overlapping_iter(text) {
        let (start, end) = (found.start(), found.end());
        match spans.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => spans.push((start, end)),
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        out.push_str(&text[at..start]);
        out.push_str(MASK);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

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

/// Marks a value secret by definition (a password, a token, `-u`, netrc, a credential
/// header's value), from [`MARK_MIN`] characters.
pub(super) fn given(secret: &str) {
    mark_from(secret, MARK_MIN);
}

/// Marks a value secret only by its name's guess (a secret query parameter's, what
/// `--until-json` wants at a secret pointer), from [`GUESSED_MIN`] characters.
pub(super) fn guessed(value: &str) {
    mark_from(value, GUESSED_MIN);
}

/// Marks `secret` as a secret the run was given: from here on, [`marked`] masks it in every
/// text, as typed, percent-encoded as a URL's userinfo, path or query would show it, and
/// escaped as a JSON string would show it. Leading and trailing white space is not part of
/// it; a value shorter than `min` characters (never less than [`MARK_MIN`]) is not marked.
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
        if form.chars().count() >= MARK_MIN {
            known.add(form);
        }
    }
}

/// `text` with every marked secret (see [`mark`](super::mark)) shown as `***`.
pub fn marked(text: &str) -> String {
    let mut known = MARKED.lock().unwrap_or_else(|e| e.into_inner());
    known.mask(text)
}

/// Makes the matcher of the secrets marked so far, when a mark has made it stale, so that
/// the texts masked next take time linear in their length alone. A writer whose lines are
/// bounded in time (a usage error's without a deadline) asks
/// for it before its bound starts: for a list of 100,000 URLs with tokens the matcher
/// takes seconds to make, and a bound of 2 s ended such a run with exit 2 and no line.
pub fn ready() {
    let mut known = MARKED.lock().unwrap_or_else(|e| e.into_inner());
    known.mask("");
}

/// [`marked`] for a writer that must not wait on the registry (a panic's message, which may
/// come from a thread holding it): `None` when the registry is busy.
pub fn marked_now(text: &str) -> Option<String> {
    match MARKED.try_lock() {
        Ok(mut known) => Some(known.mask(text)),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner().mask(text)),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}
