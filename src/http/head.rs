//! The head of a response: its status line and header fields, copied out of ureq's types
//! into plain strings the rest of the crate reads (`-i`, `-D`, `-v`, resuming, Retry-After).
//! When the connection kept the head's bytes as received (see `connection::Bounded`), the
//! fields are read from them: names in the server's case, in the server's order, a
//! repeated field where it came; the bytes themselves are what `-i` and `-D` write.

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
    /// The head as the server sent it, status line to empty line, line ends as received
    /// (at most the 128 KiB input buffer); `None` when it was not kept or did not agree
    /// with ureq's reading of it.
    pub wire: Option<Vec<u8>>,
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
            wire: None,
        }
    }
}

impl Head {
    /// The head of a response from `url`, as ureq parsed it, with `wire`, its bytes as
    /// received, when the connection kept them. Field names are case-insensitive (RFC 9110
    /// section 5.1): ureq gives them in lower case, grouped by name, so the fields are read
    /// from `wire` when it holds the same status and the same number of fields.
    pub(crate) fn from_parts(
        parts: &http::response::Parts,
        url: &Url,
        wire: Option<Vec<u8>>,
    ) -> Head {
        let status = parts.status.as_u16();
        let received = wire
            .as_deref()
            .and_then(fields)
            .filter(|(code, f)| *code == status && f.len() == parts.headers.len());
        let (wire, headers) = match received {
            Some((_, headers)) => (wire, headers),
            None => (
                None,
                parts
                    .headers
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_str().to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect(),
            ),
        };
        Head {
            status,
            reason: parts.status.canonical_reason().unwrap_or("").to_string(),
            version: format!("{:?}", parts.version),
            headers,
            url: url.clone(),
            wire,
        }
    }

    /// The status line as received (the server's reason phrase, decoded lossily), else as
    /// ureq read it with the canonical reason; without its line end.
    pub fn status_line(&self) -> String {
        if let Some(line) = self.wire.as_deref().and_then(|w| lines(w).next()) {
            return String::from_utf8_lossy(line).into_owned();
        }
        format!("{} {} {}", self.version, self.status, self.reason)
            .trim_end()
            .to_string()
    }

    /// The head as `-i` and `-D` write it: the bytes received, else the status line and
    /// fields rebuilt with CRLF line ends.
    pub fn bytes(&self) -> Vec<u8> {
        if let Some(wire) = &self.wire {
            return wire.clone();
        }
        let mut s = format!("{} {} {}\r\n", self.version, self.status, self.reason);
        for (n, v) in &self.headers {
            s.push_str(&format!("{n}: {v}\r\n"));
        }
        s.push_str("\r\n");
        s.into_bytes()
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

/// The lines of a head (without their line ends, CRLF or LF), up to its empty line.
fn lines(wire: &[u8]) -> impl Iterator<Item = &[u8]> {
    wire.split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .take_while(|l| !l.is_empty())
}

/// The status code and the fields of a head as received (names as sent, values without
/// the whitespace around them, RFC 9112 section 5), or `None` when it is not one ureq
/// would have read alike.
fn fields(wire: &[u8]) -> Option<(u16, Vec<(String, String)>)> {
    let mut lines = lines(wire);
    let status = lines.next()?;
    let code = status.get(9..12)?;
    let code = std::str::from_utf8(code).ok()?.parse().ok()?;
    let mut out = Vec::new();
    for line in lines {
        let colon = line.iter().position(|b| *b == b':')?;
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || name.iter().any(|b| b.is_ascii_whitespace()) {
            return None;
        }
        let value = value.trim_ascii();
        out.push((
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
    }
    Some((code, out))
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
        let head = Head::from_parts(&parts, &url, None);
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

    #[test]
    fn a_head_as_received_keeps_case_order_repeats_and_reason() {
        let response = http::Response::builder()
            .status(200)
            .header("set-cookie", "a=1")
            .header("x-custom-thing", "v")
            .header("set-cookie", "b=2")
            .body(())
            .unwrap();
        let (parts, ()) = response.into_parts();
        let url = Url::parse("http://h.test/x").unwrap();
        let wire = b"HTTP/1.1 200 Fine\r\nSet-Cookie: a=1\r\nX-CUSTOM-thing:  v \r\nSet-Cookie: b=2\r\n\r\n";
        let head = Head::from_parts(&parts, &url, Some(wire.to_vec()));
        let names: Vec<&str> = head.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Set-Cookie", "X-CUSTOM-thing", "Set-Cookie"]);
        assert_eq!(
            head.value("x-custom-THING"),
            Some("v"),
            "lookups ignore case"
        );
        assert_eq!(head.status_line(), "HTTP/1.1 200 Fine");
        assert_eq!(head.bytes(), wire, "written as received");
        assert_eq!(head.reason, "OK", "the log keeps the canonical reason");

        // A head that does not agree with ureq's reading is not used.
        let other = b"HTTP/1.1 201 Made\r\nSet-Cookie: a=1\r\n\r\n".to_vec();
        let head = Head::from_parts(&parts, &url, Some(other));
        assert_eq!(head.wire, None);
        assert_eq!(head.headers[0].0, "set-cookie");
        assert_eq!(head.status_line(), "HTTP/1.1 200 OK");
        assert!(
            head.bytes()
                .starts_with(b"HTTP/1.1 200 OK\r\nset-cookie: a=1\r\n")
        );
    }
}
