//! The Redis store's operations: each `op::Op` is one call of the script `ops.lua`, which
//! reads the target's record, decides and writes it back on the server, in one step that
//! no other run's operation can come between. The script is named by its digest
//! (`EVALSHA`, 40 bytes) and sent whole (`EVAL`) only when the server does not have it:
//! one round trip an operation, and one more for the first run after the server lost its
//! script cache (a restart, a failover, `SCRIPT FLUSH`). A fleet's runs therefore never conflict on a hot key
//! and never retry: however many run at once, each operation is one round trip, and each
//! outcome is counted once. (The script follows `Op::run` rule for rule; the property test
//! in `tests.rs` holds them to each other.)

use super::resp::{Command, Value};
use super::{MAX_RECORD, RedisStore, other, within};
use retry_http_policy::Millis;
use retry_http_policy::breaker::{Admission, RunResult};
use retry_http_policy::budget::spent;
use retry_http_policy::job::Kept;
use retry_http_policy::op::{Op, Reply};
use retry_http_policy::record::Limits;
use retry_http_policy::units::millis;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// The script as it is sent: `ops.lua` without its comments and indentation (11 KB
/// instead of 17), and its SHA-1, by which `EVALSHA` names it.
static SCRIPT: LazyLock<(String, String)> = LazyLock::new(|| {
    let text: String = include_str!("ops.lua")
        .lines()
        .map(str::trim_start)
        .filter(|l| !l.is_empty() && !l.starts_with("--"))
        .flat_map(|l| [l, "\n"])
        .collect();
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, text.as_bytes());
    let sha = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    (text, sha)
});

/// What the script answers: the server's "now", a warning and what it read (see
/// `RedisStore::parse`), the operation's seven numbers, and the job's key with its four
/// numbers (see the head of `ops.lua`).
struct Answer {
    now: Millis,
    warning: i64,
    detail: String,
    values: [u64; 7],
    job: (String, [u64; 4]),
}

impl RedisStore {
    /// `Store::apply`: `op` on `key`'s record in one `EVAL`, within `bound`.
    pub(super) fn run_op(
        &self,
        key: &str,
        op: &Op,
        bound: Duration,
        warn: &dyn Fn(&str),
    ) -> std::io::Result<(Reply, Millis)> {
        let until = Instant::now() + bound;
        let name = self.key(key);
        let (text, sha) = &*SCRIPT;
        let answer = match self.send(
            self.command("EVALSHA", sha, &name, op),
            &name,
            until,
            "asking the store",
        ) {
            // Not in the server's cache (a restart, a failover, SCRIPT FLUSH): sent whole,
            // which caches it for every run after this one.
            Err(e) if e.to_string().contains("NOSCRIPT") => self.send(
                self.command("EVAL", text, &name, op),
                &name,
                until,
                "asking the store",
            ),
            other => other,
        }
        .map_err(|e| within(e, bound))?;
        let answer = read_answer(answer)?;
        self.tell(&name, &answer, warn);
        Ok((reply(op, &answer, &self.limits), answer.now))
    }

    /// The `EVALSHA` (`how`, with the script's digest as `script`) or `EVAL` (with its
    /// text) of `op` on the key `name`.
    fn command(&self, how: &str, script: &str, name: &str, op: &Op) -> Command {
        let l = &self.limits;
        let mut cmd = Command::new(how);
        cmd.arg(script).arg("1").arg(name);
        let (verb, args) = arguments(op);
        let now = self
            .clock
            .manual_time()
            .map_or(String::new(), |t| t.to_string());
        cmd.arg(verb).arg(now).arg(MAX_RECORD.to_string());
        cmd.arg(l.threshold.to_string())
            .arg(millis(l.cooldown).to_string())
            .arg(l.budget_pct.to_string())
            .arg(millis(l.window).to_string())
            .arg(l.floor.to_string())
            .arg(millis(l.ttl).to_string());
        for a in args {
            cmd.arg(a);
        }
        cmd
    }

    /// Says what the script found wrong with the record it replaced or repaired: the
    /// script sends back what it read, and the warning is the one a read of it gives. A
    /// value the script replaced is said to be so whatever the read makes of it: the
    /// script's word decides, so that no record is ever dropped in silence.
    fn tell(&self, name: &str, answer: &Answer, warn: &dyn Fn(&str)) {
        match answer.warning {
            0 => {}
            2 => warn(&super::not_ours(name)),
            _ => {
                self.parse(name, answer.detail.clone(), answer.now, warn);
            }
        }
    }
}

