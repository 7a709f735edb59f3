//! SHA-256 digests as a newtype: parsed once, compared as values, printed as lowercase hex; and
//! the canonical record stream a set of digested files is digested over (the "source freeze" of
//! `req/manifest.md`). Hashing files is the pins crate's.

use std::{collections::BTreeMap, fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A SHA-256 digest, serialized as 64 lowercase hex characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256Digest([u8; 32]);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("expected 64 lowercase hex characters for a sha256 digest, found {0:?}")]
pub struct DigestParseError(pub String);

impl Sha256Digest {
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The digest whose 32 bytes are `bytes` (a hasher's output).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
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

/// The canonical record stream of a member set: `path\0sha256hex\n` per member, in the order
/// given (callers pass canonical order).
pub fn freeze_records(members: &[(String, Sha256Digest)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(members.len() * 100);
    for (rel, digest) in members {
        out.extend_from_slice(rel.as_bytes());
        out.push(0);
        out.extend_from_slice(digest.to_hex().as_bytes());
        out.push(b'\n');
    }
    out
}

/// The identity's digest of a worker's source set (`identity.worker_sources_sha256`): SHA-256 of
/// the [`freeze_records`] over the pinned map, in byte order of the paths.
pub fn worker_sources_sha256(pinned: &BTreeMap<String, Sha256Digest>) -> Sha256Digest {
    let mut members: Vec<(String, Sha256Digest)> = pinned.iter().map(|(k, v)| (k.clone(), *v)).collect();
    members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Sha256Digest::of_bytes(&freeze_records(&members))
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

    #[test]
    fn records_are_path_nul_hex_newline() {
        let d = Sha256Digest::of_bytes(b"x");
        let records = freeze_records(&[("a/b.py".to_owned(), d), ("c".to_owned(), d)]);
        let expected = format!("a/b.py\0{d}\nc\0{d}\n");
        assert_eq!(records, expected.as_bytes());
    }

    #[test]
    fn source_digest_is_the_freeze_of_the_pinned_map() {
        let a = Sha256Digest::of_bytes(b"a");
        let b = Sha256Digest::of_bytes(b"b");
        let map: BTreeMap<String, Sha256Digest> =
            [("tools/stock/z.py".to_owned(), b), ("tools/stock/a.py".to_owned(), a)].into();
        let expected = Sha256Digest::of_bytes(format!("tools/stock/a.py\0{a}\ntools/stock/z.py\0{b}\n").as_bytes());
        assert_eq!(worker_sources_sha256(&map), expected);
    }
}
