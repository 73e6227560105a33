//! The exit-code contract: one enum, the single source for `--help`, the man page and README.
//!
//! The outcome is what stopped the attempt loop. Which one applies when several could is
//! decided in one place, `policy::decision`, whose table lists the precedence row by row.
//! Under `--health-exit` every code but 0 leaves the process as 1 (`status`), Docker's rule
//! for a health check; every exit path goes through `status`.
//!
//! `--exit-codes curl` swaps this table for curl's ([`curl_code`]): the outcome and the
//! [`Cause`] of its last attempt give the code curl 7.88 exits with for the same ending
//! (`man curl`, EXIT CODES). The mode is set once, before anything is sent ([`use_mode`]);
//! an [`Exit`] reads it when its code is asked for. `--health-exit` wins over both tables.

/// How a run ended, and the process exit status that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The final response has a status below 400.
    Success,
    /// A local failure: the output cannot be written, the disk is full, an internal error.
    Local,
    /// A flag, value, header or URL is invalid, a body file is missing, or the output's
    /// folder does not exist. Nothing was sent.
    Usage,
    /// A response of 400 or above that is not retried (not in `--retry-on`, or not safe to
    /// replay; to a request with an Idempotency-Key, a 422 whatever `--retry-on` says, and a
    /// 400 unless it names 400: the key makes that replay safe), or a redirect under `-L` not followed because it would send a
    /// non-idempotent request again.
    NonRetryableResponse,
    /// Every attempt failed in a retryable way.
    AttemptsExhausted,
    /// The deadline passed, or the next wait would have crossed it.
    Deadline,
    /// A transport failure that is not retried: TLS verification, a protocol error, or a
    /// request that is not safe to replay.
    NonRetryableTransport,
    /// Refused by the state shared through `--state`: the circuit breaker is open, the retry
    /// budget is spent, a Retry-After another run was told holds past this run's deadline
    /// (before its first attempt), or the store cannot be used and `--state-on-error` is
    /// closed. In a run of several URLs without `--state`, the breaker and the budget the
    /// transfers to one origin share refuse the same way.
    Refused,
    /// Not ready: the attempts ran out, the deadline passed or the next wait could not fit
    /// before it, and the last attempt's answer failed an `--until-*` condition.
    NotReady,
    /// Hung up by SIGHUP: the terminal or the session closed.
    Hangup,
    /// Interrupted by SIGINT.
    Interrupted,
    /// Stopped by SIGUSR1.
    UserSignal1,
    /// Stopped by SIGUSR2.
    UserSignal2,
    /// Stopped by SIGALRM.
    Alarm,
    /// Stopped by SIGTERM.
    Terminated,
}

impl Outcome {
    /// Every outcome, in the order of the exit-code table.
    pub const ALL: [Outcome; 15] = [
        Outcome::Success,
        Outcome::Local,
        Outcome::Usage,
        Outcome::NonRetryableResponse,
        Outcome::AttemptsExhausted,
        Outcome::Deadline,
        Outcome::NonRetryableTransport,
        Outcome::Refused,
        Outcome::NotReady,
        Outcome::Hangup,
        Outcome::Interrupted,
        Outcome::UserSignal1,
        Outcome::UserSignal2,
        Outcome::Alarm,
        Outcome::Terminated,
    ];

