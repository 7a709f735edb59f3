//! The per-step contract of the controlled loop, checked at every step boundary (always in
//! tests, and by default in debug builds). A violation names the clause and the field, so a
//! broken invariant is reported where it breaks, not as a downstream symptom.
//!
//! 1. Every layer's cache offset equals the position just fed.
//! 2. The produced token count advanced by exactly one.
//! 3. The step is stamped with a monotonic time after the previous stamp.
//! 4. The recorded argmax equals the argmax of the logits just evaluated (ties: lowest index).
//! 5. No work is queued past the step: the logits and every cache buffer are evaluated and
//!    available.

use mlx_rs::Array;

use crate::model::LayerCache;

/// A broken clause of the contract.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("step contract clause {clause} violated at position {position}: field `{field}` expected {expected}, found {actual}")]
pub struct ContractViolation {
    pub clause: u8,
    pub position: u32,
    pub field: String,
    pub expected: String,
    pub actual: String,
}

/// What a step boundary looks like to the checker.
pub struct Boundary<'a> {
    /// Position of the token just fed (the prompt's last position for the prompt forward).
    pub position: u32,
    /// Tokens produced so far in the request, this step's included.
    pub produced: usize,
    /// This step's stamp, nanoseconds since the request started.
    pub t_ns: u64,
    /// The argmax the loop recorded.
    pub argmax: u32,
    /// The logits the loop evaluated (any float dtype, last axis the vocabulary).
    pub logits: &'a Array,
    pub cache: &'a [LayerCache],
}

/// Remembers the previous boundary.
#[derive(Debug, Default)]
pub struct Checker {
    previous: Option<(usize, u64)>,
}

impl Checker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks clauses 1-5 in order and remembers this boundary.
    pub fn check(&mut self, b: &Boundary<'_>) -> Result<(), ContractViolation> {
        let violation = |clause: u8, field: String, expected: String, actual: String| ContractViolation {
            clause,
            position: b.position,
            field,
            expected,
            actual,
        };
        // Clause 5 comes before anything reads the arrays: reading would wait for them.
        for (i, c) in b.cache.iter().enumerate() {
            for (j, a) in c.state().enumerate() {
                if !is_available(a) {
                    let name = if j == 0 { "keys" } else { "values" };
                    return Err(violation(5, format!("cache[{i}].{name}"), "available".into(), "pending".into()));
                }
            }
        }
        if !is_available(b.logits) {
            return Err(violation(5, "logits".into(), "available".into(), "pending".into()));
        }
        for (i, c) in b.cache.iter().enumerate() {
            if c.offset() as i64 != b.position as i64 {
                return Err(violation(1, format!("cache[{i}].offset"), b.position.to_string(), c.offset().to_string()));
            }
        }
        if let Some((produced, t_ns)) = self.previous {
            if b.produced != produced + 1 {
                return Err(violation(2, "produced".into(), (produced + 1).to_string(), b.produced.to_string()));
            }
            if b.t_ns <= t_ns {
                return Err(violation(3, "t_ns".into(), format!("> {t_ns}"), b.t_ns.to_string()));
            }
        } else if b.produced != 1 {
            return Err(violation(2, "produced".into(), "1".into(), b.produced.to_string()));
        }
        let top = top2(b.logits).map_err(|e| violation(4, "logits".into(), "readable float logits".into(), e))?;
        if top.argmax != b.argmax {
            return Err(violation(4, "argmax".into(), top.argmax.to_string(), b.argmax.to_string()));
        }
        self.previous = Some((b.produced, b.t_ns));
        Ok(())
    }
}

/// Whether an array's data is computed (`_mlx_array_is_available`: no pending work).
pub fn is_available(a: &Array) -> bool {
    let mut available = false;
    // SAFETY: `a` is a live array; the call only reads its status.
    let rc = unsafe { mlx_sys::_mlx_array_is_available(&mut available, a.as_ptr()) };
    rc == 0 && available
}

/// Top-1 and top-2 of a logits row, read on the host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Top2 {
    /// Index of the largest value, the lowest such index on ties (as `mx.argmax`).
    pub argmax: u32,
    pub top1: f32,
    /// The largest value at any other index (equal to `top1` on a tie).
    pub top2: f32,
}

impl Top2 {
    /// top1 − top2, exact in f64 for any two f32 values.
    pub fn margin(&self) -> f64 {
        self.top1 as f64 - self.top2 as f64
    }

