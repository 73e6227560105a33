//! retry-http: an HTTP client for scripts, cron jobs and CI that retries transient
//! failures without making an outage worse.
//!
//! Data flows one way: `cli` (the clap definition in groups named for what they hold, the
//! flag parsers, `-K`, clap's errors) -> `config` (flags turned into a frozen configuration;
//! every cross-flag check) -> `session` (the process: the deadline watchdog, signals, the
//! summary, the exit status; it runs one request, or a batch of them: `session::batch`)
//! -> `request` (one URL's run as a value:
//! prepared from the configuration, then the attempt loop, which asks `policy::decision`
//! what to do after each attempt and only performs the verdict; delivery, `-w`,
//! `--explain`), which sends through `http` (the `carrier` trait in front of the ureq
//! transport; ureq's unversioned API in `network` and `connection` only) -> `output`
//! (stdout or `-o`, the final body only) and `report` (the one writer to stderr, built from
//! a `LogConfig`) -> `exit` (the exit-code table). `policy` is pure, a crate of its own
//! (`retry_http_policy`, named here `policy`): backoff and jitter, Retry-After, replay, the
//! Idempotency-Key's answers (409, 422, 400), readiness, the outcomes, the decision's whole
//! precedence table, and the breaker's and budget's rules. Beside the
//! request sits `gate` (the run's gate, asked before each send and told after each
//! answer: its local layer, the origins' table, the transfers' starts and a batch's own
//! breaker and budget; its shared layer, the store's side with `--state`), and `fleet` (the
//! circuit breaker, the retry budget and the jobs' kept Idempotency-Keys shared through
//! `--state`: the run's side in `admission`, the store trait and its backends in the store's
//! crate, `retry_http_store`), and beside it `simulate` (the flags and the job; the models,
//! one event engine and one strategy list on the fleet's pure breaker and budget, are the
//! simulator's crate, `retry_http_simulate`). `process` keeps how the process ends
//! (deadline watchdog, signals, freeing large files after the exit) and `within`, work
//! waited for at most a limit. `redact` is a leaf every writer masks through (a secret is
//! marked where it enters, by one `mark`; `retry_http_redact`). `files` and `units` hold the
//! file operations and unit conversions used in more than one room (`retry_http_system`,
//! `retry_http_policy`); `demo` is the `demo` subcommand; `platform` says whether the
//! Linux-only system calls or their portable paths are taken (`retry_http_system`).

pub mod cli;
pub(crate) mod config;
pub(crate) mod demo;
pub mod exit;
pub(crate) use retry_http_system::files;
pub(crate) mod fleet;
pub(crate) mod gate;
pub(crate) mod http;
pub(crate) mod output;
pub use retry_http_policy as policy;
pub(crate) use retry_http_system::platform;
pub(crate) mod process;
pub(crate) use retry_http_redact as redact;
pub(crate) mod report;
pub(crate) mod request;
pub(crate) mod session;
pub(crate) mod simulate;
pub(crate) use retry_http_policy::units;

use exit::{Exit, Outcome};
use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Instant;

/// The whole program: runs the command line of this process and returns its exit status.
/// Temporary files are removed on a panic too, and large spools are freed by a detached
/// child after the exit rather than by this process before it.
pub fn main() -> ExitCode {
    let start = Instant::now();
    if version_alone() {
        cli::usage::bound_by_deadline(&[], start);
        return ExitCode::from(exit::status(version()));
    }
    reuse_freed_memory();
    process::interrupt::clean_up_on_panic();
    let exit = run_from(std::env::args_os(), start);
    process::release::release_at_exit();
    ExitCode::from(exit::status(exit.code()))
}

/// Allocations up to 1 MiB come from the heap, not from a mapping of their own (glibc's
/// threshold starts at 128 KiB). The command line's definition holds its flags in one
/// 164 KiB array, freed once the line is parsed; mapped, it cost 41 page faults and an
/// munmap, and the connection's 128 KiB input buffer then faulted 32 fresh pages in. From
/// the heap, the buffer reuses the pages the definition touched: about 30 fewer page
/// faults for a small GET. Larger blocks (a spooled body) are still mapped and unmapped.
/// glibc's only: elsewhere (and on the portable paths, see `platform`) the allocator keeps
/// its defaults. A lone run's threads also share one arena: see [`one_arena`].
fn reuse_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if platform::linux_calls() {
        // SAFETY: mallopt only sets malloc's parameters; called before any thread starts.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        }
    }
}

