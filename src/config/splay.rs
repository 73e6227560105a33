//! `--splay` as the configuration holds it: the splay asked for, and the name of the host
//! its offset is derived from (`RETRY_HTTP_HOST_ID`, else the host name the kernel gives,
//! as `hostname` prints it). Where the run starts within the splay is `fleet::splay`'s.
//! Asking the kernel for the host name is a system call that reads no file.

use super::{UsageError, usage};
use std::time::Duration;

/// The variable that names the host instead of its host name: for containers that share
/// one, and for tests.
pub const HOST_ID_VAR: &str = "RETRY_HTTP_HOST_ID";

/// Where the name of the host came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostSource {
    /// `RETRY_HTTP_HOST_ID`.
    Variable,
    /// The host name (gethostname(2)).
    HostName,
}

impl HostSource {
    /// How `--explain` and the log name the source.
    pub fn name(self) -> &'static str {
        match self {
            HostSource::Variable => "$RETRY_HTTP_HOST_ID",
            HostSource::HostName => "the host name",
        }
    }

    /// How the JSON log names the source: `RETRY_HTTP_HOST_ID` or `hostname`.
    pub fn key(self) -> &'static str {
        match self {
            HostSource::Variable => HOST_ID_VAR,
            HostSource::HostName => "hostname",
        }
    }
}

/// A splay to wait out before the first attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplayConfig {
    /// The splay asked for (more than zero; `--splay 0` is no splay).
    pub asked: Duration,
    /// What names this host in the offset's derivation.
    pub host: String,
    /// Where `host` came from.
    pub source: HostSource,
}

/// The splay `asked` (`None` or zero: none), with the name of this host. Errors:
/// `RETRY_HTTP_HOST_ID` set but empty (or not text), a host name the kernel does not give.
pub fn build(asked: Option<Duration>) -> Result<Option<SplayConfig>, UsageError> {
    let Some(asked) = asked.filter(|d| !d.is_zero()) else {
        return Ok(None);
    };
    let (host, source) = match std::env::var_os(HOST_ID_VAR) {
        Some(v) => (host_id(v)?, HostSource::Variable),
        None => (host_name()?, HostSource::HostName),
    };
    Ok(Some(SplayConfig {
        asked,
        host,
        source,
    }))
}

/// The value of `RETRY_HTTP_HOST_ID`, checked: an empty one is more likely a variable that
/// was meant to be set (`RETRY_HTTP_HOST_ID=$POD_NAME` with no pod name) than a name, and
/// would give every such host the same offset.
fn host_id(value: std::ffi::OsString) -> Result<String, UsageError> {
    let Ok(id) = value.into_string() else {
        return usage(format!(
            "${HOST_ID_VAR} is not UTF-8 text: expected a name for this host, such as web-17"
        ));
    };
    if id.trim().is_empty() {
        return usage(format!(
            "${HOST_ID_VAR} is empty: expected a name for this host, such as web-17 (unset it to use the host name)"
        ));
    }
    Ok(id)
}

/// The host name, as `hostname` prints it: on Windows the computer's NetBIOS name, from
/// `%COMPUTERNAME%`, which Windows sets for every process.
#[cfg(windows)]
fn host_name() -> Result<String, UsageError> {
    match std::env::var("COMPUTERNAME") {
        Ok(name) if !name.is_empty() => Ok(name),
        _ => usage(format!(
            "--splay: the host name cannot be read (%COMPUTERNAME% is not set): set \
             ${HOST_ID_VAR} to name this host"
        )),
    }
}

/// The host name, as `hostname` prints it (bytes that are not UTF-8 replaced).
#[cfg(unix)]
fn host_name() -> Result<String, UsageError> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for writes of its length; gethostname writes at most that
    // many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let len = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    if rc != 0 || len == 0 {
        return usage(format!(
            "--splay: the host name cannot be read ({}): set ${HOST_ID_VAR} to name this host",
            std::io::Error::last_os_error()
        ));
    }
    Ok(String::from_utf8_lossy(&buf[..len]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_name_is_the_kernels() {
        let name = host_name().expect("a host name");
        assert!(!name.is_empty());
        #[cfg(unix)]
        if let Ok(t) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            assert_eq!(name, t.trim_end());
        }
        #[cfg(windows)]
        assert_eq!(Some(name), std::env::var("COMPUTERNAME").ok());
    }

    #[test]
    fn an_empty_host_id_is_refused() {
        for v in ["", "  ", "\t"] {
            let e = host_id(v.into()).expect_err("empty");
            assert!(e.0.contains("RETRY_HTTP_HOST_ID is empty"), "{}", e.0);
        }
        assert_eq!(host_id("web-17".into()), Ok("web-17".to_string()));
        assert_eq!(build(Some(Duration::ZERO)), Ok(None));
        assert_eq!(build(None), Ok(None));
    }
}
