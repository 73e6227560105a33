//! curl's flags for where the request goes and where its body is saved: the URL (`--url`),
//! the Referer (`-e`), the address family (`-4`/`-6`) and HTTP version (`--http1.1`, and `--http2`
//! and `--http3`, which fall back to it in curl; the versions without fall-back refused with
//! a clear line), and the file named from the URL (`-O`,
//! `--remote-name-all`, `--output-dir`, `--create-dirs`); with them `-f` and `-S`, which scripts pass in `-fsSL`
//! and which this tool does anyway. The checks are in `config::destination`.

use clap::Args;
use std::path::PathBuf;

/// Where the request goes and where its body is saved, in three groups so that each shows
/// under the heading it belongs to.
#[derive(Debug, Args)]
#[group(skip)]
pub struct DestinationFlags {
    /// Under "Request".
    #[command(flatten)]
    pub request: UrlFlags,
    /// Under "Output".
    #[command(flatten)]
    pub output: SavedFileFlags,
    /// Under "Logging".
    #[command(flatten)]
    pub logging: ShowErrorFlag,
}

impl DestinationFlags {
    /// The HTTP versions that would have to be spoken with no fall-back to HTTP/1.1
    /// (`--http2-prior-knowledge`, `--http3-only`), refused whatever else is given: the
    /// line for the first one given. `--http2` and `--http3` only ask curl to try a newer
    /// version and fall back to HTTP/1.1 when it is not offered (curl's manual), which is
    /// what every server answering such a line already takes: they are accepted, and the
    /// request goes over HTTP/1.1.
    pub fn refused(&self) -> Result<(), String> {
        let r = &self.request;
        let version = [
            (r.http2_prior_knowledge, "--http2-prior-knowledge"),
            (r.http3_only, "--http3-only"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name));
        match version {
            Some(flag) => Err(format!(
                "{flag} is curl's flag for a version spoken with no fall-back, and retry-http speaks HTTP/1.1 only (--http1.1, or drop the flag; --http2 and --http3, which fall back, are accepted)"
            )),
            None => Ok(()),
        }
    }
}

/// `--url`, `-e`, the HTTP version and the address family.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Request")]
pub struct UrlFlags {
    /// A URL, as curl's --url gives it (repeatable; in order with the positional URLs);
    /// @FILE reads one URL a line from FILE (@-: stdin).
    ///
    /// A URL without a scheme is http://, as in curl (localhost:8080/health); a host name
    /// starting with ftp., dict., ldap., imap., smtp. or pop3. is refused, since curl would
    /// use that protocol. In a @FILE, blank lines and lines starting with # are skipped and
    /// the spaces around a URL dropped; it is read within --deadline.
    #[arg(long = "url", value_name = "URL", hide_short_help = true)]
    pub url: Vec<String>,

    /// Send this Referer header (as curl's -e; an empty URL sends none; -H Referer wins).
    ///
    /// curl's ';auto' suffix (a Referer on each redirect) is refused.
    #[arg(
        short = 'e',
        long = "referer",
        value_name = "URL",
        hide_short_help = true
    )]
    pub referer: Option<String>,

    /// Speak HTTP/1.1: accepted, it is what retry-http always speaks.
    #[arg(long = "http1.1", hide_short_help = true)]
    pub http1_1: bool,

    /// curl's "try HTTP/2, else HTTP/1.1": accepted, the request goes over HTTP/1.1.
    #[arg(long = "http2", hide_short_help = true)]
    pub http2: bool,

    /// curl's flag, refused: retry-http speaks HTTP/1.1 only.
    #[arg(long = "http2-prior-knowledge", hide = true)]
    pub http2_prior_knowledge: bool,

    /// curl's "try HTTP/3, else an older version": accepted, the request goes over HTTP/1.1.
    #[arg(long = "http3", hide_short_help = true)]
    pub http3: bool,

    /// curl's flag, refused: retry-http speaks HTTP/1.1 only.
    #[arg(long = "http3-only", hide = true)]
    pub http3_only: bool,

    /// Resolve host names to IPv4 addresses only (the last of -4 and -6 counts, as in curl).
    ///
    /// A URL whose host is an IPv6 address is then a usage error (unless -x names a
    /// proxy); a host name with no IPv4 address is not found (a DNS failure, retried as any
    /// other).
    #[arg(
        short = '4',
        long = "ipv4",
        overrides_with = "ipv6",
        hide_short_help = true
    )]
    pub ipv4: bool,

    /// Resolve host names to IPv6 addresses only (the last of -4 and -6 counts, as in curl).
    ///
    /// A URL whose host is an IPv4 address is then a usage error (unless -x names a
    /// proxy); a host name with no IPv6 address is not found (a DNS failure, retried as any
    /// other).
    #[arg(
        short = '6',
        long = "ipv6",
        overrides_with = "ipv4",
        hide_short_help = true
    )]
    pub ipv6: bool,
}

/// `-O`, `--remote-name-all`, `--output-dir`, `--create-dirs` and `-f`.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Output")]
pub struct SavedFileFlags {
    /// Write the body to a file named as the URL's last path segment, in the current folder.
    ///
    /// The name is taken as it stands in the URL, not percent-decoded (as curl 7.88 does:
    /// /a%20b.txt is saved as a%20b.txt); the query is not part of it; a redirect does not
    /// change it. A URL whose path ends in / (no name) is a usage error, nothing sent.
    /// With one URL, giving -o too is a usage error; with several, each -O (like each -o)
    /// goes with the next URL in order.
    // One value per occurrence, so that the parse knows where each -O stands among the -o.
    #[arg(short = 'O', long = "remote-name", hide_short_help = true, action = clap::ArgAction::Append, num_args = 0, default_missing_value = "true", value_parser = occurrence)]
    pub remote_name: Vec<bool>,

    /// Give every URL without an -o or -O its remote name, as -O does (curl's flag).
    #[arg(long = "remote-name-all", hide_short_help = true)]
    pub remote_name_all: bool,

    /// The folder a relative -o or -O file goes in (an absolute -o path is used as it is),
    /// for every URL.
    #[arg(long, value_name = "DIR", hide_short_help = true)]
    pub output_dir: Option<PathBuf>,

    /// Create the missing folders of the -o/-O path (--output-dir included).
    ///
    /// They are made only when the file is put in place: a failed run leaves none.
    /// Without this flag a missing folder is a usage error.
    #[arg(long, hide_short_help = true)]
    pub create_dirs: bool,

    /// curl's --fail, accepted: it is what retry-http always does.
    ///
    /// A final status of 400 or above is a failure (exit 3, or 4 once retries of a
    /// retryable status run out) and its body is not written (--fail-with-body writes it;
    /// giving both is a usage error, as in curl). The exit codes are retry-http's, not
    /// curl's 22.
    #[arg(short = 'f', long = "fail", hide_short_help = true)]
    pub fail: bool,
}

/// One occurrence of a flag that clap records as a value (`-O`), so that its place among
/// the other flags is known; it names no values for the completion scripts to offer.
fn occurrence(_: &str) -> Result<bool, String> {
    Ok(true)
}

/// `-S`.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Logging")]
pub struct ShowErrorFlag {
    /// curl's --show-error, accepted: with -s, the final error line is always shown.
    #[arg(short = 'S', long = "show-error", hide_short_help = true)]
    pub show_error: bool,
}
