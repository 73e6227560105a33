//! The command line, defined once with clap: flags, help text and value parsers. Nothing
//! here checks one flag against another; `config` does that.

use crate::exit::Outcome;
use crate::policy::{Jitter, StatusSet};
use crate::values;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// The exit-code table and a pointer to the recipes, shown after `--help`.
fn after_help() -> String {
    format!(
        "{}\nExamples:\n  retry-http https://example.test/health\n  retry-http --deadline 90s POST https://example.test/jobs -d @job.json --idempotency-key auto\n  retry-http -o report.csv --attempts 10 --cap 30s https://example.test/report.csv\n  retry-http demo",
        Outcome::table()
    )
}

/// Send an HTTP request; when the failure is transient, try again with capped exponential
/// backoff and jitter, honouring Retry-After, within an overall deadline.
#[derive(Debug, Parser)]
#[command(
    name = "retry-http",
    version,
    after_help = after_help(),
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    /// A subcommand instead of a request.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The request: an optional METHOD (GET, or POST when a body is given), then the URL.
    #[command(flatten)]
    pub request: RequestArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a failing server on loopback and run the client against it, to show the log.
    Demo,
}

/// Format of the lines written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per attempt.
    Text,
    /// One JSON object per line (the schema is in README.md).
    Json,
}

/// When to colour stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Everything about one request and how it is retried.
#[derive(Debug, Args)]
pub struct RequestArgs {
    /// [METHOD] URL: the method is optional (GET, or POST when a body is given).
    #[arg(value_name = "[METHOD] URL", num_args = 1..=2, required = true)]
    pub target: Vec<String>,

    /// The request method (curl's name); giving a positional METHOD too is an error.
    #[arg(short = 'X', long = "request", value_name = "METHOD")]
    pub method: Option<String>,

    /// Total attempts, the first included (1 to 1000; 1 means no retry).
    #[arg(long, default_value = "6", allow_hyphen_values = true, value_parser = values::attempts, help_heading = "Retry policy")]
    pub attempts: u32,

    /// Backoff base: the first retry's ceiling (at least 1ms).
    #[arg(long, default_value = "250ms", allow_hyphen_values = true, value_parser = values::duration, help_heading = "Retry policy")]
    pub base: Duration,

    /// The largest backoff ceiling; retry n's ceiling is min(cap, base * 2^n).
    #[arg(long, default_value = "8s", allow_hyphen_values = true, value_parser = values::duration, help_heading = "Retry policy")]
    pub cap: Duration,

    /// full | equal | decorrelated | none | +DURATION (additive).
    #[arg(long, default_value = "full", allow_hyphen_values = true, value_parser = values::jitter, help_heading = "Retry policy")]
    pub jitter: Jitter,

    /// The whole command, waits included, ends by then (measured from start-up).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration, help_heading = "Retry policy")]
    pub deadline: Option<Duration>,

    /// Status codes that are retried: codes, ranges (500-599), classes (5xx); replaces the default.
    #[arg(long, default_value = StatusSet::DEFAULT, value_parser = values::status_set, help_heading = "Retry policy")]
    pub retry_on: StatusSet,

    /// The longest Retry-After honoured; a longer hint is clamped to it (and logged).
    #[arg(long, default_value = "60s", allow_hyphen_values = true, value_parser = values::duration, help_heading = "Retry policy")]
    pub max_retry_after: Duration,

