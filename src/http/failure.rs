//! What went wrong in an exchange, sorted into the kinds the policy judges: a ureq, rustls
//! or I/O error becomes a [`Failure`] (its kind and a few words for the log), and so do the
//! two ends a body copy shares on either path (`--max-filesize` passed, the output refused a
//! write). Pure: nothing here sends or retries; whether a kind may be retried is `policy`'s
//! to say.
//!
//! Whether a failure proves that the server never saw the request (the kinds of
//! `FailureKind::proves_unprocessed`) is decided by the [`Stage`] the connection was at, as
//! the connection itself knows it, never by the error's type: once the connection (the TLS
//! handshake included) was up, the request may have been written, and a record that does
//! not decrypt, a reset or a name-lookup message are all equally ambiguous (RFC 9110
//! section 9.2.2: a non-idempotent request is retried only when the client can tell that
//! it was never applied).

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

/// `--max-filesize` (`limit`, in bytes) against the `total` bytes of a body read so far: a
/// `TooLarge` failure once the body is larger. Both copy paths check it (`receive`'s loop and
/// `splice`).
pub(crate) fn max_filesize(total: u64, limit: Option<u64>) -> Result<(), Failure> {
    match limit.filter(|m| total > *m) {
        Some(max) => Err(Failure::new(
            FailureKind::TooLarge,
            format!("the body is larger than --max-filesize {max} bytes"),
        )),
        None => Ok(()),
    }
}

/// A write of the body to the output that failed with `e`: a local failure, on either copy
/// path (`receive`'s loop or `splice`).
pub(crate) fn write_failed(e: &io::Error) -> Failure {
    Failure::new(FailureKind::Local, format!("cannot write the output: {e}"))
}

/// Where an exchange stood when it failed, by the state of its connection (the connector
/// says when the connection, proxy tunnel and TLS handshake included, is up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The connection was not up: nothing of the request was sent. `tls`: the URL is https.
    Connecting {
        /// The URL is https (a cut here is a handshake that did not complete).
        tls: bool,
    },
    /// The connection was up: the request may have been written, whole or in part, and no
    /// answer's body had begun.
    Connected,
    /// The answer's body had begun.
    Body,
}

impl Stage {
    /// Whether the answer's body had begun.
    fn in_body(self) -> bool {
        self == Stage::Body
    }
}

