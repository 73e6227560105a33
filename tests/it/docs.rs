//! README's statements that a file of the project can confirm: the minimum Rust version in
//! the install section is Cargo.toml's `rust-version`.
//!
//! How that minimum was found: the highest `rust-version` among the crates in Cargo.lock
//! (`cargo metadata --offline --filter-platform <host>` lists them; uuid 1.29 asks for
//! 1.89), at least 1.85 for edition 2024; `cargo clippy` (its `incompatible_msrv` lint)
//! then checks the project's own code against it.

use std::path::PathBuf;

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
