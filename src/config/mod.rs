//! Flags turned into a validated configuration. Every check of one flag against another
//! lives here, and nothing here does I/O: files named on the command line are opened later
//! (`body`, `output`), still before anything is sent. The checks of each group of curl's
//! flags (see `cli`) are in the file of the same name: `destination` (the URL, `-e`,
//! `-4`/`-6`, `-O`), `bodies`, `network`, `conditional` (`-C -`, the ETag flags, `-z`, `-R`,
//! `-b`), `protocols` (`--proto`, the TLS versions, `-T`, `--oauth2-bearer`), `batch`
//! (the URLs of a run, in order, with the METHOD rule; their outputs; the schedule of
//! several transfers; the flags refused for several); `curl_retry`
//! maps curl's retry flags onto the policy, `readiness` checks the `--until-*` flags,
//! `request` drafts the request from the request and body flags and finishes it with the
//! protocol and destination flags' parts, `log` makes the stderr log's settings from
//! the logging flags, and `splay` names the host whose `--splay` offset the run waits. [`build`] makes each part once and assembles the [`Config`] from
//! them: nothing changes it afterwards.

mod batch;
mod bodies;
pub mod conditional;
pub mod curl_retry;
pub mod log;
pub mod network;
pub mod protocols;
mod readiness;
mod request;
pub mod splay;
mod spread;

use crate::cli::config_file::Found;
use crate::cli::values::{self, HeaderArg};
use crate::cli::{FleetFlags, PolicyFlags, RequestArgs};
use crate::policy::decision::UNLIMITED;
use crate::policy::{Backoff, StatusSet};
pub(crate) use bodies::{append_query, form_encode};
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

mod destination;
pub use destination::{Family, hostless};

/// Where one part of the request body comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodySource {
    /// Bytes given on the command line.
    Inline(Vec<u8>),
    /// A file, read once; `strip_newlines` removes CR and LF as curl's `-d @file` does.
    File { path: PathBuf, strip_newlines: bool },
    /// Standard input, read once (only when a body source names it).
    Stdin { strip_newlines: bool },
    /// `--data-urlencode [NAME]@FILE`: `prefix` (`NAME=` or nothing), then the file's bytes
    /// (stdin's when `None`) percent-encoded as a form value.
    Encoded {
        prefix: Vec<u8>,
        file: Option<PathBuf>,
    },
    /// A `-F` body's delimiter: `--` and the multipart boundary, which is known only once
    /// every part is read, since it is derived from them (see `http::body`: written as
    /// [`BOUNDARY_PLACEHOLDER`], then replaced where it stands).
    Boundary,
}

/// What a multipart body's boundary stands as until the body is read: in the `-F` body's
/// delimiters ([`BodySource::Boundary`]) and in its Content-Type header. As long as a
/// boundary (56 bytes, the shape of curl's: 24 dashes and 32 hex digits), so that the one
/// derived from the body takes its place byte for byte.
pub const BOUNDARY_PLACEHOLDER: &str = "-------------------------multipart-boundary-not-made-yet";

/// The request body: its parts, and what joins them (`&` for `-d`, nothing for `--json`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BodySpec {
    /// The parts, in command-line order.
    pub parts: Vec<BodySource>,
    /// Placed between parts.
    pub separator: Vec<u8>,
}

/// How an Idempotency-Key is chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySpec {
    /// This exact value.
    Given(String),
    /// A random UUIDv4, made once per run (never derived from `--seed`); with `--state`,
    /// the job's key kept in the state, made once per job (see `fleet::job`).
    Auto,
    /// `auto`, but a job's key kept in the state is replaced by a new one: the job starts
    /// afresh.
    New,
}

/// The retry policy, as the attempt loop needs it.
#[derive(Debug, Clone)]
pub struct RetryConfig {
    /// Total attempts, the first included (1 to 1000, or [`UNLIMITED`]).
    pub attempts: u32,
    /// What bounds the number of attempts (see [`attempts`]).
    pub bound: AttemptsBound,
    /// Backoff and jitter.
    pub backoff: Backoff,
    /// Statuses that are retried.
    pub retry_on: StatusSet,
    /// The longest Retry-After honoured.
    pub max_retry_after: Duration,
    /// Spread added after a Retry-After wait.
    pub retry_after_spread: Duration,
    /// Overall deadline, from start-up.
    pub deadline: Option<Duration>,
    /// Idempotency-Key to send, if any (from `--idempotency-key` or `-H`).
    pub idempotency_key: Option<KeySpec>,
    /// Replay non-idempotent requests after ambiguous failures.
    pub retry_unsafe: bool,
    /// Seed of the random draws, if fixed.
    pub seed: Option<u64>,
    /// What curl's retry flags became (`--retry 3 is --attempts 4`), as the notice and
    /// `--explain` say it; `None` when none was given.
    pub curl: Option<String>,
}

/// Per-attempt timeouts.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// The whole exchange of one attempt, body included (None: no limit).
    pub attempt: Option<Duration>,
    /// Opening the connection (None: no limit of its own).
    pub connect: Option<Duration>,
    /// No byte arriving for this long fails the attempt (None: off).
    pub stall: Option<Duration>,
}

