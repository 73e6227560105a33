//! When each step of an attempt happened, for `-w`'s `time_*`, `remote_*` and
//! `num_connects`: the name looked up, the TCP connection up and its peer, the TLS
//! handshake done, the connection ready, the head of the answer in. The [`Probe`] is told
//! by the resolver and the connectors (`network`) and by the transport. A few
//! `Instant::now()` per connection: nothing on the path of the body.

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

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

    /// The name lookup of the hop in flight is done (the first one counts).
    pub(crate) fn looked_up(&self) {
        let mut line = self.lock();
        if line.looked_up.is_none() {
            line.looked_up = Some(Instant::now());
        }
    }

    /// A TCP connection is up (through a proxy, the proxy's): the first of a hop counts,
    /// with its peer, which `peer` tells only then (it costs a formatting).
    pub(crate) fn tcp_up(&self, peer: impl FnOnce() -> Option<SocketAddr>) {
        let mut line = self.lock();
        if line.connected.is_none() {
            line.connected = Some(Instant::now());
            line.connects += 1;
            line.peer = peer();
        }
    }

    /// A TLS handshake is done (the first one of a hop counts).
    pub(crate) fn secured(&self) {
        let mut line = self.lock();
        if line.secured.is_none() {
            line.secured = Some(Instant::now());
        }
    }

    /// The hop's request goes on a connection kept from an earlier one, to `peer`: it is
    /// ready now, and nothing was looked up, connected or secured for it (curl's `-w` says
    /// 0 for those steps of a reused connection, and counts no connection).
    pub(crate) fn reused(&self, peer: impl FnOnce() -> Option<SocketAddr>) {
        let mut line = self.lock();
        line.ready = Some(Instant::now());
        if line.peer.is_none() {
            line.peer = peer();
        }
    }

    /// What the attempt went through so far.
    pub fn snapshot(&self) -> Timeline {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn only_the_first_connection_and_handshake_of_a_hop_are_noted() {
        let p = Probe::default();
        p.begin_attempt();
        p.begin_hop(0);
        let first = "127.0.0.1:80".parse().ok();
        p.tcp_up(|| first);
        p.secured();
        p.looked_up();
        let t = p.snapshot();
        p.tcp_up(|| panic!("the peer is asked only for the first connection"));
        p.secured();
        p.looked_up();
        let again = p.snapshot();
        assert_eq!((again.connects, again.peer), (1, first));
        assert_eq!(
            (again.connected, again.secured, again.looked_up),
            (t.connected, t.secured, t.looked_up)
        );
        p.begin_hop(1);
        p.tcp_up(|| None);
        assert_eq!(p.snapshot().connects, 2, "a new hop counts its connection");
    }
}