/// A failure before the connection was established (TCP, proxy tunnel, TLS handshake):
/// nothing of the request was sent. A stream cut or stalled there is a handshake that did
/// not complete, not a request that may have been processed. `tls`: the URL is https.
fn before_connection(f: Failure, tls: bool) -> Failure {
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

/// A failure once the connection was up (`in_body`: the answer's body had begun). The
/// request may have been sent, so no kind that proves it unprocessed comes out, whatever the
/// error said: a refusal, an unreachable network, a failed lookup or a TLS failure there is
/// the connection breaking (a reset, or a body cut short), a connect timeout the attempt's.
/// (A rustls error there is sorted by [`after_handshake`].)
fn after_connection(f: Failure, in_body: bool) -> Failure {
    use FailureKind as K;
    let kind = match f.kind {
        K::ConnectTimeout => K::Timeout,
        k if k.proves_unprocessed() && in_body => K::Truncated,
        k if k.proves_unprocessed() => K::Reset,
        k => k,
    };
    Failure { kind, ..f }
}

/// `f`, a failure at `stage`: see [`before_connection`] and [`after_connection`].
fn at(stage: Stage, f: Failure) -> Failure {
    match stage {
        Stage::Connecting { tls } => before_connection(f, tls),
        Stage::Connected | Stage::Body => after_connection(f, stage.in_body()),
    }
}

/// Sorts a ureq error at `stage` into a failure kind, with a short detail for the log.
pub fn classify(e: &ureq::Error, stage: Stage) -> Failure {
    at(stage, sort(e, stage))
}

/// Sorts an I/O error at `stage`; its inner value may be a ureq or rustls error.
pub fn classify_io(e: &io::Error, stage: Stage) -> Failure {
    at(stage, sort_io(e, stage))
}

/// The kind of a ureq error, before [`at`] weighs the stage. In the body, a broken stream
/// is a body cut short.
fn sort(e: &ureq::Error, stage: Stage) -> Failure {
    use FailureKind as K;
    let in_body = stage.in_body();
    match e {
        ureq::Error::Timeout(t) => classify_timeout(*t),
        ureq::Error::HostNotFound => Failure::new(K::Dns, "host not found"),
        ureq::Error::ConnectionFailed => Failure::new(K::Refused, "could not connect"),
        ureq::Error::Io(io) => sort_io(io, stage),
        ureq::Error::Protocol(p) if in_body => {
            Failure::new(K::Truncated, format!("broken framing: {p}"))
        }
        ureq::Error::Protocol(p) => Failure::new(K::Protocol, format!("invalid response: {p}")),
        ureq::Error::Tls(t) => Failure::new(K::TlsHandshake, *t),
        ureq::Error::Rustls(r) => classify_tls(r, stage),
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
        Timeout::Connect => {
            Failure::new(K::ConnectTimeout, "no connection within --connect-timeout")
        }
        // The same limit, spent before any connection was tried: the DNS servers did not
        // answer (say so, or a user looks for a server that was never asked).
        Timeout::Resolve => Failure::new(
            K::ConnectTimeout,
            "the host name's lookup did not finish within --connect-timeout (no DNS answer)",
        ),
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

/// A TLS failure at `stage`. Before the connection was up, it is the handshake's: a
/// certificate that fails verification is final; a peer that is not speaking TLS (plain HTTP
/// on an https port), one that refuses the handshake with an alert (RFC 8446 section 6: a
/// client certificate demanded, no common version or cipher) or breaks the protocol will do
/// the same on a second try: `TlsRejected`, never retried; any other failure is a handshake
/// that did not complete, so nothing was sent. After it, see [`after_handshake`].
fn classify_tls(r: &rustls::Error, stage: Stage) -> Failure {
    use rustls::Error as E;
    if !matches!(stage, Stage::Connecting { .. }) {
        return after_handshake(r, stage.in_body());
    }
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

/// A TLS failure once the handshake was done (`in_body`: the answer's body had begun): the
/// request may have been written. An alert by which the server refuses this client (RFC
/// 8446 section 6.2: a client certificate demanded or refused, access denied; TLS 1.3 sends
/// it after the client's side of the handshake is done) will come again: `TlsRejected`,
/// never retried. Anything else (a record that does not decrypt, bytes that are no TLS
/// record, a plaintext alert, another alert) is the connection breaking mid-exchange, as a
/// reset or a cut body is, whoever put those bytes on the wire: retried only when the request
/// may be replayed.
fn after_handshake(r: &rustls::Error, in_body: bool) -> Failure {
    use rustls::AlertDescription as A;
    use rustls::Error as E;
    match r {
        E::AlertReceived(
            A::CertificateRequired
            | A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::UnknownCA
            | A::AccessDenied,
        ) => Failure::new(FailureKind::TlsRejected, r.to_string()),
        _ => Failure::new(
            if in_body {
                FailureKind::Truncated
            } else {
                FailureKind::Reset
            },
            format!("TLS failed after the handshake: {r}"),
        ),
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

/// The kind of an I/O error, as [`sort`] gives it; its inner value may be a ureq or rustls
/// error.
fn sort_io(e: &io::Error, stage: Stage) -> Failure {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>()) {
        return sort(inner, stage);
    }
    if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return classify_tls(tls, stage);
    }
    let detail = e.to_string();
    Failure::new(io_kind(e.kind(), &detail, stage.in_body()), detail)
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
        let io = |kind, msg: &str, in_body: bool| {
            let stage = if in_body {
                Stage::Body
            } else {
                Stage::Connected
            };
            sort_io(&io::Error::new(kind, msg), stage).kind
        };
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
        assert_eq!(sort_io(&wrapped, Stage::Connected).kind, K::Dns);
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
        let unknown = classify_tls(
            &rustls::Error::InvalidCertificate(C::UnknownIssuer),
            Stage::Connecting { tls: true },
        );
        assert_eq!(unknown.kind, K::TlsCertificate);
        assert!(unknown.detail.contains("--cacert"), "{}", unknown.detail);
        assert_eq!(
            certificate_text(&C::Expired),
            "the server's certificate is expired"
        );
    }

    /// Errors of every sort an exchange can end with.
    fn every_error() -> Vec<ureq::Error> {
        use rustls::Error as R;
        let tls = [
            R::DecryptError,
            R::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
            R::AlertReceived(rustls::AlertDescription::BadRecordMac),
            R::AlertReceived(rustls::AlertDescription::CertificateRequired),
            R::PeerMisbehaved(rustls::PeerMisbehaved::IllegalMiddleboxChangeCipherSpec),
            R::InappropriateMessage {
                expect_types: vec![],
                got_type: rustls::ContentType::ChangeCipherSpec,
            },
            R::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
            R::General("odd".into()),
        ];
        let io = [
            io::ErrorKind::ConnectionRefused,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::HostUnreachable,
            io::ErrorKind::NetworkUnreachable,
            io::ErrorKind::UnexpectedEof,
            io::ErrorKind::TimedOut,
            io::ErrorKind::Other,
        ];
        let mut all: Vec<ureq::Error> = vec![
            ureq::Error::HostNotFound,
            ureq::Error::ConnectionFailed,
            ureq::Error::Tls("handshake"),
            ureq::Error::ConnectProxyFailed("proxy server responded 503/Unavailable".into()),
            ureq::Error::Io(io::Error::other("failed to lookup address")),
        ];
        all.extend(
            [
                Timeout::Connect,
                Timeout::Resolve,
                Timeout::PerRead,
                Timeout::Global,
            ]
            .map(ureq::Error::Timeout),
        );
        for r in tls {
            all.push(ureq::Error::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                r.clone(),
            )));
            all.push(ureq::Error::Rustls(r));
        }
        all.extend(io.map(|k| ureq::Error::Io(io::Error::new(k, "x"))));
        all
    }

    #[test]
    fn once_connected_no_error_proves_the_request_unprocessed() {
        for stage in [Stage::Connected, Stage::Body] {
            for e in every_error() {
                let f = classify(&e, stage);
                assert!(!f.kind.proves_unprocessed(), "{stage:?} {e:?}: {f:?}");
                assert_ne!(f.kind, K::TlsHandshake, "{stage:?} {e:?}");
                let wrapped = classify_io(&io::Error::other(e), stage);
                assert!(!wrapped.kind.proves_unprocessed(), "{stage:?}: {wrapped:?}");
            }
        }
    }

    #[test]
    fn a_tls_record_that_breaks_after_the_handshake_is_a_cut() {
        let broken = rustls::Error::DecryptError;
        let before = classify(
            &ureq::Error::Rustls(broken.clone()),
            Stage::Connecting { tls: true },
        );
        assert_eq!(before.kind, K::TlsHandshake);
        let head = classify(&ureq::Error::Rustls(broken.clone()), Stage::Connected);
        assert_eq!(head.kind, K::Reset);
        assert!(
            head.detail.starts_with("TLS failed after the handshake"),
            "{}",
            head.detail
        );
        assert_eq!(
            classify(&ureq::Error::Rustls(broken), Stage::Body).kind,
            K::Truncated
        );
        let garbage = ureq::Error::Rustls(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert_eq!(
            classify(&garbage, Stage::Connecting { tls: true }).kind,
            K::TlsRejected
        );
        assert_eq!(classify(&garbage, Stage::Connected).kind, K::Reset);
        let refused = ureq::Error::Rustls(rustls::Error::AlertReceived(
            rustls::AlertDescription::CertificateRequired,
        ));
        assert_eq!(classify(&refused, Stage::Connected).kind, K::TlsRejected);
    }
}
