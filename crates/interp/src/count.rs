//! Operation counters for `--count-ops`: how much arithmetic ran, and how
//! many steps the structural AD operations took. The benchmark suite
//! compares these with the counters of compiled code, so the format is
//! fixed: a table for people, one JSON line for machines.

use ir::{Prim, PrimKind};
use std::fmt::Write;

#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Applications of each primitive, indexed by position in `Prim::ALL`.
    pub prims: Vec<u64>,
    /// Value nodes built by `zero`.
    pub zero: u64,
    /// Value nodes combined by `plus` (reals added included).
    pub plus: u64,
    /// Value nodes visited by the tag operations (`*j`, `bundle`,
    /// `primal`, ...) and lambdas transformed.
    pub transform: u64,
}

fn index(p: Prim) -> usize {
    Prim::ALL.iter().position(|q| *q == p).unwrap_or(0)
}

impl Counters {
    pub fn new() -> Counters {
        Counters {
            prims: vec![0; Prim::ALL.len()],
            ..Counters::default()
        }
    }

    pub fn prim(&mut self, p: Prim) {
        self.prims[index(p)] += 1;
    }

    pub fn count(&self, p: Prim) -> u64 {
        self.prims[index(p)]
    }

    pub fn arithmetic_total(&self) -> u64 {
        Prim::ALL
            .iter()
            .filter(|p| p.is_arithmetic())
            .map(|p| self.count(*p))
            .sum()
    }

    pub fn comparisons(&self) -> u64 {
        Prim::ALL
            .iter()
            .filter(|p| p.kind() == PrimKind::Compare)
            .map(|p| self.count(*p))
            .sum()
    }

    /// One line of JSON, in the layout compiled programs print too.
    pub fn json(&self) -> String {
        let mut slots = [0u64; base::counters::SLOTS];
        for p in Prim::ALL.iter().filter(|p| p.is_arithmetic()) {
            if let Some(i) = base::counters::arithmetic_slot(p.name()) {
                slots[i] = self.count(*p);
            }
        }
        slots[base::counters::COMPARISONS] = self.comparisons();
        slots[base::counters::ZERO] = self.zero;
        slots[base::counters::PLUS] = self.plus;
        slots[base::counters::TRANSFORM] = self.transform;
        let mut s = String::new();
        let _ = base::counters::write_json(&slots, &mut s);
        s
    }

    /// An aligned table, one operation a line, zero rows omitted.
    pub fn table(&self) -> String {
        let mut rows: Vec<(String, u64)> = Vec::new();
        for p in Prim::ALL.iter().filter(|p| p.is_arithmetic()) {
            rows.push((p.name().to_string(), self.count(*p)));
        }
        rows.push(("arithmetic total".into(), self.arithmetic_total()));
        rows.push(("comparisons".into(), self.comparisons()));
        rows.push(("zero steps".into(), self.zero));
        rows.push(("plus steps".into(), self.plus));
        rows.push(("transform steps".into(), self.transform));
        let mut s = String::from("operation counts\n");
        for (name, n) in rows {
            if n != 0 || name.contains("total") {
                let _ = writeln!(s, "  {name:<18} {n:>14}");
            }
        }
        s
    }
}
