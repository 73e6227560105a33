//! Which transfer of a batch starts next, as plain data the workers share under one lock:
//! transfers start in URL order within a window of at most `parallel_max` transfers
//! from the first whose output has not gone out yet (a transfer waiting for its turn on
//! stdout counts as in flight, so at most that many outputs wait), each once the run's
//! gate has room for it (its local layer, `gate::local`: at most `--parallel-max-host` in
//! flight to one origin, so a later transfer to another origin may start first, and starts
//! spaced evenly by `--rate`), nothing new once the batch is stopped
//! (`--fail-early` after a failure, the deadline, a signal) or its local layer halted. A
//! transfer taken by a worker is picked until the worker begins it (after `--rate`'s wait):
//! a picked one counts as not started. Outputs leave the window in URL
//! order; the tally counts them. Memory is bounded by the window, whatever the batch's
//! length. A transfer's origin is worked out once, as it enters the window (a look at the
//! window parses no URL).

use crate::exit::{Exit, Outcome};
use crate::gate::local::Local;
use std::collections::VecDeque;
use std::time::Instant;

/// One transfer in the window.
#[derive(Debug)]
enum Slot<T> {
    /// Not started yet.
    Waiting,
    /// Taken by a worker, which waits for its time (`--rate`) before it begins it.
    Picked,
    /// Begun by a worker.
    Running,
    /// Ended, with what it left for stdout (`T`, its captured output) and how it ended.
    Done(Exit, T),
}

/// How the transfers of a batch ended so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Transfers in the batch.
    pub count: usize,
    /// Transfers that succeeded.
    pub succeeded: usize,
    /// Transfers that ended with another outcome.
    pub failed: usize,
    /// The first failed transfer in URL order (0-based) and how it ended.
    pub first_failure: Option<(usize, Exit)>,
    /// The first transfer in URL order whose exit code is not 0, in the table in use
    /// (`--exit-codes curl` gives 0 to an HTTP error without `-f`): the first failure
    /// under retry-http's own table.
    pub first_code: Option<(usize, Exit)>,
    /// Transfers started and not ended yet (0 once the batch is over; the watchdog and
    /// the signal handler, which end the run while some are under way, count them failed).
    pub running: usize,
}

impl Tally {
    /// Transfers never started (or not yet).
    pub fn not_started(&self) -> usize {
        self.count - self.succeeded - self.failed - self.running
    }

    /// The batch's exit rule: success when every transfer succeeded; otherwise the outcome
    /// of the first failed transfer in URL order (the same under `-Z` and without); with no
    /// failure but transfers not started, `stopped` (why they were not).
    pub fn outcome(&self, stopped: Outcome) -> Outcome {
        match self.first_failure {
            Some((_, exit)) => exit.outcome,
            None if self.not_started() > 0 => stopped,
            None => Outcome::Success,
        }
    }

    /// The batch's exit rule in the table in use: the first transfer in URL order whose
    /// code is not 0; with none, transfers not started end it as `stopped`; else the first
    /// failure (whose code is then 0), or a success. Under retry-http's own table this is
    /// [`Tally::outcome`].
    pub fn exit(&self, stopped: Outcome) -> Exit {
        match (self.first_code, self.first_failure) {
            (Some((_, exit)), _) => exit,
            (None, _) if self.not_started() > 0 => Exit::of(stopped),
            (None, Some((_, exit))) => exit,
            (None, None) => Exit::of(Outcome::Success),
        }
    }

    fn count(&mut self, i: usize, exit: Exit) {
        if exit.code() != 0 && self.first_code.is_none_or(|(j, _)| i < j) {
            self.first_code = Some((i, exit));
        }
        if exit.outcome == Outcome::Success {
            self.succeeded += 1;
            return;
        }
        self.failed += 1;
        if self.first_failure.is_none_or(|(j, _)| i < j) {
            self.first_failure = Some((i, exit));
        }
    }
}

/// The limits a schedule keeps.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Transfers in the batch.
    pub count: usize,
    /// Transfers in flight at once (waiting for their turn on stdout included): 1 without
    /// `-Z`.
    pub ahead: usize,
    /// Stop starting transfers after the first failure (`--fail-early`).
    pub fail_early: bool,
}