    pub fn tie(&self) -> bool {
        self.top1 == self.top2
    }
}

/// Reads an evaluated logits array (all of it: callers pass one row) as f32 — exact for
/// bfloat16 and float16 — and finds its top two. NaN values are skipped.
pub fn top2(logits: &Array) -> Result<Top2, String> {
    let values = logits.as_dtype(mlx_rs::Dtype::Float32).map_err(|e| e.to_string())?;
    values.eval().map_err(|e| e.to_string())?;
    let row: &[f32] = values.try_as_slice().map_err(|e| e.to_string())?;
    if row.len() < 2 {
        return Err(format!("{} logits", row.len()));
    }
    let mut best: Option<usize> = None;
    for (i, &v) in row.iter().enumerate() {
        if !v.is_nan() && best.is_none_or(|b| v > row[b]) {
            best = Some(i);
        }
    }
    let best = best.ok_or("all logits are NaN")?;
    let top2 = row
        .iter()
        .enumerate()
        .filter(|&(i, v)| i != best && !v.is_nan())
        .map(|(_, &v)| v)
        .fold(f32::NEG_INFINITY, f32::max);
    Ok(Top2 { argmax: best as u32, top1: row[best], top2 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top2_ties_go_to_the_lowest_index() {
        let t = top2(&Array::from_slice(&[1.0f32, 3.0, 2.0, 3.0], &[4])).unwrap();
        assert_eq!((t.argmax, t.top1, t.top2, t.tie()), (1, 3.0, 3.0, true));
        let t = top2(&Array::from_slice(&[5.0f32, 3.0, 4.5, 1.0], &[4])).unwrap();
        assert_eq!((t.argmax, t.margin(), t.tie()), (0, 0.5, false));
        let t = top2(&Array::from_slice(&[-1.0f32, -3.0, -0.5, -0.5], &[4])).unwrap();
        assert_eq!((t.argmax, t.tie()), (2, true));
    }

    /// mx.argmax's tie rule, checked on the linked libmlx: the first maximal index.
    #[test]
    fn mlx_argmax_ties_go_to_the_lowest_index() {
        for row in [[0.0f32, 7.0, 7.0, 1.0], [7.0, 0.0, 0.0, 7.0], [1.0, 2.0, 3.0, 3.0]] {
            let a = mlx_rs::ops::indexing::argmax_axis(Array::from_slice(&row, &[1, 4]), -1, false).unwrap();
            let host = top2(&Array::from_slice(&row, &[4])).unwrap();
            assert_eq!(a.item_exact::<u32>(), host.argmax, "{row:?}");
        }
        // Long rows go through the vectorized reduction.
        let mut row = vec![0.0f32; 4096];
        row[1000] = 1.0;
        row[3000] = 1.0;
        let a = mlx_rs::ops::indexing::argmax_axis(Array::from_slice(&row, &[1, 4096]), -1, false).unwrap();
        assert_eq!(a.item_exact::<u32>(), 1000);
    }

    #[test]
    fn violations_name_clause_and_field() {
        let logits = Array::from_slice(&[0.0f32, 2.0, 1.0], &[1, 1, 3]);
        logits.eval().unwrap();
        let mut c = Checker::new();
        let b = |t_ns, argmax, produced| Boundary { position: 0, produced, t_ns, argmax, logits: &logits, cache: &[] };
        c.check(&b(10, 1, 1)).unwrap();
        let e = c.check(&b(20, 1, 3)).unwrap_err();
        assert_eq!((e.clause, e.field.as_str()), (2, "produced"));
        let e = c.check(&b(10, 1, 2)).unwrap_err();
        assert_eq!((e.clause, e.field.as_str()), (3, "t_ns"));
        let e = c.check(&b(30, 2, 2)).unwrap_err();
        assert_eq!((e.clause, e.field.as_str()), (4, "argmax"));
        assert!(e.to_string().contains("clause 4"), "{e}");
        let pending = Array::from_slice(&[1.0f32], &[1]).add(Array::from_f32(1.0)).unwrap();
        let e = Checker::new()
            .check(&Boundary { position: 0, produced: 1, t_ns: 1, argmax: 0, logits: &pending, cache: &[] })
            .unwrap_err();
        assert_eq!((e.clause, e.field.as_str()), (5, "logits"));
    }
}
