//! `decode-baseline manifest`: maintain `workloads.json` without hand-editing it.
//!
//! * `add-case` pins a model folder as a case: its files and their SHA-256, architecture and
//!   dtype from config.json and the safetensors headers, the stop set and the canonical prompts
//!   through the pinned environment's tokenizer (`tools/manifest/derive_case.py`), and the
//!   cells that measure it.
//! * `pin` re-hashes the worker sources and the installed environment into the manifest,
//!   and writes the manifest's own digest beside it (`workloads.json.sha256`); nothing else.
//!
//! Both write atomically (a temp file in the same folder, then a rename), the manifest first and
//! the pin second: an interruption between the two leaves a stale pin, which the guard reports
//! and a rerun of `pin` repairs. See `req/manifest.md`.
//!
//! One module per job: the two commands (`add_case`, `pin`), the derivation of a model folder
//! as a case (`derive`, shared with `bench`), and the writing of the manifest and its pin
//! (`write`). This file holds the command line.

mod add_case;
mod derive;
mod pin;
mod write;

use std::path::PathBuf;

use decode_baseline_wire::ExitCode;

pub use derive::{derive_case, prompt_id};
pub use pin::{installed, repin, write_pinned};
pub use write::{write_atomically, write_manifest};

/// The canonical prompt lengths every case gets: a short prompt and L=512.
pub const PROMPT_LENGTHS: [usize; 2] = [16, 512];

/// The helper that derives stop sets and prompts, relative to the repository.
pub const DERIVE_CASE: &str = "tools/manifest/derive_case.py";

#[derive(Debug, clap::Subcommand)]
pub enum ManifestCommand {
    /// Add a model folder as a case (files, digests, stop set, prompts, cells). Creates the
    /// manifest if there is none. Run `manifest pin` afterwards.
    AddCase(AddCaseArgs),
    /// Re-hash the worker sources and the installed environment into the manifest, and write
    /// the manifest's digest beside it.
    Pin(PinArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PromptSource {
    /// A fixed English text, encoded and truncated (real tokenizers).
    Text,
    /// Ids drawn by a counter-mode hash from the ordinary vocabulary (the fixtures).
    Seeded,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CellSet {
    /// Every mode on every prompt of the case.
    All,
    /// Every mode on the short prompt only.
    Short,
}

#[derive(Debug, clap::Args)]
pub struct AddCaseArgs {
    /// The case id (letters, digits, `-`, `_`, `.`); prompts are named `<id>-L16`, `<id>-L512`.
    #[arg(long)]
    pub id: String,
    /// The model folder (config.json, *.safetensors, tokenizer files). Inside the repository it
    /// is recorded relative to it; outside, by its absolute path, every file pinned.
    #[arg(long)]
    pub model_dir: PathBuf,
    /// Where the canonical prompt ids come from (see tools/manifest/derive_case.py).
    #[arg(long, value_enum, default_value = "text")]
    pub prompt_source: PromptSource,
    /// Which cells a full run covers for this case.
    #[arg(long, value_enum, default_value = "all")]
    pub cells: CellSet,
    /// Replace an existing case of this id (with its prompts and cells).
    #[arg(long)]
    pub replace: bool,
    /// The manifest. Default: the nearest workloads.json at or above the current folder.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct PinArgs {
    /// The manifest. Default: the nearest workloads.json at or above the current folder.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Pin this environment (`default` or a folder of `tools/env/envs/`, provisioned in
    /// `.venv-NAME`) instead of the selected one: an environment that only Python workers run in
    /// (an adapter's `environment`) needs no build of its own.
    #[arg(long, value_name = "NAME")]
    pub environment: Option<String>,
}

pub fn run(command: ManifestCommand) -> anyhow::Result<ExitCode> {
    match command {
        ManifestCommand::AddCase(args) => add_case::add_case(args),
        ManifestCommand::Pin(args) => pin::pin(args),
    }
}