/// The batch's schedule: the window of transfers in flight and the tally, over the gate's
/// local layer (which says whether an origin has room, and when `--rate` lets the next
/// transfer start). `T` is what an ended transfer leaves for stdout.
pub struct Schedule<'l, T> {
    limits: Limits,
    /// The run's local layer: transfers under way per origin, the next start.
    local: &'l Local,
    /// The transfers `first..first + window.len()`, each with its origin.
    window: VecDeque<(String, Slot<T>)>,
    /// The first transfer whose output has not gone out (the window's front).
    first: usize,
    /// Nothing new starts (`--fail-early`, the deadline, a signal).
    stopped: bool,
    /// A worker is writing an output to stdout: no other writes meanwhile.
    writing: bool,
    /// How the transfers ended so far.
    tally: Tally,
}

/// A transfer a worker may start: its number (0-based), its origin and when (`--rate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// The transfer (0-based).
    pub index: usize,
    /// Its origin, as the gate's local layer counts it (`--parallel-max-host`).
    pub origin: String,
    /// When it may start.
    pub at: Instant,
}

/// What a worker is to do next.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Start this transfer.
    Start(Start),
    /// Wait: every transfer it may start is blocked by a limit for now.
    Wait,
    /// Nothing is left to start: the worker ends.
    Finished,
}

