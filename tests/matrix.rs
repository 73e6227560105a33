//! The fault matrix: the real binary against the scripted loopback server, over the product
//! of faults × methods × outputs, each run checked against invariants that must hold
//! whatever the combination. It finds bugs by itself: nobody writes the expected result of
//! a combination by hand; a small oracle (`matrix/oracle.rs`) derives it from the rules of docs/policy.md.
//!
//! The dimensions (`matrix/cases.rs`):
//! - faults: refused (a bound port that never listens), reset before the response, reset
//!   mid-body, a short Content-Length, a chunked body cut mid-chunk, a chunk size that is
//!   not hexadecimal, a stall mid-body (past `--stall-timeout`), a hang (the request read,
//!   never answered), 408/429/500/503 without Retry-After and with `Retry-After: 0` and `1`
//!   (clamped by `--max-retry-after 100ms`), the Idempotency-Key's answers (409 without
//!   Retry-After and with `1`, 422, 400), a gzip-encoded 200, a gzip body cut short, a
//!   resumable body (ETag, Accept-Ranges) cut short; each direct, after a 303 and after a
//!   307 (with `-L`; the Location is another path on the same server, or, for refused, a
//!   closed port); each followed by a 200 with a known body, or repeated forever (a refused
//!   port always repeats: a connect refused by the kernel is invisible to the server, so no
//!   success can be made to follow it deterministically); the gzip faults with and without
//!   `--compressed`;
//! - methods: GET, PUT -d, POST -d, POST -d --idempotency-key, POST -d --retry-unsafe;
//! - outputs: stdout spooled, `-N`, `-o FILE` existing (known content), `-o FILE` new,
//!   `-o /dev/null`.
//!
//! The hang, the stall and the Retry-After: 1 faults also run with a tight deadline: 800 ms,
//! no `--timeout`, `--stall-timeout 5s`, Retry-After not clamped, so the deadline is what
//! ends the run.
//!
//! Every other run gets `--attempts 6 --deadline 6s`, `--stall-timeout 500ms`, `--timeout 2s`, and all
//! get fast backoff (`--base 1ms --cap 5ms --retry-after-spread 0`, and outside the tight
//! deadline `--max-retry-after 100ms`), `-v`, secrets
//! in an `Authorization` header, in the URL's userinfo and in its `access_token` query
//! (and in the redirect's Location), its own working folder and its own `TMPDIR`.
//!
//! The invariants, checked for every combination:
//! 1. **A POST is processed at most once** (POST without a key and without
//!    `--retry-unsafe`). Some answers prove the POST was not processed: a 307/308 (the
//!    request is to be sent elsewhere, as is), 408, 429 and 503 (docs/policy.md: "the response is
//!    408, 429 or 503"); a refused connection never reaches the server. Every other answer
//!    (a 303, a 500, a 200 whose body broke, a reset, no answer at all) may follow
//!    processing. The rule: once the server recorded a POST with such an answer, it must
//!    record no further POST, whatever that later POST's answer would be (the client could
//!    not know it when it sent). So after a 303 the server sees exactly one POST (the GETs
//!    that follow are fine, and are what gets retried); after a 307 the replay to the
//!    Location is fine, and so are replays after a 503 there, but nothing after a reset or a
//!    500 there.
//! 2. **The output**: spooled stdout and `-o` hold exactly the final successful body, once,
//!    or nothing; an existing `-o` file is untouched, byte for byte, when the run fails, and
//!    a new one is absent; with `-o`, stdout is empty. Under `-N`, stdout holds a prefix of
//!    one 2xx response's body (not a splice of two), exactly the final body on success, and a
//!    run that failed after bytes reached stdout ends with exit 6.
//! 3. **No temporary file is left**, beside the `-o` target (`.NAME.*.part`) nor in TMPDIR.
//! 4. **The deadline**: the run's wall time is at most the deadline plus 1.5 s; a
//!    Retry-After that would end past the deadline stops the run at once: one attempt,
//!    stopped by the decision (not the deadline's watchdog), no wait slept. (Judged by
//!    what the run did: on a loaded machine the wall time of starting a process alone can
//!    pass the tight 800 ms deadline.)
//! 5. **No secret** given on the command line appears on stderr (with `-v`).
//! 6. **The exit code** is the one `oracle::expected_exit` derives from docs/policy.md (that
//!    function's doc comment is the reading of docs/policy.md it encodes).
//! 7. **The requests as sent**: the method (GET after a 303), the body on each POST/PUT
//!    and none on a GET, `Accept-Encoding` only with `--compressed`, no `Range` after a
//!    gzip-encoded body (docs/output.md: not resumed), the Idempotency-Key on every POST.
//!
//! Size: `RETRY_HTTP_MATRIX=full` runs the whole product (see `.ci/run`); otherwise a
//! seeded sample of 60 combinations (`RETRY_HTTP_MATRIX_SEED=N` replays one; the seed is
//! printed) plus the fixed list below. `RETRY_HTTP_MATRIX_WORKERS` sets the parallelism
//! (default 16: most of a run is waiting). `RETRY_HTTP_MATRIX_BIN=PATH` tests another binary
//! than the one cargo built (the binary is copied first, so a concurrent build cannot swap
//! it mid-run). Every violation is collected and reported at the
//! end, with the command line that reproduces it.

