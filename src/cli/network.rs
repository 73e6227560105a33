//! The flags of how the connection is made, in curl's names: where a name points
//! (`--resolve`, `--connect-to`), a Unix socket instead of TCP, a client certificate, the
//! credentials of a netrc file, and curl's lowest transfer speed (`-Y`, `-y`, under the
//! "Policy" heading with the other time limits). They are parsed and checked in
//! `config::network`.

use clap::Args;
use std::path::PathBuf;

/// The flags of the connection: name overrides, Unix socket, client certificate, netrc,
/// and the speed limit.
#[derive(Debug, Args, Default)]
#[group(skip)]
#[command(next_help_heading = "Request")]
pub struct NetworkFlags {
    /// Use ADDR for HOST:PORT instead of looking it up (repeatable): HOST '*' matches any
    /// host; several addresses are tried in order; an IPv6 address may be written in
    /// [brackets]; a leading '+' is accepted (curl's cache timeout; there is no cache across
    /// runs). TLS and the Host header keep the URL's name.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "[+]HOST:PORT:ADDR[,ADDR]...",
        allow_hyphen_values = true
    )]
    pub resolve: Vec<String>,

    /// A request to HOST1:PORT1 connects to HOST2:PORT2 instead (repeatable, the first
    /// match wins); an empty HOST1 or PORT1 matches any, an empty HOST2 or PORT2 keeps the
    /// URL's. TLS and the Host header keep the URL's name.
    #[arg(hide_short_help = true, long, value_name = "HOST1:PORT1:HOST2:PORT2")]
    pub connect_to: Vec<String>,

    /// Send the request over this Unix socket (a local daemon, /var/run/docker.sock); the
    /// URL gives the Host header and the path. A socket absent or refusing is retried as a
    /// refused connection; no proxy is used.
    #[arg(hide_short_help = true, long, value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,

    /// Client certificate (mutual TLS): a PEM file with the certificate chain, and the
    /// private key too unless --key names it. ':PASSWORD' is accepted only for a key that is
    /// not encrypted (an encrypted key is refused: decrypt it with openssl); '\:' escapes a
    /// colon of the file name.
    #[arg(
        hide_short_help = true,
        short = 'E',
        long = "cert",
        value_name = "FILE[:PASSWORD]"
    )]
    pub cert: Option<String>,

    /// The private key of --cert, a PEM file (PKCS#8, PKCS#1 or SEC1; not encrypted).
    #[arg(hide_short_help = true, long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,

    /// The format of --cert: only PEM (DER and P12 are refused, with the openssl command
    /// that converts them).
    #[arg(hide_short_help = true, long, value_name = "PEM", requires = "cert")]
    pub cert_type: Option<String>,

    /// Take the login and password for the URL's host from ~/.netrc (machine, default; an
    /// absent file is an error). Not used when the URL has a user, or -u or an
    /// Authorization header is given; not sent to another host after a redirect.
    #[arg(hide_short_help = true, short = 'n', long)]
    pub netrc: bool,

    /// Like --netrc, with this file instead of ~/.netrc.
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub netrc_file: Option<PathBuf>,

    /// Like --netrc (or --netrc-file), but an absent file is fine.
    #[arg(hide_short_help = true, long)]
    pub netrc_optional: bool,

    /// An attempt whose body arrives slower than BYTES per second, measured over spans of
    /// --speed-time (30 s by default), fails as a stall, retryably (k, M, G suffixes; 0: off).
    #[arg(hide_short_help = true, short = 'Y', long, value_name = "BYTES", help_heading = "Policy", value_parser = crate::cli::values::size)]
    pub speed_limit: Option<u64>,

    /// The span of --speed-limit, in seconds (fractions allowed; at least 1ms); given alone,
    /// the limit is 1 byte per second, as in curl.
    #[arg(hide_short_help = true, short = 'y', long, value_name = "SECONDS", help_heading = "Policy", value_parser = speed_time)]
    pub speed_time: Option<std::time::Duration>,
}

/// Parses `-y`: seconds, a plain number (`10`, `2.5`), or a duration with a unit.
fn speed_time(s: &str) -> Result<std::time::Duration, String> {
    crate::cli::values::seconds_of("--speed-time", s).map_err(|e| {
        if e.contains("below 1ms") {
            return e;
        }
        format!("invalid --speed-time {s:?}: expected a number of seconds, e.g. 30 or 2.5")
    })
}
