//! Linking: the program's object file and the embedded runtime library,
//! through the system C compiler (`cc prog.o libruntime.a -lm -o PROG`,
//! plus [`LINK_FLAGS`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The runtime static library (`runtime/src/lib.rs`), built by `build.rs`.
pub const RUNTIME: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libruntime.a"));

/// Drop unused sections and the debug information of the precompiled
/// `core` inside the runtime (1 MB to 150 KB for a typical program), keeping
/// symbols for profilers; the runtime runs the program on a thread with a
/// big stack.
const LINK_FLAGS: &[&str] = if cfg!(target_os = "linux") {
    &["-Wl,--gc-sections", "-Wl,--strip-debug", "-lpthread"]
} else {
    &[]
};

/// What [`link`] did.
#[derive(Debug)]
pub struct Linked {
    /// The directory holding `prog.o` and `libruntime.a`: removed unless
    /// `keep_temps` was asked for.
    pub temp_dir: PathBuf,
    /// Wall time of the `cc` run.
    pub cc_time: Duration,
}

/// Links `object` with the runtime into the executable `output`. With
/// `keep_temps`, the temporary directory is left in place (its path is in
/// the result). Every failure is a message, never a panic.
pub fn link(object: &[u8], output: &Path, keep_temps: bool) -> Result<Linked, String> {
    let temp_dir = fresh_temp_dir()?;
    let result = link_in(&temp_dir, object, output);
    if !keep_temps {
        let _ = std::fs::remove_dir_all(&temp_dir);
    }
    result.map(|cc_time| Linked { temp_dir, cc_time })
}

fn link_in(dir: &Path, object: &[u8], output: &Path) -> Result<Duration, String> {
    let obj = dir.join("prog.o");
    let lib = dir.join("libruntime.a");
    let write = |p: &Path, bytes: &[u8]| {
        std::fs::write(p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))
    };
    write(&obj, object)?;
    write(&lib, RUNTIME)?;
    let start = Instant::now();
    let out = Command::new("cc")
        .arg(&obj)
        .arg(&lib)
        .arg("-lm")
        .args(LINK_FLAGS)
        .arg("-o")
        .arg(output)
        .output()
        .map_err(|e| format!("cannot run the C compiler `cc`, which links the executable: {e}"))?;
    let cc_time = start.elapsed();
    if !out.status.success() {
        return Err(format!(
            "linking with `cc` failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim_end()
        ));
    }
    Ok(cc_time)
}

/// A new directory under the system temporary directory.
pub(crate) fn fresh_temp_dir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    let pid = std::process::id();
    for n in 0..1000u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!("stalingrad-{pid}-{nanos}-{n}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create a temporary directory in {}: {e}",
                    base.display()
                ))
            }
        }
    }
    Err(format!(
        "cannot create a temporary directory in {}",
        base.display()
    ))
}