    /// The process exit status (0 to 255).
    pub fn code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::Local => 1,
            Outcome::Usage => 2,
            Outcome::NonRetryableResponse => 3,
            Outcome::AttemptsExhausted => 4,
            Outcome::Deadline => 5,
            Outcome::NonRetryableTransport => 6,
            Outcome::Refused => 7,
            Outcome::NotReady => 8,
            Outcome::Hangup => 129,
            Outcome::Interrupted => 130,
            Outcome::UserSignal1 => 138,
            Outcome::UserSignal2 => 140,
            Outcome::Alarm => 142,
            Outcome::Terminated => 143,
        }
    }

    /// A short machine-friendly name, used in the JSON log's `outcome` key.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Local => "local_failure",
            Outcome::Usage => "usage",
            Outcome::NonRetryableResponse => "non_retryable_response",
            Outcome::AttemptsExhausted => "attempts_exhausted",
            Outcome::Deadline => "deadline",
            Outcome::NonRetryableTransport => "non_retryable_transport",
            Outcome::Refused => "refused",
            Outcome::NotReady => "not_ready",
            Outcome::Hangup => "hangup",
            Outcome::Interrupted => "interrupted",
            Outcome::UserSignal1 => "user_signal_1",
            Outcome::UserSignal2 => "user_signal_2",
            Outcome::Alarm => "alarm",
            Outcome::Terminated => "terminated",
        }
    }

    /// A short phrase for the one-line list after `-h` ("attempts exhausted", "SIGTERM").
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Local => "local failure",
            Outcome::Usage => "usage",
            Outcome::NonRetryableResponse => "non-retryable response",
            Outcome::AttemptsExhausted => "attempts exhausted",
            Outcome::Deadline => "deadline",
            Outcome::NonRetryableTransport => "transport",
            Outcome::Refused => "refused by --state",
            Outcome::NotReady => "not ready",
            Outcome::Hangup => "SIGHUP",
            Outcome::Interrupted => "SIGINT",
            Outcome::UserSignal1 => "SIGUSR1",
            Outcome::UserSignal2 => "SIGUSR2",
            Outcome::Alarm => "SIGALRM",
            Outcome::Terminated => "SIGTERM",
        }
    }

    /// How the text log's closing line names the outcome ("deadline reached after 3
    /// attempts ..."); success and usage errors have no such line.
    pub fn summary_phrase(self) -> &'static str {
        match self {
            Outcome::AttemptsExhausted => "attempts exhausted",
            Outcome::Deadline => "deadline reached",
            Outcome::NonRetryableResponse => "non-retryable response",
            Outcome::NonRetryableTransport => "non-retryable failure",
            Outcome::Refused => "refused",
            Outcome::NotReady => "not ready",
            Outcome::Hangup => "hung up (SIGHUP)",
            Outcome::Interrupted => "interrupted",
            Outcome::UserSignal1 => "stopped by SIGUSR1",
            Outcome::UserSignal2 => "stopped by SIGUSR2",
            Outcome::Alarm => "stopped by SIGALRM",
            Outcome::Terminated => "terminated",
            Outcome::Success | Outcome::Local | Outcome::Usage => "failed",
        }
    }

    /// Whether a signal ended the run (the codes above 128).
    pub fn is_signal(self) -> bool {
        self.code() > 128
    }

    /// One line for the exit-code table.
    pub fn meaning(self) -> &'static str {
        match self {
            Outcome::Success => "the final response has status below 400",
            Outcome::Local => {
                "local failure: the output cannot be written, disk full, internal error"
            }
            Outcome::Usage => {
                "usage: invalid flag, value, header, URL, missing body file, output folder or state folder; nothing was sent"
            }
            Outcome::NonRetryableResponse => {
                "non-retryable response: status >= 400 not in --retry-on (with an Idempotency-Key: 422 whatever it says, 400 unless it names it), or not safe to replay (or a redirect that would replay it)"
            }
            Outcome::AttemptsExhausted => {
                "attempts exhausted: every attempt failed in a retryable way"
            }
            Outcome::Refused => {
                "refused by --state: the circuit breaker is open, the retry budget is spent, a Retry-After shared by the runs holds past the deadline, or the store failed under --state-on-error closed (in a run of several URLs, without --state, the breaker and budget its transfers to one origin share)"
            }
            Outcome::Deadline => {
                "deadline: the deadline passed, or the next wait would have crossed it"
            }
            Outcome::NotReady => {
                "not ready: the attempts or the deadline ran out while the last answer failed an --until-* condition"
            }
            Outcome::NonRetryableTransport => {
                "non-retryable transport failure: TLS verification, protocol error, unsafe to replay"
            }
            Outcome::Hangup => "hung up by SIGHUP: the terminal or the session closed",
            Outcome::Interrupted => "interrupted by SIGINT",
            Outcome::UserSignal1 => "stopped by SIGUSR1",
            Outcome::UserSignal2 => "stopped by SIGUSR2",
            Outcome::Alarm => "stopped by SIGALRM",
            Outcome::Terminated => "stopped by SIGTERM",
        }
    }

    /// The codes of the outcomes that are not signals with their labels, comma-separated
    /// ("0 success, 1 local failure, ..."), for the line after `-h`.
    pub fn short_list() -> String {
        let items: Vec<String> = Outcome::ALL
            .iter()
            .filter(|o| !o.is_signal())
            .map(|o| format!("{} {}", o.code(), o.label()))
            .collect();
        items.join(", ")
    }

    /// The exit-code table as plain text, for `--help`.
    pub fn table() -> String {
        let mut out = String::from("Exit status:\n");
        for o in Outcome::ALL {
            out.push_str(&format!("  {:>3}  {}\n", o.code(), o.meaning()));
        }
        out.push_str(&format!("\n{CURL_HEADING}\n"));
        for (code, meaning) in CURL_TABLE {
            out.push_str(&format!("  {code:>3}  {meaning}\n"));
        }
        out
    }
}

