//! What the documentation says that a file of the project can confirm: the minimum Rust
//! version in README's install section is Cargo.toml's `rust-version`, and every relative
//! link of README.md and docs/*.md leads to a file that exists and, for a `#fragment`, to a
//! heading of that file (the anchors GitHub makes).
//!
//! How that minimum was found: the highest `rust-version` among the crates in Cargo.lock
//! (`cargo metadata --offline --filter-platform <host>` lists them; uuid 1.29 asks for
//! 1.89), at least 1.85 for edition 2024; `cargo clippy` (its `incompatible_msrv` lint)
//! then checks the project's own code against it.

use std::path::{Path, PathBuf};

/// A file of the project, as text.
fn project_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `rust-version` of Cargo.toml's `[package]` table, if declared.
fn declared_rust_version(manifest: &str) -> Option<String> {
    manifest
        .lines()
        .skip_while(|l| l.trim() != "[package]")
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .find_map(|l| {
            let (key, value) = l.split_once('=')?;
            (key.trim() == "rust-version").then(|| value.trim().trim_matches('"').to_string())
        })
}

/// The versions README's install section states, from every "(X or later" in it.
fn stated_rust_versions(readme: &str) -> Vec<String> {
    let section: String = readme
        .lines()
        .skip_while(|l| *l != "## Install")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect::<Vec<_>>()
        .join("\n");
    section
        .match_indices(" or later")
        .filter_map(|(at, _)| {
            let before = &section[..at];
            let from = before.rfind(|c: char| !(c.is_ascii_digit() || c == '.'))? + 1;
            let version = &before[from..];
            (version.contains('.') && before[..from].ends_with('(')).then(|| version.to_string())
        })
        .collect()
}

#[test]
fn readme_states_the_rust_version_cargo_toml_declares() {
    let declared = declared_rust_version(&project_file("Cargo.toml"))
        .expect("Cargo.toml's [package] declares rust-version");
    let stated = stated_rust_versions(&project_file("README.md"));
    assert_eq!(
        stated,
        vec![declared.clone()],
        "README's install section must state the minimum Rust version once, as \
         \"({declared} or later\", the rust-version of Cargo.toml"
    );
    let parts: Vec<u32> = declared.split('.').map(|p| p.parse().unwrap()).collect();
    assert!(
        parts[..] >= [1, 85][..],
        "edition 2024 needs 1.85: {declared}"
    );
}

#[test]
fn the_readers_find_what_they_look_for() {
    let manifest =
        "[package]\nname = \"x\"\nrust-version = \"1.89\"\n[dependencies]\nrust-version = \"9\"\n";
    assert_eq!(declared_rust_version(manifest).as_deref(), Some("1.89"));
    assert_eq!(
        declared_rust_version("[dependencies]\nrust-version = \"1\"\n"),
        None
    );
    let readme = "# x\n\n## Install\n\nYou need Rust (1.89 or later; rustup).\n\n## Usage\n\n(2.0 or later)\n";
    assert_eq!(stated_rust_versions(readme), vec!["1.89".to_string()]);
}

/// The anchor GitHub gives a heading: lower case, every character that is not a letter, a
/// digit, `-` or `_` dropped (backticks, colons, parentheses, apostrophes...), each space a
/// `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The lines of a Markdown text outside its fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The anchors of a Markdown text's headings, a repeated one numbered as GitHub numbers it
/// (`name`, `name-1`, `name-2`).
fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in prose(text) {
        let level = line.chars().take_while(|c| *c == '#').count();
        if level == 0 || level > 6 || !line[level..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[level..]);
        let mut name = base.clone();
        let mut n = 0;
        while out.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        out.push(name);
    }
    out
}

/// The targets of a Markdown text's inline links (`[text](target)`) that are not URLs.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                out.push(target.to_string());
            }
        }
    }
    out
}

/// Where each relative link of the Markdown file `file` fails to lead, as sentences.
fn broken_links(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let dir = file.parent().expect("a file's folder");
    let mut broken = Vec::new();
    for link in relative_links(&text) {
        let (path, fragment) = link.split_once('#').unwrap_or((&link, ""));
        let target = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        if !target.exists() {
            broken.push(format!("{}: {link}: no such file", file.display()));
            continue;
        }
        if fragment.is_empty() {
            continue;
        }
        let heads = std::fs::read_to_string(&target).map(|t| anchors(&t));
        if !heads.is_ok_and(|h| h.iter().any(|a| a == fragment)) {
            broken.push(format!("{}: {link}: no such heading", file.display()));
        }
    }
    broken
}

