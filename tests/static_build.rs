//! The static build (`cargo build --release --target x86_64-unknown-linux-musl`) in an empty
//! root, as a `FROM scratch` image runs it: a folder holding only the binary and what the
//! case needs, entered with `chroot DIR /retry-http ...`. No /tmp, no /etc, no /dev, no
//! loader, no NSS, an empty environment.
//!
//! The binary is built here (once, through cargo, which does nothing when it is up to date),
//! so `cargo test` alone checks it and never skips: the musl target
//! (`rustup target add x86_64-unknown-linux-musl`) and Debian's `musl-tools` (the C in ring)
//! must be there, `dnsmasq` (Debian's `dnsmasq-base`) for the resolver's case, and the tests
//! must run as root (chroot). A missing one fails the test and names it.
//!
//! The cases: `--version`; a GET by address; https trusting a CA given by `--cacert`,
//! `SSL_CERT_FILE`, `SSL_CERT_DIR`, or `/etc/ssl/certs/ca-certificates.crt` in the root (and
//! refused without one); a name from the root's `/etc/hosts`, and from a DNS server on
//! loopback named by its `/etc/resolv.conf`; a small body to stdout with no /tmp (and a body
//! over 1 MiB failing clearly there); a refused connection's exit status.

#[allow(dead_code)]
#[path = "support/scripted.rs"]
mod scripted;

// The reading of a run's output and a closed port.
#[allow(dead_code, unused_imports)]
#[path = "it/common.rs"]
mod common;

// The everyday TLS server only.
#[allow(dead_code)]
#[path = "support/tls.rs"]
mod tls_support;

use common::{closed_port, code, stderr};
use scripted::{Server, Step};
use std::net::{Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tls_support::tls_server;

/// The musl target the static build is made for.
const TARGET: &str = "x86_64-unknown-linux-musl";

/// The static binary, built once for all the tests of this file.
fn static_binary() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_static)
}

/// The static binary copied once into the temporary folder's file system (so that each
/// root can link to it), long before any test runs it.
fn staged() -> &'static Path {
    static STAGED: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = STAGED.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("retry-http");
        std::fs::copy(static_binary(), &path).expect("the binary copied");
        (dir, path)
    });
    path
}

/// Runs the static build's command (docs/install.md) through cargo (JSON messages, so the
/// binary's path is cargo's own word, whatever the target folder) and returns the
/// executable it names.
fn build_static() -> PathBuf {
    build_release(Some(TARGET))
}

/// `cargo build --release` (for `target`, else the host's): the executable built.
fn build_release(target: Option<&str>) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    // What cargo tells this test about the package is no setting of the build: ring's build
    // script reruns when one changes (CARGO_PKG_NAME, ...), and then ring, rustls and ureq
    // would be built again here and again by the next plain `cargo build`.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let told = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_BIN_",
            "CARGO_CRATE_",
        ];
        let told = told.iter().any(|p| name.starts_with(p))
            || ["CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"].contains(&&*name);
        if told {
            command.env_remove(&*name);
        }
    }
    command.args(["build", "--release"]);
    if let Some(t) = target {
        command.args(["--target", t]);
    }
    let out = command
        .args(["--bin", "retry-http", "--message-format=json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "the static build failed: it needs `rustup target add {TARGET}` and Debian's musl-tools"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|m| m["executable"].as_str().map(PathBuf::from))
        .next_back()
        .expect("cargo named the built executable")
}

/// An empty root holding only the static binary, at `/retry-http`.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new() -> Root {
        let dir = tempfile::tempdir().expect("a folder");
        let inside = dir.path().join("retry-http");
        // A hard link to one copy made once: a copy per root would be open for writing while
        // another test's thread forks, and a child holding it open until its exec makes
        // this root's exec fail with "Text file busy" (exit 126).
        if std::fs::hard_link(staged(), &inside).is_err() {
            std::fs::copy(staged(), &inside).expect("the binary copied");
        }
        Root { dir }
    }

    /// Writes `text` at `path` inside the root (an absolute path there), making its folders.
    fn put(&self, path: &str, text: &str) -> &Root {
        let file = self.dir.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("folders made");
        std::fs::write(file, text).expect("file written");
        self
    }

    /// Runs `/retry-http args` chrooted into the root, with only `env` in its environment.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        assert!(is_root(), "the chroot tests run as root (CI does)");
        let out = Command::new(chroot())
            .arg(self.dir.path())
            .arg("/retry-http")
            .args(args)
            .env_clear()
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .expect("chroot runs");
        let names = self.names();
        assert!(
            names
                .iter()
                .all(|n| ["retry-http", "etc", "ca.pem", "certs"].contains(&n.as_str())),
            "the run left files in the root: {names:?}"
        );
        out
    }

    /// The names at the top of the root.
    fn names(&self) -> Vec<String> {
        common::names_in(self.dir.path())
    }
}

