//! The exit-code contract: one enum, the single source for `--help`, the man page and README.
//!
//! The outcome is what stopped the attempt loop. Which one applies when several could is
//! decided in one place, `policy::decision`, whose table lists the precedence row by row.
//! Under `--health-exit` every code but 0 leaves the process as 1 (`status`), Docker's rule
//! for a health check; every exit path goes through `status`.

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
        out
    }
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

/// The summary's words for `code`: "exit 4", or under Docker's rule "exit 4 (status 1,
/// --health-exit)", so that a log read beside `docker inspect` explains the 1 it shows.
pub fn shown(code: u8) -> String {
    match status(code) {
        s if s != code => format!("exit {code} (status {s}, --health-exit)"),
        _ => format!("exit {code}"),
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
        format!("; {}", shown(code))
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

    #[test]
    fn table_lists_every_code() {
        let t = Outcome::table();
        for o in Outcome::ALL {
            assert!(t.contains(&format!("{:>3}  ", o.code())), "{t}");
        }
    }
}
