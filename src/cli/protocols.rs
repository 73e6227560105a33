//! curl's flags for the protocols spoken and what goes over them, as real curl lines hold
//! them (`--proto '=https' --tlsv1.2 -sSf`, `-T FILE`, `--data-raw`, `--oauth2-bearer`,
//! `-#`): the schemes allowed, the TLS versions, the upload and the bearer token, the
//! progress line; curl's flags accepted with no effect; those refused with one line (`-J`,
//! `--stderr`, `--limit-rate`, `-:`, TLS below 1.2). Also the line every other curl flag
//! gets (`curl_names::unsupported`), for those clap does not know. The checks are in
//! `config::protocols`.

use clap::Args;
use std::path::PathBuf;

/// The protocols spoken and what goes over them, one struct per help heading.
#[derive(Debug, Args)]
#[group(skip)]
pub struct ProtocolFlags {
    /// Under "Request".
    #[command(flatten)]
    pub request: ProtocolRequest,
    /// Under "Logging".
    #[command(flatten)]
    pub logging: ProgressFlags,
    /// Hidden: refused with the reason.
    #[command(flatten)]
    pub refused: RefusedFlags,
}

impl ProtocolFlags {
    /// curl's flags of this group refused whatever else is given (`-J`, `--stderr`, TLS
    /// below 1.2, ...): every one given, each with its reason, in one line.
    pub fn refused(&self) -> Result<(), String> {
        let lines: Vec<String> = self
            .refused
            .given()
            .into_iter()
            .filter_map(|long| {
                let name = super::curl_names::find(&format!("--{long}"))?;
                let typed = name.short.map_or(format!("--{long}"), |c| format!("-{c}"));
                Some(super::curl_names::unsupported(name, &typed))
            })
            .collect();
        if lines.is_empty() {
            Ok(())
        } else {
            Err(lines.join("; "))
        }
    }
}

/// `-T`, `--data-raw`, `--oauth2-bearer`, `--proto`, the TLS versions, `-g`.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Request")]
pub struct ProtocolRequest {
    /// Upload FILE (- for stdin) as the request body, byte for byte: PUT unless a method is
    /// given.
    ///
    /// A URL whose path ends in / gets the file's name appended (percent-encoded), as in
    /// curl; not for stdin. Not with another body flag, -G or -I, nor with several URLs.
    /// PUT is idempotent, so it is retried like GET.
    #[arg(
        short = 'T',
        long = "upload-file",
        value_name = "FILE",
        allow_hyphen_values = true,
        hide_short_help = true,
        conflicts_with_all = ["data", "data_binary", "json", "data_urlencode", "form", "data_raw", "get", "head"]
    )]
    pub upload_file: Option<PathBuf>,

    /// Request body like -d, but a leading @ is sent as it is (no file is read); joins -d
    /// and --data-urlencode with & in command-line order.
    #[arg(
        long = "data-raw",
        value_name = "DATA",
        hide_short_help = true,
        conflicts_with_all = ["data_binary", "json", "form"]
    )]
    pub data_raw: Vec<String>,

    /// Send 'Authorization: Bearer TOKEN' (masked in the log, like any Authorization; not
    /// sent to another origin under -L). -H Authorization wins; it replaces -u's, as in curl.
    #[arg(long = "oauth2-bearer", value_name = "TOKEN", hide_short_help = true)]
    pub oauth2_bearer: Option<String>,

    /// The URL schemes allowed, in curl's syntax: a comma-separated list of names (http,
    /// https, all, or curl's other protocols, which change nothing here), each after + (add,
    /// the default), - (remove) or = (only these), from all: '=https', '-all,+https'.
    ///
    /// A URL of a scheme not allowed is a usage error, nothing sent; under -L a redirect
    /// to one is not followed (exit 6), nor one --proto-redir does not allow.
    #[arg(
        long = "proto",
        value_name = "LIST",
        hide_short_help = true,
        allow_hyphen_values = true
    )]
    pub proto: Option<String>,

    /// The schemes a redirect may go to under -L, in --proto's syntax, from http,https: a
    /// redirect to another is not followed (exit 6, not retried). A redirect must also be
    /// allowed by --proto.
    #[arg(
        long = "proto-redir",
        value_name = "LIST",
        hide_short_help = true,
        allow_hyphen_values = true
    )]
    pub proto_redir: Option<String>,

    /// Use TLS 1.2 or later: accepted, it is the floor already (TLS 1.2 and 1.3 are spoken).
    #[arg(long = "tlsv1.2", hide_short_help = true)]
    pub tlsv1_2: bool,

    /// Use TLS 1.3 only: a server that offers no TLS 1.3 fails the handshake.
    #[arg(long = "tlsv1.3", hide_short_help = true)]
    pub tlsv1_3: bool,

    /// The highest TLS version offered: 1.2, 1.3 or default (1.3). 1.0 and 1.1 are
    /// refused: TLS below 1.2 is not supported.
    #[arg(long = "tls-max", value_name = "VERSION", hide_short_help = true)]
    pub tls_max: Option<String>,

    /// Accepted: retry-http never expands {} and [] in a URL (curl's globbing); they are
    /// sent percent-encoded.
    #[arg(short = 'g', long = "globoff", hide_short_help = true)]
    pub globoff: bool,

    /// Accepted: no ~/.curlrc is read anyway (curl's -q, first on its command line).
    #[arg(short = 'q', long = "disable", hide_short_help = true)]
    pub disable: bool,

    /// Accepted: -u sends Basic authentication, the only kind -u sends here.
    #[arg(long = "basic", hide_short_help = true)]
    pub basic: bool,

    /// Accepted: every proxy is reached through a CONNECT tunnel already.
    #[arg(short = 'p', long = "proxytunnel", hide_short_help = true)]
    pub proxytunnel: bool,

    /// Accepted: a failed run never leaves a partial -o file.
    #[arg(long = "remove-on-error", hide_short_help = true)]
    pub remove_on_error: bool,

    /// Accepted: retry-http does not style the headers it shows.
    #[arg(long = "no-styled-output", hide_short_help = true)]
    pub no_styled_output: bool,

    /// Accepted, with no effect: the TCP settings are the system's (each attempt opens
    /// its own connection, so keep-alive does not arise).
    #[arg(long = "tcp-nodelay", hide_short_help = true)]
    pub tcp_nodelay: bool,

    /// Accepted, with no effect (see --tcp-nodelay).
    #[arg(long = "tcp-fastopen", hide_short_help = true)]
    pub tcp_fastopen: bool,

    /// Accepted, with no effect (see --tcp-nodelay).
    #[arg(long = "no-keepalive", hide_short_help = true)]
    pub no_keepalive: bool,

    /// Accepted, with no effect (see --tcp-nodelay): a whole number of seconds, as curl.
    #[arg(
        long = "keepalive-time",
        value_name = "SECONDS",
        hide_short_help = true,
        value_parser = crate::cli::values::keepalive_time
    )]
    pub keepalive_time: Option<String>,
}

