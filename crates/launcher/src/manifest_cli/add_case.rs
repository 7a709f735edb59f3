//! `manifest add-case`: pin a model folder as a case, with its prompts and cells.

use std::collections::BTreeMap;

use decode_baseline_pins::{
    self as pins, environment_pins, installed::selected_environment, is_path_safe_id, load_manifest,
};
use decode_baseline_wire::{
    manifest::{Cell, Manifest, WorkerSources, MANIFEST_SCHEMA_VERSION},
    ExitCode, Mode, RunPolicy,
};

use super::{derive_case, installed, write_manifest, AddCaseArgs, CellSet, PROMPT_LENGTHS};
use decode_baseline_model_config::config::ModelConfig;

use crate::guard::{chain, locate_manifest, MANIFEST_NAME};

pub(super) fn add_case(args: AddCaseArgs) -> anyhow::Result<ExitCode> {
    crate::ensure_input!(
        is_path_safe_id(&args.id),
        "case id {:?} is not path-safe (letters, digits, `-`, `_`, `.`)",
        args.id
    );
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
    let installed = installed(&repo, decode_baseline_pins::installed::selected_environment().as_deref())?;
    let mut manifest = if manifest_path.exists() {
        let (manifest, _) = load_manifest(&manifest_path).map_err(|e| crate::exit::bad_input(chain(&e)))?;
        // The stop set and the prompt ids must come from the environment the manifest pins.
        let environment = selected_environment();
        let Some(pinned) = manifest.environment_pins(environment.as_deref()) else {
            crate::bad_input!(
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
            crate::bad_input!(
                "the installed environment at {} is not the one the manifest pins",
                installed.venv.display()
            );
        }
        manifest
    } else {
        if let Some(name) = selected_environment() {
            crate::bad_input!(
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
            adapters: BTreeMap::new(),
            worker_sources: WorkerSources::new(),
            environment: environment_pins(&repo, &installed).map_err(|e| crate::exit::bad_input(chain(&e)))?,
            environments: BTreeMap::new(),
        }
    };

    if manifest.cases.contains_key(&args.id) {
        crate::ensure_input!(
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
        crate::ensure_input!(
            !manifest.prompts.contains_key(&prompt_id),
            "prompt id {prompt_id:?} is already used by another case"
        );
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
    println!("manifest add-case: {}", controlled_support(&args.model_dir));
    Ok(ExitCode::Ok)
}

/// Whether the controlled loop can run the model, as its own config reader decides: said at
/// add-case time, so that a case the loop cannot run is not first found out by a failed session.
fn controlled_support(model_dir: &std::path::Path) -> String {
    match ModelConfig::load(model_dir) {
        Ok(config) => format!(
            "the controlled loop reads it ({}, {} layers{})",
            config.model_type,
            config.num_hidden_layers,
            config.moe.map_or(String::new(), |moe| format!(", {} of {} experts per token", moe.top_k, moe.num_experts)),
        ),
        Err(err) => format!(
            "the controlled loop cannot run it ({}): a session of its cells needs \"adapters\": [\"stock\"] \
             (bench drops the controlled adapter by itself)",
            chain(&err)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_controlled_loop_is_asked_and_a_refusal_names_its_reason_and_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), r#"{"model_type": "qwen3_next"}"#).unwrap();
        let said = controlled_support(dir.path());
        assert!(said.starts_with("the controlled loop cannot run it (") && said.contains("qwen3_next"), "{said}");
        assert!(said.contains(r#""adapters": ["stock"]"#), "{said}");
        let fixture = crate::checkout::built_in().join("fixtures/tiny-qwen3");
        assert_eq!(controlled_support(&fixture), "the controlled loop reads it (qwen3, 2 layers)");
    }
}
