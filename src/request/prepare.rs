//! One URL's run as a value: [`Request`], built from a frozen [`Config`] and what the files
//! it names hold, and [`Lent`], what the session lends each request it runs. The steps
//! here check and read those files before anything is sent (the netrc file, `-w @FILE`,
//! the output, `-D`, the other paths, the transport's certificates, the request body and
//! `-G`'s data); each failure is a usage error, so nothing is sent. The caller (the
//! session) runs them in order within the deadline, and `note` tells it which file is
//! being read, so that a deadline that passes meanwhile can say so.

use crate::config::{self, Config, KeySpec, Transfer};
use crate::files;
use crate::http::body::{self, Payload};
use crate::http::transport::Transport;
use crate::output::{self, Output};
use crate::process::deadline::Watchdog;
use crate::process::interrupt::Interrupt;
use crate::report::Reporter;
use crate::request::prior::{self, Prior};
use std::path::Path;
use std::time::Instant;
use url::Url;

/// One URL's run, as the attempt loop and the end of the run read it. The configuration is
/// shared and never changed: what this URL adds to it (its transfer, the credentials a
/// netrc file gives, `-G`'s data, the Idempotency-Key, the conditional headers) is here.
pub struct Request<'c> {
    /// The validated configuration the request was built from.
    pub cfg: &'c Config,
    /// The transfer of `cfg`'s list this request runs: its URL and output.
    pub transfer: &'c Transfer,
    /// The URL sent: the transfer's, with `-G`'s data read from files or stdin added to
    /// its query.
    pub url: Url,
    /// The headers of every attempt, in order: the configured ones, the credentials of the
    /// netrc file or the URL, the Idempotency-Key, then the conditional ones and cookies
    /// (the transport adds its automatic ones: see `Transport::automatic_headers`).
    pub headers: Vec<(String, String)>,
    /// The request body, read once.
    pub payload: Option<Payload>,
    /// Where the final body goes.
    pub output: Output,
    /// Sends the attempts.
    pub transport: Transport,
    /// What earlier runs left that this one sends and judges against (see `prior`).
    pub prior: Prior,
    /// The `-w` format, its `@FILE` read.
    pub write_out: Option<String>,
    /// With `--idempotency-key auto` and `--state`, the key proposed for the job (in
    /// `headers` until the admission says which key the job has: see `fleet::job`).
    pub proposed_key: Option<uuid::Uuid>,
}

/// What the session lends each request it runs: what is per process, not per URL.
pub struct Lent<'s> {
    /// The one writer to stderr.
    pub reporter: &'s Reporter,
    /// Set by the signals that stop a run.
    pub interrupt: &'s Interrupt,
    /// Keeps the deadline (see `deadline`).
    pub watchdog: &'s Watchdog,
    /// When the process started (the deadline counts from here).
    pub start: Instant,
    /// The seed of every random draw of the run.
    pub seed: u64,
    /// What the run's transfers share in process, the local layer of their gates (see
    /// `gate::local`).
    pub local: &'s crate::gate::local::Local,
    /// The transfer's place in the batch, 0-based (`%{urlnum}`; 0 for a run of one URL).
    pub transfer: usize,
    /// When this transfer began (`%{time_total}` counts from here; for a run of one URL,
    /// when the process started).
    pub began: Instant,
}

/// What the files of a request hold, read and checked before anything is sent: the parts
/// [`Request::new`] is built from besides the configuration.
pub struct Sources {
    /// The URL with `-G`'s data (see [`url_with_query`]).
    pub url: Url,
    /// `Authorization` from the netrc file or the URL's user information (see
    /// [`credentials`]).
    pub credentials: Option<(String, String)>,
    /// The `-w` format, the output and the transport (see [`Opened::open`]).
    pub opened: Opened,
    /// What the conditional flags' files hold (see `cron::prepare`).
    pub prior: Prior,
    /// The request body, read once.
    pub payload: Option<Payload>,
    /// A `-F` body's multipart boundary, made from the body (see [`boundary`]).
    pub boundary: Option<String>,
}