/// Whether this process runs as root (its real user id, as /proc tells it).
fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0")
}

/// The chroot command (coreutils), found without a PATH lookup in the cleared environment.
fn chroot() -> &'static str {
    ["/usr/sbin/chroot", "/usr/bin/chroot", "/sbin/chroot"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("chroot (coreutils) is installed")
}

#[test]
fn the_static_binary_has_no_interpreter_and_no_shared_library() {
    let out = Command::new("readelf")
        .args(["--dynamic", "--program-headers"])
        .arg(static_binary())
        .output()
        .expect("readelf (binutils) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("(NEEDED)"),
        "shared libraries needed:\n{text}"
    );
    assert!(!text.contains("INTERP"), "an interpreter:\n{text}");
    let size = std::fs::metadata(static_binary())
        .expect("the binary")
        .len();
    assert!(
        size <= 4 << 20,
        "the static binary is {size} bytes, over 4 MiB"
    );
}

#[test]
fn version_runs_in_an_empty_root() {
    let out = Root::new().run(&["--version"], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("retry-http "), "{text}");
}

/// A GET by address, its small body to stdout: the root has no /tmp, and the run after a
/// 503 writes only the final body; `-i` and `-w` need no temporary folder either.
#[test]
fn a_get_by_address_writes_its_body_with_no_tmp() {
    let root = Root::new();
    let s = Server::start(vec![
        Step::status(503, "busy"),
        Step::status(200, "healthy"),
    ])
    .expect("a server");
    let out = root.run(&["--base", "1ms", &s.url("/health")], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"healthy");
    assert_eq!(s.requests().len(), 2);
    assert!(!root.dir.path().join("tmp").exists());

    let s = Server::start(vec![Step::status(200, "ok")]).expect("a server");
    let out = root.run(&["-i", "-w", "|%{http_code}", &s.url("/")], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("HTTP/1.1 200") && text.ends_with("\r\n\r\nok|200"),
        "{text}"
    );
}

/// A batch on the static build: its workers allocate from mimalloc, switched to before they
/// start, while what was allocated before (the command line, the configuration) goes back to
/// musl's malloc. Twelve transfers under `-Z`, one retried after a 503, write every body.
#[test]
fn a_parallel_batch_runs_on_the_static_build() {
    let root = Root::new();
    let body = vec![b'x'; 64 << 10];
    let mut script = vec![Step::status(503, "busy")];
    script.extend((0..12).map(|_| Step::Respond {
        status: 200,
        headers: vec![],
        body: body.clone(),
    }));
    let s = Server::start(script).expect("a server");
    let urls: Vec<String> = (0..12).map(|i| s.url(&format!("/part{i}"))).collect();
    let mut args = vec!["-Z", "--base", "1ms"];
    args.extend(urls.iter().map(String::as_str));
    let out = root.run(&args, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout.len(), 12 * body.len(), "{}", stderr(&out));
    assert!(out.stdout.iter().all(|&b| b == b'x'));
    assert_eq!(s.requests().len(), 13);
}

