//! The connections themselves, as ureq transports: TCP (our connector in place of ureq's,
//! trying the resolved addresses in turn) and Unix sockets, each shared with the agent so a
//! shutdown ends a read in flight, and with the tap so a plain body can be spliced off it
//! (see `splice`); the guard that refuses a response head larger than the input buffer,
//! which also tells the transport when a request goes on a connection kept from an earlier
//! one (a batch's agents keep idle connections: see `agent`); and the probe ureq asks
//! before it lends a kept connection.
//! With `network`, one of the two walls around ureq's unversioned transport API: the rest
//! of the crate never names it.

use crate::http::tap::{self, Raw, Tap};
use crate::http::timing::Probe;
use crate::platform::RawFd;
use crate::platform::UnixStream;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use ureq::config::Config;
use ureq::unversioned::resolver::ResolvedSocketAddrs;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, ShutdownHandle,
    Transport,
};

/// The TCP connections of the chain (in place of ureq's own), made so that the socket of
/// a plain-HTTP body can be spliced (see `splice`): the resolved addresses are tried in
/// order, each with a share of the connect limit that halves from one to the next (the
/// shares sum to the limit; none under 10 ms), moving on when an address refuses or
/// cannot be routed, as ureq does. A connection already made (SOCKS) is passed on.
#[derive(Debug)]
pub(crate) struct Tcp {
    tap: Arc<Tap>,
}

impl Tcp {
    /// The connector; `tap` learns each socket opened.
    pub(crate) fn new(tap: Arc<Tap>) -> Self {
        Tcp { tap }
    }
}

impl<In: Transport> Connector<In> for Tcp {
    type Out = Either<In, Stream<TcpStream>>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(t) = chained {
            return Ok(Some(Either::A(t)));
        }
        let stream = connect_tcp(&details.addrs, details.timeout)?;
        if details.config.no_delay() {
            stream.set_nodelay(true)?;
        }
        let transport = Stream::new(stream, details.config, &self.tap);
        (details.register_shutdown)(transport.shutdown_handle())?;
        Ok(Some(Either::B(transport)))
    }
}

/// The least share of the connect limit one address gets.
const MIN_PER_ADDRESS: Duration = Duration::from_millis(10);

/// Connects to the first of `addrs` that answers, within `timeout` in all.
fn connect_tcp(
    addrs: &ResolvedSocketAddrs,
    timeout: NextTimeout,
) -> Result<TcpStream, ureq::Error> {
    let start = Instant::now();
    let total = timeout.not_zero().map(|t| *t);
    // Shares 1, 1/2, 1/4, ... of a whole that is 2 * (1 - 2^-n).
    let whole = 2.0 * (1.0 - 0.5_f64.powi(i32::try_from(addrs.len()).unwrap_or(i32::MAX)));
    let mut share = 1.0_f64;
    let mut last = None;
    for addr in addrs {
        let own = total.map(|t| t.mul_f64(share / whole).max(MIN_PER_ADDRESS));
        share /= 2.0;
        let tried = match own {
            Some(limit) => TcpStream::connect_timeout(addr, limit),
            None => TcpStream::connect(addr),
        };
        match tried {
            Ok(s) => return Ok(s),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) =>
            {
                if total.is_some_and(|t| start.elapsed() > t) {
                    return Err(ureq::Error::Timeout(timeout.reason));
                }
                last = Some(ureq::Error::Timeout(ureq::Timeout::Connect));
            }
            Err(e) if only_this_address(&e) => last = Some(ureq::Error::Io(e)),
            Err(e) => return Err(ureq::Error::Io(e)),
        }
    }
    Err(last.unwrap_or_else(|| {
        ureq::Error::Io(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            "Connection refused",
        ))
    }))
}

/// Whether a failed connect says nothing of the host's other addresses: this one refused,
/// or has no route (an IPv6 address on a host without IPv6).
fn only_this_address(e: &io::Error) -> bool {
    use io::ErrorKind as E;
    matches!(
        e.kind(),
        E::ConnectionRefused
            | E::HostUnreachable
            | E::NetworkUnreachable
            | E::NetworkDown
            | E::AddrNotAvailable
    )
}

