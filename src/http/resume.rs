//! Resuming a download to `-o FILE` after it broke mid-body (RFC 9110 sections 14 and
//! 13.1.5): the next attempt asks for the rest with `Range` and `If-Range`, and the bytes are
//! appended only when every byte is accounted for: a 206 for the same representation (the
//! validator present and identical, the same total length) whose range starts at the bytes
//! kept and runs to the end, and whose body is exactly that range (checked by the caller
//! with `Continuation::len`). Anything else starts over. `-C -` resumes a file with no
//! validator known: only the range's position and length are checked. Pure functions.

use crate::http::transport::Head;

/// What identifies the representation being downloaded: a strong ETag, else Last-Modified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validator(pub String);

/// The validator of a response that can be resumed: it says `Accept-Ranges: bytes` (RFC
/// 9110 section 14.3) and carries a strong ETag or a Last-Modified date. (The caller also
/// needs its length.) Weak ETags (`W/"..."`) cannot be used with If-Range (RFC 9110 section
/// 13.1.5), so they do not count.
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
    // A Last-Modified that is not an HTTP-date identifies nothing (RFC 9110 section 8.8.2).
    let date = head
        .value("last-modified")
        .filter(|d| httpdate::parse_http_date(d.trim()).is_ok());
    etag.or(date).map(|v| Validator(v.trim().to_string()))
}

/// The part a 206 carries, once [`continues`] accepted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Continuation {
    /// The first byte of the range (the bytes kept).
    pub first: u64,
    /// The last byte of the range (the total length less one).
    pub last: u64,
}

impl Continuation {
    /// How many body bytes the 206 must carry, no more and no fewer (at least one: a range
    /// holds its first and last byte, RFC 9110 section 14.1.2).
    pub fn byte_count(&self) -> u64 {
        self.last - self.first + 1
    }
}

/// The headers that ask for the rest of the body from byte `offset`: `Range: bytes=N-`
/// (RFC 9110 section 14.2), only if the representation is still `v` (`If-Range`, section
/// 13.1.5).
pub fn range_headers(offset: u64, v: &Validator) -> [(String, String); 2] {
    [
        ("Range".into(), format!("bytes={offset}-")),
        ("If-Range".into(), v.0.clone()),
    ]
}

/// Whether a response continues the download of `total` bytes at `offset`: 206 (RFC 9110
/// section 15.3.7), a single
/// `Content-Range: bytes OFFSET-END/TOTAL` with END = TOTAL - 1 and TOTAL the first
/// response's length, and the validator present and identical (the same strong ETag, or the
/// same Last-Modified date: a newer one is another representation). `None` means start over.
///
/// The 206 must also be what the kept bytes were: no Content-Encoding (the first response
/// had none, or it would not have been kept), and one Content-Range and one validator, each
/// in its exact form (RFC 9110 section 14.4: digits only).
pub fn continues(head: &Head, offset: u64, total: u64, v: &Validator) -> Option<Continuation> {
    if head.status != 206 {
        return None;
    }
    let encoded = head
        .values("content-encoding")
        .any(|e| !e.trim().eq_ignore_ascii_case("identity"));
    let single = |name: &str| head.values(name).count() == 1;
    if encoded || !single("content-range") {
        return None;
    }
    let (first, last, length) = content_range(head)?;
    let runs_to_the_end = first == offset && first <= last && last.checked_add(1) == Some(total);
    if !runs_to_the_end || length != total {
        return None;
    }
    let name = if v.0.starts_with('"') {
        "etag"
    } else {
        "last-modified"
    };
    let same = single(name) && head.value(name).is_some_and(|got| got.trim() == v.0);
    same.then_some(Continuation { first, last })
}

/// A number in the exact form of RFC 9110 section 14.4: digits only.
fn number(s: &str) -> Option<u64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse::<u64>().ok())
        .flatten()
}