/// The multipart boundary of `payload`, when `cfg`'s body is a `-F` body: made from the
/// body as it was read (see `http::body`), and put in the Content-Type header in place of
/// the configuration's placeholder. `Err` (a usage error, as for a body that cannot be
/// read) when the body cannot be read back.
pub fn boundary(cfg: &Config, payload: Option<&Payload>) -> Result<Option<String>, String> {
    let multipart = cfg
        .request
        .body
        .as_ref()
        .is_some_and(|b| b.parts.contains(&config::BodySource::Boundary));
    match payload.filter(|_| multipart) {
        None => Ok(None),
        Some(p) => p
            .multipart_boundary()
            .map(Some)
            .map_err(|e| format!("cannot read the request body back: {e}")),
    }
}

/// `headers` with `boundary` in the Content-Type in place of the placeholder the
/// configuration holds until the body is read.
fn with_boundary(headers: &mut [(String, String)], boundary: Option<&str>) {
    let Some(boundary) = boundary else {
        return;
    };
    for (name, value) in headers.iter_mut() {
        if name.eq_ignore_ascii_case("content-type") {
            *value = value.replace(config::BOUNDARY_PLACEHOLDER, boundary);
        }
    }
}

impl<'c> Request<'c> {
    /// The request of transfer `t` of `cfg` with what its files hold. With `--idempotency-key
    /// auto`, the key is drawn here and said on stderr; the summary names the key sent.
    pub fn new(cfg: &'c Config, t: &'c Transfer, sources: Sources, reporter: &Reporter) -> Self {
        let Sources {
            url,
            credentials,
            opened,
            prior,
            payload,
            boundary,
        } = sources;
        let mut headers = cfg.request.headers.clone();
        with_boundary(&mut headers, boundary.as_deref());
        headers.extend(credentials);
        let proposed_key = add_key(cfg, &mut headers, reporter);
        headers.extend(prior.headers.iter().cloned());
        Request {
            cfg,
            transfer: t,
            url,
            headers,
            payload,
            output: opened.output,
            transport: opened.transport,
            prior,
            write_out: opened.write_out,
            proposed_key,
        }
    }

    /// Whether an Idempotency-Key is sent.
    pub fn has_key(&self) -> bool {
        self.cfg.retry.idempotency_key.is_some()
    }
}

/// Adds the Idempotency-Key to `headers` (`--idempotency-key auto`: a random one; a key
/// given with `-H` is kept) and has the summary name the key sent. With `auto` and a
/// `--state` of the user's (not a batch's own records in process), the job's key is the
/// store's: the random one is only proposed (returned), and said once the admission has
/// decided (`run::keyed_headers`).
fn add_key(
    cfg: &Config,
    headers: &mut Vec<(String, String)>,
    reporter: &Reporter,
) -> Option<uuid::Uuid> {
    let has_key = headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"));
    match &cfg.retry.idempotency_key {
        Some(KeySpec::Auto | KeySpec::New) => {
            // Random on purpose, never derived from --seed: two runs must not share a key.
            let key = uuid::Uuid::new_v4();
            headers.push(("Idempotency-Key".into(), key.to_string()));
            if cfg.state.is_some() {
                return Some(key);
            }
            reporter.info(&format!("Idempotency-Key: {key}"));
        }
        Some(KeySpec::Given(k)) if !has_key => headers.push(("Idempotency-Key".into(), k.clone())),
        _ => {}
    }
    if cfg.retry.idempotency_key.is_some()
        && let Some((_, key)) = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"))
    {
        // The summary names it: a run that fails can be resubmitted by hand with it.
        reporter.name_key(key);
    }
    None
}

