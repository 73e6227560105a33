//! The files the run makes or keeps for itself, under one rule (docs/fleet.md, "Files the
//! run keeps"): each kind of file (the Redis Cluster's slot-owner cache, the cache's
//! temporary file, `-C -`'s leftover bytes and their record; the state file and its lock are
//! `state.rs`'s) x each hostile thing that can lie at its name (a FIFO no one writes to, a
//! link to a file of someone else's, a folder, a file over the size bound, a socket): the
//! run never hangs, never writes through the link (the other file keeps its bytes), and
//! answers as documented: the cache is silently no cache, a leftover is discarded with one
//! warning and the download starts from the first byte.

use crate::common::*;
use crate::state_cluster::redis_cluster::RedisCluster;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// What is put at a name the run owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A FIFO with no writer and no reader: opening it the usual way blocks.
    Fifo,
    /// A symbolic link to a file of someone else's, which must keep its bytes.
    Link,
    /// A folder.
    Folder,
    /// A regular file larger than the kind's bound.
    Oversized,
    /// A Unix socket's file, nothing listening.
    Socket,
}

const FORMS: [Form; 5] = [
    Form::Fifo,
    Form::Link,
    Form::Folder,
    Form::Oversized,
    Form::Socket,
];

/// The bytes of the file of someone else's that links lead to.
fn foreign_bytes() -> Vec<u8> {
    vec![b'F'; CUT]
}

/// Makes `form` at `path`; `foreign` is where a link leads, `big` what an oversized file
/// holds.
fn make(form: Form, path: &Path, foreign: &Path, big: &[u8]) {
    match form {
        Form::Fifo => {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("a path");
            // SAFETY: a NUL-terminated path, a plain mode.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        }
        Form::Link => std::os::unix::fs::symlink(foreign, path).expect("a link"),
        Form::Folder => std::fs::create_dir(path).expect("a folder"),
        Form::Oversized => std::fs::write(path, big).expect("a large file"),
        Form::Socket => drop(std::os::unix::net::UnixListener::bind(path).expect("a socket")),
    }
}

/// A file of someone else's in a folder of its own (the folder is kept alive with it).
fn foreign() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a folder");
    let path = dir.path().join("someone-elses");
    std::fs::write(&path, foreign_bytes()).expect("write");
    (dir, path)
}

/// What went wrong in one run, if anything: it died, took `took` past `within`, or left
/// the foreign file changed.
fn common_faults(out: &Output, took: Duration, foreign: &Path) -> Option<String> {
    if out.status.code().is_none() || stderr(out).contains("panicked") {
        return Some(format!("died: {:?}", out.status));
    }
    if took > WITHIN {
        return Some(format!("took {took:?}"));
    }
    if std::fs::read(foreign).ok() != Some(foreign_bytes()) {
        return Some("the file a link led to was written".into());
    }
    None
}

/// The most a run may take here (generous: loopback, a local cluster, a loaded machine);
/// a run stuck on a FIFO is ended by its deadline, `DEADLINE`, with exit 5.
const WITHIN: Duration = Duration::from_secs(20);
const DEADLINE: &str = "25s";

// ---- -C -: the leftover bytes and their record ------------------------------------------

const LEN: usize = 50_000;
const CUT: usize = 20_000;
const ETAG: &str = "\"v1\"";

fn body() -> Vec<u8> {
    (0..LEN).map(|i| (i * 7 % 253) as u8).collect()
}

