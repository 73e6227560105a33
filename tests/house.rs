//! The shape of the source tree, checked in every crate of the workspace (the command's
//! src/ and each crates/*/src/): no function longer than 60 lines (from the line of `fn` to
//! its closing brace; test modules and `tests.rs` files aside), no `Cell` or `RefCell`
//! outside tests, no circle in the imports between the files of a crate or between its
//! rooms (a file that names an item of another, through `crate::`, `super::` or `self::`,
//! depends on it; a module's own children do not count). In the command: no file in
//! src/request/ over 600 lines, no file of src/request/ that reaches a store but through
//! the run's gate, and the configuration made once by `config::build` and never copied or
//! patched (a transfer is run with it and its own entry of the list). Between the crates,
//! what the compiler does not hold: the policy crate depends on nothing that does I/O and
//! its code reads no clock and touches no file, socket, process or environment; the
//! plotting library is the simulator's alone.
//!
//! The walls between the layers are the crates' dependencies: a crate cannot name one it
//! does not depend on, and Cargo refuses a circle between crates, so the checks of the
//! rooms that became crates (the policy, the store, the simulator, the masking, the
//! system's files) are the compiler's now.
//!
//! The reading is lexical: comments, strings and character literals are blanked first, so
//! a brace or a path inside them does not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a function may be, in lines.
const LONGEST_FUNCTION: usize = 60;
/// The longest a file of src/request/ may be, in lines.
const LONGEST_REQUEST_FILE: usize = 600;

/// The package of the command, whose src/ is the workspace's root.
const COMMAND: &str = "retry-http";

/// One source file: its crate (`retry-http`, `retry-http-policy`...), its module path within
/// it (`["http", "agent"]`), its text with comments and literals blanked, and the line
/// ranges of its test modules.
struct Source {
    krate: String,
    path: PathBuf,
    module: Vec<String>,
    code: String,
    tests: Vec<(usize, usize)>,
}

/// The crates of the workspace: the command (the root) and each folder of crates/, by
/// package name (the folder's), with their src/ folders.
fn crates() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![(COMMAND.to_string(), root.join("src"))];
    let mut members: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/ reads")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    members.sort();
    for m in members {
        let name = m
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        out.push((name, m.join("src")));
    }
    out
}

fn sources() -> Vec<Source> {
    let mut out = Vec::new();
    for (krate, root) in crates() {
        let mut files = Vec::new();
        walk(&root, &mut files);
        files.sort();
        out.extend(
            files
                .into_iter()
                .filter(|p| p.file_name().is_some_and(|n| n != "tests.rs"))
                .map(|path| {
                    let text = std::fs::read_to_string(&path).expect("a source file reads");
                    let code = blank(&text);
                    let tests = test_modules(&code);
                    let module = module_path(&root, &path);
                    Source {
                        krate: krate.clone(),
                        path,
                        module,
                        code,
                        tests,
                    }
                }),
        );
    }
    out
}

/// The sources of the command's src/.
fn command_sources() -> Vec<Source> {
    sources()
        .into_iter()
        .filter(|s| s.krate == COMMAND)
        .collect()
}

/// The sources, crate by crate (an import graph is a crate's own).
fn by_crate() -> BTreeMap<String, Vec<Source>> {
    let mut out: BTreeMap<String, Vec<Source>> = BTreeMap::new();
    for s in sources() {
        out.entry(s.krate.clone()).or_default().push(s);
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a src/ folder reads") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_path(root: &Path, path: &Path) -> Vec<String> {
    let rel = path
        .strip_prefix(root)
        .expect("under its crate's src/")
        .with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The text with comments, string literals and character literals replaced by spaces
/// (newlines kept, so line numbers hold).
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let clear = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        let end = if b[i..].starts_with(b"//") {
            b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p)
        } else if b[i..].starts_with(b"/*") {
            block_comment_end(b, i)
        } else if let Some(end) = raw_string_end(b, i) {
            end
        } else if b[i] == b'"' {
            string_end(b, i + 1)
        } else if b[i] == b'\'' {
            char_end(b, i).unwrap_or(i + 1)
        } else {
            i += 1;
            continue;
        };
        if b[i] == b'\'' && end == i + 1 {
            i += 1;
            continue;
        }
        clear(&mut out, i, end);
        i = end;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn block_comment_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The end of a raw string (`r"..."`, `r#"..."#`, `br"..."`) starting at `i`, if one does.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let from = j + 1;
    Some(
        b[from..]
            .windows(close.len())
            .position(|w| w == close.as_slice())
            .map_or(b.len(), |p| from + p + close.len()),
    )
}