/// `--netrc`: the netrc file read (within the deadline, like the other files) and the
/// `Authorization` it gives for the host of transfer `t`'s URL; without it, the URL's user
/// information as `Authorization` (see `netrc::credentials`). `Err`: a usage error.
pub fn credentials(
    cfg: &Config,
    t: &Transfer,
    note: &dyn Fn(&str),
) -> Result<Option<(String, String)>, String> {
    let text = match &cfg.request.network.netrc {
        Some(spec) => {
            note("the netrc file");
            crate::http::netrc::read(spec)?
        }
        None => None,
    };
    crate::http::netrc::credentials(&cfg.request, &t.url, text.as_deref())
}

/// The `-w` format, the output and the transport, opened before anything is sent.
pub struct Opened {
    /// The `-w` format, its `@FILE` read.
    pub write_out: Option<String>,
    /// Where the final body goes.
    pub output: Output,
    /// Sends the attempts (it has read `--cacert`, `--cert` and `--key`).
    pub transport: Transport,
}

impl Opened {
    /// The `-w` format, transfer `t`'s output, the `-D` file, the other paths (see
    /// [`other_files`]) and the transport for `t`'s URL (`reuse` when given: a transport an
    /// earlier transfer of a batch built for the same origin, whose connections it keeps):
    /// each may be a usage error (`Err`), found before anything is sent.
    pub fn open(
        (cfg, t): (&Config, &Transfer),
        note: &dyn Fn(&str),
        reuse: Option<Transport>,
    ) -> Result<Opened, String> {
        let format = cfg.output.write_out.as_deref();
        if let Some(file) = format.filter(|w| w.starts_with('@')) {
            note(&format!("-w {file}"));
        }
        let write_out = format.map(read_write_out).transpose()?;
        let output = Output::prepare(&cfg.output, t.output.as_deref()).map_err(|e| e.0)?;
        if !crate::policy::replay::is_idempotent(&cfg.request.method) {
            output.check_spill().map_err(|e| e.0)?;
        }
        if let Some(d) = &cfg.output.dump_header {
            output::check_dump_header(d).map_err(|e| e.0)?;
        }
        other_files(cfg, t.output.as_deref())?;
        if cfg.request.cacert.is_some() || cfg.request.network.client_cert.is_some() {
            note("a --cacert, --cert or --key file");
        }
        let transport = match reuse {
            Some(kept) => kept,
            None => {
                let pool = cfg.batch.is_batch().then_some(cfg.batch.parallel_max_host);
                Transport::new(&cfg.request, &t.url, &cfg.timeouts, pool).map_err(|e| e.0)?
            }
        };
        Ok(Opened {
            write_out,
            output,
            transport,
        })
    }
}

/// What the conditional flags name for transfer `t` (`-b` files, `--etag-compare`, `-z`,
/// `-C -`'s file), read before anything is sent (`Err`: a usage error).
pub fn prior(cfg: &Config, t: &Transfer, note: &dyn Fn(&str)) -> Result<Prior, String> {
    if cfg.conditional.etag_compare.is_some() || !cfg.conditional.cookie_files.is_empty() {
        note("a -b or --etag-compare file");
    }
    prior::prepare(cfg, t)
}

/// The most `-G` data may hold once encoded (bytes): a longer URL is no URL a server reads.
const MAX_QUERY: u64 = 1 << 20;

/// What a `-G` query over [`MAX_QUERY`] is told (where the part that outgrew it is known,
/// it is named: see [`Unread`]).
const QUERY_TOO_LONG: &str = "-G: the data is over 1 MiB, too long for a URL: send it as a body";

/// Why the request body or `-G`'s data could not be read.
pub enum Unread {
    /// A usage error (a file that cannot be read, `-G` data over [`MAX_QUERY`]).
    Usage(String),
    /// The deadline passed while they were being read.
    Deadline,
}