/// What a transport needs of its socket: a TCP or a Unix stream. (`fd` serves `splice`,
/// on Linux only.)
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) trait Socket: Send + Sync + 'static {
    /// `SO_RCVTIMEO` (None: wait for ever).
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    /// `SO_SNDTIMEO` (None: wait for ever).
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    /// One read, of at most `buf.len()` bytes.
    fn read_some(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Writes all of `buf`.
    fn write_all_of(&self, buf: &[u8]) -> io::Result<()>;
    /// Shuts both directions down (a read in flight returns).
    fn shut(&self);
    /// One read that does not wait (`WouldBlock` when nothing is there), the socket left
    /// blocking: `recv` with `MSG_DONTWAIT`, one system call where making the socket
    /// non-blocking, reading and making it blocking again took three.
    fn read_now(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// The descriptor, for a splice.
    fn fd(&self) -> RawFd;
    /// How ureq's own transport describes itself (`timing` reads the peer from it).
    fn describe(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result;
}

macro_rules! socket_of {
    ($t:ty, $describe:expr) => {
        impl Socket for $t {
            fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                <$t>::set_read_timeout(self, t)
            }
            fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                <$t>::set_write_timeout(self, t)
            }
            fn read_some(&self, buf: &mut [u8]) -> io::Result<usize> {
                (&*self).read(buf)
            }
            fn write_all_of(&self, buf: &[u8]) -> io::Result<()> {
                (&*self).write_all(buf)
            }
            fn shut(&self) {
                let _ = self.shutdown(std::net::Shutdown::Both);
            }
            #[cfg(windows)]
            fn read_now(&self, buf: &mut [u8]) -> io::Result<usize> {
                // Windows' recv has no MSG_DONTWAIT: the socket is made non-blocking for
                // the read, and blocking again.
                <$t>::set_nonblocking(self, true)?;
                let read = (&*self).read(buf);
                <$t>::set_nonblocking(self, false)?;
                read
            }
            #[cfg(unix)]
            fn read_now(&self, buf: &mut [u8]) -> io::Result<usize> {
                loop {
                    // SAFETY: recv into a buffer we own, of its length, on the descriptor
                    // the socket owns.
                    let n = unsafe {
                        libc::recv(
                            crate::platform::raw_fd(self),
                            buf.as_mut_ptr().cast(),
                            buf.len(),
                            libc::MSG_DONTWAIT,
                        )
                    };
                    match usize::try_from(n) {
                        Ok(n) => return Ok(n),
                        Err(_) => match io::Error::last_os_error() {
                            e if e.kind() == io::ErrorKind::Interrupted => continue,
                            e => return Err(e),
                        },
                    }
                }
            }
            fn fd(&self) -> RawFd {
                crate::platform::raw_fd(self)
            }
            fn describe(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                #[allow(clippy::redundant_closure_call)]
                ($describe)(self, f)
            }
        }
    };
}

socket_of!(
    TcpStream,
    |s: &TcpStream, f: &mut std::fmt::Formatter<'_>| f
        .debug_struct("TcpTransport")
        .field("addr", &s.peer_addr().ok())
        .finish()
);
socket_of!(
    UnixStream,
    |_: &UnixStream, f: &mut std::fmt::Formatter<'_>| f.debug_struct("Local").finish()
);

/// A socket shared with the agent, so that `shutdown` (the deadline, a signal) can end a
/// read (or a splice) in flight, and with the tap, so that a body can be spliced off it.
/// Its timeouts are set through it, and only when they change: a kept connection's every
/// read and write set the same `SO_RCVTIMEO` and `SO_SNDTIMEO`, two system calls of the
/// seven a small GET made.
struct Shared<S> {
    socket: S,
    /// The timeouts last set (`None`: not set yet), read and write.
    set: Mutex<[Option<Option<Duration>>; 2]>,
}

impl<S: Socket> Shared<S> {
    fn new(socket: S) -> Self {
        Shared {
            socket,
            set: Mutex::new([None, None]),
        }
    }

    /// Sets the timeout `which` (0: read, 1: write) to `t` unless it is already that.
    fn timeout(&self, which: usize, t: Option<Duration>) -> io::Result<()> {
        // A panic elsewhere while holding it leaves plain data: still usable.
        let mut set = self.set.lock().unwrap_or_else(|e| e.into_inner());
        if set[which] == Some(t) {
            return Ok(());
        }
        // Unknown until it succeeds: a failed call may have left either.
        set[which] = None;
        match which {
            0 => self.socket.set_read_timeout(t)?,
            _ => self.socket.set_write_timeout(t)?,
        }
        set[which] = Some(t);
        Ok(())
    }
}

