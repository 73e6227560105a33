//! The checks and settings of `cli::protocols`: the refused flags (one line naming every
//! one given), `--proto` and `--proto-redir` (curl's syntax; only http and https matter
//! here), the TLS versions (`--tlsv1.3`, `--tls-max`), `--oauth2-bearer` and `-T` (a PUT of
//! the file, its name appended to a URL ending in `/`). Nothing here does I/O.

use super::{BodySource, BodySpec, UsageError, check_header, usage};
use crate::cli::RequestArgs;
use crate::cli::protocols::ProtocolRequest;
use crate::cli::values::HeaderArg;
use std::path::{Path, PathBuf};
use url::Url;

/// The URL schemes allowed (`--proto`, `--proto-redir`): only http and https matter here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schemes {
    /// `http://` is allowed.
    pub http: bool,
    /// `https://` is allowed.
    pub https: bool,
}

impl Default for Schemes {
    fn default() -> Self {
        Schemes::ALL
    }
}

impl Schemes {
    /// Both.
    pub const ALL: Schemes = Schemes {
        http: true,
        https: true,
    };
    /// Neither.
    const NONE: Schemes = Schemes {
        http: false,
        https: false,
    };

    /// Whether `scheme` (lower case, as the URL parser gives it) is allowed.
    pub fn allows(self, scheme: &str) -> bool {
        match scheme {
            "http" => self.http,
            "https" => self.https,
            _ => false,
        }
    }

    /// What is allowed, in words ("http and https", "https", "neither http nor https").
    pub fn describe(self) -> &'static str {
        match (self.http, self.https) {
            (true, true) => "http and https",
            (true, false) => "http only",
            (false, true) => "https only",
            (false, false) => "neither http nor https",
        }
    }

    fn set(&mut self, name: &str, on: bool) {
        match name {
            "http" => self.http = on,
            "https" => self.https = on,
            "all" => *self = if on { Schemes::ALL } else { Schemes::NONE },
            _ => {}
        }
    }
}

/// The TLS versions offered: 1.2 and 1.3 unless one of these narrows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TlsVersions {
    /// `--tlsv1.3`: 1.3 only.
    pub min_1_3: bool,
    /// `--tls-max 1.2`: 1.2 only.
    pub max_1_2: bool,
}

/// The protocols a request may speak: the schemes a redirect may lead to and the TLS
/// versions offered.
#[derive(Debug, Clone, Copy, Default)]
pub struct Protocols {
    /// The schemes a redirect may lead to under `-L` (`--proto` and `--proto-redir` both).
    pub redirect_schemes: Schemes,
    /// The TLS versions offered.
    pub tls: TlsVersions,
}

/// The protocol names curl 7.88 knows (`all` aside): any of them may be listed in
/// `--proto`; only http and https change anything here.
const CURL_PROTOCOLS: [&str; 32] = [
    "dict", "file", "ftp", "ftps", "gopher", "gophers", "http", "https", "imap", "imaps", "ldap",
    "ldaps", "mqtt", "pop3", "pop3s", "rtmp", "rtmpe", "rtmps", "rtmpt", "rtmpte", "rtmpts",
    "rtsp", "scp", "sftp", "smb", "smbs", "smtp", "smtps", "telnet", "tftp", "ws", "wss",
];

/// The protocols the request may speak (`--proto`, `--proto-redir`, the TLS versions);
/// `url` is the request's, whose scheme `--proto` must allow. Errors: a list or a version
/// that is not valid, or a URL whose scheme `--proto` leaves out.
pub(super) fn protocols(a: &RequestArgs, url: &Url) -> Result<Protocols, UsageError> {
    let r = &a.protocols.request;
    let proto = match &r.proto {
        Some(list) => scheme_list(list, "--proto", Schemes::ALL)?,
        None => Schemes::ALL,
    };
    let redir = match &r.proto_redir {
        Some(list) => scheme_list(list, "--proto-redir", Schemes::ALL)?,
        None => Schemes::ALL,
    };
    let scheme = url.scheme();
    if !proto.allows(scheme) {
        return usage(format!(
            "the URL's scheme {scheme} is not allowed by --proto (it allows {}): give another URL or widen --proto",
            proto.describe()
        ));
    }
    Ok(Protocols {
        redirect_schemes: Schemes {
            http: proto.http && redir.http,
            https: proto.https && redir.https,
        },
        tls: tls(r)?,
    })
}