/// The script's name of `op` and its five arguments (ARGV[10..14]).
fn arguments(op: &Op) -> (&'static str, [String; 5]) {
    let hint = |h: Option<Duration>| h.map_or(String::new(), |h| millis(h).to_string());
    let flag = |b: bool| if b { "1" } else { "0" }.to_string();
    let none = String::new;
    match *op {
        Op::Admit { lease, id, job } => {
            let (digest, fresh, renew) = job.map_or((none(), none(), none()), |j| {
                (j.digest.hex(), j.fresh.to_string(), flag(j.renew))
            });
            let lease = millis(lease).to_string();
            ("admit", [lease, id.to_string(), renew, digest, fresh])
        }
        Op::Ask {
            hint: h,
            charge,
            run,
        } => (
            "ask",
            [hint(h), flag(charge), run.to_string(), none(), none()],
        ),
        Op::Send { charge, run } => (
            "send",
            [none(), flag(charge), run.to_string(), none(), none()],
        ),
        Op::Record {
            result,
            probe,
            hint: h,
            retire,
        } => {
            let result = match result {
                RunResult::Success => "success",
                RunResult::Answered => "answered",
                RunResult::Failure => "failure",
                RunResult::Neutral => "neutral",
            };
            let probe = probe.map_or(String::new(), |p| p.to_string());
            let (digest, key) =
                retire.map_or((none(), none()), |s| (s.digest.hex(), s.key().to_string()));
            let args = [hint(h), result.to_string(), probe, digest, key];
            ("record", args)
        }
    }
}

/// The script's answer, checked.
fn read_answer(v: Value) -> std::io::Result<Answer> {
    let nonsense = || other("the store's script answered nonsense".into());
    let Value::Array(items) = v else {
        return Err(nonsense());
    };
    let [now, warning, detail, rest @ ..] = items.as_slice() else {
        return Err(nonsense());
    };
    let int = |v: &Value| match v {
        Value::Int(n) => Ok(*n),
        _ => Err(nonsense()),
    };
    let mut values = [0u64; 7];
    let mut job = [0u64; 4];
    let [numbers @ .., key, a, b, c, d] = rest else {
        return Err(nonsense());
    };
    if numbers.len() != values.len() {
        return Err(nonsense());
    }
    for (slot, v) in values
        .iter_mut()
        .chain(job.iter_mut())
        .zip(numbers.iter().chain([a, b, c, d]))
    {
        *slot = u64::try_from(int(v)?).map_err(|_| nonsense())?;
    }
    Ok(Answer {
        now: u64::try_from(int(now)?).map_err(|_| nonsense())?,
        warning: int(warning)?,
        detail: super::string(detail),
        values,
        job: (super::string(key), job),
    })
}

/// A hold of `ms` milliseconds (0: none).
fn held(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// The reply to `op` that the script's numbers stand for, its messages made here as
/// `Op::run` makes them.
fn reply(op: &Op, a: &Answer, l: &Limits) -> Reply {
    let [v0, v1, v2, v3, v4, v5, v6] = a.values;
    let budget = |refused: bool, taken: u64, successes: u64| {
        if refused {
            Err(spent(taken, successes, l.budget_pct, l.window, l.floor))
        } else {
            Ok(())
        }
    };
    match op {
        Op::Admit { .. } => {
            let failures = u32::try_from(v2).unwrap_or(u32::MAX);
            let admission = match v0 {
                1 => Admission::Probe,
                2 => Admission::open(v1, failures),
                3 => Admission::probing(v1),
                _ => Admission::Run,
            };
            let (key, [made, reused, dropped, dropped_made]) = &a.job;
            Reply::Admitted {
                admission,
                held: held(v3),
                budget: budget(v4 == 1, v5, v6),
                job: (!key.is_empty()).then(|| Kept {
                    key: key.clone(),
                    made: *made,
                    reused: *reused == 1,
                    dropped: (*dropped == 1).then_some(*dropped_made),
                }),
            }
        }
        Op::Ask { .. } | Op::Send { .. } => Reply::Told {
            held: held(v0),
            budget: budget(v1 == 1, v2, v3),
            next: budget(v4 == 1, v5, v6),
        },
        Op::Record { .. } => Reply::Recorded,
    }
}
