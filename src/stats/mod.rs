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

pub use bootstrap::validate as validate_bootstrap;
pub use decode_baseline_wire::stats::{
    BootstrapConfig, Drift, DriftConfig, Interval, RatioEstimate, Resampling, StabilityWarning, Summary, TukeyOutliers,
    WarningKind, DEFAULT_ALPHA, DEFAULT_CONFIDENCE, DEFAULT_DRIFT_THRESHOLD, DEFAULT_RESAMPLES, DEFAULT_SEED,
};
pub use drift::{drift_between_halves, MIN_REQUESTS};
pub use error::StatsError;
pub use outliers::{tukey_outliers, MILD_IQR, SEVERE_IQR};
pub use paired::{PairedSample, MIN_PAIRS};
pub use ratio::ratio_of_medians;
pub use sample::{quantile_sorted, ClusteredSample, Sample, MIN_CLUSTERS, MIN_OBSERVATIONS};
pub use summary::{summarize, summarize_requests, MAX_STABLE_CI_HALF_WIDTH, MAX_STABLE_CV, MIN_STABLE_UNITS};
pub use verdict::{
    Comparison, NoiseBound, NoiseThreshold, ThresholdSource, Verdict, DEFAULT_NOISE_THRESHOLD, MIN_NOISE_THRESHOLD,
};
pub use yardstick::{against_yardstick, SessionRatio};
