//! Ordering: the `letrec*` top level into evaluation order (strongly
//! connected components of lambda definitions, each placed before its
//! first use), rejecting a value needed before it is evaluated.

use super::*;

/// Turns the expanded items into evaluation order (see the module doc):
/// drops unreachable library items, groups lambda definitions into
/// strongly connected components, places each group before its first use,
/// and rejects values used before they are evaluated.
pub(super) fn order(map: &SourceMap, items: Vec<Item>) -> Result<Program, Diagnostic> {
    let n = items.len();
    let mut index: HashMap<Name, usize> = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        if let ItemKind::Def { name, .. } = &it.kind {
            index.insert(name.clone(), i);
        }
    }
    // Top-level references of each item, with the span of the first use.
    let refs: Vec<Vec<(usize, Span)>> = items
        .iter()
        .map(|it| {
            let e = match &it.kind {
                ItemKind::Def { expr, .. } | ItemKind::Show { expr, .. } => expr,
            };
            e.free_vars()
                .into_iter()
                .filter_map(|(name, span)| index.get(&name).map(|&j| (j, span)))
                .collect()
        })
        .collect();
    let is_lambda: Vec<bool> = items
        .iter()
        .map(|it| {
            matches!(
                &it.kind,
                ItemKind::Def {
                    expr: Expr::Lambda(_),
                    ..
                }
            )
        })
        .collect();

    // Keep every program item and the library items they reach.
    let mut keep = vec![false; n];
    let mut todo: Vec<usize> = (0..n).filter(|&i| !items[i].from_lib).collect();
    for &i in &todo {
        keep[i] = true;
    }
    while let Some(i) = todo.pop() {
        for &(j, _) in &refs[i] {
            if !keep[j] {
                keep[j] = true;
                todo.push(j);
            }
        }
    }

    // Strongly connected components of the kept lambda definitions.
    let lambdas: Vec<usize> = (0..n).filter(|&i| keep[i] && is_lambda[i]).collect();
    let mut dense = vec![usize::MAX; n];
    for (k, &i) in lambdas.iter().enumerate() {
        dense[i] = k;
    }
    let graph: Vec<Vec<usize>> = lambdas
        .iter()
        .map(|&i| {
            refs[i]
                .iter()
                .map(|&(j, _)| dense[j])
                .filter(|&k| k != usize::MAX)
                .collect()
        })
        .collect();
    // Members of each component in source order.
    let sccs: Vec<Vec<usize>> = base::scc::sccs(&graph)
        .into_iter()
        .map(|comp| {
            let mut items: Vec<usize> = comp.into_iter().map(|k| lambdas[k]).collect();
            items.sort_unstable();
            items
        })
        .collect();
    let mut group_of: Vec<usize> = vec![usize::MAX; n];
    for (g, members) in sccs.iter().enumerate() {
        for &i in members {
            group_of[i] = g;
        }
    }

    let mut items: Vec<Option<Item>> = items.into_iter().map(Some).collect();
    let mut st = Placer {
        map,
        items: &mut items,
        refs: &refs,
        is_lambda: &is_lambda,
        sccs: &sccs,
        group_of: &group_of,
        placed: vec![false; sccs.len()],
        evaluated: vec![false; n],
        out: Vec::new(),
    };
    for i in 0..n {
        if !keep[i] || is_lambda[i] {
            continue;
        }
        for &(j, span) in &refs[i] {
            if is_lambda[j] {
                st.place(group_of[j], span)?;
            } else if !st.evaluated[j] {
                return Err(st.used_early(j, span));
            }
        }
        st.evaluated[i] = true;
        st.emit_value(i);
    }
    // Groups nothing evaluated needs, in source order.
    let mut rest: Vec<usize> = (0..sccs.len()).collect();
    rest.sort_by_key(|&g| sccs[g].first().copied().unwrap_or(0));
    for g in rest {
        let span = st.def_span(sccs[g].first().copied().unwrap_or(0));
        st.place(g, span)?;
    }
    Ok(Program { items: st.out })
}

pub(super) struct Placer<'a> {
    pub(super) map: &'a SourceMap,
    pub(super) items: &'a mut Vec<Option<Item>>,
    pub(super) refs: &'a [Vec<(usize, Span)>],
    pub(super) is_lambda: &'a [bool],
    pub(super) sccs: &'a [Vec<usize>],
    pub(super) group_of: &'a [usize],
    pub(super) placed: Vec<bool>,
    pub(super) evaluated: Vec<bool>,
    pub(super) out: Vec<TopItem>,
}

impl Placer<'_> {
    pub(super) fn def_span(&self, i: usize) -> Span {
        match self
            .items
            .get(i)
            .and_then(Option::as_ref)
            .map(|it| &it.kind)
        {
            Some(ItemKind::Def { span, .. }) | Some(ItemKind::Show { span, .. }) => *span,
            None => Span {
                file: FileId(0),
                line: 1,
                col: 1,
            },
        }
    }

    pub(super) fn name(&self, i: usize) -> String {
        match self
            .items
            .get(i)
            .and_then(Option::as_ref)
            .map(|it| &it.kind)
        {
            Some(ItemKind::Def { name, .. }) => name.clone(),
            _ => String::new(),
        }
    }

    pub(super) fn used_early(&self, j: usize, span: Span) -> Diagnostic {
        let name = self.name(j);
        let shown = name.strip_suffix(" (std)").unwrap_or(&name);
        Diagnostic::at(
            span,
            format!("`{shown}` is used before its definition is evaluated"),
        )
        .with_note(format!(
            "`{shown}` is defined at {}",
            self.map.locate(self.def_span(j))
        ))
    }

    /// Emits lambda group `g` (after the groups it needs), checking that
    /// every value it closes over has been evaluated. `use_span` is the
    /// use that made the group necessary.
    pub(super) fn place(&mut self, g: usize, use_span: Span) -> Result<(), Diagnostic> {
        if self.placed[g] {
            return Ok(());
        }
        self.placed[g] = true;
        let (sccs, refs, group_of) = (self.sccs, self.refs, self.group_of);
        let members = &sccs[g];
        for &i in members {
            for &(j, span) in &refs[i] {
                if self.is_lambda[j] {
                    if group_of[j] != g {
                        self.place(group_of[j], use_span)?;
                    }
                } else if !self.evaluated[j] {
                    return Err(self.used_early(j, span).with_note(format!(
                        "it is needed by `{}`, which is used at {}",
                        self.name(i),
                        self.map.locate(use_span)
                    )));
                }
            }
        }
        let mut binds = Vec::new();
        for &i in members {
            if let Some(Item {
                kind:
                    ItemKind::Def {
                        name,
                        span,
                        expr: Expr::Lambda(l),
                    },
                ..
            }) = self.items[i].take()
            {
                binds.push(RecBinding {
                    name,
                    span,
                    lambda: *l,
                });
            }
        }
        self.out.push(TopItem::Rec(binds));
        Ok(())
    }

    pub(super) fn emit_value(&mut self, i: usize) {
        match self.items[i].take().map(|it| it.kind) {
            Some(ItemKind::Def { name, span, expr }) => {
                self.out.push(TopItem::Define { name, span, expr })
            }
            Some(ItemKind::Show { expr, expect, span }) => {
                self.out.push(TopItem::Show { expr, expect, span })
            }
            None => {}
        }
    }
}
