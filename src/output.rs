//! The response body's destination: stdout or `-o FILE`, written only for the final
//! attempt, and only when it is complete.
//!
//! Each attempt writes into a spool. For a regular `-o` file the spool is a temporary file
//! beside it, renamed into place on success, so an existing file is never clobbered by a
//! failed attempt. For stdout and for special files (`/dev/null`, a FIFO) the spool is held
//! in memory up to [`IN_MEMORY`] (1 MiB), then moved into an unnamed temporary file in
//! `$TMPDIR`, copied out on success: memory stays bounded, a failed attempt leaves nothing
//! behind, and a small body needs no temporary folder at all (a `FROM scratch` image has
//! no /tmp). `--no-buffer` writes to stdout as bytes arrive instead. In a
//! batch, a transfer's "stdout" is a [`Capture`] of its own, given to its [`Output`]
//! ([`Output::capture_stdout`]) and written to stdout in URL order ([`Held::write_to`]).

use crate::config::{OutputConfig, UsageError};
use crate::files::{
    self, folder, follow_link, make_folders, nearest_folder, remove_folders, temp_beside, temp_in,
};
use crate::http::transport::Head;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// The most bytes an unnamed spool holds in memory; past it, the body moves into an
/// unnamed temporary file in `$TMPDIR`. A health check's or an API's answer fits; a
/// download does not, and a body whose Content-Length is over it goes to the file at once.
pub const IN_MEMORY: u64 = 1 << 20;

/// Where the final body goes.
#[derive(Debug)]
enum Destination {
    Stdout,
    /// A regular file (or one that does not exist yet): temp file beside it, then rename.
    Replace(PathBuf),
    /// A special file such as a FIFO: written in place, once.
    Special(PathBuf),
    /// /dev/null: nothing can see a partial write, so nothing is spooled.
    Null,
}

/// The output side of a run.
#[derive(Debug)]
pub struct Output {
    target: Destination,
    /// With `--create-dirs` and folders of `-o` missing: the nearest that exists, where the
    /// spool is written until the others are made, as the file is put in place.
    made_in: Option<PathBuf>,
    include: bool,
    no_buffer: bool,
    /// `-D -` with the body on stdout: the final head goes just before its body, as curl
    /// writes it (only the final answer's: see [`Output::head_dumped`]).
    dump_first: bool,
    /// The `-D -` head has reached stdout with a body.
    head_dumped: std::sync::atomic::AtomicBool,
    /// The body is read back before it is committed (a readiness condition), so it is
    /// spooled even when it is to be thrown away.
    inspect: bool,
    /// Where "stdout" goes for a transfer of a batch (`None`: the process's stdout).
    captured: Option<std::sync::Arc<Capture>>,
}

/// One attempt's spooled body, not yet visible to anyone.
pub enum Spool {
    /// A temporary file beside the `-o` target.
    Named(NamedTempFile),
    /// Held in memory, at most [`IN_MEMORY`] bytes; moved into an `Anonymous` spool when a
    /// write would pass that.
    Memory(Vec<u8>),
    /// An unnamed temporary file, copied out on commit.
    Anonymous(File),
    /// Writing straight to stdout (`--no-buffer`), unbuffered: counts the bytes that
    /// escaped.
    Direct(File, u64),
    /// Thrown away as it arrives (`-o /dev/null`).
    Discard,
}

impl Write for Spool {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Spool::Memory(held) = self
            && (held.len() + data.len()) as u64 > IN_MEMORY
        {
            *self = Spool::Anonymous(spill(held)?);
        }
        match self {
            Spool::Named(f) => f.write(data),
            Spool::Memory(held) => {
                held.extend_from_slice(data);
                Ok(data.len())
            }
            Spool::Anonymous(f) => f.write(data),
            Spool::Direct(out, n) => {
                let written = out.write(data)?;
                *n += written as u64;
                Ok(written)
            }
            Spool::Discard => Ok(data.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Spool::Named(f) => f.flush(),
            Spool::Anonymous(f) => f.flush(),
            Spool::Direct(out, _) => out.flush(),
            Spool::Memory(_) | Spool::Discard => Ok(()),
        }
    }
}