/// `-#` and `--no-progress-meter`.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Logging")]
pub struct ProgressFlags {
    /// Accepted: the progress line is shown on a terminal anyway (one line, not curl's bar
    /// or meter).
    #[arg(short = '#', long = "progress-bar", hide_short_help = true)]
    pub progress_bar: bool,

    /// Hide the download progress line (as -s does), and nothing else.
    #[arg(long = "no-progress-meter", hide_short_help = true)]
    pub no_progress_meter: bool,
}

/// curl's flags refused with a reason, hidden from the help (see [`reason`]).
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = None::<&str>)]
pub struct RefusedFlags {
    /// curl's flag, refused: the file name must be known before the request.
    #[arg(short = 'J', long = "remote-header-name", hide = true)]
    pub remote_header_name: bool,

    /// curl's flag, refused: redirect stderr with 2>FILE.
    #[arg(
        long = "stderr",
        value_name = "FILE",
        hide = true,
        allow_hyphen_values = true
    )]
    pub stderr: Option<String>,

    /// curl's flag, refused: transfers are not slowed down.
    #[arg(long = "limit-rate", value_name = "SPEED", hide = true)]
    pub limit_rate: Option<String>,

    /// curl's flag, refused: several URLs share one set of options here.
    #[arg(short = ':', long = "next", hide = true)]
    pub next: bool,

    /// curl's flag, refused: TLS below 1.2 is not supported.
    #[arg(short = '1', long = "tlsv1", hide = true)]
    pub tlsv1: bool,

    /// curl's flag, refused: TLS below 1.2 is not supported.
    #[arg(long = "tlsv1.0", hide = true)]
    pub tlsv1_0: bool,

    /// curl's flag, refused: TLS below 1.2 is not supported.
    #[arg(long = "tlsv1.1", hide = true)]
    pub tlsv1_1: bool,

    /// curl's flag, refused: TLS below 1.2 is not supported.
    #[arg(short = '2', long = "sslv2", hide = true)]
    pub sslv2: bool,

    /// curl's flag, refused: TLS below 1.2 is not supported.
    #[arg(short = '3', long = "sslv3", hide = true)]
    pub sslv3: bool,
}

impl RefusedFlags {
    /// The long names of the refused flags given, in the order of the struct.
    pub fn given(&self) -> Vec<&'static str> {
        [
            (self.remote_header_name, "remote-header-name"),
            (self.stderr.is_some(), "stderr"),
            (self.limit_rate.is_some(), "limit-rate"),
            (self.next, "next"),
            (self.tlsv1, "tlsv1"),
            (self.tlsv1_0, "tlsv1.0"),
            (self.tlsv1_1, "tlsv1.1"),
            (self.sslv2, "sslv2"),
            (self.sslv3, "sslv3"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect()
    }
}
