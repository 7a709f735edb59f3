//! `decode-baseline manifest`: maintain `workloads.json` without hand-editing it.
//!
//! * `add-case` pins a model folder as a case: its files and their SHA-256, architecture and
//!   dtype from config.json and the safetensors headers, the stop set and the canonical prompts
//!   through the pinned environment's tokenizer (`tools/manifest/derive_case.py`), and the
//!   cells that measure it.
//! * `pin` re-hashes the worker sources and the installed environment into the manifest,
//!   writes the manifest's own digest beside it (`workloads.json.sha256`), and updates the
//!   pin line cited in `req/manifest.md`.
//!
//! Both write atomically (a temp file in the same folder, then a rename), the manifest first and
//! the pin second: an interruption between the two leaves a stale pin, which the guard reports
//! and a rerun of `pin` repairs. See `req/manifest.md`.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    io::Write,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, ensure, Context};
use decode_baseline_protocol::{
    installed::{mlx_dir_override, selected_environment, venv_dir, Installed, DEFAULT_ENV_NAME},
    job::token_ids_sha256,
    manifest::{Case, Cell, Manifest, Prompt, WorkerSources, MANIFEST_SCHEMA_VERSION},
    pins::{self, case_files, environment_pins, is_path_safe_id, load_manifest, pin_path, pin_text, worker_sources},
    ExitCode, Mode, RunPolicy,
};
use serde::Deserialize;

use crate::guard::{chain, locate_manifest, MANIFEST_NAME};

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
}

pub fn run(command: ManifestCommand) -> anyhow::Result<ExitCode> {
    match command {
        ManifestCommand::AddCase(args) => add_case(args),
        ManifestCommand::Pin(args) => pin(args),
    }
}

// ---------------------------------------------------------------------------------------------
// pin
// ---------------------------------------------------------------------------------------------

pub fn installed(repo: &Path) -> anyhow::Result<Installed> {
    let venv = venv_dir(repo);
    ensure!(venv.is_dir(), "no environment at {} (provision it with `python3 tools/env/provision.py`)", venv.display());
    Installed::locate(&venv, mlx_dir_override().as_deref())
        .with_context(|| format!("failed to locate the installed environment in {}", venv.display()))
}

fn pin(args: PinArgs) -> anyhow::Result<ExitCode> {
    let (repo, manifest_path) = locate_manifest(args.manifest.as_deref())?;
    let (mut manifest, _) = load_manifest(&manifest_path).map_err(|e| anyhow::anyhow!(chain(&e)))?;
    let installed = installed(&repo)?;
    manifest.worker_sources = worker_sources(&repo).map_err(|e| anyhow::anyhow!(chain(&e)))?;
    let pinned = environment_pins(&repo, &installed).map_err(|e| anyhow::anyhow!(chain(&e)))?;
    let environment = selected_environment();
    match &environment {
        None => manifest.environment = pinned.clone(),
        Some(name) => {
            manifest.environments.insert(name.clone(), pinned.clone());
        }
    }
    for (set, files) in [("stock", &manifest.worker_sources.stock), ("controlled", &manifest.worker_sources.controlled)]
    {
        if files.is_empty() {
            eprintln!("manifest pin: warning: no {set} worker source matches the rule; the guard will fail");
        }
    }
    let bytes = write_manifest(&manifest_path, &manifest)?;
    let pin = pin_path(&manifest_path);
    let pin_line = pin_text(&manifest_path, &bytes);
    write_atomically(&pin, pin_line.as_bytes())?;
    let citation = repo.join(CITATION);
    if cite_pin(&citation, pin_line.trim_end())? {
        println!("manifest pin: updated the pin cited in {}", citation.display());
    }
    println!(
        "manifest pin: {} sha256 {} ({} stock + {} controlled worker sources, environment {}: mlx {} / mlx_lm {} at {})",
        manifest_path.display(),
        decode_baseline_protocol::Sha256Digest::of_bytes(&bytes),
        manifest.worker_sources.stock.len(),
        manifest.worker_sources.controlled.len(),
        environment.as_deref().unwrap_or(DEFAULT_ENV_NAME),
        pinned.mlx_version,
        pinned.mlx_lm_version,
        installed.venv.display(),
    );
    Ok(ExitCode::Ok)
}

