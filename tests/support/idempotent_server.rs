//! A loopback HTTP/1.1 server that implements the IETF httpapi Idempotency-Key draft as a
//! careful API does, and loses its answers on purpose: the chaos tests of a key kept across
//! runs drive the real binary against it.
//!
//! The protocol, for every request (any method):
//! - no `Idempotency-Key`: 400, nothing done;
//! - a key never seen: the request is processed: its side effect is committed (counted per
//!   body, which names the job, and per key), the answer (201, its body naming the effect) is
//!   stored with the body's bytes, then sent;
//! - a key whose request is still being processed: 409 with `Retry-After: 0`;
//! - a key stored with the same body: the stored answer again, byte for byte, no new effect;
//! - a key stored with another body: 422, nothing done.
//!
//! Faults, one drawn per request (from a seeded generator, or a script for the unit tests
//! below), lose the answer after the commit at a chosen point: before the head (an orderly
//! close), in the middle of the head, in the middle of the body (the Content-Length announces
//! more than is sent), with a reset (SO_LINGER 0), or by staying silent until the client gives
//! up (its deadline); or the request is processed slowly (in flight, so a second request with
//! its key gets 409, until a moment after the client gave up, then committed); or 503 comes
//! before anything is done. A replay of a stored key can lose its answer the same ways.
//!
//! A request may carry `X-Chaos-Run: LABEL` (the test's name for the run that sent it): the
//! labels seen with each key are recorded, so a test can tell which runs shared a key.
//!
//! std only (and `socket2`, which the scripted server uses too, for the reset), so it builds
//! into any test binary with `#[path = "../support/idempotent_server.rs"] mod ...;`.

// Each includer uses only part of it.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a slow request stays in flight after its client has gone, at most, before it
/// is committed (100 ms): long enough for the next run of a loop that runs a job again at
/// once to meet it (409). It is committed sooner, at once, when a request with its key has
/// met that 409 since the client left: a loop whose runs make one attempt and take a few
/// milliseconds each would otherwise spend a dozen runs on it (and did, against Redis on
/// an idle machine, with a window of time alone).
pub const IN_FLIGHT_AFTER_CLOSE: Duration = Duration::from_millis(100);

/// The longest the server waits for a client to give up (60 s): a silent answer or a slow
/// request ends then even if the client never closes.
const SILENCE_LIMIT: Duration = Duration::from_secs(60);

/// How one request's answer is lost, or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// 503 with `Retry-After: 0`, before anything is done.
    Unavailable,
    /// Committed, then the connection is closed before any byte of the answer.
    CloseBeforeHead,
    /// Committed, then half of the answer's head is sent and the connection closed.
    MidHead,
    /// Committed, then the head and half of the body are sent and the connection closed.
    MidBody,
    /// Committed, then the connection is reset (RST) before any byte of the answer.
    Reset,
    /// Committed, then silence until the client closes the connection (its deadline).
    Silence,
    /// In flight until the client closes the connection, and after that until a request
    /// with its key got 409 or [`IN_FLIGHT_AFTER_CLOSE`] passed, then committed: the answer
    /// reaches nobody.
    SlowCommit,
}

impl Fault {
    /// Every fault, in the order of [`RANDOM_WEIGHTS`].
    pub const ALL: [Fault; 7] = [
        Fault::Unavailable,
        Fault::CloseBeforeHead,
        Fault::MidHead,
        Fault::MidBody,
        Fault::Reset,
        Fault::Silence,
        Fault::SlowCommit,
    ];
}

/// The chance of each fault of [`Fault::ALL`] for one request under [`Faults::Random`], in
/// percent (37% of requests in all): the two that keep the client waiting until its deadline
/// are rarer, as they cost the test's wall time.
pub const RANDOM_WEIGHTS: [u64; 7] = [8, 6, 6, 6, 6, 2, 3];

/// Which requests lose their answers.
#[derive(Debug, Clone)]
pub enum Faults {
    /// Every answer is delivered.
    None,
    /// The n-th request (counting from 0, in the order their heads were read) gets the n-th
    /// entry; requests past the end are answered.
    Scripted(Vec<Option<Fault>>),
    /// Each request draws a fault with [`RANDOM_WEIGHTS`] from a generator seeded with this.
    Random(u64),
}

