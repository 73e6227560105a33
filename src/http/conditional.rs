//! What an answer to a conditional or resuming request means for the output (the cron
//! flags): a 304 Not Modified leaves it as it was; under `-z`, so does a 200 whose
//! Last-Modified shows the condition unmet (the server ignored it; curl drops that body
//! too); under `-C -`, a 416 saying the file is whole leaves it as it was, a 206 from the
//! file's end continues it, a 200 to an `If-Range` is the new whole file, and any other
//! success cannot resume it. Pure.

use crate::http::head::Head;
use crate::http::resume::{self, Continuation};
use std::time::SystemTime;

/// What the request asked, as far as the answer's meaning goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked {
    /// `-C -`: `Range: bytes=SIZE-` was sent for a file of this many bytes.
    pub resume_from: Option<u64>,
    /// `-C -` sent `If-Range` with the file's ETag (`--etag-compare`'s): a 200 is then the
    /// whole representation, changed since the file was written (RFC 9110 section 13.1.5).
    pub if_range: bool,
    /// `-z`: the time, and whether it was If-Unmodified-Since.
    pub since: Option<(SystemTime, bool)>,
    /// `-i`: the head is output too, so a 304 is shown as any answer is.
    pub include: bool,
}

/// What to do with an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// As any answer: a success is delivered, an error judged by its status.
    Deliver,
    /// A success that leaves the output as it was, and why (for the log).
    Unchanged(String),
    /// `-C -`: a 206 that continues the file with this range.
    Resume(Continuation),
    /// `-C -`: a success that does not continue the file, and why.
    NotResumable(String),
}

/// The meaning of `head`, the final answer to a request that asked `asked`.
pub fn judge(head: &Head, asked: &Asked) -> Answer {
    let status = head.status;
    if status == 304 && !asked.include {
        return Answer::Unchanged("the output is left as it was".into());
    }
    if let Some(size) = asked.resume_from {
        return match status {
            416 if resume::already_whole(head, size) => Answer::Unchanged(format!(
                "the file is already whole ({size} bytes): left as it was"
            )),
            400.. => Answer::Deliver,
            // The representation is not the one the file holds (or the server ignored the
            // Range): what came is all of it, and replaces the file.
            200 if asked.if_range => Answer::Deliver,
            206 => match resume::continues_file(head, size) {
                Ok(range) => Answer::Resume(range),
                Err(why) => Answer::NotResumable(format!("{why}; the file is left as it was")),
            },
            _ => Answer::NotResumable(format!(
                "the server answered {status} to Range: bytes={size}-, not 206; the file is left as it was"
            )),
        };
    }
    match (asked.since, status, last_modified(head)) {
        (Some((t, false)), 200, Some(lm)) if lm <= t => Answer::Unchanged(
            "not modified since the -z time (by its Last-Modified): the output is left as it was"
                .into(),
        ),
        (Some((t, true)), 200, Some(lm)) if lm > t => Answer::Unchanged(
            "modified since the -z time (by its Last-Modified): the output is left as it was"
                .into(),
        ),
        _ => Answer::Deliver,
    }
}

/// The status `-w` reports for `head`, the final answer: 304 for a 2xx that the `-z`
/// condition showed unmet (a server that ignored If-Modified-Since; curl 7.88 drops that
/// body and sets its response code to 304, while `-i` and `-D` show the head as it came),
/// else the answer's own.
pub fn reported_status(head: &Head, asked: &Asked) -> u16 {
    let unmet = asked.since.is_some()
        && asked.resume_from.is_none()
        && (200..300).contains(&head.status)
        && matches!(judge(head, asked), Answer::Unchanged(_));
    if unmet { 304 } else { head.status }
}

