//! `bench.json`: what `bench` asked for and what it resolved, written into the session folder
//! beside the session's own manifest, before the session runs. A session's view holds it
//! (`report::SessionView::new` reads it) for the page's model source and notes (an adapter not
//! run, and why).

use std::path::{Path, PathBuf};

use decode_baseline_wire::{Adapter, Mode};
use serde::{Deserialize, Serialize};

/// The version of [`BenchRecord`] this code reads and writes.
pub const BENCH_RECORD_SCHEMA_VERSION: u32 = 1;
/// Its file name in the session folder.
pub const BENCH_RECORD: &str = "bench.json";

/// Where the measured model came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case", tag = "kind")]
pub enum ModelSource {
    /// A local model folder, as given.
    Folder { path: PathBuf },
    /// A Hugging Face repo id found in the local cache.
    Hub {
        repo_id: String,
        /// The revision asked for (a branch, tag or commit).
        revision: String,
        /// The commit of the snapshot measured.
        commit: String,
        /// The cache folder it was found in.
        cache: PathBuf,
    },
}

/// `bench.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchRecord {
    /// [`BENCH_RECORD_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The MODEL argument as given.
    pub model: String,
    pub source: ModelSource,
    /// The folder measured (for a hub id, its snapshot).
    pub model_dir: PathBuf,
    /// The manifest case id.
    pub case_id: String,
    /// `model_type` of config.json.
    pub architecture: String,
    /// config.json's `max_position_embeddings`, when it has one.
    pub max_position_embeddings: Option<u64>,
    /// Prompt lengths that got every requested mode.
    pub prompt_lengths: Vec<usize>,
    /// Context depths that got a headline cell.
    pub depths: Vec<usize>,
    pub modes: Vec<Mode>,
    /// The adapters that ran.
    pub adapters: Vec<Adapter>,
    /// `text` or `seeded`.
    pub prompt_source: String,
    /// One-line notes for the table and the page (an adapter not run, and why).
    pub notes: Vec<String>,
}

impl BenchRecord {
    /// Reads `<session>/bench.json`; `None` when the session was not made by `bench`.
    pub fn read(session_dir: &Path) -> anyhow::Result<Option<BenchRecord>> {
        let path = session_dir.join(BENCH_RECORD);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(anyhow::Error::new(err).context(format!("failed to read {}", path.display()))),
        };
        let record: BenchRecord = serde_json::from_slice(&bytes)
            .map_err(|err| anyhow::Error::new(err).context(format!("failed to parse {}", path.display())))?;
        crate::ensure_input!(
            record.schema_version == BENCH_RECORD_SCHEMA_VERSION,
            "{}: schema_version must be {BENCH_RECORD_SCHEMA_VERSION}, found {}",
            path.display(),
            record.schema_version
        );
        Ok(Some(record))
    }
}
