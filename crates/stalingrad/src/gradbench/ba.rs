//! GradBench's `ba` eval in and out of the VLAD module: its input is one
//! camera, point, weight and measurement with the counts n, m and p, which
//! the eval's C++ (cpp/gradbench/evals/ba.hpp, `from_json`) expands into n
//! cameras, m points and p observations, observation i seeing camera
//! i mod n and point i mod m; the module computes on all of them (the eval
//! forbids exploiting the duplication). Its outputs are the C++'s
//! `to_json`: the first block and the count of each error, and of the
//! sparse Jacobian in compressed rows the first 30 entries of each array
//! and the last.

use super::modules::Out;
use crate::json::Json;

/// Parameters of a camera.
const CAM: usize = 11;
/// Nonzeros of a reprojection error's row: the camera's, the point's 3 and
/// the weight.
const ROW: usize = CAM + 3 + 1;
/// Entries of each array of the Jacobian that the eval's output keeps
/// before the last (the C++'s `2 * (BA_NCAMPARAMS + 4)`).
const KEPT: usize = 2 * ROW;

fn count(input: &Json, key: &str) -> Result<usize, String> {
    match input.get(key).and_then(Json::as_f64) {
        Some(x) if x >= 1.0 && x.fract() == 0.0 && x <= 2f64.powi(40) => Ok(x as usize),
        _ => Err(format!("the input must have `{key}`, a positive integer")),
    }
}

fn numbers(input: &Json, key: &str, n: usize) -> Result<Json, String> {
    match input.get(key) {
        Some(Json::Arr(items))
            if items.len() == n && items.iter().all(|x| x.as_f64().is_some()) =>
        {
            Ok(Json::Arr(items.clone()))
        }
        _ => Err(format!(
            "the input must have `{key}`, a list of {n} numbers"
        )),
    }
}

/// The input with the fields of the module's arguments: `cams`, `xs`,
/// `ws`, `obs` and `feats`.
pub fn expand(input: &Json) -> Result<Json, String> {
    let (n, m, p) = (count(input, "n")?, count(input, "m")?, count(input, "p")?);
    let cam = numbers(input, "cam", CAM)?;
    let x = numbers(input, "x", 3)?;
    let feat = numbers(input, "feat", 2)?;
    let w = input
        .get("w")
        .and_then(Json::as_f64)
        .ok_or("the input must have `w`, a number")?;
    let obs = (0..p)
        .map(|i| Json::Arr(vec![Json::Num((i % n) as f64), Json::Num((i % m) as f64)]))
        .collect();
    Ok(Json::Obj(vec![
        ("cams".into(), Json::Arr(vec![cam; n])),
        ("xs".into(), Json::Arr(vec![x; m])),
        ("ws".into(), Json::Arr(vec![Json::Num(w); p])),
        ("obs".into(), Json::Arr(obs)),
        ("feats".into(), Json::Arr(vec![feat; p])),
    ]))
}

/// A result of a matrix (one row per observation) and a vector.
fn rows_and_vector(reals: &[f64]) -> Result<(Vec<Json>, Vec<Json>), String> {
    let mut rest = reals;
    match (Out::Matrix.take(&mut rest), Out::Vector.take(&mut rest)) {
        (Some(Json::Arr(rows)), Some(Json::Arr(v))) if rest.is_empty() && !v.is_empty() => {
            Ok((rows, v))
        }
        _ => Err(format!(
            "internal error: {} result reals are not ba's matrix and vector",
            reals.len()
        )),
    }
}

fn int(x: usize) -> Json {
    Json::Num(x as f64)
}

