//! Where the per-target records of the circuit breaker and the retry budget live: the
//! `Store` seam. A store does one thing: read a target's record, let a pure decision read
//! and change it, and write it back, atomically with respect to every other run that shares
//! the store. It also forgets, as `state` says: records idle past `--state-ttl` unless
//! their circuit is open, budget timestamps older than the window.
//!
//! `file::FileStore` keeps the records in a `--state` file. Another store (Redis, say, with
//! the read and the write made one step by a script or a compare-and-set loop) is one more
//! file implementing `Store`; the `contract` tests at the end of this file are written once
//! for every store and run on each (see `store_contract!`).

use crate::fleet::Millis;
use crate::fleet::file::FileStore;
use crate::fleet::record::{Limits, Target};
use std::path::Path;
use std::time::Duration;

/// A place where per-target records live, shared by runs.
pub trait Store {
    /// Reads the record of `key` as of `now` (a fresh one when there is none or it was
    /// forgotten), lets `change` read and edit it, and writes it back, so that no other
    /// run's update in between is lost. `change` may be called more than once (a store
    /// that retries after a conflict), each time on the record as read; only the last
    /// call's edit is kept, so it must have no other effect.
    ///
    /// `wait` is how long the store may wait for others (a lock, a connection) before it
    /// gives up. `warn` hears about a record that was unreadable and replaced. Errors say
    /// why the store cannot be used now; nothing was changed then.
    fn update(
        &self,
        key: &str,
        now: Millis,
        wait: Duration,
        warn: &dyn Fn(&str),
        change: &mut dyn FnMut(&mut Target),
    ) -> std::io::Result<()>;
}

impl dyn Store + '_ {
    /// `Store::update` with a decision that returns something: what its last call returned.
    pub fn decide<T>(
        &self,
        key: &str,
        now: Millis,
        wait: Duration,
        warn: &dyn Fn(&str),
        mut decide: impl FnMut(&mut Target) -> T,
    ) -> std::io::Result<T> {
        let mut answer = None;
        self.update(key, now, wait, warn, &mut |t| answer = Some(decide(t)))?;
        answer.ok_or_else(|| std::io::Error::other("the store made no decision"))
    }
}

/// Opens the store that `--state` names, with the `limits` it forgets by. Errors say why it
/// cannot be used (it is then left untouched).
pub fn open(path: &Path, limits: &Limits) -> Result<Box<dyn Store>, String> {
    Ok(Box::new(FileStore::open(path, limits)?))
}

/// The behaviour every store must have, as test bodies that take a way to make the store
/// (given a fresh folder it may use, and the limits). `store_contract!` turns them into
/// tests for one store.
#[cfg(test)]
pub mod contract {
    use super::Store;
    use crate::fleet::Millis;
    use crate::fleet::breaker::{Admission, RunResult};
    use crate::fleet::record::{Limits, Target};
    use std::path::Path;
    use std::time::Duration;

    /// Makes the store under test in a fresh folder, with these limits.
    pub type Make = fn(&Path, &Limits) -> Box<dyn Store>;

    const HOUR: Millis = 3600 * 1000;

    /// The limits of the tests: a threshold of 3, a 30 s cooldown, 10 % of successes in
    /// 10 minutes with a floor of 2, a day of memory.
    pub fn limits() -> Limits {
        Limits {
            threshold: 3,
            cooldown: Duration::from_secs(30),
            budget_pct: 10.0,
            window: Duration::from_secs(600),
            floor: 2,
            ttl: Duration::from_secs(24 * 3600),
        }
    }

    fn with_store(make: Make, limits: &Limits, test: impl FnOnce(&dyn Store)) {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store = make(dir.path(), limits);
        test(store.as_ref());
    }

    fn quiet(m: &str) {
        panic!("no warning expected, got: {m}");
    }

    fn admit(store: &dyn Store, key: &str, now: Millis, l: &Limits) -> Admission {
        store
            .decide(key, now, Duration::from_secs(1), &quiet, |t| {
                t.admit(now, l, Duration::ZERO)
            })
            .expect("the store works")
    }

    /// Records how a run ended (`probe`: it was the half-open circuit's probe).
    fn finish(store: &dyn Store, key: &str, now: Millis, l: &Limits, end: (RunResult, bool)) {
        let (result, probe) = end;
        store
            .decide(key, now, Duration::from_secs(1), &quiet, |t| {
                t.finish(now, result, probe, l)
            })
            .expect("the store works");
    }

    fn record(store: &dyn Store, key: &str, now: Millis) -> Target {
        store
            .decide(key, now, Duration::from_secs(1), &quiet, |t| t.clone())
            .expect("the store works")
    }

    /// A target never seen reads as a fresh record, the decision's answer comes back, and
    /// its edit is kept.
    pub fn a_new_target_is_a_fresh_record(make: Make) {
        let l = limits();
        with_store(make, &l, |store| {
            assert_eq!(record(store, "http://a:80", 1_000), Target::default());
            let answer = store.decide("http://a:80", 1_000, Duration::ZERO, &quiet, |t| {
                t.finish(1_000, RunResult::Failure, false, &l);
                42
            });
            assert_eq!(answer.expect("the store works"), 42);
            let kept = record(store, "http://a:80", 1_001);
            assert_eq!((kept.breaker.failures, kept.seen), (1, 1_000));
            assert_eq!(record(store, "http://b:80", 1_001), Target::default());
        });
    }

