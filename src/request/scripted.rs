//! For unit tests: a [`Carrier`] that answers from a script instead of the network, and a
//! harness that runs the attempt loop over it with a configuration read from flags (as the
//! command line gives them), so that the loop, the delivery and the output are tested
//! without a server; and a scripted clock (`Virtual`) that the loop reads and sleeps on
//! there, so that its waits pass at once and are kept, to be checked to the microsecond.

use crate::cli::Cli;
use crate::config::Config;
use crate::exit::Outcome;
use crate::gate::Gate;
use crate::gate::between::Between;
use crate::http::body::Payload;
use crate::http::carrier::Carrier;
use crate::http::timing::Timeline;
use crate::http::transport::{Chain, Exchange, Failure, Head, Hop};
use crate::output::Output;
use crate::policy::FailureKind;
use crate::process::clock::Clock;
use crate::process::deadline::Watchdog;
use crate::process::interrupt::{Interrupt, Signal};
use crate::report::Reporter;
use crate::request::attempt::Loop;
use crate::request::ending::Ended;
use crate::request::prior;
use clap::Parser;
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// One scripted reply to a request.
#[derive(Clone)]
pub(super) enum Reply {
    /// An answer: its status, headers, and body; `cut` ends the body with a connection
    /// reset after that many bytes.
    Answer {
        status: u16,
        headers: Vec<(&'static str, &'static str)>,
        body: &'static [u8],
        cut: Option<usize>,
    },
    /// No answer: the transport fails with this kind.
    Fail(FailureKind),
}

/// An answer with `status`, `headers` and the whole of `body`.
pub(super) fn answer(
    status: u16,
    headers: &[(&'static str, &'static str)],
    body: &'static [u8],
) -> Reply {
    Reply::Answer {
        status,
        headers: headers.to_vec(),
        body,
        cut: None,
    }
}

/// The same answer, its body cut by a connection reset after `at` bytes.
pub(super) fn cut(reply: Reply, at: usize) -> Reply {
    match reply {
        Reply::Answer {
            status,
            headers,
            body,
            ..
        } => Reply::Answer {
            status,
            headers,
            body,
            cut: Some(at),
        },
        fail => fail,
    }
}

/// A body that gives its bytes, then fails as a reset connection when it is cut.
struct Scripted {
    bytes: io::Cursor<Vec<u8>>,
    cut: bool,
}

impl Read for Scripted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.bytes.read(buf)? {
            0 if self.cut => Err(io::Error::from(io::ErrorKind::ConnectionReset)),
            n => Ok(n),
        }
    }
}

/// The date a scripted clock starts at: 2026-01-01 00:00:00 UTC, a whole second, so that
/// an HTTP-date a script sends is an exact number of seconds away.
const START_DATE: Duration = Duration::from_secs(1_767_225_600);

/// The most requests a scripted run sends: past them, the loop is taken as one that never
/// ends (on the scripted clock, its waits take no time).
const RUNAWAY: usize = 10_000;

/// A scripted clock: it starts at the time it is made (and on [`START_DATE`]), and a sleep
/// passes its wait at once (unless a signal came: then nothing passes) and keeps it.
pub(super) struct Virtual {
    start: Instant,
    date: SystemTime,
    /// The time passed since `start`, and the waits slept.
    passed: Mutex<(Duration, Vec<Duration>)>,
}

impl Virtual {
    fn new() -> Virtual {
        Virtual {
            start: Instant::now(),
            date: SystemTime::UNIX_EPOCH + START_DATE,
            passed: Mutex::new((Duration::ZERO, Vec::new())),
        }
    }

    /// Lets `d` pass without a wait (an attempt's own time).
    fn pass(&self, d: Duration) {
        self.passed.lock().expect("not poisoned").0 += d;
    }

    /// The time passed since the clock was made.
    pub(super) fn passed(&self) -> Duration {
        self.passed.lock().expect("not poisoned").0
    }

    /// The waits slept, in order.
    pub(super) fn waits(&self) -> Vec<Duration> {
        self.passed.lock().expect("not poisoned").1.clone()
    }
}

impl Clock for Virtual {
    fn now(&self) -> Instant {
        self.start + self.passed()
    }

    fn date(&self) -> SystemTime {
        self.date + self.passed()
    }

    fn sleep(&self, wait: Duration, interrupt: &Interrupt) -> Option<Signal> {
        if let Some(signal) = interrupt.fired() {
            return Some(signal);
        }
        let mut passed = self.passed.lock().expect("not poisoned");
        passed.0 += wait;
        passed.1.push(wait);
        None
    }
}

/// The scripted transport: replies in order (the last one again once they run out), and
/// the requests it was sent; each send lets `takes` pass on its clock.
pub(super) struct Script {
    replies: Mutex<VecDeque<Reply>>,
    last: Reply,
    /// Every request sent, in order.
    pub(super) sent: Mutex<Vec<Hop>>,
    /// The clock of a loop run over this transport.
    pub(super) clock: Virtual,
    /// How long each send takes, on `clock`.
    takes: Duration,
}

impl Script {
    /// A transport that gives `replies` in order, each at once.
    pub(super) fn new(replies: Vec<Reply>) -> Script {
        let last = replies
            .last()
            .cloned()
            .unwrap_or(Reply::Fail(FailureKind::Refused));
        Script {
            replies: Mutex::new(replies.into()),
            last,
            sent: Mutex::new(Vec::new()),
            clock: Virtual::new(),
            takes: Duration::ZERO,
        }
    }

