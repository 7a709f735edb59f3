//! The four outcomes of a comparison. How a row earns one is the test in `decision`: faster or
//! slower when the difference is significant (Holm across the rows of one comparison), no
//! difference only by an equivalence test against a stated margin, inconclusive otherwise.
//! (Until 2026-12 a verdict held a bootstrap interval against a noise threshold measured from
//! one A/A group; issue 28 showed that rule almost blind, and it is gone.)

use serde::{Deserialize, Serialize};

/// The outcome of a comparison, for the numerator against the denominator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The numerator takes less time: significant, and not below the practical floor.
    Faster,
    /// The numerator takes more time: significant, and not below the practical floor.
    Slower,
    /// Shown to lie within the equivalence margin (and not a difference that counts).
    NoDifference,
    /// Neither a difference nor its absence is shown.
    Inconclusive,
}