/// An answer as stored for a key and sent (or lost).
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn plain(status: u16, body: &str) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    /// This answer with `Retry-After: 0` (409 and 503: try again at once).
    fn retry_now(mut self) -> Answer {
        self.headers.push(("Retry-After".into(), "0".into()));
        self
    }

    /// The answer's bytes as sent: head (with Content-Length and `Connection: close`), body.
    fn head(&self) -> Vec<u8> {
        let mut s = format!(
            "HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.status,
            reason(self.status),
            self.body.len()
        );
        for (n, v) in &self.headers {
            s.push_str(&format!("{n}: {v}\r\n"));
        }
        s.push_str("\r\n");
        s.into_bytes()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        201 => "Created",
        400 => "Bad Request",
        409 => "Conflict",
        422 => "Unprocessable Content",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Where a key stands.
#[derive(Debug, Clone)]
enum KeyState {
    /// Its first request is being processed.
    InFlight,
    /// Processed: the answer to give a replay.
    Done(Answer),
}

/// What the server knows of one key.
#[derive(Debug, Clone)]
struct Entry {
    /// The body of the request that first used it (the draft's request fingerprint).
    body: Vec<u8>,
    state: KeyState,
}

/// What the server counted; a snapshot from [`IdempotentServer::counts`].
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Side effects committed per request body (the job: `job=17;instance=3`).
    pub effects_by_body: BTreeMap<String, u32>,
    /// Side effects committed per key (at most one each, by construction).
    pub effects_by_key: BTreeMap<String, u32>,
    /// Requests received per key.
    pub requests_by_key: BTreeMap<String, u32>,
    /// The keys seen with each body.
    pub keys_by_body: BTreeMap<String, BTreeSet<String>>,
    /// The `X-Chaos-Run` labels seen with each key.
    pub runs_by_key: BTreeMap<String, BTreeSet<String>>,
    /// Side effects committed per `X-Chaos-Run` label of the request that made them.
    pub effects_by_run: BTreeMap<String, u32>,
    /// Stored answers sent again to a replay (delivered or lost).
    pub replays: u32,
    /// Answers by status: 201 (first or replayed), 400, 409, 422, 503.
    pub statuses: BTreeMap<u16, u32>,
    /// Faults played, by kind.
    pub faults: BTreeMap<String, u32>,
    /// Requests whose head was read.
    pub requests: u32,
}

/// The server's state behind one lock.
struct Shared {
    keys: HashMap<String, Entry>,
    counts: Counts,
    faults: Faults,
    /// The generator's state, for [`Faults::Random`].
    rng: u64,
    /// Slow requests not yet committed.
    slow: u32,
    /// The keys of slow requests whose clients left: whether a request with the key has
    /// met its 409 since.
    gone: HashMap<String, bool>,
    /// How long a slow request stays in flight after its client left, unless met sooner
    /// ([`IN_FLIGHT_AFTER_CLOSE`] unless set by [`IdempotentServer::hold_in_flight`]).
    linger: Duration,
}

/// A running server; stops accepting when dropped (a slow request still commits).
pub struct IdempotentServer {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
}

impl IdempotentServer {
    /// Starts the server on a free loopback port.
    pub fn start(faults: Faults) -> io::Result<IdempotentServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let rng = match faults {
            Faults::Random(seed) => seed,
            _ => 0,
        };
        let shared = Arc::new(Mutex::new(Shared {
            keys: HashMap::new(),
            counts: Counts::default(),
            faults,
            rng,
            slow: 0,
            gone: HashMap::new(),
            linger: IN_FLIGHT_AFTER_CLOSE,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (state, stopping) = (shared.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let _ = conn.set_nodelay(true);
                let state = state.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, &state);
                });
            }
        });
        Ok(IdempotentServer { addr, shared, stop })
    }

    /// Keeps a slow request in flight for `linger` after its client left (unless a request
    /// with its key meets the 409 sooner): a test of what happens meanwhile then does not
    /// race the commit on a loaded machine.
    pub fn hold_in_flight(&self, linger: Duration) {
        lock(&self.shared).linger = linger;
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// What the server counted so far.
    pub fn counts(&self) -> Counts {
        lock(&self.shared).counts.clone()
    }

    /// Waits until no slow request is left to commit, at most `limit`; whether none is.
    pub fn settle(&self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while lock(&self.shared).slow > 0 {
            if Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

impl Drop for IdempotentServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(100));
    }
}

/// The lock, even if a thread panicked while holding it (the counts stay readable).
fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// A request as read: its key, its run label and its body.
struct Request {
    key: Option<String>,
    run: Option<String>,
    body: Vec<u8>,
}

