//! Reading a response body off the connection into a sink: as sent (ureq's own decoding is
//! off), or gzip-decoded under `--compressed`; within `--max-filesize`; and with a stream
//! cut short told apart from a body that does not decode, so a body cut short while
//! decoding is still a body cut short.

use crate::config::network::SpeedLimit;
use crate::http::failure::{Failure, Stage, classify_io, max_filesize, write_failed};
use crate::http::head::Head;
use crate::http::speed::SpeedCheck;
#[cfg(target_os = "linux")]
use crate::http::splice;
use crate::http::tap::{Tap, Wired};
use crate::policy::FailureKind;
use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Instant;

/// The size of one read, in bytes.
const CHUNK: usize = 64 * 1024;

/// Whether a plain body of known length may be spliced into its file: `splice(2)` is
/// Linux's. Elsewhere (and on the portable paths, see `platform`) the tap is never armed
/// and the copy loop reads every body.
fn splices() -> bool {
    crate::platform::linux_calls()
}

/// Whether a body with these headers is gzip (`Content-Encoding: gzip`, or `x-gzip`, which
/// RFC 9110 section 8.4.1.3 makes the same).
pub(crate) fn is_gzip(head: &Head) -> bool {
    head.value("content-encoding")
        .is_some_and(|e| matches!(e.trim().to_ascii_lowercase().as_str(), "gzip" | "x-gzip"))
}

/// Where a body is written: any writer, and the file under it when there is one (a
/// plain body of known length is then spliced into it: see `splice`).
pub trait Sink: Write {
    /// The file the writes go to, at its current position; None when they go elsewhere.
    fn file(&self) -> Option<&File>;
}

/// What `Transport::read_body` does with an exchange's `body`: copies it into `sink`, through
/// the copy loop below (gzip decoded when `decode`), then, when the tap handed the socket
/// over (`wire`: a plain socket, a known length, no decoding, a file under the sink), the
/// rest through `splice::rest` (Linux). Returns the body's bytes written; fails as that method
/// says (`Truncated`, `TooLarge`, `Protocol`, `Local`, `-Y`/`-y`'s `Stall`).
pub(crate) fn read(
    (body, wire): (ureq::Body, Option<Wired>),
    (decode, speed): (bool, Option<SpeedLimit>),
    sink: &mut dyn Sink,
    limit: Option<u64>,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Failure> {
    let length = body.content_length();
    let wired = match (wire, length) {
        (Some(w), Some(len)) if !decode && splices() && sink.file().is_some() => Some((w, len)),
        _ => None,
    };
    let tap = wired.as_ref().map(|(w, _)| w.tap.clone());
    if let Some(t) = &tap {
        t.arm();
    }
    let mut wire = Wire::new(body.into_with_config().limit(u64::MAX).reader(), tap);
    let mut speed = speed.map(|l| SpeedCheck::new(l, Instant::now()));
    if decode {
        let mut gz = flate2::read::MultiGzDecoder::new(wire);
        return copy(
            &mut gz,
            (true, speed.as_mut()),
            sink,
            (limit, CHUNK),
            progress,
        );
    }
    // A body of known length is read through a buffer no larger than it: a batch of small
    // answers would otherwise allocate and zero 64 KiB for each.
    let chunk = length.map_or(CHUNK, |len| {
        usize::try_from(len).unwrap_or(CHUNK).clamp(1, CHUNK)
    });
    let done = copy(
        &mut wire,
        (false, speed.as_mut()),
        sink,
        (limit, chunk),
        progress,
    )?;
    match (&wired, sink.file()) {
        #[cfg(target_os = "linux")]
        (Some((w, len)), Some(file)) if w.tap.handed() && done < *len => {
            let checks = splice::Checks {
                limit,
                speed: speed.as_mut(),
                progress,
            };
            splice::rest(w, file, done, len - done, checks)
        }
        _ => Ok(done),
    }
}

/// The copy loop of [`read`], over any body reader that can say how the
/// wire under it fared.
fn copy(
    reader: &mut impl ReadWire,
    (decode, mut speed): (bool, Option<&mut SpeedCheck>),
    sink: &mut dyn Write,
    (limit, chunk): (Option<u64>, usize),
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Failure> {
    let mut buf = vec![0u8; chunk];
    let mut total = 0u64;
    let mut seen = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let failed = unread(reader, decode, &e);
                return match speed {
                    Some(check) => failed.map_err(|f| check.timed_out(f, Instant::now())),
                    None => failed,
                };
            }
        };
        if let Some(check) = speed.as_deref_mut() {
            // The wire's bytes: a gzip body's speed is the speed it arrives at.
            check.observe(reader.seen() - seen, Instant::now())?;
            seen = reader.seen();
        }
        total += n as u64;
        max_filesize(total, limit)?;
        match sink.write_all(&buf[..n]) {
            // The reader of stdout went away (`| head`): stop reading, quietly.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(total),
            Err(e) => return Err(write_failed(&e)),
            Ok(()) => progress(total),
        }
    }
}

