//! A job's Idempotency-Key kept in the shared state until the job is done, so that the
//! next run of a job whose outcome is unknown (a cron job's next tick, an operator's
//! re-run) sends the key the server may already have processed, and the server can answer
//! it as a replay instead of doing the work twice.
//!
//! A job is the method, the URL as sent (before redirects) and the body, kept only as
//! their SHA-256 digest (`Digest`, 64 hex digits): no URL, credential or body text is
//! written to the store. None of it is made up by the tool: the body is the inputs the
//! command line names, in its order, and a `-F` body's boundary is made from that body
//! (`http::body`), so that the same command line with the same inputs is the same job. Its key is drawn once at random (a UUIDv4) by the run that finds
//! none, kept in the target's record (`record::Target::jobs`) while the job's outcome is
//! unknown, and retired once a run gets a final answer, so that a later job with the same
//! request gets a new key. A key also expires `--state-ttl` after it was made, and a
//! record keeps at most `MAX_JOBS` of them (the oldest dropped first, with a warning).
//!
//! All of it is pure: `op::Op::Admit` takes or makes the key (`take`), `op::Op::Record`
//! retires it (`retire`), and every store (the file, Redis's script, the memory store)
//! runs the same rule.

use crate::Millis;
use crate::units::millis;
use serde_json::{Value, json};
use std::io::Read;
use std::time::Duration;

/// The most keys of jobs whose outcome is unknown kept per target; a new job beyond it
/// drops the oldest.
pub const MAX_JOBS: usize = 64;

/// The longest key read back from a record, in bytes.
pub const MAX_KEY_BYTES: usize = 128;

/// A job's SHA-256 digest: of the method, the URL, who sends it and the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest of the job `method` on `url` sent as `user` (the user name of Basic
    /// credentials, empty for none) with `body` (empty for none), each part framed by its
    /// length so that no two different jobs run together into the same bytes.
    pub fn of(method: &str, url: &str, user: &str, body: &mut dyn Read) -> std::io::Result<Digest> {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        for part in [method.as_bytes(), url.as_bytes(), user.as_bytes()] {
            ctx.update(&(part.len() as u64).to_be_bytes());
            ctx.update(part);
        }
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = body.read(&mut buf)?;
            if n == 0 {
                break;
            }
            ctx.update(&buf[..n]);
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.finish().as_ref());
        Ok(Digest(out))
    }

    /// The digest in lower-case hex (64 digits), as a record holds it.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// What a run brings to its admission: its job, and the key it would send were the job new
/// (drawn at random, never from `--seed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// The job's digest.
    pub digest: Digest,
    /// The key proposed for a new job.
    pub fresh: uuid::Uuid,
    /// The job starts afresh (`--idempotency-key new`): a key kept for it is replaced by
    /// the one proposed.
    pub renew: bool,
}

/// A key kept for a job whose outcome is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The job's digest, in hex.
    pub digest: String,
    /// The key sent.
    pub key: String,
    /// When it was made (ms since the epoch): what its age and its expiry count from.
    pub made: Millis,
}

/// What the admission answers about a run's job: the key to send, since when it is the
/// job's, whether an earlier run made it, and the age of a key dropped to make room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The key to send.
    pub key: String,
    /// When it was made.
    pub made: Millis,
    /// An earlier run made it: the job's outcome was unknown.
    pub reused: bool,
    /// A key of another job still pending was dropped (the oldest, `MAX_JOBS` reached): when
    /// it was made.
    pub dropped: Option<Millis>,
}

/// The job's key in `jobs` at `now`, or `job.fresh`, kept as the job's from now (get or set:
/// see the module's head); with `job.renew`, always `job.fresh`, which replaces the key kept.
pub fn take(jobs: &mut Vec<Pending>, job: &Job, now: Millis) -> Kept {
    let digest = job.digest.hex();
    if job.renew {
        jobs.retain(|p| p.digest != digest);
    }
    if let Some(p) = jobs.iter().find(|p| p.digest == digest) {
        return Kept {
            key: p.key.clone(),
            made: p.made,
            reused: true,
            dropped: None,
        };
    }
    let dropped = (jobs.len() >= MAX_JOBS).then(|| jobs.remove(0).made);
    let key = job.fresh.to_string();
    jobs.push(Pending {
        digest,
        key: key.clone(),
        made: now,
    });
    Kept {
        key,
        made: now,
        reused: false,
        dropped,
    }
}

