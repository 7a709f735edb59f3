//! The four outcomes of a comparison. How a row earns one is the test in `decision`: faster or
//! slower when the difference is significant (Holm across the rows of one comparison), no
//! difference only by an equivalence test against a stated margin, inconclusive otherwise.
//! (Until 2026-12 a verdict held a bootstrap interval against a noise threshold measured from
//! one A/A group; issue 28 showed that rule almost blind, and it is gone.)

// The type is a wire type (a session's energy ratios carry one): it lives in the wire crate.
pub use decode_baseline_wire::stats::Verdict;