impl<S: Socket> ShutdownHandle for Shared<S> {
    fn shutdown(&self) {
        self.socket.shut();
    }
}

impl<S: Socket> Raw for Shared<S> {
    fn fd(&self) -> RawFd {
        self.socket.fd()
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.timeout(0, t)
    }
}

/// The HTTP exchange over a plain socket, within ureq's timeouts; it hands the socket
/// over when its tap is armed (see `splice`).
pub(crate) struct Stream<S> {
    socket: Arc<Shared<S>>,
    buffers: LazyBuffers,
    tap: Arc<Tap>,
    /// Whether the agent keeps idle connections: else none is probed (see `is_open`).
    kept: bool,
}

impl<S: Socket> Stream<S> {
    pub(crate) fn new(socket: S, config: &Config, tap: &Arc<Tap>) -> Self {
        let socket = Arc::new(Shared::new(socket));
        let raw: Arc<dyn Raw> = socket.clone();
        tap.opened(Arc::downgrade(&raw));
        Stream {
            socket,
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
            tap: tap.clone(),
            kept: config.max_idle_connections() > 0,
        }
    }

    pub(crate) fn shutdown_handle(&self) -> Weak<dyn ShutdownHandle> {
        let handle: Arc<dyn ShutdownHandle> = self.socket.clone();
        Arc::downgrade(&handle)
    }
}

impl<S: Socket> std::fmt::Debug for Stream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.socket.socket.describe(f)
    }
}

/// The time left of `timeout` (None: no limit), or the timeout error when none is.
fn time_left(timeout: NextTimeout) -> Result<Option<std::time::Duration>, ureq::Error> {
    if timeout.after.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    Ok(timeout.not_zero().map(|d| *d))
}

/// An I/O error of the socket, a timeout being ureq's.
fn io_error(e: io::Error, timeout: NextTimeout) -> ureq::Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ureq::Error::Timeout(timeout.reason),
        _ => ureq::Error::Io(e),
    }
}

