//! The option names of curl 7.88 (as `curl --help all` lists them), short and long, and
//! whether each takes a value, and the line a curl flag this tool does not implement gets
//! ([`unsupported`]: why, or what does its work here): so that such a flag is answered as
//! curl's flag (see `usage`), never with a tip for another flag.

/// One of curl's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CurlName {
    /// The long name, without the leading `--`.
    pub long: &'static str,
    /// The one-letter name, if it has one.
    pub short: Option<char>,
    /// Whether it takes a value.
    pub value: bool,
}

const fn n(long: &'static str, short: Option<char>, value: bool) -> CurlName {
    CurlName { long, short, value }
}

/// Every option of curl 7.88, by long name in alphabetical order.
pub const CURL_NAMES: [CurlName; 250] = [
    n("abstract-unix-socket", None, true),
    n("alt-svc", None, true),
    n("anyauth", None, false),
    n("append", Some('a'), false),
    n("aws-sigv4", None, true),
    n("basic", None, false),
    n("cacert", None, true),
    n("capath", None, true),
    n("cert", Some('E'), true),
    n("cert-status", None, false),
    n("cert-type", None, true),
    n("ciphers", None, true),
    n("compressed", None, false),
    n("compressed-ssh", None, false),
    n("config", Some('K'), true),
    n("connect-timeout", None, true),
    n("connect-to", None, true),
    n("continue-at", Some('C'), true),
    n("cookie", Some('b'), true),
    n("cookie-jar", Some('c'), true),
    n("create-dirs", None, false),
    n("create-file-mode", None, true),
    n("crlf", None, false),
    n("crlfile", None, true),
    n("curves", None, true),
    n("data", Some('d'), true),
    n("data-ascii", None, true),
    n("data-binary", None, true),
    n("data-raw", None, true),
    n("data-urlencode", None, true),
    n("delegation", None, true),
    n("digest", None, false),
    n("disable", Some('q'), false),
    n("disable-eprt", None, false),
    n("disable-epsv", None, false),
    n("disallow-username-in-url", None, false),
    n("dns-interface", None, true),
    n("dns-ipv4-addr", None, true),
    n("dns-ipv6-addr", None, true),
    n("dns-servers", None, true),
    n("doh-cert-status", None, false),
    n("doh-insecure", None, false),
    n("doh-url", None, true),
    n("dump-header", Some('D'), true),
    n("egd-file", None, true),
    n("engine", None, true),
    n("etag-compare", None, true),
    n("etag-save", None, true),
    n("expect100-timeout", None, true),
    n("fail", Some('f'), false),
    n("fail-early", None, false),
    n("fail-with-body", None, false),
    n("false-start", None, false),
    n("form", Some('F'), true),
    n("form-escape", None, false),
    n("form-string", None, true),
    n("ftp-account", None, true),
    n("ftp-alternative-to-user", None, true),
    n("ftp-create-dirs", None, false),
    n("ftp-method", None, true),
    n("ftp-pasv", None, false),
    n("ftp-port", Some('P'), true),
    n("ftp-pret", None, false),
    n("ftp-skip-pasv-ip", None, false),
    n("ftp-ssl-ccc", None, false),
    n("ftp-ssl-ccc-mode", None, true),
    n("ftp-ssl-control", None, false),
    n("get", Some('G'), false),
    n("globoff", Some('g'), false),
    n("happy-eyeballs-timeout-ms", None, true),
    n("haproxy-protocol", None, false),
    n("head", Some('I'), false),
    n("header", Some('H'), true),
    n("help", Some('h'), true),
    n("hostpubmd5", None, true),
    n("hostpubsha256", None, true),
    n("hsts", None, true),
    n("http0.9", None, false),
    n("http1.0", Some('0'), false),
    n("http1.1", None, false),
    n("http2", None, false),
    n("http2-prior-knowledge", None, false),
    n("http3", None, false),
    n("http3-only", None, false),
    n("ignore-content-length", None, false),
    n("include", Some('i'), false),
    n("insecure", Some('k'), false),
    n("interface", None, true),
    n("ipv4", Some('4'), false),
    n("ipv6", Some('6'), false),
    n("json", None, true),
    n("junk-session-cookies", Some('j'), false),
    n("keepalive-time", None, true),
    n("key", None, true),
    n("key-type", None, true),
    n("krb", None, true),
    n("libcurl", None, true),
    n("limit-rate", None, true),
    n("list-only", Some('l'), false),
    n("local-port", None, true),
    n("location", Some('L'), false),
    n("location-trusted", None, false),
    n("login-options", None, true),
    n("mail-auth", None, true),
    n("mail-from", None, true),
    n("mail-rcpt", None, true),
    n("mail-rcpt-allowfails", None, false),
    n("manual", Some('M'), false),
    n("max-filesize", None, true),
    n("max-redirs", None, true),
    n("max-time", Some('m'), true),
    n("metalink", None, false),
    n("negotiate", None, false),
    n("netrc", Some('n'), false),
    n("netrc-file", None, true),
    n("netrc-optional", None, false),
    n("next", Some(':'), false),
    n("no-alpn", None, false),
    n("no-buffer", Some('N'), false),
    n("no-clobber", None, false),
    n("no-keepalive", None, false),
    n("no-npn", None, false),
    n("no-progress-meter", None, false),
    n("no-sessionid", None, false),
    n("noproxy", None, true),
    n("ntlm", None, false),
    n("ntlm-wb", None, false),
    n("oauth2-bearer", None, true),
    n("output", Some('o'), true),
    n("output-dir", None, true),
    n("parallel", Some('Z'), false),
    n("parallel-immediate", None, false),
    n("parallel-max", None, true),
    n("pass", None, true),
    n("path-as-is", None, false),
    n("pinnedpubkey", None, true),
    n("post301", None, false),
    n("post302", None, false),
    n("post303", None, false),
    n("preproxy", None, true),
    n("progress-bar", Some('#'), false),
    n("proto", None, true),
    n("proto-default", None, true),
    n("proto-redir", None, true),
    n("proxy", Some('x'), true),
    n("proxy-anyauth", None, false),
    n("proxy-basic", None, false),
    n("proxy-cacert", None, true),
    n("proxy-capath", None, true),
    n("proxy-cert", None, true),
    n("proxy-cert-type", None, true),
    n("proxy-ciphers", None, true),
    n("proxy-crlfile", None, true),
    n("proxy-digest", None, false),
    n("proxy-header", None, true),
    n("proxy-insecure", None, false),
    n("proxy-key", None, true),
    n("proxy-key-type", None, true),
    n("proxy-negotiate", None, false),
    n("proxy-ntlm", None, false),
    n("proxy-pass", None, true),
    n("proxy-pinnedpubkey", None, true),
    n("proxy-service-name", None, true),
    n("proxy-ssl-allow-beast", None, false),
    n("proxy-ssl-auto-client-cert", None, false),
    n("proxy-tls13-ciphers", None, true),
    n("proxy-tlsauthtype", None, true),
    n("proxy-tlspassword", None, true),
    n("proxy-tlsuser", None, true),
    n("proxy-tlsv1", None, false),
    n("proxy-user", Some('U'), true),
    n("proxy1.0", None, true),
    n("proxytunnel", Some('p'), false),
    n("pubkey", None, true),
    n("quote", Some('Q'), true),
    n("random-file", None, true),
    n("range", Some('r'), true),
    n("rate", None, true),
    n("raw", None, false),
    n("referer", Some('e'), true),
    n("remote-header-name", Some('J'), false),
    n("remote-name", Some('O'), false),
    n("remote-name-all", None, false),
    n("remote-time", Some('R'), false),
    n("remove-on-error", None, false),
    n("request", Some('X'), true),
    n("request-target", None, true),
    n("resolve", None, true),
    n("retry", None, true),
    n("retry-all-errors", None, false),
    n("retry-connrefused", None, false),
    n("retry-delay", None, true),
    n("retry-max-time", None, true),
    n("sasl-authzid", None, true),
    n("sasl-ir", None, false),
    n("service-name", None, true),
    n("show-error", Some('S'), false),
    n("silent", Some('s'), false),
    n("socks4", None, true),
    n("socks4a", None, true),
    n("socks5", None, true),
    n("socks5-basic", None, false),
    n("socks5-gssapi", None, false),
    n("socks5-gssapi-nec", None, false),
    n("socks5-gssapi-service", None, true),
    n("socks5-hostname", None, true),
    n("speed-limit", Some('Y'), true),
    n("speed-time", Some('y'), true),
    n("ssl", None, false),
    n("ssl-allow-beast", None, false),
    n("ssl-auto-client-cert", None, false),
    n("ssl-no-revoke", None, false),
    n("ssl-reqd", None, false),
    n("ssl-revoke-best-effort", None, false),
    n("sslv2", Some('2'), false),
    n("sslv3", Some('3'), false),
    n("stderr", None, true),
    n("styled-output", None, false),
    n("suppress-connect-headers", None, false),
    n("tcp-fastopen", None, false),
    n("tcp-nodelay", None, false),
    n("telnet-option", Some('t'), true),
    n("tftp-blksize", None, true),
    n("tftp-no-options", None, false),
    n("time-cond", Some('z'), true),
    n("tls-max", None, true),
    n("tls13-ciphers", None, true),
    n("tlsauthtype", None, true),
    n("tlspassword", None, true),
    n("tlsuser", None, true),
    n("tlsv1", Some('1'), false),
    n("tlsv1.0", None, false),
    n("tlsv1.1", None, false),
    n("tlsv1.2", None, false),
    n("tlsv1.3", None, false),
    n("tr-encoding", None, false),
    n("trace", None, true),
    n("trace-ascii", None, true),
    n("trace-time", None, false),
    n("unix-socket", None, true),
    n("upload-file", Some('T'), true),
    n("url", None, true),
    n("url-query", None, true),
    n("use-ascii", Some('B'), false),
    n("user", Some('u'), true),
    n("user-agent", Some('A'), true),
    n("verbose", Some('v'), false),
    n("version", Some('V'), false),
    n("write-out", Some('w'), true),
    n("xattr", None, false),
];

