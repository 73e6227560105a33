//! The event engine the three models run on: a queue of events in time order (microseconds
//! of simulated time, ties in the order they were scheduled), the loop that hands each
//! event to its model ([`run`]), the exponential delays the overload and failure-rate models
//! draw, and the counts their figures share.

use rand::RngExt;
use rand::rngs::StdRng;
use retry_http_policy::Millis;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Events to come, by time in microseconds; events at the same time in the order they were
/// pushed (each push takes the next sequence number, so `E`'s own order never decides).
pub struct Queue<E> {
    heap: BinaryHeap<Reverse<(u64, u64, E)>>,
    seq: u64,
}

impl<E: Ord> Default for Queue<E> {
    fn default() -> Queue<E> {
        Queue::new()
    }
}

impl<E: Ord> Queue<E> {
    /// An empty queue.
    pub fn new() -> Queue<E> {
        Queue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Schedules `event` at `t` microseconds.
    pub fn push(&mut self, t: u64, event: E) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, event)));
    }

    /// The earliest event and its time, taken out.
    pub fn pop(&mut self) -> Option<(u64, E)> {
        self.heap.pop().map(|Reverse((t, _, e))| (t, e))
    }
}

/// A model the engine runs: its events to come, and what each one does.
pub trait Model {
    /// What happens at an instant.
    type Event: Ord;

    /// The events to come.
    fn queue(&mut self) -> &mut Queue<Self::Event>;

    /// Does what `event` does at `t` microseconds (it may schedule more).
    fn handle(&mut self, t: u64, event: Self::Event);
}

/// Hands `model` its events in time order until none is left, or until the next one is at
/// or past `end` (microseconds; None: no end).
pub fn run<M: Model>(model: &mut M, end: Option<u64>) {
    while let Some((t, event)) = model.queue().pop() {
        if end.is_some_and(|end| t >= end) {
            break;
        }
        model.handle(t, event);
    }
}

/// Microseconds of simulated time as the milliseconds the fleet's breaker and budget count.
pub fn millis(t: u64) -> Millis {
    t / 1000
}

/// An exponential delay with mean `mean_s` seconds, in microseconds (at least 1, so that
/// time moves on); never (`u64::MAX`) when the mean is not a positive number (a rate of 0).
pub fn exponential(rng: &mut StdRng, mean_s: f64) -> u64 {
    if !(mean_s > 0.0 && mean_s.is_finite()) {
        return u64::MAX;
    }
    let u: f64 = rng.random_range(f64::EPSILON..1.0);
    ((-u.ln() * mean_s * 1e6) as u64).max(1)
}

/// What the runs of one strategy came to, in the overload and failure-rate models.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Runs that ended (succeeded, failed or refused) before the end of the simulation.
    pub ended: u64,
    /// Runs that succeeded.
    pub succeeded: u64,
    /// Tries sent.
    pub calls: u64,
    /// First tries sent.
    pub first_tries: u64,
}

impl Counts {
    /// Succeeded runs / runs that ended (0 to 1); a refused run has ended, unserved.
    pub fn success_rate(&self) -> f64 {
        share(self.succeeded, self.ended)
    }

    /// Tries / first tries.
    pub fn amplification(&self) -> f64 {
        share(self.calls, self.first_tries)
    }

    /// Adds another seed's counts (the same strategy and point).
    pub fn add(&mut self, other: &Counts) {
        self.ended += other.ended;
        self.succeeded += other.succeeded;
        self.calls += other.calls;
        self.first_tries += other.first_tries;
    }
}

/// `part / whole`, and 1 when there is no whole (no run ended, no first try: nothing failed
/// and nothing was multiplied).
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_in_time_order_and_ties_in_the_order_pushed() {
        let mut q = Queue::new();
        q.push(5, 'c');
        q.push(1, 'z');
        q.push(5, 'a');
        q.push(1, 'b');
        let order: Vec<(u64, char)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [(1, 'z'), (1, 'b'), (5, 'c'), (5, 'a')]);
    }

    #[test]
    fn nothing_to_share_is_a_share_of_one() {
        let c = Counts::default();
        assert_eq!((c.success_rate(), c.amplification()), (1.0, 1.0));
        let mut d = Counts {
            ended: 4,
            succeeded: 3,
            calls: 6,
            first_tries: 4,
        };
        d.add(&d.clone());
        assert_eq!((d.success_rate(), d.amplification()), (0.75, 1.5));
    }
}