/// The single `Content-Range: bytes FIRST-LAST/LENGTH` of a 206, as numbers (`None`: none,
/// or not in that exact form).
fn content_range(head: &Head) -> Option<(u64, u64, u64)> {
    let range = head
        .value("content-range")
        .and_then(|cr| cr.trim().strip_prefix("bytes "))?;
    let (span, length) = range.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    Some((number(first)?, number(last)?, number(length)?))
}

/// `-C -`: whether a 206 continues a file of `size` bytes with no validator known (RFC
/// 9110 section 14.4): one `Content-Range: bytes SIZE-(TOTAL-1)/TOTAL`, no Content-Encoding.
/// `Err` says what it carried instead.
pub fn continues_file(head: &Head, size: u64) -> Result<Continuation, String> {
    let encoded = head
        .values("content-encoding")
        .any(|e| !e.trim().eq_ignore_ascii_case("identity"));
    if encoded {
        return Err("a 206 with a Content-Encoding (its bytes do not address the file)".into());
    }
    let shown = head.values("content-range").collect::<Vec<_>>().join(", ");
    match (head.values("content-range").count(), content_range(head)) {
        (1, Some((first, last, total)))
            if first == size && first <= last && last.checked_add(1) == Some(total) =>
        {
            Ok(Continuation { first, last })
        }
        (0, _) => Err("a 206 without a Content-Range".into()),
        _ => Err(format!(
            "a 206 whose Content-Range {shown:?} does not run from byte {size} to the end"
        )),
    }
}

