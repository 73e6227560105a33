//! A real `redis-server` (Debian's package) started for one test: its own temporary
//! directory, no persistence, listening on 127.0.0.1 only (TCP, a Unix socket, or TLS with
//! a CA made here by rcgen). The tests of `--state redis://` run against it.
//!
//! Integration tests include it with `#[path = "support/redis_server.rs"] mod redis_server;`,
//! the library's unit tests with `#[path = "../../tests/support/redis_server.rs"]`, so it
//! uses only std, `tempfile`, `rcgen` and `libc`. The server is a child process; dropping
//! the `RedisServer` kills it and removes its directory. A missing `redis-server` is a
//! failure, never a skip.

// Each includer uses only part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long `start*` waits for the server to answer (5 s).
const READY_TIMEOUT: Duration = Duration::from_secs(5);
/// How many ports are tried when the one chosen is taken before redis binds it.
const PORT_ATTEMPTS: usize = 5;

const NOT_INSTALLED: &str = "redis-server is not installed: the tests of --state redis:// \
    need Debian's redis-server (apt-get install redis-server); .ci/run installs it";

/// Which kind of server to start.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Tcp,
    Unix,
    Tls,
}

/// A running `redis-server` child process with its own temporary directory.
pub struct RedisServer {
    child: Child,
    /// The TCP or TLS port; 0 for a Unix socket server.
    port: u16,
    socket: Option<PathBuf>,
    /// The CA's PEM file, for a TLS server.
    ca: Option<PathBuf>,
    /// The `--requirepass` value, if any: `cli` authenticates with it.
    password: Option<String>,
    /// Declared last, so it is removed after `drop` has killed the child.
    dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts a server on TCP 127.0.0.1 at a free port.
    pub fn start() -> RedisServer {
        launch(Kind::Tcp, &[])
    }

    /// Starts a server on TCP 127.0.0.1 at a free port, with extra `redis-server` arguments
    /// (e.g. `["--requirepass", "s3cret"]` or `["--maxmemory", "1mb"]`).
    pub fn start_with(args: &[&str]) -> RedisServer {
        launch(Kind::Tcp, args)
    }

    /// Starts a server listening only on a Unix socket in its temporary directory (`--port 0`).
    pub fn start_unix() -> RedisServer {
        launch(Kind::Unix, &[])
    }

    /// Starts a server speaking only TLS on 127.0.0.1 at a free port (`--port 0`), with a
    /// certificate for `localhost` and 127.0.0.1 signed by a fresh CA (see `ca_file`);
    /// clients need no certificate of their own.
    pub fn start_tls() -> RedisServer {
        launch(Kind::Tls, &[])
    }

