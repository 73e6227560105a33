//! The command line, defined once with clap: flags, help text and value parsers. Nothing
//! here checks one flag against another; `config` does that.
//!
//! This file holds the flags of retry-http's own policy, output and logging; curl's
//! flags come in groups named for what they are about: `destination` (where the request
//! goes and where its body is saved: `--url`, `-e`, `-4`/`-6`, `--http1.1`, `-O`,
//! `--output-dir`; with `-f` and `-S`), `bodies` (`-G`, `--data-urlencode`, `-F`),
//! `network` (`--resolve`, `--unix-socket`, client certificates, netrc, `-Y`/`-y`),
//! `conditional` (conditional and resumed requests: `-C -`, the ETag flags, `-z`, `-R`,
//! and `-b`'s cookies) and `protocols` (`--proto`, the TLS versions, `-T`,
//! `--oauth2-bearer`, curl's flags accepted with no effect or refused). `curl_names` lists
//! every curl option and the line each one not implemented gets. `config_file`
//! declares `-K` and expands it and `-H @FILE` before clap parses; `values` parses flag
//! values; `usage` turns clap's errors into the tool's one line.
//! `batch` holds the flags of a run of several URLs (`-Z`, `--rate`, ...) and keeps the
//! order of the URLs and output flags. `simulate` holds the flags of the simulate
//! subcommand, a group per model.

pub mod batch;
pub mod bodies;
pub mod conditional;
pub mod config_file;
pub mod curl_names;
pub mod destination;
pub mod network;
pub mod protocols;
pub mod simulate;
pub(crate) mod usage;
pub mod values;

use crate::exit::Outcome;
use crate::policy::{Jitter, StatusSet};
pub use crate::report::{ColorChoice, LogFormat};
use clap::{Args, Parser, Subcommand};
pub use simulate::{SimFormat, SimModel, SimulateArgs};
use std::path::PathBuf;
use std::time::Duration;

/// The positional's name as clap knows it.
const TARGET: &str = "[METHOD] URL";

/// `text` (help, a man page, an error) with clap's rendering of the positional
/// (`[[METHOD] URL]...`, `<[METHOD] URL>...`), as the usage line writes it: `[METHOD]
/// <URL>...`. clap cannot say that an optional word comes before the URLs when flags may
/// stand between them.
pub fn target_shown(text: &str) -> String {
    text.replace("[[METHOD] URL]...", "[METHOD] <URL>...")
        .replace("<[METHOD] URL>...", "[METHOD] <URL>...")
}

/// Shown after `-h`: the exit codes in one line (from [`Outcome`]), and where the rest is.
fn short_after_help() -> String {
    format!(
        "Exit codes: {}; --help has all, and curl's (--exit-codes).",
        Outcome::short_list()
    )
}

/// Shown after `--help`: the exit-code table and two examples.
fn long_after_help() -> String {
    format!(
        "{}\nExamples:\n  retry-http -s -o /dev/null --attempts 30 --cap 5s --deadline 2m http://localhost:8080/healthz\n  retry-http -s -o /dev/null --deadline 10m --state /var/lib/retry-http/jobs.state --idempotency-key auto --json @job.json POST https://api.example.test/jobs",
        Outcome::table()
    )
}

/// Send an HTTP request; when the failure is transient, try again with capped exponential
/// backoff and jitter, honouring Retry-After, within an overall deadline.
#[derive(Debug, Parser)]
#[command(
    name = "retry-http",
    version,
    override_usage = "retry-http [OPTIONS] [METHOD] <URL>...\n       retry-http simulate [OPTIONS]\n       retry-http demo",
    after_help = short_after_help(),
    after_long_help = long_after_help(),
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    // As in curl, a flag given twice takes its last value.
    args_override_self = true,
    max_term_width = 100
)]
pub struct Cli {
    /// A subcommand instead of a request.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The request: an optional METHOD (GET, or POST when a body is given), then the URLs.
    #[command(flatten)]
    pub request: RequestArgs,
}

