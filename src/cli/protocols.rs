//! curl's flags for the protocols spoken and what goes over them, as real curl lines hold
//! them (`--proto '=https' --tlsv1.2 -sSf`, `-T FILE`, `--data-raw`, `--oauth2-bearer`,
//! `-#`): the schemes allowed, the TLS versions, the upload and the bearer token, the
//! progress line; curl's flags accepted with no effect; those refused with one line (`-J`,
//! `--stderr`, `--limit-rate`, `-:`, TLS below 1.2). Also the line every other curl flag
//! gets ([`unsupported`]), for those clap does not know. The checks are in
//! `config::protocols`.

use super::curl_names::CurlName;
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

/// `-T`, `--data-raw`, `--oauth2-bearer`, `--proto`, the TLS versions, `-g`, `--fail-early`.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Request")]
pub struct ProtocolRequest {
    /// Upload FILE (- for stdin) as the request body, byte for byte: PUT unless a method is
    /// given.
    ///
    /// A URL whose path ends in / gets the file's name appended (percent-encoded), as in
    /// curl; not for stdin. Not with another body flag, -G or -I. PUT is idempotent, so it
    /// is retried like GET.
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

    /// Accepted: there is one URL per run, so the first failure is the run's.
    #[arg(long = "fail-early", hide_short_help = true)]
    pub fail_early: bool,

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

    /// Accepted, with no effect (see --tcp-nodelay).
    #[arg(
        long = "keepalive-time",
        value_name = "SECONDS",
        hide_short_help = true
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

    /// curl's flag, refused: one request per run.
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

/// Parses `--connect-timeout`: curl's plain seconds (`5`, `2.5`; 0: no limit of its own),
/// or a duration with a unit (`500ms`).
pub fn connect_seconds(s: &str) -> Result<std::time::Duration, String> {
    super::values::seconds(s).map_err(|_| {
        format!(
            "invalid --connect-timeout {s:?}: expected a number of seconds from 0 to {}, e.g. 5 or 2.5 (or a duration with a unit, e.g. 500ms)",
            super::values::MAX_DURATION.as_secs()
        )
    })
}

/// The line for a curl flag retry-http does not implement, `typed` as the user wrote its
/// name (`-T`, `--proto`, `--no-keepalive`): "--X is curl's flag and is not supported
/// here: why".
pub fn unsupported(name: &CurlName, typed: &str) -> String {
    let shown = match (typed.strip_prefix("--"), name.short) {
        (Some(long), _) => format!("--{}", long.split('=').next().unwrap_or(long)),
        (None, Some(c)) => format!("-{c}/--{}", name.long),
        (None, None) => format!("--{}", name.long),
    };
    let negated = shown.starts_with("--no-") && !name.long.starts_with("no-");
    let why = if negated {
        "retry-http has no --no- form of curl's flags: leave the flag out"
    } else {
        reason(name.long)
    };
    format!("{shown} is curl's flag and is not supported here: {why}")
}

/// Why a curl flag is not supported, or what does its work here, by its long name.
pub fn reason(long: &str) -> &'static str {
    if let Some(why) = specific(long) {
        return why;
    }
    if long.starts_with("socks") {
        return "a SOCKS proxy is given with -x: -x socks5://HOST:PORT (or socks4://, socks4a://, socks5h://)";
    }
    const OTHER_PROTOCOLS: [&str; 8] = [
        "ftp-", "tftp-", "mail-", "sasl-", "telnet", "hostpub", "ssh", "krb",
    ];
    if OTHER_PROTOCOLS.iter().any(|p| long.starts_with(p)) {
        return "retry-http speaks HTTP and HTTPS only; this flag is for another protocol (FTP, mail, SSH, TELNET)";
    }
    if long.starts_with("proxy") || long == "preproxy" {
        return "the proxy flags here are -x/--proxy and --noproxy (an http:// proxy, reached through CONNECT)";
    }
    if long == "doh-url" || long == "doh-insecure" {
        return "names are looked up by the system's resolver; --resolve and --connect-to choose an address yourself";
    }
    if long.starts_with("ssl") || long.starts_with("tls") || long.starts_with("doh-") {
        return TLS;
    }
    "retry-http does not implement it (README's \"curl's flags at a glance\" lists what it does)"
}

/// What the TLS flags curl has and this tool lacks are told.
const TLS: &str = "TLS is rustls with the system's certificate store; the TLS flags here are -k, --cacert, -E/--cert, --key, --tlsv1.2, --tlsv1.3 and --tls-max";

