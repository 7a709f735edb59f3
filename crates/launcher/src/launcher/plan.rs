//! The command each worker run runs: the pinned program of its adapter, or the one that replaces
//! it (the order of the runs is [`crate::schedule`]'s).

use std::path::{Path, PathBuf};

use decode_baseline_wire::{
    manifest::{Interpreter, Manifest},
    Adapter,
};

pub use decode_baseline_wire::hooks::replacement_variable;

/// The program that replaces `adapter`'s pinned worker, when its [`replacement_variable`] is set
/// and not blank: its whitespace-separated words (the launcher's tests use them for misbehaving
/// workers). A session that runs one is unpinned (`req/session.md`).
pub fn replacement(adapter: &Adapter) -> Option<Vec<String>> {
    let words = std::env::var(replacement_variable(adapter)).ok()?;
    let argv: Vec<String> = words.split_whitespace().map(str::to_owned).collect();
    (!argv.is_empty()).then_some(argv)
}

/// The program `adapter`'s workers run, without `--out-dir`: its [`replacement`] if there is
/// one, else the pinned worker: the built-ins' own, or the command the manifest declares, its
/// first word resolved against the manifest's folder when it is a relative path with a `/`,
/// under the pinned environment's Python when the declaration asks for it. `Err` names an
/// adapter the manifest does not declare.
pub fn program(
    adapter: &Adapter,
    manifest: &Manifest,
    manifest_path: &Path,
    repo: &Path,
) -> Result<Vec<String>, String> {
    if let Some(argv) = replacement(adapter) {
        return Ok(argv);
    }
    let display = |p: PathBuf| p.display().to_string();
    Ok(match adapter {
        Adapter::Controlled => vec![display(controlled_program()), "worker".into()],
        Adapter::Stock => vec![display(venv_python(repo)), display(repo.join("tools/stock/worker.py"))],
        Adapter::Declared(name) => {
            let declared = manifest.declared(adapter).ok_or_else(|| {
                format!("adapter {name:?} is not declared in the manifest's `adapters` ({})", manifest_path.display())
            })?;
            let folder = manifest_path.parent().unwrap_or(Path::new("."));
            let mut words = declared.command.iter();
            let first = words.next().ok_or_else(|| format!("adapters[{name:?}].command is empty"))?;
            let first = if first.contains('/') && Path::new(first).is_relative() {
                display(folder.join(first))
            } else {
                first.clone()
            };
            let interpreter = declared.interpreter.map(|Interpreter::Python| display(venv_python(repo)));
            interpreter.into_iter().chain(std::iter::once(first)).chain(words.cloned()).collect()
        }
    })
}

/// The command line of one worker: its adapter's [`program`] writing into `out_dir`. The command
/// actually run is recorded in `session.json` either way.
pub fn worker_command(program: &[String], out_dir: &Path) -> Vec<String> {
    let mut argv = program.to_vec();
    argv.extend(["--out-dir".to_owned(), out_dir.display().to_string()]);
    argv
}

fn current_exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("decode-baseline"))
}

/// The file name of the controlled worker's own executable (`crates/controlled/src/main.rs`).
pub const CONTROLLED_PROGRAM: &str = "decode-baseline-controlled";

/// The controlled worker's program: this executable when it links MLX (its `worker`
/// subcommand), else the [`CONTROLLED_PROGRAM`] beside it (a launcher built without MLX, as the
/// CUDA build is, so that it starts where the CUDA libmlx cannot).
pub fn controlled_program() -> PathBuf {
    let exe = current_exe();
    if cfg!(feature = "controlled") {
        return exe;
    }
    exe.with_file_name(CONTROLLED_PROGRAM)
}

/// Whether the controlled worker is a separate program that the launcher must probe before it
/// spawns it (see `preflight.rs`): no replacement program is set and this build links no MLX.
pub fn controlled_needs_probe() -> bool {
    !cfg!(feature = "controlled") && replacement(&Adapter::Controlled).is_none()
}

/// The selected pinned environment's interpreter.
pub fn venv_python(repo: &Path) -> PathBuf {
    decode_baseline_pins::installed::venv_dir(repo).join("bin/python")
}