/// How a read that failed with `e` ends the copy: the wire's own error when the connection
/// broke (decoding or not), else a gzip body that does not decode, else `e` itself. An
/// empty body labelled gzip is an empty body, as curl takes it.
fn unread(reader: &impl ReadWire, decode: bool, e: &io::Error) -> Result<u64, Failure> {
    match reader.failed() {
        Some(wire) => Err(classify_io(wire, Stage::Body)),
        None if decode && reader.seen() == 0 => Ok(0),
        None if decode => Err(Failure::new(
            FailureKind::Protocol,
            format!("the gzip body does not decode: {e}"),
        )),
        None => Err(classify_io(e, Stage::Body)),
    }
}

/// The body as it comes off the connection, remembering the error that broke it (so a
/// decoder's complaint about a cut stream is not taken for a bad encoding).
struct Wire<R> {
    inner: R,
    failed: Option<io::Error>,
    /// Bytes read off the connection.
    seen: u64,
    /// Armed for a splice: the read ureq is refused ends what it had (see `splice`).
    tap: Option<Arc<Tap>>,
}

impl<R> Wire<R> {
    fn new(inner: R, tap: Option<Arc<Tap>>) -> Self {
        Wire {
            inner,
            failed: None,
            seen: 0,
            tap,
        }
    }
}

impl<R: Read> Read for Wire<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.seen += n as u64;
                Ok(n)
            }
            // What ureq had buffered is all read; the rest is spliced.
            Err(_) if self.tap.as_ref().is_some_and(|t| t.handed()) => Ok(0),
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                let copy = io::Error::new(e.kind(), e.to_string());
                self.failed = Some(e);
                Err(copy)
            }
            other => other,
        }
    }
}

/// A body reader that can say whether the wire under it failed, and how much it carried.
trait ReadWire: Read {
    /// The error that broke the connection, if one did.
    fn failed(&self) -> Option<&io::Error>;
    /// The bytes read off the connection so far.
    fn seen(&self) -> u64;
}

impl<R: Read> ReadWire for Wire<R> {
    fn failed(&self) -> Option<&io::Error> {
        self.failed.as_ref()
    }

    fn seen(&self) -> u64 {
        self.seen
    }
}

impl<R: Read> ReadWire for flate2::read::MultiGzDecoder<Wire<R>> {
    fn failed(&self) -> Option<&io::Error> {
        self.get_ref().failed()
    }

    fn seen(&self) -> u64 {
        self.get_ref().seen()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A connection that gives `data`, then fails with `kind` (None: ends cleanly).
    struct Broken {
        data: Cursor<Vec<u8>>,
        kind: Option<io::ErrorKind>,
    }

    impl Read for Broken {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match (self.data.read(buf)?, self.kind) {
                (0, Some(kind)) => Err(io::Error::new(kind, "the wire broke")),
                (n, _) => Ok(n),
            }
        }
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    }

