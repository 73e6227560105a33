//! What may be retried at all: the failure kinds an attempt can end with and which of them
//! another attempt could cure, the statuses `--retry-on` names, and whether a request the
//! server may have processed may be sent again.
//!
//! Sources: RFC 9110 section 9.2.2 (idempotent methods), RFC 6585 section 4 (429), the
//! IETF httpapi Idempotency-Key draft.

/// Methods that RFC 9110 section 9.2.2 defines as idempotent, and so safe to replay.
pub fn is_idempotent(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
    )
}

/// Why an attempt got no usable response, as far as retrying is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The connection was refused (or the network unreachable): nothing was sent.
    Refused,
    /// The host name did not resolve: nothing was sent.
    Dns,
    /// Opening the connection took longer than `--connect-timeout`: nothing was sent.
    ConnectTimeout,
    /// The TLS handshake was cut short before it completed: nothing was sent.
    TlsHandshake,
    /// The server's certificate failed verification. Never retried: it will fail again.
    TlsCertificate,
    /// The peer refused TLS or does not speak it (an alert such as a demanded client
    /// certificate, plain HTTP on an https port). Never retried: it will fail again.
    TlsRejected,
    /// The attempt's time ran out after the request may have been sent.
    Timeout,
    /// No byte arrived for `--stall-timeout`.
    Stall,
    /// The connection was reset or closed before a response arrived.
    Reset,
    /// The body ended before its Content-Length, or its chunked encoding broke.
    Truncated,
    /// The proxy would not open a tunnel to the target (502, 503, no answer): the request
    /// never reached the target.
    ProxyFailed,
    /// The server's reply is not HTTP/1.1 as ureq reads it. Not retried.
    Protocol,
    /// More redirects than `--max-redirs`. Not retried.
    TooManyRedirects,
    /// The body is larger than `--max-filesize`. Not retried.
    TooLarge,
    /// The body broke after part of it was streamed to stdout (`--no-buffer`). Not retried:
    /// the reader already has those bytes.
    Streamed,
    /// `-C -`: the server did not continue the `-o` file where it ends (a 200, or a 206 at
    /// another offset). Not retried: it would answer the same; the file is left as it was.
    NotResumable,
    /// A local failure (writing the output). Not retried; exit 1.
    Local,
}

impl FailureKind {
    /// Every kind, in the order `--explain` lists them.
    pub const ALL: [FailureKind; 17] = [
        FailureKind::Refused,
        FailureKind::Dns,
        FailureKind::ConnectTimeout,
        FailureKind::TlsHandshake,
        FailureKind::ProxyFailed,
        FailureKind::Timeout,
        FailureKind::Stall,
        FailureKind::Reset,
        FailureKind::Truncated,
        FailureKind::TlsCertificate,
        FailureKind::TlsRejected,
        FailureKind::Protocol,
        FailureKind::TooManyRedirects,
        FailureKind::TooLarge,
        FailureKind::Streamed,
        FailureKind::NotResumable,
        FailureKind::Local,
    ];

    /// Whether another attempt could succeed, before replay safety is considered.
    pub fn is_retryable(self) -> bool {
        !matches!(
            self,
            FailureKind::TlsCertificate
                | FailureKind::TlsRejected
                | FailureKind::Protocol
                | FailureKind::TooManyRedirects
                | FailureKind::TooLarge
                | FailureKind::Streamed
                | FailureKind::NotResumable
                | FailureKind::Local
        )
    }

    /// Whether the failure proves the server never saw the request, so replaying even a
    /// non-idempotent request is safe. When in doubt, the answer is no. These kinds come
    /// only from a connection that was not up yet (see `http::failure::Stage`): the state
    /// of the connection, not the type of the error, is the proof.
    pub fn proves_unprocessed(self) -> bool {
        matches!(
            self,
            FailureKind::Refused
                | FailureKind::Dns
                | FailureKind::ConnectTimeout
                | FailureKind::TlsHandshake
                | FailureKind::ProxyFailed
        )
    }

    /// A short name for logs (`error` in the JSON log).
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Refused => "connection refused",
            FailureKind::Dns => "DNS failure",
            FailureKind::ConnectTimeout => "connect timeout",
            FailureKind::TlsHandshake => "TLS handshake failed",
            FailureKind::TlsCertificate => "TLS certificate rejected",
            FailureKind::TlsRejected => "TLS refused by the server",
            FailureKind::Timeout => "timeout",
            FailureKind::Stall => "stalled",
            FailureKind::Reset => "connection reset",
            FailureKind::Truncated => "body cut short",
            FailureKind::ProxyFailed => "proxy failed",
            FailureKind::Protocol => "protocol error",
            FailureKind::TooManyRedirects => "too many redirects",
            FailureKind::TooLarge => "body too large",
            FailureKind::Streamed => "body cut short after streaming began",
            FailureKind::NotResumable => "cannot resume",
            FailureKind::Local => "local failure",
        }
    }
}