/// The flags with a reason of their own.
fn specific(long: &str) -> Option<&'static str> {
    Some(match long {
        "remote-header-name" => "the file name must be known before the request: use -o NAME or -O",
        "stderr" => "redirect stderr with 2>FILE",
        "limit-rate" => "transfers are never slowed down here; drop it",
        "next" => "one request per run: run retry-http once per request",
        "parallel" | "parallel-immediate" | "parallel-max" => {
            "one request per run: start one retry-http per URL (--state shares a circuit breaker between them)"
        }
        "tlsv1" | "tlsv1.0" | "tlsv1.1" | "sslv2" | "sslv3" | "proxy-tlsv1" => {
            "TLS below 1.2 is not supported (1.2 and 1.3 are; --tlsv1.2 is the floor already)"
        }
        "http1.0" | "http0.9" | "proxy1.0" => "retry-http speaks HTTP/1.1 only",
        "capath" | "cert-status" | "ciphers" | "crlfile" | "curves" | "engine" | "egd-file"
        | "random-file" | "pinnedpubkey" | "false-start" | "pass" | "key-type" | "hsts"
        | "no-sessionid" | "no-alpn" | "no-npn" => TLS,
        "anyauth" | "digest" | "ntlm" | "ntlm-wb" | "negotiate" | "delegation" | "aws-sigv4"
        | "service-name" | "login-options" => {
            "the authentication here is -u (Basic), --oauth2-bearer, -n/--netrc, or -H 'Authorization: ...'"
        }
        "location-trusted" => {
            "credentials are never sent to another origin under -L; give the redirect's URL instead"
        }
        "form-string" | "form-escape" => "use -F (quote a value holding ; or , with \"...\")",
        "url-query" => "use -G with --data-urlencode",
        "range" => "byte ranges are not requested here; -C - resumes a download",
        "post301" | "post302" | "post303" => {
            "a 301/302/303 after POST becomes a GET, as curl does by default; 307/308 keep the method"
        }
        "trace" | "trace-ascii" | "trace-time" | "libcurl" => {
            "use -v (the headers, secrets masked) or --log-format json"
        }
        "manual" => "use --help, or man retry-http",
        "styled-output" => "use --color",
        "no-clobber" => "-o replaces the file, only once the body is complete",
        "expect100-timeout" => "no Expect: 100-continue is sent here",
        "interface"
        | "local-port"
        | "dns-interface"
        | "dns-ipv4-addr"
        | "dns-ipv6-addr"
        | "dns-servers"
        | "happy-eyeballs-timeout-ms"
        | "abstract-unix-socket" => {
            "the connection flags here are --resolve, --connect-to, --unix-socket, -4 and -6"
        }
        "cookie-jar" | "junk-session-cookies" => "Set-Cookie answers are not stored here",
        "crlf" => "a body is sent byte for byte here: convert its line ends first (sed 's/$/\\r/')",
        "append" | "use-ascii" | "list-only" | "quote" | "pubkey" | "create-file-mode"
        | "compressed-ssh" | "disable-eprt" | "disable-epsv" => {
            "retry-http speaks HTTP and HTTPS only (this flag is for FTP, SFTP or SCP)"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::curl_names::{CURL_NAMES, find};

    #[test]
    fn every_curl_name_has_a_line() {
        for name in &CURL_NAMES {
            let line = unsupported(name, &format!("--{}", name.long));
            assert!(
                line.starts_with(&format!("--{} is curl's flag", name.long)),
                "{line}"
            );
            assert!(!line.ends_with(": "), "{line}");
        }
    }

    #[test]
    fn the_line_names_the_flag_as_typed() {
        let t = find("-T").expect("-T");
        assert!(unsupported(t, "-T").starts_with("-T/--upload-file is curl's flag"));
        let p = find("--proto=https").expect("--proto");
        assert!(unsupported(p, "--proto=https").starts_with("--proto is curl's flag"));
        let s = find("--no-silent").expect("--silent");
        assert!(unsupported(s, "--no-silent").contains("no --no- form"));
        let j = find("-J").expect("-J");
        assert!(unsupported(j, "-J").contains("use -o NAME or -O"));
    }

    #[test]
    fn connect_timeout_takes_curls_seconds() {
        use std::time::Duration;
        assert_eq!(connect_seconds("5"), Ok(Duration::from_secs(5)));
        assert_eq!(connect_seconds("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(connect_seconds("0"), Ok(Duration::ZERO));
        assert_eq!(connect_seconds("750ms"), Ok(Duration::from_millis(750)));
        for bad in ["-1", "x", "5 s s", "+3"] {
            let e = connect_seconds(bad).expect_err(bad);
            assert!(e.starts_with("invalid --connect-timeout"), "{e}");
        }
    }
}
