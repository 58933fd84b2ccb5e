//! The analysis' view of a program, as `stalingrad build --emit=flow`
//! prints it: every live specialisation, the abstract value and plan of
//! each binding, and the unions with the sites that made them.

use crate::analysis::{Analysis, Plan};
use crate::text::{av_text, site_text, union_text};
use ir::EntityRef;
use std::fmt::Write;

fn plan_text(p: &Plan) -> String {
    match p {
        Plan::Plain => String::new(),
        Plan::Call(s) => format!("  ; calls S{}", s.index()),
        Plan::Prim(p) => format!("  ; primitive {p}"),
        Plan::If { then_, else_ } => {
            let f = |x: &Option<crate::SpecId>| {
                x.map_or("-".to_string(), |s| format!("S{}", s.index()))
            };
            format!("  ; if then {} else {}", f(then_), f(else_))
        }
        Plan::Build(elem) => format!(
            "  ; build-vector, each element: {}",
            plan_text(&elem.plan).trim_start_matches("  ; ")
        ),
        Plan::Check => "  ; checked at run time".into(),
        Plan::Error(m) => format!("  ; run-time error: {m}"),
        Plan::Dead => "  ; never reached".into(),
        Plan::Switch(sw) => {
            let crate::analysis::Switch { var, path, cases } = &**sw;
            let path: String = path.iter().map(|c| format!(".{c}")).collect();
            let cases: Vec<String> = cases
                .iter()
                .map(|(_, info)| plan_text(&info.plan).trim_start_matches("  ; ").to_string())
                .collect();
            format!("  ; switch on {var}{path} [{}]", cases.join(" | "))
        }
    }
}

/// Every specialisation with the abstract value of each binding.
pub fn analysis_text(a: &Analysis) -> String {
    let mut s = String::new();
    let live = (0..a.specs.len())
        .filter(|i| a.is_live(crate::SpecId::new(*i)))
        .count();
    let _ = writeln!(
        s,
        "; {} specialisations ({live} live), {} analysis passes",
        a.specs.len(),
        a.iterations
    );
    for (i, spec) in a.specs.iter().enumerate() {
        if !a.is_live(crate::SpecId::new(i)) {
            continue;
        }
        let lam = &a.ops.prog.lambdas[spec.lambda];
        let env: Vec<String> = lam
            .free
            .iter()
            .zip(&spec.env)
            .map(|(v, x)| {
                format!(
                    "{}={}",
                    ir::print::var(&a.ops.prog, *v),
                    av_text(&a.ops.dom, &a.ops.prog, *x)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "spec S{i} = {} {} [{}] ({}={}) -> {}",
            spec.lambda,
            lam.name.as_deref().unwrap_or("_"),
            env.join(" "),
            ir::print::var(&a.ops.prog, lam.param),
            av_text(&a.ops.dom, &a.ops.prog, spec.arg),
            av_text(&a.ops.dom, &a.ops.prog, spec.result)
        );
        for (b, info) in lam.body.iter().zip(&spec.binds) {
            let _ = writeln!(
                s,
                "  {} : {}{}",
                ir::print::var(&a.ops.prog, b.var),
                av_text(&a.ops.dom, &a.ops.prog, info.av),
                plan_text(&info.plan)
            );
        }
    }
    for u in a.ops.dom.union_ids() {
        if !a.ops.dom.members(u).is_empty() {
            let sites: Vec<String> = a
                .ops
                .dom
                .sites_of(u)
                .iter()
                .map(|site| site_text(&a.ops.prog, site))
                .collect();
            let _ = writeln!(
                s,
                "union {}  ; made at {}",
                union_text(&a.ops.dom, &a.ops.prog, u),
                sites.join(", ")
            );
        }
    }
    s.push_str("main\n");
    let binds = a.ops.prog.main.iter().filter_map(|st| match st {
        ir::Stmt::Bind(b) => Some(b),
        ir::Stmt::Show { .. } => None,
    });
    for (b, info) in binds.zip(&a.main) {
        let _ = writeln!(
            s,
            "  {} : {}{}",
            ir::print::var(&a.ops.prog, b.var),
            av_text(&a.ops.dom, &a.ops.prog, info.av),
            plan_text(&info.plan)
        );
    }
    s
}
