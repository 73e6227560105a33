//! The Idempotency-Key's own answers: what a server that implements the IETF httpapi
//! Idempotency-Key draft means by 409, 422 and 400 to a request that carries a key, and
//! what a run does about each. Pure; `decision` applies it in row 4 of its table, and only
//! when a key is sent: without one, these statuses are statuses like any other.
//!
//! - **409 Conflict**: a request with this key is still being processed. Nothing is known
//!   yet about its outcome, so the same request is sent again with the same key (the key
//!   is what makes the replay safe, even for a POST), after the server's Retry-After or
//!   the backoff, within the run's attempts, deadline and retry budget, whatever
//!   `--retry-on` says. A 2xx to a later attempt is the success.
//! - **422 Unprocessable Content**: the key was already used with a different request. The
//!   same request with the same key can only get the same answer (the draft: never retry
//!   it), so the run ends with exit 3, whatever `--retry-on` says.
//! - **400 Bad Request**: to a request without a key, the draft's answer when the key is
//!   required; a key was sent, so the server may want it in another form, or the request
//!   itself is malformed. Sent again unchanged it usually gets the same answer (RFC 9110
//!   section 15.5.1), so it ends the run with exit 3, unless `--retry-on` names 400 (the
//!   code, a class such as `4xx`, or a range holding it): the user's list wins where the
//!   replay is safe, and the key makes it safe (a server that acted on the first request
//!   answers the replay with its stored response), so it is retried as a listed status is,
//!   for every method, and the attempt's line says why.
//!
//! The user's list adds retries; it never removes the key's: a 409 is retried whether or
//! not `--retry-on` names it, since the first request is still being processed and giving
//! up would leave its outcome unknown, and a 422 ends the run whatever it names, since the
//! same request with the same key cannot get another answer.
//!
//! The retry budget counts a retry after a 409 as any retry (it is a request sent again),
//! but the circuit breaker does not count a run that ends on one as a failure: the server
//! answered, it is not down (see [`breaker_neutral`]).
//!
//! Sources: the IETF httpapi draft "The Idempotency-Key HTTP Header Field" (its error
//! scenarios); RFC 9110 sections 15.5.1 (400), 15.5.10 (409), 15.5.21 (422).

/// What a server's answer to a request that carried an Idempotency-Key says about the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAnswer {
    /// 409: a request with this key is still being processed; retried with the same key.
    InFlight,
    /// 422: the key was already used with a different request; never retried.
    Reused,
    /// 400: the server may require the key in another form, or the request is malformed;
    /// retried only when `--retry-on` names 400.
    Rejected,
}

impl KeyAnswer {
    /// Every answer, in the order `--explain` lists them.
    pub const ALL: [KeyAnswer; 3] = [KeyAnswer::InFlight, KeyAnswer::Reused, KeyAnswer::Rejected];

    /// The status the draft gives this answer.
    pub fn status(self) -> u16 {
        match self {
            KeyAnswer::InFlight => 409,
            KeyAnswer::Reused => 422,
            KeyAnswer::Rejected => 400,
        }
    }

    /// Whether the request is sent again (with the same key), `listed` telling whether
    /// `--retry-on` names the answer's status: a 409 always, a 400 when listed, a 422 never.
    pub fn retried(self, listed: bool) -> bool {
        match self {
            KeyAnswer::InFlight => true,
            KeyAnswer::Rejected => listed,
            KeyAnswer::Reused => false,
        }
    }

    /// What the attempt's line notes about an answer that is retried (`listed` as for
    /// [`KeyAnswer::retried`]): why a 409 is waited out, or that a 400 is retried because
    /// `--retry-on` names it and the key makes the replay safe; `None` for an answer that
    /// ends the run (its stop says why).
    pub fn retry_note(self, listed: bool) -> Option<String> {
        match self {
            KeyAnswer::InFlight => Some(self.meaning().to_string()),
            KeyAnswer::Rejected if listed => Some(format!(
                "{}; --retry-on names {}, and the Idempotency-Key makes its replay safe: retried as a listed status",
                self.meaning(),
                self.status()
            )),
            KeyAnswer::Rejected | KeyAnswer::Reused => None,
        }
    }

