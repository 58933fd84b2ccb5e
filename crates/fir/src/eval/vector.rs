//! The evaluation of the vector operations ([`Op::VecOf`] and the
//! others): a vector is an object of the evaluator's heap whose fields
//! are its slots, element after element.

use super::{get, internal, Cell, Eval, R, V};
use crate::{Op, Val};

impl Eval<'_> {
    /// The result of a vector operation.
    pub(super) fn vector_op(&mut self, op: &Op, env: &[Option<V>]) -> R<Vec<V>> {
        let real = |v: Val| match get(env, v)? {
            V::F(x) => Ok(x),
            _ => internal(format!("{v} is not a real")),
        };
        Ok(match op {
            Op::VecOf(layout, n, slots) => {
                let fields = slots.iter().map(|v| get(env, *v)).collect::<R<Vec<V>>>()?;
                if fields.len() != *n as usize * self.stride(*layout)? {
                    return internal(format!(
                        "a vector #{layout} of {n} elements from {} slots",
                        fields.len()
                    ));
                }
                vec![self.new_vector(*layout, *n as usize, fields)]
            }
            Op::VecBuild {
                layout,
                len,
                func,
                args,
                at,
                state,
            } => {
                let n = count(real(*len)?)?;
                let stride = self.stride(*layout)?;
                let args = args.iter().map(|v| get(env, *v)).collect::<R<Vec<V>>>()?;
                let mut fields = Vec::with_capacity(n * stride);
                if let Some(s) = at {
                    self.sites.push(*s);
                }
                let mut built = Ok(());
                let mut now = match state {
                    Some(v) => Some(get(env, *v)?),
                    None => None,
                };
                for i in 0..n {
                    let mut a = args.clone();
                    a.extend(now);
                    a.push(V::F(i as f64));
                    match self.call(*func, a) {
                        Ok(mut slots) if now.is_some() && slots.len() == stride + 1 => {
                            now = slots.pop();
                            fields.extend(slots)
                        }
                        Ok(slots) if now.is_none() && slots.len() == stride => fields.extend(slots),
                        Ok(_) => {
                            built =
                                internal(format!("{func} gives no element of vector #{layout}"));
                            break;
                        }
                        Err(e) => {
                            built = Err(e);
                            break;
                        }
                    }
                }
                if at.is_some() {
                    self.sites.pop();
                }
                built?;
                vec![self.new_vector(*layout, n, fields)]
            }
            Op::VecLen(v) => vec![V::F(vector(env, *v, &self.heap)?.1 as f64)],
            Op::VecIndexOk(v, i) => {
                let n = vector(env, *v, &self.heap)?.1;
                let i = real(*i)?;
                vec![V::B(is_index(i, n))]
            }
            Op::IsCount(n) => {
                let n = real(*n)?;
                vec![V::B(count(n).is_ok())]
            }
            Op::VecLoad(v, i, layout, slot) => {
                let stride = self.stride(*layout)?;
                let (c, n) = vector(env, *v, &self.heap)?;
                let i = real(*i)?;
                if c.vector.map(|(l, _)| l) != Some(*layout) || !is_index(i, n) {
                    return internal(format!(
                        "a load of element {i} of a vector #{layout} from {v}"
                    ));
                }
                match c.fields.get(i as usize * stride + *slot as usize) {
                    Some(x) if (*slot as usize) < stride => vec![*x],
                    _ => return internal(format!("a load of slot {slot} of a vector #{layout}")),
                }
            }
            Op::VecZero(layout, len) => {
                let n = count(real(*len)?)?;
                let stride = self.stride(*layout)?;
                vec![self.new_vector(*layout, n, vec![V::F(0.0); n * stride])]
            }
            Op::VecOneHot {
                layout,
                len,
                i,
                vals,
            } => {
                let n = count(real(*len)?)?;
                let stride = self.stride(*layout)?;
                let i = real(*i)?;
                if !is_index(i, n) || vals.len() != stride {
                    return internal(format!("a one-hot vector #{layout} at {i} of {n}"));
                }
                let mut fields = vec![V::F(0.0); n * stride];
                for (k, v) in vals.iter().enumerate() {
                    // An element of a sum starts at 0: 0 + -0 is 0.
                    fields[i as usize * stride + k] = match get(env, *v)? {
                        V::F(x) => V::F(crate::FBin::PlusAdd.scalar().apply(0.0, x)),
                        other => other,
                    };
                }
                vec![self.new_vector(*layout, n, fields)]
            }
            // A new buffer every time: what compiled code writes in place
            // no stack of at most `k` elements reads.
            Op::StackPush {
                layout,
                buf,
                k,
                vals,
                ..
            } => {
                let stride = self.stride(*layout)?;
                let k = real(*k)?;
                let (old, n) = vector(env, *buf, &self.heap)?;
                if !is_index(k, n) || vals.len() != stride {
                    return internal(format!("a push on a stack of {k} in a buffer of {n}"));
                }
                let k = k as usize;
                let mut fields = vec![V::F(k as f64 + 1.0)];
                fields.extend(std::iter::repeat_n(V::F(0.0), stride - 1));
                fields.extend_from_slice(&old.fields[stride..(k + 1) * stride]);
                for v in vals {
                    fields.push(get(env, *v)?);
                }
                vec![self.new_vector(*layout, k + 2, fields)]
            }
            // Densely: compiled code may keep the sign of a zero this
            // loses (see the operation's documentation).
            Op::VecPlus(_, a, b) => vec![self.plus(get(env, *a)?, get(env, *b)?)?],
            Op::VecZeroOf { layout, row, of } => {
                let rows = self.zero_rows(*row, get(env, *of)?)?;
                let n = rows.len();
                vec![self.new_vector(*layout, n, rows)]
            }
            Op::VecOneHotOf {
                layout,
                row,
                of,
                i,
                val,
            } => {
                let mut rows = self.zero_rows(*row, get(env, *of)?)?;
                let (n, i) = (rows.len(), real(*i)?);
                if !is_index(i, n) {
                    return internal(format!("a one-hot vector #{layout} at {i} of {n}"));
                }
                rows[i as usize] = get(env, *val)?;
                vec![self.new_vector(*layout, n, rows)]
            }
            _ => return internal("not a vector operation"),
        })
    }

    /// `plus` of two vectors of one length, element by element: of reals,
    /// or of rows (pointers to vectors of reals).
    fn plus(&mut self, a: V, b: V) -> R<V> {
        let (x, n) = vector_at(a, &self.heap)?;
        let (y, m) = vector_at(b, &self.heap)?;
        let layout = x.vector.map_or(0, |(l, _)| l);
        if n != m {
            return internal(format!("a sum of vectors #{layout} of {n} and {m}"));
        }
        let pairs: Vec<(V, V)> = x
            .fields
            .iter()
            .copied()
            .zip(y.fields.iter().copied())
            .collect();
        let mut fields = Vec::with_capacity(pairs.len());
        for (u, v) in pairs {
            fields.push(match (u, v) {
                (V::F(u), V::F(v)) => V::F(crate::FBin::PlusAdd.scalar().apply(u, v)),
                (u @ V::P(_), v @ V::P(_)) => self.plus(u, v)?,
                _ => return internal(format!("a sum of vectors #{layout} not of reals")),
            });
        }
        Ok(self.new_vector(layout, n, fields))
    }

    /// A zero row of layout `row` for each element of the vector `of`, as
    /// long as it.
    fn zero_rows(&mut self, row: u32, of: V) -> R<Vec<V>> {
        let stride = self.stride(row)?;
        let (c, _) = vector_at(of, &self.heap)?;
        let lengths = c
            .fields
            .iter()
            .map(|r| vector_at(*r, &self.heap).map(|(_, m)| m))
            .collect::<R<Vec<usize>>>()?;
        Ok(lengths
            .into_iter()
            .map(|m| self.new_vector(row, m, vec![V::F(0.0); m * stride]))
            .collect())
    }

    /// The slots per element of vectors of `layout`.
    fn stride(&self, layout: u32) -> R<usize> {
        match self.m.vectors.get(&layout) {
            Some(slots) => Ok(slots.len()),
            None => internal(format!("vector #{layout} has no layout")),
        }
    }

    fn new_vector(&mut self, layout: u32, len: usize, fields: Vec<V>) -> V {
        self.heap.push(Cell {
            tag: base::cell_layout::VECTOR_TAG,
            zero: false,
            fields,
            vector: Some((layout, len)),
        });
        V::P(self.heap.len() - 1)
    }
}

/// The vector `v` points to, and its length.
fn vector<'h>(env: &[Option<V>], v: Val, heap: &'h [Cell]) -> R<(&'h Cell, usize)> {
    vector_at(get(env, v)?, heap)
}

/// The vector a pointer points to, and its length.
fn vector_at(v: V, heap: &[Cell]) -> R<(&Cell, usize)> {
    match v {
        V::P(i) => match heap.get(i) {
            Some(
                c @ Cell {
                    vector: Some((_, n)),
                    ..
                },
            ) => Ok((c, *n)),
            _ => internal(format!("{v:?} is not a vector")),
        },
        _ => internal(format!("{v:?} is not a pointer")),
    }
}

/// A length a vector may have ([`crate::Op::IsCount`]), as a number.
fn count(n: f64) -> R<usize> {
    if base::number::is_count(n) {
        Ok(n as usize)
    } else {
        internal(format!("{n} elements"))
    }
}

/// Is `i` an index of a vector of `n` elements ([`crate::Op::VecIndexOk`])?
fn is_index(i: f64, n: usize) -> bool {
    i.trunc() == i && 0.0 <= i && i < n as f64
}
