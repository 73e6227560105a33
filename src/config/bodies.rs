//! The body flags curl has beyond `-d`, turned into a [`BodySpec`]: `--data-urlencode`
//! (joined with `-d` and `--data-binary` in command-line order), `-G` (the data in the
//! query string instead), and `-F` (a multipart/form-data body, RFC 7578). Pure, like the
//! rest of `config`: files are named here and read once by `http::body`, before the first
//! attempt, so every attempt sends the same bytes. The multipart boundary is not drawn
//! here: it is derived from the parts once they are read (see `http::body`), so that the
//! same command line with the same inputs sends the same bytes on every run.

use super::{
    BOUNDARY_PLACEHOLDER, BodySource, BodySpec, UsageError, body_source, has_header, usage,
};
use crate::cli::RequestArgs;
use crate::cli::bodies::DataArg;
use std::path::{Path, PathBuf};
use url::Url;

/// The body and, with `-G`, the data still to be read for the query (from files or stdin;
/// inline data is put in `url` at once).
#[derive(Debug, Default)]
pub(super) struct Made {
    /// The request body.
    pub body: Option<BodySpec>,
    /// `-G` data to read, then append to the URL's query.
    pub query: Option<BodySpec>,
    /// `-G`'s inline data, appended to the URL's query already (and to be appended to the
    /// other URLs of a run of several).
    pub appended: Option<Vec<u8>>,
}

/// The body (or `-G` query) of the request, and the Content-Type it implies; `stdin_taken`
/// is what read stdin while the flags were expanded (`-H @-`), if anything. `-d`,
/// `--data-binary` and `--json` alone are the parent's `body`.
pub(super) fn body(
    a: &RequestArgs,
    stdin_taken: Option<&str>,
    headers: &mut Vec<(String, String)>,
    url: &mut Url,
) -> Result<Made, UsageError> {
    let (r, b) = (&a.request, &a.bodies);
    let made = if !b.form.is_empty() {
        Made {
            body: Some(multipart(&b.form, headers)?),
            query: None,
            appended: None,
        }
    } else if b.get {
        if !r.json.is_empty() {
            return usage("-G puts the data in the URL and --json is a body: give one");
        }
        let query = data_spec(a)?;
        match query.as_ref().and_then(inline_bytes) {
            Some(bytes) => {
                append_query(url, &bytes);
                Made {
                    appended: Some(bytes),
                    ..Made::default()
                }
            }
            None => Made {
                body: None,
                query,
                appended: None,
            },
        }
    } else if !r.json.is_empty() {
        Made {
            body: Some(super::json_body(&r.json, headers)),
            query: None,
            appended: None,
        }
    } else {
        // -d, --data-binary, --data-urlencode and --data-raw join with & in the order
        // given, as curl joins them, with -d's Content-Type.
        let body = data_spec(a)?;
        if body.is_some() && !has_header(headers, "content-type") {
            let ct = "application/x-www-form-urlencoded";
            headers.push(("Content-Type".into(), ct.into()));
        }
        Made {
            body,
            query: None,
            appended: None,
        }
    };
    if r.head && made.body.is_some() {
        return usage(
            "-I sends HEAD, which has no body: drop the data, or add -G to send it in the URL",
        );
    }
    check_stdin(a, stdin_taken, &made)?;
    Ok(made)
}

/// stdin is read once: by one body part at most, and not by a body and `-H @-` or `-w @-`
/// (`stdin_taken`: what read it while the flags were expanded, if anything).
fn check_stdin(a: &RequestArgs, stdin_taken: Option<&str>, made: &Made) -> Result<(), UsageError> {
    let readers = [&made.body, &made.query]
        .into_iter()
        .flatten()
        .flat_map(|s| &s.parts)
        .filter(|p| {
            matches!(
                p,
                BodySource::Stdin { .. } | BodySource::Encoded { file: None, .. }
            )
        })
        .count();
    if readers > 1 {
        return usage("stdin is read once: give @- (or <-) to one body part only");
    }
    if readers > 0 && a.output.write_out.as_deref() == Some("@-") {
        return usage(
            "-w @- and a body from @- both want stdin: give the -w format inline or in a file",
        );
    }
    if let Some(taker) = stdin_taken {
        if readers > 0 {
            return usage(format!(
                "{taker} and a body from @- both want stdin: give one of them in a file"
            ));
        }
        if a.output.write_out.as_deref() == Some("@-") {
            return usage(format!(
                "{taker} and -w @- both want stdin: give one of them in a file"
            ));
        }
    }
    Ok(())
}