impl<S: Socket> Transport for Stream<S> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        self.socket.timeout(1, time_left(timeout)?)?;
        let socket = &self.socket.socket;
        let output = &self.buffers.output()[..amount];
        socket
            .write_all_of(output)
            .map_err(|e| io_error(e, timeout))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        if self.tap.hand_over() {
            return Err(ureq::Error::Io(tap::handed_over()));
        }
        let timeout = timeout.for_read();
        self.socket.timeout(0, time_left(timeout)?)?;
        let socket = &self.socket.socket;
        let input = self.buffers.input_append_buf();
        let amount = loop {
            match socket.read_some(input) {
                // A signal: its handler has had its say (a shutdown, if the run ends).
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other.map_err(|e| io_error(e, timeout))?,
            }
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    /// Whether the idle connection may carry another request: nothing waits to be read
    /// on it (a byte there is one the last answer did not account for) and the server has
    /// not closed or reset it, as far as a read that does not wait can tell (ureq's own
    /// probe). A server may still close it an instant later: see `Bounded`. An agent that
    /// keeps no idle connection (a run of one URL) is told no without a probe.
    fn is_open(&mut self) -> bool {
        if !self.kept {
            return false;
        }
        let mut byte = [0u8];
        matches!(self.socket.socket.read_now(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}

/// The peer address in ureq's description of a TCP transport ("TcpTransport { addr:
/// Some(127.0.0.1:80) }"), the only place ureq shows it; None when it is not there.
pub(crate) fn peer(described: &str) -> Option<SocketAddr> {
    let after = described.split_once("TcpTransport { addr: Some(")?.1;
    after.split_once(')')?.0.parse().ok()
}

/// A connection whose response head must fit its input buffer: asked for more input while
/// the buffer is full of what has not been read, it refuses the head as too large, a
/// protocol error (without this the exchange would end as a read that made no progress,
/// a connection cut, and be retried for an answer that will not change). Only a head can
/// fill the buffer: a body's bytes are taken out as they arrive.
///
/// Until the final head begins, it also reduces every interim head (`100 Continue`, `103
/// Early Hints`, any `1xx` but `101`) to its status line: RFC 9110 section 15.2 lets an
/// interim response carry header fields, a client that does not use them ignores them, and
/// ureq refuses a `100` with fields (and under `Expect: 100-continue`, any `1xx` with
/// fields) as an invalid response.
///
/// Once the final head is whole in the input, its bytes are copied to the tap before ureq
/// parses them: ureq (through the `http` crate) keeps field names in lower case, groups a
/// repeated field with its first occurrence and drops the reason phrase, while `-i`, `-D`
/// and `-v` show the head as the server sent it (as curl does).
pub(crate) struct Bounded {
    inner: Box<dyn Transport>,
    /// The final head has begun: the input is no longer looked at for interim heads.
    final_begun: bool,
    /// Where the final head's bytes go.
    tap: Arc<Tap>,
    /// Whether the final head went to the tap.
    heard: bool,
    /// Told when a kept connection is taken for a new request (see [`Reuse`]).
    reuse: Reuse,
    /// The peer's address, read from ureq's description when the connection is first
    /// taken again (`None` until then): one connection has one peer.
    peer: Option<Option<SocketAddr>>,
    /// The connection was found open between two requests (ureq asks before it keeps an
    /// idle connection and again before it lends one): the next write begins a request on
    /// a kept connection.
    kept: bool,
}

/// What a request sent on a kept connection tells the transport, which no connector does
/// for it: that it may have reached the server, and when it was ready (see `timing`).
#[derive(Clone)]
pub(crate) struct Reuse {
    /// Set (as the connector sets it for a new connection) when the first byte of a request
    /// is handed to a kept connection: from then on the request may have been processed.
    pub(crate) connected: Arc<AtomicBool>,
    /// Notes that the request's connection was ready, and its peer.
    pub(crate) probe: Arc<Probe>,
}

impl Bounded {
    /// `inner`, bounded; its final head goes to `tap`; `reuse` is told of each request
    /// sent on it once it has been kept.
    pub(crate) fn new(inner: Box<dyn Transport>, tap: Arc<Tap>, reuse: Reuse) -> Self {
        Bounded {
            inner,
            final_begun: false,
            tap,
            heard: false,
            reuse,
            peer: None,
            kept: false,
        }
    }

    /// A new request begins on this connection after an earlier one: its head is yet to
    /// come, and the transport learns that the request may reach the server from now on
    /// (conservatively, before the write: a write that fails may have sent part of it).
    fn begin_on_kept(&mut self) {
        self.kept = false;
        self.final_begun = false;
        self.heard = false;
        self.reuse.connected.store(true, Ordering::SeqCst);
        let inner = &self.inner;
        let at = *self.peer.get_or_insert_with(|| peer(&format!("{inner:?}")));
        self.reuse.probe.reused(|| at);
    }

    /// Reduces the complete interim heads at the front of the input to their status lines.
    fn bare_interims(&mut self) -> Result<(), ureq::Error> {
        let buffers = self.inner.buffers();
        let (bare, final_head) = bare_interims(buffers.input());
        self.final_begun = final_head;
        let Some(bare) = bare else {
            return Ok(());
        };
        // Consumed whole, the input buffer has all its room again (see ureq's `LazyBuffers`),
        // and what goes back in is shorter than what came out.
        let held = buffers.input().len();
        buffers.input_consume(held);
        let room = buffers.input_append_buf();
        let Some(place) = room.get_mut(..bare.len()) else {
            return Err(ureq::Error::LargeResponseHeader(held, held));
        };
        place.copy_from_slice(&bare);
        buffers.input_appended(bare.len());
        Ok(())
    }
}

/// The start of a response's input with every complete interim head at its front (a status
/// line `HTTP/1.x 1xx`, not `101`, and its fields) reduced to its status line, or `None`
/// when none carries a field; and whether the final head (or anything that is not an interim
/// head) has begun after them. Line ends may be CRLF or LF, as ureq reads them.
fn bare_interims(input: &[u8]) -> (Option<Vec<u8>>, bool) {
    let mut bare = Vec::new();
    let mut rest = input;
    let mut changed = false;
    let final_head = loop {
        match interim_line(rest) {
            Some(true) => {}
            Some(false) => break true,
            None => break false,
        }
        let Some((line, end)) = head_end(rest) else {
            break false;
        };
        changed |= end != line.len() + 4;
        bare.extend_from_slice(line);
        bare.extend_from_slice(b"\r\n\r\n");
        rest = rest.get(end..).unwrap_or_default();
    };
    if !changed {
        return (None, final_head);
    }
    bare.extend_from_slice(rest);
    (Some(bare), final_head)
}

/// The final head at the start of `input` (after the interim heads there), status line to
/// empty line included, once it is whole; `None` before, or when what follows the interim
/// heads is no HTTP/1 status line (TLS records after a proxy's answer to CONNECT).
fn final_head(input: &[u8]) -> Option<&[u8]> {
    let mut rest = input;
    while interim_line(rest)? {
        let (_, end) = head_end(rest)?;
        rest = rest.get(end..)?;
    }
    let (_, end) = head_end(rest)?;
    rest.get(..end).filter(|h| h.starts_with(b"HTTP/1."))
}

/// Whether `head` starts with the status line of an interim response (`HTTP/1.x 1xx`, not
/// `101`): `None` while too few bytes have come to tell.
fn interim_line(head: &[u8]) -> Option<bool> {
    const PREFIX: &[u8] = b"HTTP/1.";
    // "HTTP/1.1 1xx" and the byte after the status code.
    let Some([h @ .., _, _, c, x, y, after]) = head.get(..13) else {
        let shown = head.len().min(PREFIX.len());
        return Some(false).filter(|_| !PREFIX.starts_with(&head[..shown]));
    };
    Some(
        h.starts_with(PREFIX)
            && *c == b'1'
            && x.is_ascii_digit()
            && y.is_ascii_digit()
            && (*x, *y) != (b'0', b'1')
            && matches!(after, b' ' | b'\r' | b'\n'),
    )
}

/// The first line of the head at the start of `input` (without its line end), and where
/// the head ends (after its empty line), once it has.
fn head_end(input: &[u8]) -> Option<(&[u8], usize)> {
    let mut first = None;
    for (i, b) in input.iter().enumerate() {
        if *b != b'\n' {
            continue;
        }
        let line = *first.get_or_insert_with(|| {
            let line = &input[..i];
            line.strip_suffix(b"\r").unwrap_or(line)
        });
        match input.get(i + 1..i + 3) {
            Some([b'\n', _]) => return Some((line, i + 2)),
            Some([b'\r', b'\n']) => return Some((line, i + 3)),
            _ if input.get(i + 1) == Some(&b'\n') => return Some((line, i + 2)),
            _ => {}
        }
    }
    None
}

impl std::fmt::Debug for Bounded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl Transport for Bounded {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        if self.kept {
            self.begin_on_kept();
        }
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let buffers = self.inner.buffers();
        if buffers.input_append_buf().is_empty() {
            let held = buffers.input().len();
            return Err(ureq::Error::LargeResponseHeader(held, held));
        }
        let more = self.inner.await_input(timeout)?;
        if !self.final_begun {
            self.bare_interims()?;
        }
        if self.final_begun
            && !self.heard
            && let Some(head) = final_head(self.inner.buffers().input())
        {
            self.tap.heard(head.to_vec());
            self.heard = true;
        }
        Ok(more)
    }

    fn is_open(&mut self) -> bool {
        let open = self.inner.is_open();
        self.kept |= open;
        open
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that records the timeouts set on it, and fails those set while `fail`.
    #[derive(Default)]
    struct Recording {
        calls: Mutex<Vec<(usize, Option<Duration>)>>,
        fail: AtomicBool,
    }

    impl Recording {
        fn record(&self, which: usize, t: Option<Duration>) -> io::Result<()> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(io::Error::other("refused"));
            }
            self.calls.lock().unwrap().push((which, t));
            Ok(())
        }
    }

    impl Socket for Recording {
        fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
            self.record(0, t)
        }
        fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
            self.record(1, t)
        }
        fn read_some(&self, _: &mut [u8]) -> io::Result<usize> {
            Ok(0)
        }
        fn write_all_of(&self, _: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn shut(&self) {}
        fn read_now(&self, _: &mut [u8]) -> io::Result<usize> {
            Ok(0)
        }
        fn fd(&self) -> RawFd {
            0
        }
        fn describe(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("recording")
        }
    }

    /// A timeout is set on the socket when it changes, each of read and write on its own,
    /// through the tap's handle too; one whose setting failed is set again.
    #[test]
    fn a_socket_s_timeouts_are_set_only_when_they_change() {
        let s = Shared::new(Recording::default());
        let (one, two) = (Some(Duration::from_secs(1)), Some(Duration::from_secs(2)));
        for (which, t) in [
            (0, one),
            (0, one),
            (1, one),
            (1, one),
            (0, two),
            (0, None),
            (0, None),
        ] {
            s.timeout(which, t).unwrap();
        }
        Raw::set_read_timeout(&s, None).unwrap();
        Raw::set_read_timeout(&s, one).unwrap();
        s.socket.fail.store(true, Ordering::SeqCst);
        assert!(s.timeout(1, two).is_err());
        s.socket.fail.store(false, Ordering::SeqCst);
        s.timeout(1, one).unwrap();
        let calls = s.socket.calls.lock().unwrap().clone();
        assert_eq!(
            calls,
            [(0, one), (1, one), (0, two), (0, None), (0, one), (1, one)]
        );
    }

    fn bare(input: &str) -> (Option<String>, bool) {
        let (b, f) = bare_interims(input.as_bytes());
        (b.map(|b| String::from_utf8(b).unwrap()), f)
    }

    #[test]
    fn interim_heads_lose_their_fields_and_nothing_else_changes() {
        let last = "HTTP/1.1 200 OK\r\nLink: x\r\n\r\nHTTP/1.1 100 Continue\r\nA: b\r\n\r\n";
        assert_eq!(bare(last), (None, true), "a final head is left alone");
        let one = format!("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n{last}");
        assert_eq!(
            bare(&one),
            (
                Some(format!("HTTP/1.1 103 Early Hints\r\n\r\n{last}")),
                true
            )
        );
        let two =
            format!("HTTP/1.1 100 Continue\nX: 1\n\nHTTP/1.0 102\r\nY: 2\r\nZ: 3\r\n\r\n{last}");
        assert_eq!(
            bare(&two),
            (
                Some(format!(
                    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 102\r\n\r\n{last}"
                )),
                true
            )
        );
        assert_eq!(
            bare("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2"),
            (None, false)
        );
        assert_eq!(
            bare("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No"),
            (None, true)
        );
        assert_eq!(
            bare("HTTP/1.1 100 Continue\r\nX: 1\r\n\r\nHTTP/1."),
            (Some("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.".into()), false)
        );
        assert_eq!(
            bare("HTTP/1.1 103 Early\r\nLink: <"),
            (None, false),
            "not complete"
        );
        assert_eq!(
            bare("HTTP/1.1 101 Switching\r\nUpgrade: x\r\n\r\n"),
            (None, true)
        );
        assert_eq!(bare("HTTP/1.1 1000 x\r\nA: b\r\n\r\n"), (None, true));
        assert_eq!(bare("garbage"), (None, true));
        assert_eq!(bare("HTT"), (None, false));
        assert_eq!(bare(""), (None, false));
    }

    #[test]
    fn the_final_head_is_found_after_interim_heads_once_whole() {
        let head = |input: &str| final_head(input.as_bytes()).map(|h| h.to_vec());
        let last = "HTTP/1.1 200 Fine\r\nSet-Cookie: a\r\nX-Y: 1\r\n\r\n";
        assert_eq!(head(&format!("{last}body")), Some(last.as_bytes().to_vec()));
        assert_eq!(
            head(&format!(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Hints\r\n\r\n{last}b"
            )),
            Some(last.as_bytes().to_vec()),
            "after interim heads"
        );
        assert_eq!(
            head("HTTP/1.1 200 OK\nA: 1\n\nbody"),
            Some(b"HTTP/1.1 200 OK\nA: 1\n\n".to_vec()),
            "bare LF line ends kept"
        );
        assert_eq!(head("HTTP/1.1 200 OK\r\nA: 1\r\n"), None, "not whole yet");
        assert_eq!(
            head("HTTP/1.1 100 Continue\r\n\r\n"),
            None,
            "no final head yet"
        );
        assert_eq!(head("\x16\x03\x03\n\n"), None, "not an HTTP/1 head");
    }
}