// The matrix reports its progress and its seed on stderr, as a test harness does.
#![allow(clippy::print_stderr)]

// The fault matrix uses only part of the scripted server.
#[allow(dead_code)]
#[path = "support/scripted.rs"]
mod scripted;

// The integration tests' helpers, for the one way to build the binary's command (an
// environment of the developer's cleared); the matrix uses only that.
#[allow(dead_code, unused_imports)]
#[path = "it/common.rs"]
mod common;

mod matrix {
    pub mod cases;
    pub mod oracle;
    pub mod runner;
}

use matrix::cases::{self, Case, Fault, Method, Mode, Out, Wrap};
use matrix::runner::{self, Report};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The combinations that always run: the named cases and one of each rule.
fn fixed() -> Vec<Case> {
    let c = |wrap, fault, forever: bool, compressed, method, out| Case {
        wrap,
        fault,
        mode: if forever {
            Mode::Forever
        } else {
            Mode::Then200
        },
        compressed,
        method,
        out,
    };
    use Fault::*;
    use Method::*;
    use Out::*;
    use Wrap::*;
    let mut v = vec![
        // A POST answered 303: the GET that follows fails; only the GET may be retried.
        c(See303, Status(503, None), false, false, Post, Stdout),
        c(See303, Status(503, Some(1)), false, false, Post, FileNew),
        c(See303, Refused, true, false, Post, Stdout),
        c(See303, Status(500, None), false, false, Post, Stdout),
        c(See303, Reset, false, false, Post, FileExisting),
        c(See303, Hang, false, false, Post, Stdout),
        c(See303, ShortLength, false, false, Post, FileNew),
        c(See303, Status(429, Some(0)), true, false, Post, Stdout),
        // A POST answered 307: replayed to the Location, then the usual rules.
        c(Temp307, Status(503, None), false, false, Post, Stdout),
        c(Temp307, Reset, false, false, Post, Stdout),
        c(Temp307, Status(500, None), false, false, Post, FileExisting),
        c(Temp307, Refused, true, false, Post, Stdout),
        c(Temp307, Reset, false, false, PostKey, FileNew),
        // The Idempotency-Key's answers: 409 retried with the key, 422 and 400 never; without
        // a key, statuses outside --retry-on.
        c(Direct, Status(409, None), false, false, PostKey, Stdout),
        c(See303, Status(409, Some(1)), true, false, PostKey, FileNew),
        c(
            Direct,
            Status(422, None),
            false,
            false,
            PostKey,
            FileExisting,
        ),
        c(Temp307, Status(400, None), false, false, PostKey, Stdout),
        c(Direct, Status(409, None), false, false, Post, Stdout),
        c(Direct, Status(409, None), false, false, Get, FileNew),
        // Direct.
        c(Direct, Reset, false, false, Post, Stdout),
        c(Direct, Status(500, None), true, false, PostUnsafe, Stdout),
        c(Direct, Status(503, Some(1)), false, false, Post, Stdout),
        c(Direct, Status(429, Some(1)), true, false, Put, FileExisting),
        c(Direct, Refused, true, false, Get, FileExisting),
        c(Direct, Hang, true, false, Get, Stdout),
        c(Direct, Stall, true, false, Get, FileExisting),
        c(Direct, Stall, false, false, Get, NoBuffer),
        // -N: a body cut after bytes were streamed is exit 6.
        c(Direct, ResetBody, false, false, Get, NoBuffer),
        c(Direct, ShortLength, false, false, Get, NoBuffer),
        c(See303, ChunkedCut, false, false, Get, NoBuffer),
        // Cut bodies, spooled and to a file.
        c(Direct, ChunkedCut, false, false, Get, Stdout),
        c(Direct, ChunkedGarbage, false, false, Get, FileNew),
        c(Direct, CutResumable, false, false, Get, FileExisting),
        c(Direct, CutResumable, false, false, Get, FileNew),
        // A download after a POST's 303 is resumed from the GET, each attempt from what it keeps.
        c(See303, CutResumable, true, false, Post, FileExisting),
        // gzip: saved as sent without --compressed, decoded with it; a cut one is retried.
        c(Direct, Gzip, false, false, Get, FileNew),
        c(Direct, Gzip, false, true, Get, Stdout),
        c(Direct, GzipCut, false, false, Get, FileExisting),
        c(Direct, GzipCut, false, true, Get, FileNew),
        c(Direct, GzipCut, false, true, Get, Stdout),
        c(Direct, GzipCut, false, true, Get, NoBuffer),
    ];
    // The deadline comes first: a hang or stall cut by it, a Retry-After that would cross it.
    let t = |wrap, fault, method, out| Case {
        wrap,
        fault,
        mode: Mode::Tight,
        compressed: false,
        method,
        out,
    };
    v.extend([
        t(Direct, Hang, Post, Stdout),
        t(Direct, Hang, Get, FileExisting),
        t(Direct, Stall, Get, NoBuffer),
        t(Direct, Stall, Put, FileNew),
        t(See303, Hang, Post, Stdout),
        t(Temp307, Stall, PostKey, Stdout),
        t(Direct, Status(503, Some(1)), Post, Stdout),
        t(Direct, Status(500, Some(1)), Post, Stdout),
        t(See303, Status(429, Some(1)), Get, DevNull),
        t(Direct, Status(409, Some(1)), PostKey, Stdout),
        t(Direct, Status(409, Some(1)), Get, Stdout),
    ]);
    v
}