/// The SHA-256 of `url` in lower-case hex, as a record names its URL.
fn digest(url: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, url.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The record a run leaves for the first `CUT` bytes of `url`.
fn record(url: &str) -> String {
    format!(
        "retry-http partial 1\nurl-sha256 {}\nvalidator {ETAG}\ntotal {LEN}\nbytes {CUT}\n",
        digest(url)
    )
}

/// One `-C -` case: a valid leftover for `-o big.bin` with `form` at the bytes' name
/// (`at_record` false) or the record's; then a run with `-C -`. Returns what went wrong.
fn leftover_case(at_record: bool, form: Form) -> Option<String> {
    let dir = tempfile::tempdir().expect("a folder");
    let (_elsewhere, foreign) = foreign();
    let file = dir.path().join("big.bin");
    let data = dir.path().join(".big.bin.retry-http-partial");
    let info = dir.path().join(".big.bin.retry-http-partial.info");
    let whole = Step::Resource {
        body: body(),
        etag: ETAG.into(),
        cut_after: None,
    };
    let s = Server::start(vec![whole.clone(), whole]).expect("server");
    let url = s.url("/f");
    let valid = record(&url);
    // An oversized record is a valid one followed by more than its 16 KiB bound.
    let big = format!("{valid}{}", "x\n".repeat(10_000));
    if at_record {
        std::fs::write(&data, &body()[..CUT]).expect("write");
        make(form, &info, &foreign, big.as_bytes());
    } else {
        make(form, &data, &foreign, &vec![0u8; LEN * 2]);
        std::fs::write(&info, &valid).expect("write");
    }
    let t = Instant::now();
    let out = command()
        .args(["-C", "-", "-o", file.to_str().expect("utf-8")])
        .args(["--deadline", DEADLINE, "--attempts", "1", &url])
        .timeout(WITHIN * 2)
        .output()
        .expect("the binary runs");
    let took = t.elapsed();
    let err = stderr(&out);
    let what = format!(
        "-C - with {form:?} at the {}",
        if at_record { "record" } else { "bytes" }
    );
    let ranged = s.requests().iter().any(|r| {
        r.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("range"))
    });
    let w = warnings(&out);
    let problem = if let Some(p) = common_faults(&out, took, &foreign) {
        p
    } else if code(&out) != 0 {
        format!("exit {}", code(&out))
    } else if std::fs::read(&file).ok() != Some(body()) {
        "the -o file is not the body".into()
    } else if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
        "the -o file is not a regular file".into()
    } else if ranged {
        "resumed from what lay there".into()
    } else if w.len() != 1
        || !w[0].starts_with("retry-http: warning: -C -:")
        || !w[0].ends_with("downloading from the first byte")
    {
        format!("expected one -C - warning, got {w:?}")
    } else {
        return None;
    };
    Some(format!("{what}: {problem}\n{err}"))
}

