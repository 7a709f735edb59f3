//! `worker-claim`: the first thing a worker creates, before it reads or validates anything.
//!
//! The claim is exclusive (create-new) and sticky: nothing ever removes it, so a folder whose
//! claim exists belongs to the process named in it, dead or alive. A worker that finds a claim
//! writes nothing and exits 1; that is what keeps a second worker, valid job or not, out of a
//! running worker's folder.

use std::path::PathBuf;

use decode_baseline_wire::{marker::Marker, outdir::OutDir};

use super::marker::{self, create_exclusive};

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("out dir {path} is already claimed by another worker (its {file} exists)")]
    AlreadyClaimed { path: PathBuf, file: &'static str },
    #[error("failed to create the claim {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Claims `out` for this process.
pub fn claim(out: &OutDir) -> Result<Marker, ClaimError> {
    let path = out.claim();
    let marker = marker::now();
    match create_exclusive(&path, &marker) {
        Ok(()) => Ok(marker),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(ClaimError::AlreadyClaimed {
            path: out.path().to_owned(),
            file: decode_baseline_wire::outdir::CLAIM_FILE,
        }),
        Err(source) => Err(ClaimError::Io { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_claim_is_refused_and_the_first_is_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let out = crate::outdir::open(tmp.path()).unwrap();
        let marker = claim(&out).unwrap();
        assert_eq!(marker.pid, std::process::id());
        let before = std::fs::read(out.claim()).unwrap();
        let parsed: Marker = serde_json::from_slice(&before).unwrap();
        assert_eq!(parsed, marker);
        assert!(matches!(claim(&out), Err(ClaimError::AlreadyClaimed { .. })));
        assert_eq!(std::fs::read(out.claim()).unwrap(), before);
    }
}
