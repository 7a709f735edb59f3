//! Statistics of decode times: validated samples, descriptive summaries with bootstrap
//! intervals, Tukey outliers, drift, ratios of medians and verdicts. Pure Rust (statrs and a
//! seeded ChaCha8 stream); nothing here links MLX. Each submodule documents its formulas.

mod bootstrap;
mod drift;
mod error;
mod outliers;
mod paired;
mod ratio;
mod sample;
mod summary;
mod verdict;
mod yardstick;

#[cfg(test)]
mod proptests;

pub use bootstrap::{BootstrapConfig, Interval, Resampling, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED};
pub use drift::{Drift, DriftConfig, DEFAULT_ALPHA, DEFAULT_DRIFT_THRESHOLD, MIN_REQUESTS};
pub use error::StatsError;
pub use outliers::{TukeyOutliers, MILD_IQR, SEVERE_IQR};
pub use paired::{PairedSample, MIN_PAIRS};
pub use ratio::RatioEstimate;
pub use sample::{quantile_sorted, ClusteredSample, Sample, MIN_CLUSTERS, MIN_OBSERVATIONS};
pub use summary::{StabilityWarning, Summary, WarningKind, MAX_STABLE_CI_HALF_WIDTH, MAX_STABLE_CV, MIN_STABLE_UNITS};
pub use verdict::{
    Comparison, NoiseBound, NoiseThreshold, ThresholdSource, Verdict, DEFAULT_NOISE_THRESHOLD, MIN_NOISE_THRESHOLD,
};
pub use yardstick::{against_yardstick, SessionRatio};