/// The document that cites the pin, relative to the repository.
pub const CITATION: &str = "req/manifest.md";

/// Replaces the one line of `doc` that is a pin line (`<64 hex>  <name>`) with `pin_line`.
/// Returns whether the file changed; a missing document (a copy of the repository without
/// `req/`) is left alone, and a document without exactly one pin line is an error.
fn cite_pin(doc: &Path, pin_line: &str) -> anyhow::Result<bool> {
    let text = match fs::read_to_string(doc) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err).with_context(|| format!("failed to read {}", doc.display())),
    };
    let name = pin_line.split_once("  ").map(|(_, name)| name).unwrap_or_default();
    let is_pin_line = |line: &str| pins::parse_pin(line, name).is_some();
    let count = text.lines().filter(|line| is_pin_line(line)).count();
    ensure!(count == 1, "{} must cite the pin on exactly one line, found {count}", doc.display());
    let updated: String = text
        .split_inclusive('\n')
        .map(|line| if is_pin_line(line.trim_end_matches('\n')) { format!("{pin_line}\n") } else { line.to_owned() })
        .collect();
    if updated == text {
        return Ok(false);
    }
    write_atomically(doc, updated.as_bytes())?;
    Ok(true)
}

// ---------------------------------------------------------------------------------------------
// add-case
// ---------------------------------------------------------------------------------------------

/// What `derive_case.py` prints.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Derived {
    stop_ids: Vec<u32>,
    prompt_source: String,
    prompts: Vec<DerivedPrompt>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DerivedPrompt {
    length: usize,
    ids: Vec<u32>,
    continuation: Vec<u32>,
}

fn add_case(args: AddCaseArgs) -> anyhow::Result<ExitCode> {
    ensure!(is_path_safe_id(&args.id), "case id {:?} is not path-safe (letters, digits, `-`, `_`, `.`)", args.id);
    let (repo, manifest_path) = match args.manifest.as_deref() {
        Some(path) => locate_manifest(Some(path))?,
        None => match locate_manifest(None) {
            Ok(found) => found,
            Err(_) => {
                let cwd = std::env::current_dir()?;
                (cwd.clone(), cwd.join(MANIFEST_NAME))
            }
        },
    };
    let installed = installed(&repo)?;
    let mut manifest = if manifest_path.exists() {
        let (manifest, _) = load_manifest(&manifest_path).map_err(|e| anyhow::anyhow!(chain(&e)))?;
        // The stop set and the prompt ids must come from the environment the manifest pins.
        let environment = selected_environment();
        let Some(pinned) = manifest.environment_pins(environment.as_deref()) else {
            bail!(
                "{} pins no environment {:?}: run `decode-baseline manifest pin` in it first",
                manifest_path.display(),
                environment.unwrap_or_default()
            );
        };
        let failures = pins::check_installed(&installed, pinned);
        if !failures.is_empty() {
            for failure in &failures {
                eprintln!("manifest add-case: {}", chain(failure));
            }
            bail!("the installed environment at {} is not the one the manifest pins", installed.venv.display());
        }
        manifest
    } else {
        if let Some(name) = selected_environment() {
            bail!(
                "{} does not exist: create it in the default environment, then pin environment {name:?} into it",
                manifest_path.display()
            );
        }
        eprintln!("manifest add-case: creating {}", manifest_path.display());
        Manifest {
            schema_version: MANIFEST_SCHEMA_VERSION,
            cases: BTreeMap::new(),
            prompts: BTreeMap::new(),
            cells: Vec::new(),
            run_policy: RunPolicy::frozen(),
            worker_sources: WorkerSources { stock: BTreeMap::new(), controlled: BTreeMap::new() },
            environment: environment_pins(&repo, &installed).map_err(|e| anyhow::anyhow!(chain(&e)))?,
            environments: BTreeMap::new(),
        }
    };

    if manifest.cases.contains_key(&args.id) {
        ensure!(
            args.replace,
            "case {:?} is already in {}; pass --replace to replace it",
            args.id,
            manifest_path.display()
        );
        manifest.cases.remove(&args.id);
        manifest.prompts.retain(|_, prompt| prompt.case != args.id);
        manifest.cells.retain(|cell| cell.case != args.id);
    }

    let steps = manifest.run_policy.fixed_continuation_steps as usize;
    let derived =
        derive_case(&installed, &repo, &args.model_dir, &args.id, &PROMPT_LENGTHS, args.prompt_source, steps)?;
    let recorded_path = derived.case.path.clone();
    let prompt_ids: Vec<String> = derived.prompts.iter().map(|(id, _)| id.clone()).collect();
    for (prompt_id, prompt) in derived.prompts {
        ensure!(!manifest.prompts.contains_key(&prompt_id), "prompt id {prompt_id:?} is already used by another case");
        manifest.prompts.insert(prompt_id, prompt);
    }
    let cell_prompts = match args.cells {
        CellSet::All => &prompt_ids[..],
        CellSet::Short => &prompt_ids[..1],
    };
    for prompt in cell_prompts {
        for mode in [Mode::Headline, Mode::FixedContinuation, Mode::ReferencePair] {
            manifest.cells.push(Cell { case: args.id.clone(), prompt: prompt.clone(), mode });
        }
    }
    manifest.cases.insert(args.id.clone(), derived.case);

    write_manifest(&manifest_path, &manifest)?;
    let case = &manifest.cases[&args.id];
    println!(
        "manifest add-case: {} at {}: {} {}, {} files, stop set {:?}, prompts {} ({} source), {} cells; run `decode-baseline manifest pin` next",
        args.id,
        recorded_path.display(),
        case.architecture,
        case.dtype,
        case.files.len(),
        case.stop_ids,
        prompt_ids.join(", "),
        derived.prompt_source,
        cell_prompts.len() * 3,
    );
    Ok(ExitCode::Ok)
}

