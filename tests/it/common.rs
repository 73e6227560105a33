//! Helpers shared by the integration tests: the one way to build a command for the binary
//! (with an environment of the developer's that cannot change a result), running it, and
//! reading its output and the server's record. The fault matrix and the memory test include
//! this file too.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

pub use crate::scripted::{Recorded, Server, Step};

/// Variables outside `RETRY_HTTP_*` that the binary reads and that would change a result:
/// the proxies (curl's names, both cases) and the colour forcing.
const FOREIGN_VARS: [&str; 10] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
    "CLICOLOR_FORCE",
    "CLICOLOR",
];

/// The signals the client handles (see src/process/interrupt.rs). A signal ignored when a
/// process starts stays ignored there, as a shell's `&` job ignores SIGINT and `nohup`
/// SIGHUP: a test runner started that way would pass it on to every client it spawns.
pub const HANDLED_SIGNALS: [i32; 6] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGTERM,
];

/// What the runner does with a signal it ignored: nothing, as before, but a handler (even
/// one that does nothing) is reset to the default action in a program it starts, where an
/// ignored signal would stay ignored.
extern "C" fn do_nothing(_: libc::c_int) {}

/// Makes every [`HANDLED_SIGNALS`] the test process ignores reach its clients at their
/// default action: the ignoring is replaced by a handler that does nothing (so the runner
/// still ignores them). Done once; a `pre_exec` per command would do it too, but makes
/// every spawn a fork of the whole test process instead of a `posix_spawn`.
fn default_signals_for_clients() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in HANDLED_SIGNALS {
            // SAFETY: sigaction reads and writes the structures given; the handler does
            // nothing, which is async-signal-safe.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_IGN
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = do_nothing as *const () as libc::sighandler_t;
                new.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(sig, &new, std::ptr::null_mut());
            }
        }
    });
}

/// `bin` as a command whose environment cannot change a result: every `RETRY_HTTP_*`
/// variable (but [`PORTABLE_SWITCH`], passed on) and every variable of [`FOREIGN_VARS`] removed, `NO_COLOR=1` set, and the
/// [`HANDLED_SIGNALS`] at their default action whatever the runner inherited (a suite run
/// as `cargo test &` once waited for ever on a client that ignored the SIGINT it was sent).
/// A test that wants one of them otherwise sets it on the returned command (after these,
/// so it holds).
pub fn command_for(bin: &Path) -> std::process::Command {
    cleaned(std::process::Command::new(bin))
}

/// `cmd` with the environment and the signals of [`command_for`].
fn cleaned(mut cmd: std::process::Command) -> std::process::Command {
    default_signals_for_clients();
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("RETRY_HTTP_") {
            cmd.env_remove(name);
        }
    }
    for name in FOREIGN_VARS {
        cmd.env_remove(name);
    }
    cmd.env("NO_COLOR", "1");
    // The one variable passed on: the suite run with it takes the portable paths (what
    // macOS runs) in every binary it starts (crates/retry-http-system/src/platform.rs,
    // tests/it/portable.rs).
    if std::env::var_os(PORTABLE_SWITCH).is_some_and(|v| v == "1") {
        cmd.env(PORTABLE_SWITCH, "1");
    }
    cmd
}

/// The variable that makes the debug binary take its portable paths
/// (crates/retry-http-system/src/platform.rs).
pub const PORTABLE_SWITCH: &str = "RETRY_HTTP_TEST_PORTABLE";

/// The binary under test, as [`command_for`] gives it: for tests that spawn it, hand it
/// pipes or send it signals. It is the one cargo built, unless `RETRY_HTTP_BIN_UNDER_TEST`
/// names another file: a build for another machine, such as the aarch64 static binary,
/// started through the emulator that `RETRY_HTTP_BIN_RUNNER` names (a command and its
/// arguments, split on spaces: `qemu-aarch64-static`). `.ci/arm64.sh` runs the smoke tests
/// (`smoke.rs`) that way; other tests may read the test process's own view of the binary
/// (its `/proc` entry, its system calls) and are not meant to run through an emulator.
pub fn std_command() -> std::process::Command {
    let Some(bin) = std::env::var_os("RETRY_HTTP_BIN_UNDER_TEST") else {
        return command_for(Path::new(env!("CARGO_BIN_EXE_retry-http")));
    };
    assert!(
        Path::new(&bin).is_file(),
        "RETRY_HTTP_BIN_UNDER_TEST names no file: {}",
        Path::new(&bin).display()
    );
    let runner = std::env::var("RETRY_HTTP_BIN_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        None => command_for(Path::new(&bin)),
        Some(program) => {
            let mut cmd = std::process::Command::new(program);
            cmd.args(words).arg(bin);
            cleaned(cmd)
        }
    }
}

/// The binary cargo built, as [`command_for`] gives it, with assert_cmd's conveniences.
pub fn command() -> assert_cmd::Command {
    assert_cmd::Command::from_std(std_command())
}

/// Runs the binary with `args`; returns its output and how long it took.
pub fn run(args: &[&str]) -> (Output, Duration) {
    run_with_stdin(args, None)
}

