//! `decode-baseline calibrate`: the host noise profile from A/A yardstick sessions, and the
//! profile files `compare` and `run` read.

mod command;

pub use command::{run, CalibrateArgs, MIN_CALIBRATION_REPETITIONS};