    /// What the answer means, as the attempt's line notes it (for 409) or the run's stop
    /// says it (for 422 and 400).
    pub fn meaning(self) -> &'static str {
        match self {
            KeyAnswer::InFlight => "a request with this Idempotency-Key is still being processed",
            KeyAnswer::Reused => {
                "the Idempotency-Key was already used with a different request (or the server rejects this request's content); sent again with this key it cannot succeed"
            }
            KeyAnswer::Rejected => {
                "the server may require an Idempotency-Key in another form, or the request is malformed"
            }
        }
    }

    /// What the answer means, in a few words (`--explain`).
    pub fn gist(self) -> &'static str {
        match self {
            KeyAnswer::InFlight => "a request with this key is still being processed",
            KeyAnswer::Reused => "the key was already used with a different request",
            KeyAnswer::Rejected => {
                "the key may be required in another form, or the request is malformed"
            }
        }
    }

    /// What the run does about it, as `--explain` lists it.
    pub fn rule(self) -> &'static str {
        match self {
            KeyAnswer::InFlight => {
                "retried with the same key after the Retry-After or the backoff, within the attempts, the deadline and the retry budget, whatever --retry-on says"
            }
            KeyAnswer::Reused => "never retried, whatever --retry-on says: exit 3",
            KeyAnswer::Rejected => {
                "exit 3, unless --retry-on names it: then retried with the same key, which makes the replay safe"
            }
        }
    }
}

/// The draft's meaning of `status`, when a key was sent (`has_key`); `None` for any other
/// status, and for every status without a key.
pub fn key_answer(status: u16, has_key: bool) -> Option<KeyAnswer> {
    if !has_key {
        return None;
    }
    KeyAnswer::ALL.into_iter().find(|a| a.status() == status)
}

/// Whether a run whose last answer was `status` is neither a success nor a failure to the
/// circuit breaker (`--state`) for that status alone: a 409 to a request with a key says
/// the server is up and busy with the first request, not that it is down. (A 429 is
/// neutral too, for its own reason: rate limiting; see `fleet::admission::run_result`.)
pub fn breaker_neutral(status: u16, has_key: bool) -> bool {
    key_answer(status, has_key) == Some(KeyAnswer::InFlight)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drafts_answers_apply_only_with_a_key() {
        assert_eq!(key_answer(409, true), Some(KeyAnswer::InFlight));
        assert_eq!(key_answer(422, true), Some(KeyAnswer::Reused));
        assert_eq!(key_answer(400, true), Some(KeyAnswer::Rejected));
        for s in [200, 404, 408, 425, 428, 429, 500, 503] {
            assert_eq!(key_answer(s, true), None, "{s}");
        }
        for s in 100..=599 {
            assert_eq!(key_answer(s, false), None, "{s}");
        }
    }

    #[test]
    fn the_list_retries_a_400_never_a_422_and_always_a_409() {
        for listed in [false, true] {
            assert!(KeyAnswer::InFlight.retried(listed));
            assert!(!KeyAnswer::Reused.retried(listed));
            assert_eq!(KeyAnswer::Rejected.retried(listed), listed);
            for a in KeyAnswer::ALL {
                assert_eq!(a.retry_note(listed).is_some(), a.retried(listed), "{a:?}");
            }
        }
        let note = KeyAnswer::Rejected.retry_note(true).unwrap();
        assert!(note.contains("--retry-on names 400"), "{note}");
    }

    #[test]
    fn only_the_conflict_is_neutral_to_the_breaker() {
        assert!(breaker_neutral(409, true));
        assert!(!breaker_neutral(409, false));
        assert!(!breaker_neutral(422, true) && !breaker_neutral(503, true));
    }
}