impl crate::http::transport::Sink for Spool {
    fn file(&self) -> Option<&File> {
        match self {
            Spool::Named(f) => Some(f.as_file()),
            Spool::Anonymous(f) => Some(f),
            Spool::Memory(_) | Spool::Direct(..) | Spool::Discard => None,
        }
    }
}

impl Spool {
    /// Bytes written to the spool so far (0 when streaming).
    #[allow(
        clippy::len_without_is_empty,
        reason = "the size of a spooled body, not of a collection: nothing asks whether it is empty"
    )]
    pub fn len(&self) -> u64 {
        match self {
            Spool::Named(f) => f.as_file().metadata().map_or(0, |m| m.len()),
            Spool::Anonymous(f) => f.metadata().map_or(0, |m| m.len()),
            Spool::Memory(held) => held.len() as u64,
            Spool::Direct(..) | Spool::Discard => 0,
        }
    }

    /// The spool's bytes from `from` on, if there are at most `max` of them (`None`: more);
    /// nothing for a spool that keeps nothing.
    pub fn contents(&self, from: u64, max: u64) -> io::Result<Option<Vec<u8>>> {
        let file = match self {
            Spool::Named(f) => f.as_file(),
            Spool::Anonymous(f) => f,
            Spool::Memory(held) => {
                let rest = held.get(usize::try_from(from).unwrap_or(usize::MAX)..);
                let rest = rest.unwrap_or_default();
                return Ok((rest.len() as u64 <= max).then(|| rest.to_vec()));
            }
            Spool::Direct(..) | Spool::Discard => return Ok(Some(Vec::new())),
        };
        let len = file.metadata()?.len().saturating_sub(from);
        if len > max {
            return Ok(None);
        }
        let mut bytes = vec![0; usize::try_from(len).unwrap_or(0)];
        crate::platform::read_exact_at(file, &mut bytes, from)?;
        Ok(Some(bytes))
    }

    /// Whether the spool is a temporary file renamed into place on commit.
    pub fn is_named(&self) -> bool {
        matches!(self, Spool::Named(_))
    }

    /// Bytes already visible to the reader of stdout (only `--no-buffer` has any).
    pub fn escaped(&self) -> u64 {
        match self {
            Spool::Direct(_, n) => *n,
            _ => 0,
        }
    }
}

/// A memory spool's bytes moved into a new unnamed temporary file in `$TMPDIR` (freed after
/// the exit: see `release`); the error says what failed and what to do.
fn spill(held: &mut Vec<u8>) -> io::Result<File> {
    let mut f = tempfile::tempfile().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "the body is over {} MiB, held in a temporary file from there on, and none can be made in {} ({e}): set TMPDIR to a writable folder, or use -o FILE (or --no-buffer for stdout)",
                IN_MEMORY >> 20,
                std::env::temp_dir().display()
            ),
        )
    })?;
    crate::process::release::register(&f);
    f.write_all(held)?;
    *held = Vec::new();
    Ok(f)
}

/// Checks `-o FILE` before anything is sent: its folder exists (with `create_dirs`, the
/// nearest that does, returned too) and is writable, and it is not a folder itself.
fn check_path(
    typed: &Path,
    create_dirs: bool,
) -> Result<(Destination, Option<PathBuf>), UsageError> {
    let shown = typed.display().to_string();
    // Through a symbolic link, write where it points (as curl does), not over the link.
    let resolved = follow_link(typed).map_err(|e| {
        UsageError(format!(
            "-o {shown} is a link that cannot be followed ({e}): expected a file path"
        ))
    })?;
    let path = resolved.as_path();
    if files::names_a_folder(typed) {
        return Err(UsageError(format!(
            "-o {shown} names a folder: expected a file path"
        )));
    }
    if let Some(existing) = existing_destination(path, &shown)? {
        return Ok((existing, None));
    }
    if path.file_name().is_some_and(|n| n.len() > files::NAME_MAX) {
        return Err(UsageError(format!(
            "-o {shown}: the file name is longer than {} bytes: expected a shorter one",
            files::NAME_MAX
        )));
    }
    let dir = folder(path);
    let made_in = folder_to_make(dir, &shown, create_dirs)?;
    // Prove we can write there now, rather than after a long download.
    let dir = made_in.as_deref().unwrap_or(dir);
    files::probe_write(dir).map_err(|why| {
        UsageError(format!(
            "-o {shown}: cannot write in {}: {why}",
            dir.display()
        ))
    })?;
    Ok((Destination::Replace(path.to_path_buf()), made_in))
}

