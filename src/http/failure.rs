//! What went wrong in an exchange, sorted into the kinds the policy judges: a ureq, rustls
//! or I/O error becomes a [`Failure`] (its kind and a few words for the log). Pure: nothing
//! here sends or retries; whether a kind may be retried is `policy`'s to say.

use crate::policy::FailureKind;
use std::io;
use ureq::Timeout;

/// A failed exchange: what kind of failure, and a short description for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The kind, which the policy judges.
    pub kind: FailureKind,
    /// What happened, in a few words ("" when the kind says it all).
    pub detail: String,
}

impl Failure {
    /// A failure of this kind, with this detail.
    pub fn new(kind: FailureKind, detail: impl Into<String>) -> Self {
        Failure {
            kind,
            detail: detail.into(),
        }
    }
}

/// A failure before the connection was established (TCP, proxy tunnel, TLS handshake):
/// nothing of the request was sent. A stream cut or stalled there is a handshake that did
/// not complete, not a request that may have been processed. `tls`: the URL is https.
pub fn before_connection(f: Failure, tls: bool) -> Failure {
    use FailureKind as K;
    match f.kind {
        K::Timeout | K::Stall => Failure::new(
            K::ConnectTimeout,
            format!("the connection was not established in time ({})", f.detail),
        ),
        K::Reset | K::Truncated if tls => Failure::new(
            K::TlsHandshake,
            format!("the server ended the TLS handshake ({})", f.detail),
        ),
        K::Reset | K::Truncated => Failure::new(K::Refused, f.detail),
        _ => f,
    }
}

/// Sorts a ureq error into a failure kind, with a short detail for the log. `in_body`: the
/// response had begun, so a broken stream is a body cut short.
pub fn classify(e: &ureq::Error, in_body: bool) -> Failure {
    use FailureKind as K;
    match e {
        ureq::Error::Timeout(t) => classify_timeout(*t),
        ureq::Error::HostNotFound => Failure::new(K::Dns, "host not found"),
        ureq::Error::ConnectionFailed => Failure::new(K::Refused, "could not connect"),
        ureq::Error::Io(io) => classify_io(io, in_body),
        ureq::Error::Protocol(p) if in_body => {
            Failure::new(K::Truncated, format!("broken framing: {p}"))
        }
        ureq::Error::Protocol(p) => Failure::new(K::Protocol, format!("invalid response: {p}")),
        ureq::Error::Tls(t) => Failure::new(K::TlsHandshake, *t),
        ureq::Error::Rustls(r) => classify_tls(r),
        ureq::Error::ConnectProxyFailed(why) => classify_tunnel(why),
        ureq::Error::TooManyRedirects => Failure::new(K::TooManyRedirects, ""),
        ureq::Error::BodyExceedsLimit(_) => Failure::new(K::TooLarge, ""),
        // Only the connection's guard raises it (see `connection::Bounded`): the head filled the
        // input buffer.
        ureq::Error::LargeResponseHeader(held, _) => Failure::new(
            K::Protocol,
            format!("the response head does not end within {held} bytes"),
        ),
        other => Failure::new(K::Protocol, other.to_string()),
    }
}

/// Which of the attempt's time limits ran out: `--connect-timeout` (name lookup included),
/// `--stall-timeout` (no byte received, or none of the request taken by the kernel, for
/// that long), else the attempt's own budget.
fn classify_timeout(t: Timeout) -> Failure {
    use FailureKind as K;
    match t {
        Timeout::Connect | Timeout::Resolve => {
            Failure::new(K::ConnectTimeout, "no connection within --connect-timeout")
        }
        Timeout::PerRead => Failure::new(K::Stall, "no byte within --stall-timeout"),
        Timeout::PerWrite => Failure::new(
            K::Stall,
            "no byte of the request taken within --stall-timeout (the server stopped reading)",
        ),
        _ => Failure::new(K::Timeout, "the attempt's time ran out"),
    }
}