    /// The URL a client is given: `redis://127.0.0.1:PORT`, `rediss://localhost:PORT` or
    /// `redis+unix:///path/to/sock`.
    pub fn url(&self) -> String {
        match (&self.socket, &self.ca) {
            (Some(sock), _) => format!("redis+unix://{}", sock.display()),
            (None, Some(_)) => format!("rediss://localhost:{}", self.port),
            (None, None) => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// The TCP (or TLS) port; `None` for a Unix socket server.
    pub fn port(&self) -> Option<u16> {
        self.socket.is_none().then_some(self.port)
    }

    /// The Unix socket's path; `None` for a TCP or TLS server.
    pub fn socket(&self) -> Option<PathBuf> {
        self.socket.clone()
    }

    /// The PEM file of the CA that signed the server's certificate; `None` without TLS.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.ca.clone()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Runs `redis-cli ARGS` against this server (with `-a` if it was started with
    /// `--requirepass`) and returns its stdout, trimmed; panics with its stderr if it fails.
    /// Error replies (`ERR ...`, `NOAUTH ...`) come back as text: redis-cli exits 0 on them.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = self.cli_output(args).expect("cannot run redis-cli");
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let status = out.status;
        assert!(
            status.success(),
            "redis-cli {args:?} ({status}): {stderr}{stdout}"
        );
        stdout
    }

    /// Runs `redis-cli ARGS` against this server; its output, whatever the outcome.
    fn cli_output(&self, args: &[&str]) -> std::io::Result<std::process::Output> {
        let bin = find_binary("redis-cli").unwrap_or_else(|| {
            panic!("redis-cli is not installed: apt-get install redis-tools (.ci/run does)")
        });
        let mut cmd = Command::new(bin);
        cmd.arg("--no-auth-warning");
        if let Some(password) = &self.password {
            cmd.args(["-a", password]);
        }
        if let Some(sock) = &self.socket {
            cmd.arg("-s").arg(sock);
        } else {
            if let Some(ca) = &self.ca {
                cmd.args(["--tls", "--cacert"]).arg(ca);
            }
            cmd.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        }
        cmd.args(args).stdin(Stdio::null()).output()
    }

    /// Whether the server answering is our child, not another test's that took the port.
    fn is_ours(&self) -> bool {
        let want = format!("process_id:{}", self.pid());
        let out = self.cli_output(&["INFO", "server"]);
        out.is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l == want)
        })
    }

    /// Freezes the server (SIGSTOP): the kernel still accepts connections, nothing answers.
    pub fn stop_signal(&self) {
        self.signal(libc::SIGSTOP, "SIGSTOP");
    }

    /// Thaws a server frozen by `stop_signal` (SIGCONT).
    pub fn cont_signal(&self) {
        self.signal(libc::SIGCONT, "SIGCONT");
    }

    fn signal(&self, signal: libc::c_int, name: &str) {
        let pid = libc::pid_t::try_from(self.pid()).expect("a pid fits in pid_t");
        // SAFETY: kill(2) only sends a signal, to our own child, not yet waited for.
        if unsafe { libc::kill(pid, signal) } != 0 {
            let err = std::io::Error::last_os_error();
            panic!("{name} to redis-server {pid}: {err}");
        }
    }

    /// Whether the server answers PING now (NOAUTH counts, for a server with a password);
    /// for TLS, whether its port accepts.
    fn answers(&self) -> bool {
        fn ping(mut stream: impl Read + Write) -> bool {
            let mut reply = [0u8; 64];
            let sent = stream.write_all(b"*1\r\n$4\r\nPING\r\n");
            let n = sent.and_then(|()| stream.read(&mut reply)).unwrap_or(0);
            reply[..n].starts_with(b"+PONG") || reply[..n].starts_with(b"-NOAUTH")
        }
        let timeout = Some(Duration::from_millis(500));
        if let Some(sock) = &self.socket {
            let stream = UnixStream::connect(sock);
            stream.is_ok_and(|s| s.set_read_timeout(timeout).is_ok() && ping(s))
        } else if self.ca.is_some() {
            TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        } else {
            let stream = TcpStream::connect(("127.0.0.1", self.port));
            stream.is_ok_and(|s| s.set_read_timeout(timeout).is_ok() && ping(s))
        }
    }
}

