//! `decode-baseline bisect`: where in a loop's history a change entered. Each step exports two
//! commits of the loop's repository, declares them as two adapters, re-pins, and runs one paired
//! interleaved session under the sequential test; the bisection halves the range on its
//! decisions (`plan.rs`). The rules are in `req/bisect.md`.

mod command;
mod plan;
mod workspace;

pub use command::{run, BisectArgs, BisectStep, LoopArgs};
pub use plan::{Bisection, Outcome, Verdict};