/// The curl option `typed` names, as clap quotes an unknown argument: `--name`,
/// `--name=value`, or `-c` (a short flag, alone or the first unknown of a cluster). curl
/// also takes `--no-NAME` for its boolean options; that form is found too.
pub fn find(typed: &str) -> Option<&'static CurlName> {
    if let Some(long) = typed.strip_prefix("--") {
        let name = long.split('=').next().unwrap_or(long);
        let by_long = |l: &str| CURL_NAMES.iter().find(|c| c.long == l);
        return by_long(name).or_else(|| {
            name.strip_prefix("no-")
                .and_then(by_long)
                .filter(|c| !c.value)
        });
    }
    let mut chars = typed.strip_prefix('-')?.chars();
    let c = chars.next()?;
    CURL_NAMES.iter().find(|n| n.short == Some(c))
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
    "retry-http does not implement it (docs/curl.md lists what it does, flag by flag)"
}

/// What the TLS flags curl has and this tool lacks are told.
const TLS: &str = "TLS is rustls with the system's certificate store; the TLS flags here are -k, --cacert, -E/--cert, --key, --tlsv1.2, --tlsv1.3 and --tls-max";

/// The flags with a reason of their own.
fn specific(long: &str) -> Option<&'static str> {
    Some(match long {
        "remote-header-name" => "the file name must be known before the request: use -o NAME or -O",
        "stderr" => "redirect stderr with 2>FILE",
        "limit-rate" => "transfers are never slowed down here; drop it",
        "next" => {
            "the URLs of a run share one set of options here: run retry-http once per set of options"
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

    #[test]
    fn the_table_is_sorted_and_each_name_once() {
        for pair in CURL_NAMES.windows(2) {
            assert!(pair[0].long < pair[1].long, "{pair:?}");
        }
        let mut shorts: Vec<char> = CURL_NAMES.iter().filter_map(|c| c.short).collect();
        let all = shorts.len();
        shorts.sort_unstable();
        shorts.dedup();
        assert_eq!(shorts.len(), all);
    }

    #[test]
    fn names_are_found_in_every_form() {
        assert_eq!(find("--proto").map(|c| c.long), Some("proto"));
        assert_eq!(find("--proto=https").map(|c| c.long), Some("proto"));
        assert_eq!(find("-T").map(|c| c.long), Some("upload-file"));
        assert_eq!(find("-#").map(|c| c.long), Some("progress-bar"));
        assert_eq!(find("--no-keepalive").map(|c| c.long), Some("no-keepalive"));
        assert_eq!(find("--no-sessionid").map(|c| c.long), Some("no-sessionid"));
        assert_eq!(find("--no-append").map(|c| c.long), Some("append"));
        assert_eq!(find("--no-proto"), None);
        assert_eq!(find("--atempts"), None);
        assert_eq!(find("-W"), None);
        assert_eq!(find("x"), None);
    }

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
}