/// What the transport needs to build requests.
#[derive(Debug, Clone)]
pub struct RequestConfig {
    /// The method, as given (case kept).
    pub method: String,
    /// Headers in order; includes Authorization from `-u` and Content-Type from body flags.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<BodySpec>,
    /// `-G` data from files or stdin: read with the body, then appended to each
    /// transfer's URL's query.
    pub get_data: Option<BodySpec>,
    /// Follow redirects, up to this many hops.
    pub follow: Option<u32>,
    /// Headers removed with `-H 'Name:'` (lower case), so the automatic ones are not sent.
    pub removed: Vec<String>,
    /// Skip TLS verification.
    pub insecure: bool,
    /// Extra trusted certificates (PEM).
    pub cacert: Option<PathBuf>,
    /// Send Accept-Encoding and decode.
    pub compressed: bool,
    /// `-x`: the proxy URL given on the command line.
    pub proxy: Option<String>,
    /// `--noproxy`: hosts reached directly.
    pub noproxy: Option<String>,
    /// How the connection is made (see `network`).
    pub network: network::NetworkConfig,
    /// `-4`/`-6`: the address family host names resolve to.
    pub family: Family,
    /// `--proto`/`--proto-redir` and the TLS versions (see `protocols`).
    pub protocols: protocols::Protocols,
}

/// Where the body and the final response's head go. (What the log looks like is the
/// reporter's, built straight from the logging flags.)
#[derive(Debug, Clone)]
pub struct OutputConfig {
    /// Add status line and headers.
    pub include: bool,
    /// Write the body of a final error response too.
    pub fail_with_body: bool,
    /// Stream instead of spooling.
    pub no_buffer: bool,
    /// Largest body accepted, in bytes (at least 1; `--max-filesize 0` is `None`, no limit).
    pub max_filesize: Option<u64>,
    /// `-D`: where the final response's head goes.
    pub dump_header: Option<PathBuf>,
    /// `-w`: the write-out format (an `@FILE` is read later).
    pub write_out: Option<String>,
    /// `--create-dirs`: make the missing folders of a transfer's output file when it is
    /// put in place.
    pub create_dirs: bool,
    /// A readiness condition reads the body before it is written: it is spooled even for
    /// `-o /dev/null`.
    pub inspect: bool,
    /// `--exit-codes`: which table the exit status comes from.
    pub exit_codes: crate::exit::Mode,
    /// `-f` or `--fail-with-body`: under `--exit-codes curl`, an HTTP error exits 22.
    pub fail: bool,
}

/// The whole validated configuration of a run: what all its transfers share, and the
/// list of transfers (`batch.transfers`: each one's URL and output). A run of one URL is a
/// list of one. Built once by [`build`] and never changed: a transfer is run with this and
/// its own [`Transfer`], no copy of the configuration per transfer.
#[derive(Debug, Clone)]
pub struct Config {
    /// The request.
    pub request: RequestConfig,
    /// The retry policy.
    pub retry: RetryConfig,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Output and log.
    pub output: OutputConfig,
    /// `--explain`: print the policy and send nothing.
    pub explain: bool,
    /// `--splay`: the wait before the first attempt (none: `--splay 0` or not given).
    pub splay: Option<splay::SplayConfig>,
    /// `--state`: the shared state, its limits and how its store is used.
    pub state: Option<crate::fleet::admission::StateConfig>,
    /// The breaker's and the budget's settings (`--breaker-*`, `--retry-budget`,
    /// `--budget-*`): `--state`'s, and without it those of the records a batch keeps in
    /// process (see `gate::local`).
    pub fleet: crate::fleet::record::Limits,
    /// `--until-*`: what makes an answer ready (none given: a success is).
    pub ready: crate::policy::readiness::Conditions,
    /// `-C -`, `-R`, the ETag and time conditions, and cookies.
    pub conditional: conditional::ConditionalConfig,
    /// The URLs of the run (one or many) and how a run of several is scheduled.
    pub batch: BatchConfig,
}

/// One transfer of a run: a URL and where its body goes, all that differs between the
/// transfers of a run. (`-G`'s inline data and `-T`'s file name are in the URL already.)
#[derive(Debug, Clone)]
pub struct Transfer {
    /// The URL (http or https, with a host), checked as `url` checks it, with `-G`'s
    /// inline data in its query and, for the first, `-T`'s file name appended.
    pub url: Url,
    /// Its `-o` file (paired in order, or made by `-O`, `--output-dir` applied); `None`:
    /// stdout.
    pub output: Option<PathBuf>,
}

/// `--rate N/U`: at most `count` transfers started per `per` (curl's `--rate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Transfers started per period (1 to the period's milliseconds).
    pub count: u32,
    /// The period: a number of seconds, minutes, hours or days, as curl 8.10 takes it
    /// (`5/15s`); from 1 second to 10 years.
    pub per: std::time::Duration,
}

/// The transfers of a run and how they are scheduled. A run of one URL has one transfer.
#[derive(Debug, Clone)]
pub struct BatchConfig {
    /// Every transfer, in URL order (at least one: [`build`] refuses a run without a URL).
    pub transfers: Box<[Transfer]>,
    /// `-Z`/`--parallel`: run transfers at the same time.
    pub parallel: bool,
    /// `--parallel-max N`: transfers in flight at once under `-Z` (1 to 1000; 50 default).
    pub parallel_max: usize,
    /// `--parallel-max-host N`: transfers in flight at once to one origin under `-Z` (1 to
    /// 1000; 6 default).
    pub parallel_max_host: usize,
    /// `--fail-early`: start nothing new after the first failed transfer.
    pub fail_early: bool,
    /// `--rate`: transfers started per period, at most.
    pub rate: Option<Rate>,
}