/// Whether `path` is `/dev/null`, which takes what `-o` or `-D` write and throws it away:
/// nothing is written there (where there is no /dev, as in an empty root, nothing could be),
/// and several outputs may name it at once.
pub fn is_null(path: &Path) -> bool {
    path == Path::new("/dev/null")
}

/// What an `-o` path that exists and is not a regular file is written as: `/dev/null`,
/// or a special file (a FIFO, a device) written in place. A folder or a socket is a usage
/// error; `None`: a regular file, or nothing there yet (the caller checks its folder).
/// `/dev/null` where there is none (an empty root, as a `FROM scratch` image run without
/// a container runtime's `/dev`) still means "throw the body away", never a file to make.
fn existing_destination(path: &Path, shown: &str) -> Result<Option<Destination>, UsageError> {
    let null = is_null(path);
    match std::fs::metadata(path) {
        Err(e) if null && e.kind() == std::io::ErrorKind::NotFound => Ok(Some(Destination::Null)),
        Ok(m) if m.is_dir() => Err(UsageError(format!(
            "-o {shown} is a directory: expected a file path"
        ))),
        Ok(m) if crate::platform::is_socket(&m.file_type()) => Err(UsageError(format!(
            "-o {shown} is a socket: expected a file path (or a FIFO or a device)"
        ))),
        Ok(m) if !m.is_file() && null => Ok(Some(Destination::Null)),
        Ok(m) if !m.is_file() => Ok(Some(Destination::Special(path.to_path_buf()))),
        _ => Ok(None),
    }
}

/// The `-o` file's folder `dir` must be a folder; when it does not exist yet, with
/// `create_dirs` the nearest folder that does is returned (where the missing ones are made
/// once the file is put in place), else it is a usage error.
fn folder_to_make(
    dir: &Path,
    shown: &str,
    create_dirs: bool,
) -> Result<Option<PathBuf>, UsageError> {
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError(format!(
            "-o {shown}: {} is not a folder: expected a path in a folder",
            dir.display()
        )));
    }
    match dir.is_dir() {
        true => Ok(None),
        false if create_dirs => Ok(Some(
            nearest_folder(dir).map_err(|e| UsageError(format!("-o {shown}: {e}")))?,
        )),
        false => Err(UsageError(format!(
            "-o {shown}: the folder {} does not exist: create it first, or give --create-dirs",
            dir.display()
        ))),
    }
}

/// The usage error for a temporary folder where no spool can be made.
fn unusable_tmpdir(e: &io::Error) -> UsageError {
    UsageError(format!(
        "cannot make a temporary file in {} ({e}): a body over {} MiB is held there until it is complete, and this request's answer could not be asked for again; set TMPDIR to a writable folder, or use -o FILE (or --no-buffer for stdout)",
        std::env::temp_dir().display(),
        IN_MEMORY >> 20
    ))
}

/// Checks a transfer's `-o` file before anything is sent, as a run of one URL checks its
/// own when its output is prepared (`-` is stdout): a usage error if it cannot work.
pub fn check_output(path: &Path, create_dirs: bool) -> Result<(), UsageError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    check_path(path, create_dirs).map(|_| ())
}

