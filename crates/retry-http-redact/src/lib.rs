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
//!   (decoded) name marks them as secret (see `names`) or when their value,
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
//! - A JSON value (what `--until-json` found or wants): the value of every member whose name
//!   marks it as secret is masked, at any depth; a string is masked as a header value, or,
//!   when it holds a JSON document, as that document.
//!
//! On top of these rules, a value known to be a secret where it enters (the command line, a
//! `-K` file, netrc, a cookie file, the environment: see [`mark`], the one way to mark one,
//! and [`Secret`], what kind of secret it is) is masked wherever it
//! appears in any text the process writes about the run ([`marked`]), in whatever form a
//! writer would show it (as typed, percent-encoded as a URL shows it, escaped as JSON shows
//! it). The writers (every stderr line from `report`, the forced summary, `--explain`, `-w`
//! on either stream, a panic's message) pass their text through [`marked`] last, so a
//! writer that forgets a rule above still does not print a marked secret.
//!
//! A leaf: nothing here uses the rest of the crate. The rules live in `names` (which names
//! mark a value as secret), `params` (secrets in parameters), `urls`, `headers` and `json`
//! (what is shown of each), and `registry` (the marked secrets, masked in every text
//! written).

mod headers;
mod json;
mod names;
mod params;
mod registry;
mod urls;

pub use headers::{credentials, header_arg, header_value};
pub use json::json_value;
pub use names::{is_credential_header, is_secret_name};
pub use registry::{marked, marked_now, ready};
pub use urls::{hides_userinfo, typed_text, url, url_text, userinfo_in_first_segment};

/// What a secret is replaced with, wherever one is shown: the one mask of the crate.
pub const MASK: &str = "***";

/// A secret as it enters the run (the command line, a `-K` file, netrc, a cookie file, the
/// environment), by what kind of secret it is: that says which part of it is secret, and
/// from how many characters on it is masked in every text written (see [`marked`]).
#[derive(Debug, Clone, Copy)]
pub enum Secret<'a> {
    /// A value secret by definition (a password, a token, `-u`'s, netrc's, a credential
    /// header's): masked from 3 characters (a shorter one would mask the digits of every
    /// count and time in the log).
    Given(&'a str),
    /// A value secret only by its name's guess (a query parameter named `code`, what
    /// `--until-json` wants at a secret pointer): masked from 6 characters, so an everyday
    /// word (a method, a status) stays readable.
    Guessed(&'a str),
    /// A URL as typed: its password (as given), its userinfo, secret parameters and path
    /// segments that look like a userinfo (as guesses); when it does not parse, what
    /// [`url_text`] masks of it.
    Url(&'a str),
    /// A header as it enters (`-H`, `-b`), name and value: the whole value of a secret
    /// header (see [`is_secret_name`]), its credentials after a scheme word and each
    /// cookie's value (given for Authorization, Proxy-Authorization and Cookie, guessed for
    /// the others); in any other header, the secrets of a URL in it.
    Header(&'a str, &'a str),
}

/// Marks `secret`, the one way a secret is made known: from here on [`marked`] masks it
/// (each of its secret parts, in every form a writer may show it) in every text written.
/// Leading and trailing white space is not part of a value.
pub fn mark(secret: Secret<'_>) {
    match secret {
        Secret::Given(value) => registry::given(value),
        Secret::Guessed(value) => registry::guessed(value),
        Secret::Url(typed) => urls::mark_secrets(typed),
        Secret::Header(name, value) => headers::mark_secrets(name, value),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod marking {
    use super::*;

    #[test]
    fn marked_secrets_are_masked_in_every_form_a_writer_shows() {
        mark(Secret::Given("Mk1 \"q\"/ä#x"));
        mark(Secret::Given("ab"));
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
    fn a_writer_that_must_not_wait_masks_too() {
        mark(Secret::Given("Mn1secret"));
        // Another test of this process may hold the marks for an instant: it never waits
        // for them, so it is asked again until they are free.
        let shown = (0..100_000)
            .find_map(|_| {
                std::thread::yield_now();
                marked_now("a Mn1secret b")
            })
            .expect("the marks are free at some point");
        assert_eq!(shown, "a *** b");
        let held = registry::MARKED.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(marked_now("Mn1secret"), None);
        drop(held);
    }

    #[test]
    fn only_what_reads_as_a_userinfo_is_marked_in_text_that_does_not_parse() {
        mark(Secret::Url("http://exa mple/Mv1path/?email=Mv2mail@b"));
        mark(Secret::Url("http://bob@Mv3host.test/"));
        mark(Secret::Url("http://Mv4token@exa mple/"));
        mark(Secret::Url("http://bob:Mv5pw@exa mple/"));
        assert_eq!(
            marked("Mv1path Mv2mail Mv3host bob Mv4token Mv5pw"),
            "Mv1path Mv2mail Mv3host bob *** ***"
        );
    }

    #[test]
    fn short_values_secret_only_by_their_name_are_not_marked() {
        mark(Secret::Url(
            "http://h/?code=200&auth_mode=POST&token=Mg1long",
        ));
        mark(Secret::Header("X-Auth-Method", "GET"));
        mark(Secret::Header("Cookie", "a=Mg2"));
        assert_eq!(marked("GET 200 POST"), "GET 200 POST");
        assert_eq!(marked("Mg1long Mg2"), "*** ***");
    }

    #[test]
    fn a_url_s_secrets_are_marked_as_typed_even_when_it_does_not_parse() {
        mark(Secret::Url("http://bob:Mu1pw@exa mple/?token=Mu2tok"));
        mark(Secret::Url("bob:Mu3pw@intranet/page"));
        mark(Secret::Url("http://u:12#Mu4pw@h/"));
        mark(Secret::Url("http://h/report.csv;jsessionid=Mu5jsid"));
        mark(Secret::Header("Cookie", "a=1; sid=Mu6ck"));
        mark(Secret::Header("Authorization", "Bearer Mu7br"));
        mark(Secret::Header("Origin", "http://bob:Mu8or@host:99999/"));
        let shown = marked("Mu1pw Mu2tok Mu3pw 12#Mu4pw Mu5jsid Mu6ck Mu7br Mu8or");
        assert!(!shown.contains("Mu"), "{shown}");
    }
}