    /// The breaker's cycle through the store: open after the threshold, refuse, one probe,
    /// and a successful probe closes; other targets are not affected.
    pub fn the_breaker_cycle_is_kept_between_runs(make: Make) {
        let l = limits();
        with_store(make, &l, |store| {
            for i in 0..3 {
                assert_eq!(admit(store, "http://a:80", i, &l), Admission::Run);
                finish(store, "http://a:80", i, &l, (RunResult::Failure, false));
            }
            assert!(matches!(
                admit(store, "http://a:80", 1_000, &l),
                Admission::Refuse { until: 30_002, .. }
            ));
            assert_eq!(admit(store, "http://b:80", 1_000, &l), Admission::Run);
            assert_eq!(admit(store, "http://a:80", 40_000, &l), Admission::Probe);
            assert!(
                matches!(
                    admit(store, "http://a:80", 40_001, &l),
                    Admission::Refuse { .. }
                ),
                "one probe at a time"
            );
            finish(store, "http://a:80", 41_000, &l, (RunResult::Success, true));
            assert_eq!(admit(store, "http://a:80", 41_001, &l), Admission::Run);
        });
    }

    /// The retry budget is shared by the runs: its floor is spent across updates.
    pub fn the_budget_is_spent_across_runs(make: Make) {
        let l = limits();
        with_store(make, &l, |store| {
            let take = |now: Millis| {
                store
                    .decide("http://a:80", now, Duration::ZERO, &quiet, |t| {
                        t.take_retry(now, &l)
                    })
                    .expect("the store works")
            };
            assert_eq!(take(1), Ok(()));
            assert_eq!(take(2), Ok(()));
            assert!(take(3).is_err(), "the floor of 2 is spent");
            assert_eq!(take(700_000), Ok(()), "the window slid");
        });
    }

    /// Sparse failures add up to an open circuit within the TTL, but not beyond it.
    pub fn sparse_failures_add_up_within_the_ttl_but_not_beyond(make: Make) {
        let l = Limits {
            threshold: 5,
            ..limits()
        };
        let run = |gap: Millis| {
            let mut opened = false;
            with_store(make, &l, |store| {
                for i in 0..5 {
                    let now = 1_000 + i * gap;
                    assert_eq!(admit(store, "t", now, &l), Admission::Run);
                    finish(store, "t", now, &l, (RunResult::Failure, false));
                }
                opened = record(store, "t", 1_000 + 4 * gap).breaker.is_open();
            });
            opened
        };
        assert!(
            run(5 * HOUR),
            "five failures five hours apart open the circuit"
        );
        assert!(
            !run(25 * HOUR),
            "failures more than a day apart are forgotten"
        );
    }

    /// A record idle past the TTL is forgotten, unless its circuit is open.
    pub fn idle_records_are_forgotten_unless_open(make: Make) {
        let l = limits();
        with_store(make, &l, |store| {
            finish(store, "http://once:80", 0, &l, (RunResult::Failure, false));
            for i in 0..3 {
                finish(store, "http://open:80", i, &l, (RunResult::Failure, false));
            }
            let later = 25 * HOUR;
            assert_eq!(record(store, "http://once:80", later), Target::default());
            assert!(record(store, "http://open:80", later).breaker.is_open());
        });
    }
}

/// Turns the `contract` bodies into one test each for the store that `$make` (a
/// `contract::Make`) makes.
#[cfg(test)]
macro_rules! store_contract {
    ($make:expr) => {
        #[test]
        fn a_new_target_is_a_fresh_record() {
            $crate::fleet::store::contract::a_new_target_is_a_fresh_record($make);
        }

        #[test]
        fn the_breaker_cycle_is_kept_between_runs() {
            $crate::fleet::store::contract::the_breaker_cycle_is_kept_between_runs($make);
        }

        #[test]
        fn the_budget_is_spent_across_runs() {
            $crate::fleet::store::contract::the_budget_is_spent_across_runs($make);
        }

        #[test]
        fn sparse_failures_add_up_within_the_ttl_but_not_beyond() {
            $crate::fleet::store::contract::sparse_failures_add_up_within_the_ttl_but_not_beyond(
                $make,
            );
        }

        #[test]
        fn idle_records_are_forgotten_unless_open() {
            $crate::fleet::store::contract::idle_records_are_forgotten_unless_open($make);
        }
    };
}
#[cfg(test)]
pub(crate) use store_contract;

/// A store in memory, for the tests: the second implementation the contract runs on.
#[cfg(test)]
mod memory {
    use super::Store;
    use crate::fleet::Millis;
    use crate::fleet::record::{Limits, State, Target};
    use std::path::Path;
    use std::sync::Mutex;
    use std::time::Duration;

    /// The records in a map behind a mutex; forgets as the file store does.
    struct MemoryStore {
        limits: Limits,
        state: Mutex<State>,
    }

    impl Store for MemoryStore {
        fn update(
            &self,
            key: &str,
            now: Millis,
            _wait: Duration,
            _warn: &dyn Fn(&str),
            change: &mut dyn FnMut(&mut Target),
        ) -> std::io::Result<()> {
            let mut state = self
                .state
                .lock()
                .map_err(|_| std::io::Error::other("a test panicked holding the store"))?;
            state.prune(now, self.limits.window, self.limits.ttl);
            change(state.targets.entry(key.to_string()).or_default());
            Ok(())
        }
    }

    fn memory_store(_: &Path, limits: &Limits) -> Box<dyn Store> {
        Box::new(MemoryStore {
            limits: *limits,
            state: Mutex::new(State::default()),
        })
    }

    super::store_contract!(memory_store);
}
