//! The request headers the transport adds on its own, and the one place that says which:
//! `Accept-Encoding: gzip` under `--compressed`, `User-Agent: retry-http/VERSION` and
//! `Accept: */*`, each unless the request already carries that header (`-H`, `-A`,
//! `--json`) or `-H 'Name:'` removed it. The transport sends this list and `-v` prints it,
//! so what is shown is what is sent. Pure.

use crate::config::RequestConfig;

/// The User-Agent sent unless `-A` or `-H` says otherwise (RFC 9110 section 10.1.5).
const USER_AGENT: &str = concat!("retry-http/", env!("CARGO_PKG_VERSION"));

/// Which automatic headers a run's requests get.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Automatic {
    /// Headers removed with `-H 'Name:'` (lower case): never added.
    removed: Vec<String>,
    /// `--compressed`: ask for gzip, which the transport decodes (and nothing else).
    compressed: bool,
}

impl Automatic {
    /// The automatic headers of a run with this configuration.
    pub fn new(req: &RequestConfig) -> Self {
        Automatic {
            removed: req.removed.clone(),
            compressed: req.compressed,
        }
    }

    /// The headers added to a request that carries `given`, in the order they are sent and
    /// shown: Accept-Encoding (RFC 9110 section 12.5.3), User-Agent (section 10.1.5), Accept
    /// (section 12.5.1, `*/*`: any media type). A name given or removed (case-insensitive)
    /// is left out.
    pub fn for_request(&self, given: &[(String, String)]) -> Vec<(String, String)> {
        let wanted = [
            ("Accept-Encoding", "gzip", self.compressed),
            ("User-Agent", USER_AGENT, true),
            ("Accept", "*/*", true),
        ];
        wanted
            .into_iter()
            .filter(|&(name, _, on)| on && !self.given(given, name))
            .map(|(name, value, _)| (name.to_string(), value.to_string()))
            .collect()
    }

    /// The User-Agent ureq writes on a CONNECT to a proxy (RFC 9110 section 9.3.6), which a
    /// request's own headers do not reach: ours, unless `-H 'User-Agent:'` removed it.
    pub fn tunnel_user_agent(&self) -> Option<&'static str> {
        (!self.removed.iter().any(|r| r == "user-agent")).then_some(USER_AGENT)
    }

    /// Whether `name` is among `given` (case-insensitive) or was removed.
    fn given(&self, given: &[(String, String)], name: &str) -> bool {
        given.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
            || self.removed.iter().any(|r| r.eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn automatic(removed: &[&str], compressed: bool) -> Automatic {
        Automatic {
            removed: removed.iter().map(|r| r.to_string()).collect(),
            compressed,
        }
    }

    fn names(headers: &[(String, String)]) -> Vec<&str> {
        headers.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn user_agent_and_accept_unless_given_or_removed() {
        let plain = automatic(&[], false).for_request(&[]);
        assert_eq!(
            plain,
            [
                ("User-Agent".to_string(), USER_AGENT.to_string()),
                ("Accept".to_string(), "*/*".to_string())
            ]
        );
        let given = [("user-agent".to_string(), "x".to_string())];
        assert_eq!(
            names(&automatic(&[], false).for_request(&given)),
            ["Accept"]
        );
        let removed = automatic(&["accept"], false).for_request(&[]);
        assert_eq!(names(&removed), ["User-Agent"]);
    }

    #[test]
    fn accept_encoding_only_under_compressed_and_first() {
        let c = automatic(&[], true);
        assert_eq!(
            names(&c.for_request(&[])),
            ["Accept-Encoding", "User-Agent", "Accept"]
        );
        let br = [("Accept-Encoding".to_string(), "br".to_string())];
        assert_eq!(names(&c.for_request(&br)), ["User-Agent", "Accept"]);
        let removed = automatic(&["accept-encoding"], true);
        assert_eq!(names(&removed.for_request(&[])), ["User-Agent", "Accept"]);
    }

    #[test]
    fn a_tunnel_gets_our_user_agent_unless_it_was_removed() {
        assert_eq!(automatic(&[], false).tunnel_user_agent(), Some(USER_AGENT));
        assert_eq!(automatic(&["user-agent"], false).tunnel_user_agent(), None);
        assert!(USER_AGENT.starts_with("retry-http/"));
    }
}
