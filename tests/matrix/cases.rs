//! The dimensions of the matrix, the scripts that play each fault, and the bodies.

use crate::scripted::Step;
use std::time::Duration;

/// What answers the first request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrap {
    /// The fault answers the request itself.
    Direct,
    /// A 303 to another path first; the fault answers the GET that follows it.
    See303,
    /// A 307 to another path first; the fault answers the replayed request.
    Temp307,
}

/// The fault played on the (first, or first redirected) request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Nothing listens (a bound socket that never listens: the kernel answers RST to the SYN).
    Refused,
    /// The request is read, then the connection is reset: no response.
    Reset,
    /// A 200 head and 1000 of 4096 body bytes, then a reset.
    ResetBody,
    /// A 200 head announcing 4096 bytes, 1000 sent, then a clean close.
    ShortLength,
    /// A chunked 200: one whole chunk, then half of the next, then a clean close.
    ChunkedCut,
    /// A chunked 200: one whole chunk, then a chunk size that is not hexadecimal.
    ChunkedGarbage,
    /// A 200 head and 1000 of 4096 body bytes, then silence past --stall-timeout.
    Stall,
    /// The request is read and never answered.
    Hang,
    /// This status, with this Retry-After (seconds) when given.
    Status(u16, Option<u8>),
    /// The success itself is gzip-encoded (`Content-Encoding: gzip`): no fault.
    Gzip,
    /// A gzip-encoded 200 (with ETag and Accept-Ranges) cut after half its bytes.
    GzipCut,
    /// A 200 with ETag and Accept-Ranges cut after 1000 bytes, the resource honouring Range.
    CutResumable,
}

/// The request sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// PUT -d.
    Put,
    /// POST -d, no key.
    Post,
    /// POST -d --idempotency-key.
    PostKey,
    /// POST -d --retry-unsafe.
    PostUnsafe,
}

/// Where the body goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// stdout, spooled (the default).
    Stdout,
    /// stdout, streamed (-N).
    NoBuffer,
    /// -o FILE, FILE existing with known content.
    FileExisting,
    /// -o FILE, FILE new.
    FileNew,
    /// -o /dev/null.
    DevNull,
}

/// What follows the fault, and how much time the run has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A 200 follows the fault; time limits short, the deadline far (6 s).
    Then200,
    /// The fault repeats on every later request.
    Forever,
    /// A 200 follows, but the deadline (800 ms) comes first: no --timeout, a stall timeout
    /// (5 s) longer than the deadline, Retry-After not clamped (1 s).
    Tight,
}

/// One combination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    pub wrap: Wrap,
    pub fault: Fault,
    pub mode: Mode,
    /// `--compressed` is given.
    pub compressed: bool,
    pub method: Method,
    pub out: Out,
}

/// Every wrap.
pub const WRAPS: [Wrap; 3] = [Wrap::Direct, Wrap::See303, Wrap::Temp307];

/// Every fault.
pub fn faults() -> Vec<Fault> {
    let mut f = vec![
        Fault::Refused,
        Fault::Reset,
        Fault::ResetBody,
        Fault::ShortLength,
        Fault::ChunkedCut,
        Fault::ChunkedGarbage,
        Fault::Stall,
        Fault::Hang,
    ];
    for status in [408, 429, 500, 503] {
        for ra in [None, Some(0), Some(1)] {
            f.push(Fault::Status(status, ra));
        }
    }
    // The Idempotency-Key's answers: 409 (still being processed: retried with a key),
    // 422 (the key reused) and 400 (a key required): statuses not in --retry-on otherwise.
    f.extend([
        Fault::Status(409, None),
        Fault::Status(409, Some(1)),
        Fault::Status(422, None),
        Fault::Status(400, None),
    ]);
    f.extend([Fault::Gzip, Fault::GzipCut, Fault::CutResumable]);
    f
}

/// Every method.
pub const METHODS: [Method; 5] = [
    Method::Get,
    Method::Put,
    Method::Post,
    Method::PostKey,
    Method::PostUnsafe,
];