/// A run of one transfer allocates from one malloc arena, its helper threads included: the
/// signal thread's first allocation would otherwise map (and trim) an arena of its own, 4
/// system calls and a page fault for a thread that allocates a few bytes (about 0.05 ms of
/// CPU per run, median of 60). A batch keeps glibc's default (an arena per thread, up to 8
/// per core): its workers allocate at once, and on one arena they queued on its lock (a
/// third of the run's CPU for 20,000 GETs under `-Z`, in futex waits and wake-ups).
/// Called before the session starts its threads; glibc's only, as above.
pub(crate) fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if platform::linux_calls() {
        // SAFETY: mallopt only sets malloc's parameters; no other thread has allocated yet
        // (glibc fixes its arena limit when a second thread first allocates).
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// A batch's allocator: on the static build, mimalloc from now on (see
/// `process::allocator`); elsewhere the system's, unchanged. Called before the session starts
/// its threads.
pub(crate) fn many_threads() {
    #[cfg(all(target_os = "linux", target_env = "musl"))]
    process::allocator::many_threads();
}

/// Whether the command line is `--version` or `-V` and nothing else.
fn version_alone() -> bool {
    let mut args = std::env::args_os().skip(1);
    matches!((args.next(), args.next()), (Some(a), None) if a == "--version" || a == "-V")
}

/// `--version` alone, answered before the command line's definition is built (building
/// its flag table is most of what a start-up costs), with the line clap writes for it.
fn version() -> u8 {
    let line = format!("{} {}\n", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"));
    match output::print_stdout(&line) {
        Ok(()) => Outcome::Success.code(),
        Err(e) => {
            let line = format!("retry-http: error: {e}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            Outcome::Local.code()
        }
    }
}

/// Parses `args` (program name first) and runs the command; `start` is when the process
/// started, from which `--deadline` counts. Returns how the run ended, which sets the exit
/// status.
pub(crate) fn run_from(args: impl IntoIterator<Item = OsString>, start: Instant) -> Exit {
    let args: Vec<OsString> = args.into_iter().collect();
    exit::health_exit_from(&args);
    // `-K FILE` and `-H @FILE` are read first: what they hold is parsed as typed flags. A
    // signal while they are read (stdin still being written) ends the run as any signal
    // does: the handler is installed before, the session takes it over.
    if cli::config_file::may_read_files(&args) {
        let words = cli::usage::interrupted_reading(&args, start);
        let _ = process::interrupt::Interrupt::install(|| {}, words);
    }
    let expanded = match cli::config_file::expand(args.clone(), start) {
        Ok(x) => x,
        Err(cli::config_file::Refusal::Usage(msg)) => {
            return Exit::of(cli::usage::usage_line(&msg, &args, start));
        }
        Err(cli::config_file::Refusal::Deadline(what)) => {
            return Exit::of(cli::usage::deadline_line(&what, &args, start));
        }
    };
    let args = expanded.args;
    exit::health_exit_from(&args);
    let mut cli = match cli::parse(&args) {
        Ok(c) => c,
        Err(e) => return Exit::of(cli::usage::clap_error(&e, &args, start)),
    };
    cli.request.batch.lists = expanded.lists;
    // curl's retry flags become the policy's own (`--retry 3` is `--attempts 4`).
    if let Err(e) = config::curl_retry::fold(&mut cli.request) {
        return Exit::of(cli::usage::usage_line(&e.0, &args, start));
    }
    match cli.command {
        Some(cli::Command::Demo) => Exit::of(demo::show(start)),
        Some(cli::Command::Simulate(args)) => Exit::of(simulate::command::simulate(&args)),
        None => {
            // What clap was given is not needed once parsed (a list of URLs given in -K
            // lines is one argument per URL).
            drop(args);
            session::run(cli.request, expanded.found, start)
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "musl"))]
#[global_allocator]
static ALLOCATOR: process::allocator::Chosen = process::allocator::Chosen;
