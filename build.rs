//! Links the binary with packed relative relocations (`-z pack-relative-relocs`, DT_RELR)
//! where the toolchain and the C library support them (GNU ld 2.38 and glibc 2.36, or
//! lld): the loader's table of addresses to fix up shrinks from about 100 KB to 1 KB, so
//! the binary is that much smaller and its start reads and applies less. Whether it is
//! supported is found by linking and running an empty C program with the option, with the
//! linker rustc will use; elsewhere (another target, a cross build, an older system) the
//! binary is linked as before. Only the binaries get it, never a proc-macro or a test.

use std::path::PathBuf;
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let (target, host) = (var("TARGET"), var("HOST"));
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    let Some(out) = std::env::var_os("OUT_DIR").map(|d| PathBuf::from(d).join("relr-probe")) else {
        return;
    };
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_string());
    if packs_relocations(&linker, &out) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether `linker` links a program with packed relative relocations that then runs here.
fn packs_relocations(linker: &str, out: &std::path::Path) -> bool {
    use std::io::Write;
    let child = Command::new(linker)
        .args(["-x", "c", "-", "-o"])
        .arg(out)
        .args([
            "-pie",
            "-fPIE",
            "-Wl,-z,pack-relative-relocs",
            "-Wl,--fatal-warnings",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"static int x; int *p = &x; int main(void) { return *p; }\n");
    }
    let linked = child.wait().is_ok_and(|s| s.success());
    linked && Command::new(out).status().is_ok_and(|s| s.success())
}