/// Every output.
pub const OUTS: [Out; 5] = [
    Out::Stdout,
    Out::NoBuffer,
    Out::FileExisting,
    Out::FileNew,
    Out::DevNull,
];

impl Fault {
    /// The modes that make a different case. A refused connection cannot be followed by a
    /// success on the same port deterministically (the client's connect is not visible to
    /// the server), so it always repeats; a gzip success has no fault to repeat. The tight
    /// deadline is for the faults that take time: a hang, a stall, Retry-After: 1.
    pub fn modes(self) -> &'static [Mode] {
        match self {
            Fault::Refused => &[Mode::Forever],
            Fault::Gzip => &[Mode::Then200],
            Fault::Hang | Fault::Stall | Fault::Status(_, Some(1)) => {
                &[Mode::Then200, Mode::Forever, Mode::Tight]
            }
            _ => &[Mode::Then200, Mode::Forever],
        }
    }

    /// Whether `--compressed` matters (gzip faults run with and without it).
    pub fn compressions(self) -> &'static [bool] {
        match self {
            Fault::Gzip | Fault::GzipCut => &[false, true],
            _ => &[false],
        }
    }

    /// A short name for the report.
    pub fn name(self) -> String {
        match self {
            Fault::Refused => "refused".into(),
            Fault::Reset => "reset-before-response".into(),
            Fault::ResetBody => "reset-mid-body".into(),
            Fault::ShortLength => "short-content-length".into(),
            Fault::ChunkedCut => "chunked-cut".into(),
            Fault::ChunkedGarbage => "chunked-bad-size".into(),
            Fault::Stall => "stall-mid-body".into(),
            Fault::Hang => "hang".into(),
            Fault::Status(s, None) => format!("{s}"),
            Fault::Status(s, Some(ra)) => format!("{s}+Retry-After:{ra}"),
            Fault::Gzip => "gzip-200".into(),
            Fault::GzipCut => "gzip-cut".into(),
            Fault::CutResumable => "cut-resumable".into(),
        }
    }
}

impl Method {
    /// The flags that make this request.
    pub fn args(self) -> Vec<&'static str> {
        match self {
            Method::Get => vec![],
            Method::Put => vec!["-d", DATA, "PUT"],
            Method::Post => vec!["-d", DATA, "POST"],
            Method::PostKey => vec!["-d", DATA, "--idempotency-key", KEY, "POST"],
            Method::PostUnsafe => vec!["-d", DATA, "--retry-unsafe", "POST"],
        }
    }

    /// The method on the wire.
    pub fn wire(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            _ => "POST",
        }
    }

    /// A short name for the report.
    pub fn name(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT -d",
            Method::Post => "POST -d",
            Method::PostKey => "POST -d --idempotency-key",
            Method::PostUnsafe => "POST -d --retry-unsafe",
        }
    }
}

impl Out {
    /// A short name for the report.
    pub fn name(self) -> &'static str {
        match self {
            Out::Stdout => "stdout (spooled)",
            Out::NoBuffer => "stdout -N",
            Out::FileExisting => "-o existing",
            Out::FileNew => "-o new",
            Out::DevNull => "-o /dev/null",
        }
    }
}

impl Case {
    /// "POST -d | 303 -> 503 (then 200) | -o new".
    pub fn label(&self) -> String {
        let wrap = match self.wrap {
            Wrap::Direct => "",
            Wrap::See303 => "303 -> ",
            Wrap::Temp307 => "307 -> ",
        };
        let mode = match (self.fault, self.mode) {
            (Fault::Gzip, _) => "",
            (_, Mode::Forever) => " (forever)",
            (_, Mode::Then200) => " (then 200)",
            (_, Mode::Tight) => " (then 200, tight deadline)",
        };
        let comp = if self.compressed {
            " | --compressed"
        } else {
            ""
        };
        format!(
            "{} | {wrap}{}{mode} | {}{comp}",
            self.method.name(),
            self.fault.name(),
            self.out.name()
        )
    }

    /// Whether the fault is met on every request (no success ever comes).
    pub fn repeats(&self) -> bool {
        self.mode == Mode::Forever || self.fault == Fault::Refused
    }
}