/// The data flags' values in order (as [`crate::cli::parse`] recorded them, or
/// flag by flag), as body parts joined with `&`.
fn data_spec(a: &RequestArgs) -> Result<Option<BodySpec>, UsageError> {
    let r = &a.request;
    let fallback: Vec<DataArg>;
    let ordered = if a.bodies.ordered.is_empty() {
        fallback = r
            .data
            .iter()
            .cloned()
            .map(DataArg::Data)
            .chain(r.data_binary.iter().cloned().map(DataArg::Binary))
            .chain(
                a.bodies
                    .data_urlencode
                    .iter()
                    .cloned()
                    .map(DataArg::UrlEncode),
            )
            .chain(
                a.protocols
                    .request
                    .data_raw
                    .iter()
                    .cloned()
                    .map(DataArg::Raw),
            )
            .collect();
        &fallback
    } else {
        &a.bodies.ordered
    };
    if ordered.is_empty() {
        return Ok(None);
    }
    let parts = ordered
        .iter()
        .map(|d| match d {
            DataArg::Data(s) => body_source(s, true),
            DataArg::Binary(s) => body_source(s, false),
            DataArg::UrlEncode(s) => urlencoded(s),
            DataArg::Raw(s) => BodySource::Inline(s.as_bytes().to_vec()),
        })
        .collect();
    Ok(Some(BodySpec {
        parts,
        separator: b"&".to_vec(),
    }))
}

/// One `--data-urlencode` value, as curl reads it: `NAME=CONTENT` (the first `=`; an empty
/// NAME adds no `=`), else `NAME@FILE` (the first `@`), else CONTENT; only CONTENT is
/// encoded.
fn urlencoded(s: &str) -> BodySource {
    let prefix = |name: &str| {
        if name.is_empty() {
            Vec::new()
        } else {
            format!("{name}=").into_bytes()
        }
    };
    if let Some((name, content)) = s.split_once('=') {
        let mut out = prefix(name);
        form_encode(content.as_bytes(), &mut out);
        BodySource::Inline(out)
    } else if let Some((name, path)) = s.split_once('@') {
        BodySource::Encoded {
            prefix: prefix(name),
            file: (path != "-").then(|| PathBuf::from(path)),
        }
    } else {
        let mut out = Vec::new();
        form_encode(s.as_bytes(), &mut out);
        BodySource::Inline(out)
    }
}

/// Appends `bytes` percent-encoded as curl's `--data-urlencode` does (as
/// `application/x-www-form-urlencoded`): letters, digits and `-._~` as they are, a space
/// as `+`, every other byte as `%XX` (upper-case hex).
pub(crate) fn form_encode(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b),
            b' ' => out.push(b'+'),
            _ => out.extend_from_slice(format!("%{b:02X}").as_bytes()),
        }
    }
}

/// The bytes of a spec whose parts are all inline (joined), else `None`.
fn inline_bytes(spec: &BodySpec) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for (i, p) in spec.parts.iter().enumerate() {
        let BodySource::Inline(bytes) = p else {
            return None;
        };
        if i > 0 {
            out.extend_from_slice(&spec.separator);
        }
        out.extend_from_slice(bytes);
    }
    Some(out)
}

/// `-G`: appends `data` to the URL's query, after an `&` when there is one already (curl's
/// way). Nothing is added for empty data. Bytes a URL cannot hold as typed (space,
/// controls, non-ASCII) are percent-encoded, where curl refuses the URL.
pub(crate) fn append_query(url: &mut Url, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let mut text = String::with_capacity(data.len());
    for &b in data {
        if (0x21..=0x7e).contains(&b) {
            text.push(char::from(b));
        } else {
            text.push_str(&format!("%{b:02X}"));
        }
    }
    let query = match url.query() {
        Some(q) if !q.is_empty() => format!("{q}&{text}"),
        _ => text,
    };
    url.set_query(Some(&query));
}

/// One `-F` field as curl reads it.
#[derive(Debug, PartialEq, Eq)]
struct Field {
    name: String,
    content: Content,
    mime: Option<String>,
    filename: Option<String>,
}