    fn exchange(reply: Reply) -> Result<Exchange, Failure> {
        let (status, headers, body, cut) = match reply {
            Reply::Answer {
                status,
                headers,
                body,
                cut,
            } => (status, headers, body, cut),
            Reply::Fail(kind) => return Err(Failure::new(kind, "")),
        };
        let sent = cut.map_or(body, |at| &body[..at]);
        let reader = Scripted {
            bytes: io::Cursor::new(sent.to_vec()),
            cut: cut.is_some(),
        };
        Ok(Exchange {
            head: Head::for_test(status, &headers).into(),
            body: ureq::Body::builder().reader(reader),
            wire: None,
        })
    }
}

impl Carrier for Script {
    fn send(&self, first: &Hop, _: Option<&Payload>, _: Option<Duration>, _: bool) -> Chain {
        let mut sent = self.sent.lock().expect("not poisoned");
        // A loop that no rule ends would send for ever, its waits passing at once.
        assert!(
            sent.len() < RUNAWAY,
            "{RUNAWAY} requests: the loop does not end"
        );
        sent.push(first.clone());
        drop(sent);
        self.clock.pass(self.takes);
        let next = self.replies.lock().expect("not poisoned").pop_front();
        Chain {
            result: Script::exchange(next.unwrap_or_else(|| self.last.clone())),
            last: first.clone(),
            committed: false,
            declined: None,
            unfollowed: None,
            timeline: Timeline::default(),
        }
    }

    fn decodes(&self, _: &Head) -> bool {
        false
    }
}

/// The exchange `reply` makes (it must be an answer).
pub(super) fn exchange(reply: Reply) -> Exchange {
    Script::exchange(reply).expect("an answer")
}

/// A reporter that writes nothing (as under `-s`).
pub(super) fn quiet() -> Reporter {
    use crate::report::{LogConfig, LogFormat, Verbosity};
    Reporter::new(LogConfig {
        verbosity: Verbosity::Quiet,
        live: false,
        ..LogConfig::plain(LogFormat::Text)
    })
}

/// The configuration the command line `args` (the URL included) gives.
pub(super) fn config(args: &[&str]) -> Config {
    let mut all = vec!["retry-http"];
    all.extend_from_slice(args);
    let mut cli = Cli::try_parse_from(all).expect("flags");
    crate::config::curl_retry::fold(&mut cli.request).expect("curl's flags");
    crate::config::build(&cli.request, crate::cli::config_file::Found::default())
        .expect("a configuration")
}

/// What a run over the script left: how the loop ended, the requests sent, the waits it
/// slept (in order) and how long it took, on its scripted clock.
pub(super) struct Ran {
    pub(super) ended: Ended,
    pub(super) sent: Vec<Hop>,
    pub(super) waits: Vec<Duration>,
    pub(super) took: Duration,
}

impl Ran {
    pub(super) fn outcome(&self) -> Outcome {
        self.ended.outcome
    }
}

/// Runs the attempt loop as `args` configure it, over `replies`.
pub(super) fn run(args: &[&str], replies: Vec<Reply>) -> Ran {
    run_with(args, replies, None, Duration::ZERO)
}

/// The same, with `shared` as the state shared with other runs (`--state`).
pub(super) fn run_sharing(args: &[&str], replies: Vec<Reply>, shared: Option<&dyn Between>) -> Ran {
    run_with(args, replies, shared, Duration::ZERO)
}

/// The same, each attempt taking `takes`.
pub(super) fn run_taking(args: &[&str], replies: Vec<Reply>, takes: Duration) -> Ran {
    run_with(args, replies, None, takes)
}

/// Runs the attempt loop as `args` configure it, over `replies` (each taking `takes`), with
/// `shared` as the state shared with other runs (`--state`), on a scripted clock.
fn run_with(
    args: &[&str],
    replies: Vec<Reply>,
    shared: Option<&dyn Between>,
    takes: Duration,
) -> Ran {
    let cfg = config(args);
    let output =
        Output::prepare(&cfg.output, cfg.batch.first().output.as_deref()).expect("an output");
    let reporter = quiet();
    let prior = prior::prepare(&cfg, cfg.batch.first()).expect("the conditional flags");
    let script = Script {
        takes,
        ..Script::new(replies)
    };
    let (interrupt, watchdog) = (Interrupt::none(), Watchdog::none());
    let local = crate::gate::local::Local::single();
    let records = shared.map(|s| Box::new(s) as Box<dyn Between + '_>);
    let retry = (cfg.retry.retry_after_spread, cfg.retry.max_retry_after);
    let gate = Gate::with(&local, records, None, retry);
    let run = Loop {
        cfg: &cfg,
        url: &cfg.batch.first().url,
        transport: &script,
        output: &output,
        payload: None,
        reporter: &reporter,
        interrupt: &interrupt,
        watchdog: &watchdog,
        clock: &script.clock,
        headers: cfg.request.headers.clone(),
        has_key: false,
        start: script.clock.now(),
        probe: gate.probing(),
        gate: &gate,
        prior: &prior,
    };
    let ended = run.run(&mut StdRng::seed_from_u64(cfg.retry.seed.unwrap_or(1)));
    Ran {
        ended,
        waits: script.clock.waits(),
        took: script.clock.passed(),
        sent: script.sent.into_inner().expect("not poisoned"),
    }
}