/// A job and the key a run sent for it: what the run's final answer retires. Only that
/// key: another run of the same job may have put its own key in its place meanwhile (with
/// `--idempotency-key new`, or after the first one expired or made room), and that run's
/// outcome is still unknown. By value (at most `MAX_KEY_BYTES`), so that an operation
/// stays `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// The job's digest.
    pub digest: Digest,
    key: [u8; MAX_KEY_BYTES],
    len: u8,
}

impl Sent {
    /// The job `digest` sent with `key`; `None` when the key is longer than a record holds.
    pub fn new(digest: Digest, key: &str) -> Option<Sent> {
        let len = u8::try_from(key.len())
            .ok()
            .filter(|n| usize::from(*n) <= MAX_KEY_BYTES)?;
        let mut bytes = [0u8; MAX_KEY_BYTES];
        bytes[..key.len()].copy_from_slice(key.as_bytes());
        Some(Sent {
            digest,
            key: bytes,
            len,
        })
    }

    /// The key sent.
    pub fn key(&self) -> &str {
        std::str::from_utf8(&self.key[..usize::from(self.len)]).unwrap_or_default()
    }
}

/// Retires the key `sent` of its job: its answer was final. A key another run kept for the
/// same job since (see `Sent`) stays.
pub fn retire(jobs: &mut Vec<Pending>, sent: &Sent) {
    let digest = sent.digest.hex();
    jobs.retain(|p| p.digest != digest || p.key != sent.key());
}

/// Forgets the keys made `ttl` or longer before `now`. A key made after `now` (a clock set
/// back, another host's clock ahead, a record edited by hand) is taken as made `now`, as
/// the record's other times are: it cannot outlive the TTL from here.
pub fn expire(jobs: &mut Vec<Pending>, now: Millis, ttl: Duration) {
    for p in jobs.iter_mut() {
        p.made = p.made.min(now);
    }
    jobs.retain(|p| p.made.saturating_add(millis(ttl)) > now);
}