/// A proxy that did not open the CONNECT tunnel (RFC 9110 section 9.3.6). One that is down
/// or overloaded (5xx, 408 Request Timeout, 429 Too Many Requests, silence) may not be next
/// time, and the target never saw the request: `ProxyFailed`. One that refuses the tunnel
/// (407 Proxy Authentication Required, RFC 9110 section 15.5.8; 403; any other answer) will
/// refuse it again: `Protocol`.
fn classify_tunnel(why: &str) -> Failure {
    use FailureKind as K;
    match proxy_status(why) {
        Some(407) => Failure::new(
            K::Protocol,
            format!("the proxy wants authentication: {why}"),
        ),
        Some(s) if !(s >= 500 || s == 408 || s == 429) => {
            Failure::new(K::Protocol, format!("the proxy refused the tunnel: {why}"))
        }
        _ => Failure::new(K::ProxyFailed, why.to_string()),
    }
}

/// The status in ureq's "proxy server responded 403/Forbidden", if any.
fn proxy_status(why: &str) -> Option<u16> {
    let (_, rest) = why.split_once("responded ")?;
    rest.get(..3)?.parse().ok()
}

/// A certificate that fails verification is final; any other TLS failure is a handshake
/// that did not complete, so nothing was sent.
///
/// A peer that is not speaking TLS (plain HTTP on an https port), one that refuses the
/// handshake with an alert (RFC 8446 section 6: a client certificate demanded, no common
/// version or cipher) or breaks the protocol will do the same on a second try:
/// `TlsRejected`, never retried.
fn classify_tls(r: &rustls::Error) -> Failure {
    use rustls::Error as E;
    match r {
        E::InvalidCertificate(c) => Failure::new(FailureKind::TlsCertificate, certificate_text(c)),
        E::NoCertificatesPresented => Failure::new(FailureKind::TlsCertificate, r.to_string()),
        E::InvalidMessage(_)
        | E::AlertReceived(_)
        | E::PeerIncompatible(_)
        | E::PeerMisbehaved(_)
        | E::InappropriateMessage { .. }
        | E::InappropriateHandshakeMessage { .. }
        | E::NoApplicationProtocol
        | E::UnsupportedNameType => Failure::new(FailureKind::TlsRejected, r.to_string()),
        _ => Failure::new(FailureKind::TlsHandshake, r.to_string()),
    }
}

/// Why a certificate was rejected, in words a user can act on.
fn certificate_text(c: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    let what = match c {
        C::UnknownIssuer | C::BadSignature => {
            "not signed by a trusted authority (self-signed? trust it with --cacert FILE)"
        }
        C::Expired | C::ExpiredContext { .. } => "expired",
        C::NotValidYet | C::NotValidYetContext { .. } => "not valid yet (check the clock)",
        C::NotValidForName | C::NotValidForNameContext { .. } => "not valid for this host name",
        C::Revoked => "revoked",
        C::Other(o) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
            "a CA certificate used as the server's own, which webpki refuses (make it with basicConstraints CA:FALSE, or use a separate CA)"
        }
        _ => return format!("invalid certificate: {c}"),
    };
    format!("the server's certificate is {what}")
}

/// Sorts an I/O error; its inner value may be a ureq or rustls error. `in_body`: as for
/// [`classify`].
pub fn classify_io(e: &io::Error, in_body: bool) -> Failure {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>()) {
        return classify(inner, in_body);
    }
    if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return classify_tls(tls);
    }
    let detail = e.to_string();
    Failure::new(io_kind(e.kind(), &detail, in_body), detail)
}