/// Whether a request may be sent again after a failure.
///
/// Idempotent methods always may (RFC 9110 section 9.2.2). Others may when an
/// Idempotency-Key makes the server deduplicate them (IETF httpapi Idempotency-Key draft),
/// when the user said `--retry-unsafe`, or when the failure proves the request was not
/// processed (`unprocessed`).
pub fn replay_allowed(method: &str, has_key: bool, retry_unsafe: bool, unprocessed: bool) -> bool {
    is_idempotent(method) || has_key || retry_unsafe || unprocessed
}

/// A set of HTTP status codes (100 to 599) that are retried, as given to `--retry-on`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSet {
    ranges: Vec<(u16, u16)>,
}

impl StatusSet {
    /// The default `--retry-on`: 408, 429, 500, 502, 503, 504, 529.
    pub const DEFAULT: &'static str = "408,429,500,502,503,504,529";

    /// Builds a set from inclusive ranges (each within 100..=599, low <= high).
    pub fn from_ranges(ranges: Vec<(u16, u16)>) -> Self {
        StatusSet { ranges }
    }

    /// Whether `status` is in the set.
    pub fn contains(&self, status: u16) -> bool {
        self.ranges
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&status))
    }

    /// Whether any status from `lo` to `hi` (inclusive) is in the set.
    pub fn overlaps(&self, lo: u16, hi: u16) -> bool {
        self.ranges.iter().any(|&(a, b)| a <= hi && lo <= b)
    }

    /// The set written back in the form `--retry-on` accepts.
    pub fn to_spec(&self) -> String {
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|&(lo, hi)| {
                if lo == hi {
                    lo.to_string()
                } else if lo % 100 == 0 && hi == lo + 99 {
                    format!("{}xx", lo / 100)
                } else {
                    format!("{lo}-{hi}")
                }
            })
            .collect();
        parts.join(",")
    }
}

/// Statuses that show the server did not process the request, so even a non-idempotent
/// request may be sent again: 408 (RFC 9110 section 15.5.9), 429 (RFC 6585 section 4),
/// 503 (RFC 9110 section 15.6.4).
pub fn status_means_unprocessed(status: u16) -> bool {
    matches!(status, 408 | 429 | 503)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotent_methods_per_rfc_9110() {
        for m in ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"] {
            assert!(is_idempotent(m));
        }
        for m in ["POST", "PATCH", "PROPFIND", "get"] {
            assert!(!is_idempotent(m));
        }
    }

    #[test]
    fn replay_rules() {
        assert!(replay_allowed("GET", false, false, false));
        assert!(!replay_allowed("POST", false, false, false));
        assert!(replay_allowed("POST", true, false, false));
        assert!(replay_allowed("POST", false, true, false));
        assert!(replay_allowed(
            "PATCH",
            false,
            false,
            FailureKind::Refused.proves_unprocessed()
        ));
        assert!(!FailureKind::Reset.proves_unprocessed());
        assert!(!FailureKind::Timeout.proves_unprocessed());
        assert!(!FailureKind::TlsCertificate.is_retryable());
        assert!(FailureKind::Stall.is_retryable());
    }

    #[test]
    fn status_set_contains_and_round_trips() {
        let s = StatusSet::from_ranges(vec![(429, 429), (500, 599), (520, 530)]);
        assert!(s.contains(429) && s.contains(503) && !s.contains(404));
        assert_eq!(s.to_spec(), "429,5xx,520-530");
    }

    #[test]
    fn all_lists_every_kind_once() {
        // A new kind fails to compile here until it is placed in ALL.
        let place = |k: FailureKind| match k {
            FailureKind::Refused
            | FailureKind::Dns
            | FailureKind::ConnectTimeout
            | FailureKind::TlsHandshake
            | FailureKind::ProxyFailed
            | FailureKind::Timeout
            | FailureKind::Stall
            | FailureKind::Reset
            | FailureKind::Truncated
            | FailureKind::TlsCertificate
            | FailureKind::TlsRejected
            | FailureKind::Protocol
            | FailureKind::TooManyRedirects
            | FailureKind::TooLarge
            | FailureKind::Streamed
            | FailureKind::NotResumable
            | FailureKind::Local => FailureKind::ALL.iter().filter(|x| **x == k).count(),
        };
        for k in FailureKind::ALL {
            assert_eq!(place(k), 1, "{k:?}");
        }
    }
}