/// Where a field's content comes from.
#[derive(Debug, PartialEq, Eq)]
enum Content {
    /// Text given inline.
    Text(String),
    /// `@FILE`: a file upload (its name is sent as the filename).
    Upload(String),
    /// `<FILE`: the file's bytes as the field's value.
    Read(String),
}

/// Parses `NAME=VALUE[;type=MIME][;filename=NAME]`; VALUE is `@FILE`, `<FILE` or text,
/// each possibly "quoted" (`\"` and `\\` inside). Errors quote the field's name only.
fn field(arg: &str) -> Result<Field, UsageError> {
    let Some((name, rest)) = arg.split_once('=') else {
        return usage("-F expects NAME=VALUE, NAME=@FILE or NAME=<FILE (no = found)");
    };
    let err = |what: &str| UsageError(format!("-F field {name:?}: {what}"));
    let (kind, rest) = match rest.as_bytes().first() {
        Some(b'@') => (Some('@'), &rest[1..]),
        Some(b'<') => (Some('<'), &rest[1..]),
        _ => (None, rest),
    };
    let (value, quoted, mut rest) = word(rest).map_err(|e| err(&e))?;
    let content = match kind {
        Some(_) if value.is_empty() => return Err(err("no file name after @ or <")),
        Some('@') if value.contains(',') && !quoted => {
            return Err(err(
                "several files in one field (multipart/mixed) are not sent: give one -F per file, or quote a name holding a comma",
            ));
        }
        Some('@') => Content::Upload(value),
        Some(_) => Content::Read(value),
        None => Content::Text(value),
    };
    let mut f = Field {
        name: name.to_string(),
        content,
        mime: None,
        filename: None,
    };
    while let Some(after) = rest.strip_prefix(';') {
        let after = after.trim_start();
        if let Some(v) = after.strip_prefix("type=") {
            let (t, next) = mime_value(v).map_err(|e| err(&e))?;
            f.mime = Some(t);
            rest = next;
        } else if let Some(v) = after.strip_prefix("filename=") {
            let (n, _, next) = word(v).map_err(|e| err(&e))?;
            f.filename = Some(n);
            rest = next;
        } else {
            return Err(err(
                "a ; starts a parameter, and only ;type= and ;filename= are read: quote a value holding ; (\"...\")",
            ));
        }
    }
    Ok(f)
}

/// A value: `"..."` (with `\"` and `\\`), else everything up to the next `;`. Gives the
/// value, whether it was quoted, and the rest (empty, or starting with `;`).
fn word(s: &str) -> Result<(String, bool, &str), String> {
    let Some(inner) = s.strip_prefix('"') else {
        let end = s.find(';').unwrap_or(s.len());
        return Ok((s[..end].to_string(), false, &s[end..]));
    };
    let mut value = String::new();
    let mut chars = inner.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => value.push(e),
                Some((_, other)) => {
                    value.push('\\');
                    value.push(other);
                }
                None => break,
            },
            '"' => {
                let rest = inner[i + 1..].trim_start();
                if !(rest.is_empty() || rest.starts_with(';')) {
                    return Err("text after a closing quote: expected ; or the end".into());
                }
                return Ok((value, true, rest));
            }
            c => value.push(c),
        }
    }
    Err("a quoted value has no closing quote".into())
}

/// `type=` runs to the next `;type=` or `;filename=` (so `text/plain;charset=utf-8` stays
/// whole, as in curl), quotes removed.
fn mime_value(s: &str) -> Result<(String, &str), String> {
    let mut end = s.len();
    for (i, _) in s.match_indices(';') {
        let next = s[i + 1..].trim_start();
        if next.starts_with("type=") || next.starts_with("filename=") {
            end = i;
            break;
        }
    }
    let t = s[..end].trim();
    let t = t
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(t);
    if t.is_empty() || crate::cli::values::unsendable(t, false).is_some() {
        return Err("type= expects a media type such as text/plain".into());
    }
    Ok((t.to_string(), &s[end..]))
}

/// A name or filename in a Content-Disposition, escaped as curl (and the HTML standard)
/// does: `"` as %22, CR as %0D, LF as %0A.
fn escaped(s: &str) -> String {
    s.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// The media type curl guesses from a file name's extension (case ignored), when `;type=`
/// is not given; `None` for stdin.
fn guessed_type(filename: &str) -> Option<&'static str> {
    if filename == "-" {
        return None;
    }
    let ext = Path::new(filename)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    Some(match ext.as_deref() {
        Some("gif") => "image/gif",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("txt") => "text/plain",
        Some("htm" | "html") => "text/html",
        Some("pdf") => "application/pdf",
        Some("xml") => "application/xml",
        _ => "application/octet-stream",
    })
}

