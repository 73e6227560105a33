//! Following redirects under `-L`, by hand (ureq's own following is off): which answer is a
//! redirect, what the next request of the chain is (its method, body and headers), when a
//! redirect is declined, and when a hop commits a non-idempotent request. Pure: the
//! transport sends each hop and asks [`next`] what follows.

use crate::config::protocols::Schemes;
use crate::http::failure::Failure;
use crate::http::head::Head;
use crate::policy::{self, FailureKind};
use crate::redact;
use url::Url;

/// One request of an attempt's chain of redirects: what is sent, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// The method ("GET" after a 303).
    pub method: String,
    /// Where it goes.
    pub url: Url,
    /// Its headers (credentials dropped once the chain leaves the first origin).
    pub headers: Vec<(String, String)>,
    /// Whether the request body goes with it (not after a 303, or a 301/302 to a POST).
    pub with_body: bool,
}

/// What to do with an answer under `-L`: the redirection it asks for, followed or not.
#[derive(Debug, PartialEq, Eq)]
pub enum Redirection {
    /// It is the answer.
    Answer,
    /// Follow it to this hop.
    Follow(Hop),
    /// Do not follow it: why.
    Decline(String),
}

/// 301, 302, 303, 307 and 308 carry a Location to follow (RFC 9110 section 15.4).
fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Whether sending `method` and getting `status` may have had the server process a
/// non-idempotent request: any answer but 307/308, which say the request was not acted on
/// and must be made again as it was (RFC 9110 sections 9.2.2, 15.4.8 and 15.4.9).
pub fn commits(method: &str, status: u16) -> bool {
    !policy::is_idempotent(method) && !matches!(status, 307 | 308)
}

/// What follows `head`, the answer to `hop`, under `-L` (`max`: `--max-redirs`; None when
/// `-L` is off), `hops` redirects into the chain: the next hop, the answer itself, a
/// redirect declined, or an error for one that cannot be followed. `replay_ok`: a
/// non-idempotent request may be sent again (an idempotency key or `--retry-unsafe`).
pub fn next(
    hop: &Hop,
    head: &Head,
    hops: u32,
    max: Option<u32>,
    replay_ok: bool,
) -> Result<Redirection, Failure> {
    let Some(max) = max else {
        return Ok(Redirection::Answer);
    };
    let status = head.status;
    let Some(location) = head.value("location").filter(|_| is_redirect(status)) else {
        return Ok(Redirection::Answer);
    };
    if resends(&hop.method, status) && !replay_ok {
        return Ok(Redirection::Decline(format!(
            "not followed: {} answered {status} may have been processed, and following it would send {} again; \
             send an --idempotency-key (or --retry-unsafe) to allow it",
            hop.method, hop.method
        )));
    }
    if hops >= max {
        return Err(Failure::new(
            FailureKind::TooManyRedirects,
            format!("more than {max} redirects (--max-redirs)"),
        ));
    }
    let url = target(&hop.url, location)?;
    Ok(Redirection::Follow(follow(hop, url, status)))
}

/// `next`, unless it follows a redirect to a scheme `schemes` does not allow (`--proto`,
/// `--proto-redir`): that is a failure, not retried (it would lead there again), as
/// curl's "protocol not supported or disabled".
pub fn allowed(next: Redirection, schemes: Schemes) -> Result<Redirection, Failure> {
    match next {
        Redirection::Follow(hop) if !schemes.allows(hop.url.scheme()) => Err(Failure::new(
            FailureKind::Protocol,
            format!(
                "redirect to {}:// not followed: --proto and --proto-redir allow {}",
                hop.url.scheme(),
                schemes.describe()
            ),
        )),
        next => Ok(next),
    }
}

/// Whether following a `status` answer to `method` sends a non-idempotent request again:
/// a 301/302 keeps the method (curl's way; RFC 9110 sections 15.4.2 and 15.4.3), except
/// POST, which becomes a GET, and any other non-idempotent method would go a second time
/// to a server that may already have processed the first.
fn resends(method: &str, status: u16) -> bool {
    matches!(status, 301 | 302) && method != "POST" && !policy::is_idempotent(method)
}

