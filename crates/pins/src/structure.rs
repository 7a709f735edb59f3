//! The manifest's structure, with no file system: the run policy against the frozen one, ids,
//! references between cells, prompts and cases, token digests, stop sets, declared adapters,
//! and the shape of the artifact and source pins (paths: [`crate::confinement`]).

use std::collections::{BTreeMap, BTreeSet};

use decode_baseline_wire::{
    job::token_ids_sha256,
    manifest::{Manifest, Prompt},
    Adapter, RunPolicy,
};

use crate::{
    confinement::escape,
    error::{FieldPath, PinError, PinProblem},
    sources::check_relative,
};

/// True for ids that are safe as one path component (cell names become folder names).
pub fn is_path_safe_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Compares a run policy with the frozen one, field by field.
pub fn check_policy(policy: &RunPolicy) -> Vec<PinError> {
    let mut out = Vec::new();
    if let Err(err) = policy.validate() {
        out.push(PinError::at(
            FieldPath::field("run_policy").key(err.field),
            PinProblem::PolicyNotPositive { value: err.value },
        ));
    }
    let actual = serde_json::to_value(policy).expect("a policy serializes");
    let frozen = serde_json::to_value(RunPolicy::frozen()).expect("a policy serializes");
    for (field, expected) in frozen.as_object().expect("a policy is an object") {
        let found = &actual[field];
        if found != expected {
            out.push(PinError::at(
                FieldPath::field("run_policy").key(field),
                PinProblem::PolicyNotFrozen { expected: expected.to_string(), actual: found.to_string() },
            ));
        }
    }
    out
}

/// The prompt's `continuation_sha256` against its continuation as listed (a check of
/// [`check_structure`], and of every worker for its job's prompt).
pub fn check_continuation_digest(id: &str, prompt: &Prompt) -> Option<PinError> {
    let actual = token_ids_sha256(&prompt.continuation);
    (actual != prompt.continuation_sha256).then(|| {
        PinError::at(
            FieldPath::field("prompts").entry(id).key("continuation_sha256"),
            PinProblem::TokenDigest { expected: prompt.continuation_sha256, actual },
        )
    })
}

/// Every structural check: the policy, ids, references between cells, prompts and cases,
/// prompt and continuation digests, stop sets, and the shape of the artifact and source pins
/// (paths are checked by [`crate::confinement::check_confinement`]).
pub fn check_structure(manifest: &Manifest) -> Vec<PinError> {
    let mut out = check_policy(&manifest.run_policy);
    if manifest.cases.is_empty() {
        out.push(PinError::at(FieldPath::field("cases"), PinProblem::Empty { what: "the case set" }));
    }
    if manifest.cells.is_empty() {
        out.push(PinError::at(FieldPath::field("cells"), PinProblem::Empty { what: "the cell list" }));
    }
    for (id, case) in &manifest.cases {
        let field = FieldPath::case(id);
        if !is_path_safe_id(id) {
            out.push(PinError::at(FieldPath::field("cases"), PinProblem::BadId { id: id.clone() }));
        }
        if case.stop_ids.is_empty() {
            out.push(PinError::at(field.clone().key("stop_ids"), PinProblem::Empty { what: "the stop set" }));
        } else if case.stop_ids.windows(2).any(|w| w[0] >= w[1]) {
            out.push(PinError::at(
                field.clone().key("stop_ids"),
                PinProblem::StopIdsOrder { actual: case.stop_ids.clone() },
            ));
        }
        if !case.files.keys().any(|name| name.ends_with(".safetensors")) {
            out.push(PinError::at(field.clone().key("files"), PinProblem::NoWeights));
        }
        if !case.files.contains_key("config.json") {
            out.push(PinError::at(field.clone().key("files"), PinProblem::MissingPin { expected: "config.json" }));
        }
        for name in ["architecture", "dtype"] {
            let value = if name == "architecture" { &case.architecture } else { &case.dtype };
            if value.is_empty() {
                out.push(PinError::at(field.clone().key(name), PinProblem::Empty { what: "the value" }));
            }
        }
    }
    let steps = manifest.run_policy.fixed_continuation_steps;
    for (id, prompt) in &manifest.prompts {
        let field = FieldPath::field("prompts").entry(id);
        if !is_path_safe_id(id) {
            out.push(PinError::at(FieldPath::field("prompts"), PinProblem::BadId { id: id.clone() }));
        }
        if !manifest.cases.contains_key(&prompt.case) {
            out.push(PinError::at(field.clone().key("case"), PinProblem::UnknownCase { id: prompt.case.clone() }));
        }
        if prompt.ids.is_empty() {
            out.push(PinError::at(field.clone().key("ids"), PinProblem::Empty { what: "the prompt" }));
        }
        let actual = token_ids_sha256(&prompt.ids);
        if actual != prompt.sha256 {
            out.push(PinError::at(
                field.clone().key("sha256"),
                PinProblem::TokenDigest { expected: prompt.sha256, actual },
            ));
        }
        if prompt.continuation.len() != steps as usize {
            out.push(PinError::at(
                field.clone().key("continuation"),
                PinProblem::ContinuationLength { expected: steps, actual: prompt.continuation.len() },
            ));
        }
        out.extend(check_continuation_digest(id, prompt));
    }
    let mut seen = BTreeSet::new();
    for (i, cell) in manifest.cells.iter().enumerate() {
        let field = FieldPath::field("cells").index(i);
        if !manifest.cases.contains_key(&cell.case) {
            out.push(PinError::at(field.clone().key("case"), PinProblem::UnknownCase { id: cell.case.clone() }));
        }
        match manifest.prompts.get(&cell.prompt) {
            None => out
                .push(PinError::at(field.clone().key("prompt"), PinProblem::UnknownPrompt { id: cell.prompt.clone() })),
            Some(prompt) if prompt.case != cell.case => out.push(PinError::at(
                field.clone().key("prompt"),
                PinProblem::PromptCase { expected: cell.case.clone(), actual: prompt.case.clone() },
            )),
            Some(_) => {}
        }
        if !seen.insert(cell.clone()) {
            out.push(PinError::at(field, PinProblem::DuplicateCell { cell: cell.name() }));
        }
    }
    out.extend(check_declared(manifest));
    for adapter in manifest.all_adapters() {
        if manifest.worker_sources.get(&adapter).is_none_or(BTreeMap::is_empty) {
            out.push(PinError::at(FieldPath::worker_sources(&adapter), PinProblem::EmptySourceSet));
        }
    }
    for adapter in manifest.worker_sources.keys().filter(|a| !manifest.knows(a)) {
        out.push(PinError::at(
            FieldPath::worker_sources(adapter),
            PinProblem::UndeclaredAdapter { name: adapter.to_string() },
        ));
    }
    out
}

