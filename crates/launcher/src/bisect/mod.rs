//! `decode-baseline bisect`: where in a loop's history, or in a series of MLX releases, a change
//! entered. Each step declares the two sides as two adapters (two commits of the loop's
//! repository exported, `workspace.rs`; or the stock worker in two pinned environments,
//! `environments.rs`), re-pins, and runs one paired interleaved session under the sequential
//! test; the bisection halves the range on its decisions (`plan.rs`). The rules are in
//! `req/bisect.md`.

mod command;
mod environments;
mod plan;
mod workspace;

pub use command::{run, BisectArgs, BisectStep, LoopArgs, SessionArgs, StepArgs};
pub use plan::{Bisection, Outcome, Verdict};
