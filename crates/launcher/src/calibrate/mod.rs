//! `decode-baseline calibrate`: the host noise profile from A/A yardstick sessions, and the
//! profile files `compare` and `run` read.

mod command;
pub mod profiles;

pub use command::{run, CalibrateArgs};
