//! The TLS settings of the agent: which certificates are trusted (`--cacert`, the system's
//! store, or none checked under `-k`), the client certificate (`--cert`/`--key`), and the
//! TLS versions offered (`--tlsv1.3`, `--tls-max 1.2`). Every certificate file is read
//! here, bounded in size; anything wrong with one is a usage error, found before a byte is
//! sent. The one setting that goes through ureq's unversioned API (the crypto provider) is
//! applied by `network`, the wall around that API.

use crate::config::RequestConfig;
use crate::config::UsageError;
use crate::config::network::ClientCert;
use crate::config::protocols::TlsVersions;
use crate::http::network;
use std::path::Path;
use std::sync::Arc;
use ureq::Proxy;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

/// The largest `--cacert` file read, in bytes: a bundle of every public CA is about
/// 200 KB, and `/dev/zero` must not fill the memory.
const MAX_CACERT: u64 = 16 << 20;

/// The largest `--cert` or `--key` file read, in bytes.
const MAX_PEM: u64 = 1 << 20;

/// The TLS settings: no verification under `-k`; else the `--cacert` certificates, with the
/// system's store too when TLS may happen at all (an https `url`, a redirect, which may
/// lead to one, or an https proxy): a plain http request skips reading the store.
pub(crate) fn config(
    req: &RequestConfig,
    url: &url::Url,
    proxy: Option<&Proxy>,
) -> Result<TlsConfig, UsageError> {
    let client = client_cert(req.network.client_cert.as_ref())?;
    let extra = extra_certs(req.cacert.as_deref())?;
    let versions = versions_provider(req.protocols.tls);
    let builder = || network::tls_builder(client.clone(), versions.clone());
    let tls_possible = url.scheme() == "https"
        || req.follow.is_some()
        || proxy.is_some_and(|p| p.protocol() == ureq::ProxyProtocol::Https);
    Ok(if req.insecure {
        builder().disable_verification(true).build()
    } else if tls_possible {
        check_cert_file()?;
        builder().root_certs(root_certs(extra)).build()
    } else {
        builder()
            .root_certs(RootCerts::new_with_certs(&extra))
            .build()
    })
}

/// A crypto provider narrowed to the TLS versions asked for (`--tlsv1.3`, `--tls-max 1.2`),
/// or `None` for rustls's default (1.2 and 1.3). rustls offers only the versions its
/// provider has cipher suites for, so keeping only one version's suites keeps only it.
fn versions_provider(tls: TlsVersions) -> Option<Arc<rustls::crypto::CryptoProvider>> {
    let keep = match (tls.min_1_3, tls.max_1_2) {
        (true, _) => &rustls::version::TLS13,
        (false, true) => &rustls::version::TLS12,
        (false, false) => return None,
    };
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites.retain(|s| s.version() == keep);
    Some(Arc::new(provider))
}

/// The certificates of a PEM text (other blocks, and blocks that do not parse, left out).
fn pem_certificates(pem: &[u8]) -> Vec<Certificate<'static>> {
    ureq::tls::parse_pem(pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect()
}

/// The certificates of the `--cacert` file, at most [`MAX_CACERT`] bytes of PEM (a usage
/// error if it cannot be read, is larger, or holds none).
fn extra_certs(cacert: Option<&Path>) -> Result<Vec<Certificate<'static>>, UsageError> {
    let Some(path) = cacert else {
        return Ok(Vec::new());
    };
    let limit = (MAX_CACERT, "16 MiB", "a PEM file of certificates");
    let pem = read_pem(path, "--cacert", limit)?;
    let certs = pem_certificates(&pem);
    if certs.is_empty() {
        return Err(UsageError(format!(
            "--cacert {} holds no PEM certificate: expected one or more -----BEGIN CERTIFICATE----- blocks",
            path.display()
        )));
    }
    Ok(certs)
}

/// `SSL_CERT_FILE`, which the system's store is read from when it is set: one that is not
/// a regular file (`/dev/zero`, a FIFO nobody writes to) or is larger than `--cacert`'s
/// bound is a usage error, as such a `--cacert` is (the store, `files::certs`, would only
/// pass it over with a warning, and the user named it). One that does not exist is left to
/// the store, which then has none of its certificates.
fn check_cert_file() -> Result<(), UsageError> {
    let Some(path) = std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let path = Path::new(&path);
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if !meta.is_file() {
        return Err(UsageError(format!(
            "SSL_CERT_FILE {} is not a regular file: expected a PEM file of CA certificates",
            path.display()
        )));
    }
    if meta.len() > MAX_CACERT {
        return Err(UsageError(format!(
            "SSL_CERT_FILE {} is larger than 16 MiB: expected a PEM file of CA certificates",
            path.display()
        )));
    }
    Ok(())
}

