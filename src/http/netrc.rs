//! `--netrc`, `--netrc-file`, `--netrc-optional`: the login and password for the URL's
//! host from a netrc file (the tokens `machine`, `default`, `login`, `password`, `account`;
//! a `macdef` is skipped up to its blank line), sent as Basic authentication when the
//! command line gives none. Redirects drop it like any credential (see `redirect`). Nothing
//! read from the file is ever quoted in a message.

use crate::config::RequestConfig;
use crate::config::network::{Netrc, percent_decoded};
use base64::Engine;
use std::path::PathBuf;

/// The largest netrc file read, in bytes.
const MAX_NETRC: u64 = 1 << 20;

/// One login of a netrc file.
#[derive(Debug, PartialEq, Eq)]
struct Login {
    login: String,
    password: String,
}

/// One entry of a netrc file: `machine NAME` (None: `default`) and what it gives.
#[derive(Default)]
struct Entry {
    machine: Option<String>,
    login: Option<String>,
    password: Option<String>,
}

/// The entries of netrc `text`, in order. `Err`: a quoted word is not closed (what follows
/// would be read as a password, newlines and all).
fn entries(text: &str) -> Result<Vec<Entry>, String> {
    let mut words = words(text);
    let mut out: Vec<Entry> = Vec::new();
    while let Some(w) = words.next() {
        match w.as_str() {
            "machine" => out.push(Entry {
                machine: Some(words.next().unwrap_or_default()),
                ..Entry::default()
            }),
            "default" => out.push(Entry::default()),
            "macdef" => words.skip_macro(),
            "login" | "password" | "account" => {
                let value = words.next();
                match (out.last_mut(), w.as_str()) {
                    (Some(e), "login") => e.login = value,
                    (Some(e), "password") => e.password = value,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    match words.unterminated {
        true => Err("a quoted word is not closed: expected a closing \"".into()),
        false => Ok(out),
    }
}

/// The login for `host` in netrc `text`: the first `machine` entry of that name (compared
/// without case), else the first `default` entry; an entry without a login gives none.
///
/// `Err`: the file cannot be read as netrc, or the login holds a `:`, which Basic
/// authentication (RFC 7617 section 2) cannot carry.
fn find(text: &str, host: &str) -> Result<Option<Login>, String> {
    let all = entries(text)?;
    let exact = all.iter().find(|e| {
        e.machine
            .as_deref()
            .is_some_and(|m| m.eq_ignore_ascii_case(host))
    });
    let Some(entry) = exact.or_else(|| all.iter().find(|e| e.machine.is_none())) else {
        return Ok(None);
    };
    let Some(login) = entry.login.clone() else {
        return Ok(None);
    };
    if login.contains(':') {
        return Err(format!(
            "the login for {host} holds a ':', which Basic authentication cannot carry"
        ));
    }
    Ok(Some(Login {
        login,
        password: entry.password.clone().unwrap_or_default(),
    }))
}

/// The words of a netrc file: separated by white space, a `"quoted word"` may hold spaces
/// (with `\"` and `\\` escapes).
struct Words<'a> {
    rest: &'a str,
    /// A quoted word ran to the end of the file.
    unterminated: bool,
}

fn words(text: &str) -> Words<'_> {
    Words {
        rest: text,
        unterminated: false,
    }
}

impl Words<'_> {
    /// Skips a macro definition: up to the first empty line.
    fn skip_macro(&mut self) {
        self.rest = match self.rest.find("\n\n") {
            Some(i) => &self.rest[i + 2..],
            None => "",
        };
    }
}

impl Iterator for Words<'_> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        let s = self.rest.trim_start();
        if s.is_empty() {
            self.rest = s;
            return None;
        }
        let Some(quoted) = s.strip_prefix('"') else {
            let end = s.find(char::is_whitespace).unwrap_or(s.len());
            self.rest = &s[end..];
            return Some(s[..end].to_string());
        };
        let mut word = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.rest = &quoted[i + 1..];
                    return Some(word);
                }
                '\\' => word.extend(chars.next().map(|(_, e)| e)),
                c => word.push(c),
            }
        }
        self.rest = "";
        self.unterminated = true;
        None
    }
}

/// The netrc file to read: `--netrc-file`, else `$HOME/.netrc`.
fn path(spec: &Netrc) -> Result<PathBuf, String> {
    if let Some(f) = &spec.file {
        return Ok(f.clone());
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".netrc")),
        None => {
            Err("--netrc: HOME is not set, so there is no ~/.netrc: give --netrc-file FILE".into())
        }
    }
}

/// The text of the netrc file; None when it is absent and `--netrc-optional` allows that.
pub fn read(spec: &Netrc) -> Result<Option<String>, String> {
    let path = match path(spec) {
        Ok(p) => p,
        Err(_) if spec.optional => return Ok(None),
        Err(e) => return Err(e),
    };
    let named = path.display();
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && spec.optional => return Ok(None),
        Err(e) => {
            return Err(format!(
                "cannot read the netrc file {named}: {e} (--netrc-optional makes an absent file fine)"
            ));
        }
    };
    let bytes = crate::files::read_bounded(file, MAX_NETRC)
        .map_err(|e| format!("cannot read the netrc file {named}: {e}"))?
        .ok_or_else(|| {
            format!("the netrc file {named} is larger than 1 MiB: expected a netrc file")
        })?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("the netrc file {named} is not UTF-8 text"))
}

