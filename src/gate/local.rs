//! The gate's local layer: what the transfers of one run share in process, always there
//! (a run of one URL has its own; a batch lends one to all its transfers).
//!
//! - the origins' table (`fleet::origins`): the Retry-After hold, RateLimit pacing and
//!   the requests in flight, per origin;
//! - the transfers under way per origin and the next start `--rate` allows: the room the
//!   batch's scheduler asks before it starts a transfer (`--parallel-max-host` per origin,
//!   `--rate` as the run's ceiling);
//! - for a batch without `--state`, its own breaker and budget records per origin, kept
//!   in process by the same rules as a store's (`fleet::op`, `fleet::record`: the circuit
//!   breaker, the retry budget and the Retry-After told to another transfer), at most
//!   `store::memory::MAX_TARGETS` origins, forgotten after `--state-ttl` as a store's. A
//!   run of one URL keeps none: with one run there is nobody to share them with (the
//!   budget never counts a run's own retries, and the breaker hears a run only at its end).
//!
//! - whether the batch has halted: once it has (`--fail-early` after a failure, stdout's
//!   reader gone), no transfer sends its first request; the transfers that sent theirs go
//!   on. Under `--fail-early` an answer's head releases nothing (its transfer may still
//!   fail), and no first request goes while a transfer's attempt is being decided: the
//!   halt is set before the room that attempt leaves is given to another.
//!
//! Every piece is behind its own lock, held only for a decision, never across a wait or a
//! request, so a batch's workers share the layer as it is.

use crate::fleet::origins::Origins;
use crate::fleet::record::Limits;
use crate::fleet::store::Clock;
use crate::fleet::store::memory::{MemoryStore, SharedMemory};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The local layer of one run's gate.
pub struct Local {
    /// The origins' table (hold, pacing, requests in flight).
    origins: Origins,
    /// A batch's own breaker and budget records, without `--state`.
    records: Option<SharedMemory>,
    /// `--parallel-max-host`: transfers under way at once to one origin (at least 1).
    per_origin: usize,
    /// `--rate`: the time between two starts of a transfer (none: as fast as they come).
    spacing: Option<Duration>,
    /// The transfers under way per origin, and the next start `--rate` allows.
    starts: Mutex<Starts>,
    /// `--fail-early`: the first failed transfer halts the batch.
    fail_early: bool,
    /// No transfer sends its first request any more.
    halted: Arc<AtomicBool>,
    /// Under `--fail-early`, attempts over whose verdict is not yet known.
    deciding: AtomicUsize,
    /// A batch's transfers begun that have not sent their first request yet (read by the
    /// summary written when the run is ended from another thread: those count as not
    /// started).
    unsent: Arc<AtomicUsize>,
}

/// How long a first request waits, under `--fail-early`, while another transfer's attempt
/// is being decided (microseconds of the policy's arithmetic).
pub const DECIDING: Duration = Duration::from_millis(1);

/// The transfers under way per origin (an origin with none has no entry), and the earliest
/// moment the next one may start.
#[derive(Debug, Default)]
struct Starts {
    running: HashMap<String, usize>,
    next_at: Option<Instant>,
}

/// Halts a local layer from another thread, as [`Local::halt`] does (stdout's reader gone,
/// as a thread watching it learns).
#[derive(Debug, Clone)]
pub struct Halter(Arc<AtomicBool>);

impl Halter {
    /// From now on no transfer of the layer sends its first request.
    pub fn halt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// What a run's local layer is made with.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// `--parallel-max-host` (1 for a run of one URL).
    pub per_origin: usize,
    /// `--rate`'s spacing between two starts.
    pub spacing: Option<Duration>,
    /// Whether the origins are paced to the rate they accept (a batch's: see
    /// `policy::pacer`).
    pub pacing: bool,
    /// The breaker's and budget's settings of the records a batch keeps without
    /// `--state` (`None`: it keeps none).
    pub records: Option<Limits>,
    /// `--fail-early`.
    pub fail_early: bool,
}

impl Local {
    /// The local layer of a run, with its limits.
    pub fn new(limits: Shape) -> Local {
        Local {
            origins: match limits.pacing {
                true => Origins::pacing(),
                false => Origins::new(),
            },
            records: limits
                .records
                .map(|l| SharedMemory(Arc::new(MemoryStore::new(&l, Clock::own())))),
            per_origin: limits.per_origin.max(1),
            spacing: limits.spacing,
            starts: Mutex::new(Starts::default()),
            fail_early: limits.fail_early,
            halted: Arc::default(),
            deciding: AtomicUsize::new(0),
            unsent: Arc::default(),
        }
    }

