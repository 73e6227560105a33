//! Where the per-target records of the circuit breaker and the retry budget live: the
//! `Store` seam. A store does one thing: make an operation (`op::Op`, a value, not code) on
//! a target's record and keep what it changed, in one step with respect to every other run
//! that shares the store, with the time taken from the store's clock (the host's for a
//! file, the server's `TIME` for Redis, since hosts' clocks differ). It also forgets, as
//! `record::Target::tidy` says.
//!
//! This file knows no store in particular: `file::FileStore` keeps the records in a
//! `--state` file under a lock, `redis::RedisStore` keeps one key per target and makes each
//! operation one script on the server (so concurrent runs never conflict, however many),
//! and `location::Location` reads `--state` and opens the one it names. The `contract`
//! tests at the end of this file are written once for every store and run on each (see
//! `store_contract!`), here on the store in memory (`memory`), which a batch also uses to
//! share the breaker and the budget between its transfers when no `--state` is given.

use retry_http_policy::Millis;
use retry_http_policy::op::{Op, Reply};
use retry_http_policy::record::Target;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// A place where per-target records live, shared by runs.
pub trait Store {
    /// Makes `op` on the record of `key` as of the store's "now" (a fresh record when there
    /// is none or it was forgotten) and keeps what it changed, in one step: no other run's
    /// operation comes between the read and the write, and none waits for another's to be
    /// retried (the file store holds a lock; the Redis store runs one script). Answers what
    /// `op` answers and the store's "now".
    ///
    /// `bound` is how long the whole operation may take (waiting for a lock, connecting)
    /// before it gives up. `warn` hears about a record that was unreadable and replaced, or
    /// held times in the future and was repaired. Errors say why the store cannot be used
    /// now; nothing was changed then (or, for an answer lost on the way back, the
    /// operation was made whole or not at all).
    fn apply(
        &self,
        key: &str,
        op: &Op,
        bound: Duration,
        warn: &dyn Fn(&str),
    ) -> std::io::Result<(Reply, Millis)>;

    /// Reads the record of `key` and the store's "now" without changing anything, taking no
    /// lease and charging nothing (for `--explain`), within `bound`.
    fn peek(&self, key: &str, bound: Duration) -> std::io::Result<(Target, Millis)>;
}

/// A store's clock: its own (the host's for a file, the server's for Redis), or, in tests,
/// one they set.
#[derive(Debug, Clone, Default)]
pub struct Clock(Option<Arc<AtomicU64>>);

impl Clock {
    /// The store's own clock.
    pub fn own() -> Clock {
        Clock(None)
    }

    /// A clock that reads `at` until it is `set` again.
    #[cfg(test)]
    pub fn manual(at: Millis) -> Clock {
        Clock(Some(Arc::new(AtomicU64::new(at))))
    }

    /// Sets a manual clock (no effect on the store's own).
    #[cfg(test)]
    pub fn set(&self, at: Millis) {
        if let Some(c) = &self.0 {
            c.store(at, Ordering::SeqCst);
        }
    }

    /// The manual time, if this is a manual clock.
    pub fn manual_time(&self) -> Option<Millis> {
        self.0.as_ref().map(|c| c.load(Ordering::SeqCst))
    }

    /// The time: the manual one, or this host's.
    pub fn host_time(&self) -> Millis {
        self.manual_time().unwrap_or_else(|| {
            retry_http_policy::units::millis(
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or(Duration::ZERO),
            )
        })
    }
}

/// The behaviour every store must have, as test bodies that take a way to make the store
/// (given a fresh folder it may use, the limits and a manual clock). `store_contract!`
/// turns them into tests for one store.
#[cfg(test)]
pub mod contract {
    use super::{Clock, Store};
    use retry_http_policy::Millis;
    use retry_http_policy::breaker::{Admission, RunResult};
    use retry_http_policy::op::{Op, Reply};
    use retry_http_policy::record::{Limits, Target};
    use std::path::Path;
    use std::time::Duration;