/// The full product.
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    for wrap in WRAPS {
        for fault in faults() {
            for &mode in fault.modes() {
                for &compressed in fault.compressions() {
                    for method in METHODS {
                        for out in OUTS {
                            v.push(Case {
                                wrap,
                                fault,
                                mode,
                                compressed,
                                method,
                                out,
                            });
                        }
                    }
                }
            }
        }
    }
    v
}

/// The request body given with -d.
pub const DATA: &str = "amount=5&to=acct-42";
/// The idempotency key.
pub const KEY: &str = "K-matrix-1";
/// What an existing -o file holds before the run.
pub const EXISTING: &[u8] = b"EXISTING CONTENT, must survive a failed run\n";
/// The ETags of the resumable resources.
const ETAG: &str = "\"v1\"";
const GZ_ETAG: &str = "\"gz1\"";

/// A deterministic byte pattern, `len` long, starting with `tag`.
fn pattern(tag: &str, len: usize) -> Vec<u8> {
    let mut v = tag.as_bytes().to_vec();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ tag.len() as u64;
    while v.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        v.extend(format!("{:016x}\n", x).bytes());
    }
    v.truncate(len);
    v
}

/// The body of the final 200 (also the resumable resource).
pub fn success_body() -> Vec<u8> {
    pattern("SUCCESS-BODY\n", 3000)
}

/// The whole body a cut 200 would have had; what is sent is its first 1000 bytes.
pub fn fault_body() -> Vec<u8> {
    pattern("FAULT-BODY\n", 4096)
}

/// The bytes sent of a cut body.
pub const CUT_AT: usize = 1000;

/// The decoded content of the gzip bodies.
pub fn gzip_plain() -> Vec<u8> {
    pattern("GZIP-PLAIN\n", 16_000)
}

/// The gzip bytes on the wire.
pub fn gzip_bytes() -> Vec<u8> {
    crate::common::gzip(&gzip_plain())
}

/// The chunks of the chunked faults: the first whole, the second announced as 0x20 bytes.
const CHUNK1: &str = "fault-chunk-one!";
const CHUNK2: &str = "fault-chunk-two, 32 bytes long!!";

/// A chunked 200's head and its first, whole, chunk.
fn chunked_head() -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n10\r\n{CHUNK1}\r\n"
    )
    .into_bytes()
}

/// The whole body the chunked faults would have had.
pub fn chunked_full() -> Vec<u8> {
    format!("{CHUNK1}{CHUNK2}").into_bytes()
}

/// The bodies of 2xx responses a streamed stdout may hold a prefix of.
pub fn two_xx_bodies() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("success", success_body()),
        ("fault", fault_body()),
        ("chunked", chunked_full()),
        ("gzip bytes", gzip_bytes()),
        ("gzip decoded", gzip_plain()),
    ]
}

/// The body of the final successful response, as it must be written.
pub fn final_body(c: &Case) -> Vec<u8> {
    match c.fault {
        Fault::Gzip | Fault::GzipCut if c.compressed => gzip_plain(),
        Fault::Gzip | Fault::GzipCut => gzip_bytes(),
        _ => success_body(),
    }
}

/// The Location of the redirect (secrets in the query too, to check their masking).
pub fn location(c: &Case, closed_port: u16) -> String {
    if c.fault == Fault::Refused {
        format!("http://127.0.0.1:{closed_port}/next?access_token=SECRET-q")
    } else {
        "/next?access_token=SECRET-q".into()
    }
}

fn plain_200(body: Vec<u8>) -> Step {
    Step::Respond {
        status: 200,
        headers: vec![],
        body,
    }
}

fn gzip_resource(cut_after: Option<usize>) -> Step {
    Step::ResourceWith {
        body: gzip_bytes(),
        etag: GZ_ETAG.into(),
        headers: vec![("Content-Encoding".into(), "gzip".into())],
        cut_after,
    }
}

