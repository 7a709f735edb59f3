//! macOS: not yet implemented, and said so. What is readable there without sudo is the
//! IOReport "Energy Model" channels (CPU, GPU, ANE and DRAM energy, as the `macmon` tool reads
//! them, through the private `libIOReport.dylib`) and `ProcessInfo.thermalState` (Foundation,
//! Objective-C); `powermetrics` needs sudo and `pmset -g therm` says nothing useful on Apple
//! silicon. Neither can be built or tried without a Mac, which this project's machines are
//! not, so the source reports itself missing on every platform rather than claim a reading
//! nobody has seen. Elsewhere it is missing because the build is not for macOS.

use super::source::{DomainSample, EnergySource, Missing};

/// The macOS source (never opens yet).
#[derive(Debug)]
pub struct MacSource;

impl MacSource {
    /// Why it cannot be read here.
    pub fn open() -> Result<Self, Missing> {
        if cfg!(target_os = "macos") {
            Err(Missing::NotImplemented {
                what: "IOReport energy and the thermal state are not read yet (untested without a Mac)",
            })
        } else {
            Err(Missing::NotMacos)
        }
    }
}

impl EnergySource for MacSource {
    fn name(&self) -> &'static str {
        "macos"
    }

    fn domains(&self) -> Vec<String> {
        Vec::new()
    }

    fn read(&mut self) -> Vec<DomainSample> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_says_why_it_is_missing_on_this_build() {
        let err = MacSource::open().unwrap_err();
        if cfg!(target_os = "macos") {
            assert!(matches!(err, Missing::NotImplemented { .. }), "{err}");
        } else {
            assert_eq!(err.to_string(), "not a macOS build");
        }
    }
}