/// The answer's Last-Modified, when it is one HTTP-date.
pub fn last_modified(head: &Head) -> Option<SystemTime> {
    let mut all = head.values("last-modified");
    let v = all.next()?;
    if all.next().is_some() {
        return None;
    }
    httpdate::parse_http_date(v.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn head(status: u16, headers: &[(&str, &str)]) -> Head {
        Head::for_test(status, headers)
    }

    const LM: &str = "Wed, 01 Sep 2021 12:18:00 GMT";

    fn lm() -> SystemTime {
        httpdate::parse_http_date(LM).unwrap()
    }

    #[test]
    fn a_304_leaves_the_output_unless_the_head_is_shown() {
        let plain = Asked::default();
        assert!(matches!(
            judge(&head(304, &[]), &plain),
            Answer::Unchanged(_)
        ));
        let shown = Asked {
            include: true,
            ..plain
        };
        assert_eq!(judge(&head(304, &[]), &shown), Answer::Deliver);
        assert_eq!(judge(&head(200, &[]), &plain), Answer::Deliver);
    }

    #[test]
    fn resuming_a_file() {
        let asked = Asked {
            resume_from: Some(5),
            ..Asked::default()
        };
        let cont = head(206, &[("Content-Range", "bytes 5-9/10")]);
        assert_eq!(
            judge(&cont, &asked),
            Answer::Resume(Continuation { first: 5, last: 9 })
        );
        let whole = head(416, &[("Content-Range", "bytes */5")]);
        assert!(matches!(judge(&whole, &asked), Answer::Unchanged(_)));
        let larger = head(416, &[("Content-Range", "bytes */4")]);
        assert_eq!(judge(&larger, &asked), Answer::Deliver, "judged as a 416");
        assert_eq!(judge(&head(503, &[]), &asked), Answer::Deliver);
        let Answer::NotResumable(why) = judge(&head(200, &[]), &asked) else {
            panic!("a 200 resumed")
        };
        assert!(why.contains("answered 200 to Range: bytes=5-"), "{why}");
        let elsewhere = head(206, &[("Content-Range", "bytes 3-9/10")]);
        assert!(matches!(judge(&elsewhere, &asked), Answer::NotResumable(_)));
    }

    #[test]
    fn a_200_that_shows_the_time_condition_unmet() {
        let since = |t: SystemTime, unmodified| Asked {
            since: Some((t, unmodified)),
            ..Asked::default()
        };
        let ok = head(200, &[("Last-Modified", LM)]);
        let later = lm() + Duration::from_secs(1);
        let earlier = lm() - Duration::from_secs(1);
        assert!(matches!(
            judge(&ok, &since(later, false)),
            Answer::Unchanged(_)
        ));
        assert!(matches!(
            judge(&ok, &since(lm(), false)),
            Answer::Unchanged(_)
        ));
        assert_eq!(judge(&ok, &since(earlier, false)), Answer::Deliver);
        assert!(matches!(
            judge(&ok, &since(earlier, true)),
            Answer::Unchanged(_)
        ));
        assert_eq!(judge(&ok, &since(later, true)), Answer::Deliver);
        assert_eq!(
            judge(&head(200, &[]), &since(later, false)),
            Answer::Deliver
        );
        let bad = head(200, &[("Last-Modified", "yesterday")]);
        assert_eq!(judge(&bad, &since(later, false)), Answer::Deliver);
    }

    #[test]
    fn an_unmet_time_condition_is_reported_as_304() {
        let later = Asked {
            since: Some((lm() + Duration::from_secs(1), false)),
            ..Asked::default()
        };
        let ok = head(200, &[("Last-Modified", LM)]);
        assert_eq!(reported_status(&ok, &later), 304);
        assert_eq!(reported_status(&ok, &Asked::default()), 200);
        let earlier = Asked {
            since: Some((lm() - Duration::from_secs(1), false)),
            ..Asked::default()
        };
        assert_eq!(reported_status(&ok, &earlier), 200, "the condition was met");
        assert_eq!(reported_status(&head(304, &[]), &later), 304);
        let whole = Asked {
            resume_from: Some(5),
            ..Asked::default()
        };
        let full = head(416, &[("Content-Range", "bytes */5")]);
        assert_eq!(reported_status(&full, &whole), 416, "-C -'s 416 stays");
    }

    #[test]
    fn a_200_to_an_if_range_is_the_whole_new_file() {
        let blind = Asked {
            resume_from: Some(5),
            ..Asked::default()
        };
        let validated = Asked {
            if_range: true,
            ..blind
        };
        let ok = head(200, &[("ETag", "\"v2\"")]);
        assert!(matches!(judge(&ok, &blind), Answer::NotResumable(_)));
        assert_eq!(judge(&ok, &validated), Answer::Deliver);
        // A 206 is judged by its range either way.
        let part = head(206, &[("Content-Range", "bytes 5-9/10")]);
        assert!(matches!(judge(&part, &validated), Answer::Resume(_)));
        let elsewhere = head(206, &[("Content-Range", "bytes 0-9/10")]);
        assert!(matches!(
            judge(&elsewhere, &validated),
            Answer::NotResumable(_)
        ));
    }
}