    /// Makes the store under test in a fresh folder, with these limits and this clock.
    pub type Make = fn(&Path, &Limits, Clock) -> Box<dyn Store>;

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

    /// A store under test and the clock it reads.
    pub struct Under {
        /// The store.
        pub store: Box<dyn Store>,
        clock: Clock,
        _dir: tempfile::TempDir,
    }

    impl Under {
        /// Makes the store with `make`.
        pub fn new(make: Make, limits: &Limits) -> Under {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let clock = Clock::manual(0);
            let store = make(dir.path(), limits, clock.clone());
            Under {
                store,
                clock,
                _dir: dir,
            }
        }

        /// Makes `op` on `key`'s record at `now`.
        pub fn op(&self, now: Millis, key: &str, op: Op) -> Reply {
            self.clock.set(now);
            let (reply, at) = self
                .store
                .apply(key, &op, Duration::from_secs(2), &quiet)
                .expect("the store works");
            assert_eq!(at, now, "the store reads its clock");
            reply
        }

        fn admit(&self, key: &str, now: Millis, l: &Limits) -> Admission {
            admission(
                self.op(
                    now,
                    key,
                    Op::Admit {
                        lease: Duration::ZERO,
                        id: 1,
                        job: None,
                    },
                ),
                l,
            )
        }

        /// Records how a run ended (`probe`: the lease it took).
        fn finish(&self, key: &str, now: Millis, _: &Limits, end: (RunResult, Option<u64>)) {
            let (result, probe) = end;
            let op = Op::Record {
                result,
                probe,
                hint: None,
                retire: None,
            };
            assert_eq!(self.op(now, key, op), Reply::Recorded);
        }

        /// Takes a retry from the budget for the run numbered `run`, as a retry being sent
        /// does.
        fn take_retry(&self, key: &str, now: Millis, run: u64) -> Result<(), String> {
            match self.op(now, key, Op::Send { charge: true, run }) {
                Reply::Told { budget, .. } => budget,
                other => panic!("Send answered {other:?}"),
            }
        }

        /// The shared Retry-After at `now`, as a run asks before a retry's wait.
        fn held(&self, key: &str, now: Millis) -> Option<Duration> {
            match self.op(
                now,
                key,
                Op::Ask {
                    hint: None,
                    charge: false,
                    run: 1,
                },
            ) {
                Reply::Told { held, .. } => held,
                other => panic!("Ask answered {other:?}"),
            }
        }

        /// The record of `key` at `now`, read without a change.
        pub fn record(&self, key: &str, now: Millis) -> Target {
            self.clock.set(now);
            let (t, at) = self
                .store
                .peek(key, Duration::from_secs(2))
                .expect("the store works");
            assert_eq!(at, now, "the store reads its clock");
            t
        }
    }

    fn quiet(m: &str) {
        panic!("no warning expected, got: {m}");
    }

    /// The breaker's answer in an `Admit`'s reply.
    fn admission(reply: Reply, _: &Limits) -> Admission {
        match reply {
            Reply::Admitted { admission, .. } => admission,
            other => panic!("Admit answered {other:?}"),
        }
    }

    /// A target never seen reads as a fresh record, an operation's answer comes back with
    /// the store's time, and what it changed is kept.
    pub fn a_new_target_is_a_fresh_record(make: Make) {
        let l = limits();
        let u = Under::new(make, &l);
        assert_eq!(u.record("http://a:80", 1_000), Target::default());
        u.finish("http://a:80", 1_000, &l, (RunResult::Failure, None));
        let kept = u.record("http://a:80", 1_001);
        assert_eq!((kept.breaker.failures, kept.seen), (1, 1_000));
        assert_eq!(u.record("http://b:80", 1_001), Target::default());
    }