/// What introduces [`CURL_TABLE`] wherever it is shown.
pub const CURL_HEADING: &str = "With --exit-codes curl (curl's codes for the same endings; by the last attempt's cause when attempts or the deadline run out; signals as above; --health-exit wins):";

/// Which table the exit status comes from (`--exit-codes`, `RETRY_HTTP_EXIT_CODES`, or `-K`'s
/// `exit-codes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Mode {
    /// This tool's own codes, one per outcome (the default).
    #[default]
    RetryHttp,
    /// curl's codes for the same endings, for scripts written for curl (7.88's).
    Curl,
}

/// What ended a run's last attempt, in curl's words: what [`curl_code`] reads for the
/// outcomes whose code depends on it (attempts exhausted, the deadline, a failure or an
/// answer not retried). The request sorts its failure kinds into these
/// (`policy::decision::cause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// An HTTP answer; `error`: its status is 400 or above (curl's 22 under `-f`, else 0).
    Answer {
        /// The status is 400 or above.
        error: bool,
    },
    /// The deadline ended the run: it cut an attempt in flight, or no attempt was made
    /// (curl's 28, as `-m` gives).
    Deadline,
    /// An attempt's time ran out: `--connect-timeout`, `--max-time`, `--stall-timeout`
    /// (curl's 28).
    Timeout,
    /// The connection was refused, or the network unreachable (curl's 7).
    Refused,
    /// The host name did not resolve (curl's 6).
    NotResolved,
    /// The server's certificate failed verification (curl's 60).
    TlsVerification,
    /// Another TLS failure: the handshake cut or refused (curl's 35).
    Tls,
    /// The connection was reset or closed before the answer was whole (a body cut short
    /// included), or a proxy's tunnel failed (curl's 56).
    Reset,
    /// The output could not be written (curl's 23).
    Write,
    /// More redirects than `--max-redirs` (curl's 47).
    TooManyRedirects,
    /// The body is larger than `--max-filesize` (curl's 63).
    TooLarge,
    /// The reply is not HTTP as expected (curl's 8, "weird server reply").
    Protocol,
    /// `-C -`: the server did not continue where the file ends (curl's 33, "range error").
    NotResumable,
}

impl Cause {
    /// Every cause (an answer twice: below 400 and from 400).
    pub const ALL: [Cause; 14] = [
        Cause::Answer { error: false },
        Cause::Answer { error: true },
        Cause::Deadline,
        Cause::Timeout,
        Cause::Refused,
        Cause::NotResolved,
        Cause::TlsVerification,
        Cause::Tls,
        Cause::Reset,
        Cause::Write,
        Cause::TooManyRedirects,
        Cause::TooLarge,
        Cause::Protocol,
        Cause::NotResumable,
    ];
}