/// Reads one request (head, then a body of its Content-Length); `None` if the client sent
/// nothing.
fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
        return Ok(None);
    }
    let (mut key, mut run, mut length) = (None, None, 0);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        let Some((name, value)) = h.split_once(':') else {
            continue;
        };
        let value = value.trim().to_string();
        match name.trim().to_ascii_lowercase().as_str() {
            "idempotency-key" => key = Some(value),
            "x-chaos-run" => run = Some(value),
            "content-length" => length = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(Request { key, run, body }))
}

/// What to do once the request is judged.
enum Plan {
    /// Send this answer (not stored: 400, 409, 422, 503), with no fault.
    Refuse(Answer),
    /// Process the request (its effect not yet committed), then deliver with the fault.
    Process { key: String, fault: Option<Fault> },
    /// Send the stored answer again, with the fault.
    Replay(Answer, Option<Fault>),
}

/// Serves one connection: one request, its answer (or its loss), then the close.
fn serve(conn: TcpStream, shared: &Mutex<Shared>) -> io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let Some(request) = read_request(&mut reader)? else {
        return Ok(());
    };
    match judge(shared, &request) {
        Plan::Refuse(answer) => deliver(conn, &answer, None),
        Plan::Replay(answer, fault) => deliver(conn, &answer, fault),
        Plan::Process { key, fault } => {
            if fault == Some(Fault::SlowCommit) {
                wait_for_close(&conn);
                commit_slowly(shared, &key, &request);
                return Ok(());
            }
            let answer = commit(shared, &key, &request);
            deliver(conn, &answer, fault)
        }
    }
}

/// Commits a slow request whose client left, once a request with its key met the 409
/// since, or [`IN_FLIGHT_AFTER_CLOSE`] passed.
fn commit_slowly(shared: &Mutex<Shared>, key: &str, request: &Request) {
    let linger = {
        let mut s = lock(shared);
        s.gone.insert(key.to_string(), false);
        s.linger
    };
    let until = Instant::now() + linger;
    while Instant::now() < until && lock(shared).gone.get(key) == Some(&false) {
        std::thread::sleep(Duration::from_millis(2));
    }
    commit(shared, key, request);
    let mut s = lock(shared);
    s.gone.remove(key);
    s.slow -= 1;
}

/// Counts the request and decides what it gets, under the lock: a key never seen is marked
/// in flight here, so that two requests with it cannot both be processed.
fn judge(shared: &Mutex<Shared>, request: &Request) -> Plan {
    let mut s = lock(shared);
    let fault = draw(&mut s);
    s.counts.requests += 1;
    let Some(key) = request.key.clone() else {
        let answer = Answer::plain(400, "an Idempotency-Key header is required\n");
        return refuse(&mut s, answer);
    };
    let body = String::from_utf8_lossy(&request.body).into_owned();
    let c = &mut s.counts;
    *c.requests_by_key.entry(key.clone()).or_default() += 1;
    c.keys_by_body.entry(body).or_default().insert(key.clone());
    if let Some(run) = &request.run {
        c.runs_by_key
            .entry(key.clone())
            .or_default()
            .insert(run.clone());
    }
    if let Some(f) = fault {
        *c.faults.entry(format!("{f:?}")).or_default() += 1;
    }
    if fault == Some(Fault::Unavailable) {
        let answer = Answer::plain(503, "busy, nothing was done\n").retry_now();
        return refuse(&mut s, answer);
    }
    let stored = s.keys.get(&key).cloned();
    match stored {
        None => {
            let body = request.body.clone();
            let state = KeyState::InFlight;
            s.keys.insert(key.clone(), Entry { body, state });
            s.slow += u32::from(fault == Some(Fault::SlowCommit));
            Plan::Process { key, fault }
        }
        Some(entry) if entry.body != request.body => {
            let text = "this Idempotency-Key was used with another request\n";
            refuse(&mut s, Answer::plain(422, text))
        }
        Some(Entry {
            state: KeyState::InFlight,
            ..
        }) => {
            if let Some(met) = s.gone.get_mut(&key) {
                *met = true;
            }
            let text = "a request with this key is in progress\n";
            refuse(&mut s, Answer::plain(409, text).retry_now())
        }
        Some(Entry {
            state: KeyState::Done(answer),
            ..
        }) => {
            s.counts.replays += 1;
            *s.counts.statuses.entry(answer.status).or_default() += 1;
            Plan::Replay(answer, fault)
        }
    }
}

