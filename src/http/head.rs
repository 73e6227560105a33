//! The head of a response: its status line and header fields, copied out of ureq's types
//! into plain strings the rest of the crate reads (`-i`, `-D`, `-v`, resuming, Retry-After).

use ureq::http;
use url::Url;

/// The status line and headers of a response.
#[derive(Debug, Clone)]
pub struct Head {
    /// The status code (100 to 599).
    pub status: u16,
    /// The canonical reason phrase for the status ("" when unknown).
    pub reason: String,
    /// "HTTP/1.1" or "HTTP/1.0".
    pub version: String,
    /// Headers in order, values decoded lossily.
    pub headers: Vec<(String, String)>,
    /// The URL that answered (after redirects).
    pub url: Url,
}

#[cfg(test)]
impl Head {
    /// A head for unit tests: `status` and `headers` from `http://h/`.
    pub(crate) fn for_test(status: u16, headers: &[(&str, &str)]) -> Head {
        Head {
            status,
            reason: String::new(),
            version: "HTTP/1.1".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            url: url::Url::parse("http://h/").expect("a URL"),
        }
    }
}

impl Head {
    /// The head of a response from `url`, as ureq parsed it. Field names are
    /// case-insensitive (RFC 9110 section 5.1); ureq gives them in lower case.
    pub(crate) fn from_parts(parts: &http::response::Parts, url: &Url) -> Head {
        Head {
            status: parts.status.as_u16(),
            reason: parts.status.canonical_reason().unwrap_or("").to_string(),
            version: format!("{:?}", parts.version),
            headers: parts
                .headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            url: url.clone(),
        }
    }

    /// Every value of a header (case-insensitive name), in order.
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The first value of a header (case-insensitive name).
    pub fn value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_from_ureq_parts() {
        let response = http::Response::builder()
            .status(404)
            .header("ETag", "\"a\"")
            .header("Vary", "accept")
            .header(
                "vary",
                http::HeaderValue::from_bytes(b"\xffcookie").unwrap(),
            )
            .body(())
            .unwrap();
        let (parts, ()) = response.into_parts();
        let url = Url::parse("http://h.test/x").unwrap();
        let head = Head::from_parts(&parts, &url);
        assert_eq!((head.status, head.reason.as_str()), (404, "Not Found"));
        assert_eq!(head.version, "HTTP/1.1");
        assert_eq!(head.value("etag"), Some("\"a\""));
        assert_eq!(head.value("ETAG"), Some("\"a\""));
        let vary: Vec<&str> = head.values("Vary").collect();
        assert_eq!(
            vary,
            ["accept", "\u{fffd}cookie"],
            "in order, decoded lossily"
        );
        assert_eq!(head.value("location"), None);
        assert_eq!(head.url, url);
    }
}