/// Adds `url`'s user information as `Authorization: Basic`, user and password
/// percent-decoded first (RFC 3986 section 3.2.1 allows only their encoded form in a URL;
/// `http://us%3Aer:p%40ss@host/` sends `us:er` and `p@ss`, as curl does), unless an
/// Authorization header is already there (`-u`, `-H`, `--oauth2-bearer`: they win, as in
/// curl). Left to the HTTP library, the encoded form would be sent. The header is masked in
/// the log like any Authorization.
fn url_credentials(req: &RequestConfig, url: &url::Url) -> Option<(String, String)> {
    let has_auth = req
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("authorization"));
    if has_auth {
        return None;
    }
    let token = crate::config::network::userinfo_token(url)?;
    Some(("Authorization".into(), format!("Basic {token}")))
}

/// The `Authorization: Basic` to add, unless one is already there (`-u`, `-H`): the login
/// that `text` (the netrc file's, see [`read`]) gives for `url`'s host when the URL has
/// no user information, or has the entry's login as its user and no password (curl's
/// rule); else the URL's user information, decoded (see [`url_credentials`]). The header
/// is masked in the log like any Authorization. `Err`: the netrc file cannot be read as
/// one (a usage error: nothing is sent).
pub fn credentials(
    req: &RequestConfig,
    url: &url::Url,
    text: Option<&str>,
) -> Result<Option<(String, String)>, String> {
    if let Some(spec) = &req.network.netrc {
        let has_auth = req
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"));
        // A URL with a user but no password takes the password of that user's netrc entry,
        // as curl does; a URL with a password, or an Authorization given, takes nothing.
        if !has_auth && url.password().is_none() {
            let host = url
                .host_str()
                .unwrap_or("")
                .trim_start_matches('[')
                .trim_end_matches(']');
            let found = match text.map(|t| find(t, host)).transpose() {
                Ok(found) => found.flatten(),
                Err(why) => {
                    let named =
                        path(spec).map_or_else(|_| "~/.netrc".into(), |p| p.display().to_string());
                    return Err(format!("the netrc file {named}: {why}"));
                }
            };
            let user = percent_decoded(url.username());
            if let Some(found) = found.filter(|f| user.is_empty() || f.login.as_bytes() == user) {
                // The password is a secret from here on, wherever a writer might show it.
                crate::redact::mark(crate::redact::Secret::Given(&found.password));
                let pair = format!("{}:{}", found.login, found.password);
                let token = base64::engine::general_purpose::STANDARD.encode(pair.as_bytes());
                crate::redact::mark(crate::redact::Secret::Given(&token));
                return Ok(Some(("Authorization".into(), format!("Basic {token}"))));
            }
        }
    }
    Ok(url_credentials(req, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(l: &str, p: &str) -> Result<Option<Login>, String> {
        Ok(Some(Login {
            login: l.into(),
            password: p.into(),
        }))
    }

    #[test]
    fn user_information_is_percent_decoded_byte_for_byte() {
        assert_eq!(percent_decoded("us%3Aer"), b"us:er");
        assert_eq!(percent_decoded("p%40ss%25w%20rd"), b"p@ss%w rd");
        // Not an escape: kept as typed, as curl keeps it.
        assert_eq!(percent_decoded("100%"), b"100%");
        assert_eq!(percent_decoded("a%zzb%4"), b"a%zzb%4");
        assert_eq!(percent_decoded("%C3%A9%ff"), [0xC3, 0xA9, 0xFF]);
        assert_eq!(percent_decoded(""), b"");
    }

    #[test]
    fn the_machine_then_the_default() {
        let text = "machine a.test login alice password one\n\
                    default login anyone password any\n\
                    machine b.test\n  login bob\n  password \"two words\"\n";
        assert_eq!(find(text, "a.test"), login("alice", "one"));
        assert_eq!(find(text, "B.TEST"), login("bob", "two words"));
        assert_eq!(find(text, "c.test"), login("anyone", "any"));
        assert_eq!(
            find("machine a.test login x password y", "c.test"),
            Ok(None)
        );
        assert_eq!(
            find(
                "machine a login x password y machine a login z password w",
                "a"
            ),
            login("x", "y"),
            "the first entry of a name"
        );
    }

    #[test]
    fn macros_and_accounts_are_skipped() {
        let text = "macdef init\ncd /pub\nmachine evil login no password no\n\n\
                    machine a.test account acct login alice password \"p\\\"w\"\n";
        assert_eq!(find(text, "a.test"), login("alice", "p\"w"));
        assert_eq!(find(text, "evil"), Ok(None), "inside the macro");
        assert_eq!(
            find("machine a.test login alice", "a.test"),
            login("alice", "")
        );
    }

    #[test]
    fn what_cannot_be_sent_as_meant_is_an_error() {
        let open = find("machine a.test login alice password \"secret\n", "a.test");
        assert!(
            open.as_ref().is_err_and(|e| e.contains("not closed")),
            "{open:?}"
        );
        assert!(!format!("{open:?}").contains("secret"));
        let colon = find("machine a.test login \"bo:b\" password p", "a.test");
        assert!(colon.is_err_and(|e| e.contains("cannot carry")));
        assert_eq!(find("machine a.test password p", "a.test"), Ok(None));
    }
}
