//! `worker-ready`: created exclusively once the job is validated and the model loaded. The
//! launcher waits for it (with `run_policy.ready_timeout_s`); the job deadline starts here.
//!
//! Unlike the claim, a ready file that already exists is found by a worker that owns the
//! folder, so the failure is reported in `report.json`.

use std::path::PathBuf;

use decode_baseline_wire::{marker::Marker, outdir::OutDir};

use super::marker::{self, create_exclusive};

#[derive(Debug, thiserror::Error)]
pub enum ReadyError {
    #[error("{path} already exists (created by someone other than this worker)")]
    AlreadyExists { path: PathBuf },
    #[error("failed to create {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Signals readiness.
pub fn signal_ready(out: &OutDir) -> Result<Marker, ReadyError> {
    let path = out.ready();
    let marker = marker::now();
    match create_exclusive(&path, &marker) {
        Ok(()) => Ok(marker),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(ReadyError::AlreadyExists { path }),
        Err(source) => Err(ReadyError::Io { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preexisting_ready_file_is_refused_and_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let out = crate::outdir::open(tmp.path()).unwrap();
        std::fs::write(out.ready(), b"seeded").unwrap();
        assert!(matches!(signal_ready(&out), Err(ReadyError::AlreadyExists { .. })));
        assert_eq!(std::fs::read(out.ready()).unwrap(), b"seeded");
    }
}