impl Drop for RedisServer {
    /// Kills the server (SIGCONT first, so a stopped one can die) and waits for it.
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: a signal to our own child, not yet waited for; a failure is harmless.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a server of `kind` with extra `args` and waits (up to 5 s) until it answers.
/// A TCP or TLS port is found free by binding port 0 and releasing it; if redis then
/// cannot bind it, another is tried. Panics with the server's log if it does not start.
fn launch(kind: Kind, args: &[&str]) -> RedisServer {
    let bin = find_binary("redis-server").unwrap_or_else(|| panic!("{NOT_INSTALLED}"));
    let pass = args.windows(2).find(|w| w[0] == "--requirepass");
    let password = pass.map(|w| w[1].to_string());
    let mut log = String::new();
    for _ in 0..PORT_ATTEMPTS {
        let dir = tempfile::tempdir().expect("cannot create a temporary directory");
        // Bound and released at once: free now, and very likely still free in a moment.
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr());
        let port = port.expect("no free port on 127.0.0.1").port();
        let mut cmd = Command::new(&bin);
        cmd.args(["--save", "", "--appendonly", "no", "--daemonize", "no"]);
        cmd.args(["--bind", "127.0.0.1", "--protected-mode", "no"]);
        cmd.arg("--dir").arg(dir.path());
        let (mut socket, mut ca) = (None, None);
        match kind {
            Kind::Tcp => {
                cmd.args(["--port", &port.to_string()]);
            }
            Kind::Unix => {
                let sock = dir.path().join("redis.sock");
                cmd.args(["--port", "0", "--unixsocket"]).arg(&sock);
                cmd.args(["--unixsocketperm", "700"]);
                socket = Some(sock);
            }
            Kind::Tls => {
                let ca_file = write_certificates(dir.path());
                cmd.args(["--port", "0", "--tls-port", &port.to_string()]);
                cmd.args(["--tls-auth-clients", "no"]);
                cmd.arg("--tls-ca-cert-file").arg(&ca_file);
                cmd.arg("--tls-cert-file")
                    .arg(dir.path().join("server.pem"));
                cmd.arg("--tls-key-file").arg(dir.path().join("server.key"));
                ca = Some(ca_file);
            }
        }
        // redis logs to stdout, and its fatal configuration errors too: both go to one file.
        let log_path = dir.path().join("redis.log");
        let file = std::fs::File::create(&log_path).expect("cannot create redis.log");
        let file2 = file.try_clone().expect("cannot dup redis.log");
        cmd.args(args).stdin(Stdio::null());
        cmd.stdout(file).stderr(file2);
        let child = cmd.spawn().expect("cannot run redis-server");
        let port = if socket.is_some() { 0 } else { port };
        let password = password.clone();
        let mut server = RedisServer {
            child,
            port,
            socket,
            ca,
            password,
            dir,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        log = loop {
            if server.answers() {
                if server.is_ours() {
                    return server;
                }
                break format!("another redis answers on {port}: Address already in use");
            }
            let exited = matches!(server.child.try_wait(), Ok(Some(_)));
            if exited || Instant::now() >= deadline {
                let why = if exited { "exited" } else { "no answer in 5 s" };
                break format!("redis-server {why}; its log:\n{}", read_log(&log_path));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if kind == Kind::Unix || !log.contains("Address already in use") {
            break;
        }
    }
    panic!("redis-server failed to start: {log}")
}

/// `name` (`redis-server`, `redis-cli`) on PATH, else in /usr/bin or /usr/sbin.
fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain(["/usr/bin".into(), "/usr/sbin".into()]);
    dirs.map(|d| d.join(name)).find(|p| p.is_file())
}

/// Writes a fresh CA (`ca.pem`) and a certificate for `localhost` and 127.0.0.1 signed by
/// it (`server.pem`, key `server.key`) into `dir`; returns the CA's path.
fn write_certificates(dir: &Path) -> PathBuf {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // Not rcgen's default name, which the leaf has: the leaf must not look self-issued.
    let ca_name = &mut ca_params.distinguished_name;
    ca_name.push(rcgen::DnType::CommonName, "retry-http test CA");
    let ca_key = KeyPair::generate().expect("cannot generate the CA key");
    let ca = ca_params.self_signed(&ca_key).expect("signing the CA");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let params = CertificateParams::new(names).expect("valid names");
    let key = KeyPair::generate().expect("cannot generate the server key");
    let cert = params.signed_by(&key, &issuer).expect("signing the leaf");
    let files = [
        ("ca.pem", ca.pem()),
        ("server.pem", cert.pem()),
        ("server.key", key.serialize_pem()),
    ];
    for (name, pem) in files {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap_or_else(|e| panic!("cannot write {name}: {e}"));
    }
    dir.join("ca.pem")
}

fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| format!("(cannot read it: {e})"))
}
