//! Strongly connected components of a graph given as adjacency lists over
//! dense node indices: Tarjan's algorithm, without recursion (graphs made
//! from programs can be deep).

/// The components of `graph` in reverse topological order: a component
/// comes after every component it has an edge into. Roots are taken in
/// index order and edges in list order, so the result is deterministic.
/// Within a component, members are in the order Tarjan pops them.
pub fn sccs(graph: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = graph.len();
    const NONE: usize = usize::MAX;
    let mut index = vec![NONE; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comps = Vec::new();
    let mut next = 0usize;
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        // (node, next edge to look at)
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut e)) = work.last_mut() {
            if let Some(&w) = graph[v].get(*e) {
                *e += 1;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                comps.push(comp);
            }
        }
    }
    comps
}

#[cfg(test)]
mod tests {
    use super::sccs;

    #[test]
    fn components_come_after_what_they_reach() {
        // 0 -> 1 <-> 2 -> 3, 4 alone, 3 -> 3
        let g = vec![vec![1], vec![2], vec![1, 3], vec![3], vec![]];
        let mut c = sccs(&g);
        for comp in &mut c {
            comp.sort_unstable();
        }
        assert_eq!(c, vec![vec![3], vec![1, 2], vec![0], vec![4]]);
    }

    #[test]
    fn a_long_chain_does_not_recurse() {
        let n = 200_000;
        let g: Vec<Vec<usize>> = (0..n)
            .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
            .collect();
        assert_eq!(sccs(&g).len(), n);
    }
}