/// `--retry-after-spread`'s default: clients told one Retry-After return over a second
/// rather than in one instant.
pub const RETRY_AFTER_SPREAD: Duration = Duration::from_secs(1);
/// Its default between the transfers of a run of several URLs: they share one hold (see
/// `fleet::origins`) and `--parallel-max-host`, so a tenth of the default keeps them from
/// returning at once; the whole second cost the batch a third of its throughput against a
/// limit of 40 a second with a 1 s Retry-After (9.3-10.4 s for 300 URLs, against 7.6 s).
pub const BATCH_RETRY_AFTER_SPREAD: Duration = Duration::from_millis(100);

/// `--parallel-max`'s default, as curl's.
pub const PARALLEL_MAX: usize = 50;
/// `--parallel-max-host`'s default: six transfers in flight to one origin, as browsers
/// open at most six connections to one host (curl has no limit by default).
pub const PARALLEL_MAX_HOST: usize = 6;

impl BatchConfig {
    /// Whether the run has several transfers (or asked for `-Z`): the batch's log tags,
    /// summary and exit rule apply.
    pub fn is_batch(&self) -> bool {
        self.transfers.len() > 1 || self.parallel
    }

    /// The first transfer: a run of one URL's only one. `build` makes at least one.
    pub fn first(&self) -> &Transfer {
        &self.transfers[0]
    }
}

/// A usage error: one line saying what was wrong and what is accepted (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `--timeout` or curl's `-m`: one of them, or the flag over `$RETRY_HTTP_TIMEOUT`.
fn attempt_timeout(a: &PolicyFlags) -> Result<Option<Duration>, UsageError> {
    match (a.timeout, a.max_time) {
        (Some(_), Some(m)) if std::env::var_os("RETRY_HTTP_TIMEOUT").is_some() => Ok(Some(m)),
        (Some(_), Some(_)) => usage("--timeout and -m/--max-time say the same thing: give one"),
        (t, m) => Ok(t.or(m)),
    }
}

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Checks a header the tool is about to send. The body's framing (Content-Length,
/// Transfer-Encoding) is the tool's to set: one given by hand would disagree with the body
/// it sends, or smuggle a second framing (RFC 9112 section 6.1).
fn check_header(name: &str, value: &str) -> Result<(), UsageError> {
    if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding")
    {
        return usage(format!(
            "-H {name}: the request body's framing is set from the body itself; remove this header"
        ));
    }
    if values::unsendable(value, true).is_some() {
        return usage(format!(
            "the value of {name} contains a control character (CR, LF, ...): expected printable text"
        ));
    }
    Ok(())
}

/// Checks a URL: http or https, with a host; without a scheme it is http (see
/// [`destination::with_scheme`]).
pub fn url(typed: &str) -> Result<Url, UsageError> {
    // Errors quote the URL with any password or secret parameter masked (made only for an
    // error: a list of many URLs is checked in one go).
    let s = &Shown(typed);
    if let Some(c) = typed.chars().find(|c| c.is_control() || *c == '\u{feff}') {
        // curl refuses them too; the URL parser would drop a tab or percent-encode a NUL.
        return usage(format!(
            "invalid URL {s:?}: it holds the character U+{:04X}, which no URL holds; \
             percent-encode it, or remove it (a byte-order mark, a stray control character)",
            u32::from(c)
        ));
    }
    let full = destination::with_scheme(typed)?;
    if crate::redact::hides_userinfo(&full) {
        return usage(format!(
            "invalid URL {s:?}: a '?' or '#' comes before the '@' of a user:password; \
             percent-encode it in the password (%3F, %23), or put a '/' before a query \
             that holds an '@'"
        ));
    }
    if let Some(why) = destination::hostless(&full) {
        return usage(format!(
            "invalid URL {:?}: {why}; expected http://HOST/... or https://HOST/...",
            crate::redact::typed_text(typed)
        ));
    }
    let parsed = match Url::parse(&full) {
        Ok(u) => u,
        Err(e) => {
            return usage(format!(
                "invalid URL {s:?} ({e}): expected an http:// or https:// URL with a host"
            ));
        }
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return usage(format!(
            "unsupported URL scheme {:?} in {s:?}: only http and https are accepted",
            parsed.scheme()
        ));
    }
    if crate::redact::userinfo_in_first_segment(&parsed) {
        return usage(format!(
            "invalid URL {s:?}: a '/' or '\\' comes before the '@' of a user:password or \
             token, so its first part would be taken for the host; percent-encode it in the \
             user info (%2F, %5C), or an '@' in the path (%40)"
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return usage(format!(
            "invalid URL {s:?}: no host; expected http://HOST/..."
        ));
    }
    Ok(parsed)
}

/// A URL as typed, shown masked (`{:?}` quotes it) only when an error is written.
struct Shown<'a>(&'a str);

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", crate::redact::url_text(self.0))
    }
}

