//! `workloads.json`: the digest-pinned statement of what is measured and with what.
//!
//! This module holds the types and the structural checks that need no file system. The checks
//! against files on disk (artifacts, worker sources, the installed environment) live in
//! [`crate::pins`].

use std::{collections::BTreeMap, path::PathBuf};

use serde::{Deserialize, Serialize};

use crate::{job::EnvironmentPins, Adapter, Mode, RunPolicy, Sha256Digest};

/// The version of [`Manifest`] this code reads and writes.
pub const MANIFEST_SCHEMA_VERSION: u32 = 1;

/// The manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Must equal [`MANIFEST_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Model artifacts, by case id.
    pub cases: BTreeMap<String, Case>,
    /// Canonical prompts, by prompt id.
    pub prompts: BTreeMap<String, Prompt>,
    /// The (case, prompt, mode) combinations a full run covers.
    pub cells: Vec<Cell>,
    /// The frozen limits.
    pub run_policy: RunPolicy,
    /// SHA-256 of every source file of both workers, by repository-relative path.
    pub worker_sources: WorkerSources,
    /// The pinned default environment (`tools/env/`).
    pub environment: EnvironmentPins,
    /// The pinned named environments (`tools/env/envs/<name>/`, e.g. the previous MLX release),
    /// by name; absent when there are none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environments: BTreeMap<String, EnvironmentPins>,
}

impl Manifest {
    /// The pins of `environment` (`None`: the default one); `None` when it is not pinned.
    pub fn environment_pins(&self, environment: Option<&str>) -> Option<&EnvironmentPins> {
        match environment {
            None => Some(&self.environment),
            Some(name) => self.environments.get(name),
        }
    }
}

/// One model artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The model folder: relative to the repository, or absolute for an artifact that lives
    /// outside it (then `files` pins every byte that is read; see `req/manifest.md`).
    pub path: PathBuf,
    /// `model_type` from config.json (`qwen3`, `qwen2`, `llama`).
    pub architecture: String,
    /// Weight dtype (`float32`, `bfloat16`, `float16`) or quantization (`affine-q4-g64`).
    pub dtype: String,
    /// Every file of the artifact, by file name, with its SHA-256. The folder must hold exactly
    /// these files (dot-files and sub-folders aside; see `req/manifest.md`): a stray or missing
    /// file, `*.safetensors` or not, is an error.
    pub files: BTreeMap<String, Sha256Digest>,
    /// The stop set (eos ids) as the tokenizer and generation config resolve it, ascending.
    pub stop_ids: Vec<u32>,
}

/// A canonical prompt for one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Prompt {
    /// The case this prompt was tokenized for.
    pub case: String,
    /// Prompt token ids.
    pub ids: Vec<u32>,
    /// [`crate::job::token_ids_sha256`] of `ids`.
    pub sha256: Sha256Digest,
    /// The fixed continuation fed in fixed-continuation mode (`run_policy.fixed_continuation_steps` ids).
    pub continuation: Vec<u32>,
    /// [`crate::job::token_ids_sha256`] of `continuation`.
    pub continuation_sha256: Sha256Digest,
}

/// One measured combination.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    pub case: String,
    pub prompt: String,
    pub mode: Mode,
}

impl Cell {
    /// A stable, path-safe name: `<case>.<prompt>.<mode>`.
    pub fn name(&self) -> String {
        format!("{}.{}.{}", self.case, self.prompt, self.mode.as_str())
    }
}

/// Pinned worker sources, repository-relative paths to digests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerSources {
    /// The Python stock worker's files.
    pub stock: BTreeMap<String, Sha256Digest>,
    /// The Rust controlled worker's sources (the crates it is built from).
    pub controlled: BTreeMap<String, Sha256Digest>,
}

impl WorkerSources {
    /// The pinned sources of `adapter`'s worker.
    pub fn of(&self, adapter: Adapter) -> &BTreeMap<String, Sha256Digest> {
        match adapter {
            Adapter::Stock => &self.stock,
            Adapter::Controlled => &self.controlled,
        }
    }
}