/// `answer` as a refusal, its status counted.
fn refuse(s: &mut Shared, answer: Answer) -> Plan {
    *s.counts.statuses.entry(answer.status).or_default() += 1;
    Plan::Refuse(answer)
}

/// The next request's fault.
fn draw(s: &mut Shared) -> Option<Fault> {
    match &s.faults {
        Faults::None => None,
        Faults::Scripted(script) => {
            let n = s.counts.requests as usize;
            script.get(n).copied().flatten()
        }
        Faults::Random(_) => {
            let mut roll = splitmix64(&mut s.rng) % 100;
            for (fault, weight) in Fault::ALL.iter().zip(RANDOM_WEIGHTS) {
                if roll < weight {
                    return Some(*fault);
                }
                roll -= weight;
            }
            None
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a small generator, enough to pick faults.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Commits the side effect of `key`'s request (in flight until now) and stores its answer,
/// which names the effect: `effect N of BODY\n`, N counting the effects of that body.
fn commit(shared: &Mutex<Shared>, key: &str, request: &Request) -> Answer {
    let mut s = lock(shared);
    let body = &request.body;
    let text = String::from_utf8_lossy(body).into_owned();
    let c = &mut s.counts;
    if let Some(run) = &request.run {
        *c.effects_by_run.entry(run.clone()).or_default() += 1;
    }
    let n = c.effects_by_body.entry(text.clone()).or_default();
    *n += 1;
    let answer = Answer::plain(201, &format!("effect {n} of {text}\n"));
    *c.effects_by_key.entry(key.to_string()).or_default() += 1;
    *c.statuses.entry(201).or_default() += 1;
    let entry = Entry {
        body: body.to_vec(),
        state: KeyState::Done(answer.clone()),
    };
    s.keys.insert(key.to_string(), entry);
    answer
}

/// Sends `answer` on `out`, or loses it as `fault` says; the connection is closed after.
fn deliver(mut out: TcpStream, answer: &Answer, fault: Option<Fault>) -> io::Result<()> {
    let head = answer.head();
    match fault {
        None | Some(Fault::Unavailable) | Some(Fault::SlowCommit) => {
            out.write_all(&head)?;
            out.write_all(&answer.body)
        }
        Some(Fault::CloseBeforeHead) => Ok(()),
        Some(Fault::MidHead) => out.write_all(&head[..head.len() / 2]),
        Some(Fault::MidBody) => {
            out.write_all(&head)?;
            out.write_all(&answer.body[..answer.body.len() / 2])
        }
        Some(Fault::Reset) => {
            socket2::SockRef::from(&out).set_linger(Some(Duration::ZERO))?;
            drop(out);
            Ok(())
        }
        Some(Fault::Silence) => {
            wait_for_close(&out);
            Ok(())
        }
    }
}

/// Waits until the client closes the connection (or resets it), at most [`SILENCE_LIMIT`].
fn wait_for_close(conn: &TcpStream) {
    let until = Instant::now() + SILENCE_LIMIT;
    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
    let mut reader = conn;
    let mut buf = [0u8; 512];
    while Instant::now() < until {
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends a POST with `key` (none when `None`) and `body`; returns the connection, the
    /// request written and nothing yet read.
    fn send(server: &IdempotentServer, key: Option<&str>, body: &str) -> TcpStream {
        let mut conn = TcpStream::connect(server.addr).expect("the server accepts");
        let key = key.map(|k| format!("Idempotency-Key: {k}\r\n"));
        let request = format!(
            "POST /jobs HTTP/1.1\r\nHost: x\r\n{}X-Chaos-Run: r1\r\nContent-Length: {}\r\n\r\n{body}",
            key.unwrap_or_default(),
            body.len()
        );
        conn.write_all(request.as_bytes())
            .expect("the request is sent");
        conn
    }

    /// Everything the server sends until it closes, or the read error that ended it.
    fn read_all(mut conn: TcpStream) -> Result<Vec<u8>, io::ErrorKind> {
        conn.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("a timeout");
        let mut bytes = Vec::new();
        conn.read_to_end(&mut bytes).map_err(|e| e.kind())?;
        Ok(bytes)
    }

    /// The whole exchange, as text.
    fn exchange(server: &IdempotentServer, key: Option<&str>, body: &str) -> String {
        let bytes = read_all(send(server, key, body)).expect("an answer");
        String::from_utf8(bytes).expect("text")
    }

    fn start(faults: Faults) -> IdempotentServer {
        IdempotentServer::start(faults).expect("the server starts")
    }

    /// Waits (at most 20 s) until the server's state satisfies `ready`; whether it does.
    fn wait_for(server: &IdempotentServer, ready: impl Fn(&Shared) -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(20);
        while !ready(&lock(&server.shared)) {
            if Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    #[test]
    fn a_first_request_commits_and_a_replay_gets_the_stored_answer() {
        let server = start(Faults::None);
        let first = exchange(&server, Some("k1"), "job=1;instance=1");
        assert!(first.starts_with("HTTP/1.1 201 Created\r\n"), "{first}");
        assert!(
            first.ends_with("\r\n\r\neffect 1 of job=1;instance=1\n"),
            "{first}"
        );
        let again = exchange(&server, Some("k1"), "job=1;instance=1");
        assert_eq!(again, first, "a replay is answered byte for byte");
        let c = server.counts();
        assert_eq!(c.effects_by_body["job=1;instance=1"], 1);
        assert_eq!(c.effects_by_key["k1"], 1);
        assert_eq!(c.requests_by_key["k1"], 2);
        assert_eq!(c.replays, 1);
        assert_eq!(c.runs_by_key["k1"].len(), 1);
        assert_eq!(c.effects_by_run["r1"], 1, "the replay made none");
        // Another key with the same body is another job: a second effect.
        let other = exchange(&server, Some("k2"), "job=1;instance=1");
        assert!(other.ends_with("effect 2 of job=1;instance=1\n"), "{other}");
        let c = server.counts();
        assert_eq!(c.keys_by_body["job=1;instance=1"].len(), 2);
        assert_eq!(c.statuses[&201], 3);
    }

    #[test]
    fn a_key_with_another_body_gets_422_and_no_key_gets_400() {
        let server = start(Faults::None);
        exchange(&server, Some("k1"), "job=1;instance=1");
        let mismatch = exchange(&server, Some("k1"), "job=1;instance=2");
        assert!(mismatch.starts_with("HTTP/1.1 422 "), "{mismatch}");
        let missing = exchange(&server, None, "job=1;instance=2");
        assert!(missing.starts_with("HTTP/1.1 400 "), "{missing}");
        let c = server.counts();
        assert_eq!(c.effects_by_body.len(), 1, "{c:?}");
        assert_eq!((c.statuses[&422], c.statuses[&400], c.requests), (1, 1, 3));
    }

    #[test]
    fn a_key_in_flight_gets_409_until_its_request_is_committed() {
        let server = start(Faults::Scripted(vec![Some(Fault::SlowCommit)]));
        // Committed by the 409 below, not by time (a loaded machine's exchange once came
        // after the 100 ms a slow request lingers by default).
        server.hold_in_flight(Duration::from_secs(30));
        let slow = send(&server, Some("k1"), "job=1");
        assert!(
            wait_for(&server, |s| s.slow == 1),
            "the first request is in flight"
        );
        let busy = exchange(&server, Some("k1"), "job=1");
        assert!(busy.starts_with("HTTP/1.1 409 Conflict\r\n"), "{busy}");
        assert!(busy.contains("\r\nRetry-After: 0\r\n"), "{busy}");
        assert_eq!(
            server.counts().effects_by_body.len(),
            0,
            "not yet committed"
        );
        // The client gives up: the next request with the key still meets a 409, after
        // which the request is committed.
        drop(slow);
        assert!(
            wait_for(&server, |s| s.gone.contains_key("k1")),
            "the client left"
        );
        let busy = exchange(&server, Some("k1"), "job=1");
        assert!(busy.starts_with("HTTP/1.1 409 Conflict\r\n"), "{busy}");
        assert!(
            server.settle(Duration::from_secs(20)),
            "committed after the 409"
        );
        let answer = exchange(&server, Some("k1"), "job=1");
        assert!(answer.ends_with("effect 1 of job=1\n"), "{answer}");
        assert_eq!(server.counts().effects_by_key["k1"], 1);
        assert_eq!(server.counts().statuses[&409], 2);
    }

    #[test]
    fn a_slow_request_is_committed_soon_after_its_client_left() {
        let server = start(Faults::Scripted(vec![Some(Fault::SlowCommit)]));
        let mut slow = send(&server, Some("k1"), "job=1");
        assert!(wait_for(&server, |s| s.slow == 1), "in flight");
        slow.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("a timeout");
        let mut buf = [0u8; 16];
        assert!(slow.read(&mut buf).is_err(), "no answer while in flight");
        assert!(
            server.counts().effects_by_key.is_empty(),
            "not yet committed"
        );
        drop(slow);
        assert!(server.settle(Duration::from_secs(20)), "committed");
        assert_eq!(server.counts().effects_by_key["k1"], 1);
    }

    #[test]
    fn each_fault_point_loses_the_answer_of_a_committed_request() {
        use Fault::*;
        let script = vec![
            Some(CloseBeforeHead),
            Some(MidHead),
            Some(MidBody),
            Some(Reset),
        ];
        let server = start(Faults::Scripted(script));
        let full = "effect 1 of job=1\n";
        let before_head = read_all(send(&server, Some("a"), "job=1"));
        assert_eq!(before_head, Ok(Vec::new()));
        let mid_head = read_all(send(&server, Some("b"), "job=2")).expect("a close");
        let text = String::from_utf8_lossy(&mid_head);
        assert!(
            text.starts_with("HTTP/1.1 201") && !text.contains("\r\n\r\n"),
            "{text}"
        );
        let mid_body = read_all(send(&server, Some("c"), "job=3")).expect("a close");
        let text = String::from_utf8_lossy(&mid_body);
        let (head, body) = text.split_once("\r\n\r\n").expect("a whole head");
        assert!(
            head.contains(&format!("Content-Length: {}", full.len())),
            "{head}"
        );
        assert_eq!(body, &full[..full.len() / 2]);
        let reset = read_all(send(&server, Some("d"), "job=4"));
        assert_eq!(reset, Err(io::ErrorKind::ConnectionReset));
        let c = server.counts();
        for key in ["a", "b", "c", "d"] {
            assert_eq!(c.effects_by_key[key], 1, "{key} was committed: {c:?}");
        }
        assert_eq!(c.faults.len(), 4, "{c:?}");
        // Each key's replay now gets its answer.
        let replay = exchange(&server, Some("c"), "job=3");
        assert!(replay.ends_with("effect 1 of job=3\n"), "{replay}");
    }

    #[test]
    fn silence_holds_a_committed_answer_until_the_client_leaves() {
        let server = start(Faults::Scripted(vec![Some(Fault::Silence)]));
        let mut conn = send(&server, Some("k1"), "job=1");
        let committed = |s: &Shared| s.counts.effects_by_key.contains_key("k1");
        assert!(wait_for(&server, committed), "committed first");
        conn.set_read_timeout(Some(Duration::from_millis(300)))
            .expect("a timeout");
        let mut buf = [0u8; 16];
        let err = conn.read(&mut buf).expect_err("no byte comes");
        assert!(
            matches!(
                err.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{err}"
        );
    }

    #[test]
    fn a_503_comes_before_anything_is_done() {
        let server = start(Faults::Scripted(vec![Some(Fault::Unavailable)]));
        let busy = exchange(&server, Some("k1"), "job=1");
        assert!(busy.starts_with("HTTP/1.1 503 "), "{busy}");
        assert!(busy.contains("\r\nRetry-After: 0\r\n"), "{busy}");
        assert!(server.counts().effects_by_key.is_empty());
        let done = exchange(&server, Some("k1"), "job=1");
        assert!(
            done.ends_with("effect 1 of job=1\n"),
            "processed now: {done}"
        );
    }

    #[test]
    fn random_faults_follow_the_seed_and_the_weights() {
        let shared = |seed| Shared {
            keys: HashMap::new(),
            counts: Counts::default(),
            faults: Faults::Random(seed),
            rng: seed,
            slow: 0,
            gone: HashMap::new(),
            linger: IN_FLIGHT_AFTER_CLOSE,
        };
        let (mut a, mut b) = (shared(7), shared(7));
        let draws: Vec<_> = (0..10_000).map(|_| draw(&mut a)).collect();
        let again: Vec<_> = (0..10_000).map(|_| draw(&mut b)).collect();
        assert_eq!(draws, again, "one seed, one sequence");
        for (fault, weight) in Fault::ALL.iter().zip(RANDOM_WEIGHTS) {
            let n = draws.iter().filter(|d| **d == Some(*fault)).count() as u64;
            // 10,000 draws: within 1.5 points of the weight (over 4 standard deviations).
            assert!(n.abs_diff(weight * 100) <= 150, "{fault:?}: {n}");
        }
        let mut c = shared(8);
        let other: Vec<_> = (0..100).map(|_| draw(&mut c)).collect();
        assert_ne!(other, draws[..100], "another seed, another sequence");
    }
}
