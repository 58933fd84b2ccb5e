//! Snapshot testing of the text dumps of each stage, std only.
//!
//! `check(path, actual)` compares `actual` with the file at `path`. With
//! `UPDATE_SNAPSHOTS=1` it writes the file instead, so a change to generated
//! code shows up in review as a diff of the snapshot files. A missing
//! snapshot is a failure (CI must never pass by creating one).

use std::path::Path;

pub fn check(path: &Path, actual: &str) {
    if updating() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create snapshot directory");
        }
        std::fs::write(path, actual).expect("write snapshot");
        return;
    }
    let expected = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => panic!(
            "snapshot {} is missing ({e}); run the test with UPDATE_SNAPSHOTS=1 to create it",
            path.display()
        ),
    };
    if expected != actual {
        panic!(
            "snapshot {} differs (UPDATE_SNAPSHOTS=1 to accept):\n{}",
            path.display(),
            diff(&expected, actual)
        );
    }
}

/// Whether tests should write what they expect instead of checking it.
pub fn updating() -> bool {
    std::env::var_os("UPDATE_SNAPSHOTS").is_some()
}

/// The lines that differ, numbered from 1: `-` expected, `+` actual.
pub fn diff(expected: &str, actual: &str) -> String {
    let mut diff = String::new();
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    for i in 0..e.len().max(a.len()) {
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => {
                diff.push_str(&format!(
                    "line {}:\n  - {}\n  + {}\n",
                    i + 1,
                    x.unwrap_or(&"<none>"),
                    y.unwrap_or(&"<none>")
                ));
            }
        }
    }
    diff
}
