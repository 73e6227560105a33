//! curl's flags for conditional and resumed requests, which a job that fetches a file again
//! and again uses: resume a partial `-o` file (`-C -`), fetch only when the resource changed
//! (`--etag-compare`, `--etag-save`, `-z`), keep the server's modification time (`-R`), and
//! send cookies (`-b`). Their checks against other flags are in `config::conditional`; the
//! files they name are read before anything is sent.

use clap::Args;
use std::path::PathBuf;

/// The flags of a job that fetches a file when it changed, under "Request" (those about the
/// `-o` file under "Output").
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Request")]
pub struct ConditionalFlags {
    /// Resume the -o or -O file from its size: only '-' is accepted (curl's '-C -').
    ///
    /// Asks for `Range: bytes=SIZE-` and keeps the answer only when it is a 206 whose
    /// Content-Range runs from SIZE to the end and whose body is exactly that range; the
    /// file is untouched until the whole is in place. A 200 (the server cannot resume) or a
    /// 206 at another offset: exit 6, the file as it was (curl exits 33). A 416 saying the
    /// length is SIZE: already complete, exit 0. A missing or empty file: a full download.
    /// With --etag-compare's ETag, If-Range is sent too: a file changed on the server comes
    /// whole (200) and replaces FILE; without it, a complete FILE of an older version gets
    /// the new version's tail appended (as with curl).
    /// Needs -o FILE or -O (in --output-dir when given); an explicit offset (-C N) is
    /// refused. A run that ends without the whole body (attempts, deadline, signal) leaves
    /// the bytes it has in .FILE.retry-http-partial beside FILE (FILE keeps its content);
    /// the next -C - run resumes them if the URL and the validator are the same, else starts
    /// over with a warning. Removed after a day.
    #[arg(
        hide_short_help = true,
        short = 'C',
        long = "continue-at",
        value_name = "-",
        allow_hyphen_values = true,
        help_heading = "Output"
    )]
    pub continue_at: Option<String>,

    /// Set the -o or -O file's modification time from the response's Last-Modified.
    #[arg(hide_short_help = true, short = 'R', long, help_heading = "Output")]
    pub remote_time: bool,

    /// After a successful run, write the response's ETag to FILE (an empty file when it has
    /// none); a 304 leaves FILE as it was. Written by temporary file and rename.
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub etag_save: Option<PathBuf>,

    /// Send If-None-Match with the ETag in FILE (its first line, at most 8 KiB); a 304 Not
    /// Modified is then a success (exit 0) that leaves -o as it was. A missing or empty
    /// FILE sends no If-None-Match when --etag-save is given too (the first run), and is a
    /// usage error otherwise.
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub etag_compare: Option<PathBuf>,

    /// Send If-Modified-Since DATE, or with a leading '-' If-Unmodified-Since; a name of an
    /// existing file gives its modification time.
    ///
    /// DATE is an HTTP-date ('Wed, 01 Sep 2021 12:18:00 GMT'), curl's looser forms ('Wed 01
    /// Sep 2021 12:18:00', '1 Sep 2021', 'Sep 1 2021 12:18 +0200'), YYYYMMDD [HH:MM[:SS]] or
    /// YYYY-MM-DD, in UTC unless a zone is given. A 304, or a 200 whose Last-Modified shows
    /// the condition unmet, is a success that leaves -o as it was (-w reports 304 for that
    /// 200, as curl). A text that is no date and names no file sends no condition, with a
    /// warning, as curl does: the first run of '-z FILE -o FILE' downloads FILE. An empty
    /// DATE is a usage error.
    #[arg(
        hide_short_help = true,
        short = 'z',
        long = "time-cond",
        value_name = "DATE|FILE",
        allow_hyphen_values = true
    )]
    pub time_cond: Option<String>,

    /// Send cookies: 'NAME=VALUE; NAME2=VALUE2' as given, or (no '=') a Netscape cookie
    /// file, read once (at most 4 MiB), whose cookies are sent only where their domain and
    /// path match, 'secure' ones only over https, expired ones never (repeatable).
    ///
    /// Cookies go to the URL's host only: a redirect to another origin drops them. Answers'
    /// Set-Cookie are not stored. A -H 'Cookie: ...' replaces them. '-b -' (stdin) is refused.
    #[arg(
        hide_short_help = true,
        short = 'b',
        long = "cookie",
        value_name = "DATA|FILE"
    )]
    pub cookie: Vec<String>,

    /// curl's flag, refused: Set-Cookie answers are not stored.
    #[arg(
        hide_short_help = true,
        short = 'c',
        long = "cookie-jar",
        hide = true,
        value_name = "FILE"
    )]
    pub cookie_jar: Option<String>,
}