/// The request body and `-G`'s data, each read once within the deadline (counted from
/// `start`, when the process started); `-G`'s data at most [`MAX_QUERY`] bytes, checked
/// while it is read.
pub fn load_bodies(
    cfg: &Config,
    start: Instant,
    note: &dyn Fn(&str),
) -> Result<(Option<Payload>, Option<Payload>), Unread> {
    let load = |spec: Option<&config::BodySpec>, limit| {
        let left = cfg
            .retry
            .deadline
            .map(|d| d.saturating_sub(start.elapsed()));
        match spec.map(|b| body::load_within(b, left, limit)).transpose() {
            Ok(p) => Ok(p),
            Err(body::LoadError::Unreadable(e)) => Err(Unread::Usage(e.0)),
            Err(body::LoadError::TooLarge(source)) => Err(Unread::Usage(format!(
                "{QUERY_TOO_LONG} (reading {source} stopped there)"
            ))),
            Err(body::LoadError::Deadline) => Err(Unread::Deadline),
        }
    };
    if cfg.request.body.is_some() || cfg.request.get_data.is_some() {
        note("the request body");
    }
    let payload = load(cfg.request.body.as_ref(), None)?;
    let query = load(cfg.request.get_data.as_ref(), Some(MAX_QUERY))?;
    Ok((payload, query))
}

/// The URL sent: transfer `t`'s with `query`, `-G`'s data read from files or stdin,
/// appended to its query (`Err`: a usage error, data that outgrew [`MAX_QUERY`]). The
/// parameters it adds are secrets from here on, as the URL's own are.
pub fn url_with_query(t: &Transfer, query: Option<Payload>) -> Result<Url, String> {
    let mut url = t.url.clone();
    match query {
        None => {}
        Some(Payload::Memory(bytes)) => {
            config::append_query(&mut url, &bytes);
            crate::redact::mark(crate::redact::Secret::Url(url.as_str()));
        }
        Some(_) => return Err(QUERY_TOO_LONG.into()),
    }
    Ok(url)
}

/// The other paths the run writes or connects to, checked before anything is sent: those
/// of `shared_files::check`, no two of `-o`, `-D`, `--etag-save` and the state file alike, the
/// output none of the body's files, `--unix-socket` a socket (or nothing yet: a daemon that
/// is starting, retried as refused), `--state-cacert` a file. `out`: the transfer's `-o`.
fn other_files(cfg: &Config, out: Option<&Path>) -> Result<(), String> {
    super::shared_files::check(cfg)?;
    no_two_outputs_alike(cfg, out)?;
    if let Some(out) = out.filter(|p| p.as_os_str() != "-" && !output::is_null(p))
        && body_files(cfg).any(|r| files::same_file(r, out))
    {
        return Err(format!(
            "the output file {} is the file the body is read from: give -o another path",
            out.display()
        ));
    }
    if let Some(socket) = &cfg.request.network.unix_socket {
        check_socket(socket)?;
    }
    if let Some(ca) = cfg.state.as_ref().and_then(|s| s.cacert.as_deref()) {
        let meta = std::fs::metadata(ca)
            .map_err(|e| format!("cannot read --state-cacert {}: {e}", ca.display()))?;
        if !meta.is_file() {
            return Err(format!(
                "--state-cacert {} is not a regular file: give a PEM file of CA certificates",
                ca.display()
            ));
        }
    }
    Ok(())
}

