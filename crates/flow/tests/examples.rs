//! The analysis on every example program: it terminates, and reports how
//! much it specialised.

use std::path::{Path, PathBuf};
use std::time::Instant;

fn analyze_file(path: &Path) -> Result<flow::Analysis, String> {
    let mut session = driver::Session::new(Vec::new());
    session
        .load(path)
        .and_then(|prog| session.analyse(prog))
        .map_err(|e| session.render(&e))
}

/// Programs that need what the analysis does not handle yet: it must
/// reject them with a clear message, not hang. None at the moment.
const NEEDS_UNIONS: &[&str] = &[];

#[test]
fn every_example_analyses() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("examples"))
        .expect("examples")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "vlad"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    for f in &files {
        let t = Instant::now();
        match analyze_file(f) {
            Ok(a) => println!(
                "{}: {} specialisations, {} passes, {:?}",
                f.display(),
                a.specs.len(),
                a.iterations,
                t.elapsed()
            ),
            Err(e) => {
                println!("{}: {e}", f.display());
                let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if !(NEEDS_UNIONS.contains(&name) && e.contains("not compiled yet")) {
                    failures.push(f.clone());
                }
            }
        }
    }
    assert!(failures.is_empty(), "analysis failed on {failures:?}");
}
