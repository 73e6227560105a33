//! The connection flags (`cli::network`) checked and turned into [`NetworkConfig`]:
//! `--resolve` and `--connect-to` entries parsed, the Unix socket, the speed limit, the
//! client certificate's files (read later, by the agent) and where the netrc file is
//! (read later, before anything is sent). Pure: no I/O.

use super::{Timeouts, UsageError, usage};
use crate::cli::network::NetworkFlags;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// One `--resolve` entry: the addresses used for a host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolve {
    /// The host, in lower case, without brackets; `*` matches any host.
    pub host: String,
    /// The port it applies to.
    pub port: u16,
    /// The addresses, tried in order.
    pub addrs: Vec<IpAddr>,
}

/// One `--connect-to` entry. `None` in `from_*` matches any; in `to_*` keeps the URL's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectTo {
    /// HOST1, lower case, without brackets.
    pub from_host: Option<String>,
    /// PORT1.
    pub from_port: Option<u16>,
    /// HOST2, lower case, without brackets.
    pub to_host: Option<String>,
    /// PORT2.
    pub to_port: Option<u16>,
}

/// `-Y`/`-y`: an attempt slower than `bytes_per_sec` over a span of `span` fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeedLimit {
    /// The lowest speed, in bytes per second (at least 1).
    pub bytes_per_sec: u64,
    /// The span it is measured over.
    pub span: Duration,
}

/// `--cert`, `--key`: the PEM files of a client certificate. The password, if one was
/// given, is kept only to be masked: an encrypted key is refused.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCert {
    /// The certificate chain (and the key, when `key` is None).
    pub cert: PathBuf,
    /// The private key's file.
    pub key: Option<PathBuf>,
    /// The password given after the file name.
    pub password: Option<String>,
}

impl std::fmt::Debug for ClientCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCert")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field(
                "password",
                &self.password.as_ref().map(|_| crate::redact::MASK),
            )
            .finish()
    }
}

/// Where the netrc file is, and whether its absence is fine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Netrc {
    /// `--netrc-file`; None: ~/.netrc.
    pub file: Option<PathBuf>,
    /// `--netrc-optional`: an absent file is no error.
    pub optional: bool,
}

/// The connection settings of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkConfig {
    /// `--resolve` entries, in command-line order.
    pub resolve: Vec<Resolve>,
    /// `--connect-to` entries, in command-line order (the first match wins).
    pub connect_to: Vec<ConnectTo>,
    /// `--unix-socket`.
    pub unix_socket: Option<PathBuf>,
    /// `-Y`/`-y`.
    pub speed: Option<SpeedLimit>,
    /// `--cert`/`--key`.
    pub client_cert: Option<ClientCert>,
    /// `--netrc`, `--netrc-file`, `--netrc-optional`.
    pub netrc: Option<Netrc>,
}

/// Checks the connection flags.
pub(super) fn build(n: &NetworkFlags) -> Result<NetworkConfig, UsageError> {
    let resolve = n
        .resolve
        .iter()
        .map(|r| resolve(r))
        .collect::<Result<_, _>>()?;
    let connect_to = n
        .connect_to
        .iter()
        .map(|c| connect_to(c))
        .collect::<Result<_, _>>()?;
    if n.unix_socket
        .as_ref()
        .is_some_and(|p| p.as_os_str().is_empty())
    {
        return usage("--unix-socket is empty: expected the path of a Unix socket");
    }
    Ok(NetworkConfig {
        resolve,
        connect_to,
        unix_socket: n.unix_socket.clone(),
        speed: speed(n.speed_limit, n.speed_time)?,
        client_cert: client_cert(n)?,
        netrc: (n.netrc || n.netrc_file.is_some() || n.netrc_optional).then(|| Netrc {
            file: n.netrc_file.clone(),
            optional: n.netrc_optional,
        }),
    })
}

/// The per-read timeout shortened to the speed limit's span, so a server that sends
/// nothing at all is caught as soon as one span has passed.
pub(super) fn timeouts(mut t: Timeouts, net: &NetworkConfig) -> Timeouts {
    if let Some(s) = net.speed {
        t.stall = Some(t.stall.map_or(s.span, |stall| stall.min(s.span)));
    }
    t
}

/// `-Y`, `-y`: `-Y 0` is off; `-y` alone means 1 byte per second, `-Y` alone 30 seconds
/// (curl's defaults).
fn speed(limit: Option<u64>, span: Option<Duration>) -> Result<Option<SpeedLimit>, UsageError> {
    if span.is_some_and(|s| s < Duration::from_millis(1)) {
        return usage("--speed-time must be at least 1ms: expected a number of seconds, e.g. 30");
    }
    Ok(match (limit, span) {
        (Some(0), _) | (None, None) => None,
        (l, s) => Some(SpeedLimit {
            bytes_per_sec: l.unwrap_or(1),
            span: s.unwrap_or(Duration::from_secs(30)),
        }),
    })
}

