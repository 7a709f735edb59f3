//! `workloads.json`: the digest-pinned statement of what is measured and with what.
//!
//! This module holds the types only. The checks of a manifest, of its structure and against the
//! files on disk (artifacts, worker sources, the installed environment), live in the
//! `decode-baseline-pins` crate (`crates/pins`).

use std::{collections::BTreeMap, path::PathBuf};

use serde::{Deserialize, Serialize};

use crate::{job::EnvironmentPins, Adapter, Mode, RunPolicy, Sha256Digest};

/// The version of [`Manifest`] this code reads and writes.
pub const MANIFEST_SCHEMA_VERSION: u32 = 1;

/// Environment variable selecting a named environment: a key of [`Manifest::environments`]
/// (and a folder of `tools/env/envs/`); unset, empty or `default` selects the default one.
pub const ENV_NAME_ENV: &str = "DECODE_BASELINE_ENV";
/// The name of the default environment (its pins are the manifest's `environment`).
pub const DEFAULT_ENVIRONMENT: &str = "default";

/// The named environment `name` stands for: `None` for the default one (empty or
/// [`DEFAULT_ENVIRONMENT`], as `$DECODE_BASELINE_ENV` reads), else the name.
pub fn environment_name(name: &str) -> Option<&str> {
    (!name.is_empty() && name != DEFAULT_ENVIRONMENT).then_some(name)
}

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
    /// Decode loops besides the two built-in ones, by adapter name; absent when there are none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("propertyNames" = { "pattern": crate::job::ADAPTER_NAME_PATTERN }))]
    pub adapters: BTreeMap<String, DeclaredAdapter>,
    /// SHA-256 of every source file of every adapter's worker, by adapter: `controlled` and
    /// `stock` by repository-relative path, a declared adapter by path relative to the
    /// manifest's folder.
    pub worker_sources: WorkerSources,
    /// The pinned default environment (`tools/env/`).
    pub environment: EnvironmentPins,
    /// The pinned named environments (`tools/env/envs/<name>/`, e.g. the previous MLX release),
    /// by name; absent when there are none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environments: BTreeMap<String, EnvironmentPins>,
}

impl Manifest {
    /// The digest a report's `identity.worker_sources_sha256` must carry for `adapter`: of its
    /// pinned source set ([`crate::digest::worker_sources_sha256`]; of the empty set when the
    /// manifest pins none).
    pub fn worker_sources_sha256(&self, adapter: &Adapter) -> Sha256Digest {
        crate::digest::worker_sources_sha256(self.worker_sources.get(adapter).unwrap_or(&BTreeMap::new()))
    }

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

/// Pinned worker sources: by adapter, each source file's relative path and SHA-256.
pub type WorkerSources = BTreeMap<Adapter, BTreeMap<String, Sha256Digest>>;

/// A decode loop the manifest declares (`adapters.<name>`), run and pinned like the built-ins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclaredAdapter {
    /// The worker's command line, at least one word; the launcher appends `--out-dir <dir>`.
    /// `command[0]`, when it is a relative path with a `/` in it, is relative to the manifest's
    /// folder; a bare name is looked up on `PATH`; the other words pass unchanged.
    pub command: Vec<String>,
    /// `python`: the command runs under the pinned environment's Python (the interpreter and
    /// packages the stock worker runs with), `command[0]` being the script. Absent: `command[0]`
    /// is the program itself.
    #[serde(default)]
    pub interpreter: Option<Interpreter>,
    /// The worker's source files and folders, relative to the manifest's folder: every file of
    /// them is pinned in `worker_sources.<name>` and checked before every session.
    pub sources: Vec<String>,
    /// The pinned MLX environment this adapter's workers run in: `default` or a name in
    /// `environments`. Its workers run under that environment's Python (with `interpreter:
    /// python`), with `$DECODE_BASELINE_ENV` naming it, and are checked against its pins, so one
    /// session can hold two MLX releases side by side (`bisect --environments`). Absent: the
    /// session's environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
}

/// An interpreter a declared adapter's command runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Interpreter {
    /// The Python of the pinned environment (`.venv/bin/python`, or the named environment's).
    Python,
}

impl Manifest {
    /// The declaration of a declared `adapter`; `None` for the built-ins and undeclared names.
    pub fn declared(&self, adapter: &Adapter) -> Option<&DeclaredAdapter> {
        match adapter {
            Adapter::Declared(name) => self.adapters.get(name.as_str()),
            _ => None,
        }
    }

    /// The environment a declared `adapter` names for itself: `None` when it names none (it runs
    /// in the session's), `Some(None)` for the default one, `Some(Some(name))` for a named one.
    pub fn declared_environment(&self, adapter: &Adapter) -> Option<Option<&str>> {
        Some(environment_name(self.declared(adapter)?.environment.as_deref()?))
    }

    /// The `sources` a declared `adapter` lists; none for the built-ins and undeclared names.
    pub fn declared_sources(&self, adapter: &Adapter) -> &[String] {
        self.declared(adapter).map_or(&[], |d| d.sources.as_slice())
    }

    /// Whether `adapter` can run under this manifest: a built-in, or declared in `adapters`.
    pub fn knows(&self, adapter: &Adapter) -> bool {
        adapter.is_built_in() || self.declared(adapter).is_some()
    }

    /// Every adapter this manifest can run: the built-ins, then the declared ones by name.
    pub fn all_adapters(&self) -> Vec<Adapter> {
        let declared = self.adapters.keys().filter_map(|name| Adapter::parse(name).ok());
        [Adapter::Controlled, Adapter::Stock].into_iter().chain(declared).collect()
    }
}
