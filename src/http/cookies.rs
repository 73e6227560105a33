//! Cookies read from a Netscape cookie file (`-b FILE`, the format curl and browsers
//! export), and the Cookie header they make for one URL: only the cookies whose domain and
//! path match it (RFC 6265 sections 5.1.3 and 5.1.4), `secure` ones only over https, none
//! that has expired, longer paths first (section 5.4). Pure: the caller reads the file.

use std::time::{SystemTime, UNIX_EPOCH};
use url::Url;

/// One line of a cookie file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cookie {
    /// The host or domain, lower case, without a leading dot.
    domain: String,
    /// Whether hosts under the domain get it too (`TRUE`, or a leading dot).
    subdomains: bool,
    /// The path it is sent under.
    path: String,
    /// Only over https.
    secure: bool,
    /// Seconds since 1970 after which it is not sent (0: a session cookie, always sent).
    expires: u64,
    /// `NAME=VALUE`, as sent.
    pair: String,
}

/// The cookies of a Netscape cookie file: seven fields separated by tabs (domain,
/// include-subdomains, path, secure, expiry, name, value) per line; `#` starts a comment,
/// except `#HttpOnly_`, which marks a cookie. Lines that are not in that form, or whose
/// name or value could not be sent in a header, are skipped, as curl skips them.
pub fn parse(text: &str) -> Vec<Cookie> {
    text.lines().filter_map(line).collect()
}

fn line(l: &str) -> Option<Cookie> {
    let l = l.trim_end_matches('\r');
    let l = l.strip_prefix("#HttpOnly_").unwrap_or(l);
    if l.starts_with('#') || l.trim().is_empty() {
        return None;
    }
    let f: Vec<&str> = l.split('\t').collect();
    let [domain, sub, path, secure, expires, name, value] = f.as_slice() else {
        return None;
    };
    let flag = |s: &str| match s.to_ascii_uppercase().as_str() {
        "TRUE" => Some(true),
        "FALSE" => Some(false),
        _ => None,
    };
    let sendable = |s: &str| s.bytes().all(|b| (0x21..0x7f).contains(&b) && b != b';');
    if name.is_empty() || name.contains('=') || !sendable(name) || !sendable(value) {
        return None;
    }
    let dotted = domain.starts_with('.');
    let domain = domain.trim_start_matches('.').to_ascii_lowercase();
    if domain.is_empty() || !path.starts_with('/') {
        return None;
    }
    Some(Cookie {
        domain,
        subdomains: flag(sub)? || dotted,
        path: path.to_string(),
        secure: flag(secure)?,
        expires: expires.parse().ok()?,
        pair: format!("{name}={value}"),
    })
}

impl Cookie {
    /// Whether it goes with a request to `url` at `now`.
    fn matches(&self, url: &Url, now: SystemTime) -> bool {
        let Some(host) = url
            .host_str()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        else {
            return false;
        };
        // RFC 6265 section 5.1.3: an IP address matches only itself, and a domain of one
        // label (`test`) covers no other host, or `.0.0.1` would reach 127.0.0.1 and
        // `test` every host under it.
        let named = matches!(url.host(), Some(url::Host::Domain(_)));
        let domain = host == self.domain
            || named
                && self.subdomains
                && self.domain.contains('.')
                && host
                    .strip_suffix(self.domain.as_str())
                    .is_some_and(|rest| rest.ends_with('.'));
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let live = self.expires == 0 || self.expires > now;
        domain
            && path_matches(url.path(), &self.path)
            && (!self.secure || url.scheme() == "https")
            && live
    }
}

/// RFC 6265 section 5.1.4: the request path is the cookie's, or under it.
fn path_matches(request: &str, cookie: &str) -> bool {
    request == cookie
        || request.starts_with(cookie)
            && (cookie.ends_with('/') || request[cookie.len()..].starts_with('/'))
}