/// {the leftover's bytes, its record} x {FIFO, link to a file of someone else's, folder,
/// socket} and, for the record, a file over its 16 KiB: 9 runs. The run downloads from the
/// first byte with one warning; nothing hangs and nothing is written through the link.
#[test]
fn hostile_leftovers_are_discarded_never_followed_nor_waited_for() {
    let mut cases = Vec::new();
    for at_record in [false, true] {
        for form in FORMS {
            // The bytes are never read into memory: their size is checked against the record.
            if !at_record && form == Form::Oversized {
                continue;
            }
            cases.push((at_record, form));
        }
    }
    assert_eq!(cases.len(), 9);
    let runs: Vec<_> = cases
        .into_iter()
        .map(|(r, f)| std::thread::spawn(move || leftover_case(r, f)))
        .collect();
    let failures: Vec<String> = runs
        .into_iter()
        .filter_map(|r| r.join().expect("a case"))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---- the Redis Cluster's slot-owner cache ------------------------------------------------

/// The cache file's name of the cluster whose URL names `seeds` (`HOST:PORT,...`), as the
/// store names it: `cluster-` and the FNV-1a hash of "false HOST PORT,HOST PORT...".
fn cache_name(seeds: &str) -> String {
    let id: Vec<String> = seeds.split(',').map(|s| s.replacen(':', " ", 1)).collect();
    let id = format!("false {}", id.join(","));
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("cluster-{hash:016x}")
}

/// A cache that says every slot is served by `node` (`HOST PORT`).
fn cache_naming(node: &str) -> String {
    let mut text = String::from("retry-http cluster slots 1\n");
    for slot in 0..16384 {
        text.push_str(&format!("{slot} {node}\n"));
    }
    text
}

/// One run against `cluster` with its cache folder in `cache`; `plant` is a shell command
/// run just before, in the process that then becomes the client (so `$$` is its process
/// id), with `$0` the cache file's path. Returns the output and how long it took.
fn cluster_run(cluster: &RedisCluster, cache: &Path, plant: &str) -> (Output, Duration) {
    let s = Server::start(vec![Step::status(200, "ok")]).expect("server");
    let file = cache.join("retry-http").join(cache_name(&cluster.seeds()));
    let mut cmd = command_for(Path::new("sh"));
    cmd.arg("-c")
        .arg(format!("{plant}\nshift; exec \"$@\""))
        .arg(&file)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_retry-http"))
        .args(["--state", &cluster.url(), "--state-timeout", "5s"])
        .args(["--deadline", DEADLINE, &s.url("/")])
        .env("XDG_CACHE_HOME", cache);
    let mut cmd = assert_cmd::Command::from_std(cmd);
    cmd.timeout(WITHIN * 2);
    let t = Instant::now();
    let out = cmd.output().expect("sh runs");
    (out, t.elapsed())
}

/// What a cluster run did wrong, if anything: beside [`common_faults`], it must succeed
/// with the store (exit 0, no warning) as if there were no cache.
fn cluster_faults(out: &Output, took: Duration, foreign: &Path) -> Option<String> {
    if let Some(p) = common_faults(out, took, foreign) {
        return Some(p);
    }
    if code(out) != 0 {
        return Some(format!("exit {}", code(out)));
    }
    let w = warnings(out);
    (!w.is_empty()).then(|| format!("warnings: {w:?}"))
}

/// {the cache file, its temporary file} x {FIFO, link to a file of someone else's, folder,
/// a file over 1 MiB (the cache), socket (the cache)}: 8 runs against a real cluster. The
/// run uses the store as if there were no cache (exit 0, no warning), within its bounds,
/// and the linked file keeps its bytes. The temporary file's name was predictable (the
/// process id): it is planted under that name by the shell that becomes the client; a
/// cache naming a dead node for every slot makes the run rewrite the cache.
#[test]
fn hostile_files_at_the_cluster_cache_never_hang_nor_are_written_through() {
    let cluster = RedisCluster::start();
    let dead = closed_port_url();
    let dead = dead
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .replacen(':', " ", 1);
    let mut failures = Vec::new();
    let mut cases = 0;
    for form in FORMS {
        // The cache file itself is the hostile thing.
        let cache = tempfile::tempdir().expect("a folder");
        let (_elsewhere, foreign) = foreign();
        let folder = cache.path().join("retry-http");
        std::fs::create_dir(&folder).expect("a folder");
        let file = folder.join(cache_name(&cluster.seeds()));
        let big = format!("{}{}", cache_naming(&dead), "# more\n".repeat(200_000));
        make(form, &file, &foreign, big.as_bytes());
        let (out, took) = cluster_run(&cluster, cache.path(), ":");
        cases += 1;
        if let Some(p) = cluster_faults(&out, took, &foreign) {
            failures.push(format!("{form:?} at the cache: {p}\n{}", stderr(&out)));
        }
    }
    for form in [Form::Fifo, Form::Link, Form::Folder] {
        // A usable cache, and the hostile thing at the temporary file's name.
        let cache = tempfile::tempdir().expect("a folder");
        let (_elsewhere, foreign) = foreign();
        let folder = cache.path().join("retry-http");
        std::fs::create_dir(&folder).expect("a folder");
        let file = folder.join(cache_name(&cluster.seeds()));
        std::fs::write(&file, cache_naming(&dead)).expect("write");
        let temp = "\"$0.$$.tmp\"";
        let plant = match form {
            Form::Fifo => format!("mkfifo {temp}"),
            Form::Link => format!("ln -s '{}' {temp}", foreign.display()),
            _ => format!("mkdir {temp}"),
        };
        let (out, took) = cluster_run(&cluster, cache.path(), &plant);
        cases += 1;
        if let Some(p) = cluster_faults(&out, took, &foreign) {
            failures.push(format!(
                "{form:?} at the temporary file: {p}\n{}",
                stderr(&out)
            ));
        }
        // The run forgot the dead node for its slot: the cache was written again.
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text == cache_naming(&dead) {
            failures.push(format!(
                "{form:?} at the temporary file: the cache was not rewritten"
            ));
        }
    }
    assert_eq!(cases, 8);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