/// Whether `digest` is one as a record holds it: 64 lower-case hex digits.
fn valid_digest(digest: &str) -> bool {
    digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `key` is one a record may hold: 1 to `MAX_KEY_BYTES` of ASCII letters, digits
/// and `-._~` (what this tool makes, UUIDs, and what may be written by hand).
fn valid_key(key: &str) -> bool {
    (1..=MAX_KEY_BYTES).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The pending keys of a record's JSON form, `[[digest, key, made], ...]` (absent: none);
/// `None` when they do not match (see `valid_digest`, `valid_key`; at most `MAX_JOBS`).
pub fn from_json(v: Option<&Value>, max_stamp: Millis) -> Option<Vec<Pending>> {
    let Some(v) = v else {
        return Some(Vec::new());
    };
    let list = v.as_array()?;
    if list.len() > MAX_JOBS {
        return None;
    }
    list.iter()
        .map(|entry| {
            let [digest, key, made] = entry.as_array()?.as_slice() else {
                return None;
            };
            let (digest, key) = (digest.as_str()?, key.as_str()?);
            let made = made.as_u64().filter(|m| *m <= max_stamp)?;
            (valid_digest(digest) && valid_key(key)).then(|| Pending {
                digest: digest.to_string(),
                key: key.to_string(),
                made,
            })
        })
        .collect()
}

/// The pending keys as the JSON form holds them.
pub fn to_json(jobs: &[Pending]) -> Value {
    Value::Array(
        jobs.iter()
            .map(|p| json!([p.digest, p.key, p.made]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(n: u8) -> Job {
        Job {
            digest: Digest([n; 32]),
            fresh: uuid::Uuid::from_u128(u128::from(n) + 1000),
            renew: false,
        }
    }

    #[test]
    fn a_job_keeps_its_key_until_retired_then_gets_a_new_one() {
        let mut jobs = Vec::new();
        let first = take(&mut jobs, &job(1), 10);
        assert!(!first.reused && first.made == 10 && first.dropped.is_none());
        assert_eq!(first.key, job(1).fresh.to_string());
        let mut again = job(1);
        again.fresh = uuid::Uuid::from_u128(7);
        let second = take(&mut jobs, &again, 20);
        assert_eq!(
            (second.key.as_str(), second.made, second.reused),
            (first.key.as_str(), 10, true)
        );
        let other = take(&mut jobs, &job(2), 30);
        assert_ne!(other.key, first.key, "another body, another key");
        let other_key = Sent::new(job(1).digest, "another-runs-key").unwrap();
        retire(&mut jobs, &other_key);
        assert!(take(&mut jobs, &again, 35).reused, "not the key sent: kept");
        retire(&mut jobs, &Sent::new(job(1).digest, &first.key).unwrap());
        let third = take(&mut jobs, &again, 40);
        assert_eq!((third.key, third.reused), (again.fresh.to_string(), false));
        assert_eq!(jobs.len(), 2);
        let renewed = Job {
            renew: true,
            fresh: uuid::Uuid::from_u128(9),
            ..job(2)
        };
        let fourth = take(&mut jobs, &renewed, 50);
        assert_eq!(
            (fourth.key, fourth.made, fourth.reused),
            (renewed.fresh.to_string(), 50, false)
        );
        assert_eq!(
            take(&mut jobs, &job(2), 60).key,
            renewed.fresh.to_string(),
            "kept"
        );
        assert_eq!(jobs.len(), 2);
    }

    #[test]
    fn keys_expire_with_the_ttl_and_the_oldest_makes_room() {
        let mut jobs = Vec::new();
        for n in 0..MAX_JOBS as u8 {
            assert_eq!(take(&mut jobs, &job(n), u64::from(n)).dropped, None);
        }
        let k = take(&mut jobs, &job(200), 500);
        assert_eq!(k.dropped, Some(0), "the oldest dropped");
        assert_eq!(jobs.len(), MAX_JOBS);
        assert!(take(&mut jobs, &job(1), 501).reused);
        expire(&mut jobs, 1_010, Duration::from_secs(1));
        assert_eq!(jobs.len(), 54, "made at 10 or before: expired");
        expire(&mut jobs, 2_000, Duration::from_secs(1));
        assert!(jobs.is_empty());
        // A key made in the future is taken as made now: it lives one TTL from here.
        take(&mut jobs, &job(7), 1_000_000_000);
        expire(&mut jobs, 3_000, Duration::from_secs(1));
        assert_eq!(jobs[0].made, 3_000);
        expire(&mut jobs, 4_000, Duration::from_secs(1));
        assert!(jobs.is_empty(), "{jobs:?}");
    }

    #[test]
    fn the_json_form_round_trips_and_refuses_what_is_not_a_key() {
        let mut jobs = Vec::new();
        take(&mut jobs, &job(3), 77);
        let v = to_json(&jobs);
        assert_eq!(from_json(Some(&v), u64::MAX), Some(jobs.clone()));
        assert_eq!(from_json(None, 0), Some(Vec::new()));
        let hex = "ab".repeat(32);
        for bad in [
            json!({}),
            json!([[hex, "k"]]),
            json!([["AB".repeat(32), "k", 1]]),
            json!([["ab", "k", 1]]),
            json!([[hex, "", 1]]),
            json!([[hex, "a b", 1]]),
            json!([[hex, "\"", 1]]),
            json!([[hex, "k".repeat(129), 1]]),
            json!([[hex, "k", -1]]),
            json!([[hex, "k", 2]]),
        ] {
            assert_eq!(from_json(Some(&bad), 1), None, "{bad}");
        }
        let many = Value::Array(vec![json!([hex, "k", 1]); MAX_JOBS + 1]);
        assert_eq!(from_json(Some(&many), 9), None);
    }

    #[test]
    fn the_digest_frames_its_parts() {
        let d = |m: &str, u: &str, b: &[u8]| Digest::of(m, u, "", &mut &*b).unwrap();
        assert_ne!(d("POST", "http://h/a", b""), d("POS", "Thttp://h/a", b""));
        let as_user = |user: &str| Digest::of("POST", "http://h/", user, &mut &b"x"[..]).unwrap();
        assert_ne!(as_user("alice"), as_user("bob"));
        assert_ne!(as_user(""), as_user("alice"));
        assert_ne!(
            Digest::of("POST", "http://h/a", "", &mut &b""[..]).unwrap(),
            Digest::of("POST", "http://h/", "a", &mut &b""[..]).unwrap()
        );
        assert_ne!(d("POST", "http://h/", b"a"), d("POST", "http://h/a", b""));
        assert_eq!(d("POST", "http://h/", b"x"), d("POST", "http://h/", b"x"));
        let big = vec![7u8; 200_000];
        assert_ne!(d("POST", "u", &big), d("POST", "u", &big[1..]));
        assert_eq!(d("GET", "u", b"").hex().len(), 64);
    }

    #[test]
    fn a_sent_key_is_held_by_value_up_to_the_longest_a_record_holds() {
        let longest = "k".repeat(MAX_KEY_BYTES);
        assert_eq!(Sent::new(Digest([1; 32]), &longest).unwrap().key(), longest);
        assert_eq!(Sent::new(Digest([1; 32]), "k-1").unwrap().key(), "k-1");
        assert_eq!(
            Sent::new(Digest([1; 32]), &"k".repeat(MAX_KEY_BYTES + 1)),
            None
        );
    }
}