/// Checks `-D FILE` before anything is sent, as `-o` is checked (`-` is stdout); see
/// `files::check_writable`.
pub fn check_dump_header(path: &Path) -> Result<(), UsageError> {
    // `/dev/null` throws the head away even where there is no /dev (see `is_null`).
    if path.as_os_str() == "-" || is_null(path) {
        return Ok(());
    }
    files::check_writable(path, &format!("-D {}", path.display())).map_err(UsageError)
}

impl Output {
    /// Validates the destination, `path` (a transfer's `-o` file; `None` or `-`: stdout),
    /// written as `cfg` says (a usage error if `-o` cannot work).
    pub fn prepare(cfg: &OutputConfig, path: Option<&Path>) -> Result<Output, UsageError> {
        let (target, made_in) = match path {
            None => (Destination::Stdout, None),
            Some(p) if p.as_os_str() == "-" => (Destination::Stdout, None),
            Some(p) => check_path(p, cfg.create_dirs)?,
        };
        let dump_stdout = cfg
            .dump_header
            .as_ref()
            .is_some_and(|d| d.as_os_str() == "-");
        Ok(Output {
            dump_first: dump_stdout && matches!(target, Destination::Stdout),
            target,
            made_in,
            include: cfg.include,
            no_buffer: cfg.no_buffer,
            head_dumped: Default::default(),
            inspect: cfg.inspect,
            captured: None,
        })
    }

    /// For a request that must not be sent twice (not idempotent): whether a body over
    /// [`IN_MEMORY`] could be spooled, checked before anything is sent. Its answer would
    /// otherwise be lost after the server processed it; an idempotent request can simply be
    /// run again once TMPDIR is set, so it needs no temporary folder for a small body.
    pub fn check_spill(&self) -> Result<(), UsageError> {
        match self.spools_unnamed() {
            true => tempfile::tempfile()
                .map(drop)
                .map_err(|e| unusable_tmpdir(&e)),
            false => Ok(()),
        }
    }

    /// Whether a body goes through an unnamed temporary file: stdout without
    /// `--no-buffer`, a special file, `/dev/null` when a condition reads the body.
    fn spools_unnamed(&self) -> bool {
        match self.target {
            Destination::Stdout => !self.no_buffer,
            Destination::Special(_) => true,
            Destination::Null => self.inspect,
            Destination::Replace(_) => false,
        }
    }

    /// Whether a broken body can be kept and resumed: a regular `-o` file without `-i`.
    pub fn resumable(&self) -> bool {
        matches!(self.target, Destination::Replace(_)) && !self.include
    }

    /// A fresh spool for one attempt's body, with the head already written when `-i`.
    pub fn begin(&self, head: &Head) -> io::Result<Spool> {
        let mut spool = match &self.target {
            Destination::Stdout if self.no_buffer => Spool::Direct(self.stdout_file()?, 0),
            Destination::Null if !self.inspect => Spool::Discard,
            Destination::Replace(path) => {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // The file gets the mode a plain create would give it (0666 less the umask),
                // or keeps the mode of the file it replaces exactly.
                let (prefix, suffix) = (format!(".{name}."), ".part");
                let tmp = match &self.made_in {
                    Some(dir) => temp_in(dir, path, &prefix, suffix)?,
                    None => temp_beside(path, &prefix, suffix)?,
                };
                crate::process::interrupt::track_temp(tmp.path());
                crate::process::release::register(tmp.as_file());
                Spool::Named(tmp)
            }
            Destination::Stdout | Destination::Special(_) | Destination::Null => {
                // A body declared over the bound goes straight into the file, where a plain
                // body can be spliced. Where none can be made, a write past the bound says
                // so (the head of a HEAD or a 304 declares a length no body follows).
                match declared_length(head).filter(|n| *n > IN_MEMORY) {
                    Some(_) => spill(&mut Vec::new())
                        .map_or_else(|_| Spool::Memory(Vec::new()), Spool::Anonymous),
                    None => Spool::Memory(Vec::new()),
                }
            }
        };
        if self.dump_first {
            spool.write_all(&head_text(head))?;
            if let Spool::Direct(..) = spool {
                self.note_head_dumped();
            }
        }
        if self.include {
            spool.write_all(&head_text(head))?;
        }
        Ok(spool)
    }

