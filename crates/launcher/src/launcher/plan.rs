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
            let environment = decode_baseline_pins::adapter_environment(manifest, adapter);
            let python = venv_python_of(repo, environment.as_deref());
            if manifest.declared_environment(adapter).is_some() {
                // An environment of its own: pinned, and (for a Python worker) provisioned.
                decode_baseline_pins::adapter_pins(manifest, adapter).map_err(|e| e.to_string())?;
                if declared.interpreter.is_some() && !python.is_file() {
                    use decode_baseline_pins::installed::{provision_command, DEFAULT_ENV_NAME};
                    return Err(format!(
                        "adapters[{:?}].environment: environment {:?} is pinned but not provisioned (no {}); \
                         provision it with `{}`",
                        adapter.as_str(),
                        environment.as_deref().unwrap_or(DEFAULT_ENV_NAME),
                        python.display(),
                        provision_command(environment.as_deref()),
                    ));
                }
            }
            let interpreter = declared.interpreter.map(|Interpreter::Python| display(python));
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

/// The interpreter of `environment` (`None`: the default one).
pub fn venv_python_of(repo: &Path, environment: Option<&str>) -> PathBuf {
    decode_baseline_pins::installed::venv_dir_of(repo, environment).join("bin/python")
}

/// What a worker of `adapter` finds in its environment beyond the launcher's own: for an
/// adapter that declares an environment of its own, `$DECODE_BASELINE_ENV` naming it and
/// `$DECODE_BASELINE_VENV` its virtual environment, which its checks and its Python follow;
/// nothing for the others, which run in the session's.
pub fn worker_environment(adapter: &Adapter, manifest: &Manifest, repo: &Path) -> Vec<(String, String)> {
    use decode_baseline_pins::installed::{venv_dir_of, DEFAULT_ENV_NAME, VENV_ENV};
    use decode_baseline_wire::manifest::ENV_NAME_ENV;
    let Some(environment) = manifest.declared_environment(adapter) else {
        return Vec::new();
    };
    vec![
        (ENV_NAME_ENV.to_owned(), environment.unwrap_or(DEFAULT_ENV_NAME).to_owned()),
        (VENV_ENV.to_owned(), venv_dir_of(repo, environment).display().to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::manifest::DeclaredAdapter;

    /// The repository's manifest with an older release pinned as `older` and the stock worker
    /// declared as `stock-older` in `environment`.
    fn manifest_with(environment: Option<&str>) -> Manifest {
        let text = std::fs::read_to_string(crate::checkout::built_in().join("workloads.json")).unwrap();
        let mut manifest: Manifest = serde_json::from_str(&text).unwrap();
        let mut older = manifest.environment.clone();
        older.mlx_version = "0.31.2".into();
        manifest.environments.insert("older".into(), older);
        let declared = DeclaredAdapter {
            command: vec!["tools/stock/worker.py".into(), "--as".into(), "stock-older".into()],
            interpreter: Some(Interpreter::Python),
            sources: vec!["tools/stock".into(), "tools/kit/python".into()],
            environment: environment.map(str::to_owned),
        };
        manifest.adapters.insert("stock-older".into(), declared);
        manifest
    }

    #[test]
    fn an_adapter_in_an_environment_of_its_own_runs_under_its_python_with_its_selection_and_pins() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, path) = (tmp.path(), tmp.path().join("workloads.json"));
        let adapter = Adapter::parse("stock-older").unwrap();
        let manifest = manifest_with(Some("older"));
        let missing = program(&adapter, &manifest, &path, repo).unwrap_err();
        assert!(missing.contains("environment \"older\" is pinned but not provisioned"), "{missing}");
        assert!(missing.contains("DECODE_BASELINE_ENV=older python3 tools/env/provision.py"), "{missing}");
        let python = repo.join(".venv-older/bin/python");
        std::fs::create_dir_all(python.parent().unwrap()).unwrap();
        std::fs::write(&python, "").unwrap();
        let argv = program(&adapter, &manifest, &path, repo).unwrap();
        assert_eq!(argv[..2], [python.display().to_string(), repo.join("tools/stock/worker.py").display().to_string()]);
        let env = worker_environment(&adapter, &manifest, repo);
        let venv = repo.join(".venv-older").display().to_string();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(env, [("DECODE_BASELINE_ENV", "older"), ("DECODE_BASELINE_VENV", venv.as_str())]);
        assert_eq!(decode_baseline_pins::adapter_pins(&manifest, &adapter).unwrap().mlx_version, "0.31.2");
        // The session's other adapters keep the session's environment, and nothing is added.
        assert!(worker_environment(&Adapter::Stock, &manifest, repo).is_empty());
        assert_eq!(decode_baseline_pins::adapter_pins(&manifest, &Adapter::Stock).unwrap(), &manifest.environment);
    }

    #[test]
    fn an_adapter_without_an_environment_runs_in_the_sessions_and_an_unpinned_one_is_named() {
        let repo = Path::new("/repo");
        let adapter = Adapter::parse("stock-older").unwrap();
        let plain = manifest_with(None);
        assert!(worker_environment(&adapter, &plain, repo).is_empty());
        assert_eq!(decode_baseline_pins::adapter_pins(&plain, &adapter).unwrap(), &plain.environment);
        let named_default = manifest_with(Some("default"));
        assert_eq!(worker_environment(&adapter, &named_default, repo)[0].1, "default");
        let unpinned = manifest_with(Some("mlx-0.1.0"));
        let err = decode_baseline_pins::adapter_pins(&unpinned, &adapter).unwrap_err().to_string();
        assert!(err.contains("environment") && err.contains("\"mlx-0.1.0\" is not pinned"), "{err}");
        assert!(err.starts_with("adapters"), "the error names the adapter's field: {err}");
        let refused = program(&adapter, &unpinned, &repo.join("workloads.json"), repo).unwrap_err();
        assert_eq!(refused, err, "the session refuses it before it starts");
    }
}
