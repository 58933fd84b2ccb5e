//! What the tests of lowered programs share: the repository's root and a
//! program compiled to optimised FIR.

use fir::Module;
use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The optimised FIR of the program at `path` (a test's own program: any
/// error fails the test with the compiler's message).
pub fn compile(path: &Path) -> Module {
    let mut map = base::diag::SourceMap::new();
    let ast = syntax::expand::load_program(&mut map, path, &Default::default())
        .unwrap_or_else(|e| panic!("{}", e.render(&map)));
    let prog = syntax::anf::lower_program(&ast).unwrap_or_else(|e| panic!("{}", e.render(&map)));
    lower::compile(prog, &map).unwrap_or_else(|e| panic!("{}", e.render(&map)))
}