    /// Whether `-D -` wrote the head with a body already (the head of the answer whose body
    /// was committed; under `--no-buffer`, of the first answer streamed): the run's end
    /// does not write it again. A failed attempt's head never reaches stdout otherwise.
    pub fn head_dumped(&self) -> bool {
        self.head_dumped.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn note_head_dumped(&self) {
        self.head_dumped
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Makes a complete body visible: rename into place, or copy to stdout / the special
    /// file. Opening a FIFO waits for a reader, at most `left` (the time before the
    /// deadline); past it the error is `TimedOut`.
    pub fn commit(&self, spool: Spool, left: Option<std::time::Duration>) -> io::Result<()> {
        match spool {
            Spool::Named(tmp) => {
                let path = tmp.path().to_path_buf();
                let result = match &self.target {
                    Destination::Replace(dest) => self.put_in_place(tmp, dest),
                    _ => Ok(()),
                };
                crate::process::interrupt::untrack_temp(&path);
                result
            }
            Spool::Anonymous(mut f) => {
                f.seek(SeekFrom::Start(0))?;
                match &self.target {
                    Destination::Null => Ok(()),
                    Destination::Special(path) => {
                        let mut dest = open_within(path, left)?;
                        io::copy(&mut f, &mut dest)?;
                        dest.flush()
                    }
                    _ => {
                        // Between two files the kernel copies (copy_file_range, splice).
                        let mut out = self.stdout_file()?;
                        if self.dump_first {
                            self.note_head_dumped();
                        }
                        io::copy(&mut f, &mut out)?;
                        Ok(())
                    }
                }
            }
            Spool::Memory(held) => match &self.target {
                Destination::Null => Ok(()),
                Destination::Special(path) => {
                    let mut dest = open_within(path, left)?;
                    dest.write_all(&held)?;
                    dest.flush()
                }
                _ => {
                    if self.dump_first {
                        self.note_head_dumped();
                    }
                    self.write_stdout(&held)
                }
            },
            Spool::Direct(..) | Spool::Discard => Ok(()),
        }
    }

    /// Renames the complete spool over `dest`, making the missing folders first with
    /// `--create-dirs` (and removing them again if the rename fails).
    fn put_in_place(&self, tmp: NamedTempFile, dest: &Path) -> io::Result<()> {
        let made = match self.made_in {
            Some(_) => make_folders(folder(dest))?,
            None => Vec::new(),
        };
        crate::files::persist(tmp, dest)
            .map(|f| crate::process::release::forget(&f))
            .map_err(|e| {
                remove_folders(&made);
                e.error
            })
    }

    /// Sends this output's stdout (the body, `-D -`, `-w`) to `capture` from now on: a
    /// transfer of a batch, whose output waits there for its turn.
    pub fn capture_stdout(&mut self, capture: std::sync::Arc<Capture>) {
        self.captured = Some(capture);
    }

    /// This output's stdout as a file: the process's (a duplicate of descriptor 1), or the
    /// capture's (see [`Capture::file`]).
    fn stdout_file(&self) -> io::Result<File> {
        match &self.captured {
            Some(c) => c.file(),
            None => raw_stdout(),
        }
    }

    /// Writes `bytes` to this output's stdout.
    fn write_stdout(&self, bytes: &[u8]) -> io::Result<()> {
        match &self.captured {
            Some(c) => c.write_all(bytes),
            None => raw_stdout()?.write_all(bytes),
        }
    }

    /// Writes text that is not a body (`-D -`, `-w`) to this output's stdout; a reader
    /// that went away is no error.
    pub fn print_bytes(&self, bytes: &[u8]) -> io::Result<()> {
        let written = match &self.captured {
            Some(c) => c.write_all(bytes),
            None => return print_bytes(bytes),
        };
        match written {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e),
            _ => Ok(()),
        }
    }

    /// [`Output::print_bytes`] of `text`, its error said as `print_stdout` says it.
    pub fn print_stdout(&self, text: &str) -> Result<(), String> {
        self.print_bytes(text.as_bytes())
            .map_err(|e| format!("cannot write to stdout: {e}"))
    }

    /// Throws a failed attempt's body away (the temporary file is removed).
    pub fn discard(&self, spool: Spool) {
        if let Spool::Named(tmp) = spool {
            crate::process::interrupt::untrack_temp(tmp.path());
            drop(tmp);
        }
    }
}

/// The most bytes a transfer of a batch holds in memory for stdout while it waits for its
/// turn (see [`Capture`]); past it they go to an unnamed temporary file in `$TMPDIR`. At
/// most `--parallel-max` outputs wait at once (see `session::schedule`), so at most that
/// many times 128 KiB is held: 6.25 MiB at the default of 50, 125 MiB at the most, 1000.
pub const HELD: usize = 128 << 10;

/// The stdout of one transfer of a batch (its body, `-D -`, `-w`), held until its turn:
/// in memory up to [`HELD`] bytes, in an unnamed temporary file past that. The batch gives
/// it to the transfer's [`Output`] ([`Output::capture_stdout`]) and takes what it holds
/// ([`Capture::take`]) once the transfer has ended. Only that transfer writes to it.
#[derive(Debug, Default)]
pub struct Capture(std::sync::Mutex<Held>);

/// What a [`Capture`] holds.
#[derive(Debug)]
pub enum Held {
    /// At most [`HELD`] bytes.
    Memory(Vec<u8>),
    /// More, in an unnamed temporary file (its offset at its end).
    File(File),
}

impl Default for Held {
    fn default() -> Held {
        Held::Memory(Vec::new())
    }
}

impl Capture {
    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        // A panic elsewhere while holding it leaves plain data: still usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `bytes`, moving what is held into a file once it would pass [`HELD`].
    fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let mut held = self.lock();
        if let Held::Memory(v) = &mut *held
            && v.len() + bytes.len() > HELD
        {
            *held = Held::File(capture_file(v)?);
        }
        match &mut *held {
            Held::Memory(v) => {
                v.extend_from_slice(bytes);
                Ok(())
            }
            Held::File(f) => f.write_all(bytes),
        }
    }

