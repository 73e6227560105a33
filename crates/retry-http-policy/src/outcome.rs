//! How a run ended ([`Outcome`], one per exit code of this tool's table) and what ended its
//! last attempt, in curl's words ([`Cause`]), with curl's codes for each
//! ([`curl_cause_code`], [`CURL_TABLE`]): pure data, which `decision` decides and the
//! command's `exit` turns into the process's status.

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

/// curl's code for a last attempt that ended by `cause` (`fail`: `-f`).
pub fn curl_cause_code(cause: Cause, fail: bool) -> u8 {
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