/// The shape of every declared adapter: a name that is neither built in nor malformed, a
/// command, source paths that stay inside the manifest's folder, and an environment of its own
/// only where the manifest pins it.
fn check_declared(manifest: &Manifest) -> Vec<PinError> {
    let mut out = Vec::new();
    for (name, declared) in &manifest.adapters {
        let field = FieldPath::field("adapters").entry(name);
        match Adapter::parse(name) {
            Ok(Adapter::Declared(_)) => {}
            Ok(_) => out.push(PinError::at(field.clone(), PinProblem::BuiltInDeclared { name: name.clone() })),
            Err(problem) => out.push(PinError::at(field.clone(), PinProblem::BadAdapterName { problem })),
        }
        if declared.command.first().is_none_or(String::is_empty) {
            out.push(PinError::at(
                field.clone().key("command"),
                PinProblem::Empty { what: "the command (its first word)" },
            ));
        }
        if declared.sources.is_empty() {
            out.push(PinError::at(field.clone().key("sources"), PinProblem::Empty { what: "the source list" }));
        }
        for (i, rel) in declared.sources.iter().enumerate() {
            if let Err(reason) = check_relative(rel) {
                out.push(escape(field.clone().key("sources").index(i), rel, reason));
            }
        }
        if let Some(environment) = declared.environment.as_deref() {
            let named = crate::installed::environment_name(environment);
            if manifest.environment_pins(named).is_none() {
                out.push(PinError::at(
                    field.clone().key("environment"),
                    PinProblem::EnvironmentNotPinned { name: environment.to_owned() },
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_must_be_path_safe() {
        assert!(is_path_safe_id("tiny-qwen3.L16_x"));
        for bad in ["", ".hidden", "a/b", "a b", "..", "é"] {
            assert!(!is_path_safe_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn policy_changes_name_the_field() {
        let policy = RunPolicy { warmup_requests: 4, ..RunPolicy::frozen() };
        let errors = check_policy(&policy);
        assert!(
            matches!(errors.as_slice(), [PinError { field, problem: PinProblem::PolicyNotFrozen { expected, actual } }]
            if field == "run_policy.warmup_requests" && expected == "2" && actual == "4")
        );
        assert_eq!(errors[0].to_string(), "run_policy.warmup_requests: expected the frozen value 2, found 4");
        let zero = RunPolicy { backstop_grace_s: 0, ..RunPolicy::frozen() };
        let errors = check_policy(&zero);
        assert!(matches!(errors.first(), Some(PinError { field, problem: PinProblem::PolicyNotPositive { value: 0 } })
            if field == "run_policy.backstop_grace_s"));
    }
}