/// The step that plays the fault (none for a refused connection).
fn fault_step(f: Fault) -> Option<Step> {
    let cut = fault_body()[..CUT_AT].to_vec();
    Some(match f {
        Fault::Refused => return None,
        Fault::Reset => Step::Reset,
        Fault::ResetBody => Step::ResetMidBody {
            declared: fault_body().len(),
            body: cut,
            pause: Duration::from_millis(20),
        },
        Fault::ShortLength => Step::Truncate {
            declared: fault_body().len(),
            body: cut,
        },
        // The first chunk goes alone, so the client can stream it before the break.
        Fault::ChunkedCut => Step::RawPaced {
            parts: vec![
                chunked_head(),
                format!("20\r\n{}", &CHUNK2[..10]).into_bytes(),
            ],
            pause: Duration::from_millis(50),
        },
        Fault::ChunkedGarbage => Step::RawPaced {
            parts: vec![
                chunked_head(),
                format!("zz\r\n{CHUNK2}\r\n0\r\n\r\n").into_bytes(),
            ],
            pause: Duration::from_millis(50),
        },
        Fault::Stall => Step::Stall {
            body: cut,
            declared: fault_body().len(),
            pause: Duration::from_millis(1500),
        },
        Fault::Hang => Step::Hang,
        Fault::Status(status, ra) => Step::Respond {
            status,
            headers: ra
                .map(|s| vec![("Retry-After".to_string(), s.to_string())])
                .unwrap_or_default(),
            body: format!("ERROR-BODY {status}, never to be written\n").into_bytes(),
        },
        Fault::Gzip => Step::Respond {
            status: 200,
            headers: vec![("Content-Encoding".into(), "gzip".into())],
            body: gzip_bytes(),
        },
        Fault::GzipCut => gzip_resource(Some(gzip_bytes().len() / 2)),
        Fault::CutResumable => Step::Resource {
            body: success_body(),
            etag: ETAG.into(),
            cut_after: Some(CUT_AT),
        },
    })
}

/// The success that follows the fault.
fn success_step(f: Fault) -> Step {
    match f {
        Fault::GzipCut => gzip_resource(None),
        Fault::CutResumable => Step::Resource {
            body: success_body(),
            etag: ETAG.into(),
            cut_after: None,
        },
        _ => plain_200(success_body()),
    }
}

/// The scripted server's steps, in order (the last repeats).
pub fn script(c: &Case, closed_port: u16) -> Vec<Step> {
    let mut s = Vec::new();
    if c.wrap != Wrap::Direct {
        s.push(Step::Respond {
            status: if c.wrap == Wrap::See303 { 303 } else { 307 },
            headers: vec![("Location".into(), location(c, closed_port))],
            body: Vec::new(),
        });
    }
    if let Some(step) = fault_step(c.fault) {
        s.push(step);
        if !c.repeats() && c.fault != Fault::Gzip {
            s.push(success_step(c.fault));
        }
    }
    s
}

/// Whether a response of this step proves the request was not processed (docs/policy.md: 307/308
/// send it elsewhere; 408, 429 and 503 say it was not handled).
pub fn proves_unprocessed(step: &Step) -> bool {
    matches!(step, Step::Respond { status, .. } if matches!(status, 307 | 308 | 408 | 429 | 503))
}

/// A short name of a step, for the report.
pub fn step_name(step: &Step) -> String {
    match step {
        Step::Respond { status, .. } => status.to_string(),
        Step::Reset => "reset".into(),
        Step::Hang => "hang".into(),
        Step::Truncate { .. } => "truncated 200".into(),
        Step::Stall { .. } => "stalled 200".into(),
        Step::Raw(_) | Step::RawPaced { .. } => "broken chunked 200".into(),
        Step::Generate { .. } => "generated 200".into(),
        Step::Resource { cut_after, .. } | Step::ResourceWith { cut_after, .. } => {
            if cut_after.is_some() {
                "cut resource 200".into()
            } else {
                "resource 200".into()
            }
        }
        Step::ResetMidBody { .. } => "200 reset mid-body".into(),
        Step::ResourceStall { .. } => "stalled resource 200".into(),
    }
}
