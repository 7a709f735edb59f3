//! `bisect --environments`: the stock loop over pinned MLX environments. Each step declares
//! the stock worker twice, as [`BASE`] in the base environment and as [`TEST`] in the tested one
//! (`adapters.<name>.environment`), so one interleaved session runs mlx_lm's
//! `stream_generate` on two MLX / mlx_lm releases side by side, each worker under its own
//! environment's Python and libmlx and checked against that environment's pins.

use std::path::Path;

use serde_json::{json, Map, Value};

use decode_baseline_pins::installed::{environment_name, provision_command, DEFAULT_ENV_NAME};
use decode_baseline_wire::manifest::Manifest;

use super::workspace::{BASE, TEST};
use crate::ensure_input;

/// One environment of the series, as checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The name the manifest and `$DECODE_BASELINE_ENV` know it by (`default` for the default).
    pub name: String,
    /// `mlx-0.31.2 (mlx 0.31.2, mlx_lm 0.31.3)`.
    pub described: String,
}

/// The environments `names` (oldest release first), each pinned in the checkout's manifest and
/// provisioned; bad input naming the first that is not, and how to make it.
pub fn checked(checkout: &Path, names: &[String]) -> anyhow::Result<Vec<Environment>> {
    let path = checkout.join(crate::checkout::MANIFEST_NAME);
    let (manifest, _) =
        decode_baseline_pins::load_manifest(&path).map_err(|e| crate::exit::bad_input(crate::guard::chain(&e)))?;
    within(&manifest, &path, names, |name| crate::launcher::plan::venv_python_of(checkout, name).is_file())
}

/// [`checked`] against `manifest` (read from `path`), `provisioned` telling whether an
/// environment's Python is there.
fn within(
    manifest: &Manifest,
    path: &Path,
    names: &[String],
    provisioned: impl Fn(Option<&str>) -> bool,
) -> anyhow::Result<Vec<Environment>> {
    ensure_input!(
        names.len() >= 2,
        "--environments: expected at least two environments, the good one first and the bad one last, found {}",
        names.len()
    );
    let mut out: Vec<Environment> = Vec::new();
    for given in names {
        let named = environment_name(given);
        let name = named.unwrap_or(DEFAULT_ENV_NAME).to_owned();
        ensure_input!(!out.iter().any(|e| e.name == name), "--environments: {name} is named twice");
        let Some(pins) = manifest.environment_pins(named) else {
            crate::bad_input!(
                "--environments: environment {name:?} is not pinned in {} (`environments` has: {}); make it with \
                 `tools/env/mlxenv add {name} MLX MLX_LM`, or pin one already provisioned with `decode-baseline \
                 manifest pin --environment {name}`",
                path.display(),
                manifest.environments.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        };
        ensure_input!(
            provisioned(named),
            "--environments: environment {name:?} is pinned but not provisioned (no Python in its virtual environment); \
             provision it with `{}`",
            provision_command(named)
        );
        let described = format!("{name} (mlx {}, mlx_lm {})", pins.mlx_version, pins.mlx_lm_version);
        out.push(Environment { name, described });
    }
    Ok(out)
}

/// The stock worker declared twice: as [`BASE`] in environment `base`, as [`TEST`] in `tested`.
pub fn adapters((base, tested): (&str, &str)) -> Map<String, Value> {
    [(BASE, base), (TEST, tested)]
        .into_iter()
        .map(|(name, environment)| {
            let declaration = json!({
                "command": ["tools/stock/worker.py", "--as", name],
                "interpreter": "python",
                "sources": ["tools/stock", "tools/kit/python"],
                "environment": environment,
            });
            (name.to_owned(), declaration)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        let text = std::fs::read_to_string(crate::checkout::built_in().join("workloads.json")).unwrap();
        let mut manifest: Manifest = serde_json::from_str(&text).unwrap();
        let mut older = manifest.environment.clone();
        older.mlx_version = "0.31.2".into();
        older.mlx_lm_version = "0.31.3".into();
        manifest.environments.insert("mlx-0.31.2".into(), older);
        manifest
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pinned_and_provisioned_environments_are_described_by_their_versions() {
        let m = manifest();
        let found = within(&m, Path::new("workloads.json"), &names(&["mlx-0.31.2", "default"]), |_| true).unwrap();
        assert_eq!(
            found[0],
            Environment { name: "mlx-0.31.2".into(), described: "mlx-0.31.2 (mlx 0.31.2, mlx_lm 0.31.3)".into() }
        );
        assert_eq!(found[1].name, "default");
        assert!(found[1].described.starts_with(&format!("default (mlx {}", m.environment.mlx_version)));
    }

    #[test]
    fn an_unpinned_unprovisioned_repeated_or_lone_environment_is_bad_input_naming_it() {
        let m = manifest();
        let path = Path::new("workloads.json");
        let message = |list: &[&str], provisioned: bool| {
            let err = within(&m, path, &names(list), |_| provisioned).unwrap_err();
            assert!(err.downcast_ref::<crate::exit::BadInput>().is_some(), "{err:#}");
            format!("{err:#}")
        };
        assert!(message(&["mlx-0.30.0", "default"], true).contains("\"mlx-0.30.0\" is not pinned"));
        assert!(message(&["mlx-0.30.0", "default"], true).contains("mlxenv add mlx-0.30.0"));
        assert!(message(&["mlx-0.31.2", "default"], false).contains("not provisioned"));
        assert!(message(&["default", "default"], true).contains("named twice"));
        assert!(message(&["default"], true).contains("at least two"));
    }

    #[test]
    fn each_side_is_the_stock_worker_in_its_own_environment() {
        let adapters = adapters(("mlx-0.31.2", "default"));
        assert_eq!(adapters[BASE]["environment"], "mlx-0.31.2");
        assert_eq!(adapters[TEST]["environment"], "default");
        assert_eq!(adapters[TEST]["command"], json!(["tools/stock/worker.py", "--as", TEST]));
        let declared: decode_baseline_wire::manifest::DeclaredAdapter =
            serde_json::from_value(adapters[BASE].clone()).unwrap();
        assert_eq!(declared.environment.as_deref(), Some("mlx-0.31.2"));
    }
}