fn string_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of a character literal at `i` (`'a'`, `'\n'`, `'\u{1F600}'`, `'é'`); `None` for
/// a lifetime or a label.
fn char_end(b: &[u8], i: usize) -> Option<usize> {
    let rest = &b[i + 1..];
    if rest.first() == Some(&b'\\') {
        return rest
            .iter()
            .skip(2)
            .position(|&c| c == b'\'')
            .map(|p| i + 1 + 2 + p + 1);
    }
    let len = std::str::from_utf8(&rest[..rest.len().min(4)])
        .ok()
        .or_else(|| std::str::from_utf8(&rest[..rest.len().min(1)]).ok())
        .and_then(|s| s.chars().next())
        .map_or(1, char::len_utf8);
    (rest.get(len) == Some(&b'\'')).then_some(i + 1 + len + 1)
}

fn line_of(code: &str, at: usize) -> usize {
    code[..at].bytes().filter(|&c| c == b'\n').count() + 1
}

/// The index just past the brace that closes the one at `open`.
fn closing(code: &str, open: usize) -> usize {
    let mut depth = 0i32;
    for (k, c) in code.bytes().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The line ranges of `#[cfg(test)] mod NAME { ... }`.
fn test_modules(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let at = from + p;
        from = at + 1;
        let rest = &code[at + "#[cfg(test)]".len()..];
        let trimmed = rest.trim_start();
        let head = ["pub(crate) ", "pub "]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p))
            .unwrap_or(trimmed);
        if !head.starts_with("mod ") {
            continue;
        }
        let Some(brace) = head.find(['{', ';']) else {
            continue;
        };
        if head.as_bytes()[brace] == b';' {
            continue;
        }
        let open = code.len() - head.len() + brace;
        out.push((line_of(code, at), line_of(code, closing(code, open))));
    }
    out
}

fn in_tests(s: &Source, line: usize) -> bool {
    s.tests.iter().any(|&(a, b)| (a..=b).contains(&line))
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Each function of a file outside its tests: (name, first line, lines).
fn functions(s: &Source) -> Vec<(String, usize, usize)> {
    let code = &s.code;
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("fn ") {
        let at = from + p;
        from = at + 3;
        if at > 0 && is_ident(b[at - 1]) {
            continue;
        }
        let name: String = code[at + 3..]
            .trim_start()
            .bytes()
            .take_while(|&c| is_ident(c))
            .map(char::from)
            .collect();
        if name.is_empty() {
            continue;
        }
        let line = line_of(code, at);
        if in_tests(s, line) {
            continue;
        }
        let Some(open) = body_start(b, at + 3) else {
            continue;
        };
        let end = line_of(code, closing(code, open));
        out.push((name, line, end - line + 1));
    }
    out
}

/// Where a function's body opens: the first `{` outside brackets before a `;`.
fn body_start(b: &[u8], mut j: usize) -> Option<usize> {
    let mut depth = 0i32;
    while j < b.len() {
        match b[j] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return None,
            b'{' if depth == 0 => return Some(j),
            _ => {}
        }
        j += 1;
    }
    None
}

