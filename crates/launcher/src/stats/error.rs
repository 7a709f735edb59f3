//! The one error type of the statistics module: every way an input or a setting can be refused.

/// Why a statistic could not be computed. Messages are lowercase fragments naming the field,
/// what was expected and what was found.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// A sample needs at least two observations (one point has no spread and no interval).
    #[error("too few {what}: expected at least {expected}, got {actual}")]
    TooFew {
        /// What was counted: "observations", "requests", "per-request medians".
        what: &'static str,
        /// The minimum.
        expected: usize,
        /// What was given.
        actual: usize,
    },
    /// An observation is NaN or infinite.
    #[error("observation {index} is not finite: expected a finite number, got {value}")]
    NotFinite {
        /// Position of the observation in the input (in the flattened input for requests).
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A request (cluster) contributed no observations.
    #[error("request {index} has no observations: expected at least 1")]
    EmptyRequest {
        /// Position of the request in the input.
        index: usize,
    },
    /// A ratio of medians needs strictly positive data on both sides (times are positive).
    #[error("{side} has a non-positive observation: expected every value > 0, got {value}")]
    NotPositive {
        /// "numerator" or "denominator".
        side: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A setting (confidence level, number of resamples, alpha, margin, floor, looks) is out of range.
    #[error("invalid setting `{field}`: expected {expected}, got {actual}")]
    InvalidSetting {
        /// The field name as it appears in the serialized setting.
        field: &'static str,
        /// The accepted range, in words.
        expected: &'static str,
        /// The value given, formatted.
        actual: String,
    },
}