/// Subcommands. Their flags are added only when one is used or the whole definition is
/// built (help, man page, completions): a request does not build the 30 flags of
/// `simulate` (about 6% of a start-up's instructions).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Start a failing server on loopback and run the client against it, to show the log.
    Demo,
    /// Simulate a fleet of clients retrying: an outage, an overload, failures (no network).
    Simulate(Box<SimulateArgs>),
}

/// Everything about one request and how it is retried: the target, then one group of flags
/// per help heading, in the order `--help` shows them.
#[derive(Debug, Args)]
pub struct RequestArgs {
    /// The request's method, which is optional (GET, or POST when a body is given; sent as
    /// written: case matters, as in curl), then its URLs (--url gives more).
    ///
    /// With two words or more (--url's included), the first is the METHOD when it comes
    /// before every URL and is all capitals with no '.', ':' or '/' (GET a.example
    /// b.example: a GET of two URLs; localhost:8080 b.example: two URLs); one word alone is
    /// the URL. Several URLs make several transfers, in the order given, with the same
    /// options (see -Z, and -o to pair outputs with them).
    // clap shows it as `[[METHOD] URL]...`; `target_shown` rewrites that.
    #[arg(hide_short_help = true, value_name = TARGET, num_args = 1.., required_unless_present = "url")]
    pub target: Vec<String>,

    /// What is sent, and how the connection is made.
    #[command(flatten)]
    pub request: RequestFlags,

    /// curl's other body flags (-G, --data-urlencode, -F).
    #[command(flatten)]
    pub bodies: bodies::BodyFlags,

    /// -K (what reading its files and -H @FILE found is `config_file::Found`).
    #[command(flatten)]
    pub config_file: config_file::ConfigFileFlags,

    /// How failures are retried, and the time limits.
    #[command(flatten)]
    pub policy: PolicyFlags,

    /// What makes an answer ready (`--until-*`).
    #[command(flatten)]
    pub readiness: ReadinessFlags,

    /// The state shared with other runs.
    #[command(flatten)]
    pub fleet: FleetFlags,

    /// Where the response goes.
    #[command(flatten)]
    pub output: OutputFlags,

    /// How the transfers of several URLs are scheduled (and the order of the URLs and
    /// output flags).
    #[command(flatten)]
    pub batch: batch::BatchFlags,

    /// What stderr shows.
    #[command(flatten)]
    pub logging: LoggingFlags,

    /// curl's retry flags, mapped to this tool's policy.
    #[command(flatten)]
    pub curl_retry: CurlRetryFlags,

    /// How the connection is made: name overrides, Unix socket, client certificate, netrc.
    #[command(flatten)]
    pub network: network::NetworkFlags,
    /// Conditional and resumed requests, the file's time, and cookies: -C -, the ETag
    /// flags, -z, -R, -b.
    #[command(flatten)]
    pub conditional: conditional::ConditionalFlags,
    /// Where the request goes and where its body is saved: --url, -e, -4/-6, --http1.1,
    /// -O, --output-dir, --create-dirs; and -f, -S.
    #[command(flatten)]
    pub destination: destination::DestinationFlags,
    /// The schemes and TLS versions allowed, the upload, the bearer token, the progress
    /// line, and curl's flags accepted with no effect or refused.
    #[command(flatten)]
    pub protocols: protocols::ProtocolFlags,
}

impl RequestArgs {
    /// curl's flags that are refused here whatever else is given (`--http2-prior-knowledge`, `-J`, TLS
    /// below 1.2, ...): every one given, in one line. A property of the flags alone, so it
    /// is answered here, for the command line and for each `-K` line alike.
    pub fn refusals(&self) -> Result<(), String> {
        let found: Vec<String> = [self.destination.refused(), self.protocols.refused()]
            .into_iter()
            .filter_map(Result::err)
            .collect();
        if found.is_empty() {
            Ok(())
        } else {
            Err(found.join("; "))
        }
    }
}