    /// Copies `data` (then a wire error of `kind`), decoding when asked, into a buffer.
    fn run(
        data: &[u8],
        kind: Option<io::ErrorKind>,
        decode: bool,
        limit: Option<u64>,
    ) -> (Result<u64, Failure>, Vec<u8>) {
        let mut wire = Wire::new(
            Broken {
                data: Cursor::new(data.to_vec()),
                kind,
            },
            None,
        );
        let mut out = Vec::new();
        let mut progress = |_| {};
        let result = if decode {
            let mut gz = flate2::read::MultiGzDecoder::new(wire);
            copy(
                &mut gz,
                (true, None),
                &mut out,
                (limit, CHUNK),
                &mut progress,
            )
        } else {
            copy(
                &mut wire,
                (false, None),
                &mut out,
                (limit, CHUNK),
                &mut progress,
            )
        };
        (result, out)
    }

    #[test]
    fn a_body_is_copied_as_sent_or_decoded() {
        assert_eq!(run(b"hello", None, false, None), (Ok(5), b"hello".to_vec()));
        let gz = gzip(b"hello hello");
        assert_eq!(
            run(&gz, None, true, None),
            (Ok(11), b"hello hello".to_vec())
        );
        assert_eq!(run(b"", None, true, None).0, Ok(0), "empty, labelled gzip");
    }

    #[test]
    fn a_cut_while_decoding_is_a_cut_and_garbage_is_a_protocol_error() {
        let gz = gzip(&[7u8; 10_000]);
        let cut = run(
            &gz[..gz.len() / 2],
            Some(io::ErrorKind::UnexpectedEof),
            true,
            None,
        );
        assert_eq!(cut.0.map_err(|f| f.kind), Err(FailureKind::Truncated));
        let garbage = run(b"not gzip at all", None, true, None).0;
        let f = garbage.unwrap_err();
        assert_eq!(f.kind, FailureKind::Protocol);
        assert!(
            f.detail.starts_with("the gzip body does not decode: "),
            "{}",
            f.detail
        );
        let reset = run(b"abc", Some(io::ErrorKind::ConnectionReset), false, None).0;
        assert_eq!(reset.map_err(|f| f.kind), Err(FailureKind::Reset));
    }

    #[test]
    fn the_limit_and_the_sink_end_the_copy() {
        let too_large = run(&[1u8; 100], None, false, Some(99)).0.unwrap_err();
        assert_eq!(too_large.kind, FailureKind::TooLarge);
        assert_eq!(
            too_large.detail,
            "the body is larger than --max-filesize 99 bytes"
        );
        assert_eq!(run(&[1u8; 100], None, false, Some(100)).0, Ok(100));
        struct Closed(io::ErrorKind);
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(self.0, "closed"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let copy_into = |sink: &mut dyn Write| {
            let mut wire = Wire::new(Cursor::new(b"abc".to_vec()), None);
            copy(&mut wire, (false, None), sink, (None, 7), &mut |_| {})
        };
        assert_eq!(copy_into(&mut Closed(io::ErrorKind::BrokenPipe)), Ok(3));
        let full = copy_into(&mut Closed(io::ErrorKind::PermissionDenied));
        assert_eq!(full.map_err(|f| f.kind), Err(FailureKind::Local));
    }

    #[test]
    fn gzip_and_x_gzip_are_gzip() {
        let head = |encoding: &str| Head {
            status: 200,
            reason: String::new(),
            version: "HTTP/1.1".into(),
            headers: vec![("content-encoding".into(), encoding.into())],
            url: url::Url::parse("http://h/").unwrap(),
            wire: None,
        };
        assert!(is_gzip(&head("gzip")) && is_gzip(&head(" X-GZIP ")));
        assert!(!is_gzip(&head("br")) && !is_gzip(&head("gzip, br")));
    }
}
