//! The model folder's tensors: every `model*.safetensors` file (the glob mlx_lm's `load_model`
//! uses), loaded through mlx-rs into one name → array map under mlx_lm's names
//! (`model.embed_tokens.weight`, `model.layers.N.self_attn.q_proj.weight` with `.scales` and
//! `.biases` when quantized, `model.norm.weight`, `lm_head.weight`).
//!
//! A sharded folder's `model.safetensors.index.json` is checked against what was loaded: every
//! tensor it maps must come from the file it names. The model takes tensors out of the map by
//! name and [`Weights::finish`] refuses leftovers, like mlx_lm's strict `load_weights`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use mlx_rs::Array;

/// Why the tensors cannot be loaded or do not fit the config.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("failed to list model folder {path}")]
    List {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no model*.safetensors in {0}")]
    NoFiles(PathBuf),
    #[error("failed to load safetensors {path}")]
    Load {
        path: PathBuf,
        #[source]
        source: mlx_rs::error::IoError,
    },
    #[error("tensor {name} appears in both {first} and {second}")]
    Duplicate { name: String, first: PathBuf, second: PathBuf },
    #[error("failed to read shard index {path}: {reason}")]
    Index { path: PathBuf, reason: String },
    #[error("shard index {path} maps tensor {name} to {expected}, but it was {actual}")]
    IndexMismatch { path: PathBuf, name: String, expected: String, actual: String },
    #[error("failed to build the transpose of tensor {name}")]
    Transpose {
        name: String,
        #[source]
        source: mlx_rs::error::Exception,
    },
    #[error("failed to stack the per-expert tensors into {name}")]
    Stack {
        name: String,
        #[source]
        source: mlx_rs::error::Exception,
    },
    #[error("tensor {name} missing from {dir}")]
    Missing { name: String, dir: PathBuf },
    #[error("tensor {name} in {dir}: expected shape {expected:?}, found {actual:?}")]
    Shape { name: String, dir: PathBuf, expected: Vec<i32>, actual: Vec<i32> },
    #[error("tensor {name} in {dir}: {reason}")]
    Quantized { name: String, dir: PathBuf, reason: String },
    #[error("tensors in {dir} that the model does not use: {names:?}")]
    Unused { dir: PathBuf, names: Vec<String> },
}

/// The loaded tensors, consumed by name while the model is built.
pub struct Weights {
    dir: PathBuf,
    tensors: HashMap<String, Array>,
}

/// Lists `model*.safetensors` in `dir`, sorted.
pub fn safetensors_files(dir: &Path) -> Result<Vec<PathBuf>, WeightsError> {
    let entries = std::fs::read_dir(dir).map_err(|source| WeightsError::List { path: dir.to_owned(), source })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| WeightsError::List { path: dir.to_owned(), source })?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("model") && name.ends_with(".safetensors") {
            files.push(entry.path());
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(WeightsError::NoFiles(dir.to_owned()));
    }
    Ok(files)
}

impl Weights {
    /// Loads every `model*.safetensors` of `dir` (lazily; arrays are read when evaluated).
    pub fn load(dir: &Path) -> Result<Self, WeightsError> {
        let files = safetensors_files(dir)?;
        let mut tensors = HashMap::new();
        let mut origin: HashMap<String, PathBuf> = HashMap::new();
        for file in &files {
            let loaded =
                Array::load_safetensors(file).map_err(|source| WeightsError::Load { path: file.clone(), source })?;
            for (name, array) in loaded {
                if let Some(first) = origin.get(&name) {
                    return Err(WeightsError::Duplicate { name, first: first.clone(), second: file.clone() });
                }
                origin.insert(name.clone(), file.clone());
                tensors.insert(name, array);
            }
        }
        check_index(dir, &origin)?;
        Ok(Weights { dir: dir.to_owned(), tensors })
    }

    /// Whether a tensor of this name is still present.
    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// A tensor still present, left in place.
    pub fn peek(&self, name: &str) -> Option<&Array> {
        self.tensors.get(name)
    }

    /// Removes and returns a tensor, checking its shape when `shape` is given.
    pub fn take(&mut self, name: &str, shape: Option<&[i32]>) -> Result<Array, WeightsError> {
        let array = self
            .tensors
            .remove(name)
            .ok_or_else(|| WeightsError::Missing { name: name.to_owned(), dir: self.dir.clone() })?;
        if let Some(expected) = shape {
            if array.shape() != expected {
                return Err(WeightsError::Shape {
                    name: name.to_owned(),
                    dir: self.dir.clone(),
                    expected: expected.to_vec(),
                    actual: array.shape().to_vec(),
                });
            }
        }
        Ok(array)
    }

    /// Adds a tensor built from others (sanitize's stacking); it must then be taken like any.
    pub fn insert(&mut self, name: String, array: Array) {
        self.tensors.insert(name, array);
    }

    /// Removes a tensor if present (e.g. the `lm_head.weight` a tied model ignores).
    pub fn discard(&mut self, name: &str) {
        self.tensors.remove(name);
    }

    /// Removes every tensor whose name matches `pred` (mlx_lm's `sanitize` drops some).
    pub fn discard_matching(&mut self, pred: impl Fn(&str) -> bool) {
        self.tensors.retain(|name, _| !pred(name));
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Refuses tensors nobody took.
    pub fn finish(self) -> Result<(), WeightsError> {
        if self.tensors.is_empty() {
            return Ok(());
        }
        let mut names: Vec<String> = self.tensors.into_keys().collect();
        names.sort();
        Err(WeightsError::Unused { dir: self.dir, names })
    }
}

/// Checks `model.safetensors.index.json`, when present, against where each tensor came from.
fn check_index(dir: &Path, origin: &HashMap<String, PathBuf>) -> Result<(), WeightsError> {
    let path = dir.join("model.safetensors.index.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(WeightsError::Index { path, reason: e.to_string() }),
    };
    #[derive(serde::Deserialize)]
    struct Index {
        weight_map: BTreeMap<String, String>,
    }
    let index: Index =
        serde_json::from_str(&text).map_err(|e| WeightsError::Index { path: path.clone(), reason: e.to_string() })?;
    for (name, file) in &index.weight_map {
        let actual = origin
            .get(name)
            .map(|p| p.file_name().unwrap_or_default().to_string_lossy().into_owned())
            .unwrap_or_else(|| "absent".to_owned());
        if actual != *file {
            return Err(WeightsError::IndexMismatch {
                path: path.clone(),
                name: name.clone(),
                expected: file.clone(),
                actual,
            });
        }
    }
    Ok(())
}
