//! The header of a `*.safetensors` file: an 8-byte little-endian length, then that much JSON
//! mapping each tensor's name to `{dtype, shape, data_offsets}` (and an optional
//! `__metadata__`). Only the header is read, so a 16 GB model costs a few kilobytes; the
//! `safetensors` crate's reader validates the header against the whole file's bytes, which would
//! mean mapping it.

use std::{
    collections::BTreeMap,
    fs,
    io::Read,
    path::{Path, PathBuf},
};

use serde::Deserialize;

/// The largest header accepted: real models' headers are well under a megabyte.
const MAX_HEADER_BYTES: u64 = 100 << 20;

/// One tensor as the header describes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Tensor {
    /// safetensors' dtype name: `F32`, `BF16`, `F16`, `U32`, `U8`, ...
    pub dtype: String,
    pub shape: Vec<u64>,
    /// Start and end of its bytes after the header.
    pub data_offsets: [u64; 2],
}

impl Tensor {
    /// Bytes on disk (and in memory once loaded).
    pub fn bytes(&self) -> u64 {
        self.data_offsets[1].saturating_sub(self.data_offsets[0])
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("{path}: {detail}")]
    Read { path: PathBuf, detail: String },
}

/// The tensors of one file by name (`__metadata__` left out).
pub fn read(path: &Path) -> Result<BTreeMap<String, Tensor>, HeaderError> {
    let fail = |detail: String| HeaderError::Read { path: path.to_owned(), detail };
    let mut file = fs::File::open(path).map_err(|e| fail(format!("unreadable: {e}")))?;
    let mut len = [0u8; 8];
    file.read_exact(&mut len).map_err(|e| fail(format!("no safetensors header length: {e}")))?;
    let len = u64::from_le_bytes(len);
    if len > MAX_HEADER_BYTES {
        return Err(fail(format!("a safetensors header of {len} bytes is implausible (at most {MAX_HEADER_BYTES})")));
    }
    let mut header = vec![0u8; len as usize];
    file.read_exact(&mut header).map_err(|e| fail(format!("safetensors header cut short: {e}")))?;
    let mut entries: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| fail(format!("safetensors header unparsable: {e}")))?;
    entries.remove("__metadata__");
    entries
        .into_iter()
        .map(|(name, entry)| {
            let tensor = serde_json::from_value(entry).map_err(|e| {
                fail(format!("safetensors header: tensor `{name}`: expected dtype, shape, data_offsets: {e}"))
            })?;
            Ok((name, tensor))
        })
        .collect()
}

/// The tensors of every `*.safetensors` file of a model folder, by name.
pub fn read_dir(dir: &Path) -> Result<BTreeMap<String, Tensor>, HeaderError> {
    let fail = |detail: String| HeaderError::Read { path: dir.to_owned(), detail };
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| fail(format!("unreadable: {e}")))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".safetensors")))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(fail("no *.safetensors file".to_owned()));
    }
    let mut tensors = BTreeMap::new();
    for file in files {
        tensors.extend(read(&file)?);
    }
    Ok(tensors)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes a safetensors file with the given header entries and zeroed data.
    pub(crate) fn write(path: &Path, entries: &[(&str, &str, &[u64], u64)]) {
        let mut header = serde_json::Map::new();
        header.insert("__metadata__".into(), serde_json::json!({"format": "mlx"}));
        let mut offset = 0;
        for (name, dtype, shape, bytes) in entries {
            header.insert(
                (*name).into(),
                serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + bytes]}),
            );
            offset += bytes;
        }
        let header = serde_json::to_vec(&header).unwrap();
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&header);
        out.resize(out.len() + offset as usize, 0);
        fs::write(path, out).unwrap();
    }

    #[test]
    fn reads_every_tensor_of_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("model-00001-of-00002.safetensors"), &[("a", "BF16", &[3], 6)]);
        write(&dir.path().join("model-00002-of-00002.safetensors"), &[("b", "U32", &[2, 2], 16)]);
        let tensors = read_dir(dir.path()).unwrap();
        assert_eq!(tensors.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(tensors["b"], Tensor { dtype: "U32".into(), shape: vec![2, 2], data_offsets: [0, 16] });
        assert_eq!(tensors["a"].bytes(), 6);
    }

    #[test]
    fn a_bad_header_names_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no *.safetensors file"), "{err}");
        let path = dir.path().join("model.safetensors");
        fs::write(&path, [1, 2, 3]).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("model.safetensors") && err.contains("header length"), "{err}");
        let mut bytes = 9u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(br#"{"a": 1} "#);
        fs::write(&path, bytes).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("tensor `a`") && err.contains("data_offsets"), "{err}");
    }
}
