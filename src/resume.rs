//! Resuming a download to `-o FILE` after it broke mid-body (RFC 9110 sections 14 and
//! 13.1.5): the next attempt asks for the rest with `Range` and `If-Range`, and the bytes are
//! appended only if the server answers 206 for the same representation. Pure functions.

use crate::transport::Head;

/// What identifies the representation being downloaded: a strong ETag, else Last-Modified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validator(pub String);

/// The validator of a response that can be resumed: it says `Accept-Ranges: bytes` and
/// carries a strong ETag or a Last-Modified date. Weak ETags (`W/"..."`) cannot be used with
/// If-Range (RFC 9110 section 13.1.5), so they do not count.
pub fn validator(head: &Head) -> Option<Validator> {
    // Byte offsets of a decoded body do not address the encoded representation.
    if head
        .value("content-encoding")
        .is_some_and(|e| !e.trim().eq_ignore_ascii_case("identity"))
    {
        return None;
    }
    let ranges = head.value("accept-ranges")?;
    if !ranges
        .split(',')
        .any(|u| u.trim().eq_ignore_ascii_case("bytes"))
    {
        return None;
    }
    let etag = head
        .value("etag")
        .filter(|e| !e.trim_start().starts_with("W/"));
    etag.or_else(|| head.value("last-modified"))
        .map(|v| Validator(v.trim().to_string()))
}

/// The headers that ask for the rest of the body from byte `offset`.
pub fn request_headers(offset: u64, v: &Validator) -> [(String, String); 2] {
    [
        ("Range".into(), format!("bytes={offset}-")),
        ("If-Range".into(), v.0.clone()),
    ]
}

/// Whether a response continues the download at `offset`: 206, a single
/// `Content-Range: bytes OFFSET-END/TOTAL` that runs to the end of a known total, and (when
/// it sends one) the same ETag. Anything else means start over.
pub fn continues(head: &Head, offset: u64, v: &Validator) -> bool {
    if head.status != 206 {
        return false;
    }
    let range = head
        .value("content-range")
        .and_then(|cr| cr.trim().strip_prefix("bytes "));
    let Some((span, total)) = range.and_then(|r| r.split_once('/')) else {
        return false;
    };
    let Some((first, last)) = span.split_once('-') else {
        return false;
    };
    let number = |s: &str| s.trim().parse::<u64>().ok();
    let to_the_end = matches!(
        (number(first), number(last), number(total)),
        (Some(f), Some(l), Some(t)) if f == offset && l.checked_add(1) == Some(t) && f <= l
    );
    let same_etag = match head.value("etag") {
        Some(e) if v.0.starts_with('"') => e.trim() == v.0,
        _ => true,
    };
    to_the_end && same_etag
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(status: u16, headers: &[(&str, &str)]) -> Head {
        Head {
            status,
            reason: String::new(),
            version: "HTTP/1.1".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            url: url::Url::parse("http://h/").unwrap(),
        }
    }

    #[test]
    fn needs_accept_ranges_and_a_strong_validator() {
        let v = validator(&head(
            200,
            &[("Accept-Ranges", "bytes"), ("ETag", "\"abc\"")],
        ));
        assert_eq!(v, Some(Validator("\"abc\"".into())));
        assert_eq!(validator(&head(200, &[("ETag", "\"abc\"")])), None);
        assert_eq!(
            validator(&head(
                200,
                &[("Accept-Ranges", "bytes"), ("ETag", "W/\"abc\"")]
            )),
            None
        );
        let lm = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(
            validator(&head(
                200,
                &[("Accept-Ranges", "bytes"), ("Last-Modified", lm)]
            )),
            Some(Validator(lm.into()))
        );
        assert_eq!(
            validator(&head(200, &[("Accept-Ranges", "none"), ("ETag", "\"a\"")])),
            None
        );
    }

    #[test]
    fn only_a_matching_206_continues() {
        let v = Validator("\"abc\"".into());
        let ok = head(
            206,
            &[("Content-Range", "bytes 100-199/200"), ("ETag", "\"abc\"")],
        );
        assert!(continues(&ok, 100, &v));
        assert!(!continues(&ok, 50, &v));
        assert!(!continues(&head(200, &[]), 100, &v));
        let other = head(
            206,
            &[("Content-Range", "bytes 100-199/200"), ("ETag", "\"xyz\"")],
        );
        assert!(!continues(&other, 100, &v));
        assert!(!continues(&head(206, &[]), 100, &v));
        let short = head(206, &[("Content-Range", "bytes 100-149/200")]);
        assert!(
            !continues(&short, 100, &v),
            "a range that stops before the end"
        );
        let unknown = head(206, &[("Content-Range", "bytes 100-199/*")]);
        assert!(!continues(&unknown, 100, &v), "an unknown total");
        let multi = head(206, &[("Content-Type", "multipart/byteranges; boundary=x")]);
        assert!(!continues(&multi, 100, &v));
    }
}
