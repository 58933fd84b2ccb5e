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
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let target = std::env::var("TARGET").expect("TARGET");
    // The runtime of executables, and the one of libraries (`--lib`: no
    // `main`, errors return to the caller; runtime/src/library.rs).
    for (name, cfg) in [
        ("libruntime.a", None),
        ("libruntime_lib.a", Some("vlad_lib")),
    ] {
        let mut cmd = Command::new(&rustc);
        cmd.args([
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
        .args(["--target", &target]);
        if let Some(cfg) = cfg {
            // Position-independent: the library may be a shared object.
            cmd.args(["--cfg", cfg, "-C", "relocation-model=pic"]);
        }
        let status = cmd
            .arg("-o")
            .arg(out_dir.join(name))
            .arg(&src)
            .status()
            .expect("cannot run rustc to build the runtime");
        assert!(status.success(), "building the runtime ({name}) failed");
    }
}