/// How a run ends: its outcome, and the cause of its last attempt (see [`Cause`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The outcome (this tool's code).
    pub outcome: Outcome,
    /// What ended the last attempt, as curl would name it.
    pub cause: Cause,
}

impl Exit {
    /// An ending whose code does not depend on an attempt's cause: a usage error, a
    /// refusal, a signal, the deadline with no attempt to name, a success.
    pub fn of(outcome: Outcome) -> Exit {
        let cause = match outcome {
            Outcome::Success => Cause::Answer { error: false },
            _ => Cause::Deadline,
        };
        Exit { outcome, cause }
    }

    /// The exit code, by the table in use: this tool's, or curl's under `--exit-codes
    /// curl` (but this tool's under `--health-exit`, which [`status`] then makes 0 or 1).
    pub fn code(self) -> u8 {
        let table = TABLE.load(std::sync::atomic::Ordering::Relaxed);
        match table {
            CURL | CURL_FAIL if !health_exit() => curl_code(self, table == CURL_FAIL),
            _ => self.outcome.code(),
        }
    }
}

/// The code curl 7.88 exits with for the ending `exit`, `fail` meaning `-f` (or
/// `--fail-with-body`) was given: the table of `--exit-codes curl`. Signals keep their
/// codes; a refusal by the breaker or the budget, which curl has no word for, is its "could
/// not connect" (7); an answer that stays not ready is an HTTP error (22).
pub fn curl_code(exit: Exit, fail: bool) -> u8 {
    match exit.outcome {
        Outcome::Success => 0,
        Outcome::Local => 23,
        Outcome::Usage => 2,
        Outcome::Refused => 7,
        Outcome::NotReady => 22,
        Outcome::NonRetryableResponse
        | Outcome::AttemptsExhausted
        | Outcome::Deadline
        | Outcome::NonRetryableTransport => curl_cause_code(exit.cause, fail),
        Outcome::Hangup
        | Outcome::Interrupted
        | Outcome::UserSignal1
        | Outcome::UserSignal2
        | Outcome::Alarm
        | Outcome::Terminated => exit.outcome.code(),
    }
}

/// curl's code for a last attempt that ended by `cause` (`fail`: `-f`).
fn curl_cause_code(cause: Cause, fail: bool) -> u8 {
    match cause {
        Cause::Answer { error } => match error && fail {
            true => 22,
            false => 0,
        },
        Cause::Deadline | Cause::Timeout => 28,
        Cause::Refused => 7,
        Cause::NotResolved => 6,
        Cause::TlsVerification => 60,
        Cause::Tls => 35,
        Cause::Reset => 56,
        Cause::Write => 23,
        Cause::TooManyRedirects => 47,
        Cause::TooLarge => 63,
        Cause::Protocol => 8,
        Cause::NotResumable => 33,
    }
}

/// The table in use: [`OWN`], [`CURL`], or [`CURL_FAIL`] (curl's, with `-f`).
static TABLE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(OWN);
const OWN: u8 = 0;
const CURL: u8 = 1;
const CURL_FAIL: u8 = 2;

/// Sets the table every exit path reads from here on: `mode`, with `fail` for `-f` or
/// `--fail-with-body` (curl's 22 for an HTTP error). Called once the command line is
/// checked, before anything is sent; a usage error found earlier exits 2 in both modes.
pub fn use_mode(mode: Mode, fail: bool) {
    let table = match (mode, fail) {
        (Mode::RetryHttp, _) => OWN,
        (Mode::Curl, false) => CURL,
        (Mode::Curl, true) => CURL_FAIL,
    };
    TABLE.store(table, std::sync::atomic::Ordering::Relaxed);
}

