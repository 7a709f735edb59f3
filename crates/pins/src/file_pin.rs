//! A file against its pinned digest: the check the artifact, worker-source and environment pins
//! share. It sits above [`crate::file_digest`] (the hashing rule, which knows no pins) and
//! [`crate::error`] (how a failed pin is said), so neither of those depends on a check.

use std::path::PathBuf;

use decode_baseline_wire::Sha256Digest;

use crate::{
    error::{FieldPath, PinError, PinProblem},
    file_digest::of_file,
};

/// The file at `path` against its pinned `expected` digest: `None` when they match, else the
/// difference (or the read failure) under `field`.
pub(crate) fn check_digest(field: FieldPath, path: PathBuf, expected: Sha256Digest) -> Option<PinError> {
    match of_file(&path) {
        Ok(actual) if actual == expected => None,
        Ok(actual) => Some(PinError::at(field, PinProblem::Digest { path, expected, actual })),
        Err(source) => Some(PinError::at(field, PinProblem::Hash { source })),
    }
}