/// The value of the Cookie header for a request to `url` at `now`, longer paths first,
/// then in file order (`None`: no cookie matches).
pub fn header(cookies: &[Cookie], url: &Url, now: SystemTime) -> Option<String> {
    let mut sent: Vec<&Cookie> = cookies.iter().filter(|c| c.matches(url, now)).collect();
    sent.sort_by_key(|c| std::cmp::Reverse(c.path.len()));
    let pairs: Vec<&str> = sent.iter().map(|c| c.pair.as_str()).collect();
    (!pairs.is_empty()).then(|| pairs.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const FILE: &str = "# Netscape HTTP Cookie File\n\
        example.test\tFALSE\t/\tFALSE\t0\tsess\tabc\n\
        example.test\tFALSE\t/api\tFALSE\t0\tapi\tv1\n\
        example.test\tFALSE\t/\tTRUE\t0\tsec\ts1\n\
        example.test\tFALSE\t/\tFALSE\t1000\texpired\tx\n\
        .other.test\tTRUE\t/\tFALSE\t0\tother\ty\n\
        #HttpOnly_example.test\tFALSE\t/\tFALSE\t0\thttponly\th\n\
        example.test\tFALSE\t/api/v2\tFALSE\t4000000000\tdeep\td\n\
        not a cookie line\n\
        example.test\tMAYBE\t/\tFALSE\t0\tbad\tflag\n";

    fn at(url: &str) -> Option<String> {
        let now = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        header(&parse(FILE), &Url::parse(url).unwrap(), now)
    }

    #[test]
    fn domain_path_secure_and_expiry() {
        assert_eq!(
            at("http://example.test/api/v2/x").as_deref(),
            Some("deep=d; api=v1; sess=abc; httponly=h")
        );
        assert_eq!(
            at("https://example.test/apix").as_deref(),
            Some("sess=abc; sec=s1; httponly=h")
        );
        assert_eq!(at("http://www.other.test/").as_deref(), Some("other=y"));
        assert_eq!(at("http://other.test/").as_deref(), Some("other=y"));
        assert_eq!(at("http://xother.test/"), None);
        assert_eq!(at("http://sub.example.test/"), None, "no subdomains");
        let tail = parse(".0.0.1\tTRUE\t/\tFALSE\t0\tip\tv\ntest\tTRUE\t/\tFALSE\t0\tone\tv\n");
        let sent = |u: &str| header(&tail, &Url::parse(u).expect("url"), SystemTime::now());
        assert_eq!(
            sent("http://127.0.0.1/"),
            None,
            "an address matches only itself"
        );
        assert_eq!(
            sent("http://evil.test/"),
            None,
            "one label covers no other host"
        );
        assert_eq!(sent("http://test/").as_deref(), Some("one=v"));
        assert_eq!(at("http://unknown.test/"), None);
    }

    #[test]
    fn paths_match_as_rfc_6265_says() {
        assert!(path_matches("/api", "/api"));
        assert!(path_matches("/api/x", "/api"));
        assert!(path_matches("/api/x", "/api/"));
        assert!(!path_matches("/apix", "/api"));
        assert!(!path_matches("/", "/api"));
        assert!(path_matches("/anything", "/"));
    }

    #[test]
    fn lines_that_cannot_be_sent_are_skipped() {
        assert_eq!(parse("h\tFALSE\t/\tFALSE\t0\tn\tv;x\n").len(), 0);
        assert_eq!(parse("h\tFALSE\t/\tFALSE\t0\tn\tv x\n").len(), 0);
        assert_eq!(parse("h\tFALSE\tnoslash\tFALSE\t0\tn\tv\n").len(), 0);
        assert_eq!(parse("h\tFALSE\t/\tFALSE\tsoon\tn\tv\n").len(), 0);
        assert_eq!(
            parse("h\tfalse\t/\tfalse\t0\tn\t\r\n").len(),
            1,
            "an empty value"
        );
    }
}