/// A `--proto` list in curl's syntax, applied to `start`: comma-separated names, each
/// after `+` (add; the default), `-` (remove) or `=` (only these; the last sign counts),
/// case ignored. A name curl does not know is an error (curl warns and ignores it).
pub(super) fn scheme_list(list: &str, flag: &str, start: Schemes) -> Result<Schemes, UsageError> {
    let mut set = start;
    let bad = |why: String| {
        usage(format!(
            "{flag} {list:?}: {why}; expected protocol names (http, https, all, ...) separated by commas, each after +, - or ="
        ))
    };
    for item in list.split(',').filter(|i| !i.is_empty()) {
        let name = item.trim_start_matches(['+', '-', '=']);
        let sign = item[..item.len() - name.len()]
            .chars()
            .last()
            .unwrap_or('+');
        let name = name.to_ascii_lowercase();
        if name.is_empty() {
            return bad(format!("{item:?} names no protocol"));
        }
        if name != "all" && !CURL_PROTOCOLS.contains(&name.as_str()) {
            return bad(format!("unknown protocol {name:?}"));
        }
        if sign == '=' {
            set = Schemes::NONE;
        }
        set.set(&name, sign != '-');
    }
    Ok(set)
}

/// `--tlsv1.3` and `--tls-max`.
fn tls(r: &ProtocolRequest) -> Result<TlsVersions, UsageError> {
    let max_1_2 = match r.tls_max.as_deref() {
        None | Some("1.3" | "default") => false,
        Some("1.2") => true,
        Some(v @ ("1.0" | "1.1")) => {
            return usage(format!(
                "--tls-max {v}: TLS below 1.2 is not supported (1.2 and 1.3 are)"
            ));
        }
        Some(v) => {
            return usage(format!(
                "invalid --tls-max {v:?}: expected 1.2, 1.3 or default"
            ));
        }
    };
    if max_1_2 && r.tlsv1_3 {
        return usage(
            "--tlsv1.3 (1.3 at least) and --tls-max 1.2 (1.2 at most) leave no TLS version: give one",
        );
    }
    Ok(TlsVersions {
        min_1_3: r.tlsv1_3,
        max_1_2,
    })
}

/// `--oauth2-bearer TOKEN`: the Authorization value to send in place of any other (that of
/// `-u`, as in curl), or `None` when no token is given or `-H` gave or removed
/// Authorization (`removed`: the header names `-H 'Name:'` removes, lower case).
pub(super) fn bearer(a: &RequestArgs, removed: &[String]) -> Result<Option<String>, UsageError> {
    let Some(token) = &a.protocols.request.oauth2_bearer else {
        return Ok(None);
    };
    if token.trim().is_empty() {
        return usage("--oauth2-bearer is empty: expected a token");
    }
    let by_hand = a
        .request
        .headers
        .iter()
        .any(|h| matches!(h, HeaderArg::Set(n, _) if n.eq_ignore_ascii_case("authorization")));
    if by_hand || removed.iter().any(|n| n == "authorization") {
        return Ok(None);
    }
    let value = format!("Bearer {token}");
    check_header("Authorization", &value)?;
    Ok(Some(value))
}

/// What `-T FILE` makes of the request (see [`upload`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Upload {
    /// The body: the file (or stdin), byte for byte.
    pub body: BodySpec,
    /// Sent with PUT: no method is given.
    pub put: bool,
    /// The file whose name a URL ending in `/` gets (`None` for stdin).
    pub named: Option<PathBuf>,
}

/// `-T FILE` (`-T -`: stdin): the file is the body, byte for byte; PUT unless a method is
/// given; a URL whose path ends in `/` gets the file's name. clap has refused the other
/// body flags, `-G` and `-I`. `stdin_taken` names what read stdin while the flags were
/// expanded (`-H @-`), if anything.
pub(super) fn upload(
    a: &RequestArgs,
    stdin_taken: Option<&str>,
) -> Result<Option<Upload>, UsageError> {
    let Some(path) = &a.protocols.request.upload_file else {
        return Ok(None);
    };
    let stdin = path.as_os_str() == "-";
    if path.as_os_str().is_empty() {
        return usage("-T names no file: expected -T FILE, or -T - for stdin");
    }
    if stdin {
        if let Some(taker) = stdin_taken {
            return usage(format!(
                "{taker} and -T - both want stdin: give one of them in a file"
            ));
        }
        if a.output.write_out.as_deref() == Some("@-") {
            return usage("-w @- and -T - both want stdin: give the -w format inline or in a file");
        }
    }
    let source = if stdin {
        BodySource::Stdin {
            strip_newlines: false,
        }
    } else {
        BodySource::File {
            path: path.clone(),
            strip_newlines: false,
        }
    };
    Ok(Some(Upload {
        body: BodySpec {
            parts: vec![source],
            separator: Vec::new(),
        },
        put: a.request.method.is_none() && a.target.len() < 2,
        named: (!stdin).then(|| path.clone()),
    }))
}

