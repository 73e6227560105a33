//! The `--until-*` flags turned into the conditions that make an answer ready
//! ([`Conditions`]), and checked against the rest of the command line: a body or JSON
//! condition needs a body that is read before it is written (not `-N`, `-I`/HEAD or `-C`);
//! polling repeats the request, so it must be idempotent or carry a key (or
//! `--retry-unsafe`). What a condition on a secret must match is marked as a secret. The
//! predicates themselves are `policy::readiness`.

use super::conditional::ConditionalConfig;
use super::{RetryConfig, UsageError, usage};
use crate::cli::{ReadinessFlags, RequestArgs};
use crate::policy::readiness::{self as r, Conditions};

/// The conditions the `--until-*` flags give (none: a success is ready), checked against
/// the method of the request they poll (`method`, `-T`'s PUT included), the retry policy (`retry`: a key or
/// `--retry-unsafe`) and `-C` (`conditional`); or says which flag cannot be used with the
/// rest. Whether the body is read before it is written follows from them
/// ([`Conditions::needs_body`]).
pub(super) fn conditions(
    a: &RequestArgs,
    method: &str,
    retry: &RetryConfig,
    conditional: &ConditionalConfig,
) -> Result<Conditions, UsageError> {
    let f = &a.readiness;
    let ready = parsed(f)?;
    if ready.any() {
        if ready.needs_body() {
            body_is_read_first(f, method, a.output.no_buffer, conditional.resume)?;
        }
        polling_is_safe(method, retry)?;
    }
    Ok(ready)
}

/// The conditions the flags give, each parsed (`Err`: the flag's value is not valid).
fn parsed(f: &ReadinessFlags) -> Result<Conditions, UsageError> {
    if f.until_status.len() > 1 {
        return usage(
            "--until-status is given once: list every status that means ready in it, such as --until-status 200,204",
        );
    }
    let mut ready = Conditions {
        status: f.until_status.first().cloned(),
        ..Conditions::default()
    };
    for spec in &f.until_body {
        ready
            .body
            .push(r::parse_body_regex(spec).map_err(UsageError)?);
    }
    for spec in &f.until_json {
        let (pointer, want) = r::parse_json(spec).map_err(UsageError)?;
        // What a secret pointer must hold is that secret.
        if r::secret_pointer(&pointer) {
            match &want {
                serde_json::Value::String(s) => {
                    crate::redact::mark(crate::redact::Secret::Guessed(s))
                }
                other => crate::redact::mark(crate::redact::Secret::Guessed(&other.to_string())),
            }
        }
        ready.json.push((pointer, want));
    }
    for spec in &f.until_header {
        let (name, re) = r::parse_header(spec).map_err(UsageError)?;
        if crate::redact::is_secret_name(&name) {
            crate::redact::mark(crate::redact::Secret::Guessed(re.as_str()));
        }
        ready.headers.push((name, re));
    }
    Ok(ready)
}

/// A body or JSON condition reads the whole body before it is written: not for a HEAD,
/// nor with `-N` (written as it arrives) or `-C` (only the rest of a body arrives).
fn body_is_read_first(
    f: &ReadinessFlags,
    method: &str,
    no_buffer: bool,
    resume: bool,
) -> Result<(), UsageError> {
    let body_flag = if f.until_body.is_empty() {
        "--until-json"
    } else {
        "--until-body"
    };
    if method == "HEAD" {
        return usage(format!(
            "{body_flag} reads the body, and a HEAD (-I) answer has none: use --until-status or --until-header"
        ));
    }
    if no_buffer {
        return usage(format!(
            "{body_flag} must read the body before it is written: drop -N (--no-buffer)"
        ));
    }
    if resume {
        return usage(format!(
            "{body_flag} checks a whole body, and -C writes only the rest of one: drop -C"
        ));
    }
    Ok(())
}

/// Polling sends the request again: the method must be idempotent (RFC 9110 section
/// 9.2.2), or a key or `--retry-unsafe` must allow the replay.
fn polling_is_safe(method: &str, retry: &RetryConfig) -> Result<(), UsageError> {
    if !crate::policy::is_idempotent(method)
        && retry.idempotency_key.is_none()
        && !retry.retry_unsafe
    {
        return usage(format!(
            "a readiness condition polls the request again, and {method} is not idempotent: send an --idempotency-key (or --retry-unsafe) to allow it"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Config, UsageError, build};

    fn config(args: &[&str]) -> Result<Config, UsageError> {
        let mut all = vec!["retry-http"];
        all.extend_from_slice(args);
        all.push("http://h/");
        let all: Vec<std::ffi::OsString> = all.into_iter().map(Into::into).collect();
        let cli = crate::cli::parse(&all).map_err(|e| UsageError(e.to_string()))?;
        build(&cli.request, crate::cli::config_file::Found::default())
    }

    /// A body condition reads the whole body first: not with HEAD, -N or -C; a status
    /// condition reads none, so -N is fine with it.
    #[test]
    fn a_body_condition_needs_the_whole_body_first() {
        for args in [
            &["-I", "--until-body", "ok"][..],
            &["-N", "--until-json", "/ok=true"],
            &["-C", "-", "-o", "f", "--until-body", "ok"],
        ] {
            assert!(config(args).is_err(), "{args:?}");
        }
        let c = config(&["-N", "--until-status", "200"]).expect("accepted");
        assert!(!c.output.inspect);
        let c = config(&["--until-body", "ok"]).expect("accepted");
        assert!(c.output.inspect);
    }

    /// Polling repeats the request: a POST needs a key or --retry-unsafe.
    #[test]
    fn polling_a_post_needs_a_key() {
        let e = config(&["-d", "x", "--until-status", "200"]).expect_err("refused");
        assert!(e.0.contains("not idempotent"), "{}", e.0);
        for allow in [&["--idempotency-key", "k"][..], &["--retry-unsafe"]] {
            let mut args = vec!["-d", "x", "--until-status", "200"];
            args.extend_from_slice(allow);
            assert!(config(&args).is_ok(), "{args:?}");
        }
    }

    #[test]
    fn until_status_is_given_once() {
        let e = config(&["--until-status", "200", "--until-status", "204"]).expect_err("twice");
        assert!(e.0.contains("given once"), "{}", e.0);
    }
}
