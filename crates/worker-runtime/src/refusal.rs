//! A refused job: the field at fault and why, the one error every check before a worker signals
//! ready returns (the job's own fields, the manifest's pins, the rank group's).

use std::fmt;

/// A refused job: the field at fault (dotted, as in the job or manifest) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub field: String,
    pub message: String,
}

impl Refusal {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }

    /// A mismatch between what was pinned and what was found.
    pub fn mismatch(field: impl Into<String>, expected: impl fmt::Display, actual: impl fmt::Display) -> Self {
        Self::new(field, format!("expected {expected}, found {actual}"))
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "validation failed: {}: {}", self.field, self.message)
    }
}

impl std::error::Error for Refusal {}