/// A model folder derived as a case: what `add-case` pins, and what `bench` writes into its
/// session's own manifest.
#[derive(Debug, Clone)]
pub struct DerivedCase {
    pub case: Case,
    /// `(<id>-L<length>, prompt)` for each requested length, in the order asked.
    pub prompts: Vec<(String, Prompt)>,
    /// `text` or `seeded`: where the prompt ids came from.
    pub prompt_source: String,
}

/// The prompt id of a case's prompt of `length` tokens.
pub fn prompt_id(case_id: &str, length: usize) -> String {
    format!("{case_id}-L{length}")
}

/// Derives the case of `model_dir` (every file pinned, architecture, dtype, stop set) and its
/// prompts of `lengths` tokens with continuations of `steps`, through the pinned environment.
/// The path is recorded relative to `repo` when the folder is inside it, else absolute.
pub fn derive_case(
    installed: &Installed,
    repo: &Path,
    model_dir: &Path,
    id: &str,
    lengths: &[usize],
    source: PromptSource,
    steps: usize,
) -> anyhow::Result<DerivedCase> {
    let model_dir = model_dir
        .canonicalize()
        .with_context(|| format!("failed to resolve the model folder {}", model_dir.display()))?;
    ensure!(model_dir.is_dir(), "{} is not a folder", model_dir.display());
    let recorded_path =
        match repo.canonicalize().ok().and_then(|root| model_dir.strip_prefix(root).ok().map(Path::to_owned)) {
            Some(rel) => PathBuf::from(rel.to_str().context("the model folder's path is not UTF-8")?),
            None => model_dir.clone(),
        };
    let files = case_files(&model_dir).map_err(|e| anyhow::anyhow!(chain(&e)))?;
    ensure!(files.contains_key("config.json"), "{} has no config.json", model_dir.display());
    let weights: Vec<&String> = files.keys().filter(|name| name.ends_with(".safetensors")).collect();
    ensure!(!weights.is_empty(), "{} has no *.safetensors file", model_dir.display());

    let config: serde_json::Value = read_json(&model_dir.join("config.json"))?;
    let architecture = config["model_type"]
        .as_str()
        .filter(|s| !s.is_empty())
        .with_context(|| format!("{}: no `model_type`", model_dir.join("config.json").display()))?
        .to_owned();
    let dtype = derive_dtype(&config, &weights.iter().map(|w| model_dir.join(w)).collect::<Vec<_>>())?;

    let derived = derive(installed, repo, &model_dir, source, lengths, steps)?;
    ensure!(!derived.stop_ids.is_empty(), "the tokenizer resolves an empty stop set for {}", model_dir.display());
    let mut prompts = Vec::new();
    for &length in lengths {
        let derived_prompt = derived
            .prompts
            .iter()
            .find(|p| p.length == length)
            .with_context(|| format!("derive_case.py gave no prompt of length {length}"))?;
        ensure!(
            derived_prompt.ids.len() == length && derived_prompt.continuation.len() == steps,
            "derive_case.py gave {} prompt ids and {} continuation ids for L={length} (expected {length} and {steps})",
            derived_prompt.ids.len(),
            derived_prompt.continuation.len()
        );
        let prompt = Prompt {
            case: id.to_owned(),
            sha256: token_ids_sha256(&derived_prompt.ids),
            ids: derived_prompt.ids.clone(),
            continuation_sha256: token_ids_sha256(&derived_prompt.continuation),
            continuation: derived_prompt.continuation.clone(),
        };
        prompts.push((prompt_id(id, length), prompt));
    }
    Ok(DerivedCase {
        case: Case { path: recorded_path, architecture, dtype, files, stop_ids: derived.stop_ids },
        prompts,
        prompt_source: derived.prompt_source,
    })
}