/// The part's head after its delimiter (`--` and the boundary, a part of its own): the end
/// of the delimiter's line, Content-Disposition and Content-Type, and the blank line.
fn part_head(f: &Field) -> Vec<u8> {
    let (filename, guess_from) = match (&f.content, &f.filename) {
        (Content::Upload(path), given) => {
            let base = Path::new(path)
                .file_name()
                .map_or_else(|| path.clone(), |b| b.to_string_lossy().into_owned());
            (Some(given.clone().unwrap_or(base)), Some(path.clone()))
        }
        (_, Some(given)) => (Some(given.clone()), Some(given.clone())),
        (_, None) => (None, None),
    };
    let mut head = "\r\nContent-Disposition: form-data".to_string();
    if !f.name.is_empty() {
        head.push_str(&format!("; name=\"{}\"", escaped(&f.name)));
    }
    if let Some(n) = &filename {
        head.push_str(&format!("; filename=\"{}\"", escaped(n)));
    }
    let guessed = guess_from.as_deref().and_then(guessed_type);
    if let Some(t) = f.mime.as_deref().or(guessed) {
        head.push_str(&format!("\r\nContent-Type: {t}"));
    }
    head.push_str("\r\n\r\n");
    head.into_bytes()
}

/// Where a file name (`-`: stdin) is read from, byte for byte.
fn raw(path: &str) -> BodySource {
    match path {
        "-" => BodySource::Stdin {
            strip_newlines: false,
        },
        p => BodySource::File {
            path: PathBuf::from(p),
            strip_newlines: false,
        },
    }
}

