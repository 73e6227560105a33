//! RESP, the protocol of Redis (its specification, "Redis serialization protocol"), in
//! the part the store speaks: a command is packed as an array of bulk strings (`*N`, then
//! `$LEN` and the bytes of each argument, each line ended by CRLF), so any bytes may be an
//! argument; an answer is read in RESP2: a simple string (`+`), an error (`-`), an integer
//! (`:`), a bulk string (`$`, `$-1` for nil) or an array (`*`, `*-1` for nil) of answers.
//! The store never says `HELLO 3`, so no server answers it in RESP3.
//!
//! No answer may be longer than `MAX_ANSWER` bytes: a length announced past what is left
//! of it (a bulk string of 512 MiB, an array of a billion elements) is refused before
//! anything is allocated or read, and every byte read counts, so an answer that never ends
//! is cut at the bound too. No read goes on past the operation's instant either: each read
//! is given the time left as its timeout, and none starts once it has passed.

use super::{other, timed_out};
use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

/// The longest answer read, in bytes (1 MiB): a record is a few hundred bytes, and the
/// scripts never answer one longer than `super::MAX_RECORD`.
pub const MAX_ANSWER: u64 = 1 << 20;

/// The deepest nesting of arrays read (the scripts answer one level).
const MAX_DEPTH: usize = 4;

/// An answer of the server, as read. An error is a value too (`-ERR ...` at any depth):
/// `wire` makes an error of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `$-1` or `*-1`: no value (a key that is not there, a script's `nil`).
    Nil,
    /// `:N`, a signed 64-bit integer.
    Int(i64),
    /// `$LEN`: bytes, any bytes.
    Bulk(Vec<u8>),
    /// `+TEXT`: a line of text (`OK`), read as UTF-8, bytes that are not replaced.
    Simple(String),
    /// `-CODE detail`: an error, the line as the server wrote it, read as `Simple` is.
    Error(String),
    /// `*N`: N answers.
    Array(Vec<Value>),
}

impl Value {
    /// The text of a bulk or simple string, or of an integer; `None` for anything else, and
    /// for a bulk string that is not UTF-8.
    pub fn text(&self) -> Option<String> {
        match self {
            Value::Bulk(b) => String::from_utf8(b.clone()).ok(),
            Value::Simple(s) => Some(s.clone()),
            Value::Int(n) => Some(n.to_string()),
            _ => None,
        }
    }

    /// The first error in the answer, depth first (a script may answer one inside an
    /// array): the answer is then that error.
    pub fn error(&self) -> Option<&str> {
        match self {
            Value::Error(e) => Some(e),
            Value::Array(items) => items.iter().find_map(Value::error),
            _ => None,
        }
    }
}

/// A command: its name and arguments, packed as RESP's array of bulk strings.
#[derive(Debug, Clone)]
pub struct Command {
    /// The arguments packed so far (`$LEN` CRLF bytes CRLF each), the name first.
    body: Vec<u8>,
    /// How many there are.
    count: usize,
}

impl Command {
    /// The command `name` (`EVALSHA`, `AUTH`), without arguments yet.
    pub fn new(name: &str) -> Command {
        let mut cmd = Command {
            body: Vec::new(),
            count: 0,
        };
        cmd.arg(name);
        cmd
    }

    /// Adds an argument: any bytes, CR, LF and NUL included (its length goes before it).
    /// A number is given as its decimal text (`n.to_string()`), as Redis reads numbers.
    pub fn arg(&mut self, arg: impl AsRef<[u8]>) -> &mut Command {
        let arg = arg.as_ref();
        self.body.push(b'$');
        self.body
            .extend_from_slice(arg.len().to_string().as_bytes());
        self.body.extend_from_slice(b"\r\n");
        self.body.extend_from_slice(arg);
        self.body.extend_from_slice(b"\r\n");
        self.count += 1;
        self
    }

    /// The command as it is written to the server.
    pub fn packed(&self) -> Vec<u8> {
        let head = format!("*{}\r\n", self.count);
        let mut out = Vec::with_capacity(head.len() + self.body.len());
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(&self.body);
        out
    }
}

/// A socket whose reads can be given a timeout (the time left of an operation).
pub trait Timed: Read {
    /// Sets the timeout of each read and write to `d` (not zero).
    fn timeouts(&self, d: Duration) -> std::io::Result<()>;
}