impl<'l, T> Schedule<'l, T> {
    /// A schedule of `limits.count` transfers, none started, over the run's `local` layer.
    pub fn new(limits: Limits, local: &'l Local) -> Schedule<'l, T> {
        Schedule {
            limits,
            local,
            window: VecDeque::new(),
            first: 0,
            stopped: false,
            writing: false,
            tally: Tally {
                count: limits.count,
                ..Tally::default()
            },
        }
    }

    /// How the transfers ended so far: those whose output went out, those ended and
    /// waiting for their turn on stdout, and those under way (`running`).
    pub fn tally(&self) -> Tally {
        let mut t = self.tally;
        for (k, (_, slot)) in self.window.iter().enumerate() {
            match slot {
                Slot::Done(exit, _) => t.count(self.first + k, *exit),
                Slot::Running => t.running += 1,
                Slot::Waiting | Slot::Picked => {}
            }
        }
        t
    }

    /// Starts nothing new from now on.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Whether nothing new starts.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The next transfer to start at `now`: the first waiting one in the window whose
    /// origin has room in the gate's local layer, the window growing up to its limit
    /// (`origin_of` gives the origin of a transfer entering it). The transfer is marked
    /// picked and the local layer counts it, and says when `--rate` lets it start (the
    /// worker then marks it begun: [`Schedule::begin`]). Nothing starts once the batch is
    /// stopped or its local layer halted.
    pub fn next(&mut self, now: Instant, origin_of: impl Fn(usize) -> String) -> Next {
        if self.local.halted() {
            self.stopped = true;
        }
        if self.stopped {
            return Next::Finished;
        }
        self.grow(origin_of);
        let Some(k) = self.startable_slot() else {
            let waiting = self.window.iter().any(|(_, s)| matches!(s, Slot::Waiting));
            let more = self.first + self.window.len() < self.limits.count;
            return match waiting || more {
                true => Next::Wait,
                false => Next::Finished,
            };
        };
        let origin = self.window[k].0.clone();
        self.window[k].1 = Slot::Picked;
        let at = self.local.start(&origin, now);
        let index = self.first + k;
        Next::Start(Start { index, origin, at })
    }

    /// Whether [`Schedule::next`] would start a transfer now (the window grown first, as
    /// it grows it): a worker asleep has work only then.
    pub fn startable(&mut self, origin_of: impl Fn(usize) -> String) -> bool {
        if self.stopped || self.local.halted() {
            return false;
        }
        self.grow(origin_of);
        self.startable_slot().is_some()
    }

    /// Takes transfers into the window up to its limit, each with its origin.
    fn grow(&mut self, origin_of: impl Fn(usize) -> String) {
        while self.window.len() < self.limits.ahead
            && self.first + self.window.len() < self.limits.count
        {
            let origin = origin_of(self.first + self.window.len());
            self.window.push_back((origin, Slot::Waiting));
        }
    }

    /// The place in the window of the first waiting transfer whose origin has room.
    /// An origin found full is not asked again in the same pass: the window of a batch to
    /// one origin is mostly transfers waiting for it.
    fn startable_slot(&self) -> Option<usize> {
        let mut full: Vec<&str> = Vec::new();
        self.window.iter().position(|(origin, slot)| {
            if !matches!(slot, Slot::Waiting) || full.contains(&origin.as_str()) {
                return false;
            }
            let room = self.local.room_for(origin);
            if !room {
                full.push(origin);
            }
            room
        })
    }

    /// Transfer `index` (to `origin`) ended as `exit`, leaving `spool` for stdout.
    pub fn ended(&mut self, index: usize, origin: &str, exit: Exit, spool: T) {
        self.local.ended(origin);
        if let Some((_, slot)) = self.window.get_mut(index - self.first) {
            *slot = Slot::Done(exit, spool);
        }
        if exit.outcome != Outcome::Success && self.limits.fail_early {
            // A failure the attempts' verdicts did not show (a file of the run's end that
            // could not be written) halts the transfers waiting for their first send too.
            self.local.halt();
            self.stopped = true;
        }
    }

    /// Transfer `index`, picked, is begun by its worker: it counts as under way.
    pub fn begin(&mut self, index: usize) {
        if let Some((_, slot)) = self.window.get_mut(index - self.first) {
            *slot = Slot::Running;
        }
    }

    /// Transfer `index` was picked but not started, or sent nothing before the batch
    /// stopped (the batch stopped meanwhile).
    pub fn not_started(&mut self, index: usize, origin: &str) {
        self.local.ended(origin);
        if let Some((_, slot)) = self.window.get_mut(index - self.first) {
            *slot = Slot::Waiting;
        }
    }

    /// The next output to write to stdout, in URL order, unless another worker is writing
    /// one: the window's front once it has ended (a transfer that will never start is
    /// passed over once the batch is stopped). The caller writes it, then calls
    /// [`Schedule::written`].
    pub fn next_output(&mut self) -> Option<T> {
        if self.writing {
            return None;
        }
        loop {
            match self.window.front().map(|(_, slot)| slot) {
                Some(Slot::Done(..)) => break,
                Some(Slot::Waiting) if self.stopped => {
                    self.window.pop_front();
                    self.first += 1;
                }
                _ => return None,
            }
        }
        let Some((_, Slot::Done(exit, spool))) = self.window.pop_front() else {
            return None;
        };
        self.tally.count(self.first, exit);
        self.first += 1;
        self.writing = true;
        Some(spool)
    }

    /// The output [`Schedule::next_output`] gave is written.
    pub fn written(&mut self) {
        self.writing = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::gate::local::Shape;
    use std::time::Duration;

    fn limits(count: usize, ahead: usize) -> Limits {
        Limits {
            count,
            ahead,
            fail_early: false,
        }
    }

    /// The gate's local layer with `--parallel-max-host per_origin` and `--rate`'s spacing.
    fn local(per_origin: usize, spacing: Option<Duration>) -> Local {
        Local::new(Shape {
            per_origin,
            spacing,
            pacing: false,
            records: None,
            fail_early: false,
        })
    }

    fn start(s: &mut Schedule<'_, usize>, now: Instant, origins: &[&str]) -> Option<usize> {
        match s.next(now, |i| origins[i].to_string()) {
            Next::Start(st) => Some(st.index),
            _ => None,
        }
    }

    #[test]
    fn serial_runs_one_at_a_time_in_url_order() {
        let now = Instant::now();
        let local = local(6, None);
        let mut s = Schedule::new(limits(3, 1), &local);
        let o = ["a", "a", "b"];
        assert_eq!(start(&mut s, now, &o), Some(0));
        assert_eq!(s.next(now, |i| o[i].into()), Next::Wait);
        s.ended(0, "a", Exit::of(Outcome::Success), 10);
        assert_eq!(s.next_output(), Some(10));
        s.written();
        assert_eq!(start(&mut s, now, &o), Some(1));
        s.ended(1, "a", Exit::of(Outcome::AttemptsExhausted), 11);
        assert_eq!(s.next_output(), Some(11));
        s.written();
        assert_eq!(start(&mut s, now, &o), Some(2));
        s.ended(2, "b", Exit::of(Outcome::Success), 12);
        assert_eq!(s.next_output(), Some(12));
        s.written();
        assert_eq!(s.next(now, |i| o[i].into()), Next::Finished);
        let t = s.tally();
        assert_eq!((t.succeeded, t.failed, t.not_started()), (2, 1, 0));
        assert_eq!(t.outcome(Outcome::Deadline), Outcome::AttemptsExhausted);
    }

    #[test]
    fn outputs_leave_in_url_order_and_the_window_bounds_what_starts() {
        let now = Instant::now();
        let local = local(6, None);
        let mut s = Schedule::new(limits(5, 2), &local);
        let o = ["a"; 5];
        assert_eq!(start(&mut s, now, &o), Some(0));
        assert_eq!(start(&mut s, now, &o), Some(1));
        // Two in flight: the third waits though a worker is free.
        assert_eq!(s.next(now, |i| o[i].into()), Next::Wait);
        s.ended(1, "a", Exit::of(Outcome::Success), 1);
        assert_eq!(s.next_output(), None, "transfer 0 goes first");
        assert_eq!(s.next(now, |i| o[i].into()), Next::Wait);
        s.ended(0, "a", Exit::of(Outcome::Success), 0);
        assert_eq!(s.next_output(), Some(0));
        assert_eq!(s.next_output(), None, "one writer at a time");
        s.written();
        assert_eq!(s.next_output(), Some(1));
        s.written();
        assert_eq!(start(&mut s, now, &o), Some(2));
    }

    #[test]
    fn an_origin_at_its_limit_lets_another_origin_start() {
        let now = Instant::now();
        let local = local(1, None);
        let mut s = Schedule::new(limits(4, 4), &local);
        let o = ["a", "a", "b", "a"];
        assert_eq!(start(&mut s, now, &o), Some(0));
        assert_eq!(start(&mut s, now, &o), Some(2));
        assert_eq!(s.next(now, |i| o[i].into()), Next::Wait);
        s.ended(0, "a", Exit::of(Outcome::Success), 0);
        assert_eq!(start(&mut s, now, &o), Some(1));
    }

    #[test]
    fn each_transfer_s_origin_is_worked_out_once_however_often_the_window_is_looked_at() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let now = Instant::now();
        let local = local(1, None);
        let mut s = Schedule::new(limits(8, 4), &local);
        let asked = AtomicUsize::new(0);
        let origin_of = |_| {
            asked.fetch_add(1, Ordering::SeqCst);
            "a".to_string()
        };
        assert!(matches!(s.next(now, origin_of), Next::Start(_)));
        for _ in 0..10 {
            // The origin is at its limit: every look at the window finds nothing to start.
            assert_eq!(s.next(now, origin_of), Next::Wait);
        }
        assert_eq!(
            asked.load(Ordering::SeqCst),
            4,
            "once per transfer in the window"
        );
        s.ended(0, "a", Exit::of(Outcome::Success), 0);
        assert!(
            matches!(s.next(now, origin_of), Next::Start(st) if st.index == 1 && st.origin == "a")
        );
        assert_eq!(s.next_output(), Some(0));
        s.written();
        assert!(matches!(s.next(now, origin_of), Next::Wait));
        assert_eq!(
            asked.load(Ordering::SeqCst),
            5,
            "the window took in one more"
        );
    }

    #[test]
    fn startable_says_whether_next_would_start_one_and_starts_none() {
        let now = Instant::now();
        let local = local(1, None);
        let mut s = Schedule::new(limits(3, 2), &local);
        let o = ["a", "a", "b"];
        assert!(s.startable(|i| o[i].into()));
        assert_eq!(start(&mut s, now, &o), Some(0));
        // Transfer 1 waits for origin a; b is outside the window.
        assert!(!s.startable(|i| o[i].into()));
        s.ended(0, "a", Exit::of(Outcome::Success), 0);
        assert!(s.startable(|i| o[i].into()), "a has room again");
        assert_eq!(s.tally().running, 0, "nothing started by asking");
        assert_eq!(start(&mut s, now, &o), Some(1));
        assert!(!s.startable(|i| o[i].into()), "the window is full");
        assert_eq!(s.next_output(), Some(0));
        s.written();
        assert!(s.startable(|i| o[i].into()), "b entered the window");
        s.stop();
        assert!(!s.startable(|i| o[i].into()), "stopped");
    }

    #[test]
    fn rate_spaces_the_starts() {
        let now = Instant::now();
        let local = local(6, Some(Duration::from_millis(100)));
        let mut s: Schedule<usize> = Schedule::new(limits(3, 3), &local);
        let at: Vec<Instant> = (0..3)
            .map(|_| match s.next(now, |_| "a".into()) {
                Next::Start(st) => st.at,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(at[0], now);
        assert_eq!(at[1], now + Duration::from_millis(100));
        assert_eq!(at[2], now + Duration::from_millis(200));
    }

    #[test]
    fn fail_early_starts_nothing_new_and_counts_the_rest_not_started() {
        let now = Instant::now();
        let local = local(6, None);
        let mut s = Schedule::new(
            Limits {
                fail_early: true,
                ..limits(4, 2)
            },
            &local,
        );
        let o = ["a"; 4];
        assert_eq!(start(&mut s, now, &o), Some(0));
        assert_eq!(start(&mut s, now, &o), Some(1));
        s.ended(1, "a", Exit::of(Outcome::Refused), 1);
        assert_eq!(s.next(now, |i| o[i].into()), Next::Finished);
        s.ended(0, "a", Exit::of(Outcome::AttemptsExhausted), 0);
        assert_eq!(s.next_output(), Some(0));
        s.written();
        assert_eq!(s.next_output(), Some(1));
        s.written();
        assert_eq!(s.next_output(), None);
        let t = s.tally();
        assert_eq!((t.succeeded, t.failed, t.not_started()), (0, 2, 2));
        // The first failure in URL order, not in time.
        assert_eq!(t.outcome(Outcome::Deadline), Outcome::AttemptsExhausted);
    }

    #[test]
    fn the_tally_counts_ended_transfers_waiting_for_stdout_and_those_under_way() {
        let now = Instant::now();
        let local = local(6, None);
        let mut s = Schedule::new(limits(4, 4), &local);
        let o = ["a", "b", "c", "d"];
        for want in 0..3 {
            assert_eq!(start(&mut s, now, &o), Some(want));
            s.begin(want);
        }
        s.ended(1, "b", Exit::of(Outcome::Success), 11);
        s.ended(2, "c", Exit::of(Outcome::AttemptsExhausted), 12);
        // Transfer 0 is under way: nothing has gone to stdout yet.
        assert_eq!(s.next_output(), None);
        let t = s.tally();
        assert_eq!((t.succeeded, t.failed, t.running), (1, 1, 1));
        assert_eq!(t.not_started(), 1);
        assert_eq!(
            t.first_failure,
            Some((2, Exit::of(Outcome::AttemptsExhausted)))
        );
    }

    #[test]
    fn a_transfer_picked_but_not_begun_counts_as_not_started() {
        let now = Instant::now();
        let local = local(6, None);
        let mut s: Schedule<usize> = Schedule::new(limits(2, 2), &local);
        let o = ["a", "b"];
        assert_eq!(start(&mut s, now, &o), Some(0));
        assert_eq!(start(&mut s, now, &o), Some(1));
        s.begin(0);
        let t = s.tally();
        assert_eq!((t.running, t.not_started()), (1, 1));
    }

    #[test]
    fn a_halted_local_layer_starts_nothing() {
        let now = Instant::now();
        let local = local(6, None);
        let mut s: Schedule<usize> = Schedule::new(limits(3, 3), &local);
        let o = ["a", "a", "a"];
        assert_eq!(start(&mut s, now, &o), Some(0));
        local.halt();
        assert!(!s.startable(|i| o[i].into()));
        assert_eq!(s.next(now, |i| o[i].into()), Next::Finished);
    }

    #[test]
    fn transfers_not_started_without_a_failure_take_the_reason_they_stopped() {
        let t = Tally {
            count: 3,
            succeeded: 1,
            failed: 0,
            first_failure: None,
            first_code: None,
            running: 0,
        };
        assert_eq!(t.outcome(Outcome::Deadline), Outcome::Deadline);
        let all = Tally { succeeded: 3, ..t };
        assert_eq!(all.outcome(Outcome::Deadline), Outcome::Success);
    }
}