/// The flags under "Request": method, headers, body, authentication, redirects, proxy, TLS.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Request")]
pub struct RequestFlags {
    /// The request method (curl's name).
    ///
    /// Giving a positional METHOD too is an error. A POST, PUT or PATCH without a body is
    /// sent with Content-Length: 0 and no body (curl's -X POST sends no length either;
    /// chunked framing is never used for an empty request).
    #[arg(short = 'X', long = "request", value_name = "METHOD")]
    pub method: Option<String>,

    /// Add a request header, 'Name: value' (repeatable).
    ///
    /// 'Name:' removes it, 'Name;' sends it empty; @FILE (@-: stdin) adds one per line, so secrets
    /// stay out of argv.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = values::header)]
    pub headers: Vec<values::HeaderArg>,

    /// Request body: text, @FILE or @- (stdin); repeats join with &.
    ///
    /// CR and LF are removed from a file or stdin, as curl does.
    #[arg(
        short = 'd',
        long = "data",
        alias = "data-ascii",
        value_name = "DATA",
        conflicts_with = "json"
    )]
    pub data: Vec<String>,

    /// Request body sent byte for byte: text, @FILE, or @- for stdin.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "DATA",
        conflicts_with = "json"
    )]
    pub data_binary: Vec<String>,

    /// JSON request body: text, @FILE or @-.
    ///
    /// Sets Content-Type and Accept to application/json.
    #[arg(long, value_name = "DATA")]
    pub json: Vec<String>,

    /// Basic authentication, USER:PASSWORD.
    #[arg(
        hide_short_help = true,
        short = 'u',
        long,
        value_name = "USER:PASSWORD"
    )]
    pub user: Option<String>,

    /// The User-Agent header.
    #[arg(hide_short_help = true, short = 'A', long, value_name = "NAME")]
    pub user_agent: Option<String>,

    /// Follow redirects.
    ///
    /// Each hop belongs to the attempt that started it.
    #[arg(short = 'L', long)]
    pub location: bool,

    /// The most redirects followed with -L.
    #[arg(hide_short_help = true, long, default_value = "50", value_name = "N")]
    pub max_redirs: u32,

    /// Send a HEAD request and show the response's status line and headers (with -G, the data goes in the URL).
    #[arg(hide_short_help = true, short = 'I', long, conflicts_with = "json")]
    pub head: bool,

    /// Use this proxy (http://HOST:PORT); overrides HTTPS_PROXY, http_proxy and ALL_PROXY.
    #[arg(hide_short_help = true, short = 'x', long, value_name = "URL")]
    pub proxy: Option<String>,

    /// Hosts reached without the proxy, comma-separated ('*' for all); overrides NO_PROXY.
    #[arg(hide_short_help = true, long, value_name = "LIST")]
    pub noproxy: Option<String>,

    /// Do not verify TLS certificates (says so on stderr).
    #[arg(hide_short_help = true, short = 'k', long)]
    pub insecure: bool,

    /// Trust the certificates in this PEM file, besides the system's store.
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,

    /// Ask for a compressed response (Accept-Encoding: gzip) and decompress it.
    #[arg(hide_short_help = true, long)]
    pub compressed: bool,
}

/// `--base`'s default.
pub const DEFAULT_BASE: &str = "250ms";
/// `--cap`'s default.
pub const DEFAULT_CAP: &str = "8s";
/// `--jitter`'s default.
pub const DEFAULT_JITTER: &str = "full";

