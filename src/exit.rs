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
//! The outcomes, the causes and curl's table are the policy's (`retry_http_policy::outcome`).

use retry_http_policy::outcome::curl_cause_code;
pub use retry_http_policy::outcome::{CURL_HEADING, CURL_TABLE, Cause, Outcome};

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