/// A host as `--resolve` and `--connect-to` write it: `[v6]` loses its brackets, names are
/// compared in lower case (as curl compares them).
fn host_part(h: &str) -> String {
    h.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(h)
        .to_ascii_lowercase()
}

/// Splits `text` at its colons, a `[...]` part being kept whole (an IPv6 address).
fn fields(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_brackets = false;
    for (i, c) in text.char_indices() {
        match c {
            '[' => in_brackets = true,
            ']' => in_brackets = false,
            ':' if !in_brackets => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// A port from 1 to 65535.
fn port(p: &str) -> Option<u16> {
    p.parse::<u16>().ok().filter(|p| *p > 0)
}

const RESOLVE_FORM: &str = "expected [+]HOST:PORT:ADDR[,ADDR]..., e.g. example.test:443:127.0.0.1 or example.test:443:[::1]";

/// Parses `[+]HOST:PORT:ADDR[,ADDR]...`. curl's `-HOST:PORT` (drop a cached entry) has
/// nothing to drop in a single run, and is refused.
fn resolve(text: &str) -> Result<Resolve, UsageError> {
    if text.starts_with('-') {
        return usage(format!(
            "--resolve {text:?}: '-HOST:PORT' removes an entry from curl's DNS cache, and one run has no cache: drop it"
        ));
    }
    let entry = text.strip_prefix('+').unwrap_or(text);
    // The host may be an IPv6 address in brackets; the addresses may hold colons.
    let host_end = match entry.strip_prefix('[') {
        Some(rest) => rest.find(']').map_or(0, |i| i + 2),
        None => entry.find(':').unwrap_or(0),
    };
    let (host, rest) = entry.split_at(host_end);
    let (host, port_text, addrs) = match rest.splitn(3, ':').collect::<Vec<_>>()[..] {
        ["", p, a] if !host.is_empty() && !a.is_empty() => (host, p, a),
        _ => return usage(format!("invalid --resolve {text:?}: {RESOLVE_FORM}")),
    };
    let Some(port) = port(port_text) else {
        return usage(format!(
            "invalid --resolve {text:?}: port {port_text:?} is not from 1 to 65535; {RESOLVE_FORM}"
        ));
    };
    let addrs = addrs
        .split(',')
        .map(|a| {
            host_part(a.trim()).parse::<IpAddr>().map_err(|_| {
                UsageError(format!(
                    "invalid --resolve {text:?}: {a:?} is not an IP address; {RESOLVE_FORM}"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Resolve {
        host: host_part(host),
        port,
        addrs,
    })
}

const CONNECT_TO_FORM: &str = "expected HOST1:PORT1:HOST2:PORT2 (empty parts: any, or the URL's), e.g. example.test:443:node1.example.test:8443";

/// Parses `HOST1:PORT1:HOST2:PORT2`; a host may be an IPv6 address in brackets.
fn connect_to(text: &str) -> Result<ConnectTo, UsageError> {
    let parts = fields(text);
    let [h1, p1, h2, p2] = parts[..] else {
        return usage(format!("invalid --connect-to {text:?}: {CONNECT_TO_FORM}"));
    };
    let opt_port = |p: &str| -> Result<Option<u16>, UsageError> {
        if p.is_empty() {
            return Ok(None);
        }
        port(p).map(Some).ok_or_else(|| {
            UsageError(format!(
                "invalid --connect-to {text:?}: port {p:?} is not from 1 to 65535; {CONNECT_TO_FORM}"
            ))
        })
    };
    let opt_host = |h: &str| (!h.is_empty()).then(|| host_part(h));
    Ok(ConnectTo {
        from_host: opt_host(h1),
        from_port: opt_port(p1)?,
        to_host: opt_host(h2),
        to_port: opt_port(p2)?,
    })
}

/// `--cert FILE[:PASSWORD]`, `--key`, `--cert-type`: only PEM. The password never
/// appears in a message.
fn client_cert(n: &NetworkFlags) -> Result<Option<ClientCert>, UsageError> {
    if let Some(t) = &n.cert_type
        && !t.eq_ignore_ascii_case("pem")
    {
        let how = match t.to_ascii_lowercase().as_str() {
            "der" => "openssl x509 -inform der -in CERT.der -out CERT.pem",
            "p12" => "openssl pkcs12 -in CERT.p12 -out CERT.pem -nodes",
            _ => "openssl",
        };
        return usage(format!(
            "--cert-type {t:?} is not supported: only PEM is; convert it with {how}"
        ));
    }
    let Some(arg) = &n.cert else {
        return Ok(None);
    };
    let (file, password) = split_cert(arg);
    if file.is_empty() {
        return usage("--cert has no file name: expected --cert FILE[:PASSWORD]");
    }
    Ok(Some(ClientCert {
        cert: PathBuf::from(file),
        key: n.key.clone(),
        password,
    }))
}

/// Splits curl's `FILE[:PASSWORD]`: the first colon not escaped with a backslash ends the
/// file name; `\:` and `\\` in it stand for `:` and `\`.
fn split_cert(arg: &str) -> (String, Option<String>) {
    let mut file = String::new();
    let mut chars = arg.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, e @ (':' | '\\'))) => file.push(e),
                Some((_, other)) => {
                    file.push('\\');
                    file.push(other);
                }
                None => file.push('\\'),
            },
            ':' => return (file, Some(arg[i + 1..].to_string())),
            c => file.push(c),
        }
    }
    (file, None)
}

/// Bytes of `s` with every `%XX` (two hex digits) decoded; any other `%` stays as it is.
pub fn percent_decoded(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let hex = |i: usize| b.get(i).and_then(|&c| (c as char).to_digit(16));
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The `Authorization: Basic` token a URL's user information stands for (RFC 7617: the
/// base64 of `user:password`, both percent-decoded first, as curl sends them), or `None`
/// when the URL has none. The password, decoded, and the token are marked secret here:
/// when each URL of a list is checked, so that a transfer sending the header adds no
/// secret. A secret added during a batch made the masking's matcher again for the next
/// line, and 5,000 URLs with passwords under -Z took 21 s of CPU where 0.6 s without.
pub fn userinfo_token(url: &url::Url) -> Option<String> {
    use base64::Engine;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let mut pair = percent_decoded(url.username());
    pair.push(b':');
    pair.extend(percent_decoded(url.password().unwrap_or("")));
    if let Some(password) = url.password() {
        let decoded = String::from_utf8_lossy(&percent_decoded(password)).into_owned();
        crate::redact::mark(crate::redact::Secret::Given(&decoded));
    }
    let token = base64::engine::general_purpose::STANDARD.encode(&pair);
    crate::redact::mark(crate::redact::Secret::Given(&token));
    Some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_entries() {
        let r = resolve("+Example.Test:443:127.0.0.1,[::1]").unwrap();
        assert_eq!(r.host, "example.test");
        assert_eq!(r.port, 443);
        assert_eq!(
            r.addrs,
            vec![
                "127.0.0.1".parse::<IpAddr>().unwrap(),
                "::1".parse().unwrap()
            ]
        );
        assert_eq!(
            resolve("h:80:::1").unwrap().addrs,
            vec!["::1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(resolve("[::1]:80:127.0.0.1").unwrap().host, "::1");
        for bad in [
            "h:80",
            "h::1.2.3.4",
            "h:0:1.2.3.4",
            "h:80:nope",
            ":80:1.2.3.4",
        ] {
            assert!(resolve(bad).is_err(), "{bad}");
        }
        assert!(resolve("-h:80").unwrap_err().0.contains("cache"));
    }

    #[test]
    fn connect_to_entries() {
        let c = connect_to("a.test:443:[::1]:8443").unwrap();
        assert_eq!(c.from_host.as_deref(), Some("a.test"));
        assert_eq!((c.from_port, c.to_port), (Some(443), Some(8443)));
        assert_eq!(c.to_host.as_deref(), Some("::1"));
        let any = connect_to(":::").unwrap();
        assert_eq!(
            any,
            ConnectTo {
                from_host: None,
                from_port: None,
                to_host: None,
                to_port: None
            }
        );
        for bad in ["a:1:b", "a:1:b:2:3", "a:x:b:2", "a:1:b:70000"] {
            assert!(connect_to(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn speed_defaults_follow_curl() {
        let secs = Duration::from_secs;
        assert_eq!(speed(None, None).unwrap(), None);
        assert_eq!(speed(Some(0), Some(secs(5))).unwrap(), None);
        assert_eq!(
            speed(Some(100), None).unwrap(),
            Some(SpeedLimit {
                bytes_per_sec: 100,
                span: secs(30)
            })
        );
        assert_eq!(
            speed(None, Some(secs(5))).unwrap(),
            Some(SpeedLimit {
                bytes_per_sec: 1,
                span: secs(5)
            })
        );
        assert!(speed(Some(1), Some(Duration::ZERO)).is_err());
    }

    #[test]
    fn cert_and_password_split_at_the_first_unescaped_colon() {
        assert_eq!(split_cert("c.pem"), ("c.pem".into(), None));
        assert_eq!(
            split_cert("c.pem:pw:x"),
            ("c.pem".into(), Some("pw:x".into()))
        );
        assert_eq!(
            split_cert(r"C\:\\c.pem:pw"),
            (r"C:\c.pem".into(), Some("pw".into()))
        );
        let cc = ClientCert {
            cert: "c".into(),
            key: None,
            password: Some("s3cret".into()),
        };
        assert!(!format!("{cc:?}").contains("s3cret"));
    }
}