    /// The layer counting its transfers begun and not yet sent in `unsent` (shared with
    /// whoever reads it: see [`Local::begun`]).
    pub fn counting_unsent(self, unsent: Arc<AtomicUsize>) -> Local {
        Local { unsent, ..self }
    }

    /// A batch's transfer is begun: it counts as not sent until its first request is
    /// cleared ([`Local::sending`]) or it ends without one ([`Local::gone_unsent`]).
    pub fn begun(&self) {
        self.unsent.fetch_add(1, Ordering::SeqCst);
    }

    /// A transfer's first request is cleared to go.
    pub(super) fn sending(&self) {
        self.gone_unsent();
    }

    /// A begun transfer ended without sending anything.
    pub fn gone_unsent(&self) {
        let _ = self
            .unsent
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// The local layer of a run of one URL: no records, no limit on starts.
    pub fn single() -> Local {
        Local::new(Shape {
            per_origin: 1,
            spacing: None,
            pacing: false,
            records: None,
            fail_early: false,
        })
    }

    /// From now on no transfer sends its first request (`--fail-early` after a failure,
    /// stdout's reader gone, the batch stopping).
    pub fn halt(&self) {
        self.halted.store(true, Ordering::SeqCst);
    }

    /// What halts the layer from another thread (see [`Local::halt`]).
    pub fn halter(&self) -> Halter {
        Halter(self.halted.clone())
    }

    /// Whether the batch has halted (see [`Local::halt`]).
    pub fn halted(&self) -> bool {
        self.halted.load(Ordering::SeqCst)
    }

    /// Under `--fail-early`, whether an answer's head may release the transfers waiting
    /// for room: not while the transfer it answers may still fail.
    pub(super) fn release_at_head(&self) -> bool {
        !self.fail_early
    }

    /// Under `--fail-early`, an attempt is over and its verdict is being decided: no
    /// first request goes until [`Local::decided`].
    pub(super) fn deciding(&self) {
        if self.fail_early {
            self.deciding.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The verdict of an attempt [`Local::deciding`] counted: `failed`, the run ends in a
    /// failure, which under `--fail-early` halts the batch before the count lets go.
    pub(super) fn decided(&self, failed: bool) {
        if !self.fail_early {
            return;
        }
        if failed {
            self.halt();
        }
        let _ = self
            .deciding
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// Whether a first request must wait for a verdict (see [`Local::deciding`]).
    pub(super) fn undecided(&self) -> bool {
        self.deciding.load(Ordering::SeqCst) > 0
    }

    /// The origins' table.
    pub(super) fn origins(&self) -> &Origins {
        &self.origins
    }

    /// The rate each paced origin is sent to at `at`, requests/s, by origin (the rates
    /// a batch's origins settled at, for its end).
    pub fn settled(&self, at: Instant) -> Vec<(String, f64)> {
        self.origins.settled(at)
    }

    /// The batch's own breaker and budget records, if it keeps them.
    pub(super) fn records(&self) -> Option<&SharedMemory> {
        self.records.as_ref()
    }

    fn starts(&self) -> MutexGuard<'_, Starts> {
        // A panic elsewhere while holding it leaves plain data: still usable.
        self.starts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a transfer to `origin` may start (`--parallel-max-host`: fewer than that
    /// many are under way to it).
    pub fn room_for(&self, origin: &str) -> bool {
        self.starts().running.get(origin).copied().unwrap_or(0) < self.per_origin
    }

    /// A transfer to `origin` starts (the caller asked [`Local::room_for`] under its own
    /// lock): it is counted under way until [`Local::ended`], and it may start at the
    /// returned moment, `now` or later as `--rate` spaces the starts evenly.
    pub fn start(&self, origin: &str, now: Instant) -> Instant {
        let mut s = self.starts();
        *s.running.entry(origin.to_string()).or_insert(0) += 1;
        let at = s.next_at.map_or(now, |t| t.max(now));
        s.next_at = self.spacing.map(|d| at + d);
        at
    }

    /// A transfer to `origin` ended, or was not started after all: it no longer counts.
    pub fn ended(&self, origin: &str) {
        let mut s = self.starts();
        if let Some(n) = s.running.get_mut(origin) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                s.running.remove(origin);
            }
        }
    }
}
