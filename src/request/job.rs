//! A request's job, with `--idempotency-key auto` and `--state`: its digest (the method,
//! the URL as sent, the user of Basic credentials and the body, see `fleet::job`), brought to the admission with the key
//! proposed in `prepare`; then the key the admission decided put in the request's headers
//! and said in the log (a new key, one an earlier run kept, or a fresh one when the store
//! could not be used), and named for the summary and `-w '%{idempotency_key}'`.

use crate::config::{BodySource, BodySpec, Config, KeySpec, Transfer};
use crate::fleet::Millis;
use crate::fleet::job::{Digest, Job, Kept};
use crate::http::body::{self, LoadError, Payload};
use crate::report::Reporter;
use crate::request::Request;
use crate::units::{fmt_duration, millis};
use serde_json::json;
use std::time::{Duration, SystemTime};

/// The job of `request`, when its key is the store's (see `prepare::add_key`). A body that
/// cannot be read again to digest it leaves the run with the key proposed (said).
pub fn job(request: &Request, reporter: &Reporter) -> Option<Job> {
    let fresh = request.proposed_key?;
    match digest(request) {
        Ok(digest) => Some(Job {
            digest,
            fresh,
            renew: request.cfg.retry.idempotency_key == Some(KeySpec::New),
        }),
        Err(e) => {
            reporter.notice(&format!(
                "cannot read the request body to know its job ({e}): a fresh Idempotency-Key is sent, not kept in the state"
            ));
            None
        }
    }
}

/// The digest of the request's method, URL, user and body.
fn digest(request: &Request) -> std::io::Result<Digest> {
    let method = request.cfg.request.method.as_str();
    let user = basic_user(&request.headers);
    digest_of(method, &request.url, &user, request.payload.as_ref())
}

