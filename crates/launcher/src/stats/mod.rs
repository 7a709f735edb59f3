//! Statistics of decode times: validated samples, descriptive summaries with bootstrap
//! intervals, Tukey outliers, drift, ratios of medians for display, and the verdict's paired
//! test (blocks → log estimate → decision, with a host noise profile, Holm across rows and
//! Pocock boundaries for sequential looks). Pure Rust (statrs and a seeded ChaCha8 stream);
//! nothing here links MLX. Each submodule documents its formulas.

mod blocks;
mod bootstrap;
mod change_points;
mod decision;
mod drift;
mod error;
mod holm;
mod log_estimate;
mod outliers;
mod paired;
mod pocock;
mod profile;
mod ratio;
mod sample;
mod summary;
mod trimmed;
mod verdict;
mod yardstick;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod simulation;

pub use blocks::PairBlocks;
pub use bootstrap::validate as validate_bootstrap;
pub use change_points::{
    between_session_variance, change_points, point_variance, ChangePoint, ChangeSettings, SeriesPoint,
    DEFAULT_CHANGE_ALPHA, DEFAULT_MIN_SEGMENT, DEFAULT_WINDOW,
};
pub use decision::{
    before_holm, can_decide, decide_alone, decide_family, t_quantile, validate as validate_decision_config, verdict_of,
    REPETITIONS_FOR_A_VERDICT,
};
pub use decode_baseline_wire::decision::{
    Decision, DecisionConfig, ErrorSource, RatioInterval, DEFAULT_MARGIN, DEFAULT_POWER, DEFAULT_TEST_ALPHA,
};
pub use decode_baseline_wire::profile::NoiseProfile;
pub use decode_baseline_wire::stats::{
    BootstrapConfig, Drift, DriftConfig, Interval, RatioEstimate, Resampling, StabilityWarning, Summary, TukeyOutliers,
    WarningKind, DEFAULT_ALPHA, DEFAULT_CONFIDENCE, DEFAULT_DRIFT_THRESHOLD, DEFAULT_RESAMPLES, DEFAULT_SEED,
};
pub use drift::{drift_between_halves, MIN_REQUESTS};
pub use error::StatsError;
pub use holm::holm;
pub use log_estimate::{LogEstimate, Rule};
pub use outliers::{tukey_outliers, MILD_IQR, SEVERE_IQR};
pub use pocock::{crossing_probability, pocock, PocockBoundary, MAX_LOOKS};
pub use profile::{fit as fit_profile, levels as profile_levels, profile_of, MIN_PROFILE_SESSIONS, OUTSIDE_PROFILE};
pub use ratio::ratio_of_medians;
pub use sample::{quantile_sorted, ClusteredSample, PairedSample, Sample, MIN_CLUSTERS, MIN_OBSERVATIONS, MIN_PAIRS};
pub use summary::{summarize, summarize_requests, MAX_STABLE_CI_HALF_WIDTH, MAX_STABLE_CV, MIN_STABLE_UNITS};
pub use trimmed::{serial_inflation, welch_df, TrimmedMean, DEFAULT_TRIM};
pub use verdict::Verdict;
pub use yardstick::{against_yardstick, SessionRatio};