/// README.md and the pages of docs/.
fn manual_files() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let docs = std::fs::read_dir(root.join("docs")).expect("docs/ reads");
    let mut pages: Vec<PathBuf> = docs
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    assert!(pages.len() >= 5, "the manual's pages: {pages:?}");
    files.extend(pages);
    files
}

#[test]
fn every_link_of_the_manual_leads_somewhere() {
    let mut links = 0;
    let mut broken = Vec::new();
    for file in manual_files() {
        let text = std::fs::read_to_string(&file).expect("a page reads");
        links += relative_links(&text).len();
        broken.extend(broken_links(&file));
    }
    assert!(links > 20, "the manual links its pages: {links} links");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_and_links_are_read_as_github_reads_them() {
    assert_eq!(
        slug(" `--splay`: a cron fleet spread over the minute"),
        "--splay-a-cron-fleet-spread-over-the-minute"
    );
    assert_eq!(
        slug(" `-w` variables and `-D -` (curl's)"),
        "-w-variables-and--d---curls"
    );
    assert_eq!(slug(" 1. A cron job"), "1-a-cron-job");
    let text = "# T\n\n## A b\n\n```\n## not a heading [x](nowhere.md)\n```\n\n## A b\n\
                See [here](#a-b-1), [there](other.md#x), [web](https://example.test/y).\n";
    assert_eq!(anchors(text), ["t", "a-b", "a-b-1"]);
    assert_eq!(relative_links(text), ["#a-b-1", "other.md#x"]);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.md");
    std::fs::write(&page, text).unwrap();
    assert_eq!(broken_links(&page).len(), 1, "other.md is missing");
    std::fs::write(dir.path().join("other.md"), "# y\n").unwrap();
    assert_eq!(broken_links(&page).len(), 1, "other.md has no heading x");
    std::fs::write(dir.path().join("other.md"), "# x\n").unwrap();
    assert!(broken_links(&page).is_empty());
}

/// README starts fast: at most 300 lines, with the install, the first example and the
/// recipes in its first screenfuls (a screenful being some 40 lines), then the exit codes
/// and the map of the manual; the rest of the manual belongs in docs/.
#[test]
fn the_readme_starts_fast() {
    let readme = project_file("README.md");
    let lines: Vec<&str> = readme.lines().collect();
    assert!(lines.len() <= 300, "README has {} lines", lines.len());
    let line_of = |heading: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(heading))
            .unwrap_or_else(|| panic!("README has {heading:?}"))
            + 1
    };
    let mut last = 0;
    for (heading, by) in [
        ("## Install", 40),
        ("## The two commands", 80),
        ("## A first example", 80),
        ("## Recipes", 120),
        ("## Exit codes", 300),
        ("## The manual", 300),
    ] {
        let at = line_of(heading);
        assert!(at <= by, "{heading:?} at line {at}, past line {by}");
        assert!(
            at > last,
            "{heading:?} at line {at}, before the section above it"
        );
        last = at;
    }
    let recipes = lines
        .iter()
        .skip(line_of("## Recipes"))
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("### "))
        .count();
    assert_eq!(recipes, 5, "README's recipes");
}

/// The guide takes the tasks in the order a user meets them, and links every page of the
/// reference it leans on.
#[test]
fn the_guide_follows_a_users_order() {
    let guide = project_file("docs/guide.md");
    let mut last = 0;
    for task in [
        "## 1. One call in a script",
        "## 2. A cron job",
        "## 3. A health check",
        "## 4. A batch",
        "## 5. A fleet",
        "## 6. Reading the simulator",
    ] {
        let at = guide
            .find(&format!("\n{task}\n"))
            .unwrap_or_else(|| panic!("the guide has {task:?}"));
        assert!(at > last, "{task:?} out of order");
        last = at;
    }
    for page in [
        "policy.md",
        "output.md",
        "fleet.md",
        "batch.md",
        "simulate.md",
    ] {
        assert!(
            guide.contains(&format!("]({page}")),
            "the guide links {page}"
        );
    }
}
