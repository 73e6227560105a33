//! The request as the flags make it: the method (given, before the URL, or implied by `-I`
//! and the body), the headers (`-H`, with those of `-u`, `-A` and the body flags), the
//! body. It is drafted by the request and body flags ([`drafted`]), then finished by the
//! protocol and destination flags ([`finished`]). Nothing here does I/O.

use super::{
    BodySource, BodySpec, RequestConfig, UsageError, bodies, check_header, destination, has_header,
    network, protocols, usage,
};
use crate::cli::config_file::Found;
use crate::cli::values::{self, HeaderArg};
use crate::cli::{RequestArgs, RequestFlags};
use base64::Engine;
use url::Url;

/// The request as the request and body flags make it, before the protocol and destination
/// flags have their say (see [`finished`]).
pub(super) struct Drafted {
    /// The method (`-T` may still make it PUT).
    pub method: String,
    /// The URL, `-G`'s inline data in its query (`-T` may still append a file name).
    pub url: Url,
    /// Headers in order (`--oauth2-bearer` and `-e` may still add theirs).
    pub headers: Vec<(String, String)>,
    /// Headers removed with `-H 'Name:'` (lower case).
    pub removed: Vec<String>,
    /// The body, if any (`-T` may still give one).
    pub body: Option<BodySpec>,
    /// `-G` data from files or stdin.
    pub get_data: Option<BodySpec>,
    /// `-G`'s inline data, in `url`'s query already.
    pub query_added: Option<Vec<u8>>,
    /// How the connection is made.
    pub network: network::NetworkConfig,
}

/// The drafted request: headers (with those -u, -A and the body flags add), body and
/// method; then every header is checked, and stdin is claimed by one input at most.
pub(super) fn drafted(
    a: &RequestArgs,
    found: Found,
    positional_method: Option<&str>,
    mut url: Url,
) -> Result<Drafted, UsageError> {
    let r = &a.request;
    let (mut headers, removed) = headers(r)?;
    let made = bodies::body(a, found.stdin_taken, &mut headers, &mut url)?;
    let body = made.body;
    // A header removed with `-H 'Name:'` goes, even one a body flag implied.
    headers.retain(|(n, _)| !removed.contains(&n.to_ascii_lowercase()));
    let method = request_method(r, positional_method, body.is_some())?;
    for (name, value) in &headers {
        check_header(name, value)?;
    }
    let body_reads_stdin = body.as_ref().is_some_and(|b| {
        b.parts
            .iter()
            .any(|p| matches!(p, BodySource::Stdin { .. }))
    });
    if body_reads_stdin && a.output.write_out.as_deref() == Some("@-") {
        return usage(
            "-w @- and a body from @- both want stdin: give the -w format inline or in a file",
        );
    }
    Ok(Drafted {
        method,
        url,
        headers,
        removed,
        body,
        get_data: made.query,
        query_added: made.appended,
        network: network::build(&a.network)?,
    })
}

/// The request, finished: the drafted one with what the protocol flags make of it (`--proto`, the TLS
/// versions, `--oauth2-bearer`'s Authorization, `-T`'s body, PUT and file name), then what
/// the destination flags do (`-f` against `--fail-with-body`, `-e`'s Referer, `-4`/`-6`),
/// checked in that order. With it, the first URL as it is sent (`-T`'s file name appended):
/// the first transfer's.
pub(super) fn finished(
    a: &RequestArgs,
    found: Found,
    d: Drafted,
) -> Result<(RequestConfig, Url), UsageError> {
    let Drafted {
        mut method,
        mut url,
        mut headers,
        removed,
        mut body,
        get_data,
        network,
        ..
    } = d;
    let protocols = protocols::protocols(a, &url)?;
    if let Some(value) = protocols::bearer(a, &removed)? {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
        headers.push(("Authorization".into(), value));
    }
    if let Some(upload) = protocols::upload(a, found.stdin_taken)? {
        body = Some(upload.body);
        if upload.put {
            method = "PUT".into();
        }
        if let Some(file) = &upload.named {
            protocols::append_file_name(&mut url, file);
        }
    }
    destination::fail_flags(a)?;
    headers.extend(destination::referer(a, &headers, &removed)?);
    let family = destination::family(a, &url)?;
    let r = &a.request;
    let request = RequestConfig {
        method,
        headers,
        body,
        get_data,
        follow: r.location.then_some(r.max_redirs),
        removed,
        insecure: r.insecure,
        cacert: r.cacert.clone(),
        compressed: r.compressed,
        proxy: r.proxy.clone(),
        noproxy: r.noproxy.clone(),
        network,
        family,
        protocols,
    };
    Ok((request, url))
}