/// The system's trusted certificates plus the extra ones. Reading the system store costs a
/// few milliseconds, so it is done only when a TLS connection may happen, and once per run
/// (`files::certs`: only regular files, at most 16 MiB each and 64 MiB a folder; what is
/// left unread is said once, by the session). Without a system store (no `SSL_CERT_FILE`,
/// `SSL_CERT_DIR` or `/etc/ssl/certs`), only `--cacert` is trusted, as with curl: no copy of
/// the public roots is built in (it would cost 64 KB of binary, and go stale).
fn root_certs(extra: Vec<Certificate<'static>>) -> RootCerts {
    let mut certs: Vec<Certificate<'static>> = crate::files::certs::system()
        .certs
        .iter()
        .map(|c| Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    certs.extend(extra);
    RootCerts::Specific(Arc::new(certs))
}

/// The `--cert` chain and key, read from their PEM files: a usage error when one cannot
/// be read, holds no certificate or key, or the key is encrypted. The password is never
/// named.
fn client_cert(spec: Option<&ClientCert>) -> Result<Option<ureq::tls::ClientCert>, UsageError> {
    let Some(spec) = spec else {
        return Ok(None);
    };
    let cert_pem = read_pem(&spec.cert, "--cert", PEM_LIMIT)?;
    let certs = pem_certificates(&cert_pem);
    if certs.is_empty() {
        return Err(UsageError(format!(
            "--cert {} holds no PEM certificate: expected a -----BEGIN CERTIFICATE----- block (convert DER or P12 with openssl)",
            spec.cert.display()
        )));
    }
    let (key_path, flag) = match &spec.key {
        Some(k) => (k.as_path(), "--key"),
        None => (spec.cert.as_path(), "--cert"),
    };
    let key_pem = match &spec.key {
        Some(k) => read_pem(k, "--key", PEM_LIMIT)?,
        None => cert_pem.clone(),
    };
    let text = String::from_utf8_lossy(&key_pem);
    if text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(UsageError(format!(
            "{flag} {}: an encrypted private key is not supported; decrypt it with openssl pkey -in KEY -out KEY.pem (and keep that file private)",
            key_path.display()
        )));
    }
    let key = ureq::tls::parse_pem(&key_pem).find_map(|i| match i {
        Ok(PemItem::PrivateKey(k)) => Some(k),
        _ => None,
    });
    let Some(key) = key else {
        let hint = if spec.key.is_none() {
            " (or name it with --key FILE)"
        } else {
            ""
        };
        return Err(UsageError(format!(
            "{flag} {} holds no PEM private key{hint}: expected a -----BEGIN PRIVATE KEY----- block",
            key_path.display()
        )));
    };
    Ok(Some(ureq::tls::ClientCert::new_with_certs(&certs, key)))
}

/// The limit on a `--cert` or `--key` file, as [`read_pem`] takes it.
const PEM_LIMIT: (u64, &str, &str) = (MAX_PEM, "1 MiB", "a PEM file");

/// The PEM file `path`, given by `flag`, of at most `limit.0` bytes: a usage error when it
/// cannot be read or is larger (saying the size, `limit.1`, and what was expected,
/// `limit.2`).
fn read_pem(path: &Path, flag: &str, limit: (u64, &str, &str)) -> Result<Vec<u8>, UsageError> {
    let (max, size, expected) = limit;
    std::fs::File::open(path)
        .and_then(|f| crate::files::read_bounded(f, max))
        .map_err(|e| UsageError(format!("cannot read {flag} {}: {e}", path.display())))?
        .ok_or_else(|| {
            UsageError(format!(
                "{flag} {} is larger than {size}: expected {expected}",
                path.display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cacert_must_hold_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let err = extra_certs(Some(&path)).map(|c| c.len()).unwrap_err();
        assert!(err.0.contains("holds no PEM certificate"), "{}", err.0);
        let missing = extra_certs(Some(&dir.path().join("none"))).map(|c| c.len());
        assert!(missing.unwrap_err().0.starts_with("cannot read --cacert"));
        assert_eq!(extra_certs(None).map(|c| c.len()).ok(), Some(0));
    }

    #[test]
    fn unusable_cert_files_are_usage_errors_that_never_name_the_password() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("c.pem");
        std::fs::write(
            &cert,
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
        )
        .unwrap();
        let spec = ClientCert {
            cert: cert.clone(),
            key: Some(cert.clone()),
            password: Some("s3cret".into()),
        };
        let e = client_cert(Some(&spec)).map(|_| ()).unwrap_err();
        assert!(e.0.contains("holds no PEM certificate"), "{}", e.0);
        let missing = ClientCert {
            cert: dir.path().join("none"),
            ..spec
        };
        let e = client_cert(Some(&missing)).map(|_| ()).unwrap_err();
        assert!(
            e.0.starts_with("cannot read --cert") && !e.0.contains("s3cret"),
            "{}",
            e.0
        );
    }
}