    /// The capture as a file of its own (what is held in memory moved into it first), for
    /// a copy between files or `--no-buffer`: a descriptor sharing the file's offset.
    fn file(&self) -> io::Result<File> {
        let mut held = self.lock();
        if let Held::Memory(v) = &mut *held {
            *held = Held::File(capture_file(v)?);
        }
        match &*held {
            Held::File(f) => f.try_clone(),
            Held::Memory(_) => Err(io::Error::other("the captured output has no file")),
        }
    }

    /// What was written, taken out (the capture holds nothing after).
    pub fn take(&self) -> Held {
        std::mem::take(&mut *self.lock())
    }
}

impl Held {
    /// Writes what is held to `out` (stdout, opened once by the batch: see [`stdout`]); a
    /// reader that went away is no error: `Ok(false)` then (`true`: written).
    pub fn write_to(self, mut out: &File) -> io::Result<bool> {
        let written = match self {
            Held::Memory(v) => out.write_all(&v),
            // Between two files the kernel copies (copy_file_range, sendfile).
            Held::File(mut f) => f
                .seek(SeekFrom::Start(0))
                .and_then(|_| io::copy(&mut f, &mut out).map(drop)),
        };
        match written {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
            Err(e) => Err(e),
            Ok(()) => Ok(true),
        }
    }
}

/// An unnamed temporary file holding `held` (emptied), for a capture past [`HELD`].
fn capture_file(held: &mut Vec<u8>) -> io::Result<File> {
    let mut f = tempfile::tempfile().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "the transfer's output is over {} KiB, held in a temporary file until its turn, and none can be made in {} ({e}): set TMPDIR to a writable folder",
                HELD >> 10,
                std::env::temp_dir().display()
            ),
        )
    })?;
    f.write_all(held)?;
    *held = Vec::new();
    Ok(f)
}