/// Headers to send, in order, and the names of those removed (lower case).
type HeaderLists = (Vec<(String, String)>, Vec<String>);

/// The `-H` headers to send and those removed, with Authorization from `-u` and User-Agent
/// from `-A` added unless `-H` gave them.
fn headers(r: &RequestFlags) -> Result<HeaderLists, UsageError> {
    let mut headers = Vec::new();
    let mut removed = Vec::new();
    for h in &r.headers {
        match h {
            HeaderArg::Set(n, v) => headers.push((n.clone(), v.clone())),
            HeaderArg::Remove(n) => removed.push(n.to_ascii_lowercase()),
        }
    }
    // As in curl, a header given with -H beats the one -u or -A would add.
    if r.user.as_ref().is_some_and(|u| !u.contains(':')) {
        // curl would prompt for the password; a run from cron has nobody to ask.
        return usage(
            "-u USER has no password: give -u 'USER:PASSWORD' ('USER:' for an empty one)",
        );
    }
    if let Some(user) = r
        .user
        .as_ref()
        .filter(|_| !has_header(&headers, "authorization"))
    {
        let token = base64::engine::general_purpose::STANDARD.encode(user.as_bytes());
        crate::redact::mark(crate::redact::Secret::Given(&token));
        headers.push(("Authorization".into(), format!("Basic {token}")));
    }
    if let Some(agent) = r
        .user_agent
        .as_ref()
        .filter(|_| !has_header(&headers, "user-agent"))
    {
        headers.push(("User-Agent".into(), agent.clone()));
    }
    Ok((headers, removed))
}

/// The methods a word before the URL may be: RFC 9110's, PATCH (RFC 5789), QUERY, WebDAV's
/// and its extensions' (RFC 4918, 3253, 3744, 4791, 5323, 5842), and PURGE. Any other
/// token is sent with `-X`.
const KNOWN_METHODS: [&str; 39] = [
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "CONNECT",
    "OPTIONS",
    "TRACE",
    "PATCH",
    "QUERY",
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
    "REPORT",
    "SEARCH",
    "MKCALENDAR",
    "ACL",
    "BIND",
    "UNBIND",
    "REBIND",
    "MKACTIVITY",
    "CHECKOUT",
    "CHECKIN",
    "UNCHECKOUT",
    "MERGE",
    "UPDATE",
    "LABEL",
    "MKWORKSPACE",
    "VERSION-CONTROL",
    "BASELINE-CONTROL",
    "ORDERPATCH",
    "MKREDIRECTREF",
    "UPDATEREDIRECTREF",
    "LINK",
    "PURGE",
];

/// Whether `word`, in capitals, is a method this tool knows (`get` is GET in the wrong
/// case: methods are case-sensitive, RFC 9110 section 9.1).
pub(super) fn known_method_in_any_case(word: &str) -> Option<String> {
    let upper = word.to_ascii_uppercase();
    KNOWN_METHODS.contains(&upper.as_str()).then_some(upper)
}

/// The method: the one given (checked), else HEAD for `-I`, POST with a body, GET.
fn request_method(
    r: &RequestFlags,
    positional_method: Option<&str>,
    has_body: bool,
) -> Result<String, UsageError> {
    if r.head && (positional_method.is_some() || r.method.is_some()) {
        return usage("-I sends HEAD: give either -I or a method");
    }
    if let Some(m) = positional_method {
        method(m)?;
        if !KNOWN_METHODS.contains(&m) {
            // Not quoted: a stray word before the URL may be a token that lost its flag
            // (`-H 'Authorization: Bearer' TOKEN URL`).
            return usage(
                "the word before the URL is not an HTTP method this tool knows (GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, WebDAV's...): give -X METHOD for another one; if it is a value that lost its flag (-H 'Authorization: Bearer' TOKEN), quote the flag's value whole",
            );
        }
    }
    match positional_method.or(r.method.as_deref()) {
        Some(m) => method(m),
        None if r.head => Ok("HEAD".into()),
        None if has_body => Ok("POST".into()),
        None => Ok("GET".into()),
    }
}

/// Checks a method: an HTTP token (RFC 9110 section 9.1), kept as given.
fn method(m: &str) -> Result<String, UsageError> {
    // A method is a token, never with `/` or `:`: such a word is a URL (perhaps without
    // its scheme).
    if m.contains('/') || m.contains(':') {
        return usage(format!(
            "invalid method {:?}: a method has no '/' or ':' (this looks like a URL)",
            crate::redact::url_text(m)
        ));
    }
    if !values::is_token(m) {
        return usage(format!(
            "invalid method {m:?}: expected a token such as GET, POST, PUT, DELETE"
        ));
    }
    Ok(m.to_string())
}