#[test]
fn no_function_is_longer_than_sixty_lines() {
    let mut long = Vec::new();
    for s in sources() {
        for (name, line, lines) in functions(&s) {
            if lines > LONGEST_FUNCTION {
                long.push(format!("{}:{line} {name}: {lines} lines", s.path.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {LONGEST_FUNCTION} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_file_of_the_request_folder_is_longer_than_six_hundred_lines() {
    let long: Vec<String> = command_sources()
        .iter()
        .filter(|s| s.module.first().is_some_and(|m| m == "request"))
        .map(|s| (s, s.code.lines().count()))
        .filter(|&(_, n)| n > LONGEST_REQUEST_FILE)
        .map(|(s, n)| format!("{}: {n} lines", s.path.display()))
        .collect();
    assert!(
        long.is_empty(),
        "over {LONGEST_REQUEST_FILE} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_cell_outside_tests() {
    let mut found = Vec::new();
    for s in sources() {
        for (n, text) in s.code.lines().enumerate() {
            let has = ["Cell<", "Cell::", "cell::"]
                .iter()
                .any(|w| text.contains(w));
            if has && !in_tests(&s, n + 1) {
                found.push(format!("{}:{}", s.path.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "Cell or RefCell outside tests:\n{}",
        found.join("\n")
    );
}

/// The module paths a file names through `crate::`, `super::` and `self::` (with the
/// members of a `{...}` list after them), outside its tests.
fn named_paths(s: &Source) -> BTreeSet<Vec<String>> {
    let mut code = String::new();
    for (n, line) in s.code.lines().enumerate() {
        if !in_tests(s, n + 1) {
            code.push_str(line);
        }
        code.push('\n');
    }
    let b = code.as_bytes();
    let mut out = BTreeSet::new();
    for base in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(p) = code[from..].find(base) {
            let at = from + p;
            from = at + base.len();
            if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b':') {
                continue;
            }
            let mut path = match base {
                "crate::" => Vec::new(),
                "super::" => s.module[..s.module.len().saturating_sub(1)].to_vec(),
                _ => s.module.clone(),
            };
            let mut j = at + base.len();
            read_path(&code, &mut j, &mut path);
            if code[j..].starts_with("::{") || code[j..].starts_with('{') {
                let open = j + code[j..].find('{').unwrap_or(0);
                let close = closing(&code, open);
                for member in code[open + 1..close.saturating_sub(1)].split([',', '{']) {
                    let first: String = member
                        .trim()
                        .bytes()
                        .take_while(|&c| is_ident(c))
                        .map(char::from)
                        .collect();
                    if !first.is_empty() {
                        let mut p = path.clone();
                        p.push(first);
                        out.insert(p);
                    }
                }
            }
            out.insert(path);
        }
    }
    out
}

fn read_path(code: &str, j: &mut usize, path: &mut Vec<String>) {
    let b = code.as_bytes();
    loop {
        let seg: String = code[*j..]
            .bytes()
            .take_while(|&c| is_ident(c))
            .map(char::from)
            .collect();
        if seg.is_empty() {
            return;
        }
        *j += seg.len();
        if seg == "super" {
            path.pop();
        } else {
            path.push(seg);
        }
        if b.get(*j) == Some(&b':') && b.get(*j + 1) == Some(&b':') && b.get(*j + 2) != Some(&b'{')
        {
            *j += 2;
        } else {
            return;
        }
    }
}

/// Which files each file depends on (by module path).
fn imports(all: &[Source]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules: BTreeSet<Vec<String>> = all.iter().map(|s| s.module.clone()).collect();
    let mut graph = BTreeMap::new();
    for s in all {
        let mut deps = BTreeSet::new();
        for path in named_paths(s) {
            let target = (0..=path.len())
                .rev()
                .map(|k| path[..k].to_vec())
                .find(|p| !p.is_empty() && modules.contains(p));
            if let Some(t) = target {
                let own_child_or_self = t.starts_with(&s.module);
                let own_parent = s.module.starts_with(&t);
                if !own_child_or_self && !own_parent {
                    deps.insert(t);
                }
            }
        }
        graph.insert(s.module.clone(), deps);
    }
    graph
}

/// The circles of the graph: its strongly connected components of two or more files.
fn circles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    let reach = |from: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for d in graph.get(&m).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<_, _> = graph.keys().map(|m| (m.clone(), reach(m))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for m in graph.keys() {
        if done.contains(m) || !reached[m].contains(m) {
            continue;
        }
        let circle: Vec<Vec<String>> = reached[m]
            .iter()
            .filter(|o| reached[*o].contains(m))
            .cloned()
            .collect();
        done.extend(circle.iter().cloned());
        out.push(circle.iter().map(|p| p.join("::")).collect());
    }
    out
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let mut shown: Vec<String> = Vec::new();
    for (krate, all) in by_crate() {
        for c in circles(&imports(&all)) {
            shown.push(format!("{krate}: {}", c.join(" -> ")));
        }
    }
    assert!(
        shown.is_empty(),
        "import circles between files:\n{}",
        shown.join("\n")
    );
}

/// The same graph between the rooms of each crate (its top-level modules and folders): data
/// flows one way (in the command: cli -> config -> session -> request -> output/report ->
/// exit, the fleet beside).
#[test]
fn no_rooms_import_each_other_in_a_circle() {
    let mut shown: Vec<String> = Vec::new();
    for (krate, all) in by_crate() {
        for c in circles(&rooms(&all)) {
            shown.push(format!("{krate}: {}", c.join(" -> ")));
        }
    }
    assert!(
        shown.is_empty(),
        "import circles between rooms:\n{}",
        shown.join("\n")
    );
}

/// The graph between the rooms of one crate's sources.
fn rooms(all: &[Source]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut rooms: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, to) in imports(all) {
        let Some(room) = from.first() else { continue };
        let deps = rooms.entry(vec![room.clone()]).or_default();
        deps.extend(
            to.iter()
                .filter_map(|t| t.first())
                .filter(|t| *t != room)
                .map(|t| vec![t.clone()]),
        );
    }
    rooms
}

/// What a file of src/request/ must not name: the run's side of `--state`
/// (`fleet::admission`), the store trait and the stores (`fleet::store`, `fleet::file`,
/// `fleet::redis`), and what `--state` names (`fleet::location`).
const STORE_SIDE: [[&str; 2]; 5] = [
    ["fleet", "admission"],
    ["fleet", "store"],
    ["fleet", "file"],
    ["fleet", "redis"],
    ["fleet", "location"],
];

/// The store's crate, which the command depends on (so the compiler lets any file name it).
const STORE_CRATE: &str = "retry_http_store";

/// The paths of `s` that name the store's side (see [`STORE_SIDE`]), through the command's
/// `fleet` or the store's crate by its name, outside its tests.
fn store_paths(s: &Source) -> Vec<String> {
    let mut out: Vec<String> = named_paths(s)
        .into_iter()
        .filter(|p| STORE_SIDE.iter().any(|f| p.len() >= 2 && p[..2] == f[..]))
        .map(|p| p.join("::"))
        .collect();
    for (n, line) in s.code.lines().enumerate() {
        let named = line.match_indices(STORE_CRATE).any(|(at, _)| {
            let b = line.as_bytes();
            (at == 0 || !is_ident(b[at - 1]))
                && !b.get(at + STORE_CRATE.len()).is_some_and(|&c| is_ident(c))
        });
        if named && !in_tests(s, n + 1) {
            out.push(format!("{STORE_CRATE} (line {})", n + 1));
        }
    }
    out
}

/// The attempt loop asks its gate before each send and tells it after each answer; the
/// breaker's and budget's records are the gate's (src/gate/): nothing in src/request/
/// reaches a store, or what `--state` names, but through it.
#[test]
fn the_request_folder_reaches_no_store_but_through_the_gate() {
    let found: Vec<String> = command_sources()
        .iter()
        .filter(|s| s.module.first().is_some_and(|m| m == "request"))
        .flat_map(|s| {
            store_paths(s)
                .into_iter()
                .map(|p| format!("{}: {p}", s.path.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "src/request/ names the store's side instead of asking the gate:\n{}",
        found.join("\n")
    );
}

/// Where `code` (blanked) makes, copies or patches a `Config` outside `config::build`:
/// a function that returns one other than `config::build` and the helpers that call it
/// (a per-transfer copy, `Config::transfer`, once did), a `cfg.clone()`, a `&mut Config`,
/// or an assignment to a field of `cfg` outside src/config/. (1-based lines.)
fn config_copies(s: &Source) -> Vec<usize> {
    let code = &s.code;
    let b = code.as_bytes();
    let word_at = |at: usize, w: &str| {
        code[at..].starts_with(w)
            && (at == 0 || !(is_ident(b[at - 1]) || b[at - 1] == b':'))
            && !b.get(at + w.len()).is_some_and(|&c| is_ident(c))
    };
    let mut found = Vec::new();
    for (name, line, lines) in functions(s) {
        let at = match line {
            1 => 0,
            _ => code
                .match_indices('\n')
                .nth(line - 2)
                .map_or(0, |(i, _)| i + 1),
        };
        let sig_end = body_start(b, at).unwrap_or(at);
        let sig = &code[at..sig_end];
        let body: String = code[sig_end..].lines().take(lines).collect();
        let returns = sig.find("->").is_some_and(|r| {
            let ret = &sig[r..];
            ret.match_indices("Config")
                .any(|(i, _)| word_at(at + r + i, "Config"))
        });
        let made_by_build = (name == "build" && s.module == ["config"]) || body.contains("build(");
        if returns && !made_by_build {
            found.push(line);
        }
    }
    let in_config = s.module.first().is_some_and(|m| m == "config");
    for (at, _) in code.match_indices("cfg") {
        if !word_at(at, "cfg") || in_tests(s, line_of(code, at)) {
            continue;
        }
        let rest = &code[at + 3..];
        let path_end = rest
            .bytes()
            .position(|c| !(is_ident(c) || c == b'.'))
            .unwrap_or(rest.len());
        let after = rest[path_end..].trim_start();
        let patched = path_end > 0 && after.starts_with('=') && !after.starts_with("==");
        if rest.starts_with(".clone()") || (patched && !in_config) {
            found.push(line_of(code, at));
        }
    }
    for (at, _) in code.match_indices("&mut Config") {
        if word_at(at + 5, "Config") && !in_tests(s, line_of(code, at)) {
            found.push(line_of(code, at));
        }
    }
    found
}

#[test]
fn the_configuration_is_made_once_and_never_copied_or_patched() {
    let mut copies = Vec::new();
    for s in command_sources() {
        for line in config_copies(&s) {
            copies.push(format!("{}:{line}", s.path.display()));
        }
    }
    assert!(
        copies.is_empty(),
        "a Config made outside config::build, copied or patched (run a transfer with the \
         one Config and its config::Transfer):\n{}",
        copies.join("\n")
    );
}

#[test]
fn the_measures_see_what_they_measure() {
    let s = |module: &[&str], text: &str| {
        let code = blank(text);
        Source {
            krate: COMMAND.to_string(),
            path: PathBuf::from("x.rs"),
            module: module.iter().map(|m| m.to_string()).collect(),
            tests: test_modules(&code),
            code,
        }
    };
    let long = format!(
        "fn long() {{\n{}}}\n// fn not_a_function() {{\n",
        "    x();\n".repeat(61)
    );
    let f = functions(&s(&["a"], &long));
    assert_eq!(f, vec![("long".to_string(), 1, 63)]);
    let braces_in_strings =
        "fn f() {\n    let _ = \"}\";\n    let _ = '}';\n    let _ = r#\"}\"#;\n}\n";
    assert_eq!(functions(&s(&["a"], braces_in_strings))[0].2, 5);
    let tested = "fn f() {}\n#[cfg(test)]\nmod tests {\n    fn g() {}\n}\n";
    assert_eq!(functions(&s(&["a"], tested)).len(), 1);
    let a = s(
        &["x", "a"],
        "use crate::x::b::Thing;\nuse super::{c, d::E};\n",
    );
    let b = s(&["x", "b"], "fn f() { crate::x::a::g() }\n");
    let c = s(&["x", "c"], "");
    let d = s(&["x", "d"], "use self::inner::Y;\n");
    let graph = imports(&[a, b, c, d]);
    let names = |m: &[&str]| m.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(graph[&names(&["x", "a"])].len(), 3);
    assert!(graph[&names(&["x", "d"])].is_empty());
    assert_eq!(
        circles(&graph),
        vec![vec!["x::a".to_string(), "x::b".to_string()]]
    );
    let reaching = s(
        &["request", "run"],
        "use crate::fleet::{admission::Shared, origins::Told};
fn f() { crate::fleet::store::x() }
// crate::fleet::redis
",
    );
    assert_eq!(
        store_paths(&reaching),
        vec!["fleet::admission", "fleet::store::x"]
    );
    let gated = s(
        &["request", "run"],
        "use crate::gate::Gate;
",
    );
    assert!(store_paths(&gated).is_empty());
    let direct = s(&["request", "run"], "use retry_http_store::store::Store;\n");
    assert_eq!(store_paths(&direct), ["retry_http_store (line 1)"]);
    let io = s(
        &["a"],
        "use std::fs::File;\nfn f() { let _ = std::time::Instant::now(); }\n",
    );
    assert_eq!(effects(&io), [(1, "std::fs"), (2, "::now(")]);
    assert_eq!(
        dependencies(
            "[package]\nname = \"x\"\n\n[dependencies]\na = \"1\"\nb = { path = \"../b\" }\n\n[dev-dependencies]\nc = \"1\"\n"
        ),
        ["a", "b", "c"]
    );
    let per_transfer = "impl Config {\n    pub fn transfer(&self, i: usize) -> Config {\n        let mut cfg = self.clone();\n        cfg.request.url = u(i);\n        cfg\n    }\n}\n";
    assert_eq!(config_copies(&s(&["config"], per_transfer)), [2]);
    assert_eq!(config_copies(&s(&["session"], per_transfer)), [2, 4]);
    let copied = "fn f(cfg: &Config) -> RequestConfig {\n    g(cfg.clone());\n    h(&mut Config::x());\n    cfg.a == b\n}\n";
    assert_eq!(config_copies(&s(&["session"], copied)), [2, 3]);
    let built = "pub fn build(a: &A) -> Result<Config, E> {\n    x\n}\n";
    assert!(config_copies(&s(&["config"], built)).is_empty());
    assert_eq!(config_copies(&s(&["session"], built)), [1]);
}

/// The policy crate's dependencies: none does I/O (parsing, hashing, drawing numbers, the
/// masking of secrets). A new one is added here when it is pure too.
const POLICY_MAY_DEPEND_ON: [&str; 7] = [
    "retry-http-redact",
    "httpdate",
    "rand",
    "regex-lite",
    "ring",
    "serde_json",
    "uuid",
];

/// What the policy's code must not name outside its tests: the clock (it is passed in), the
/// file system, sockets, processes, threads, the environment, the terminal.
const EFFECTS: [&str; 9] = [
    "std::fs",
    "std::net",
    "std::process",
    "std::thread",
    "std::env",
    "::now(",
    "stdout(",
    "stderr(",
    "stdin(",
];

/// Where `s` names one of the [`EFFECTS`] outside its tests: (1-based line, what).
fn effects(s: &Source) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    for (n, line) in s.code.lines().enumerate() {
        for e in EFFECTS {
            if line.contains(e) && !in_tests(s, n + 1) {
                out.push((n + 1, e));
            }
        }
    }
    out
}

/// The names of the dependencies a Cargo.toml lists, in every `dependencies` table (a
/// target's, the dev- and build- ones included).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut within = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            within = line.trim_end_matches(']').ends_with("dependencies");
        } else if within
            && !line.starts_with('#')
            && let Some((name, _)) = line.split_once('=')
        {
            out.push(name.trim().to_string());
        }
    }
    out
}

/// The manifest of the workspace's crate `krate`.
fn manifest(krate: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = match krate {
        COMMAND => root.join("Cargo.toml"),
        _ => root.join("crates").join(krate).join("Cargo.toml"),
    };
    std::fs::read_to_string(&path).expect("a Cargo.toml reads")
}

/// The policy is pure: what it depends on does no I/O, and its code reads no clock and
/// touches no file, socket, process, thread, environment or terminal (the attempt loop and
/// the simulator pass the clock and the random source in). The compiler holds the other
/// walls (the policy cannot name the command, the store or the simulator); not these.
#[test]
fn the_policy_is_pure() {
    let deps = dependencies(&manifest("retry-http-policy"));
    let foreign: Vec<&String> = deps
        .iter()
        .filter(|d| !POLICY_MAY_DEPEND_ON.contains(&d.as_str()))
        .collect();
    assert!(
        foreign.is_empty(),
        "the policy crate depends on {foreign:?}: a pure crate may depend on {POLICY_MAY_DEPEND_ON:?}"
    );
    let mut found = Vec::new();
    for s in sources().iter().filter(|s| s.krate == "retry-http-policy") {
        for (line, what) in effects(s) {
            found.push(format!("{}:{line} {what}", s.path.display()));
        }
    }
    assert!(
        found.is_empty(),
        "the policy crate reaches outside itself:\n{}",
        found.join("\n")
    );
}

/// The plotting library is the simulator's alone: no other crate of the workspace, the
/// command included, depends on it.
#[test]
fn only_the_simulator_plots() {
    let plotting: Vec<String> = crates()
        .into_iter()
        .map(|(krate, _)| krate)
        .filter(|k| k != "retry-http-simulate")
        .filter(|k| dependencies(&manifest(k)).iter().any(|d| d == "plotters"))
        .collect();
    assert!(
        plotting.is_empty(),
        "plotters outside the simulator's crate: {plotting:?}"
    );
    let simulate = dependencies(&manifest("retry-http-simulate"));
    assert!(
        simulate.iter().any(|d| d == "plotters"),
        "the simulator plots"
    );
}