/// The time left before `until`, or a time-out naming `what`.
pub fn left(until: Instant, what: &str) -> std::io::Result<Duration> {
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(timed_out(what))
    } else {
        Ok(left)
    }
}

/// An I/O error of the socket, a time-out said as one (a socket timeout reads as
/// `WouldBlock`), a refusal in words.
pub fn io(e: std::io::Error, what: &str) -> std::io::Error {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::WouldBlock | K::TimedOut => timed_out(what),
        K::ConnectionRefused => other("the connection was refused".into()),
        _ => e,
    }
}

/// Reads one answer from `stream`, before `until` and within `MAX_ANSWER` bytes; `what`
/// names the step in a time-out. A read that fails leaves the stream out of step with the
/// commands: it is not to be read again.
pub fn read<S: Timed>(
    stream: &mut BufReader<S>,
    until: Instant,
    what: &str,
) -> std::io::Result<Value> {
    let mut answer = Answer {
        stream,
        left: MAX_ANSWER,
        until,
        what,
    };
    answer.value(0)
}

/// One answer being read: what is left of `MAX_ANSWER`, and of the time.
struct Answer<'a, S> {
    stream: &'a mut BufReader<S>,
    left: u64,
    until: Instant,
    what: &'a str,
}

impl<S: Timed> Answer<'_, S> {
    /// The error of an answer longer than `MAX_ANSWER`.
    fn too_long(&self) -> std::io::Error {
        other(format!(
            "the store answered more than {} KiB, the most read",
            MAX_ANSWER >> 10
        ))
    }

    /// Takes `n` bytes from what is left, or says the answer is too long.
    fn spend(&mut self, n: u64) -> std::io::Result<()> {
        self.left = self.left.checked_sub(n).ok_or_else(|| self.too_long())?;
        Ok(())
    }

    /// Fills the buffer, with the time left as the socket's timeout.
    fn fill(&mut self) -> std::io::Result<&[u8]> {
        let left = left(self.until, self.what)?;
        self.stream.get_ref().timeouts(left)?;
        match self.stream.fill_buf() {
            Ok([]) => Err(other("the store closed the connection".into())),
            Ok(b) => Ok(b),
            Err(e) => Err(io(e, self.what)),
        }
    }

    /// A line without its CRLF.
    fn line(&mut self) -> std::io::Result<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            let buf = self.fill()?;
            let (take, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            line.extend_from_slice(&buf[..take]);
            self.stream.consume(take);
            self.spend(take as u64)?;
            if done {
                break;
            }
        }
        if line.ends_with(b"\r\n") {
            line.truncate(line.len() - 2);
            Ok(line)
        } else {
            Err(nonsense())
        }
    }

    /// `n` bytes and the CRLF after them.
    fn exact(&mut self, n: u64) -> std::io::Result<Vec<u8>> {
        // Checked before anything is allocated.
        self.spend(n.saturating_add(2))?;
        let mut out = Vec::with_capacity(n as usize + 2);
        while out.len() < n as usize + 2 {
            let want = n as usize + 2 - out.len();
            let buf = self.fill()?;
            let take = want.min(buf.len());
            out.extend_from_slice(&buf[..take]);
            self.stream.consume(take);
        }
        if !out.ends_with(b"\r\n") {
            return Err(nonsense());
        }
        out.truncate(n as usize);
        Ok(out)
    }

    /// One value, nested `depth` arrays deep.
    fn value(&mut self, depth: usize) -> std::io::Result<Value> {
        let line = self.line()?;
        let Some((&kind, rest)) = line.split_first() else {
            return Err(nonsense());
        };
        let text = || String::from_utf8_lossy(rest).into_owned();
        match kind {
            b'+' => Ok(Value::Simple(text())),
            b'-' => Ok(Value::Error(text())),
            b':' => Ok(Value::Int(number(rest)?)),
            b'$' => match number(rest)? {
                -1 => Ok(Value::Nil),
                n if n < 0 => Err(nonsense()),
                n => Ok(Value::Bulk(self.exact(n as u64)?)),
            },
            b'*' => match number(rest)? {
                -1 => Ok(Value::Nil),
                n if n < 0 => Err(nonsense()),
                _ if depth >= MAX_DEPTH => Err(nonsense()),
                n => {
                    // Each element takes 3 bytes at least (`:0` CRLF): a count past what
                    // is left cannot be honest, and is refused before anything is made.
                    if (n as u64).saturating_mul(3) > self.left {
                        return Err(self.too_long());
                    }
                    (0..n)
                        .map(|_| self.value(depth + 1))
                        .collect::<Result<_, _>>()
                        .map(Value::Array)
                }
            },
            _ => Err(nonsense()),
        }
    }
}

