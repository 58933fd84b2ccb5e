//! A [`Session`]: the pipeline over one program, each stage entered
//! through [`Stage::run`] so that its timing span and memory phase are
//! set in one place.

use crate::{Emit, Stage};
use base::diag::{Diagnostic, SourceMap};
use interp::{Interp, Mode};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use syntax::ast;
use syntax::sexp::Sexp;

/// The pipeline over the files of one program: the source map its
/// diagnostics refer to and the directories `include` searches.
pub struct Session {
    pub map: SourceMap,
    pub include: Vec<PathBuf>,
}

/// What [`Session::interpret`] gives back.
pub struct Interpreted {
    /// The test report of `Mode::Test` (counts of zero in `Mode::Run`),
    /// or the error that ended the run.
    pub result: Result<interp::TestReport, Diagnostic>,
    pub counters: interp::Counters,
}

impl Session {
    pub fn new(include: Vec<PathBuf>) -> Session {
        Session {
            map: SourceMap::new(),
            include,
        }
    }

    /// A session whose source map already holds the standard library, for
    /// programs assembled from forms ([`Session::expand`]).
    pub fn for_forms(include: Vec<PathBuf>) -> Session {
        Session {
            map: syntax::expand::library_map(),
            include,
        }
    }

    fn expand_options(&self) -> syntax::expand::Options {
        syntax::expand::Options {
            include_dirs: self.include.clone(),
        }
    }

    /// Reads and expands the program in `file`.
    pub fn read_file(&mut self, file: &Path) -> Result<ast::Program, Diagnostic> {
        let opts = self.expand_options();
        Stage::Parse.run(|| syntax::expand::load_program(&mut self.map, file, &opts))
    }

    /// Reads and expands `text`, named `name` in messages.
    pub fn read_text(&mut self, name: &Path, text: String) -> Result<ast::Program, Diagnostic> {
        let opts = self.expand_options();
        Stage::Parse.run(|| syntax::expand::load_source(&mut self.map, name, text, &opts))
    }

    /// Reads the top-level forms of `text`, named `name` in messages,
    /// without expanding them: a library build assembles its program from
    /// the definitions of a file and a generated call.
    pub fn read_forms(&mut self, name: PathBuf, text: String) -> Result<Vec<Sexp>, Diagnostic> {
        let id = self.map.add(name, text);
        Stage::Parse.run(|| syntax::reader::read_file(&self.map, id))
    }

    /// Splices the includes of forms already read (into this session's
    /// map): the REPL's inputs, a library's definitions.
    pub fn splice_includes(&mut self, forms: Vec<Sexp>) -> Result<Vec<Sexp>, Diagnostic> {
        let opts = self.expand_options();
        Stage::Parse.run(|| syntax::expand::splice_includes(&mut self.map, forms, &opts))
    }

    /// Expands a program given as its top-level forms, includes spliced.
    pub fn expand(&self, forms: &[Sexp]) -> Result<ast::Program, Diagnostic> {
        Stage::Parse.run(|| syntax::expand::expand_forms(&self.map, forms))
    }

    /// The core IR of an expanded program.
    pub fn core(&self, ast: &ast::Program) -> Result<ir::Program, Diagnostic> {
        Stage::Core.run(|| ir::anf::lower_program(ast))
    }

    /// [`Session::read_file`], then [`Session::core`].
    pub fn load(&mut self, file: &Path) -> Result<ir::Program, Diagnostic> {
        let ast = self.read_file(file)?;
        self.core(&ast)
    }

    /// [`Session::read_text`], then [`Session::core`].
    pub fn load_text(&mut self, name: &Path, text: String) -> Result<ir::Program, Diagnostic> {
        let ast = self.read_text(name, text)?;
        self.core(&ast)
    }

    /// Runs the program with the reference interpreter, reading
    /// `read-real`'s input from `input` and printing to `out`; the first
    /// `quiet` statements print nothing (the REPL's earlier inputs).
    pub fn interpret(
        &self,
        prog: ir::Program,
        mode: Mode,
        quiet: usize,
        input: &mut dyn BufRead,
        out: &mut dyn Write,
    ) -> Interpreted {
        Stage::Run.run(|| {
            let mut it = Interp::new(prog, input, out);
            it.quiet_stmts = quiet;
            let result = it.run_main(mode, &self.map);
            Interpreted {
                result,
                counters: it.counters.clone(),
            }
        })
    }

    /// The flow analysis of a program: every AD transformation performed,
    /// every procedure specialised.
    pub fn analyse(&self, prog: ir::Program) -> Result<flow::Analysis, Diagnostic> {
        Stage::Analysis.run(|| flow::analyze(prog))
    }