/// The flags under "Policy": attempts, backoff, Retry-After, deadline, timeouts, replay.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Policy")]
pub struct PolicyFlags {
    /// Attempts, the first included [default: 6; unlimited with a --deadline].
    ///
    /// From 1 to 1000 (1 means no retry), or unlimited, which needs a --deadline. With a
    /// --deadline and no count, unlimited is the default: the deadline bounds the run (and,
    /// with --state, the retry budget and the circuit breaker).
    #[arg(long, value_name = "N", env = "RETRY_HTTP_ATTEMPTS", allow_hyphen_values = true, value_parser = values::attempts_or_unlimited)]
    pub attempts: Option<u32>,

    /// Backoff base: the first retry's ceiling (at least 1ms). Retry n's ceiling is min(cap, base * 2^n).
    #[arg(hide_short_help = true, long, value_name = "DURATION", default_value = DEFAULT_BASE, env = "RETRY_HTTP_BASE", allow_hyphen_values = true, value_parser = values::duration)]
    pub base: Duration,

    /// The largest backoff ceiling.
    #[arg(hide_short_help = true, long, value_name = "DURATION", default_value = DEFAULT_CAP, env = "RETRY_HTTP_CAP", allow_hyphen_values = true, value_parser = values::duration)]
    pub cap: Duration,

    /// full | equal | decorrelated | none | +DURATION (additive: ceiling + uniform(0, DURATION)).
    #[arg(hide_short_help = true, long, value_name = "MODE", default_value = DEFAULT_JITTER, env = "RETRY_HTTP_JITTER", allow_hyphen_values = true, hide_possible_values = true, value_parser = values::jitter_completed())]
    pub jitter: Jitter,

    /// The whole run ends by then, waits included.
    ///
    /// Counted from start-up; 0 means none.
    #[arg(long, value_name = "DURATION", env = "RETRY_HTTP_DEADLINE", allow_hyphen_values = true, value_parser = values::duration)]
    pub deadline: Option<Duration>,

    /// Before the first attempt, wait an offset in [0, DURATION) that is the same on every
    /// run of this host towards this target, so a fleet on one cron schedule is spread (0: none).
    ///
    /// The offset comes from the host name ($RETRY_HTTP_HOST_ID replaces it) and the target,
    /// counted from start-up; it comes before --state is asked. It counts inside --deadline:
    /// the splay is cut to leave the run half of the deadline, or its --timeout when shorter.
    #[arg(hide_short_help = true, long, value_name = "DURATION", env = "RETRY_HTTP_SPLAY", allow_hyphen_values = true, value_parser = values::duration)]
    pub splay: Option<Duration>,

    /// Status codes retried: codes, ranges (500-599), classes (5xx), comma-separated, from 400 to 599; replaces the default.
    #[arg(hide_short_help = true, long, value_name = "LIST", default_value = StatusSet::DEFAULT, env = "RETRY_HTTP_RETRY_ON", value_parser = values::status_set)]
    pub retry_on: StatusSet,

    /// The longest Retry-After honoured; a longer hint is clamped to it (and logged).
    #[arg(hide_short_help = true, long, value_name = "DURATION", default_value = "60s", env = "RETRY_HTTP_MAX_RETRY_AFTER", allow_hyphen_values = true, value_parser = values::duration)]
    pub max_retry_after: Duration,

    /// Random spread added after a Retry-After wait, so clients do not return together (0: off).
    ///
    /// Default 1s; 100ms between the transfers of a run of several URLs, which share one hold
    /// and --parallel-max-host.
    #[arg(hide_short_help = true, long, value_name = "DURATION", env = "RETRY_HTTP_RETRY_AFTER_SPREAD", allow_hyphen_values = true, value_parser = values::duration)]
    pub retry_after_spread: Option<Duration>,

    /// Timeout of one attempt.
    ///
    /// The whole exchange, the body included; 0 means none.
    #[arg(long, value_name = "DURATION", env = "RETRY_HTTP_TIMEOUT", allow_hyphen_values = true, value_parser = values::duration)]
    pub timeout: Option<Duration>,

