//! Which proxy a request goes through, as curl chooses it: `-x` first, else the environment
//! (`https_proxy`/`HTTPS_PROXY` for https, lower-case `http_proxy` only for http, as curl
//! does against the httpoxy attack, then `ALL_PROXY`), unless the host is on the no-proxy
//! list (`--noproxy`, else `NO_PROXY`). Pure: the environment is passed in.

use std::net::IpAddr;

/// Whether `host` matches a no-proxy list: `*`; for a name, the name itself or a domain
/// suffix (`example.test` and `.example.test` both match `api.example.test`); for an IP
/// address, the address itself or a CIDR block (`127.0.0.0/8`, `::1`, `fd00::/8`).
fn bypassed(host: &str, list: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let ip = host.parse::<IpAddr>().ok();
    list.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            let entry = entry
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_ascii_lowercase();
            match ip {
                Some(addr) => in_block(addr, &entry),
                None => {
                    let entry = entry.trim_start_matches('.');
                    host == entry || host.ends_with(&format!(".{entry}"))
                }
            }
        })
}

/// Whether `addr` is `entry` (an address) or inside it (a CIDR block).
fn in_block(addr: IpAddr, entry: &str) -> bool {
    let (net, bits) = match entry.split_once('/') {
        Some((n, b)) => (n, b.parse::<u32>().ok()),
        None => (entry, None),
    };
    let Ok(net) = net.parse::<IpAddr>() else {
        return false;
    };
    match (addr, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => prefix_match(
            u128::from(u32::from(a)),
            u128::from(u32::from(n)),
            bits.unwrap_or(32),
            32,
        ),
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            prefix_match(u128::from(a), u128::from(n), bits.unwrap_or(128), 128)
        }
        _ => false,
    }
}

/// Whether the first `bits` of `a` and `n`, addresses `width` bits wide (32 or 128), are
/// the same: `n/bits` in CIDR notation (RFC 4632 section 3.1, RFC 4291 section 2.3). A
/// prefix longer than the address matches nothing.
fn prefix_match(a: u128, n: u128, bits: u32, width: u32) -> bool {
    if bits > width {
        return false;
    }
    let shift = width - bits;
    shift >= 128 || (a >> shift) == (n >> shift)
}

/// The proxy URL for a request to `scheme://host`, or None for a direct connection.
pub fn choose(
    scheme: &str,
    host: &str,
    flag_proxy: Option<&str>,
    flag_noproxy: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let first = |names: &[&str]| names.iter().find_map(|n| env(n).filter(|v| !v.is_empty()));
    let no_proxy = flag_noproxy
        .map(str::to_string)
        .or_else(|| first(&["NO_PROXY", "no_proxy"]));
    if no_proxy.is_some_and(|list| bypassed(host, &list)) {
        return None;
    }
    if let Some(p) = flag_proxy {
        return Some(p.to_string());
    }
    let by_scheme: &[&str] = if scheme == "https" {
        &["https_proxy", "HTTPS_PROXY"]
    } else {
        &["http_proxy"]
    };
    first(by_scheme).or_else(|| first(&["ALL_PROXY", "all_proxy"]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn flag_beats_environment() {
        let e = env(&[("https_proxy", "http://envproxy:1")]);
        assert_eq!(
            choose("https", "h", Some("http://p:8"), None, &e),
            Some("http://p:8".into())
        );
        assert_eq!(
            choose("https", "h", None, None, &e),
            Some("http://envproxy:1".into())
        );
    }

    #[test]
    fn upper_case_http_proxy_is_ignored_like_curl() {
        let e = env(&[("HTTP_PROXY", "http://evil:1")]);
        assert_eq!(choose("http", "h", None, None, &e), None);
        let e = env(&[("http_proxy", "http://ok:1")]);
        assert_eq!(
            choose("http", "h", None, None, &e),
            Some("http://ok:1".into())
        );
    }

    #[test]
    fn no_proxy_lists() {
        assert!(bypassed("api.example.test", "example.test"));
        assert!(bypassed("api.example.test", ".example.test"));
        assert!(bypassed("localhost", "localhost,127.0.0.1"));
        assert!(bypassed("anything", "*"));
        assert!(!bypassed("notexample.test", "example.test"));
        assert!(
            !bypassed("127.0.0.1", "0.0.1"),
            "no suffix matching on addresses"
        );
        assert!(bypassed("127.0.0.1", "127.0.0.0/8"));
        assert!(!bypassed("10.0.0.1", "127.0.0.0/8"));
        assert!(bypassed("[::1]", "::1"));
        assert!(bypassed("::1", "[::1]"));
        assert!(bypassed("fd00::5", "fd00::/8"));
        let e = env(&[("ALL_PROXY", "http://all:1"), ("NO_PROXY", "internal")]);
        assert_eq!(choose("http", "svc.internal", None, None, &e), None);
        assert_eq!(
            choose("http", "svc.internal", None, Some(""), &e),
            Some("http://all:1".into())
        );
    }
}
