//! The tap on the connection of the request in flight: the connector tells it of each plain
//! socket it opens ([`Tap::opened`], forgotten when TLS runs over it), the connection hands it
//! the final response head's bytes as they came ([`Tap::heard`]), and the body reader arms it
//! ([`Tap::arm`]) so that the next time ureq asks the socket for more, the transport refuses
//! and notes that the rest of the body is [`Tap::handed`] over, to be moved by `splice`
//! (Linux). What a spliced body needs of its socket and its attempt is a [`Wired`].

use crate::platform::RawFd;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// A socket whose bytes can be spliced, shared with the transport that reads it.
/// (Only `splice`, on Linux, calls its methods.)
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) trait Raw: Send + Sync {
    /// The socket's descriptor.
    fn fd(&self) -> RawFd;
    /// `SO_RCVTIMEO`: how long one receive (a splice included) may wait.
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()>;
}

/// The connection of the request in flight, as its connector made it, and whether its
/// transport should hand the body over.
#[derive(Default)]
pub(crate) struct Tap {
    current: Mutex<Option<Weak<dyn Raw>>>,
    armed: AtomicBool,
    handed: AtomicBool,
    /// The final response head of the request in flight, as its bytes came off the
    /// connection (see `connection::Bounded`); at most the size of the input buffer.
    head: Mutex<Option<Vec<u8>>>,
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tap").finish_non_exhaustive()
    }
}

impl Tap {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Weak<dyn Raw>>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request begins: no connection of its own yet, nothing armed.
    pub(crate) fn clear(&self) {
        *self.slot() = None;
        self.armed.store(false, Ordering::SeqCst);
        self.handed.store(false, Ordering::SeqCst);
        self.take_head();
    }

    /// The connection received `head`, a whole final response head (status line, fields,
    /// empty line) as sent. A later head (the target's, after a proxy's answer to CONNECT)
    /// replaces an earlier one.
    pub(crate) fn heard(&self, head: Vec<u8>) {
        *self.head.lock().unwrap_or_else(|e| e.into_inner()) = Some(head);
    }

    /// The head last [`heard`](Self::heard) for the request in flight, if any.
    pub(crate) fn take_head(&self) -> Option<Vec<u8>> {
        self.head.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The connector opened `socket` for the request in flight (a plain socket: TLS or a
    /// SOCKS tunnel over it is never tapped).
    pub(crate) fn opened(&self, socket: Weak<dyn Raw>) {
        *self.slot() = Some(socket);
    }

    /// TLS runs over the socket: it is never to be spliced.
    pub(crate) fn forget(&self) {
        *self.slot() = None;
    }

    /// The socket of the request in flight, while its connection is alive.
    pub(crate) fn socket(&self) -> Option<Arc<dyn Raw>> {
        self.slot().as_ref().and_then(Weak::upgrade)
    }

    /// From now on, the transport refuses to read more for ureq and hands the socket over.
    pub(crate) fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Called by the transport when ureq asks for more input: whether to refuse (and note
    /// that the rest of the body is to be spliced).
    pub(crate) fn hand_over(&self) -> bool {
        if self.armed.load(Ordering::SeqCst) {
            self.handed.store(true, Ordering::SeqCst);
            return true;
        }
        false
    }

    /// Whether the transport refused ureq a read: what ureq had buffered has been read, and
    /// the socket is where the rest of the body is.
    pub(crate) fn handed(&self) -> bool {
        self.handed.load(Ordering::SeqCst)
    }
}

/// The error the transport gives ureq when it hands the socket over. Nobody sees it: the
/// body's reader turns it into the end of what ureq had.
pub(crate) fn handed_over() -> io::Error {
    io::Error::other("the rest of the body is spliced")
}

/// A body that may be spliced: its socket, and the limits of the attempt it belongs to.
/// Only `splice` reads it, which exists on Linux only.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) struct Wired {
    pub(crate) socket: Arc<dyn Raw>,
    pub(crate) tap: Arc<Tap>,
    /// When the attempt's time runs out (ureq's global timeout for it), if it does.
    pub(crate) until: Option<Instant>,
    /// `--stall-timeout`, possibly shortened by `-y` (see `speed::silent`).
    pub(crate) stall: Option<Duration>,
}
