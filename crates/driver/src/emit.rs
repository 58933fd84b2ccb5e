//! The text forms a build can stop at (`build --emit=STAGE`, the REPL's
//! `,emit`), named once for the CLI, the REPL and their messages.

/// A stage whose output `--emit` prints or writes instead of linking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The core IR (`ir::print`).
    Anf,
    /// The flow analysis: the lambdas it transformed and every
    /// specialisation (`flow::print`).
    Flow,
    /// The optimised first-order IR (`fir::print`).
    Fir,
    /// The Cranelift IR of every function.
    Clif,
    /// The object file, written to `-o`.
    Obj,
}

/// The names `--emit` accepts, in pipeline order; `ir` is the former name
/// of `fir`, accepted for one release.
pub const NAMES: [(&str, Emit); 6] = [
    ("anf", Emit::Anf),
    ("flow", Emit::Flow),
    ("fir", Emit::Fir),
    ("clif", Emit::Clif),
    ("obj", Emit::Obj),
    ("ir", Emit::Fir),
];

/// The former names and what replaced them, for a note to the user.
pub const RENAMED: [(&str, &str); 1] = [("ir", "fir")];

impl Emit {
    /// `None` for a name `--emit` does not take.
    pub fn from_name(name: &str) -> Option<Emit> {
        NAMES.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
    }

    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, e)| *e == self)
            .map_or("", |(n, _)| n)
    }

    /// The stages whose text the front end writes (the others need code
    /// generation).
    pub fn is_front(self) -> bool {
        matches!(self, Emit::Anf | Emit::Flow | Emit::Fir)
    }
}

/// The current name of a former one (`ir` -> `fir`).
pub fn renamed(name: &str) -> Option<&'static str> {
    RENAMED
        .iter()
        .find(|(old, _)| *old == name)
        .map(|(_, new)| *new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for (name, e) in NAMES {
            assert_eq!(Emit::from_name(name), Some(e));
        }
        assert_eq!(Emit::Fir.name(), "fir");
        assert_eq!(Emit::from_name("ir"), Some(Emit::Fir));
        assert_eq!(renamed("ir"), Some("fir"));
        assert_eq!(Emit::from_name("asm"), None);
    }
}