/// README's container probe as it is written (`--health-exit -s -o /dev/null ...`) in a root
/// with no /dev: `/dev/null` is read as "throw the body away", never a file to make, so a
/// healthy service is 0 and a sick one 1.
#[test]
fn the_container_probe_runs_in_a_root_with_no_dev() {
    let probe = |url: &str| {
        let root = Root::new();
        let args = [
            "--health-exit",
            "-s",
            "-o",
            "/dev/null",
            "--attempts",
            "3",
            "--base",
            "10ms",
            "--deadline",
            "4s",
            url,
        ];
        let out = root.run(&args, &[]);
        assert!(!root.dir.path().join("dev").exists(), "a /dev was made");
        out
    };
    let healthy = Server::start(vec![Step::status(200, "ok")]).expect("a server");
    let out = probe(&healthy.url("/health"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "-s: {out:?}"
    );
    let sick = Server::start(vec![Step::status(503, "down"); 3]).expect("a server");
    let out = probe(&sick.url("/health"));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(sick.requests().len(), 3);
}

/// `-D /dev/null` with no /dev throws the head away as `-o /dev/null` throws the body:
/// curl's probe `-s -o /dev/null -D /dev/null` runs in a root with no /dev, rather than
/// being refused because the folder /dev does not exist.
#[test]
fn dev_null_takes_the_head_in_a_root_with_no_dev() {
    let s = Server::start(vec![Step::status(200, "ok")]).expect("a server");
    let root = Root::new();
    let url = s.url("/health");
    let out = root.run(&["-s", "-o", "/dev/null", "-D", "/dev/null", &url], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!root.dir.path().join("dev").exists(), "a /dev was made");
    assert_eq!(s.requests().len(), 1);
}

/// Past 1 MiB the body needs a temporary file: with no /tmp the run fails (exit 1) and
/// says what to do, writing nothing to stdout.
#[test]
fn a_large_body_with_no_tmp_fails_and_says_why() {
    let s = Server::start(vec![Step::Generate { len: 2 << 20 }]).expect("a server");
    let out = Root::new().run(&[&s.url("/")], &[]);
    let err = stderr(&out);
    assert_eq!(code(&out), 1, "{err}");
    assert!(
        err.contains("over 1 MiB") && err.contains("TMPDIR"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// A request body over 1 MiB is held in a temporary file too: with no /tmp the run says
/// that (exit 2, nothing sent), not that the body file, which is there, is missing.
#[test]
fn a_large_request_body_with_no_tmp_says_why() {
    let s = Server::start(vec![Step::status(200, "ok")]).expect("a server");
    let root = Root::new();
    root.put("/etc/body", &"x".repeat(2 << 20));
    let out = root.run(&["-T", "/etc/body", "-o", "/etc/out", &s.url("/")], &[]);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("cannot make a temporary file in /tmp") && err.contains("TMPDIR"),
        "{err}"
    );
    assert!(!err.contains("/etc/body: No such file"), "{err}");
    assert!(s.requests().is_empty());
}

/// A connection refused: retried (nothing was sent), then exit 4 (attempts exhausted), the
/// documented code of a retryable failure that lasts.
#[test]
fn a_refused_connection_exits_with_its_code() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let out = Root::new().run(&["--attempts", "2", "--base", "1ms", &url], &[]);
    let err = stderr(&out);
    assert_eq!(code(&out), 4, "{err}");
    assert!(err.contains("connection refused"), "{err}");
}

/// https in an empty root: the server's CA trusted from `--cacert`, `SSL_CERT_FILE`,
/// `SSL_CERT_DIR`, or the root's `/etc/ssl/certs/ca-certificates.crt` (Debian's bundle,
/// where a scratch image copies it); with none of them the certificate is refused (exit 6).
#[test]
fn https_trusts_a_ca_from_each_convention_of_a_scratch_image() {
    let server = tls_server("127.0.0.1", b"secure", "");
    let (url, pem) = (server.url, server.cert_pem);
    /// Where the CA is put in the root, the flags and the environment that name it.
    type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case; 4] = [
        ("/ca.pem", &["--cacert", "/ca.pem"], &[]),
        ("/ca.pem", &[], &[("SSL_CERT_FILE", "/ca.pem")]),
        ("/certs/ca.pem", &[], &[("SSL_CERT_DIR", "/certs")]),
        ("/etc/ssl/certs/ca-certificates.crt", &[], &[]),
    ];
    for (file, args, env) in cases {
        let root = Root::new();
        root.put(file, &pem);
        let out = root.run(&[args, &[url.as_str()]].concat(), env);
        assert_eq!(code(&out), 0, "{file} {args:?} {env:?}: {}", stderr(&out));
        assert_eq!(out.stdout, b"secure", "{file}");
    }
    let out = Root::new().run(&[&url], &[]);
    let err = stderr(&out);
    assert_eq!(code(&out), 6, "{err}");
    assert!(err.contains("certificate"), "{err}");
}

/// A name from the root's /etc/hosts, with no NSS (musl reads the file itself).
#[test]
fn a_name_resolves_from_the_roots_etc_hosts() {
    let s = Server::start(vec![Step::status(200, "by name")]).expect("a server");
    let url = s.url("/").replace("127.0.0.1", "health.test");
    let root = Root::new();
    // With no /etc/hosts nor /etc/resolv.conf, musl asks 127.0.0.1:53, where nothing
    // answers: the deadline ends the wait.
    let out = root.run(&["--attempts", "1", "--deadline", "1s", &url], &[]);
    assert_ne!(
        code(&out),
        0,
        "resolved with no /etc/hosts: {}",
        stderr(&out)
    );
    root.put("/etc/hosts", "127.0.0.1 localhost\n127.0.0.1 health.test\n");
    let out = root.run(&[&url], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"by name");
}

/// `localhost` with no /etc/hosts and no /etc/resolv.conf: loopback, looked up nowhere (musl
/// would ask 127.0.0.1:53, where nothing answers, and wait for its timeout).
#[test]
fn localhost_works_with_no_hosts_file() {
    let s = Server::start(vec![Step::status(200, "local")]).expect("a server");
    let url = s.url("/").replace("127.0.0.1", "localhost");
    let start = Instant::now();
    let out = Root::new().run(&["--attempts", "1", "--deadline", "3s", &url], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"local");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

/// dnsmasq answering one name on a loopback address of this process's own (musl asks port
/// 53 of the nameservers in /etc/resolv.conf), stopped when dropped.
struct Dns {
    child: Child,
    addr: Ipv4Addr,
}

impl Dns {
    fn start(name: &str) -> Dns {
        let pid = std::process::id();
        let addr = Ipv4Addr::new(127, 53, (pid >> 8) as u8, (pid as u8).max(1));
        let dnsmasq = ["/usr/sbin/dnsmasq", "/usr/bin/dnsmasq"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("dnsmasq (Debian's dnsmasq-base) is installed");
        let child = Command::new(dnsmasq)
            .args([
                "--no-daemon",
                "--port",
                "53",
                "--bind-interfaces",
                "--no-resolv",
            ])
            .args(["--no-hosts", "--conf-file=/dev/null", "--pid-file="])
            .arg(format!("--listen-address={addr}"))
            // The name's A record; its AAAA query (musl asks both) answered with no record
            // rather than refused for want of an upstream server, and every other name
            // under .test answered "no such name": nothing waits for a resolver's timeout.
            .arg(format!("--address=/{name}/127.0.0.1"))
            .arg(format!("--local=/{name}/"))
            .arg("--local=/test/")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dnsmasq starts");
        let mut dns = Dns { child, addr };
        dns.wait_listening();
        dns
    }

    /// Waits until dnsmasq holds its port (a bind of the same address then fails).
    fn wait_listening(&mut self) {
        let until = Instant::now() + Duration::from_secs(30);
        while UdpSocket::bind((self.addr, 53)).is_ok() {
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!("dnsmasq ended ({status}): {err}");
            }
            assert!(Instant::now() < until, "dnsmasq did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Dns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A name from a DNS server on loopback named by the root's /etc/resolv.conf, with no NSS.
#[test]
fn a_name_resolves_through_the_roots_resolv_conf() {
    let dns = Dns::start("name.test");
    let s = Server::start(vec![Step::status(200, "by dns")]).expect("a server");
    let url = s.url("/").replace("127.0.0.1", "name.test");
    let root = Root::new();
    root.put("/etc/resolv.conf", &format!("nameserver {}\n", dns.addr));
    let out = root.run(&[&url], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"by dns");
    let other = s.url("/").replace("127.0.0.1", "other.test");
    let out = root.run(&["--attempts", "1", &other], &[]);
    let err = stderr(&out);
    assert_eq!(
        code(&out),
        4,
        "a name dnsmasq does not know resolved: {err}"
    );
    assert!(err.contains("DNS failure"), "{err}");
}

/// A DNS server that never answers, named by the root's /etc/resolv.conf: the lookup is cut
/// by `--connect-timeout`, the run ends by its deadline, and the line says it was the name's
/// lookup that did not finish (not a connection to the server, which was never tried).
#[test]
fn a_silent_dns_server_is_named_as_such_and_the_deadline_holds() {
    let pid = std::process::id();
    let addr = Ipv4Addr::new(127, 54, (pid >> 8) as u8, (pid as u8).max(1));
    let _silent = UdpSocket::bind((addr, 53)).expect("a UDP socket on port 53 (as root)");
    let root = Root::new();
    root.put("/etc/resolv.conf", &format!("nameserver {addr}\n"));
    let started = Instant::now();
    let out = root.run(
        &[
            "--connect-timeout",
            "1s",
            "--attempts",
            "1",
            "--deadline",
            "3s",
            "http://quiet.test/",
        ],
        &[],
    );
    let took = started.elapsed();
    let err = stderr(&out);
    assert_eq!(code(&out), 4, "{err}");
    assert!(err.contains("lookup did not finish"), "{err}");
    // The deadline is 3 s; what a loaded machine adds to starting and ending the process.
    assert!(took < Duration::from_secs(10), "{took:?}: {err}");
}

/// The line of `page` that holds `marker`.
fn line_of<'p>(page: &'p str, marker: &str) -> &'p str {
    page.lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("the manual no longer says {marker:?}"))
}

/// The byte counts in `line`, in order: each number (commas allowed) before " bytes".
fn byte_counts(line: &str) -> Vec<f64> {
    line.match_indices(" bytes")
        .filter_map(|(at, _)| {
            let before = &line[..at];
            let start = before
                .rfind(|c: char| !(c.is_ascii_digit() || c == ','))
                .map_or(0, |i| i + 1);
            before[start..].replace(',', "").parse().ok()
        })
        .collect()
}

/// The number of MiB `line` gives after `marker` (`3.4` of "About 3.4 MiB").
fn mib_after(line: &str, marker: &str) -> f64 {
    let rest = &line[line.find(marker).expect("the marker") + marker.len()..];
    let number: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    number.parse::<f64>().expect("a number of MiB") * f64::from(1 << 20)
}

/// The sizes docs/install.md and docs/performance.md give for the release builds, static
/// (README's command) and dynamic (`cargo build --release`), are the builds' own, within 2%
/// (a page rounds to 0.01 or 0.1 MiB): a change that grows the binary updates the pages.
#[test]
fn the_manual_gives_the_sizes_of_the_release_builds() {
    let size = |p: &Path| std::fs::metadata(p).expect("the binary").len() as f64;
    let (fixed, dynamic) = (size(static_binary()), size(&build_release(None)));
    let page = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("docs")
                .join(name),
        )
        .expect("the page")
    };
    let (install, performance) = (page("install.md"), page("performance.md"));
    let about = line_of(&install, "mappings are still randomised). About");
    let beside = byte_counts(line_of(&performance, "| stripped size (today's build) |"));
    let today = line_of(&performance, "| stripped release binary |");
    let floor = line_of(&performance, "| stripped binary |");
    let said = [
        (
            "install.md, the static binary",
            mib_after(about, "About"),
            fixed,
        ),
        ("performance.md, static beside dynamic", beside[0], fixed),
        ("performance.md, dynamic beside static", beside[1], dynamic),
        (
            "performance.md, the release binary today",
            byte_counts(today)[0],
            dynamic,
        ),
        (
            "performance.md, today in MiB",
            mib_after(today, "| stripped release binary |"),
            dynamic,
        ),
        (
            "performance.md, beside the floor",
            byte_counts(floor)[0],
            dynamic,
        ),
    ];
    let off: Vec<String> = said
        .iter()
        .filter(|(_, page, real)| (page - real).abs() > real * 0.02)
        .map(|(what, page, real)| format!("{what}: {page:.0} bytes, the build {real:.0}"))
        .collect();
    assert!(off.is_empty(), "{}", off.join("\n"));
}