    /// curl's name for --timeout, in plain seconds (fractions allowed: 2.5; at least 0.001; 0: none).
    #[arg(hide_short_help = true, short = 'm', long, value_name = "SECONDS", allow_hyphen_values = true, value_parser = values::seconds)]
    pub max_time: Option<Duration>,

    /// Timeout for opening the connection: DNS and TCP (0: none of its own).
    ///
    /// In seconds as curl takes it (5, 2.5), or a duration with a unit (500ms, 1m).
    #[arg(hide_short_help = true, long, value_name = "SECONDS", default_value = "10s", env = "RETRY_HTTP_CONNECT_TIMEOUT", allow_hyphen_values = true, value_parser = values::connect_seconds)]
    pub connect_timeout: Duration,

    /// An attempt fails, retryably, when no byte arrives, or none of the request is taken by
    /// the kernel while it is sent, for this long (0: off).
    #[arg(hide_short_help = true, long, value_name = "DURATION", default_value = "30s", env = "RETRY_HTTP_STALL_TIMEOUT", allow_hyphen_values = true, value_parser = values::duration)]
    pub stall_timeout: Duration,

    /// Seed for the random draws, so a run can be replayed (-v shows the one used).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        env = "RETRY_HTTP_SEED"
    )]
    pub seed: Option<u64>,

    /// Send this Idempotency-Key on every attempt; allows replaying POST.
    ///
    /// auto: a random UUID; with --state, one per job (method, URL, body, -u user), kept until an
    /// answer is final so that a re-run sends it again; without --state, a new one each run.
    /// new: as auto, but a key kept for the job is replaced (the job starts afresh). With a
    /// key, a 409 is retried with it, a 422 ends the run (exit 3), and so does a 400 unless
    /// --retry-on names it (then the key makes its replay safe: retried).
    #[arg(hide_short_help = true, long, value_name = "KEY|auto|new")]
    pub idempotency_key: Option<String>,

    /// Replay non-idempotent requests (POST, PATCH) after ambiguous failures, without a key.
    #[arg(hide_short_help = true, long)]
    pub retry_unsafe: bool,

    /// Print the policy and its schedule on stdout; send nothing.
    #[arg(long)]
    pub explain: bool,
}

/// The flags under "Readiness": the conditions an answer must meet for the run to end;
/// until then it is polled under the retry policy.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Readiness")]
pub struct ReadinessFlags {
    /// Ready when the status is in LIST (codes, ranges, classes as in --retry-on), even a 4xx
    /// or 5xx; any other answer is not ready yet, 404 included.
    #[arg(hide_short_help = true, long, value_name = "LIST", value_parser = values::until_status)]
    pub until_status: Vec<crate::policy::StatusSet>,

    /// Ready when the body matches REGEX (the regex crate's syntax). Repeatable: all must hold.
    ///
    /// ^ and $ match at the start and end of each line of the body (^v2$ matches "v2\n");
    /// \A and \z at the body's start and end.
    #[arg(hide_short_help = true, long, value_name = "REGEX")]
    pub until_body: Vec<String>,

    /// Ready when the JSON body has VALUE at the RFC 6901 POINTER: /status=green,
    /// /ready=true, /nodes/0/state="up". Repeatable.
    ///
    /// Split at the first =; VALUE is JSON when it reads as JSON, else a string; compared as
    /// JSON values (numbers as numbers).
    #[arg(hide_short_help = true, long, value_name = "POINTER=VALUE")]
    pub until_json: Vec<String>,

    /// Ready when the response has header NAME with a value matching REGEX. Repeatable.
    #[arg(hide_short_help = true, long, value_name = "NAME: REGEX")]
    pub until_header: Vec<String>,
}