/// The error of an answer that is not RESP.
fn nonsense() -> std::io::Error {
    other("the store answered nonsense (not RESP)".into())
}

/// A number of a header line (`$5`, `*3`, `:42`).
fn number(digits: &[u8]) -> std::io::Result<i64> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(nonsense)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket of the tests: `data`, then (if `endless` is not empty) `endless` again and
    /// again, handed out at most `chunk` bytes a read; `served` counts the bytes handed out.
    struct Source {
        data: Vec<u8>,
        endless: Vec<u8>,
        chunk: usize,
        served: usize,
    }

    impl Read for Source {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.chunk);
            let mut done = 0;
            while done < n {
                let at = self.served;
                let byte = match self.data.get(at) {
                    Some(b) => *b,
                    None if self.endless.is_empty() => break,
                    None => self.endless[(at - self.data.len()) % self.endless.len()],
                };
                buf[done] = byte;
                done += 1;
                self.served += 1;
            }
            Ok(done)
        }
    }

    impl Timed for Source {
        fn timeouts(&self, d: Duration) -> std::io::Result<()> {
            assert!(!d.is_zero(), "a timeout of zero is none");
            Ok(())
        }
    }

    /// The chunk sizes a socket hands bytes out in: one at a time, a few, and all at once.
    const CHUNKS: [usize; 4] = [1, 2, 7, 1 << 16];

    /// A reader of `data` (then `endless`), in chunks of `chunk` bytes.
    fn source(data: &[u8], endless: &[u8], chunk: usize) -> BufReader<Source> {
        BufReader::with_capacity(
            chunk.max(1),
            Source {
                data: data.to_vec(),
                endless: endless.to_vec(),
                chunk,
                served: 0,
            },
        )
    }

    /// Reads one answer from `data`, in chunks of `chunk` bytes, with time to do it.
    fn read_all(data: &[u8], chunk: usize) -> std::io::Result<Value> {
        let mut stream = source(data, b"", chunk);
        let until = Instant::now() + Duration::from_secs(60);
        let value = read(&mut stream, until, "reading")?;
        assert!(stream.buffer().is_empty(), "{data:?}: read past the answer");
        assert_eq!(stream.get_ref().served, data.len(), "{data:?}");
        Ok(value)
    }

    /// `v` as a server writes it (RESP2).
    fn encode(v: &Value) -> Vec<u8> {
        match v {
            Value::Nil => b"$-1\r\n".to_vec(),
            Value::Int(n) => format!(":{n}\r\n").into_bytes(),
            Value::Simple(s) => format!("+{s}\r\n").into_bytes(),
            Value::Error(s) => format!("-{s}\r\n").into_bytes(),
            Value::Bulk(b) => {
                let mut out = format!("${}\r\n", b.len()).into_bytes();
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
                out
            }
            Value::Array(items) => {
                let mut out = format!("*{}\r\n", items.len()).into_bytes();
                for item in items {
                    out.extend(encode(item));
                }
                out
            }
        }
    }

    /// Arguments of every kind a command carries: empty, text, numbers, bytes that RESP
    /// itself uses (CR, LF, `$`, `*`, a whole RESP line), every byte value, and a long one.
    fn arguments() -> Vec<Vec<u8>> {
        vec![
            b"".to_vec(),
            b"retry-http:{http://h:80}".to_vec(),
            i64::MIN.to_string().into_bytes(),
            b"\r\n".to_vec(),
            b"a\r\nb\rc\nd".to_vec(),
            b"$3\r\nSET\r\n*2\r\n".to_vec(),
            b"-ERR not an error\r\n".to_vec(),
            (0..=255u8).collect(),
            "é€😀".as_bytes().to_vec(),
            vec![b'x'; 100 << 10],
        ]
    }

    /// A command's packing is RESP's array of bulk strings, byte for byte.
    #[test]
    fn a_command_is_packed_as_an_array_of_bulk_strings() {
        let mut set = Command::new("SET");
        set.arg("k").arg(b"v\r\n").arg(42.to_string());
        assert_eq!(
            set.packed(),
            b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n$2\r\n42\r\n"
        );
        assert_eq!(Command::new("ASKING").packed(), b"*1\r\n$6\r\nASKING\r\n");
        assert_eq!(
            Command::new("GET").arg("").packed(),
            b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n"
        );
    }

    /// Every command packed reads back as the array of its name and arguments, whatever
    /// bytes they hold and however the socket hands them out: any number of arguments of
    /// every kind, in every order.
    #[test]
    fn packed_commands_read_back_whole() {
        let args = arguments();
        for count in 0..=args.len() {
            for start in 0..args.len() {
                let chosen: Vec<&Vec<u8>> = args.iter().cycle().skip(start).take(count).collect();
                let mut cmd = Command::new("EVALSHA");
                for a in &chosen {
                    cmd.arg(a);
                }
                let mut want = vec![Value::Bulk(b"EVALSHA".to_vec())];
                want.extend(chosen.iter().map(|a| Value::Bulk(a.to_vec())));
                let packed = cmd.packed();
                assert_eq!(packed, encode(&Value::Array(want.clone())));
                for chunk in CHUNKS {
                    let read = read_all(&packed, chunk).expect("a packed command is RESP");
                    assert_eq!(read, Value::Array(want.clone()), "{count} from {start}");
                }
            }
        }
    }

    /// Answers of every kind, nested to the deepest level read.
    fn answers() -> Vec<Value> {
        let leaves = vec![
            Value::Nil,
            Value::Int(0),
            Value::Int(-1),
            Value::Int(i64::MIN),
            Value::Int(i64::MAX),
            Value::Simple("OK".into()),
            Value::Simple(String::new()),
            Value::Bulk(Vec::new()),
            Value::Bulk(b"line\r\nbreaks\r\n\r\n".to_vec()),
            Value::Bulk((0..=255u8).rev().collect()),
            Value::Error("MOVED 3999 127.0.0.1:6381".into()),
            Value::Error("ASK 3999 [::1]:7000".into()),
            Value::Error("ERR unknown command".into()),
            Value::Error("NOSCRIPT No matching script. Please use EVAL.".into()),
            Value::Array(Vec::new()),
        ];
        let mut all = leaves.clone();
        // Two levels (the empty array among the leaves), then one more at a time.
        let mut nested = Value::Array(leaves.clone());
        for _ in 2..MAX_DEPTH {
            all.push(nested.clone());
            nested = Value::Array(vec![Value::Int(1), nested, Value::Nil]);
        }
        all.push(nested);
        all
    }

    /// Every answer reads back as it was written, in chunks of every size, with nothing
    /// read past its end: nil, integers to their limits, simple strings, bulk strings
    /// holding CR LF and every byte, errors of each kind the store tells apart, and arrays
    /// nested to `MAX_DEPTH`.
    #[test]
    fn answers_read_back_as_written() {
        for answer in answers() {
            let bytes = encode(&answer);
            for chunk in CHUNKS {
                assert_eq!(
                    read_all(&bytes, chunk).ok(),
                    Some(answer.clone()),
                    "{chunk}"
                );
            }
        }
        assert_eq!(read_all(b"*-1\r\n", 1).ok(), Some(Value::Nil));
    }

    /// An error, at any depth, is the answer's error: the first one met.
    #[test]
    fn an_error_anywhere_is_the_answers() {
        let moved = Value::Error("MOVED 1 h:1".into());
        assert_eq!(moved.error(), Some("MOVED 1 h:1"));
        let deep = Value::Array(vec![
            Value::Int(1),
            Value::Array(vec![Value::Nil, moved.clone()]),
            Value::Error("ERR later".into()),
        ]);
        assert_eq!(deep.error(), Some("MOVED 1 h:1"));
        for fine in [
            Value::Nil,
            Value::Bulk(b"-ERR".to_vec()),
            Value::Simple("-".into()),
        ] {
            assert_eq!(fine.error(), None, "{fine:?}");
        }
    }

    /// What is not RESP is said to be nonsense, in every chunk size: a line without its
    /// CR, an unknown type, a negative length other than -1, a length that is no number,
    /// a bulk string without its CRLF, an empty line, arrays nested past `MAX_DEPTH`.
    #[test]
    fn what_is_not_resp_is_nonsense() {
        let mut too_deep = b":1\r\n".to_vec();
        for _ in 0..=MAX_DEPTH {
            too_deep.splice(0..0, b"*1\r\n".iter().copied());
        }
        let bad: [&[u8]; 10] = [
            b"+OK\n",
            b"!3\r\nabc\r\n",
            b"$-2\r\n",
            b"*-5\r\n",
            b"$abc\r\n",
            b":12x\r\n",
            b"$3\r\nabcd\r\n",
            b"\r\n",
            b"HTTP/1.1 200 OK\r\n",
            &too_deep,
        ];
        for bytes in bad {
            for chunk in CHUNKS {
                let e = read_all_or_error(bytes, chunk);
                assert!(e.contains("nonsense"), "{bytes:?} by {chunk}: {e}");
            }
        }
    }

    /// The error of reading `bytes` (then an end of connection), as text.
    fn read_all_or_error(bytes: &[u8], chunk: usize) -> String {
        let mut stream = source(bytes, b"", chunk);
        let until = Instant::now() + Duration::from_secs(60);
        match read(&mut stream, until, "reading") {
            Ok(v) => panic!("{bytes:?} read as {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// No answer is read past `MAX_ANSWER` bytes: a length announced past it (a bulk
    /// string, an array's count) is refused before anything after it is read, and an
    /// answer that never ends (a line, a bulk string, an array of endless elements) is cut
    /// at the bound, with at most one buffer read beyond it. An answer of exactly the
    /// bound is read.
    #[test]
    fn answers_are_read_within_the_bound() {
        let header = |h: &str| h.as_bytes().to_vec();
        // Announced too long: nothing past the header is read (there is nothing to read).
        for announced in [
            format!("${}\r\n", 512u64 << 20),
            format!("${}\r\n", MAX_ANSWER),
            format!("${}\r\n", i64::MAX),
            "*1000000000\r\n".to_string(),
            format!("*1\r\n${}\r\n", MAX_ANSWER),
        ] {
            let e = read_all_or_error(&header(&announced), 1 << 16);
            assert!(e.contains("more than 1024 KiB"), "{announced:?}: {e}");
        }
        // Never ending: cut at the bound.
        let endless: [(&[u8], &[u8]); 4] = [
            (b"+", b"x"),
            (b"$-", b"1"),
            (b"*300000\r\n", b"*1\r\n:1\r\n"),
            (b"*200000\r\n", b"$0\r\n\r\n"),
        ];
        for (start, again) in endless {
            for chunk in [7, 1 << 16] {
                let mut stream = source(start, again, chunk);
                let until = Instant::now() + Duration::from_secs(60);
                let e = match read(&mut stream, until, "reading") {
                    Ok(_) => panic!("{start:?}: read whole"),
                    Err(e) => e.to_string(),
                };
                assert!(e.contains("more than"), "{start:?}: {e}");
                let served = stream.get_ref().served as u64;
                assert!(served <= MAX_ANSWER + chunk as u64, "{start:?}: {served}");
            }
        }
        // Exactly the bound, and one byte more.
        for (extra, fits) in [(0, true), (1, false)] {
            let n = MAX_ANSWER - 2 - format!("${}\r\n", MAX_ANSWER).len() as u64 + extra;
            let value = Value::Bulk(vec![b'y'; n as usize]);
            let result = read_all(&encode(&value), 1 << 16);
            assert_eq!(result.is_ok(), fits, "{n} bytes");
        }
    }

    /// No read starts once the operation's instant has passed: the answer is a time-out
    /// naming the step, and nothing is read.
    #[test]
    fn no_read_starts_past_the_instant() {
        let mut stream = source(b"+OK\r\n", b"", 1 << 16);
        let e = read(&mut stream, Instant::now(), "asking the store").expect_err("too late");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert_eq!(e.to_string(), "asking the store");
        assert_eq!(stream.get_ref().served, 0);
    }

    /// A socket whose timeout fires (`WouldBlock`, as a read timeout is on Unix) gives a
    /// time-out naming the step; one that closes says so.
    #[test]
    fn a_socket_timeout_is_a_time_out() {
        let e = io(std::io::ErrorKind::WouldBlock.into(), "reading the store");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        let e = read_all_or_error(b"$5\r\nab", 1);
        assert!(e.contains("closed the connection"), "{e}");
    }
}
