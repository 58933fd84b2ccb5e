//! The stages of the pipeline as data: what `--time-passes` calls each
//! one and which memory phase an out-of-memory error names while it runs.

use base::memory::Phase;

/// A stage of the pipeline, in the order a build runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Source text to core AST: reading, includes, expansion.
    Parse,
    /// Core AST to core IR (alpha conversion and A-normal form).
    Core,
    /// The flow analysis, which performs every AD transformation.
    Analysis,
    /// Lowering to FIR, its verification and the FIR passes.
    Lower,
    /// FIR to an object file through Cranelift.
    Codegen,
    /// The object and the runtime to an executable, by the system `cc`.
    Link,
    /// The reference interpreter running the core IR.
    Run,
    /// Writing a stage's text form (`--emit`).
    Print,
}

/// What the pipeline records of a stage.
#[derive(Clone, Copy, Debug)]
pub struct StageInfo {
    pub stage: Stage,
    /// The span `--time-passes` and `VLAD_PASS_TRACE` print.
    pub span: &'static str,
    /// What the memory budget's error says was under way; `None` leaves
    /// the phase of the stage before (printing belongs to what it prints).
    pub phase: Option<Phase>,
}

/// Every stage, in order.
pub const STAGES: [StageInfo; 8] = [
    StageInfo {
        stage: Stage::Parse,
        span: "parse",
        phase: Some(Phase::Reading),
    },
    StageInfo {
        stage: Stage::Core,
        span: "ir",
        phase: Some(Phase::Reading),
    },
    StageInfo {
        stage: Stage::Analysis,
        span: "analysis",
        phase: Some(Phase::Analysing),
    },
    StageInfo {
        stage: Stage::Lower,
        span: "lower",
        phase: Some(Phase::Lowering),
    },
    StageInfo {
        stage: Stage::Codegen,
        span: "codegen",
        phase: Some(Phase::Compiling),
    },
    StageInfo {
        stage: Stage::Link,
        span: "link",
        phase: Some(Phase::Compiling),
    },
    StageInfo {
        stage: Stage::Run,
        span: "run",
        phase: Some(Phase::Running),
    },
    StageInfo {
        stage: Stage::Print,
        span: "print",
        phase: None,
    },
];

impl Stage {
    pub fn info(self) -> &'static StageInfo {
        // `STAGES` lists the variants in declaration order.
        &STAGES[self as usize]
    }

    /// Runs `f` as this stage: its memory phase, then its timing span.
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        let info = self.info();
        if let Some(phase) = info.phase {
            base::memory::set_phase(phase);
        }
        base::timing::time(info.span, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_listed_in_declaration_order() {
        for (i, info) in STAGES.iter().enumerate() {
            assert_eq!(info.stage as usize, i, "{:?}", info.stage);
        }
    }
}
