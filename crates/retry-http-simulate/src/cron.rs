//! The cron-fleet model: `clients` hosts run the same job on one cron schedule, every host's
//! cron firing at second 0 of each period. Each host waits its splay offset first (the
//! product's own `fleet::splay::offset`, of its name and the target), then makes its store
//! operations and its request. What the model counts is where a period's load lands: per
//! second of the period, the requests the target receives and the operations the fleet
//! store receives, and the busiest second against the mean.
//!
//! The model's rules: host `i` (0-based) is named `host-<i>` and its target's key is
//! [`TARGET`]; a run's store operations and its request fall in the second its offset does
//! (on the common path a run lasts well under a second); every run takes `store_ops` store
//! round trips (3 on the common path: the connection, the admission and the final record).
//! The figures are those of every period alike, since a host's offset is the same every
//! tick. It is arithmetic, not a simulation in time: one hash per host.

use retry_http_policy::splay;
use std::time::Duration;

/// The target's key every host's offset is derived from (scheme://host:port, as the fleet
/// store names a target). Another target moves each host's offset, not the spread.
pub const TARGET: &str = "https://api.example:443";

/// Store round trips per run on the common path (a closed circuit, a success): the
/// connection (with its handshake), the admission, the final record.
pub const STORE_OPS: u32 = 3;

/// A fleet on one cron schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// Hosts, each running the job once a period (100,000).
    pub clients: u32,
    /// The schedule's period: every host's cron fires at its second 0 (1 min; whole seconds).
    pub period: Duration,
    /// The splay: each host waits its offset in `[0, splay)` before its run (none: 0; at
    /// most the period).
    pub splay: Duration,
    /// Store round trips per run ([`STORE_OPS`]).
    pub store_ops: u32,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            clients: 100_000,
            period: Duration::from_secs(60),
            splay: Duration::ZERO,
            store_ops: STORE_OPS,
        }
    }
}

/// Where one kind of load lands in a period.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// What is counted: `requests` (at the target) or `store_operations` (at the store).
    pub what: &'static str,
    /// Per second of the period, from second 0.
    pub per_second: Vec<u64>,
}

impl Load {
    /// The busiest second of the period (the first of equals) and its count.
    pub fn peak(&self) -> (usize, u64) {
        let max = self.per_second.iter().copied().max().unwrap_or(0);
        let at = self.per_second.iter().position(|n| *n == max);
        (at.unwrap_or(0), max)
    }

    /// The mean per second over the period.
    pub fn mean(&self) -> f64 {
        let total: u64 = self.per_second.iter().sum();
        total as f64 / self.per_second.len().max(1) as f64
    }

    /// The busiest second against the mean: 1 when the load is spread evenly, the period in
    /// seconds when it all lands in one second (0 with no load).
    pub fn peak_to_mean(&self) -> f64 {
        let mean = self.mean();
        if mean > 0.0 {
            self.peak().1 as f64 / mean
        } else {
            0.0
        }
    }
}

/// The period's requests and store operations per second, in that order.
pub fn play(sc: &Scenario) -> [Load; 2] {
    let seconds = sc.period.as_secs().max(1) as usize;
    let mut requests = vec![0u64; seconds];
    for i in 0..sc.clients {
        let offset = splay::offset(&format!("host-{i}"), TARGET, sc.splay);
        // An offset is below the splay, which is at most the period; the last second takes
        // any later one all the same.
        let second = (offset.as_secs() as usize).min(seconds - 1);
        requests[second] += 1;
    }
    let ops = requests
        .iter()
        .map(|n| n * u64::from(sc.store_ops))
        .collect();
    [
        Load {
            what: "requests",
            per_second: requests,
        },
        Load {
            what: "store_operations",
            per_second: ops,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn without_a_splay_the_fleet_lands_in_second_0() {
        let [requests, ops] = play(&Scenario::default());
        assert_eq!(requests.peak(), (0, 100_000));
        assert_eq!(ops.peak(), (0, 300_000));
        assert_eq!(requests.peak_to_mean(), 60.0);
        assert_eq!(ops.peak_to_mean(), 60.0);
        assert_eq!(ops.mean(), 5_000.0);
    }

    #[test]
    fn a_splay_of_the_period_spreads_the_fleet_within_a_tenth() {
        let sc = Scenario {
            splay: MINUTE,
            ..Scenario::default()
        };
        let [requests, ops] = play(&sc);
        assert!(requests.peak_to_mean() < 1.1, "{:?}", requests.peak());
        assert_eq!(requests.per_second.iter().sum::<u64>(), 100_000);
        assert_eq!(requests.peak_to_mean(), ops.peak_to_mean());
        assert_eq!(ops.peak().1, 3 * requests.peak().1);
        assert!(requests.per_second.iter().all(|n| *n > 0));
    }

    /// A splay shorter than the period spreads the fleet over its own seconds only: 10 s of
    /// a minute give a peak of about 6 times the mean; the seconds past it stay empty.
    #[test]
    fn a_shorter_splay_spreads_the_fleet_over_its_own_seconds() {
        let sc = Scenario {
            splay: Duration::from_secs(10),
            store_ops: 4,
            ..Scenario::default()
        };
        let [requests, ops] = play(&sc);
        let ratio = requests.peak_to_mean();
        assert!((5.5..6.6).contains(&ratio), "{ratio}");
        assert!(requests.per_second[10..].iter().all(|n| *n == 0));
        assert_eq!(ops.mean(), 4.0 * requests.mean());
    }

    #[test]
    fn a_one_second_period_has_one_second() {
        let sc = Scenario {
            clients: 7,
            period: Duration::from_secs(1),
            splay: Duration::from_secs(1),
            ..Scenario::default()
        };
        let [requests, _] = play(&sc);
        assert_eq!(requests.per_second, [7]);
        assert_eq!(requests.peak_to_mean(), 1.0);
    }
}