/// splitmix64: a tiny seeded generator, enough to draw a sample.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The combinations of this run, and a line saying how they were chosen.
fn selection() -> (Vec<Case>, String) {
    let all = cases::all();
    if std::env::var("RETRY_HTTP_MATRIX").is_ok_and(|v| v == "full") {
        let how = format!("the full product: {} combinations", all.len());
        return (all, how);
    }
    let seed = std::env::var("RETRY_HTTP_MATRIX_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let mut chosen = fixed();
    let mut state = seed;
    let mut drawn = 0;
    while drawn < 60 {
        let c = all[(next(&mut state) % all.len() as u64) as usize];
        if !chosen.contains(&c) {
            chosen.push(c);
            drawn += 1;
        }
    }
    let how = format!(
        "{} fixed + 60 sampled of {} combinations, RETRY_HTTP_MATRIX_SEED={seed} (RETRY_HTTP_MATRIX=full runs all)",
        fixed().len(),
        all.len()
    );
    (chosen, how)
}

const INVARIANTS: [&str; 8] = [
    "",
    "a POST processed at most once",
    "the output",
    "no temporary file left",
    "the deadline",
    "no secret on stderr",
    "the exit code",
    "the requests as sent",
];

/// Runs every chosen case with `bin` on `workers` threads; the reports in the cases' order.
fn run_all(chosen: &[Case], bin: &std::path::Path, workers: usize) -> Vec<Report> {
    let index = AtomicUsize::new(0);
    let reports: Mutex<Vec<(usize, Report)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = index.fetch_add(1, Ordering::SeqCst);
                    let Some(c) = chosen.get(i) else { break };
                    let r = runner::run(c, bin);
                    reports.lock().expect("reports").push((i, r));
                }
            });
        }
    });
    let mut reports = reports.into_inner().expect("reports");
    reports.sort_by_key(|(i, _)| *i);
    reports.into_iter().map(|(_, r)| r).collect()
}

/// The failure report: a count per invariant, then each failed case with its command
/// line, its violations and the end of its log.
fn failure_text(failed: &[&Report]) -> (String, String) {
    let mut per_invariant: BTreeMap<u8, usize> = BTreeMap::new();
    let mut text = String::new();
    for r in failed {
        text.push_str(&format!(
            "\n{}\n    $ {}\n    exit {}, {:.2}s\n",
            r.case.label(),
            r.command,
            r.code.map_or("by signal".into(), |c| c.to_string()),
            r.wall.as_secs_f64()
        ));
        for v in &r.violations {
            *per_invariant.entry(v.invariant).or_default() += 1;
            text.push_str(&format!(
                "    invariant {} ({}): {}\n",
                v.invariant, INVARIANTS[v.invariant as usize], v.detail
            ));
        }
        text.push_str(&runner::tail(&r.stderr, 4));
        text.push('\n');
    }
    let summary: Vec<String> = per_invariant
        .iter()
        .map(|(i, n)| format!("invariant {i} ({}): {n}", INVARIANTS[*i as usize]))
        .collect();
    (summary.join("\n"), text)
}

#[test]
fn fault_matrix() {
    let (chosen, how) = selection();
    eprintln!("fault matrix: {how}");
    let workers = std::env::var("RETRY_HTTP_MATRIX_WORKERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16usize)
        .max(1);
    let bin_dir = tempfile::tempdir().expect("tempdir");
    let (bin, built) = runner::snapshot_binary(bin_dir.path());
    eprintln!("fault matrix: {built}");
    let started = Instant::now();
    let reports = run_all(&chosen, &bin, workers);
    let slowest = reports.iter().map(|r| r.wall).max().unwrap_or_default();
    eprintln!(
        "fault matrix: {} runs in {:.1}s with {workers} workers (slowest run {:.2}s)",
        reports.len(),
        started.elapsed().as_secs_f64(),
        slowest.as_secs_f64()
    );
    let failed: Vec<&Report> = reports
        .iter()
        .filter(|r| !r.violations.is_empty())
        .collect();
    if failed.is_empty() {
        return;
    }
    let (summary, text) = failure_text(&failed);
    panic!(
        "{} of {} combinations broke an invariant ({how})\n{summary}\n{text}",
        failed.len(),
        reports.len(),
    );
}