/// The flags under "Fleet": the state file, the circuit breaker and the retry budget.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Fleet")]
pub struct FleetFlags {
    /// Share a circuit breaker, a retry budget and Retry-After per target with other runs
    /// through a file or a Redis server (STORE: a file's path, or redis://, rediss://,
    /// redis+unix://, redis+cluster://).
    ///
    /// A file: a link is followed. Only a file that retry-http wrote, or an empty one, is ever
    /// replaced: any other is left untouched (no FILE.lock either). The file keeps at most 1000
    /// targets; one over 4 MiB is not read. Redis:
    /// redis://[USER:PASSWORD@]HOST[:PORT][/DB][?prefix=P] (prefix retry-http: by default),
    /// rediss://... for TLS, redis+unix:///PATH[?db=N&prefix=P], a Redis Cluster by its seeds
    /// as redis+cluster://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...][?prefix=P] (or
    /// rediss+cluster://); the password is never printed. A store that cannot be used is reported once, then --state-on-error decides.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "STORE",
        env = "RETRY_HTTP_STATE"
    )]
    pub state: Option<PathBuf>,

    /// With --state: the most each store operation may take, connecting included, and at most
    /// half of what is left of --deadline.
    #[arg(hide_short_help = true, long, value_name = "DURATION", default_value = "250ms", env = "RETRY_HTTP_STATE_TIMEOUT", allow_hyphen_values = true, value_parser = values::duration)]
    pub state_timeout: Duration,

    /// With --state: what a store that cannot be used means: open (warn once, go on without
    /// it) or closed (send nothing, exit 7).
    #[arg(hide_short_help = true, long, value_name = "POLICY", default_value = "open", env = "RETRY_HTTP_STATE_ON_ERROR", value_parser = ["open", "closed"])]
    pub state_on_error: String,

    /// With --state rediss://: the CA certificates (PEM) the server's must chain to, instead
    /// of the system's.
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub state_cacert: Option<PathBuf>,

    /// With --state or several URLs: consecutive failed runs (exit 4, 5, 6) that open the circuit.
    #[arg(hide_short_help = true, long, value_name = "N", default_value = "5", env = "RETRY_HTTP_BREAKER_THRESHOLD", value_parser = clap::value_parser!(u32).range(1..))]
    pub breaker_threshold: u32,

    /// With --state or several URLs: how long an open circuit refuses (exit 7) before one run probes.
    #[arg(hide_short_help = true, long, value_name = "DURATION", default_value = "30s", env = "RETRY_HTTP_BREAKER_COOLDOWN", allow_hyphen_values = true, value_parser = values::duration)]
    pub breaker_cooldown: Duration,

    /// With --state or several URLs: retries allowed, as a percentage of successful requests in the window
    /// (0% and above: over 100% allows more retries than successes); a run's own retries do not
    /// count against it, only other runs' do.
    #[arg(hide_short_help = true, long, value_name = "PERCENT", default_value = "10%", env = "RETRY_HTTP_RETRY_BUDGET", allow_hyphen_values = true, value_parser = values::percent)]
    pub retry_budget: f64,

    /// With --state or several URLs: the sliding window of the retry budget (at least 1s).
    #[arg(hide_short_help = true, long, value_name = "DURATION", default_value = "10m", env = "RETRY_HTTP_BUDGET_WINDOW", allow_hyphen_values = true, value_parser = values::duration)]
    pub budget_window: Duration,

    /// With --state or several URLs: retries always allowed per window, so a quiet job can still retry
    /// (other runs' retries count against it, never a run's own).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "N",
        default_value = "3",
        env = "RETRY_HTTP_BUDGET_FLOOR"
    )]
    pub budget_floor: u32,

    /// With --state or several URLs: a target with no run for this long is forgotten, unless it still refuses
    /// runs (an open circuit in its cooldown, a probe's lease, a shared Retry-After).
    ///
    /// A duration such as 12h or 7d, from 1s to 10 years; 0 is refused (no failure could add up
    /// across runs).
    #[arg(hide_short_help = true, long, value_name = "DURATION", default_value = "24h", env = "RETRY_HTTP_STATE_TTL", allow_hyphen_values = true, value_parser = values::duration)]
    pub state_ttl: Duration,
}