/// No two of `-o`, `-D`, `--etag-save` and the state file are one file (`-` is stdout, and
/// `/dev/null` may be shared: nothing is written there); `out` is the transfer's `-o` file.
fn no_two_outputs_alike(cfg: &Config, out: Option<&Path>) -> Result<(), String> {
    let state_file = cfg.state.as_ref().and_then(|s| s.location.file_path());
    let written: Vec<(&str, &Path)> = [
        ("-o", out),
        ("-D", cfg.output.dump_header.as_deref()),
        ("--etag-save", cfg.conditional.etag_save.as_deref()),
        ("--state", state_file),
    ]
    .into_iter()
    .filter_map(|(flag, p)| {
        p.filter(|p| p.as_os_str() != "-" && !output::is_null(p))
            .map(|p| (flag, p))
    })
    .collect();
    for (i, (a, pa)) in written.iter().enumerate() {
        if let Some((b, pb)) = written[i + 1..]
            .iter()
            .find(|(_, pb)| files::same_file(pa, pb))
        {
            return Err(format!(
                "{a} {} and {b} {} are the same file: give each its own path",
                pa.display(),
                pb.display()
            ));
        }
    }
    Ok(())
}

/// The files the request body (or `-G` data) is read from.
fn body_files(cfg: &Config) -> impl Iterator<Item = &Path> {
    [cfg.request.body.as_ref(), cfg.request.get_data.as_ref()]
        .into_iter()
        .flatten()
        .flat_map(|spec| &spec.parts)
        .filter_map(|part| match part {
            config::BodySource::File { path, .. } => Some(path.as_path()),
            config::BodySource::Encoded { file, .. } => file.as_deref(),
            _ => None,
        })
}

/// `--unix-socket PATH`: a path the kernel can take (at most 107 bytes), and, if something
/// is there already, a socket.
fn check_socket(path: &Path) -> Result<(), String> {
    crate::platform::unix_sockets(path)?;
    if path.as_os_str().len() > 107 {
        return Err(format!(
            "--unix-socket {}: a socket path is at most 107 bytes: use a shorter path (or a link to it)",
            path.display()
        ));
    }
    match std::fs::metadata(path) {
        Ok(m) if !crate::platform::is_socket(&m.file_type()) => Err(format!(
            "--unix-socket {} is not a socket: expected the path of a listening Unix socket",
            path.display()
        )),
        _ => Ok(()),
    }
}

/// The most `-w @FILE` reads: a format is a line or two, and `/dev/zero` must not fill
/// the memory.
const MAX_WRITE_OUT: u64 = 1 << 20;

/// `-w @FILE` reads the format from a file (`@-`: stdin), as curl does, at most
/// [`MAX_WRITE_OUT`] bytes of it, its lines joined as curl joins them ([`join_lines`]).
fn read_write_out(arg: &str) -> Result<String, String> {
    use std::io::Read;
    let read = |r: &mut dyn Read, what: &str| {
        let bytes = files::read_bounded(r, MAX_WRITE_OUT)
            .map_err(|e| format!("cannot read -w {what}: {e}"))?
            .ok_or_else(|| format!("-w {what} is larger than 1 MiB: expected a format"))?;
        String::from_utf8(bytes)
            .map(|text| join_lines(&text))
            .map_err(|_| format!("-w {what} is not UTF-8 text"))
    };
    match arg.strip_prefix('@') {
        Some("-") => read(&mut std::io::stdin(), "from stdin"),
        Some(path) => {
            let mut f = std::fs::File::open(path)
                .map_err(|e| format!("cannot read -w file {path}: {e}"))?;
            read(&mut f, &format!("file {path}"))
        }
        None => Ok(arg.to_string()),
    }
}

