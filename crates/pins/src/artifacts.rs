//! Model artifacts: a case's folder holds exactly its pinned files, each with its pinned
//! SHA-256; and the same rule hashes a folder for `manifest pin` ([`case_files`]).

use std::{collections::BTreeMap, fs, path::Path};

use decode_baseline_wire::{manifest::Case, Sha256Digest};

use crate::{
    confinement::case_dir,
    error::{FieldPath, PinError, PinProblem},
    file_digest::{of_file, DigestIoError},
    file_pin::check_digest,
};

/// The file names that make up the artifact in `dir`: every top-level entry that is not a
/// folder (symbolic links are followed: a Hugging Face cache snapshot is made of them) and
/// whose name does not start with `.`. Sorted.
pub fn artifact_file_names(dir: &Path) -> Result<Vec<String>, std::io::Error> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        // A dangling link is kept: reading it fails loudly rather than it being ignored.
        if fs::metadata(entry.path()).is_ok_and(|meta| meta.is_dir()) {
            continue;
        }
        out.push(name);
    }
    out.sort();
    Ok(out)
}

/// Hashes every file of the artifact in `dir` (see [`artifact_file_names`]).
pub fn case_files(dir: &Path) -> Result<BTreeMap<String, Sha256Digest>, DigestIoError> {
    let names = artifact_file_names(dir).map_err(|source| DigestIoError { path: dir.to_owned(), source })?;
    names.into_iter().map(|name| Ok((name.clone(), of_file(&dir.join(&name))?))).collect()
}

/// Checks one case's folder: it holds exactly the pinned files (a stray or missing file of any
/// kind is an error, `*.safetensors` included: mlx_lm loads every `model*.safetensors`), and each
/// has its pinned SHA-256.
pub fn check_case(repo: &Path, id: &str, case: &Case) -> Vec<PinError> {
    let dir = match case_dir(repo, id, case) {
        Ok(dir) => dir,
        Err(err) => return vec![err],
    };
    let field = FieldPath::case(id).key("files");
    let present = match artifact_file_names(&dir) {
        Ok(names) => names,
        Err(source) => {
            return vec![PinError::at(FieldPath::case(id).key("path"), PinProblem::FileRead { path: dir, source })]
        }
    };
    let mut out = Vec::new();
    for name in &present {
        if !case.files.contains_key(name) {
            let note = if name.ends_with(".safetensors") { ", and mlx_lm would load these weights" } else { "" };
            out.push(PinError::at(field.clone(), PinProblem::StrayArtifact { path: dir.join(name), note }));
        }
    }
    for (name, expected) in &case.files {
        let path = dir.join(name);
        let field = field.clone().entry(name);
        if !present.contains(name) {
            out.push(PinError::at(field, PinProblem::Missing { path }));
            continue;
        }
        out.extend(check_digest(field, path, *expected));
    }
    out
}