/// `-C -`: whether a 416 says the file of `size` bytes is already whole: its
/// `Content-Range: bytes */LENGTH` (RFC 9110 section 15.5.17) has LENGTH = `size`.
pub fn already_whole(head: &Head, size: u64) -> bool {
    head.status == 416
        && head.values("content-range").count() == 1
        && head
            .value("content-range")
            .and_then(|cr| cr.trim().strip_prefix("bytes */"))
            .and_then(number)
            == Some(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(status: u16, headers: &[(&str, &str)]) -> Head {
        Head::for_test(status, headers)
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
    fn only_a_206_that_accounts_for_every_byte_continues() {
        let v = Validator("\"abc\"".into());
        let ok = head(
            206,
            &[("Content-Range", "bytes 100-199/200"), ("ETag", "\"abc\"")],
        );
        assert_eq!(
            continues(&ok, 100, 200, &v),
            Some(Continuation {
                first: 100,
                last: 199
            })
        );
        assert_eq!(
            continues(&ok, 100, 200, &v).map(|c| c.byte_count()),
            Some(100)
        );
        assert_eq!(continues(&ok, 50, 200, &v), None, "not at the bytes kept");
        assert_eq!(continues(&ok, 100, 300, &v), None, "another total");
        assert_eq!(continues(&head(200, &[]), 100, 200, &v), None);
        let other = head(
            206,
            &[("Content-Range", "bytes 100-199/200"), ("ETag", "\"xyz\"")],
        );
        assert_eq!(continues(&other, 100, 200, &v), None, "another ETag");
        let no_etag = head(206, &[("Content-Range", "bytes 100-199/200")]);
        assert_eq!(continues(&no_etag, 100, 200, &v), None, "the ETag missing");
        assert_eq!(continues(&head(206, &[]), 100, 200, &v), None);
        let short = head(
            206,
            &[("Content-Range", "bytes 100-149/200"), ("ETag", "\"abc\"")],
        );
        assert_eq!(
            continues(&short, 100, 200, &v),
            None,
            "stops before the end"
        );
        let unknown = head(
            206,
            &[("Content-Range", "bytes 100-199/*"), ("ETag", "\"abc\"")],
        );
        assert_eq!(continues(&unknown, 100, 200, &v), None, "an unknown total");
        let multi = head(206, &[("Content-Type", "multipart/byteranges; boundary=x")]);
        assert_eq!(continues(&multi, 100, 200, &v), None);
    }

    #[test]
    fn a_206_must_be_the_same_bytes_in_the_exact_form() {
        let v = Validator("\"v1\"".into());
        let etag = ("ETag", "\"v1\"");
        let ok = ("Content-Range", "bytes 10-19/20");
        assert!(continues(&head(206, &[ok, etag]), 10, 20, &v).is_some());
        for encoding in ["gzip", "br", "x-gzip", "gzip, identity"] {
            let h = head(206, &[ok, etag, ("Content-Encoding", encoding)]);
            assert_eq!(continues(&h, 10, 20, &v), None, "{encoding}");
        }
        let identity = head(206, &[ok, etag, ("Content-Encoding", "identity")]);
        assert!(continues(&identity, 10, 20, &v).is_some());
        for loose in [
            "bytes  10 - 19 / 20",
            "bytes +10-+19/+20",
            "bytes 10-19/20 x",
            "bytes 1_0-19/20",
        ] {
            let h = head(206, &[("Content-Range", loose), etag]);
            assert_eq!(continues(&h, 10, 20, &v), None, "{loose:?}");
        }
        let two_ranges = head(206, &[ok, ok, etag]);
        assert_eq!(continues(&two_ranges, 10, 20, &v), None);
        let two_etags = head(206, &[ok, etag, ("ETag", "\"v2\"")]);
        assert_eq!(continues(&two_etags, 10, 20, &v), None);
    }

    #[test]
    fn a_file_continues_only_from_its_size_to_the_end() {
        let cr = |v: &str| head(206, &[("Content-Range", v)]);
        let c = continues_file(&cr("bytes 5-9/10"), 5).unwrap();
        assert_eq!((c.first, c.last, c.byte_count()), (5, 9, 5));
        for (range, size) in [
            ("bytes 3-9/10", 5),
            ("bytes 5-8/10", 5),
            ("bytes 5-9/*", 5),
            ("bytes 5-9/10 ", 6),
            ("bytes 9-5/10", 9),
        ] {
            assert!(
                continues_file(&cr(range), size).is_err(),
                "{range} at {size}"
            );
        }
        let e = continues_file(&cr("bytes 3-9/10"), 5).unwrap_err();
        assert!(
            e.contains("\"bytes 3-9/10\"") && e.contains("byte 5"),
            "{e}"
        );
        assert!(continues_file(&head(206, &[]), 5).is_err());
        let gz = head(
            206,
            &[
                ("Content-Range", "bytes 5-9/10"),
                ("Content-Encoding", "gzip"),
            ],
        );
        assert!(continues_file(&gz, 5).is_err());
        let whole = head(416, &[("Content-Range", "bytes */5")]);
        assert!(already_whole(&whole, 5));
        assert!(!already_whole(&whole, 4));
        assert!(!already_whole(&head(416, &[]), 5));
        assert!(!already_whole(
            &head(200, &[("Content-Range", "bytes */5")]),
            5
        ));
    }

    #[test]
    fn a_last_modified_that_is_no_date_is_no_validator() {
        let h = head(
            200,
            &[("Accept-Ranges", "bytes"), ("Last-Modified", "yesterday")],
        );
        assert_eq!(validator(&h), None);
    }

    #[test]
    fn a_last_modified_validator_must_be_the_same_date() {
        let lm = "Sun, 06 Nov 1994 08:49:37 GMT";
        let v = Validator(lm.into());
        let range = ("Content-Range", "bytes 10-19/20");
        assert!(continues(&head(206, &[range, ("Last-Modified", lm)]), 10, 20, &v).is_some());
        let newer = ("Last-Modified", "Mon, 07 Nov 1994 08:49:37 GMT");
        assert_eq!(continues(&head(206, &[range, newer]), 10, 20, &v), None);
        assert_eq!(continues(&head(206, &[range]), 10, 20, &v), None);
    }
}