/// A `-w` file's text as curl 7.88 reads it: the lines are joined with nothing between
/// them, each cut at its first CR (so a final newline, CRLF line ends and blank lines
/// vanish; spaces and tabs stay). A newline in the output is written as `\n` in the
/// format. (curl reads the file in pieces of 255 bytes and cuts each piece at its first CR
/// or LF, so in a longer line a CR loses less there than here.)
fn join_lines(text: &str) -> String {
    text.split('\n')
        .map(|line| line.split('\r').next().unwrap_or(""))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::scripted::quiet;
    use std::sync::Mutex;

    /// The configuration of a command line (the program name left out).
    fn config_of(args: &[&str]) -> Config {
        let line: Vec<std::ffi::OsString> = std::iter::once("retry-http")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        let mut cli = crate::cli::parse(&line).expect("the line parses");
        config::curl_retry::fold(&mut cli.request).expect("curl's flags fold");
        config::build(&cli.request, crate::cli::config_file::Found::default())
            .expect("the line is valid")
    }

    #[test]
    fn g_data_read_from_files_goes_into_the_request_s_url_and_the_config_keeps_its_own() {
        let cfg = config_of(&["http://h.test/p?a=1"]);
        let t = cfg.batch.first();
        let url = url_with_query(t, Some(Payload::Memory(b"b=2".to_vec()))).expect("fits");
        assert_eq!(url.as_str(), "http://h.test/p?a=1&b=2");
        assert_eq!(t.url.as_str(), "http://h.test/p?a=1");
        assert_eq!(url_with_query(t, None).ok(), Some(t.url.clone()));
        let spooled = Payload::Spooled {
            file: std::fs::File::open("/dev/null").expect("/dev/null opens"),
            len: MAX_QUERY + 1,
        };
        assert_eq!(
            url_with_query(t, Some(spooled)).err().as_deref(),
            Some(QUERY_TOO_LONG)
        );
    }

    #[test]
    fn the_netrc_login_is_the_request_s_header_and_the_config_keeps_its_own() {
        let path = std::env::temp_dir().join(format!("netrc-of-request-{}", std::process::id()));
        std::fs::write(&path, "machine h.test login alice password one\n").expect("written");
        let cfg = config_of(&[
            "--netrc-file",
            path.to_str().expect("UTF-8"),
            "http://h.test/",
        ]);
        let noted = Mutex::new(Vec::new());
        let found = credentials(&cfg, cfg.batch.first(), &|what| {
            noted.lock().expect("not poisoned").push(what.to_string())
        });
        let _ = std::fs::remove_file(&path);
        let basic = format!("Basic {}", base64_of("alice:one"));
        assert_eq!(found, Ok(Some(("Authorization".to_string(), basic))));
        assert_eq!(
            noted.into_inner().expect("not poisoned"),
            ["the netrc file"],
            "read within the deadline"
        );
        assert!(cfg.request.headers.is_empty(), "{:?}", cfg.request.headers);
    }

    fn base64_of(text: &str) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    #[test]
    fn a_request_sends_the_configured_headers_then_credentials_then_the_key_then_conditions() {
        let cfg = config_of(&[
            "-H",
            "X-A: 1",
            "--idempotency-key",
            "k-1",
            "http://u:p@h.test/",
        ]);
        let note = |_: &str| {};
        let prior = Prior {
            headers: vec![("If-None-Match".into(), "\"e\"".into())],
            ..Prior::default()
        };
        let t = cfg.batch.first();
        let sources = Sources {
            url: t.url.clone(),
            credentials: credentials(&cfg, t, &note).expect("no netrc to read"),
            opened: Opened::open((&cfg, t), &note, None).unwrap_or_else(|e| panic!("{e}")),
            prior,
            payload: None,
            boundary: None,
        };
        let request = Request::new(&cfg, t, sources, &quiet());
        let names: Vec<&str> = request.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["X-A", "Authorization", "Idempotency-Key", "If-None-Match"]
        );
        assert!(request.has_key());
        assert_eq!(request.headers[2].1, "k-1");
        assert_eq!(
            cfg.request.headers.len(),
            1,
            "the configuration is unchanged"
        );
    }

    #[test]
    fn a_write_out_file_s_lines_are_joined_as_curl_joins_them() {
        for (text, want) in [
            ("%{http_code}\\n\n", "%{http_code}\\n"),
            ("a\r\nb\r\n", "ab"),
            ("a  \n\n \n", "a   "),
            ("a\rb\nc", "ac"),
            ("\t\n", "\t"),
            ("", ""),
        ] {
            assert_eq!(join_lines(text), want, "{text:?}");
        }
    }
}