/// Who a request is sent as, for its job: the user name of its Basic credentials (`-u`, a
/// netrc file, the URL's user, or an `Authorization: Basic` header given whole), so that
/// two users posting the same body to the same URL are two jobs with two keys (a server
/// that scopes keys by the key alone would otherwise answer one with the other's result).
/// Empty for none, and for other schemes: a bearer token is often fetched anew for each
/// run, and a job that changed with it would never be sent again under its key.
fn basic_user(headers: &[(String, String)]) -> String {
    use base64::Engine;
    let Some((_, value)) = headers
        .iter()
        .rev()
        .find(|(n, _)| n.eq_ignore_ascii_case("authorization"))
    else {
        return String::new();
    };
    let mut words = value.split_ascii_whitespace();
    let (Some(scheme), Some(token)) = (words.next(), words.next()) else {
        return String::new();
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return String::new();
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(token)
        .unwrap_or_default();
    let user = decoded.split(|b| *b == b':').next().unwrap_or_default();
    String::from_utf8_lossy(user).into_owned()
}

/// The digest of `method` on `url` as `user` with `payload`, read from its start through a
/// reader of its own (as an attempt reads it): no copy of a spooled body is made, which
/// without /proc (an empty root) would have meant a second temporary file as large as the
/// body. The URL is taken without its credentials: their user is `user` already (they are
/// sent as Basic credentials), and their password is no part of the job, as `-u`'s is not
/// (a password rotated between two runs would otherwise make a new job with a new key, and
/// the state would hold a digest of it).
fn digest_of(
    method: &str,
    url: &url::Url,
    user: &str,
    payload: Option<&Payload>,
) -> std::io::Result<Digest> {
    let mut url = url.clone();
    // Only a URL that cannot have credentials refuses these, and it has none to drop.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let url = url.as_str();
    match payload {
        None => Digest::of(method, url, user, &mut std::io::empty()),
        Some(Payload::Memory(body)) => Digest::of(method, url, user, &mut body.as_slice()),
        Some(spooled) => Digest::of(method, url, user, &mut spooled.reader()?),
    }
}

/// Whether `cfg` has the job's key kept by its `--state` (`--idempotency-key auto` or `new`, a
/// store of the user's): what `prepare::add_key` decides, for `--explain`.
pub fn kept_in_state(cfg: &Config) -> bool {
    matches!(
        cfg.retry.idempotency_key,
        Some(KeySpec::Auto | KeySpec::New)
    ) && cfg.state.is_some()
}

/// `--explain`'s digest of the job of transfer `t` of `cfg`, its files read as a run reads
/// them (within a few seconds); `Err` says why it cannot be known without sending (a body
/// or `-G` data from stdin, which `--explain` leaves for the run).
pub fn explain_digest(cfg: &Config, t: &Transfer) -> Result<Digest, String> {
    let from_stdin = |s: &BodySpec| {
        s.parts.iter().any(|p| {
            matches!(
                p,
                BodySource::Stdin { .. } | BodySource::Encoded { file: None, .. }
            )
        })
    };
    let r = &cfg.request;
    if r.body.iter().chain(&r.get_data).any(from_stdin) {
        return Err("the request reads stdin, which --explain leaves for the run".into());
    }
    let load = |spec: &BodySpec| {
        body::load_within(spec, Some(Duration::from_secs(5)), None).map_err(|e| match e {
            LoadError::Unreadable(e) => e.0,
            LoadError::Deadline | LoadError::TooLarge(_) => "its body cannot be read".into(),
        })
    };
    let query = r.get_data.as_ref().map(load).transpose()?;
    let url = crate::request::prepare::url_with_query(t, query)?;
    let payload = r.body.as_ref().map(load).transpose()?;
    let mut headers = r.headers.clone();
    headers.extend(crate::request::prepare::credentials(cfg, t, &|_| {})?);
    let user = basic_user(&headers);
    digest_of(&r.method, &url, &user, payload.as_ref()).map_err(|e| e.to_string())
}

/// The headers of every attempt: the request's, with the Idempotency-Key the admission
/// decided for `job` (`kept`: the store's key and its time; `None`, the store could not be
/// used: the key proposed), which is said in the log and named for the summary.
pub fn keyed_headers(
    request: &Request,
    reporter: &Reporter,
    job: Option<&Job>,
    kept: Option<&(Kept, Millis)>,
) -> Vec<(String, String)> {
    let mut headers = request.headers.clone();
    let Some(job) = job else {
        return headers;
    };
    let key = kept.map_or_else(|| job.fresh.to_string(), |(k, _)| k.key.clone());
    for (n, v) in headers.iter_mut() {
        if n.eq_ignore_ascii_case("idempotency-key") {
            v.clone_from(&key);
        }
    }
    say(reporter, &key, kept, job.renew);
    reporter.name_key(&key);
    headers
}

/// The log's line on the key sent: new (`renew`: the job started afresh), reused (since
/// when), or fresh without the store.
fn say(reporter: &Reporter, key: &str, kept: Option<&(Kept, Millis)>, renew: bool) {
    let (how, text, made, age) = match kept {
        Some((k, now)) if k.reused => {
            let age = Duration::from_millis(now.saturating_sub(k.made));
            let text = format!(
                "Idempotency-Key: {key} (reused: kept since {}, {} ago, by an earlier run of this request whose outcome is unknown, or which is still running)",
                http_date(k.made),
                fmt_duration(age)
            );
            ("reused", text, Some(k.made), Some(age))
        }
        Some((k, _)) => {
            let afresh = if renew {
                ", the job started afresh"
            } else {
                ""
            };
            let text = format!(
                "Idempotency-Key: {key} (new{afresh}, kept in the state until this request's answer is final)"
            );
            ("new", text, Some(k.made), Some(Duration::ZERO))
        }
        None => {
            let text = format!("Idempotency-Key: {key} (fresh: the state could not be used)");
            ("fresh", text, None, None)
        }
    };
    let object = json!({
        "type": "idempotency_key",
        "message": text,
        "key": key,
        "kept": how,
        "made_ms": made,
        "age_ms": age.map(millis),
    });
    reporter.event(&text, object);
}

/// The time a record's date stands for, for the log.
fn http_date(at: Millis) -> String {
    httpdate::fmt_http_date(
        SystemTime::UNIX_EPOCH + Duration::from_millis(at.min(crate::fleet::record::MAX_STAMP)),
    )
}