/// The codes of `--exit-codes curl`, one row each, for `--help`, the man page and README:
/// what curl exits with for each ending (a unit test checks them against [`curl_code`]).
pub const CURL_TABLE: [(u8, &str); 14] = [
    (
        0,
        "success; an HTTP answer of 400 or above without -f, retried statuses included once the run ends on one",
    ),
    (2, "usage error; nothing was sent"),
    (6, "the last attempt's host name did not resolve"),
    (
        7,
        "the last attempt's connection was refused; refused by --state (breaker, budget) before sending",
    ),
    (8, "the answer is not HTTP as expected (a protocol error)"),
    (
        22,
        "an HTTP answer of 400 or above under -f or --fail-with-body, retried statuses included; not ready (--until-*)",
    ),
    (23, "the output cannot be written (a local failure)"),
    (
        28,
        "the last attempt timed out (--connect-timeout, --max-time, --stall-timeout), or the deadline passed",
    ),
    (33, "-C -: the server did not continue the file"),
    (35, "another TLS failure: the handshake was cut or refused"),
    (47, "too many redirects (--max-redirs)"),
    (
        56,
        "the connection was reset or closed before the answer was whole (a body cut short too), or a proxy's tunnel failed",
    ),
    (60, "the server's TLS certificate failed verification"),
    (63, "the body is larger than --max-filesize"),
];