    /// Lowering to FIR, checked by the FIR verifier, then the FIR passes
    /// unless `VLAD_NO_OPT` is set (to tell a lowering bug from an
    /// optimisation bug); with `VLAD_VERIFY_PASSES` (the tests set it) the
    /// verifier runs after every pass too. Every build and every test that compiles comes
    /// through here, so they compile alike.
    ///
    /// The lowered module is verified in every build, not only in debug
    /// builds: a lowering bug is then a clean error naming the broken
    /// invariant, never a panic in a later pass or wrong code.
    pub fn lower(&self, analysis: flow::Analysis) -> Result<fir::Module, Diagnostic> {
        let mut m = self.lower_unoptimised(analysis)?;
        if std::env::var_os("VLAD_NO_OPT").is_none() {
            // What the tests check costs a verification per pass; debug
            // builds always pay it.
            let verify_each_pass =
                cfg!(debug_assertions) || std::env::var_os("VLAD_VERIFY_PASSES").is_some();
            if let Err(e) = fir::optimize(&mut m, verify_each_pass) {
                return Err(Diagnostic::new(
                    None,
                    format!("internal error: the compiler cannot compile this program yet ({e})"),
                ));
            }
        }
        Ok(m)
    }

    /// Lowering to FIR and its verification, without the FIR passes (for
    /// tests that run the passes one at a time).
    pub fn lower_unoptimised(&self, analysis: flow::Analysis) -> Result<fir::Module, Diagnostic> {
        let m = Stage::Lower.run(|| lower::to_fir(analysis, &self.map));
        match base::timing::time("verify", || fir::verify::verify(&m)) {
            Ok(()) => Ok(m),
            Err(e) => Err(Diagnostic::new(
                None,
                format!("internal error: the compiler cannot compile this program yet (lowering broke an invariant of the FIR: {e})"),
            )),
        }
    }

    /// The middle end: [`Session::analyse`], `check` on the analysis (a
    /// library's export asks what its result is), then [`Session::lower`].
    pub fn compile_checked<T>(
        &self,
        prog: ir::Program,
        check: impl FnOnce(&flow::Analysis) -> Result<T, Diagnostic>,
    ) -> Result<(fir::Module, T), Diagnostic> {
        let analysis = self.analyse(prog)?;
        let checked = check(&analysis)?;
        Ok((self.lower(analysis)?, checked))
    }

    /// The middle end: the optimised FIR module of a program.
    pub fn compile(&self, prog: ir::Program) -> Result<fir::Module, Diagnostic> {
        self.compile_checked(prog, |_| Ok(())).map(|(m, ())| m)
    }

    /// The text of a front-end stage (`anf`, `flow`, `fir`): what `build
    /// --emit=STAGE` and the REPL's `,emit` print.
    pub fn emit_text(&self, prog: ir::Program, stage: Emit) -> Result<String, Diagnostic> {
        match stage {
            Emit::Anf => Ok(Stage::Print.run(|| ir::print::program(&prog))),
            Emit::Flow => {
                let analysis = self.analyse(prog)?;
                Ok(Stage::Print.run(|| flow_text(&analysis)))
            }
            Emit::Fir => {
                let module = self.compile(prog)?;
                Ok(Stage::Print.run(|| fir::print::module(&module)))
            }
            Emit::Clif | Emit::Obj => Err(Diagnostic::new(
                None,
                format!(
                    "internal error: `{}` is not a front-end stage",
                    stage.name()
                ),
            )),
        }
    }

    /// Code generation of a whole program.
    pub fn codegen(
        &self,
        module: &fir::Module,
        opts: &codegen::Options,
    ) -> Result<codegen::Output, String> {
        Stage::Codegen.run(|| codegen::compile(module, opts))
    }

    /// Code generation of one library export, entered at `entry`.
    pub fn codegen_export(
        &self,
        module: &fir::Module,
        entry: &str,
    ) -> Result<codegen::Output, String> {
        Stage::Codegen.run(|| codegen::compile_export(module, &codegen::Options::default(), entry))
    }

    /// Links an object with the runtime into the executable `path`.
    pub fn link(
        &self,
        object: &[u8],
        path: &Path,
        keep_temps: bool,
    ) -> Result<codegen::link::Linked, String> {
        Stage::Link.run(|| codegen::link(object, path, keep_temps))
    }

    /// A diagnostic as the user sees it: `file:line:col: error: ...`.
    pub fn render(&self, d: &Diagnostic) -> String {
        d.render(&self.map)
    }
}

/// `--emit=flow`: the transformed lambdas the analysis created, then its
/// view of every specialisation.
fn flow_text(analysis: &flow::Analysis) -> String {
    let prog = &analysis.ops.prog;
    let mut text = ir::print::program(prog);
    for (id, l) in prog.lambdas.iter() {
        if !matches!(l.origin, ir::Origin::Source) {
            text.push_str(&format!("{}\n", ir::print::lambda(prog, id)));
        }
    }
    text.push_str(&flow::print::analysis_text(analysis));
    text
}