/// Runs the binary with `args`, feeding `stdin` when given.
pub fn run_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> (Output, Duration) {
    let mut cmd = command();
    cmd.args(args).timeout(Duration::from_secs(60));
    if let Some(input) = stdin {
        cmd.write_stdin(input.to_vec());
    }
    let t = Instant::now();
    let out = cmd.output().expect("binary runs");
    (out, t.elapsed())
}

/// The exit code (panics on death by signal, which no test expects).
pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exited normally")
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The warning lines of a text log.
pub fn warnings(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.starts_with("retry-http: warning:"))
        .map(String::from)
        .collect()
}

/// The per-attempt lines of a text log.
pub fn attempt_lines(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.starts_with("retry-http: attempt "))
        .map(String::from)
        .collect()
}

/// JSON log objects of the given type.
pub fn json_lines(out: &Output, kind: &str) -> Vec<serde_json::Value> {
    stderr(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == kind)
        .collect()
}

/// Time between consecutive requests, as the server saw them.
pub fn gaps(reqs: &[Recorded]) -> Vec<Duration> {
    reqs.windows(2)
        .map(|w| w[1].at.duration_since(w[0].at))
        .collect()
}

/// The successes (`column` 1) or retries (2) counted in the budget buckets of a state
/// record (a target's entry of a state file, or the JSON a store holds); panics on a record
/// with no budget.
pub fn counted(record: &serde_json::Value, column: usize) -> u64 {
    record["budget"]
        .as_array()
        .expect("a budget")
        .iter()
        .map(|b| b[column].as_u64().expect("a count"))
        .sum()
}

/// The names in the folder `dir`, sorted (an error reading it panics).
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the folder reads")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// `data` as a gzip stream (flate2's default level), for bodies sent with
/// `Content-Encoding: gzip`.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).expect("gzip writes");
    gz.finish().expect("gzip finishes")
}

/// Fast retry flags, so tests that do not test waiting do not wait.
pub const FAST: [&str; 6] = ["--base", "1ms", "--cap", "5ms", "--retry-after-spread", "0"];

/// `http://127.0.0.1:{port}/` on a [`closed_port`].
pub fn closed_port_url() -> String {
    format!("http://127.0.0.1:{}/", closed_port())
}

/// A loopback port with nothing listening on it, this test process's until it ends.
pub fn closed_port() -> u16 {
    let (socket, port) = closed_socket();
    // Held until the test process ends.
    std::mem::forget(socket);
    port
}

/// A loopback port with nothing listening on it while the socket returned is held: bound
/// but never listening, a connection to it is refused (RST), and the port stays this test
/// process's, so a server another test starts meanwhile cannot be given it (a port bound
/// and then freed was, under load, and the "refused" run got an answer).
pub fn closed_socket() -> (socket2::Socket, u16) {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a socket");
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().expect("an address");
    socket.bind(&any.into()).expect("bind");
    let port = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .expect("addr")
        .port();
    (socket, port)
}

/// Runs the binary with `extra` flags, the fast retry flags, then `url`.
pub fn run_fast(extra: &[&str], url: &str) -> (Output, Duration) {
    let mut args = extra.to_vec();
    args.extend(FAST);
    args.push(url);
    run(&args)
}

/// Runs the binary with stderr on a pseudo-terminal; returns what the terminal showed.
pub fn on_terminal(args: &[&str]) -> (Option<i32>, String) {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors, which we own from here on.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            // No name, terminal settings or size (null: the defaults). macOS's prototype
            // takes mutable pointers where Linux's takes constant ones; a null serves both.
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0);
    let (master, slave) = unsafe {
        (
            <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(master),
            <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(slave),
        )
    };
    let mut child = std_command()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(slave))
        .spawn()
        .unwrap();
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(master);
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO marks the end once the child closed the terminal.
        while let Ok(n) = std::io::Read::read(&mut f, &mut buf) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let status = child.wait().unwrap();
    (status.code(), reader.join().unwrap())
}

/// Reads the next request's head on a connection: its path and its Content-Length (0
/// without one); None once the client has closed the connection. The body is left unread.
pub fn read_head(reader: &mut impl std::io::BufRead) -> Option<(String, usize)> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut length = 0;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    Some((
        line.split_whitespace().nth(1).unwrap_or("/").to_string(),
        length,
    ))
}

/// Listens on a free loopback port and serves each connection with `serve` on a thread of
/// its own, Nagle off (a head and a body written apart must not wait for the client's
/// delayed ACK, 40 ms an answer); returns the port.
pub fn serve_connections(serve: impl Fn(std::net::TcpStream) + Send + Sync + 'static) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let serve = std::sync::Arc::new(serve);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let _ = conn.set_nodelay(true);
            let serve = serve.clone();
            std::thread::spawn(move || serve(conn));
        }
    });
    port
}

/// `judge` over every case, four at a time (each case starts its own servers and short
/// processes; a worker takes the next case as it finishes one), and what it found, in the
/// cases' order.
pub fn judged_four_at_a_time<C: Sync, F: Send>(
    cases: &[C],
    judge: impl Fn(&C) -> Vec<F> + Sync,
) -> Vec<F> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(case) = cases.get(i) else { break };
                    let what = judge(case);
                    found.lock().expect("no worker panicked").push((i, what));
                }
            });
        }
    });
    let mut found = found.into_inner().expect("no worker panicked");
    found.sort_by_key(|(i, _)| *i);
    found.into_iter().flat_map(|(_, what)| what).collect()
}