    /// Random spread added after a Retry-After wait, so clients do not return together (0: off).
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = values::duration, help_heading = "Retry policy")]
    pub retry_after_spread: Duration,

    /// Seed for the random draws, so a run can be replayed (shown by -v when not given).
    #[arg(long, help_heading = "Retry policy")]
    pub seed: Option<u64>,

    /// Send this Idempotency-Key on every attempt (auto: a random UUID); allows replaying POST.
    #[arg(long, value_name = "KEY|auto", help_heading = "Retry policy")]
    pub idempotency_key: Option<String>,

    /// Replay non-idempotent requests (POST, PATCH) after ambiguous failures, without a key.
    #[arg(long, help_heading = "Retry policy")]
    pub retry_unsafe: bool,

    /// Timeout of one attempt, the whole exchange included (body too).
    #[arg(long, allow_hyphen_values = true, value_parser = values::duration, conflicts_with = "max_time", help_heading = "Timeouts")]
    pub timeout: Option<Duration>,

    /// curl's name for --timeout, in seconds (fractions allowed: 2.5).
    #[arg(short = 'm', long, value_name = "SECONDS", allow_hyphen_values = true, value_parser = values::seconds, help_heading = "Timeouts")]
    pub max_time: Option<Duration>,

    /// Timeout for opening the connection (DNS, TCP, TLS handshake).
    #[arg(long, default_value = "10s", allow_hyphen_values = true, value_parser = values::duration, help_heading = "Timeouts")]
    pub connect_timeout: Duration,

    /// An attempt fails (retryably) when no byte arrives for this long, before or during the body.
    #[arg(long, default_value = "30s", allow_hyphen_values = true, value_parser = values::duration, help_heading = "Timeouts")]
    pub stall_timeout: Duration,

    /// Add a request header, 'Name: value' (repeatable); 'Name:' removes it, 'Name;' sends it empty.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = values::header, help_heading = "Request")]
    pub headers: Vec<values::HeaderArg>,

    /// Request body (curl's -d): text, or @FILE (CR and LF removed, as curl does); repeats join with &.
    #[arg(short = 'd', long = "data", value_name = "DATA", help_heading = "Request", conflicts_with_all = ["data_binary", "json"])]
    pub data: Vec<String>,

    /// Request body sent byte for byte: text, @FILE, or @- for stdin.
    #[arg(
        long,
        value_name = "DATA",
        help_heading = "Request",
        conflicts_with = "json"
    )]
    pub data_binary: Vec<String>,

    /// JSON request body (text, @FILE or @-); sets Content-Type and Accept to application/json.
    #[arg(long, value_name = "DATA", help_heading = "Request")]
    pub json: Vec<String>,

    /// Basic authentication, USER:PASSWORD.
    #[arg(
        short = 'u',
        long,
        value_name = "USER:PASSWORD",
        help_heading = "Request"
    )]
    pub user: Option<String>,

    /// The User-Agent header.
    #[arg(short = 'A', long, value_name = "NAME", help_heading = "Request")]
    pub user_agent: Option<String>,

    /// Follow redirects (each hop belongs to the attempt that started it).
    #[arg(short = 'L', long, help_heading = "Request")]
    pub location: bool,

    /// The most redirects followed with -L.
    #[arg(long, default_value = "50", value_name = "N", help_heading = "Request")]
    pub max_redirs: u32,

    /// Do not verify TLS certificates (says so on stderr).
    #[arg(short = 'k', long, help_heading = "Request")]
    pub insecure: bool,

    /// Trust the certificates in this PEM file, besides the system's store.
    #[arg(long, value_name = "FILE", help_heading = "Request")]
    pub cacert: Option<PathBuf>,

    /// Ask for a compressed response (Accept-Encoding) and decompress it.
    #[arg(long, help_heading = "Request")]
    pub compressed: bool,

    /// Write the body to FILE (renamed into place only when complete and successful).
    #[arg(short = 'o', long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,

    /// Include the final response's status line and headers in the output.
    #[arg(short = 'i', long, help_heading = "Output")]
    pub include: bool,

    /// Also write the body of a final error response.
    #[arg(long, help_heading = "Output")]
    pub fail_with_body: bool,

    /// Stream the body as it arrives; a failure after the first byte is then not retried.
    #[arg(short = 'N', long, help_heading = "Output")]
    pub no_buffer: bool,

    /// Fail (exit 6) when the body is larger than SIZE bytes (k, M, G suffixes).
    #[arg(long, value_name = "SIZE", value_parser = values::size, help_heading = "Output")]
    pub max_filesize: Option<u64>,

    /// Only the final error line on stderr.
    #[arg(short = 's', long, conflicts_with = "verbose", help_heading = "Output")]
    pub silent: bool,

    /// Add request and response headers, and the seed, to the log.
    #[arg(short = 'v', long, help_heading = "Output")]
    pub verbose: bool,

    /// Format of the stderr log.
    #[arg(long, value_enum, default_value = "text", help_heading = "Output")]
    pub log_format: LogFormat,

    /// Colour on stderr.
    #[arg(long, value_enum, default_value = "auto", help_heading = "Output")]
    pub color: ColorChoice,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
