//! SHA-256 digests as a newtype: parsed once, compared as values, printed as lowercase hex.

use std::{fmt, io::Read, path::Path, str::FromStr};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A SHA-256 digest, serialized as 64 lowercase hex characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256Digest([u8; 32]);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("expected 64 lowercase hex characters for a sha256 digest, found {0:?}")]
pub struct DigestParseError(pub String);

#[derive(Debug, thiserror::Error)]
#[error("failed to read {path} for hashing")]
pub struct DigestIoError {
    pub path: std::path::PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl Sha256Digest {
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// Hashes a file in streaming fashion.
    pub fn of_file(path: &Path) -> Result<Self, DigestIoError> {
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
        Ok(Self(hasher.finalize().into()))
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl FromStr for Sha256Digest {
    type Err = DigestParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let valid = s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !valid {
            return Err(DigestParseError(s.to_owned()));
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("validated hex");
        }
        Ok(Self(out))
    }
}

impl TryFrom<String> for Sha256Digest {
    type Error = DigestParseError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Sha256Digest> for String {
    fn from(d: Sha256Digest) -> String {
        d.to_hex()
    }
}

impl schemars::JsonSchema for Sha256Digest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Sha256Digest".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A SHA-256 digest: 64 lowercase hex characters.",
            "type": "string",
            "pattern": "^[0-9a-f]{64}$"
        })
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({})", self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_hex() {
        let d = Sha256Digest::of_bytes(b"abc");
        assert_eq!(d.to_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(d.to_hex().parse::<Sha256Digest>().unwrap(), d);
    }

    #[test]
    fn rejects_uppercase_and_wrong_length() {
        assert!("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD".parse::<Sha256Digest>().is_err());
        assert!("abc".parse::<Sha256Digest>().is_err());
    }
}