fn body_source(arg: &str, strip_newlines: bool) -> BodySource {
    match arg.strip_prefix('@') {
        Some("-") => BodySource::Stdin { strip_newlines },
        Some(path) => BodySource::File {
            path: PathBuf::from(path),
            strip_newlines,
        },
        None => BodySource::Inline(arg.as_bytes().to_vec()),
    }
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// The `--json` body (its values joined with nothing between, as curl joins them), and the
/// Content-Type and Accept it implies unless `-H` gave them.
fn json_body(values: &[String], headers: &mut Vec<(String, String)>) -> BodySpec {
    for name in ["Content-Type", "Accept"] {
        if !has_header(headers, name) {
            headers.push((name.into(), "application/json".into()));
        }
    }
    BodySpec {
        parts: values.iter().map(|s| body_source(s, false)).collect(),
        separator: Vec::new(),
    }
}

/// " (set by $RETRY_HTTP_X)" for those values that came from their variable (it is set and
/// holds the value in force), so an error caused by a CI job's environment says where.
fn env_note(values: &[(&str, Duration)]) -> String {
    let set: Vec<String> = values
        .iter()
        .map(|(f, v)| (format!("RETRY_HTTP_{f}"), *v))
        .filter(|(var, v)| {
            std::env::var(var)
                .ok()
                .and_then(|t| values::duration(&t).ok())
                == Some(*v)
        })
        .map(|(var, _)| format!("${var}"))
        .collect();
    if set.is_empty() {
        String::new()
    } else {
        format!(" (set by {})", set.join(", "))
    }
}

/// A time limit of 0 means no limit, as curl reads `--max-time 0`.
fn nonzero(d: Option<Duration>) -> Option<Duration> {
    d.filter(|d| !d.is_zero())
}

/// Turns parsed flags `a`, with what reading the `-K` and `-H @FILE` files found (`found`),
/// into a configuration, or says which flag is wrong. Each part is made once, by its own
/// step, and the configuration is assembled from them at the end: nothing changes it
/// afterwards. The checks run in a fixed order (so a command line with several faults
/// always gets the same error first): curl's flags, the URLs (each one, and the flags
/// refused for several), the policy's durations,
/// the request as its flags draft it, the key, the timeouts, the splay's host, the
/// conditional flags, `--state`, the protocol flags, the destination flags, the transfers
/// (each URL's checks and output path), and the readiness conditions.
pub fn build(a: &RequestArgs, found: Found) -> Result<Config, UsageError> {
    mark_secrets(a);
    a.refusals().map_err(UsageError)?;
    let (positional_method, typed) = batch::targets(a)?;
    let list = batch::urls(typed.iter(), typed.len())?;
    batch::several(a, list.len())?;
    check_durations(&a.policy, &a.fleet)?;
    let drafted = request::drafted(a, found, positional_method, list[0].url.clone())?;
    // -G's data may have added parameters to the URL.
    crate::redact::mark(crate::redact::Secret::Url(drafted.url.as_str()));
    let curl = a.curl_retry.mapped.clone();
    let mut retry = retry(&a.policy, given_attempts(a), curl, &drafted)?;
    let timeouts = network::timeouts(timeouts(&a.policy)?, &drafted.network);
    let splay = splay::build(a.policy.splay)?;
    let conditional = conditional::build(a, |n| has_header(&drafted.headers, n))?;
    let state = state(&a.fleet, a.policy.max_retry_after)?;
    let added = drafted.query_added.clone();
    let (request, sent) = request::finished(a, found, drafted)?;
    let batch = batch::transfers(a, sent, list, added.as_deref(), &conditional)?;
    if batch.is_batch() && a.policy.retry_after_spread.is_none() {
        retry.retry_after_spread = BATCH_RETRY_AFTER_SPREAD;
    }
    let ready = readiness::conditions(a, &request.method, &retry, &conditional)?;
    Ok(Config {
        batch,
        output: output(a, ready.needs_body()),
        request,
        retry,
        timeouts,
        explain: a.policy.explain,
        splay,
        state,
        fleet: fleet_limits(&a.fleet),
        ready,
        conditional,
    })
}

/// Marks every secret the command line (with its `-K` lines) and the environment give, before
/// anything is checked, so that no writer shows one, errors about them included (see
/// `redact::mark`): the URL's userinfo and secret parameters (as typed, even when it does
/// not parse), `-u`'s password, the values of secret headers (`-H 'Authorization: ...'`,
/// `Cookie`, `X-Api-Key`, ...) and the URLs in others (`-H 'Origin: ...'`), `-e`, `-b`'s
/// cookie values, `--oauth2-bearer`, and the passwords of proxies (`-x`, `*_proxy`) and of
/// a `--state redis://` URL.
fn mark_secrets(a: &RequestArgs) {
    use crate::redact;
    let r = &a.request;
    let with_scheme = |typed: &str| destination::with_scheme(typed).map(|u| u.into_owned());
    let words = batch::every_word(a);
    let marked = spread::each(words, batch::every_word(a).count(), |typed| {
        redact::mark(redact::Secret::Url(typed));
        // Marked again only when the scheme curl would add makes it another text: a list
        // of 100,000 URLs with their schemes is read once (the marking is most of the
        // time such a list takes to check).
        if let Ok(u) = with_scheme(typed)
            && u != *typed
        {
            redact::mark(redact::Secret::Url(&u));
        }
        Ok::<(), std::convert::Infallible>(())
    });
    drop(marked);
    for h in &r.headers {
        if let HeaderArg::Set(name, value) = h {
            redact::mark(redact::Secret::Header(name, value));
        }
    }
    if let Some((_, password)) = r.user.as_deref().and_then(|u| u.split_once(':')) {
        redact::mark(redact::Secret::Given(password));
    }
    if let Some(referer) = &a.destination.request.referer {
        redact::mark(redact::Secret::Url(referer));
    }
    // A -b value with '=' is cookies; one without names a cookie file (curl's rule), a path
    // that errors name (one that names nothing is not quoted: see request::prior).
    for cookie in a.conditional.cookie.iter().filter(|c| c.contains('=')) {
        redact::mark(redact::Secret::Header("Cookie", cookie));
    }
    if let Some(token) = &a.protocols.request.oauth2_bearer {
        redact::mark(redact::Secret::Given(token));
    }
    let env_proxies = [
        "https_proxy",
        "HTTPS_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .map(|v| std::env::var(v).ok());
    for p in env_proxies.iter().flatten().chain(&r.proxy) {
        redact::mark(redact::Secret::Url(
            &with_scheme(p).unwrap_or_else(|_| p.clone()),
        ));
    }
    // A state file's path is not a URL: only a store's URL holds a password.
    if let Some(state) = a.fleet.state.as_ref().and_then(|s| s.to_str())
        && state.contains("://")
    {
        redact::mark(redact::Secret::Url(state));
    }
}

/// The lower bounds of the backoff and state durations, and the base against the cap.
fn check_durations(p: &PolicyFlags, f: &FleetFlags) -> Result<(), UsageError> {
    if p.base < Duration::from_millis(1) {
        return usage(format!(
            "--base must be at least 1ms{}",
            env_note(&[("BASE", p.base)])
        ));
    }
    if f.state_ttl < Duration::from_secs(1) {
        return usage(format!(
            "--state-ttl must be at least 1s: a shorter one forgets every target between runs{}",
            env_note(&[("STATE_TTL", f.state_ttl)])
        ));
    }
    if f.budget_window < Duration::from_secs(1) {
        return usage(format!(
            "--budget-window must be at least 1s: a shorter one holds no successes to count retries against{}",
            env_note(&[("BUDGET_WINDOW", f.budget_window)])
        ));
    }
    if p.base > p.cap {
        return usage(format!(
            "--base ({}) is above --cap ({}): the base must not exceed the cap{}",
            crate::units::fmt_given(p.base),
            crate::units::fmt_given(p.cap),
            env_note(&[("BASE", p.base), ("CAP", p.cap)])
        ));
    }
    Ok(())
}

/// Attempts when neither a count nor a deadline is given.
pub const DEFAULT_ATTEMPTS: u32 = 6;

/// What bounds the number of attempts of a run; `--explain` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptsBound {
    /// A count was given (`--attempts`, `RETRY_HTTP_ATTEMPTS`, a `-K` line): it bounds the
    /// run, as the deadline does when one is given too.
    Given,
    /// A deadline and no count: as many attempts as the deadline, the retry budget and the
    /// circuit breaker (`--state`) allow.
    Deadline,
    /// Neither a count nor a deadline: [`DEFAULT_ATTEMPTS`].
    Default,
}

/// The attempt count the user gave, wherever it came from: `--attempts`, its environment
/// variable and `-K` lines all arrive as the flag. This is the one place another way of
/// giving a count (such as curl's `--retry N`, as N+1 attempts) joins in.
fn given_attempts(a: &RequestArgs) -> Option<u32> {
    a.policy.attempts
}

/// The number of attempts and what bounds it, from the count given (if any) and the
/// deadline (`None`: no deadline; `--deadline 0` is none): a count given wins; a deadline
/// alone makes the run as long as the deadline allows ([`UNLIMITED`]); neither gives
/// [`DEFAULT_ATTEMPTS`]. Errors: `--attempts unlimited` without a deadline.
pub fn attempts(
    given: Option<u32>,
    deadline: Option<Duration>,
) -> Result<(u32, AttemptsBound), UsageError> {
    match (given, deadline) {
        (Some(UNLIMITED), None) => {
            usage("--attempts unlimited needs a --deadline: without one, nothing would end the run")
        }
        (Some(n), _) => Ok((n, AttemptsBound::Given)),
        (None, Some(_)) => Ok((UNLIMITED, AttemptsBound::Deadline)),
        (None, None) => Ok((DEFAULT_ATTEMPTS, AttemptsBound::Default)),
    }
}

/// The retry policy; the Idempotency-Key comes from `--idempotency-key` or from `-H` (in
/// the drafted request's headers); `curl` is what curl's retry flags became, in words.
fn retry(
    p: &PolicyFlags,
    given: Option<u32>,
    curl: Option<String>,
    request: &request::Drafted,
) -> Result<RetryConfig, UsageError> {
    let idempotency_key = idempotency_key(
        p.idempotency_key.as_deref(),
        &request.headers,
        &request.removed,
    )?;
    let deadline = nonzero(p.deadline);
    let (attempts, bound) = attempts(given, deadline)?;
    Ok(RetryConfig {
        attempts,
        bound,
        backoff: Backoff {
            base: p.base,
            cap: p.cap,
            jitter: p.jitter,
        },
        retry_on: p.retry_on.clone(),
        max_retry_after: p.max_retry_after,
        retry_after_spread: p.retry_after_spread.unwrap_or(RETRY_AFTER_SPREAD),
        deadline,
        idempotency_key,
        retry_unsafe: p.retry_unsafe,
        seed: p.seed,
        curl,
    })
}

/// The key `--idempotency-key` gives (checked), or a non-blank one sent with `-H`. Giving
/// both, or giving one and removing the header, is an error.
fn idempotency_key(
    given: Option<&str>,
    headers: &[(String, String)],
    removed: &[String],
) -> Result<Option<KeySpec>, UsageError> {
    let keys = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"))
        .count();
    if keys > 1 {
        // Which one the server sees is a matter of header handling; which one allows replay
        // must not be (an empty one after a real one allows none).
        return usage("Idempotency-Key is given twice with -H: give one");
    }
    let key = match given {
        Some(k) if k.trim().is_empty() => {
            return usage("--idempotency-key is empty: expected a key, or auto");
        }
        Some(k) if values::unsendable(k, false).is_some() => {
            return usage(
                "--idempotency-key contains a control character: expected printable text",
            );
        }
        Some("auto") => Some(KeySpec::Auto),
        Some("new") => Some(KeySpec::New),
        Some(k) => Some(KeySpec::Given(k.to_string())),
        // A key that is empty or only white space of any kind (NBSP, U+2028 included: -H
        // keeps those as a value) identifies nothing: it is sent as given but does not
        // allow replay.
        None => headers
            .iter()
            .find(|(n, v)| n.eq_ignore_ascii_case("idempotency-key") && !v.trim().is_empty())
            .map(|(_, v)| KeySpec::Given(v.clone())),
    };
    if given.is_some() && removed.iter().any(|n| n == "idempotency-key") {
        return usage(
            "--idempotency-key gives a key and -H 'Idempotency-Key:' removes it: give one",
        );
    }
    if given.is_some() && has_header(headers, "idempotency-key") {
        return usage("Idempotency-Key is given twice (--idempotency-key and -H): give one");
    }
    Ok(key)
}

/// The per-attempt timeouts; 0 means none.
fn timeouts(p: &PolicyFlags) -> Result<Timeouts, UsageError> {
    Ok(Timeouts {
        attempt: nonzero(attempt_timeout(p)?),
        connect: nonzero(Some(p.connect_timeout)),
        stall: nonzero(Some(p.stall_timeout)),
    })
}

/// How the body and head are written (each transfer's output file is its own: see
/// `batch::outputs`); `inspect` whether a readiness condition reads the body first; `-I`
/// implies `-i`.
fn output(a: &RequestArgs, inspect: bool) -> OutputConfig {
    let o = &a.output;
    OutputConfig {
        include: o.include || a.request.head,
        fail_with_body: o.fail_with_body,
        no_buffer: o.no_buffer,
        // 0 is curl's "no limit" (libcurl checks the size only when the limit is set).
        max_filesize: o.max_filesize.filter(|&n| n > 0),
        dump_header: o.dump_header.clone(),
        write_out: o.write_out.clone(),
        create_dirs: a.destination.output.create_dirs,
        inspect,
        exit_codes: o.exit_codes,
        fail: a.destination.output.fail || o.fail_with_body,
    }
}

/// `--state` and everything that goes with it. A value that names a store of an unknown
/// kind, or a Redis URL that is not valid, is a usage error that never quotes a password.
fn state(
    f: &FleetFlags,
    max_hold: Duration,
) -> Result<Option<crate::fleet::admission::StateConfig>, UsageError> {
    use crate::fleet::admission::{OnError, StateConfig};
    use crate::fleet::location::Location;
    let Some(value) = &f.state else {
        if f.state_cacert.is_some() {
            return usage("--state-cacert needs --state rediss://...");
        }
        return Ok(None);
    };
    // A value from the environment is named as such (the command line may not show it).
    let from_env = std::env::var_os("RETRY_HTTP_STATE").is_some_and(|v| v == *value.as_os_str());
    let by_env = |why: String| {
        if from_env {
            UsageError(format!("{why} (set by $RETRY_HTTP_STATE)"))
        } else {
            UsageError(why)
        }
    };
    let location = Location::from_path(value).map_err(by_env)?;
    if f.state_cacert.is_some() && !location.uses_tls() {
        return usage("--state-cacert is for a rediss:// store (Redis over TLS)");
    }
    if f.state_timeout.is_zero() {
        return usage(format!(
            "--state-timeout must be more than 0 (such as 250ms): no store answers in no time{}",
            env_note(&[("STATE_TIMEOUT", f.state_timeout)])
        ));
    }
    let limits = fleet_limits(f);
    Ok(Some(StateConfig {
        location,
        limits,
        timeout: f.state_timeout,
        on_error: if f.state_on_error == "closed" {
            OnError::Closed
        } else {
            OnError::Open
        },
        cacert: f.state_cacert.clone(),
        max_hold,
    }))
}

/// The breaker's and the budget's settings the fleet flags give (with `--state`, or for
/// the records a batch keeps in process without it).
pub fn fleet_limits(f: &FleetFlags) -> crate::fleet::record::Limits {
    crate::fleet::record::Limits {
        threshold: f.breaker_threshold,
        cooldown: f.breaker_cooldown,
        budget_pct: f.retry_budget,
        window: f.budget_window,
        floor: f.budget_floor,
        ttl: f.state_ttl,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    /// The flags of a command line (without the program's name), as clap parses them.
    pub(super) fn args_of(line: &[&str]) -> RequestArgs {
        let mut all = vec!["retry-http"];
        all.extend_from_slice(line);
        let all: Vec<std::ffi::OsString> = all.into_iter().map(Into::into).collect();
        crate::cli::parse(&all).expect("clap accepts it").request
    }

    fn parse(args: &[&str]) -> Result<Config, UsageError> {
        let mut all = vec!["retry-http"];
        all.extend_from_slice(args);
        let mut cli = Cli::try_parse_from(all).map_err(|e| UsageError(e.to_string()))?;
        curl_retry::fold(&mut cli.request)?;
        build(&cli.request, Found::default())
    }

    /// A count given bounds the run; a deadline alone lets it run as long as the deadline
    /// (and the budget and breaker) allow; `--deadline 0` is no deadline.
    #[test]
    fn a_deadline_without_a_count_bounds_the_attempts() {
        use AttemptsBound as B;
        let s = Some(Duration::from_secs(90));
        assert_eq!(attempts(None, s).ok(), Some((UNLIMITED, B::Deadline)));
        assert_eq!(attempts(Some(6), s).ok(), Some((6, B::Given)));
        assert_eq!(attempts(Some(3), None).ok(), Some((3, B::Given)));
        assert_eq!(
            attempts(None, None).ok(),
            Some((DEFAULT_ATTEMPTS, B::Default))
        );
        assert_eq!(
            attempts(Some(UNLIMITED), s).ok(),
            Some((UNLIMITED, B::Given))
        );
        assert!(attempts(Some(UNLIMITED), None).is_err());
        let of = |args: &[&str]| {
            let mut all = args.to_vec();
            all.push("http://h/");
            parse(&all).map(|c| (c.retry.attempts, c.retry.bound)).ok()
        };
        assert_eq!(of(&["--deadline", "90s"]), Some((UNLIMITED, B::Deadline)));
        assert_eq!(
            of(&["--deadline", "0"]),
            Some((DEFAULT_ATTEMPTS, B::Default))
        );
        assert_eq!(
            of(&["--deadline", "90s", "--attempts", "6"]),
            Some((6, B::Given))
        );
        assert_eq!(of(&[]), Some((DEFAULT_ATTEMPTS, B::Default)));
    }

    /// A command line with a flag of every group that adds a part late in `build`: the
    /// protocol flags, the destination flags and a readiness condition.
    const EVERY_PART: [&str; 24] = [
        "--proto",
        "=https",
        "--tls-max",
        "1.2",
        "--oauth2-bearer",
        "t0k",
        "-u",
        "u:p",
        "-e",
        "http://r/",
        "-4",
        "-T",
        "up.txt",
        "-O",
        "--output-dir",
        "d",
        "--create-dirs",
        "--until-body",
        "ok",
        "--idempotency-key",
        "k",
        "--retry",
        "2",
        "https://127.0.0.1/dir/",
    ];

    /// The configuration is finished when `build` returns it: two builds from one command
    /// line are the same, field for field.
    #[test]
    fn building_twice_gives_the_same_configuration() {
        let first = parse(&EVERY_PART).expect("a valid line");
        let second = parse(&EVERY_PART).expect("a valid line");
        assert_eq!(format!("{first:?}"), format!("{second:?}"));
    }

    /// Every part the protocol, destination and readiness flags make is in the
    /// configuration `build` returns, nothing left at a default for a later step to fill.
    #[test]
    fn every_part_is_made_by_build() {
        let c = parse(&EVERY_PART).expect("a valid line");
        let r = &c.request;
        assert_eq!(r.method, "PUT");
        let t = c.batch.first();
        assert_eq!(t.url.as_str(), "https://127.0.0.1/dir/up.txt");
        assert_eq!(r.family, Family::V4);
        assert!(r.protocols.tls.max_1_2);
        assert!(!r.protocols.redirect_schemes.http);
        let header = |name: &str| {
            r.headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(header("authorization"), ["Bearer t0k"]);
        assert_eq!(header("referer"), ["http://r/"]);
        assert!(r.body.is_some());
        assert_eq!(t.output, Some(PathBuf::from("d/up.txt")));
        assert!(c.output.create_dirs);
        assert!(c.output.inspect);
        assert_eq!(c.ready.body.len(), 1);
        assert_eq!(c.retry.attempts, 3);
        assert!(c.retry.curl.is_some());
    }

    /// Without those flags, the parts are their defaults.
    #[test]
    fn the_parts_default_without_their_flags() {
        let c = parse(&["http://h/"]).expect("a valid line");
        assert_eq!(c.request.family, Family::Any);
        assert_eq!(
            c.request.protocols.redirect_schemes,
            protocols::Schemes::ALL
        );
        assert!(!c.output.create_dirs && !c.output.inspect);
        assert_eq!(c.batch.first().output, None);
        assert!(!c.ready.any());
        assert!(c.retry.curl.is_none());
    }

    /// What reading the files found is an input of `build`: stdin read by `-H @-` may not
    /// be read again by a body or `-T -`.
    #[test]
    fn stdin_taken_while_expanding_is_an_input() {
        let with = |args: &[&str], found: Found| build(&args_of(args), found).map(|_| ());
        let taken = Found {
            stdin_taken: Some("-H @-"),
            from_file: false,
        };
        for args in [&["-T", "-", "http://h/"][..], &["-d", "@-", "http://h/"]] {
            assert!(with(args, Found::default()).is_ok(), "{args:?}");
            let e = with(args, taken).expect_err("stdin twice");
            assert!(e.0.starts_with("-H @- and "), "{}", e.0);
        }
    }

    #[test]
    fn method_defaults() {
        assert_eq!(parse(&["http://h/"]).unwrap().request.method, "GET");
        assert_eq!(
            parse(&["http://h/", "-d", "x"]).unwrap().request.method,
            "POST"
        );
        assert_eq!(
            parse(&["PUT", "http://h/", "-d", "x"])
                .unwrap()
                .request
                .method,
            "PUT"
        );
        assert_eq!(
            parse(&["-X", "PATCH", "http://h/"]).unwrap().request.method,
            "PATCH"
        );
    }

    #[test]
    fn usage_errors() {
        for args in [
            &["-X", "GET", "POST", "http://h/"][..],
            &["ftp://h/"],
            &["http://"],
            &["file:/etc/passwd"],
            &["ftp.example.test/x"],
            &["--base", "10s", "--cap", "1s", "http://h/"],
            &["--base", "0", "http://h/"],
            &["G ET", "http://h/"],
            &["--state-ttl", "0", "http://h/"],
            &["--state-ttl", "999ms", "http://h/"],
        ] {
            assert!(parse(args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn state_ttl_defaults_to_a_day() {
        let c = parse(&["--state", "s.json", "http://h/"]).unwrap();
        assert_eq!(c.state.unwrap().limits.ttl, Duration::from_secs(24 * 3600));
        let c = parse(&["--state", "s.json", "--state-ttl", "1s", "http://h/"]).unwrap();
        assert_eq!(c.state.unwrap().limits.ttl, Duration::from_secs(1));
    }

    #[test]
    fn body_flags_set_headers() {
        let c = parse(&["http://h/", "--json", "{}"]).unwrap();
        assert!(has_header(&c.request.headers, "content-type"));
        assert!(has_header(&c.request.headers, "accept"));
        let c = parse(&["http://h/", "-H", "Content-Type: text/plain", "-d", "a"]).unwrap();
        let cts = c
            .request
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .count();
        assert_eq!(cts, 1);
    }

    #[test]
    fn an_empty_key_header_is_no_key() {
        for h in [
            "Idempotency-Key;",
            "Idempotency-Key:   ",
            "idempotency-key: \t",
        ] {
            let c = parse(&["POST", "http://h/", "-H", h]).unwrap();
            assert_eq!(c.retry.idempotency_key, None, "{h:?}");
        }
    }

    #[test]
    fn a_key_of_unicode_white_space_is_no_key() {
        for ws in ["\u{a0}", "\u{2028}", " \u{3000}\t", "\u{2003}\u{a0}"] {
            let h = format!("Idempotency-Key: {ws}");
            let c = parse(&["POST", "http://h/", "-H", &h]).unwrap();
            assert_eq!(c.retry.idempotency_key, None, "{h:?}");
            // Still sent as given: -H only trims ASCII spaces and tabs.
            let sent: Vec<_> = c.request.headers.iter().map(|(_, v)| v.as_str()).collect();
            assert!(
                sent.contains(&ws.trim_matches([' ', '\t'])),
                "{h:?}: {sent:?}"
            );
        }
    }

    #[test]
    fn a_key_given_and_removed_is_a_usage_error() {
        for h in [
            "Idempotency-Key:",
            "idempotency-key: \t",
            "Idempotency-Key;",
            "Idempotency-Key: other",
        ] {
            let r = parse(&["POST", "http://h/", "--idempotency-key", "k", "-H", h]);
            assert!(r.is_err(), "{h:?}");
        }
        let Err(e) = parse(&[
            "POST",
            "http://h/",
            "--idempotency-key",
            "k",
            "-H",
            "Idempotency-Key:",
        ]) else {
            panic!("accepted");
        };
        assert!(e.0.contains("removes it"), "{}", e.0);
    }

    #[test]
    fn auto_and_new_are_drawn_and_any_other_value_is_the_key() {
        for (given, want) in [
            ("auto", KeySpec::Auto),
            ("new", KeySpec::New),
            ("New", KeySpec::Given("New".into())),
            ("k-1", KeySpec::Given("k-1".into())),
        ] {
            let c = parse(&["POST", "http://h/", "--idempotency-key", given]).unwrap();
            assert_eq!(c.retry.idempotency_key, Some(want), "{given}");
        }
    }

    #[test]
    fn idempotency_key_from_header_counts() {
        let c = parse(&["POST", "http://h/", "-H", "Idempotency-Key: abc"]).unwrap();
        assert_eq!(c.retry.idempotency_key, Some(KeySpec::Given("abc".into())));
        let twice = [
            "POST",
            "http://h/",
            "-H",
            "Idempotency-Key: k",
            "-H",
            "idempotency-key;",
        ];
        assert!(parse(&twice).is_err(), "an empty key after a real one");
    }
}