/// Where a Location leads: a reference resolved against the URL that answered (RFC 9110
/// section 10.2.2, RFC 3986 section 5), which must be http or https.
fn target(from: &Url, location: &str) -> Result<Url, Failure> {
    let url = from.join(location).map_err(|e| {
        Failure::new(
            FailureKind::Protocol,
            format!(
                "bad redirect Location {:?}: {e}",
                redact::url_text(location)
            ),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Failure::new(
            FailureKind::Protocol,
            format!("redirect to unsupported scheme {:?}", url.scheme()),
        ));
    }
    Ok(url)
}

/// The hop that follows `hop` to `url` after a `status` answer (RFC 9110 section 15.4):
/// credentials are dropped when the origin changes, and a 303 (but to a HEAD), or a 301/302
/// to a POST (as curl and browsers do), becomes a GET without a body or the fields that
/// described it, nor the Idempotency-Key: that names the request the server answered with
/// the redirect, and the GET, idempotent itself (RFC 9110 section 9.2.2), is another one (a
/// server checking every request's key would answer it 422, the key reused with another
/// request).
fn follow(hop: &Hop, url: Url, status: u16) -> Hop {
    let mut next = Hop { url, ..hop.clone() };
    if next.url.origin() != hop.url.origin() {
        // Credentials are for the host the user named, not wherever it points.
        next.headers
            .retain(|(n, _)| !redact::is_credential_header(n));
    }
    if status == 303 && hop.method != "HEAD" || matches!(status, 301 | 302) && hop.method == "POST"
    {
        next.method = "GET".into();
        next.with_body = false;
        next.headers.retain(|(n, _)| {
            !["content-type", "content-length", "idempotency-key"]
                .iter()
                .any(|f| n.eq_ignore_ascii_case(f))
        });
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(method: &str, url: &str) -> Hop {
        Hop {
            method: method.into(),
            url: Url::parse(url).unwrap(),
            headers: vec![
                ("Authorization".into(), "Bearer t".into()),
                ("Content-Type".into(), "text/plain".into()),
                ("Idempotency-Key".into(), "k".into()),
            ],
            with_body: true,
        }
    }

    fn answer(status: u16, location: Option<&str>) -> Head {
        Head {
            status,
            reason: String::new(),
            version: "HTTP/1.1".into(),
            headers: location
                .map(|l| ("location".to_string(), l.to_string()))
                .into_iter()
                .collect(),
            url: Url::parse("http://a.test/").unwrap(),
            wire: None,
        }
    }

    fn followed(from: &Hop, status: u16, location: &str) -> Hop {
        match next(from, &answer(status, Some(location)), 0, Some(5), false) {
            Ok(Redirection::Follow(h)) => h,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn without_l_or_a_location_the_answer_is_the_answer() {
        let h = hop("GET", "http://a.test/");
        let moved = answer(302, Some("/b"));
        assert_eq!(next(&h, &moved, 0, None, false), Ok(Redirection::Answer));
        assert_eq!(
            next(&h, &answer(302, None), 0, Some(5), false),
            Ok(Redirection::Answer)
        );
        let created = answer(201, Some("/b"));
        assert_eq!(
            next(&h, &created, 0, Some(5), false),
            Ok(Redirection::Answer)
        );
    }

    #[test]
    fn a_303_becomes_a_get_without_body() {
        let h = followed(&hop("POST", "http://a.test/"), 303, "/done");
        assert_eq!((h.method.as_str(), h.with_body), ("GET", false));
        assert_eq!(h.url.as_str(), "http://a.test/done");
        let names: Vec<&str> = h.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Authorization"]);
        let head = followed(&hop("HEAD", "http://a.test/"), 303, "/x");
        assert_eq!(head.method, "HEAD");
    }

    #[test]
    fn a_307_keeps_method_and_body_and_another_origin_gets_no_credentials() {
        let h = followed(&hop("POST", "http://a.test/"), 307, "http://b.test/");
        assert_eq!((h.method.as_str(), h.with_body), ("POST", true));
        let names: Vec<&str> = h.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Content-Type", "Idempotency-Key"]);
    }

    #[test]
    fn a_patch_answered_301_is_followed_only_when_it_may_be_sent_again() {
        let h = hop("PATCH", "http://a.test/");
        let moved = answer(301, Some("/b"));
        let declined = next(&h, &moved, 0, Some(5), false);
        assert!(
            matches!(&declined, Ok(Redirection::Decline(why)) if why.starts_with("not followed: PATCH answered 301")),
            "{declined:?}"
        );
        let allowed = next(&h, &moved, 0, Some(5), true);
        assert!(matches!(allowed, Ok(Redirection::Follow(ref n)) if n.method == "PATCH"));
    }

    #[test]
    fn limits_and_bad_locations_end_the_chain() {
        let h = hop("GET", "http://a.test/");
        let too_many = next(&h, &answer(302, Some("/b")), 5, Some(5), false);
        assert_eq!(
            too_many.map_err(|f| f.kind),
            Err(FailureKind::TooManyRedirects)
        );
        let ftp = next(&h, &answer(302, Some("ftp://a.test/")), 0, Some(5), false);
        assert_eq!(ftp.map_err(|f| f.kind), Err(FailureKind::Protocol));
    }

    #[test]
    fn only_a_307_or_308_proves_a_post_was_not_processed() {
        assert!(commits("POST", 303) && commits("PATCH", 500));
        assert!(!commits("POST", 307) && !commits("POST", 308));
        assert!(!commits("PUT", 302) && !commits("GET", 200));
    }
}