/// curl's rule for `-T`: a URL whose path ends in `/` gets the file's name (what follows its
/// last `/` or `\`), percent-encoded but for letters, digits and `-._~`.
pub(super) fn append_file_name(url: &mut Url, path: &Path) {
    if !url.path().ends_with('/') {
        return;
    }
    let whole = path.to_string_lossy();
    let name = whole.rsplit(['/', '\\']).next().unwrap_or(&whole);
    let mut encoded = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(b));
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    let path = format!("{}{encoded}", url.path());
    url.set_path(&path);
}

#[cfg(test)]
mod tests {
    use super::super::tests::args_of as args;
    use super::*;

    fn p(list: &str) -> Result<Schemes, UsageError> {
        scheme_list(list, "--proto", Schemes::ALL)
    }

    #[test]
    fn proto_lists_as_curl_reads_them() {
        let only_https = Schemes {
            http: false,
            https: true,
        };
        let only_http = Schemes {
            http: true,
            https: false,
        };
        assert_eq!(p("=https"), Ok(only_https));
        assert_eq!(p("-all,+https"), Ok(only_https));
        assert_eq!(p("+http"), Ok(Schemes::ALL));
        assert_eq!(p("all,-https"), Ok(only_http));
        assert_eq!(p("=http,https"), Ok(Schemes::ALL));
        assert_eq!(p("=HTTPS"), Ok(only_https));
        assert_eq!(p("-all"), Ok(Schemes::NONE));
        assert_eq!(p("=ftp"), Ok(Schemes::NONE));
        assert_eq!(p("-ftp,ftps"), Ok(Schemes::ALL));
        assert_eq!(p(""), Ok(Schemes::ALL));
        assert_eq!(p("+-https"), Ok(only_http));
        for bad in ["=foo", "https;", "=", "= https", "*http"] {
            let e = p(bad).expect_err(bad);
            assert!(e.0.starts_with("--proto "), "{}", e.0);
        }
    }

    /// `-T` alone: the file is the body, PUT unless a method is given, its name for a URL
    /// ending in `/`; stdin names no file, and is refused when `-H @-` read it.
    #[test]
    fn an_upload_is_a_value_of_its_own() {
        let u = upload(&args(&["-T", "a.txt", "http://h/"]), None).expect("valid");
        let u = u.expect("an upload");
        assert!(u.put);
        assert_eq!(u.named, Some(PathBuf::from("a.txt")));
        assert_eq!(u.body.parts.len(), 1);
        let u = upload(&args(&["-X", "POST", "-T", "-", "http://h/"]), None).expect("valid");
        let u = u.expect("an upload");
        assert!(!u.put);
        assert_eq!(u.named, None);
        assert_eq!(upload(&args(&["http://h/"]), None), Ok(None));
        let e = upload(&args(&["-T", "-", "http://h/"]), Some("-H @-")).expect_err("stdin");
        assert!(e.0.starts_with("-H @- and -T -"), "{}", e.0);
    }

    /// `--oauth2-bearer` alone: its Authorization value, unless `-H` gave or removed one.
    #[test]
    fn a_bearer_token_is_a_value_of_its_own() {
        let line = ["--oauth2-bearer", "t", "http://h/"];
        assert_eq!(bearer(&args(&line), &[]), Ok(Some("Bearer t".into())));
        assert_eq!(bearer(&args(&line), &["authorization".into()]), Ok(None));
        let by_hand = args(&[
            "-H",
            "Authorization: x",
            "--oauth2-bearer",
            "t",
            "http://h/",
        ]);
        assert_eq!(bearer(&by_hand, &[]), Ok(None));
        assert!(bearer(&args(&["--oauth2-bearer", " ", "http://h/"]), &[]).is_err());
    }

    #[test]
    fn upload_names_are_appended_as_curl_does() {
        let with = |u: &str, f: &str| {
            let mut url = Url::parse(u).expect("a URL");
            append_file_name(&mut url, Path::new(f));
            url.to_string()
        };
        assert_eq!(
            with("http://h/dir/", "/tmp/a b.txt"),
            "http://h/dir/a%20b.txt"
        );
        assert_eq!(with("http://h", "x.txt"), "http://h/x.txt");
        assert_eq!(with("http://h/?q=1", "x.txt"), "http://h/x.txt?q=1");
        assert_eq!(with("http://h/f", "x.txt"), "http://h/f");
        assert_eq!(with("http://h/", "d\\w.txt"), "http://h/w.txt");
        assert_eq!(with("http://h/", "é+~.t"), "http://h/%C3%A9%2B~.t");
    }
}
