//! GradBench's `ht` eval into the VLAD module's arguments: its input nests
//! the hand model under `data.model`, with bone names (of which only the
//! count matters, the length of `parents`), a boolean `is_mirrored`, and
//! each bone's 4 x 4 matrices as lists of rows; the module takes the
//! fields at the top level, `is_mirrored` as 1 or 0 and each 4 x 4 matrix
//! as its 16 entries row after row (as cpp/gradbench/evals/ht.hpp's
//! `from_json` reads them).

use crate::json::Json;

fn field<'a>(v: &'a Json, path: &[&str]) -> Result<&'a Json, String> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .ok_or_else(|| format!("the input must have `{}`", path.join(".")))
}

/// Each bone's 4 x 4 matrix as a row of 16.
fn flattened(v: &Json, path: &[&str]) -> Result<Json, String> {
    let bad = || format!("`{}` must be a list of 4 x 4 matrices", path.join("."));
    let Json::Arr(matrices) = field(v, path)? else {
        return Err(bad());
    };
    matrices
        .iter()
        .map(|m| match m {
            Json::Arr(rows) if rows.len() == 4 => {
                let mut flat = Vec::with_capacity(16);
                for r in rows {
                    match r {
                        Json::Arr(xs) if xs.len() == 4 => flat.extend(xs.iter().cloned()),
                        _ => return Err(bad()),
                    }
                }
                Ok(Json::Arr(flat))
            }
            _ => Err(bad()),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Arr)
}

/// The input with the fields of the module's arguments at the top level.
pub fn expand(input: &Json) -> Result<Json, String> {
    let model = ["data", "model"];
    let at = |path: &[&str]| field(input, path).cloned();
    let in_model = |k: &str| at(&[model[0], model[1], k]);
    let mirrored = match in_model("is_mirrored")? {
        Json::Bool(b) => Json::Num(if b { 1.0 } else { 0.0 }),
        _ => return Err("`data.model.is_mirrored` must be true or false".into()),
    };
    // The simple variant has no `us`.
    let us = input.get("us").cloned().unwrap_or(Json::Arr(Vec::new()));
    Ok(Json::Obj(vec![
        ("theta".into(), at(&["theta"])?),
        ("us".into(), us),
        ("correspondences".into(), at(&["data", "correspondences"])?),
        ("points".into(), at(&["data", "points"])?),
        ("parents".into(), in_model("parents")?),
        ("is_mirrored".into(), mirrored),
        ("base_positions".into(), in_model("base_positions")?),
        ("weights".into(), in_model("weights")?),
        ("triangles".into(), in_model("triangles")?),
        (
            "base_relatives".into(),
            flattened(input, &["data", "model", "base_relatives"])?,
        ),
        (
            "inverse_base_absolutes".into(),
            flattened(input, &["data", "model", "inverse_base_absolutes"])?,
        ),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn lifts_the_model_and_flattens_its_matrices() {
        let m = "[[1,2,3,4],[5,6,7,8],[9,10,11,12],[13,14,15,16]]";
        let j = parse(&format!(
            r#"{{"theta":[1],"data":{{"correspondences":[0],"points":[[1,2,3]],
            "model":{{"parents":[-1],"is_mirrored":true,"base_positions":[[0,0,0,1]],
            "weights":[[1]],"triangles":[[0,0,0]],"base_relatives":[{m}],
            "inverse_base_absolutes":[{m}],"bone_names":["wrist"]}}}}}}"#
        ))
        .unwrap();
        let e = expand(&j).unwrap();
        assert_eq!(e.get("us").unwrap().to_line(), "[]");
        assert_eq!(e.get("is_mirrored").unwrap().to_line(), "1");
        assert_eq!(
            e.get("base_relatives").unwrap().to_line(),
            "[[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]]"
        );
        let bad = parse(r#"{"theta":[1],"data":{"model":{}}}"#).unwrap();
        assert!(expand(&bad).unwrap_err().contains("data.model.is_mirrored"));
    }
}