/// Runs `derive_case.py` with the environment's interpreter.
fn derive(
    installed: &Installed,
    repo: &Path,
    model_dir: &Path,
    source: PromptSource,
    lengths: &[usize],
    steps: usize,
) -> anyhow::Result<Derived> {
    let python = installed.venv.join("bin/python");
    let script = repo.join(DERIVE_CASE);
    let lengths = lengths.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let source = match source {
        PromptSource::Text => "text",
        PromptSource::Seeded => "seeded",
    };
    let out = Command::new(&python)
        .arg(&script)
        .arg("--model-dir")
        .arg(model_dir)
        .args(["--lengths", &lengths, "--continuation", &steps.to_string(), "--prompt-source", source])
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .with_context(|| format!("failed to run {} {}", python.display(), script.display()))?;
    if !out.status.success() {
        bail!("{} failed ({}): {}", script.display(), out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!("failed to parse the output of {}: {:?}", script.display(), String::from_utf8_lossy(&out.stdout))
    })
}

fn read_json(path: &Path) -> anyhow::Result<serde_json::Value> {
    let bytes = fs::read(path).with_context(|| format!("failed to read {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("failed to parse {}", path.display()))
}

/// The case's dtype: for a quantized model `<mode>-q<bits>-g<group_size>` from config.json's
/// `quantization` (mode `affine` when absent, as mlx_lm assumes); otherwise the floating-point
/// dtypes of the tensors in the safetensors headers (`float32`, `bfloat16`, `float16`; several
/// joined by `+`), which is what is on disk whatever `torch_dtype` claims.
pub fn derive_dtype(config: &serde_json::Value, weights: &[PathBuf]) -> anyhow::Result<String> {
    let quant = &config["quantization"];
    if quant.is_object() {
        let bits = quant["bits"].as_u64().context("config.json: quantization.bits is not a number")?;
        let group = quant["group_size"].as_u64().context("config.json: quantization.group_size is not a number")?;
        let mode = quant["mode"].as_str().unwrap_or("affine");
        return Ok(format!("{mode}-q{bits}-g{group}"));
    }
    let mut dtypes = BTreeSet::new();
    for path in weights {
        for tensor in crate::safetensors_header::read(path)?.into_values() {
            let name = match tensor.dtype.as_str() {
                "F32" => "float32",
                "BF16" => "bfloat16",
                "F16" => "float16",
                "F64" => "float64",
                _ => continue,
            };
            dtypes.insert(name);
        }
    }
    ensure!(!dtypes.is_empty(), "no floating-point tensor in the safetensors files");
    Ok(dtypes.into_iter().collect::<Vec<_>>().join("+"))
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

/// The manifest as written: pretty JSON (two-space indent, fields in declaration order) with
/// arrays of numbers kept on one line, and a final newline.
pub fn manifest_json(manifest: &Manifest) -> String {
    collapse_number_arrays(&serde_json::to_string_pretty(manifest).expect("a manifest serializes"))
}

/// Rewrites serde_json's pretty output so that an array whose items are all numbers sits on
/// one line (`[1, 2, 3]`); everything else is left as it was.
fn collapse_number_arrays(pretty: &str) -> String {
    let mut out = String::with_capacity(pretty.len());
    let lines: Vec<&str> = pretty.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.ends_with('[') {
            // Find the closing bracket; collapse if everything between is a number.
            let mut j = i + 1;
            let mut items = Vec::new();
            while j < lines.len() {
                let item = lines[j].trim();
                if item == "]" || item == "]," {
                    break;
                }
                let number = item.strip_suffix(',').unwrap_or(item);
                if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b'.') {
                    items.clear();
                    j = usize::MAX;
                    break;
                }
                items.push(number);
                j += 1;
            }
            if j < lines.len() {
                out.push_str(line);
                out.push_str(&items.join(", "));
                out.push_str(lines[j].trim());
                out.push('\n');
                i = j + 1;
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
        i += 1;
    }
    out
}

/// Writes the manifest atomically and returns the bytes written.
pub fn write_manifest(path: &Path, manifest: &Manifest) -> anyhow::Result<Vec<u8>> {
    let text = manifest_json(manifest);
    // What is written must read back as the same manifest.
    let reparsed: Manifest = serde_json::from_str(&text).context("the written manifest does not parse back")?;
    ensure!(reparsed == *manifest, "the written manifest does not read back as the same manifest");
    write_atomically(path, text.as_bytes())?;
    Ok(text.into_bytes())
}

/// Writes `bytes` to `path` through a temp file in the same folder and a rename, so a reader
/// sees the old file or the new one, never a part.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().context("the target has no folder")?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("failed to create a temp file in {}", dir.display()))?;
    temp.write_all(bytes).with_context(|| format!("failed to write {}", temp.path().display()))?;
    // A temp file is created 0600; a manifest and its pin are for anyone who can read the folder.
    temp.as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .with_context(|| format!("failed to set the permissions of {}", temp.path().display()))?;
    temp.as_file().sync_all().with_context(|| format!("failed to sync {}", temp.path().display()))?;
    temp.persist(path).with_context(|| format!("failed to rename into {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_arrays_are_kept_on_one_line_and_the_rest_is_pretty() {
        let value = serde_json::json!({"a": [1, 2, 3], "b": [{"c": [4]}], "d": [], "e": ["x", "y"]});
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let collapsed = collapse_number_arrays(&pretty);
        assert_eq!(
            collapsed,
            "{\n  \"a\": [1, 2, 3],\n  \"b\": [\n    {\n      \"c\": [4]\n    }\n  ],\n  \"d\": [],\n  \"e\": [\n    \"x\",\n    \"y\"\n  ]\n}\n"
        );
        let back: serde_json::Value = serde_json::from_str(&collapsed).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn the_cited_pin_line_is_replaced_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("manifest.md");
        let old = format!("{}  workloads.json", "a".repeat(64));
        let new = format!("{}  workloads.json", "b".repeat(64));
        fs::write(&doc, format!("# t\n\n```\n{old}\n```\nsee {old} inline\n")).unwrap();
        assert!(cite_pin(&doc, &new).unwrap());
        assert_eq!(fs::read_to_string(&doc).unwrap(), format!("# t\n\n```\n{new}\n```\nsee {old} inline\n"));
        assert!(!cite_pin(&doc, &new).unwrap(), "an up-to-date citation is left alone");
        assert!(!cite_pin(&dir.path().join("missing.md"), &new).unwrap());
        fs::write(&doc, "no pin here\n").unwrap();
        assert!(cite_pin(&doc, &new).is_err());
    }

    #[test]
    fn safetensors_header_dtypes_and_quantization_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        let header = br#"{"__metadata__":{"format":"mlx"},"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"U32","shape":[1],"data_offsets":[2,6]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header);
        bytes.extend_from_slice(&[0; 6]);
        fs::write(&path, bytes).unwrap();
        let config = serde_json::json!({"model_type": "qwen3"});
        assert_eq!(derive_dtype(&config, std::slice::from_ref(&path)).unwrap(), "bfloat16");
        let quantized = serde_json::json!({"quantization": {"bits": 4, "group_size": 64}});
        assert_eq!(derive_dtype(&quantized, &[path]).unwrap(), "affine-q4-g64");
    }
}