/// The `-F` body: every field's delimiter, head, content and CRLF, then the closing
/// delimiter; and its Content-Type with the boundary (added to a Content-Type given with
/// -H, as curl does). The boundary stands as [`BOUNDARY_PLACEHOLDER`] until the body is
/// read: curl draws it at random, which makes every run of the same command line a
/// different request, whose job (`fleet::job`) would get a new Idempotency-Key and whose
/// bytes a server comparing a replay with the first request would find changed.
fn multipart(args: &[String], headers: &mut Vec<(String, String)>) -> Result<BodySpec, UsageError> {
    let boundary = BOUNDARY_PLACEHOLDER;
    let mut parts = Vec::new();
    for arg in args {
        let f = field(arg)?;
        parts.push(BodySource::Boundary);
        parts.push(BodySource::Inline(part_head(&f)));
        parts.push(match &f.content {
            Content::Text(t) => BodySource::Inline(t.clone().into_bytes()),
            Content::Upload(p) | Content::Read(p) => raw(p),
        });
        parts.push(BodySource::Inline(b"\r\n".to_vec()));
    }
    parts.push(BodySource::Boundary);
    parts.push(BodySource::Inline(b"--\r\n".to_vec()));
    match headers
        .iter_mut()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        Some((_, v)) => *v = format!("{v}; boundary={boundary}"),
        None => headers.push((
            "Content-Type".into(),
            format!("multipart/form-data; boundary={boundary}"),
        )),
    }
    Ok(BodySpec {
        parts,
        separator: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(s: &str) -> String {
        match urlencoded(s) {
            BodySource::Inline(b) => String::from_utf8(b).unwrap(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn urlencode_forms_as_curl_7_88() {
        // curl 7.88.1 sends these bytes for the same --data-urlencode values.
        assert_eq!(encoded("a b&c=d"), "a b&c=d");
        assert_eq!(encoded("=x y"), "x+y");
        assert_eq!(encoded("n=v w=z&"), "n=v+w%3Dz%26");
        assert_eq!(encoded("-._~!*()"), "-._~%21%2A%28%29");
        assert_eq!(encoded("a=b@c"), "a=b%40c");
        assert_eq!(encoded("x="), "x=");
        assert_eq!(encoded("="), "");
        assert_eq!(encoded("é"), "%C3%A9");
        assert_eq!(
            urlencoded("m@f.txt"),
            BodySource::Encoded {
                prefix: b"m=".to_vec(),
                file: Some("f.txt".into())
            }
        );
        assert_eq!(
            urlencoded("@-"),
            BodySource::Encoded {
                prefix: vec![],
                file: None
            }
        );
    }

    #[test]
    fn query_is_appended_as_curl_does() {
        let cases = [
            ("http://h/p", "a=1&b=2", "http://h/p?a=1&b=2"),
            ("http://h/p?x=y", "a=1", "http://h/p?x=y&a=1"),
            ("http://h/p?", "a=1", "http://h/p?a=1"),
            ("http://h/p", "", "http://h/p"),
            ("http://h/p#f", "a=1", "http://h/p?a=1#f"),
            ("http://h/p", "b=2 3", "http://h/p?b=2%203"),
        ];
        for (u, data, want) in cases {
            let mut url = Url::parse(u).unwrap();
            append_query(&mut url, data.as_bytes());
            assert_eq!(url.as_str(), want, "{u} + {data}");
        }
    }

    #[test]
    fn form_fields_as_curl_reads_them() {
        let f = field("k=v;type=text/html").unwrap();
        assert_eq!(f.content, Content::Text("v".into()));
        assert_eq!(f.mime.as_deref(), Some("text/html"));
        let f = field("l=a;type=text/plain;charset=utf-8;filename=x").unwrap();
        assert_eq!(f.mime.as_deref(), Some("text/plain;charset=utf-8"));
        assert_eq!(f.filename.as_deref(), Some("x"));
        let f = field("a=\"x;y\"").unwrap();
        assert_eq!(f.content, Content::Text("x;y".into()));
        let f = field("b=\"q\\\"z\"; type=text/a").unwrap();
        assert_eq!(f.content, Content::Text("q\"z".into()));
        assert_eq!(f.mime.as_deref(), Some("text/a"));
        let f = field("e=@up.txt;filename=\"a;b\"").unwrap();
        assert_eq!(f.content, Content::Upload("up.txt".into()));
        assert_eq!(f.filename.as_deref(), Some("a;b"));
        assert_eq!(field("g=<f").unwrap().content, Content::Read("f".into()));
        assert_eq!(field("c=").unwrap().content, Content::Text(String::new()));
    }

    #[test]
    fn bad_form_fields_do_not_quote_values() {
        for bad in [
            "noequals",
            "token=abc;hunter2",
            "f=@a,b",
            "f=@",
            "t=\"hunter2",
            "k=v;type=",
        ] {
            let e = field(bad).unwrap_err().0;
            assert!(!e.contains("hunter2") && e.starts_with("-F"), "{bad}: {e}");
        }
    }

    #[test]
    fn part_heads_as_curl_7_88() {
        let head = |arg: &str| {
            let head = String::from_utf8(part_head(&field(arg).unwrap())).unwrap();
            format!("--B{head}")
        };
        // curl 7.88.1 sends these heads for the same -F values.
        assert_eq!(
            head("a=1"),
            "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n"
        );
        assert_eq!(
            head("f=@dir/up.txt"),
            "--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"up.txt\"\r\nContent-Type: text/plain\r\n\r\n"
        );
        assert_eq!(
            head("j=@up.txt;filename=other.dat"),
            "--B\r\nContent-Disposition: form-data; name=\"j\"; filename=\"other.dat\"\r\nContent-Type: text/plain\r\n\r\n"
        );
        assert_eq!(
            head("h=@data.bin"),
            "--B\r\nContent-Disposition: form-data; name=\"h\"; filename=\"data.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        );
        assert_eq!(
            head("g=<up.txt"),
            "--B\r\nContent-Disposition: form-data; name=\"g\"\r\n\r\n"
        );
        assert_eq!(
            head("a=@-"),
            "--B\r\nContent-Disposition: form-data; name=\"a\"; filename=\"-\"\r\n\r\n"
        );
        assert_eq!(
            head("n\"m=x"),
            "--B\r\nContent-Disposition: form-data; name=\"n%22m\"\r\n\r\n"
        );
        assert_eq!(head("=1"), "--B\r\nContent-Disposition: form-data\r\n\r\n");
        assert_eq!(
            head("p=a;filename=f.PNG"),
            "--B\r\nContent-Disposition: form-data; name=\"p\"; filename=\"f.PNG\"\r\nContent-Type: image/png\r\n\r\n"
        );
    }
}
