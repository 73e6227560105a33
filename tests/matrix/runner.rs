//! Runs one combination against its own scripted server, in its own folders, and checks the
//! invariants.

use super::cases::{self, Case, Fault, Method, Mode, Out, Wrap};
use super::oracle;
use crate::scripted::{Recorded, Server, Step};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// What may pass beyond the deadline on a loaded 2-core machine.
const MARGIN: Duration = Duration::from_millis(1500);

/// The run's deadline.
pub fn deadline(c: &Case) -> Duration {
    match c.mode {
        Mode::Tight => Duration::from_millis(800),
        _ => Duration::from_secs(6),
    }
}

/// The secrets given on every command line; none may reach stderr.
pub const SECRETS: [&str; 3] = ["SECRET-abc123", "SECRET-pw", "SECRET-q"];

/// One broken invariant.
pub struct Violation {
    /// 1 to 7 (see the test's doc comment).
    pub invariant: u8,
    /// What was seen.
    pub detail: String,
}

/// What one run produced, with its violations.
pub struct Report {
    pub case: Case,
    pub command: String,
    pub code: Option<i32>,
    pub wall: Duration,
    pub stderr: String,
    pub violations: Vec<Violation>,
}

/// The flags every run gets: short waits, the deadline, secrets; time limits shorter than
/// the deadline (or, for the tight deadline, longer).
fn common_args(c: &Case) -> Vec<String> {
    let limits: &[&str] = match c.mode {
        Mode::Tight => &["--deadline", "800ms", "--stall-timeout", "5s"],
        // A count given: with a deadline and no count, attempts would be unlimited, and a
        // fault that repeats would run to the deadline (5) instead of running out (4).
        _ => &[
            "--attempts",
            "6",
            "--deadline",
            "6s",
            "--timeout",
            "2s",
            // 200 ms once cut a first attempt whose server, in this loaded test process,
            // had not read the request yet (the machine at a load of 12).
            "--stall-timeout",
            "500ms",
            "--max-retry-after",
            "100ms",
        ],
    };
    let mut v = vec!["-v"];
    v.extend(limits);
    v.extend([
        "--connect-timeout",
        "1s",
        "--base",
        "1ms",
        "--cap",
        "5ms",
        "--retry-after-spread",
        "0",
        "-H",
        "Authorization: Bearer SECRET-abc123",
    ]);
    v.into_iter().map(String::from).collect()
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn excerpt(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(&bytes[..bytes.len().min(60)]);
    format!("{} bytes starting {:?}", bytes.len(), s)
}

/// The last lines of stderr, for the report.
pub fn tail(stderr: &str, lines: usize) -> String {
    let v: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("retry-http:"))
        .collect();
    let from = v.len().saturating_sub(lines);
    v[from..]
        .iter()
        .map(|l| {
            let l: String = l.chars().take(300).collect();
            format!("        | {l}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Copies the binary cargo built for this test into `dir`, so that every run uses the same
/// one even if another build replaces `target/debug/retry-http` meanwhile (other worktrees
/// may share the target folder). `RETRY_HTTP_MATRIX_BIN` names another binary to test
/// (an older build, a release build). Returns the copy's path and a line describing it.
pub fn snapshot_binary(dir: &Path) -> (std::path::PathBuf, String) {
    let chosen = std::env::var_os("RETRY_HTTP_MATRIX_BIN");
    let built = chosen
        .as_deref()
        .map_or(Path::new(env!("CARGO_BIN_EXE_retry-http")), Path::new);
    let copy = dir.join("retry-http");
    std::fs::copy(built, &copy).expect("copy the binary");
    let meta = std::fs::metadata(built).expect("binary");
    let age = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .map_or("?".into(), |a| format!("{:.0}s", a.as_secs_f64()));
    let how = format!(
        "binary {} ({} bytes, built {age} ago), copied to {}",
        built.display(),
        meta.len(),
        copy.display()
    );
    (copy, how)
}

/// What one run left behind, for the checks to read.
struct Ran<'a> {
    c: &'a Case,
    script: Vec<Step>,
    requests: Vec<Recorded>,
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    wall: Duration,
    /// The run's working folder, where `-o` writes.
    work: PathBuf,
    /// The run's `TMPDIR`.
    tmp: PathBuf,
    /// The `-o FILE` target (used only by the `-o FILE` outputs).
    target: PathBuf,
}

impl Ran<'_> {
    /// Exit 0.
    fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// "POST /start -> 303, ..." for this run.
    fn seen(&self) -> String {
        seen(&self.requests, &self.script)
    }
}

/// The violations found so far.
#[derive(Default)]
struct Findings(Vec<Violation>);

impl Findings {
    fn bad(&mut self, invariant: u8, detail: String) {
        self.0.push(Violation { invariant, detail });
    }
}

/// Runs the case with the binary `bin` and checks every invariant.
pub fn run(c: &Case, bin: &Path) -> Report {
    let (_closed, closed) = crate::common::closed_socket();
    let script = cases::script(c, closed);
    let server = Server::start(script.clone()).expect("server");
    let root = tempfile::tempdir().expect("tempdir");
    let work = root.path().join("work");
    let tmp = root.path().join("tmp");
    std::fs::create_dir(&work).expect("work dir");
    std::fs::create_dir(&tmp).expect("tmp dir");
    let target = work.join("out.bin");
    let port = if c.wrap == Wrap::Direct && c.fault == Fault::Refused {
        closed
    } else {
        server
            .url("")
            .rsplit(':')
            .next()
            .expect("port")
            .parse()
            .expect("port")
    };
    if c.out == Out::FileExisting {
        std::fs::write(&target, cases::EXISTING).expect("existing file");
    }
    let args = case_args(c, port, &target);
    let (out, wall) = execute(bin, &args, &tmp, &work);
    let requests = server.requests();
    drop(server);
    let ran = Ran {
        c,
        script,
        requests,
        code: out.status.code(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        wall,
        work,
        tmp,
        target,
    };
    let command = format!(
        "TMPDIR={} retry-http {}",
        ran.tmp.display(),
        args.iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let violations = check_all(&ran);
    Report {
        case: *c,
        command,
        code: ran.code,
        wall: ran.wall,
        stderr: ran.stderr,
        violations,
    }
}

/// The whole command line of the case: the common flags, the redirect, compression and
/// output flags, the method's, then the URL (secrets in its userinfo and query).
fn case_args(c: &Case, port: u16, target: &Path) -> Vec<String> {
    let url = format!("http://user:SECRET-pw@127.0.0.1:{port}/start?access_token=SECRET-q");
    let mut args = common_args(c);
    if c.wrap != Wrap::Direct {
        args.push("-L".into());
    }
    if c.compressed {
        args.push("--compressed".into());
    }
    match c.out {
        Out::Stdout => {}
        Out::NoBuffer => args.push("-N".into()),
        Out::FileExisting | Out::FileNew => {
            args.push("-o".into());
            args.push(target.display().to_string());
        }
        Out::DevNull => args.extend(["-o".to_string(), "/dev/null".to_string()]),
    }
    args.extend(c.method.args().iter().map(|s| s.to_string()));
    args.push(url);
    args
}

/// Runs `bin` with `args` in `work`, with `TMPDIR` set to `tmp` and an environment of the
/// developer's cleared (as the integration tests do); returns its output and wall time.
fn execute(bin: &Path, args: &[String], tmp: &Path, work: &Path) -> (Output, Duration) {
    let mut cmd = assert_cmd::Command::from_std(crate::common::command_for(bin));
    cmd.args(args)
        .env("TMPDIR", tmp)
        .current_dir(work)
        .timeout(Duration::from_secs(20));
    let t = Instant::now();
    let out = cmd.output().expect("binary runs");
    (out, t.elapsed())
}

/// Every invariant's check, in order.
fn check_all(ran: &Ran) -> Vec<Violation> {
    let mut f = Findings::default();
    check_at_most_once(ran, &mut f);
    check_output(ran, &mut f);
    check_leftovers(ran, &mut f);
    check_deadline(ran, &mut f);
    check_secrets(ran, &mut f);
    check_exit(ran, &mut f);
    for r in &ran.requests {
        check_request(ran.c, r, &mut f);
    }
    // Each kind of check once per case is enough for the report.
    f.0.dedup_by(|a, b| a.invariant == b.invariant && a.invariant == 7);
    f.0
}

/// Invariant 1: a non-idempotent request processed at most once.
fn check_at_most_once(ran: &Ran, f: &mut Findings) {
    if !oracle::at_most_once(ran.c) {
        return;
    }
    let answered: Vec<(String, bool)> = ran
        .requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let step = ran.script.get(i).or(ran.script.last());
            (
                r.method.clone(),
                step.is_some_and(cases::proves_unprocessed),
            )
        })
        .collect();
    let n = oracle::posts_after_processable(&answered);
    if n > 0 {
        f.bad(
            1,
            format!(
                "{n} POST(s) re-sent after one that may have been processed (no key, no --retry-unsafe); the server saw: {}",
                ran.seen()
            ),
        );
    }
}

/// Invariant 2: the output is the final body once, or nothing; an existing file is
/// untouched on failure.
fn check_output(ran: &Ran, f: &mut Findings) {
    let c = ran.c;
    if c.out != Out::Stdout && c.out != Out::NoBuffer && !ran.stdout.is_empty() {
        f.bad(
            2,
            format!("stdout not empty with -o: {}", excerpt(&ran.stdout)),
        );
    }
    match c.out {
        Out::Stdout => check_spooled_stdout(ran, f),
        Out::NoBuffer => check_streamed_stdout(ran, f),
        Out::FileExisting | Out::FileNew => check_file(ran, f),
        Out::DevNull => {}
    }
}

/// Invariant 2, spooled stdout: exactly the final body on success, nothing on failure.
fn check_spooled_stdout(ran: &Ran, f: &mut Findings) {
    let want = cases::final_body(ran.c);
    if ran.ok() && ran.stdout != want {
        f.bad(
            2,
            format!(
                "exit 0 but stdout is not the final body: {} (want {})",
                excerpt(&ran.stdout),
                excerpt(&want)
            ),
        );
    } else if !ran.ok() && !ran.stdout.is_empty() {
        f.bad(
            2,
            format!("the run failed but stdout holds {}", excerpt(&ran.stdout)),
        );
    }
}

/// Invariant 2, `-N`: exactly the final body on success; on failure a prefix of one 2xx
/// body, and exit 6 once bytes went out.
fn check_streamed_stdout(ran: &Ran, f: &mut Findings) {
    let (c, code, stdout) = (ran.c, ran.code, &ran.stdout);
    if ran.ok() {
        let want = cases::final_body(c);
        if *stdout != want {
            f.bad(
                2,
                format!(
                    "exit 0 but stdout is not exactly the final body: {} (want {})",
                    excerpt(stdout),
                    excerpt(&want)
                ),
            );
        }
        return;
    }
    let of_one = cases::two_xx_bodies()
        .into_iter()
        .any(|(_, b)| b.starts_with(stdout));
    if !of_one {
        f.bad(
            2,
            format!(
                "-N stdout is not a prefix of any one response's body: {}",
                excerpt(stdout)
            ),
        );
    // The deadline passing during the attempt may say 5 instead (see the oracle).
    } else if !stdout.is_empty() && code != Some(6) && !(c.mode == Mode::Tight && code == Some(5)) {
        f.bad(
            2,
            format!(
                "-N: {} bytes reached stdout, then the run failed with exit {}, not 6",
                stdout.len(),
                code.map_or("by signal".into(), |c| c.to_string())
            ),
        );
    }
}

/// Invariant 2, `-o FILE`: the final body on success; on failure an existing file
/// untouched and a new one absent.
fn check_file(ran: &Ran, f: &mut Findings) {
    let want = cases::final_body(ran.c);
    let file = std::fs::read(&ran.target).ok();
    let shown = |file: &Option<Vec<u8>>| file.as_deref().map_or("absent".into(), excerpt);
    if ran.ok() {
        if file.as_deref() != Some(&want[..]) {
            f.bad(
                2,
                format!(
                    "exit 0 but the -o file is {} (want {})",
                    shown(&file),
                    excerpt(&want)
                ),
            );
        }
    } else if ran.c.out == Out::FileExisting && file.as_deref() != Some(cases::EXISTING) {
        f.bad(
            2,
            format!(
                "the run failed and the existing -o file changed: now {}",
                shown(&file)
            ),
        );
    } else if ran.c.out == Out::FileNew && file.is_some() {
        f.bad(
            2,
            format!(
                "the run failed but the new -o file exists: {}",
                file.as_deref().map_or(String::new(), excerpt)
            ),
        );
    }
}

/// Invariant 3: no temporary file left, in the work folder nor in TMPDIR.
fn check_leftovers(ran: &Ran, f: &mut Findings) {
    let c = ran.c;
    let expect_file = c.out == Out::FileExisting || (c.out == Out::FileNew && ran.ok());
    let extra: Vec<String> = listing(&ran.work)
        .into_iter()
        .filter(|n| !(expect_file && n == "out.bin"))
        .collect();
    if !extra.is_empty() {
        f.bad(3, format!("left in the output's folder: {extra:?}"));
    }
    let in_tmp = listing(&ran.tmp);
    if !in_tmp.is_empty() {
        f.bad(3, format!("left in TMPDIR: {in_tmp:?}"));
    }
}

/// Invariant 4: the deadline; a wait that would cross it is not slept at all.
///
/// The wall time, measured here, includes starting the process and reading its output,
/// which a loaded 2-core machine stretches: at a load average of 15 a run that stopped at
/// once took 0.96 s of wall time against the 800 ms deadline, and with the matrix's 16
/// workers on such a machine a run's own clock can pass 800 ms before its first attempt is
/// sent. So "at once" is judged by what the run did, not by a clock: at most one attempt,
/// and no wait slept ("retry in"); the run then ended either by the decision (the
/// Retry-After would end past the deadline) or, when the machine was slow enough that the
/// deadline came first, by the deadline. The wall time is held to the deadline plus
/// [`MARGIN`] like every run's.
fn check_deadline(ran: &Ran, f: &mut Findings) {
    let (c, wall) = (ran.c, ran.wall);
    let limit = deadline(c);
    if wall > limit + MARGIN {
        f.bad(
            4,
            format!(
                "took {:.2}s with --deadline {:.1}s",
                wall.as_secs_f64(),
                limit.as_secs_f64()
            ),
        );
    }
    if c.mode == Mode::Tight && matches!(c.fault, Fault::Status(..)) {
        let attempts = ran
            .stderr
            .lines()
            .filter(|l| l.starts_with("retry-http: attempt "))
            .count();
        let slept = ran.stderr.contains("retry in ");
        if attempts > 1 || slept {
            f.bad(
                4,
                format!(
                    "a Retry-After past the {:.1}s deadline must stop the run at once: {attempts} attempts, a wait slept: {slept} ({:.2}s)",
                    limit.as_secs_f64(),
                    wall.as_secs_f64()
                ),
            );
        }
    }
}

/// Invariant 5: no secret on stderr.
fn check_secrets(ran: &Ran, f: &mut Findings) {
    let leaked: Vec<&str> = SECRETS
        .into_iter()
        .filter(|s| ran.stderr.contains(s))
        .collect();
    if !leaked.is_empty() {
        let line = ran
            .stderr
            .lines()
            .find(|l| leaked.iter().any(|s| l.contains(s)))
            .unwrap_or("")
            .chars()
            .take(300)
            .collect::<String>();
        f.bad(5, format!("{leaked:?} on stderr: {line}"));
    }
}

/// Invariant 6: the exit code the oracle derives from docs/policy.md.
fn check_exit(ran: &Ran, f: &mut Findings) {
    let (codes, why) = oracle::expected_exit(ran.c, !ran.stdout.is_empty());
    if !ran.code.is_some_and(|code| codes.contains(&code)) {
        let want: Vec<String> = codes.iter().map(|c| c.to_string()).collect();
        f.bad(
            6,
            format!(
                "exit {} (expected {}: {why}); the server saw: {}",
                ran.code.map_or("by signal".into(), |c| c.to_string()),
                want.join(" or "),
                ran.seen()
            ),
        );
    }
}

/// Invariant 7, for one request as sent: the method, the body, Accept-Encoding, no Range
/// on an encoded body, the Idempotency-Key on every POST that should carry it.
fn check_request(c: &Case, r: &Recorded, f: &mut Findings) {
    let method_ok = r.method == c.method.wire() || (c.wrap == Wrap::See303 && r.method == "GET");
    if !method_ok {
        f.bad(7, format!("unexpected method {} {}", r.method, r.target));
    }
    let want_body: &[u8] = if r.method == "GET" {
        b""
    } else {
        cases::DATA.as_bytes()
    };
    if r.body != want_body {
        let detail = format!(
            "{} {} carried body {}",
            r.method,
            r.target,
            excerpt(&r.body)
        );
        f.bad(7, detail);
    }
    let ae = r.header("accept-encoding");
    if c.compressed != ae.is_some_and(|v| v.contains("gzip")) || (!c.compressed && ae.is_some()) {
        f.bad(
            7,
            format!(
                "{} {}: Accept-Encoding {ae:?} with --compressed {}",
                r.method, r.target, c.compressed
            ),
        );
    }
    if c.fault == Fault::GzipCut
        && let Some(range) = r.header("range")
    {
        f.bad(
            7,
            format!(
                "{} {} asked Range: {range} of a gzip-encoded body (docs/output.md: not resumed)",
                r.method, r.target
            ),
        );
    }
    if c.method == Method::PostKey
        && r.method == "POST"
        && r.header("idempotency-key") != Some(cases::KEY)
    {
        f.bad(7, format!("POST {} without the Idempotency-Key", r.target));
    }
}

/// "POST /start -> 303, GET /next -> 503, GET /next -> 200".
fn seen(reqs: &[Recorded], script: &[Step]) -> String {
    if reqs.is_empty() {
        return "nothing".into();
    }
    reqs.iter()
        .enumerate()
        .map(|(i, r)| {
            let step = script.get(i).or(script.last());
            let path = r.target.split('?').next().unwrap_or("");
            let range = r
                .header("range")
                .map_or(String::new(), |v| format!(" (Range: {v})"));
            format!(
                "{} {path}{range} -> {}",
                r.method,
                step.map_or("nothing".into(), cases::step_name)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
