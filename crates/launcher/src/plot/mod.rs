//! Figures of a session, as SVG files readable in any browser: per cell, decode-step time by
//! position (median with a p10–p90 band) and the distribution of per-token times for both
//! adapters, energy per token against time per token where energy was read, and a roofline
//! when a peak memory bandwidth is given. `run` writes them next to
//! `session.json`; `decode-baseline plot` writes them on demand.

mod command;
mod depth;
mod distribution;
mod energy;
mod error;
mod roofline;
pub(crate) mod step_bytes;
mod steps;
mod svg;
mod write;

pub use command::{run, PlotArgs};
pub use error::PlotError;
pub use svg::esc;
pub use write::{session_figures, write_session_plots, Figure};