/// The kind of a plain I/O error, by its `ErrorKind`, else (a failed name lookup has no
/// stable `ErrorKind`) by its message.
fn io_kind(kind: io::ErrorKind, message: &str, in_body: bool) -> FailureKind {
    use FailureKind as K;
    use io::ErrorKind as E;
    match kind {
        E::ConnectionRefused => K::Refused,
        E::TimedOut | E::WouldBlock => K::Timeout,
        E::UnexpectedEof if in_body => K::Truncated,
        E::ConnectionReset | E::ConnectionAborted | E::BrokenPipe | E::UnexpectedEof => K::Reset,
        E::NetworkUnreachable | E::HostUnreachable => K::Refused,
        _ if ["lookup", "resolve", "Name or service"]
            .iter()
            .any(|w| message.contains(w)) =>
        {
            K::Dns
        }
        _ if in_body => K::Truncated,
        _ => K::Reset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FailureKind as K;

    #[test]
    fn a_cut_before_the_connection_sent_nothing() {
        let cut = Failure::new(K::Reset, "reset");
        assert_eq!(before_connection(cut.clone(), true).kind, K::TlsHandshake);
        assert_eq!(
            before_connection(cut, false),
            Failure::new(K::Refused, "reset")
        );
        let stalled = before_connection(Failure::new(K::Stall, "x"), false);
        assert_eq!(stalled.kind, K::ConnectTimeout);
        assert_eq!(
            stalled.detail,
            "the connection was not established in time (x)"
        );
        let dns = Failure::new(K::Dns, "host not found");
        assert_eq!(before_connection(dns.clone(), true), dns);
    }

    #[test]
    fn io_errors_by_kind_and_by_message() {
        let io = |kind, msg: &str, in_body| classify_io(&io::Error::new(kind, msg), in_body).kind;
        use io::ErrorKind as E;
        assert_eq!(io(E::ConnectionRefused, "refused", false), K::Refused);
        assert_eq!(io(E::TimedOut, "t", false), K::Timeout);
        assert_eq!(io(E::UnexpectedEof, "eof", true), K::Truncated);
        assert_eq!(io(E::UnexpectedEof, "eof", false), K::Reset);
        assert_eq!(io(E::ConnectionReset, "r", true), K::Reset);
        assert_eq!(io(E::Other, "failed to lookup address", false), K::Dns);
        assert_eq!(io(E::Other, "odd", true), K::Truncated);
        assert_eq!(io(E::Other, "odd", false), K::Reset);
        let wrapped = io::Error::other(ureq::Error::HostNotFound);
        assert_eq!(classify_io(&wrapped, false).kind, K::Dns);
    }

    #[test]
    fn a_proxy_that_refuses_is_final_one_that_is_down_is_not() {
        let tunnel = |why: &str| classify_tunnel(why).kind;
        assert_eq!(tunnel("proxy server responded 407/Proxy Auth"), K::Protocol);
        assert_eq!(tunnel("proxy server responded 403/Forbidden"), K::Protocol);
        assert_eq!(
            tunnel("proxy server responded 503/Unavailable"),
            K::ProxyFailed
        );
        assert_eq!(
            tunnel("proxy server responded 429/Too Many"),
            K::ProxyFailed
        );
        assert_eq!(tunnel("proxy server responded 408/Timeout"), K::ProxyFailed);
        assert_eq!(tunnel("no answer"), K::ProxyFailed);
        assert_eq!(proxy_status("proxy server responded 4"), None);
    }

    #[test]
    fn timeouts_name_the_limit_that_ran_out() {
        assert_eq!(classify_timeout(Timeout::Resolve).kind, K::ConnectTimeout);
        assert_eq!(classify_timeout(Timeout::PerRead).kind, K::Stall);
        assert_eq!(classify_timeout(Timeout::PerWrite).kind, K::Stall);
        assert_eq!(classify_timeout(Timeout::Global).kind, K::Timeout);
    }

    #[test]
    fn certificates_are_explained() {
        use rustls::CertificateError as C;
        let unknown = classify_tls(&rustls::Error::InvalidCertificate(C::UnknownIssuer));
        assert_eq!(unknown.kind, K::TlsCertificate);
        assert!(unknown.detail.contains("--cacert"), "{}", unknown.detail);
        assert_eq!(
            certificate_text(&C::Expired),
            "the server's certificate is expired"
        );
    }
}