    /// The breaker's cycle through the store: open after the threshold, refuse, one probe,
    /// and a successful probe closes; other targets are not affected.
    pub fn the_breaker_cycle_is_kept_between_runs(make: Make) {
        let l = limits();
        let u = Under::new(make, &l);
        for i in 0..3 {
            assert_eq!(u.admit("http://a:80", i, &l), Admission::Run);
            u.finish("http://a:80", i, &l, (RunResult::Failure, None));
        }
        assert!(matches!(
            u.admit("http://a:80", 1_000, &l),
            Admission::Refuse { until: 30_002, .. }
        ));
        assert_eq!(u.admit("http://b:80", 1_000, &l), Admission::Run);
        assert_eq!(u.admit("http://a:80", 40_000, &l), Admission::Probe);
        assert!(
            matches!(u.admit("http://a:80", 40_001, &l), Admission::Refuse { .. }),
            "one probe at a time"
        );
        u.finish("http://a:80", 41_000, &l, (RunResult::Success, Some(1)));
        assert_eq!(u.admit("http://a:80", 41_001, &l), Admission::Run);
    }

    /// The retry budget is shared by the runs: its floor is spent across updates (each
    /// retry here a run's of its own, numbered by its time).
    pub fn the_budget_is_spent_across_runs(make: Make) {
        let l = limits();
        let u = Under::new(make, &l);
        let take = |now: Millis| u.take_retry("http://a:80", now, now);
        assert_eq!(take(1), Ok(()));
        assert_eq!(take(2), Ok(()));
        assert!(take(3).is_err(), "the floor of 2 is spent");
        assert_eq!(take(700_000), Ok(()), "the window slid");
    }

    /// A run's own retries do not count against it, kept across updates: a lone run
    /// retries past the floor, another run is refused once they are the floor, and the
    /// first goes on; what is kept of the runs leaves with the window.
    pub fn a_run_s_own_retries_do_not_count_against_it(make: Make) {
        let l = limits();
        let u = Under::new(make, &l);
        let take = |now: Millis, run: u64| u.take_retry("http://a:80", now, run);
        for now in 1..=10 {
            assert_eq!(take(now, 7), Ok(()), "a lone run, retry {now}");
        }
        assert!(take(20, 8).is_err(), "10 retries by another run");
        assert_eq!(take(21, 7), Ok(()), "its own");
        let kept = u.record("http://a:80", 30);
        assert_eq!(kept.budget.counts().1, 11);
        assert_eq!((kept.budget.own(7), kept.budget.others(8)), (11, 11));
        assert_eq!(take(700_000, 8), Ok(()), "the window slid");
        let kept = u.record("http://a:80", 700_001);
        assert_eq!((kept.budget.own(8), kept.budget.runs.len()), (1, 1));
    }

    /// A shared Retry-After is seen by the next run, until it passes.
    pub fn a_retry_after_is_shared_until_it_passes(make: Make) {
        let l = limits();
        let u = Under::new(make, &l);
        let hint = Some(Duration::from_secs(5));
        let share = Op::Ask {
            hint,
            charge: false,
            run: 1,
        };
        assert!(
            matches!(u.op(1_000, "http://a:80", share), Reply::Told { held, .. } if held == hint)
        );
        assert_eq!(u.held("http://a:80", 2_000), Some(Duration::from_secs(4)));
        assert_eq!(u.held("http://b:80", 2_000), None);
        assert_eq!(u.record("http://a:80", 6_000), Target::default(), "passed");
    }