/// Whether the process exits by Docker's health-check rule (`--health-exit`, or
/// `RETRY_HTTP_HEALTH_EXIT` set to anything but empty, 0, false, no or off): 0 healthy,
/// 1 unhealthy, and never 2, which Docker reserves (docs.docker.com, Dockerfile reference,
/// HEALTHCHECK). Set once, before anything can end the process; read by every exit path.
static HEALTH_EXIT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns Docker's rule on for the rest of the process when the command line (as given, or
/// as `-K` expanded it) holds `--health-exit` before a `--`, or the environment asks for it.
/// The command line is read as words, not parsed, so that a command line clap refuses still
/// exits 1 and not 2.
pub fn health_exit_from(args: &[std::ffi::OsString]) {
    let flag = args
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--health-exit");
    let env = std::env::var_os("RETRY_HTTP_HEALTH_EXIT").is_some_and(|v| truthy(&v));
    if flag || env {
        HEALTH_EXIT.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether an environment value turns a flag on, as clap reads a boolean flag's variable:
/// everything but empty, 0, f, false, n, no and off (any case), as its `FalseyValueParser`.
fn truthy(v: &std::ffi::OsStr) -> bool {
    let v = v.to_string_lossy().trim().to_ascii_lowercase();
    !matches!(v.as_str(), "" | "0" | "f" | "false" | "n" | "no" | "off")
}

/// The process's exit status for `code`: `code` itself, or under Docker's rule 0 for 0 and
/// 1 for every other code (usage errors, signals and the deadline included).
pub fn status(code: u8) -> u8 {
    if code != 0 && HEALTH_EXIT.load(std::sync::atomic::Ordering::Relaxed) {
        1
    } else {
        code
    }
}

/// The summary's words for `code`, this tool's code, of a run that ends as `exit`: "exit
/// 4", or when the process exits otherwise "exit 4 (status 1, --health-exit)" under
/// Docker's rule, "exit 4 (status 28, --exit-codes curl)" under curl's table, so that a log
/// read beside the status the shell saw explains it. (A batch shows its first failure's
/// code, and the status of the transfer that sets it.)
pub fn shown(code: u8, exit: Exit) -> String {
    match status(exit.code()) {
        s if s != code && health_exit() => format!("exit {code} (status {s}, --health-exit)"),
        s if s != code => format!("exit {code} (status {s}, --exit-codes curl)"),
        _ => format!("exit {code}"),
    }
}

impl From<Outcome> for Exit {
    fn from(outcome: Outcome) -> Exit {
        Exit::of(outcome)
    }
}

/// What a usage error's line ends with: nothing, or under Docker's rule "; exit 2 (status
/// 1, --health-exit)", as the summary of any other failure says it (a usage error has no
/// summary line of its own).
pub fn usage_suffix() -> String {
    let code = Outcome::Usage.code();
    if status(code) == code {
        String::new()
    } else {
        format!("; {}", shown(code, Exit::of(Outcome::Usage)))
    }
}

/// Whether Docker's rule is on (the panic hook then exits 1 instead of aborting).
pub fn health_exit() -> bool {
    HEALTH_EXIT.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_values_read_as_clap_reads_them() {
        for on in ["1", "true", "yes", "On", "anything"] {
            assert!(super::truthy(std::ffi::OsStr::new(on)), "{on}");
        }
        for off in ["", "0", "false", "NO", "off", " 0 "] {
            assert!(!super::truthy(std::ffi::OsStr::new(off)), "{off:?}");
        }
    }

    #[test]
    fn codes_are_distinct() {
        let mut codes: Vec<u8> = Outcome::ALL.iter().map(|o| o.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), Outcome::ALL.len());
    }

    #[test]
    fn short_list_names_the_codes_below_128() {
        assert_eq!(
            Outcome::short_list(),
            "0 success, 1 local failure, 2 usage, 3 non-retryable response, 4 attempts exhausted, 5 deadline, 6 transport, 7 refused by --state, 8 not ready"
        );
    }

    /// The table of `--exit-codes curl`, row by row, as curl's manual gives it (`man curl`,
    /// EXIT CODES): every outcome against every cause, with and without `-f`.
    #[test]
    fn curl_codes_for_every_outcome_and_cause() {
        let by_cause = |c: Cause, fail: bool| match c {
            Cause::Answer { error } => u8::from(error && fail) * 22,
            Cause::Deadline | Cause::Timeout => 28,
            Cause::Refused => 7,
            Cause::NotResolved => 6,
            Cause::TlsVerification => 60,
            Cause::Tls => 35,
            Cause::Reset => 56,
            Cause::Write => 23,
            Cause::TooManyRedirects => 47,
            Cause::TooLarge => 63,
            Cause::Protocol => 8,
            Cause::NotResumable => 33,
        };
        for outcome in Outcome::ALL {
            for cause in Cause::ALL {
                for fail in [false, true] {
                    let want = match outcome {
                        Outcome::Success => 0,
                        Outcome::Local => 23,
                        Outcome::Usage => 2,
                        Outcome::Refused => 7,
                        Outcome::NotReady => 22,
                        o if o.is_signal() => o.code(),
                        _ => by_cause(cause, fail),
                    };
                    let got = curl_code(Exit { outcome, cause }, fail);
                    assert_eq!(got, want, "{outcome:?} by {cause:?}, -f {fail}");
                }
            }
        }
    }

    #[test]
    fn the_documented_curl_table_has_every_code_curl_code_gives_and_no_other() {
        let mut given = std::collections::BTreeSet::new();
        for outcome in Outcome::ALL.into_iter().filter(|o| !o.is_signal()) {
            for cause in Cause::ALL {
                for fail in [false, true] {
                    given.insert(curl_code(Exit { outcome, cause }, fail));
                }
            }
        }
        let documented: std::collections::BTreeSet<u8> =
            CURL_TABLE.iter().map(|(c, _)| *c).collect();
        assert_eq!(documented, given);
        assert_eq!(documented.len(), CURL_TABLE.len(), "one row per code");
    }

    #[test]
    fn an_ending_without_a_cause_is_the_deadline_s_or_a_success() {
        assert_eq!(curl_code(Exit::of(Outcome::Deadline), false), 28);
        assert_eq!(curl_code(Exit::of(Outcome::Success), true), 0);
        assert_eq!(curl_code(Exit::of(Outcome::Refused), true), 7);
    }

    #[test]
    fn table_lists_every_code() {
        let t = Outcome::table();
        for o in Outcome::ALL {
            assert!(t.contains(&format!("{:>3}  ", o.code())), "{t}");
        }
        for (code, meaning) in CURL_TABLE {
            assert!(t.contains(&format!("{code:>3}  {meaning}\n")), "{t}");
        }
    }
}
