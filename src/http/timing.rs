//! When each step of an attempt happened, for `-w`'s `time_*`, `remote_*` and
//! `num_connects`: the name looked up (a resolver wrapper), the TCP connection up and its
//! peer, the TLS handshake done (probes in ureq's connector chain), the connection ready,
//! the head of the answer in. A few `Instant::now()` per connection: nothing on the path of
//! the body.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    ConnectProxyConnector, ConnectionDetails, Connector, NextTimeout, RustlsConnector,
    SocksConnector, Transport,
};

/// What one attempt's exchanges went through. The `hop` fields describe the attempt's
/// last request (its final hop under `-L`); counts cover the whole attempt.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// The attempt began.
    pub begun: Option<Instant>,
    /// Its last hop began (the same as `begun` without redirects).
    pub hop_begun: Option<Instant>,
    /// The last hop's name lookup was done.
    pub looked_up: Option<Instant>,
    /// Its TCP connection was up (to the proxy, through one).
    pub connected: Option<Instant>,
    /// Its first TLS handshake was done.
    pub secured: Option<Instant>,
    /// Its connection was ready for the request (tunnel and TLS included).
    pub ready: Option<Instant>,
    /// The head of its answer arrived.
    pub head: Option<Instant>,
    /// The address its TCP connection went to.
    pub peer: Option<SocketAddr>,
    /// TCP connections opened by the attempt.
    pub connects: u32,
    /// Redirects the attempt followed.
    pub redirects: u32,
}

/// The timeline of the request in flight, shared by the transport, the resolver and the
/// connector probes.
#[derive(Debug, Default)]
pub struct Probe(Mutex<Timeline>);

impl Probe {
    fn lock(&self) -> MutexGuard<'_, Timeline> {
        // A panic elsewhere while holding it leaves plain data: still usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new attempt begins: everything is forgotten.
    pub fn begin_attempt(&self) {
        let now = Instant::now();
        *self.lock() = Timeline {
            begun: Some(now),
            ..Timeline::default()
        };
    }

    /// A hop of the attempt begins (after `redirects` followed): its steps are forgotten.
    pub fn begin_hop(&self, redirects: u32) {
        let mut t = self.lock();
        *t = Timeline {
            begun: t.begun,
            hop_begun: Some(Instant::now()),
            connects: t.connects,
            redirects,
            ..Timeline::default()
        };
    }

    /// The head of the answer arrived.
    pub fn head_arrived(&self) {
        self.lock().head = Some(Instant::now());
    }

    /// The connection is ready for the request.
    pub fn ready(&self) {
        self.lock().ready = Some(Instant::now());
    }

    /// What the attempt went through so far.
    pub fn snapshot(&self) -> Timeline {
        self.lock().clone()
    }
}

/// The connector chain of ureq's default one (SOCKS, CONNECT proxy, TCP, rustls), with a
/// probe after TCP and one after TLS. The TCP connector is ours (`connection::Tcp`), telling
/// `tap` of each socket it opens.
pub(crate) fn connector(
    probe: Arc<Probe>,
    tap: Arc<crate::http::splice::Tap>,
) -> impl Connector<(), Out = Box<dyn Transport>> {
    ().chain(SocksConnector::default())
        .chain(ConnectProxyConnector::default())
        .chain(crate::http::connection::Tcp::new(tap))
        .chain(TcpProbe(probe.clone()))
        .chain(RustlsConnector::default())
        .chain(TlsProbe(probe))
}

/// Notes the first TCP connection of a hop (through a proxy, the proxy's) and its peer.
#[derive(Debug)]
struct TcpProbe(Arc<Probe>);

impl<In: Transport> Connector<In> for TcpProbe {
    type Out = In;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<In>, ureq::Error> {
        if let Some(t) = &chained {
            let mut line = self.0.lock();
            if line.connected.is_none() {
                line.connected = Some(Instant::now());
                line.connects += 1;
                line.peer = peer(&format!("{t:?}"));
            }
        }
        Ok(chained)
    }
}

/// Notes the first TLS handshake of a hop; hands the transport on boxed.
#[derive(Debug)]
struct TlsProbe(Arc<Probe>);

impl<In: Transport> Connector<In> for TlsProbe {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(t) = &chained
            && t.is_tls()
        {
            let mut line = self.0.lock();
            if line.secured.is_none() {
                line.secured = Some(Instant::now());
            }
        }
        Ok(chained.map(|t| Box::new(t) as Box<dyn Transport>))
    }
}

/// The peer address in ureq's description of a TCP transport ("TcpTransport { addr:
/// Some(127.0.0.1:80) }"), the only place ureq shows it; None when it is not there.
fn peer(described: &str) -> Option<SocketAddr> {
    let after = described.split_once("TcpTransport { addr: Some(")?.1;
    after.split_once(')')?.0.parse().ok()
}

/// A resolver (`--resolve`, `--connect-to`, else the system's), noting when the lookup
/// was done.
#[derive(Debug)]
pub struct TimedResolver<R> {
    inner: R,
    probe: Arc<Probe>,
}

impl<R: Resolver> TimedResolver<R> {
    /// `inner`, reporting to `probe`.
    pub fn new(inner: R, probe: Arc<Probe>) -> Self {
        TimedResolver { inner, probe }
    }
}

impl<R: Resolver> Resolver for TimedResolver<R> {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let found = self.inner.resolve(uri, config, timeout);
        let mut line = self.probe.lock();
        if line.looked_up.is_none() {
            line.looked_up = Some(Instant::now());
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_is_read_from_ureqs_description() {
        let v4 = peer("Either::B(TcpTransport { addr: Some(127.0.0.1:8080) })");
        assert_eq!(v4, "127.0.0.1:8080".parse().ok());
        let v6 = peer("TcpTransport { addr: Some([::1]:443) }");
        assert_eq!(v6, "[::1]:443".parse().ok());
        assert_eq!(peer("TcpTransport { addr: None }"), None);
        assert_eq!(peer("SocksTransport"), None);
    }

    #[test]
    fn a_hop_forgets_the_steps_but_not_the_count() {
        let p = Probe::default();
        p.begin_attempt();
        p.lock().connects = 1;
        p.ready();
        p.begin_hop(1);
        let t = p.snapshot();
        assert_eq!((t.connects, t.redirects, t.ready), (1, 1, None));
        assert!(t.begun.is_some() && t.hop_begun >= t.begun);
    }
}
