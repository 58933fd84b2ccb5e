//! Compiles the runtime (`runtime/src/lib.rs`, no_std) to a static library
//! in OUT_DIR with the same `rustc` that builds this crate; `src/link.rs`
//! embeds its bytes, so `stalingrad build` needs only the system `cc`.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    let src = root.join("runtime/src/lib.rs");
    // Every file of the runtime, and the files of `base` it includes (a
    // directory counts as changed when any file in it changes).
    println!(
        "cargo:rerun-if-changed={}",
        root.join("runtime/src").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        root.join("crates/base/src").display()
    );
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("libruntime.a");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let target = std::env::var("TARGET").expect("TARGET");
    let status = Command::new(rustc)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "staticlib",
            "--crate-name",
            "runtime",
        ])
        .args([
            "-C",
            "panic=abort",
            "-C",
            "opt-level=2",
            "-C",
            "debuginfo=0",
        ])
        .args(["--target", &target])
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("cannot run rustc to build the runtime");
    assert!(status.success(), "building the runtime failed");
}
