//! The members a cell may hold, as far as a function shows: a set of tags,
//! or every tag but a set (what failed tests leave of a cell whose tags
//! the function does not know).

/// A set of member tags, kept sorted.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Members {
    Only(Vec<u32>),
    AllBut(Vec<u32>),
}

impl Members {
    /// Any member: what nothing is known of.
    pub(super) fn any() -> Members {
        Members::AllBut(Vec::new())
    }

    pub(super) fn one(tag: u32) -> Members {
        Members::Only(vec![tag])
    }

    /// No member: a cell of which the code says this is never there.
    pub(super) fn is_empty(&self) -> bool {
        matches!(self, Members::Only(tags) if tags.is_empty())
    }

    pub(super) fn admits(&self, tag: u32) -> bool {
        match self {
            Members::Only(tags) => tags.binary_search(&tag).is_ok(),
            Members::AllBut(tags) => tags.binary_search(&tag).is_err(),
        }
    }

    /// What remains once a test of `tag` gave `has`.
    pub(super) fn narrow(&self, tag: u32, has: bool) -> Members {
        match (self, has) {
            (_, true) if self.admits(tag) => Members::one(tag),
            (_, true) => Members::Only(Vec::new()),
            (Members::Only(tags), false) => Members::Only(without(tags, &[tag])),
            (Members::AllBut(tags), false) => Members::AllBut(union(tags, &[tag])),
        }
    }

    /// The members of a cell that is one of two.
    pub(super) fn join(&self, other: &Members) -> Members {
        use Members::*;
        match (self, other) {
            (Only(a), Only(b)) => Only(union(a, b)),
            (Only(a), AllBut(b)) | (AllBut(b), Only(a)) => AllBut(without(b, a)),
            (AllBut(a), AllBut(b)) => AllBut(a.iter().copied().filter(|t| b.contains(t)).collect()),
        }
    }
}

impl std::fmt::Display for Members {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |tags: &[u32]| {
            tags.iter()
                .map(|t| format!("#{t}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Members::Only(tags) if tags.len() == 1 => write!(f, "member {}", list(tags)),
            Members::Only(tags) => write!(f, "one of the members {}", list(tags)),
            Members::AllBut(tags) => write!(f, "a member other than {}", list(tags)),
        }
    }
}

fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut u: Vec<u32> = a.iter().chain(b).copied().collect();
    u.sort_unstable();
    u.dedup();
    u
}

fn without(a: &[u32], b: &[u32]) -> Vec<u32> {
    a.iter().copied().filter(|t| !b.contains(t)).collect()
}