    /// Sparse failures add up to an open circuit within the TTL, but not beyond it.
    pub fn sparse_failures_add_up_within_the_ttl_but_not_beyond(make: Make) {
        let l = Limits {
            threshold: 5,
            ..limits()
        };
        let run = |gap: Millis| {
            let u = Under::new(make, &l);
            for i in 0..5 {
                let now = 1_000 + i * gap;
                assert_eq!(u.admit("t", now, &l), Admission::Run);
                u.finish("t", now, &l, (RunResult::Failure, None));
            }
            u.record("t", 1_000 + 4 * gap).breaker.is_open()
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

    /// A record idle past the TTL is forgotten, unless its circuit still refuses.
    pub fn idle_records_are_forgotten_unless_they_refuse(make: Make) {
        let l = Limits {
            cooldown: Duration::from_secs(48 * 3600),
            ..limits()
        };
        let u = Under::new(make, &l);
        u.finish("http://once:80", 0, &l, (RunResult::Failure, None));
        for i in 0..3 {
            u.finish("http://open:80", i, &l, (RunResult::Failure, None));
        }
        let later = 25 * HOUR;
        assert_eq!(u.record("http://once:80", later), Target::default());
        assert!(u.record("http://open:80", later).breaker.is_open());
        assert_eq!(u.record("http://open:80", 49 * HOUR), Target::default());
    }

    /// Times that a clock a year fast wrote (an open circuit, a probe's lease) refuse nothing
    /// once the clock is right again: the store warns once, discards them and writes the
    /// record back without them, so the next run hears nothing.
    pub fn times_a_fast_clock_wrote_refuse_nothing(make: Make) {
        let year = 365 * 24 * HOUR;
        // Remembered for two years, so the circuit opened at 0 is still there a year on.
        let l = Limits {
            ttl: Duration::from_millis(2 * year),
            ..limits()
        };
        let u = Under::new(make, &l);
        for i in 0..3 {
            u.finish("http://leased:80", i, &l, (RunResult::Failure, None));
        }
        for i in 0..3 {
            u.finish("http://opened:80", year + i, &l, (RunResult::Failure, None));
        }
        let lease = Op::Admit {
            lease: Duration::from_secs(60),
            id: 7,
            job: None,
        };
        assert_eq!(
            admission(u.op(year, "http://leased:80", lease), &l),
            Admission::Probe
        );
        let now = 40_000;
        let keys = ["http://opened:80", "http://leased:80"];
        let heard = std::sync::Mutex::new(Vec::new());
        for key in keys {
            u.clock.set(now);
            let warn = |m: &str| heard.lock().expect("one thread").push(m.to_string());
            let op = Op::Admit {
                lease: Duration::ZERO,
                id: 1,
                job: None,
            };
            let (reply, _) = u
                .store
                .apply(key, &op, Duration::from_secs(2), &warn)
                .expect("the store works");
            assert_eq!(admission(reply, &l), Admission::Run, "{key}");
        }
        // A store that keeps every record in one place repairs them all at once.
        let heard = heard.into_inner().expect("one thread");
        assert_eq!(heard.len(), 2, "{heard:?}");
        for key in keys {
            let about: Vec<&String> = heard.iter().filter(|m| m.contains(key)).collect();
            assert_eq!(about.len(), 1, "{key}: {heard:?}");
            assert!(about[0].contains("in the future"), "{about:?}");
            assert_eq!(
                u.admit(key, now + 1, &l),
                Admission::Run,
                "{key}: written back"
            );
        }
    }

    /// The probe's lease and number survive the store: a probe whose lease expired and was
    /// taken by a newer probe cannot free the newer one's lease when it finishes late, and
    /// the newer probe's own end closes the circuit.
    pub fn a_late_probe_cannot_free_a_newer_probes_lease(make: Make) {
        let l = limits();
        let u = Under::new(make, &l);
        for i in 0..3 {
            u.finish("t", i, &l, (RunResult::Failure, None));
        }
        let probe = |now: Millis, lease: u64, id: u64| {
            let op = Op::Admit {
                lease: Duration::from_secs(lease),
                id,
                job: None,
            };
            admission(u.op(now, "t", op), &l)
        };
        assert_eq!(probe(30_002, 0, 1), Admission::Probe);
        assert_eq!(probe(60_002, 60, 2), Admission::Probe, "lease 1 expired");
        u.finish("t", 61_000, &l, (RunResult::Neutral, Some(1)));
        assert!(
            matches!(
                probe(61_001, 0, 3),
                Admission::Refuse { until: 120_002, .. }
            ),
            "the late probe's end left the newer lease"
        );
        u.finish("t", 62_000, &l, (RunResult::Failure, Some(1)));
        let b = u.record("t", 62_001).breaker;
        assert_eq!((b.probe_id, b.probe_until), (Some(2), Some(120_002)));
        u.finish("t", 63_000, &l, (RunResult::Success, Some(2)));
        assert_eq!(u.admit("t", 63_001, &l), Admission::Run);
        assert_eq!(u.record("t", 63_001).breaker, Default::default());
    }
}

#[cfg(test)]
pub mod job_contract {
    //! The contract's part on the jobs' keys (see `fleet::job`), apart so that the
    //! contract's file stays readable.
    use super::contract::{Make, Under, limits};
    use retry_http_policy::Millis;
    use retry_http_policy::breaker::RunResult;
    use retry_http_policy::job::{Digest, Job, Kept, MAX_JOBS, Sent};
    use retry_http_policy::op::{Op, Reply};
    use std::time::Duration;

    fn job(n: u8, fresh: u128) -> Job {
        Job {
            digest: Digest([n; 32]),
            fresh: uuid::Uuid::from_u128(fresh),
            renew: false,
        }
    }

    fn admit(u: &Under, now: Millis, j: Job) -> Kept {
        let op = Op::Admit {
            lease: Duration::ZERO,
            id: 1,
            job: Some(j),
        };
        match u.op(now, "t", op) {
            Reply::Admitted { job: Some(k), .. } => k,
            other => panic!("Admit answered {other:?}"),
        }
    }

    fn end(u: &Under, now: Millis, result: RunResult, retire: Option<(u8, &str)>) {
        let op = Op::Record {
            result,
            probe: None,
            hint: None,
            retire: retire.and_then(|(n, key)| Sent::new(Digest([n; 32]), key)),
        };
        assert_eq!(u.op(now, "t", op), Reply::Recorded);
    }

    /// A job's key is made once and kept across runs while its outcome is unknown (a run
    /// that ends without a final answer leaves it), retired by a final answer (the next
    /// run of the job gets a new key), and forgotten `--state-ttl` after it was made.
    pub fn a_jobs_key_is_kept_until_its_answer_is_final(make: Make) {
        let l = limits();
        let u = Under::new(make, &l);
        let uuid = |n: u128| uuid::Uuid::from_u128(n).to_string();
        let first = admit(&u, 1_000, job(1, 11));
        assert_eq!((first.key.clone(), first.reused), (uuid(11), false));
        end(&u, 1_500, RunResult::Failure, None);
        let again = admit(&u, 2_000, job(1, 12));
        assert_eq!(
            (again.key, again.made, again.reused),
            (uuid(11), 1_000, true)
        );
        assert_eq!(admit(&u, 2_000, job(2, 13)).key, uuid(13), "another job");
        assert_eq!(u.record("t", 2_001).jobs.len(), 2);
        end(&u, 2_500, RunResult::Success, Some((1, &uuid(99))));
        assert!(
            admit(&u, 2_600, job(1, 98)).reused,
            "another key of job 1 retired: this one stays"
        );
        end(&u, 3_000, RunResult::Success, Some((1, &uuid(11))));
        let third = admit(&u, 3_000, job(1, 14));
        assert_eq!((third.key, third.reused), (uuid(14), false), "retired");
        assert!(admit(&u, 4_000, job(2, 15)).reused, "the other job's stays");
        let day = 24 * 3600 * 1000;
        let late = admit(&u, 2_000 + day, job(2, 16));
        assert_eq!((late.key, late.reused), (uuid(16), false), "expired");
        assert_eq!(
            u.record("t", 2_001 + day).jobs.len(),
            2,
            "job 1's, made later, stays"
        );
        assert!(
            u.record("t", 3_000 + day).jobs.len() == 1,
            "then it expires too"
        );
    }

    /// A record keeps at most `MAX_JOBS` keys: the next job drops the oldest, and says
    /// when it was made.
    pub fn the_oldest_key_makes_room(make: Make) {
        let l = limits();
        let u = Under::new(make, &l);
        for n in 0..MAX_JOBS as u8 {
            let k = admit(&u, 1_000 + u64::from(n), job(n, u128::from(n)));
            assert_eq!(k.dropped, None);
        }
        let k = admit(&u, 5_000, job(200, 200));
        assert_eq!(k.dropped, Some(1_000));
        let t = u.record("t", 5_001);
        assert_eq!(t.jobs.len(), MAX_JOBS);
        assert!(!admit(&u, 5_002, job(0, 300)).reused, "job 0 was dropped");
        assert!(admit(&u, 5_003, job(63, 301)).reused);
    }
}

/// Turns the `contract` bodies into one test each for the store that `$make` (a
/// `contract::Make`) makes.
#[cfg(test)]
macro_rules! store_contract {
    ($make:expr) => {
        #[test]
        fn a_new_target_is_a_fresh_record() {
            $crate::store::contract::a_new_target_is_a_fresh_record($make);
        }

        #[test]
        fn the_breaker_cycle_is_kept_between_runs() {
            $crate::store::contract::the_breaker_cycle_is_kept_between_runs($make);
        }

        #[test]
        fn the_budget_is_spent_across_runs() {
            $crate::store::contract::the_budget_is_spent_across_runs($make);
        }

        #[test]
        fn a_run_s_own_retries_do_not_count_against_it() {
            $crate::store::contract::a_run_s_own_retries_do_not_count_against_it($make);
        }

        #[test]
        fn sparse_failures_add_up_within_the_ttl_but_not_beyond() {
            $crate::store::contract::sparse_failures_add_up_within_the_ttl_but_not_beyond($make);
        }

        #[test]
        fn idle_records_are_forgotten_unless_they_refuse() {
            $crate::store::contract::idle_records_are_forgotten_unless_they_refuse($make);
        }

        #[test]
        fn a_retry_after_is_shared_until_it_passes() {
            $crate::store::contract::a_retry_after_is_shared_until_it_passes($make);
        }

        #[test]
        fn times_a_fast_clock_wrote_refuse_nothing() {
            $crate::store::contract::times_a_fast_clock_wrote_refuse_nothing($make);
        }

        #[test]
        fn a_late_probe_cannot_free_a_newer_probes_lease() {
            $crate::store::contract::a_late_probe_cannot_free_a_newer_probes_lease($make);
        }

        #[test]
        fn a_jobs_key_is_kept_until_its_answer_is_final() {
            $crate::store::job_contract::a_jobs_key_is_kept_until_its_answer_is_final($make);
        }

        #[test]
        fn the_oldest_key_makes_room() {
            $crate::store::job_contract::the_oldest_key_makes_room($make);
        }
    };
}
#[cfg(test)]
pub(crate) use store_contract;

/// A store in memory: the records a batch keeps for its transfers without `--state` (the
/// careful client per origin in process, in the gate's local layer: see `gate::local`),
/// with the same records and
/// operations as the file and Redis stores, forgotten by the same rules (`State::prune`),
/// and at most [`memory::MAX_TARGETS`] of them. It is also the second implementation the
/// contract tests run on, and one of those the property test of the Redis store compares.
pub mod memory {
    use super::{Clock, Store};
    use retry_http_policy::Millis;
    use retry_http_policy::op::{Op, Reply};
    use retry_http_policy::record::{Limits, State, Target};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// The most targets kept: a record for a new target beyond it is not kept (its
    /// operation is answered as on a fresh record), so a batch of a million origins keeps
    /// memory bounded. Records are forgotten as the other stores forget them.
    pub const MAX_TARGETS: usize = 10_000;

    /// The records in a map behind a mutex; forgets as the file store does.
    #[derive(Debug)]
    pub struct MemoryStore {
        limits: Limits,
        clock: Clock,
        state: Mutex<State>,
    }

    impl MemoryStore {
        /// An empty store with these limits and this clock.
        pub fn new(limits: &Limits, clock: Clock) -> MemoryStore {
            MemoryStore {
                limits: *limits,
                clock,
                state: Mutex::new(State::default()),
            }
        }

        fn state(&self) -> std::io::Result<std::sync::MutexGuard<'_, State>> {
            self.state
                .lock()
                .map_err(|_| std::io::Error::other("a panic while the store was held"))
        }
    }

    impl Store for MemoryStore {
        fn apply(
            &self,
            key: &str,
            op: &Op,
            _bound: Duration,
            warn: &dyn Fn(&str),
        ) -> std::io::Result<(Reply, Millis)> {
            let now = self.clock.host_time();
            let mut state = self.state()?;
            for (target, why) in state.repair(now, &self.limits) {
                warn(&format!("{target} lies in the future ({why})"));
            }
            state.prune(now, &self.limits);
            if !state.targets.contains_key(key) && state.targets.len() >= MAX_TARGETS {
                let mut fresh = Target::default();
                return Ok((op.run(&mut fresh, now, &self.limits), now));
            }
            let record = state.targets.entry(key.to_string()).or_default();
            let was = record.clone();
            let reply = op.run(record, now, &self.limits);
            if !record.worth_writing(&was, &self.limits) {
                // Not kept, as the other stores do not write it.
                *record = was;
            }
            Ok((reply, now))
        }

        fn peek(&self, key: &str, _bound: Duration) -> std::io::Result<(Target, Millis)> {
            let now = self.clock.host_time();
            let mut state = self.state()?.clone();
            state.repair(now, &self.limits);
            state.prune(now, &self.limits);
            Ok((state.targets.remove(key).unwrap_or_default(), now))
        }
    }

    /// One memory store shared by several users, each holding it as a `Store` of its own.
    #[derive(Debug, Clone)]
    pub struct SharedMemory(pub Arc<MemoryStore>);

    impl Store for SharedMemory {
        fn apply(
            &self,
            key: &str,
            op: &Op,
            bound: Duration,
            warn: &dyn Fn(&str),
        ) -> std::io::Result<(Reply, Millis)> {
            self.0.apply(key, op, bound, warn)
        }

        fn peek(&self, key: &str, bound: Duration) -> std::io::Result<(Target, Millis)> {
            self.0.peek(key, bound)
        }
    }

    /// The store in memory, with these limits and this clock.
    #[cfg(test)]
    pub(crate) fn memory_store(
        _: &std::path::Path,
        limits: &Limits,
        clock: Clock,
    ) -> Box<dyn Store> {
        Box::new(MemoryStore::new(limits, clock))
    }

    #[cfg(test)]
    #[test]
    fn a_new_target_beyond_the_bound_is_answered_but_not_kept() {
        let limits = super::contract::limits();
        let store = MemoryStore::new(&limits, Clock::manual(1_000_000));
        {
            let mut state = store.state().unwrap();
            for i in 0..MAX_TARGETS {
                state.targets.insert(
                    format!("http://h{i}:80"),
                    Target {
                        seen: 1_000_000,
                        hold_until: Some(1_000_000 + 60_000),
                        ..Target::default()
                    },
                );
            }
        }
        // A failure is worth keeping: under the bound it would be kept.
        let op = Op::Record {
            result: retry_http_policy::breaker::RunResult::Failure,
            probe: None,
            hint: None,
            retire: None,
        };
        store
            .apply("http://new:80", &op, Duration::from_secs(1), &|_| {})
            .unwrap();
        assert_eq!(store.state().unwrap().targets.len(), MAX_TARGETS);
        assert!(!store.state().unwrap().targets.contains_key("http://new:80"));
        store.state().unwrap().targets.remove("http://h0:80");
        store
            .apply("http://new:80", &op, Duration::from_secs(1), &|_| {})
            .unwrap();
        assert!(store.state().unwrap().targets.contains_key("http://new:80"));
    }

    #[cfg(test)]
    super::store_contract!(memory_store);
}