/// `objective`: the reprojection errors (p rows of 2) and weight errors.
pub fn objective_output(_: &Json, reals: &[f64]) -> Result<Json, String> {
    let (errs, w_errs) = rows_and_vector(reals)?;
    let p = w_errs.len();
    let obj = |fields: Vec<(&str, Json)>| {
        Json::Obj(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    };
    Ok(obj(vec![
        (
            "reproj_error",
            obj(vec![
                ("elements", errs[0].clone()),
                ("repeated", int(errs.len())),
            ]),
        ),
        (
            "w_err",
            obj(vec![("element", w_errs[0].clone()), ("repeated", int(p))]),
        ),
    ]))
}

/// `jacobian`: the values of p blocks (two rows of `ROW` each) and of the
/// p weight errors' derivatives, laid out in compressed rows as the C++'s
/// `SparseMat` does.
pub fn jacobian_output(input: &Json, reals: &[f64]) -> Result<Json, String> {
    let (n, m) = (count(input, "n")?, count(input, "m")?);
    let (blocks, w_d) = rows_and_vector(reals)?;
    let p = w_d.len();
    let block = |i: usize| match &blocks[i] {
        Json::Arr(v) if v.len() == KEPT => Ok(v),
        _ => Err(format!(
            "internal error: ba's block {i} is not {KEPT} reals"
        )),
    };
    // Row r's first entry: 2p rows of ROW entries, then p rows of one.
    let row = |r: usize| {
        if r <= 2 * p {
            ROW * r
        } else {
            ROW * 2 * p + (r - 2 * p)
        }
    };
    // Entry k's column and value.
    let entry = |k: usize| -> Result<(usize, Json), String> {
        if k >= KEPT * p {
            let i = k - KEPT * p;
            return Ok((CAM * n + 3 * m + i, w_d[i].clone()));
        }
        let (i, j) = (k / KEPT, k % ROW);
        let col = match j {
            _ if j < CAM => CAM * (i % n) + j,
            _ if j < CAM + 3 => CAM * n + 3 * (i % m) + (j - CAM),
            _ => CAM * n + 3 * m + i,
        };
        Ok((col, block(i)?[k % KEPT].clone()))
    };
    let (n_rows, n_entries) = (3 * p + 1, (KEPT + 1) * p);
    let kept = |len: usize| (0..KEPT.min(len)).chain([len - 1]);
    let rows = kept(n_rows).map(|r| int(row(r))).collect();
    let mut cols = Vec::new();
    let mut vals = Vec::new();
    for k in kept(n_entries) {
        let (c, v) = entry(k)?;
        cols.push(int(c));
        vals.push(v);
    }
    Ok(Json::Obj(vec![
        ("rows".into(), Json::Arr(rows)),
        ("cols".into(), Json::Arr(cols)),
        ("vals".into(), Json::Arr(vals)),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn expands_as_the_eval_does() {
        let j = parse(
            r#"{"n":2,"m":3,"p":4,"cam":[0,1,2,3,4,5,6,7,8,9,10],"x":[1,2,3],"w":0.5,"feat":[7,8]}"#,
        )
        .unwrap();
        let e = expand(&j).unwrap();
        assert_eq!(e.get("obs").unwrap().to_line(), "[[0,0],[1,1],[0,2],[1,0]]");
        assert_eq!(e.get("ws").unwrap().to_line(), "[0.5,0.5,0.5,0.5]");
        assert_eq!(e.get("xs").unwrap().to_line(), "[[1,2,3],[1,2,3],[1,2,3]]");
        assert!(expand(&parse(r#"{"n":2,"m":3,"p":0}"#).unwrap()).is_err());
    }

    #[test]
    fn the_jacobian_in_compressed_rows() {
        // n = 2, m = 3, p = 12: block i's values are 100 i + j.
        let input = parse(r#"{"n":2,"m":3,"p":12}"#).unwrap();
        let mut reals = vec![12.0];
        for i in 0..12 {
            reals.push(KEPT as f64);
            reals.extend((0..KEPT).map(|j| (100 * i + j) as f64));
        }
        reals.push(12.0);
        reals.extend((0..12).map(|i| -(i as f64)));
        let out = jacobian_output(&input, &reals).unwrap();
        // What GradBench's manual tool prints for these n, m, p.
        assert_eq!(
            out.get("rows").unwrap().to_line(),
            "[0,15,30,45,60,75,90,105,120,135,150,165,180,195,210,225,240,255,270,285,300,315,330,345,360,361,362,363,364,365,372]"
        );
        assert_eq!(
            out.get("cols").unwrap().to_line(),
            "[0,1,2,3,4,5,6,7,8,9,10,22,23,24,31,0,1,2,3,4,5,6,7,8,9,10,22,23,24,31,42]"
        );
        let Some(Json::Arr(vals)) = out.get("vals") else {
            panic!("{out:?}")
        };
        assert_eq!(vals[29], Json::Num(29.0));
        assert_eq!(vals[30], Json::Num(-11.0));
    }
}
