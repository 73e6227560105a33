//! The system's certificate folders, read within bounds (docs/tls.md, "The system's
//! store"): `SSL_CERT_DIR` naming a folder that holds the server's CA through a link, another
//! valid CA, a file over 16 MiB, a FIFO no one writes to, a folder, a link to nothing, and
//! files that together pass 64 MiB. https to a loopback server that CA signed works, the
//! run does not wait on the FIFO, and one warning line (under `-s` too, once for a run of
//! several URLs) names the files left unread. (tests/memory.rs: the memory it costs.)

use crate::common::*;
use crate::tls_support::{self, Ca};
use std::path::Path;
use std::time::Duration;

/// A TLS server on loopback answering every request 200 "secure", its certificate for
/// `localhost` signed by `ca`; its port.
fn serve(ca: &Ca) -> u16 {
    let cert = ca.issue(&["localhost"]);
    let (port, _) = tls_support::serve(tls_support::config(&cert, &[], None), |tls| {
        tls_support::read_head(tls);
        tls_support::answer(tls, "", b"secure");
    });
    port
}

/// A sparse file of `len` bytes at `path`, beginning with `text`.
fn sparse(path: &Path, text: &str, len: u64) {
    std::fs::write(path, text).expect("write");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    f.set_len(len).expect("set_len");
}

#[test]
fn a_certificate_folder_is_read_within_its_bounds_and_says_what_it_skipped() {
    let ca = Ca::new();
    let ca_pem = ca.pem.clone();
    let port = serve(&ca);
    let elsewhere = tempfile::tempdir().expect("a folder");
    let folder = tempfile::tempdir().expect("a folder");
    let d = folder.path();
    // The server's CA is reached only through a link, as in /etc/ssl/certs.
    std::fs::write(elsewhere.path().join("server-ca.pem"), &ca_pem).expect("write");
    std::os::unix::fs::symlink(elsewhere.path().join("server-ca.pem"), d.join("a-link.0"))
        .expect("a link");
    let other = tls_support::self_signed(&["other"]);
    std::fs::write(d.join("b-other-ca.pem"), other.pem).expect("write");
    // 17 MiB: over the bound of one file.
    sparse(&d.join("c-big.pem"), &ca_pem, 17 << 20);
    let fifo = std::ffi::CString::new(d.join("d-fifo").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path, a plain mode.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::fs::create_dir(d.join("e-java")).expect("a folder");
    std::os::unix::fs::symlink(d.join("nowhere"), d.join("f-dangling.0")).expect("a link");
    // Five files of 15 MiB each: the fifth passes the folder's 64 MiB.
    for i in 0..5 {
        sparse(&d.join(format!("g-filler-{i}.pem")), "", 15 << 20);
    }
    let url = format!("https://localhost:{port}/");
    let second = format!("https://localhost:{port}/again");
    let cases: [(&str, Vec<&str>); 3] = [
        ("plain", vec![url.as_str()]),
        ("-s", vec!["-s", url.as_str()]),
        ("two URLs", vec!["-s", url.as_str(), second.as_str()]),
    ];
    for (what, args) in cases {
        let mut cmd = command();
        cmd.env("SSL_CERT_DIR", d)
            .args(["--deadline", "20s"])
            .args(&args)
            .timeout(Duration::from_secs(40));
        let t = std::time::Instant::now();
        let out = cmd.output().expect("the binary runs");
        let took = t.elapsed();
        let err = stderr(&out);
        assert_eq!(code(&out), 0, "{what}: {err}");
        assert!(took < Duration::from_secs(20), "{what}: took {took:?}");
        let want_body = "secure".repeat(args.len() - usize::from(args[0] == "-s"));
        assert_eq!(String::from_utf8_lossy(&out.stdout), want_body, "{what}");
        let w = warnings(&out);
        assert_eq!(w.len(), 1, "{what}: {err}");
        let line = &w[0];
        let skipped = [
            format!("{} (larger than 16 MiB)", d.join("c-big.pem").display()),
            format!(
                "{} (a FIFO, not a regular file)",
                d.join("d-fifo").display()
            ),
            format!(
                "{} (past the 64 MiB read from its folder)",
                d.join("g-filler-4.pem").display()
            ),
        ];
        assert!(
            line.starts_with(
                "retry-http: warning: the system's certificate store: 3 file(s) not read"
            ) && line.contains("only regular files of at most 16 MiB, 64 MiB a folder")
                && line.ends_with(&skipped.join(", ")),
            "{what}: {line}"
        );
    }
}