/// Standard output as a file of its own, opened once by a batch for every transfer's
/// output (see [`Held::write_to`]).
pub fn stdout() -> io::Result<File> {
    raw_stdout()
}

/// Writes text that is not a body (`--explain`, `simulate`, `-w`) to stdout. A reader that
/// went away (`| head -1`, a closed pipe) ends the writing quietly, as for a body; any
/// other failure (a full disk, `>/dev/full`) is an error, with what it was.
pub fn print_stdout(text: &str) -> Result<(), String> {
    print_bytes(text.as_bytes()).map_err(|e| format!("cannot write to stdout: {e}"))
}

/// Writes `bytes` to stdout; a reader that went away is no error.
fn print_bytes(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}

/// Standard output as an unbuffered file of its own (a duplicate of descriptor 1): the
/// body goes out in the chunks it arrives in, and copies from the spool can be done by the
/// kernel. Nothing else writes to stdout before the body. A transfer of a batch writes to
/// its [`Capture`] instead (see [`Output::stdout_file`]).
fn raw_stdout() -> io::Result<File> {
    #[cfg(unix)]
    let out = File::from(std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned()?);
    #[cfg(windows)]
    let out =
        File::from(std::os::windows::io::AsHandle::as_handle(&io::stdout()).try_clone_to_owned()?);
    // F_SETPIPE_SZ is Linux's: elsewhere (and on the portable paths, see `platform`) the
    // pipe keeps the size the system gave it.
    #[cfg(target_os = "linux")]
    if crate::platform::linux_calls()
        && out
            .metadata()
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type()))
    {
        // A larger pipe buffer halves the context switches with the reader on the other
        // end; if the system refuses, the default buffer works too.
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on a descriptor we own, with an integer argument.
        unsafe { libc::fcntl(out.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    }
    Ok(out)
}

/// Whether `out` (stdout, as [`stdout`] opened it) has a reader that may go away: a pipe
/// or a socket, on a system with `poll` (see [`await_reader_gone`]).
pub fn reader_may_go(out: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        out.metadata().is_ok_and(|m| {
            let t = m.file_type();
            t.is_fifo() || t.is_socket()
        })
    }
    #[cfg(not(unix))]
    {
        let _ = out;
        false
    }
}

/// Waits until the reader of `out` goes away, when [`reader_may_go`]: true then; false
/// when it cannot be watched. A pipe whose reader has closed it polls as an error
/// (POLLERR), a socket whose peer has gone as a hang-up (POLLHUP): no byte is written or
/// read to know it.
pub fn await_reader_gone(out: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let mut fd = libc::pollfd {
            fd: out.as_raw_fd(),
            events: 0,
            revents: 0,
        };
        loop {
            // SAFETY: poll reads and writes the one pollfd given, for a descriptor we own.
            let n = unsafe { libc::poll(&mut fd, 1, -1) };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return n > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0;
        }
    }
    #[cfg(not(unix))]
    {
        let _ = out;
        false
    }
}

/// Opens a special file for writing, giving up after `left`: a FIFO with no reader would
/// block the open for ever.
fn open_within(path: &Path, left: Option<std::time::Duration>) -> io::Result<File> {
    let owned = path.to_path_buf();
    let open = move || std::fs::OpenOptions::new().write(true).open(owned);
    match crate::process::within::within(left, open) {
        Ok(opened) => opened,
        Err(crate::process::within::Missed::NoThread(e)) => Err(e),
        Err(crate::process::within::Missed::Late) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no reader opened the FIFO before the deadline",
        )),
    }
}

/// The body's length as the head declares it (Content-Length), when it is a number.
fn declared_length(head: &Head) -> Option<u64> {
    head.value("content-length")?.trim().parse().ok()
}

/// The status line and headers, as `-i` shows them: as received (see [`Head::bytes`]).
pub fn head_text(head: &Head) -> Vec<u8> {
    head.bytes()
}
