//! SHA-256 of a file, read in streaming fashion: a file rule under the pin checks, which
//! compare it with a pin in `file_pin`.

use std::{io::Read, path::Path};

use decode_baseline_wire::Sha256Digest;
use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
#[error("failed to read {path} for hashing")]
pub struct DigestIoError {
    pub path: std::path::PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Hashes the file at `path`.
pub fn of_file(path: &Path) -> Result<Sha256Digest, DigestIoError> {
    let wrap = |source| DigestIoError { path: path.to_owned(), source };
    let mut file = std::fs::File::open(path).map_err(wrap)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf).map_err(wrap)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(Sha256Digest::from_bytes(hasher.finalize().into()))
}