/// The flags under "Output": where the body and the head go, and the limits on them.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Output")]
pub struct OutputFlags {
    /// Write the body to FILE.
    ///
    /// It is renamed into place only when complete and successful. With several URLs, each
    /// -o (and -O) goes with the next URL in order; a URL without one goes to stdout. With
    /// one URL, the last -o counts.
    #[arg(short = 'o', long, value_name = "FILE", action = clap::ArgAction::Append)]
    pub output: Vec<PathBuf>,

    /// Include the final response's status line and headers in the output, as the server sent them.
    #[arg(hide_short_help = true, short = 'i', long)]
    pub include: bool,

    /// Write the final response's status line and headers, as the server sent them, to FILE ('-': stdout, before the body, as curl).
    #[arg(hide_short_help = true, short = 'D', long, value_name = "FILE")]
    pub dump_header: Option<PathBuf>,

    /// Also write the body of a final error response.
    #[arg(hide_short_help = true, long)]
    pub fail_with_body: bool,

    /// Stream the body as it arrives; a failure after the first byte is then not retried.
    #[arg(hide_short_help = true, short = 'N', long)]
    pub no_buffer: bool,

    /// Fail (exit 6) when the body is larger than SIZE bytes (k, M, G suffixes; 0: no
    /// limit, as in curl).
    #[arg(hide_short_help = true, long, value_name = "SIZE", value_parser = values::size)]
    pub max_filesize: Option<u64>,

    /// After the run, print FORMAT on stdout (curl's -w).
    ///
    /// Variables: curl's (%{http_code}, %{time_total}, %{json}, %header{NAME}...; docs/curl.md
    /// lists them), \n for a newline; @FILE reads the format from FILE ('@-': stdin), whose line
    /// ends are dropped as curl drops them (write \n where a newline goes).
    #[arg(short = 'w', long, value_name = "FORMAT")]
    pub write_out: Option<String>,

    /// Exit as a health check: 0 for success, 1 for every failure.
    ///
    /// Docker's HEALTHCHECK reads 0 as healthy and 1 as unhealthy, and reserves 2: with
    /// this flag usage errors, the deadline and signals exit 1 too. Without it the exit
    /// codes are as listed below.
    #[arg(
        hide_short_help = true,
        long,
        env = "RETRY_HTTP_HEALTH_EXIT",
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    pub health_exit: bool,

    /// Which exit codes: retry-http's own (one per outcome, listed below) or curl's for the
    /// same endings.
    ///
    /// With curl, a script written for curl runs unchanged: an HTTP answer exits 0 without
    /// -f and 22 with it (a retried status too, once the run ends on one); when the attempts
    /// or the deadline run out, the code is curl's for the last attempt's cause (a timeout
    /// or the deadline 28, refused 7, a name not resolved 6, ...); refused by --state 7; not
    /// ready 22. The table is below. Only the exit status changes: the output is the same,
    /// -w's %{exitcode} and the JSON log keep retry-http's codes, and the summary line says
    /// both ("exit 3 (status 0, --exit-codes curl)"). --health-exit wins over both.
    #[arg(
        hide_short_help = true,
        long,
        value_enum,
        value_name = "MODE",
        default_value = "retry-http",
        env = "RETRY_HTTP_EXIT_CODES"
    )]
    pub exit_codes: crate::exit::Mode,
}

/// The flags under "Logging": how much stderr says, in which format, in colour or not.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Logging")]
pub struct LoggingFlags {
    /// Only the final error line on stderr.
    ///
    /// With -v (-sv), what -v shows stays, as in curl; -s then only hides the countdown and
    /// the progress.
    #[arg(short = 's', long)]
    pub silent: bool,

    /// Add the headers and the seed to the log.
    ///
    /// The request's and the response's headers, secrets masked.
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Format of the stderr log.
    #[arg(
        hide_short_help = true,
        long,
        value_enum,
        value_name = "FORMAT",
        default_value = "text",
        env = "RETRY_HTTP_LOG_FORMAT"
    )]
    pub log_format: LogFormat,

    /// Colour on stderr (auto: on a terminal, honouring NO_COLOR and CLICOLOR_FORCE).
    #[arg(
        hide_short_help = true,
        long,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    pub color: ColorChoice,
}

/// curl's retry flags, each mapped to the closest policy of this tool and never to a less
/// safe one (`config::curl_retry` does the mapping; docs/usage.md has the table). Under "Policy",
/// in the long help only.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Policy")]
pub struct CurlRetryFlags {
    /// curl's --retry N: N retries, so N+1 attempts here (--attempts N+1; 0 to 999).
    #[arg(hide_short_help = true, long, value_name = "N", allow_hyphen_values = true, value_parser = values::curl_retries)]
    pub retry: Option<u32>,

    /// curl's --retry-delay: each backoff wait is at least SECONDS, plus a random spread up
    /// to SECONDS (--base S --cap S --jitter +S); 0 keeps this tool's backoff.
    #[arg(hide_short_help = true, long, value_name = "SECONDS", allow_hyphen_values = true, value_parser = values::retry_delay)]
    pub retry_delay: Option<Duration>,

    /// curl's --retry-max-time: --deadline SECONDS (0: no limit). The deadline also ends an
    /// attempt under way.
    #[arg(hide_short_help = true, long, value_name = "SECONDS", allow_hyphen_values = true, value_parser = values::retry_max_time)]
    pub retry_max_time: Option<Duration>,

    /// curl's --retry-connrefused: accepted, a refused connection is retried already.
    #[arg(hide_short_help = true, long)]
    pub retry_connrefused: bool,

    /// curl's --retry-all-errors: --retry-on 4xx,5xx. A request that is not safe to replay
    /// still is not replayed (see --idempotency-key).
    #[arg(hide_short_help = true, long)]
    pub retry_all_errors: bool,

    /// What these flags became, as the notice and --explain say it (set by
    /// `config::curl_retry::fold`, not a flag).
    #[arg(skip)]
    pub mapped: Option<String>,
}

/// The command line's parser: [`Cli`]'s, where every option that takes a value takes the
/// next word as it, whatever that word begins with, as curl does: `-d -1` sends `-1`,
/// `--oauth2-bearer -x...` is a token, `--json -5` a JSON number, `-o -name` a file. Read as
/// a flag instead, such a value was refused as "a value is required ... but none was
/// supplied", or as another flag (`-A -agent` as curl's `-a`). The subcommands' options the
/// same. An option whose value may be left out (none here) keeps clap's reading.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    fn next_word_is_the_value(a: clap::Arg) -> clap::Arg {
        let takes_a_value = !a.is_positional()
            && a.get_action().takes_values()
            && a.get_num_args().is_none_or(|n| n.min_values() > 0);
        if takes_a_value {
            a.allow_hyphen_values(true)
        } else {
            a
        }
    }
    Cli::command()
        .mut_args(next_word_is_the_value)
        .mut_subcommands(|s| s.mut_args(next_word_is_the_value))
}

/// Parses the whole command line (program name first) as [`Cli::try_parse_from`] does,
/// and records the data flags' values, the URLs and the output flags in the order they
/// were given. The order is read
/// first: the matches are then moved into the fields (`from_arg_matches_mut`), not cloned
/// (`from_arg_matches` clones them all, about 3% of a start-up's instructions).
pub fn parse(args: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let mut matches = command().try_get_matches_from(args.iter().cloned())?;
    let ordered = bodies::ordered_data(&matches);
    let order = batch::ordered(&matches);
    let mut cli = Cli::from_arg_matches_mut(&mut matches)?;
    cli.request.bodies.ordered = ordered;
    cli.request.batch.order = order;
    Ok(cli)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
        command().debug_assert();
    }
}
