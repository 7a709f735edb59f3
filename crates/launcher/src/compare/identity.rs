//! Whether two things may be compared at all: the list of what differs between them.
//!
//! Two sessions are alike when they share the manifest digest, the model files of every case both
//! ran, the environment (MLX and mlx_lm versions, lock and libmlx digests), each adapter's worker
//! source digest, whether they are pinned (no worker program replaced), and the host. Sessions on two pinned MLX environments differ in the environment
//! alone; that difference is allowed when asked for (`--across-versions`) and named in the
//! output. Within one session the controlled and stock workers must have loaded the same libmlx
//! file (the whole point of the design: a difference is the loop, not the kernels); the rest is
//! shared by construction.
//!
//! The model check is made only when the manifest digests differ: with equal digests the models
//! are equal by construction (the manifest pins every model file). Each session's model files
//! come from its own record (`model_files`, written since session report version 2), so a
//! session copied to another machine compares on its own. A session without that record
//! (version 1, or marked incomplete) falls back to its manifest at `manifest_path`, used only
//! when its SHA-256 still equals the session's `manifest_sha256`; a manifest that is gone or
//! changed makes the model check "unknown", which is listed as a difference too.

use std::{
    borrow::Cow,
    collections::{BTreeMap, BTreeSet},
};

use decode_baseline_wire::compare::Mismatch;
use decode_baseline_wire::{
    manifest::Manifest,
    report::{Identity, Status},
    session::{CaseFiles, SessionReport},
    Adapter, Sha256Digest,
};

/// The identities of the valid, `ok` worker reports of `adapter` (or of every adapter).
fn identities<'s>(session: &'s SessionReport, adapter: Option<&Adapter>) -> Vec<&'s Identity> {
    session
        .workers
        .iter()
        .filter(|w| adapter.is_none_or(|a| w.adapter == *a) && w.validation_errors.is_empty())
        .filter_map(|w| w.report.as_ref())
        .filter(|r| r.status == Status::Ok)
        .filter_map(|r| r.identity.as_ref())
        .collect()
}

fn joined(values: BTreeSet<String>) -> String {
    if values.is_empty() {
        "none recorded".to_owned()
    } else {
        values.into_iter().collect::<Vec<_>>().join(", ")
    }
}

fn set_of(session: &SessionReport, adapter: Option<&Adapter>, f: impl Fn(&Identity) -> String) -> BTreeSet<String> {
    identities(session, adapter).into_iter().map(f).collect()
}

pub fn hostname(session: &SessionReport) -> String {
    session.host.as_ref().map_or("unknown", |h| h.hostname.as_str()).to_owned()
}

/// Within one session: every adapter must run on the reference's one libmlx digest (one
/// mismatch per adapter that does not: its digests against the reference's), unless it ran in
/// another pinned environment than the reference, as an adapter that declares its own does
/// (`adapters.<name>.environment`): each worker checked its libmlx against its own
/// environment's pins, told apart by the lock ([`other_environments`] names them).
pub fn within(session: &SessionReport) -> Vec<Mismatch> {
    let libmlx = |adapter| set_of(session, Some(adapter), |i| i.libmlx_sha256.to_hex());
    let lock = |adapter| set_of(session, Some(adapter), |i| i.lock_sha256.to_hex());
    let reference = libmlx(&session.reference);
    let mut out = Vec::new();
    for adapter in adapters(session).into_iter().filter(|a| **a != session.reference) {
        let own = libmlx(adapter);
        let declared_apart = own.len() == 1 && lock(adapter).is_disjoint(&lock(&session.reference));
        if !own.is_empty() && !reference.is_empty() && (own != reference || own.len() > 1) && !declared_apart {
            out.push(Mismatch { field: "libmlx_sha256".to_owned(), a: joined(own), b: joined(reference.clone()) });
        }
    }
    out
}

fn adapters(session: &SessionReport) -> Vec<&Adapter> {
    let mut adapters: Vec<&Adapter> = session.workers.iter().map(|w| &w.adapter).collect();
    adapters.sort();
    adapters.dedup();
    adapters
}

/// The adapters of `session` that ran in another pinned environment than its reference, each
/// with its MLX and mlx_lm versions against the reference's: `stock-old: mlx 0.31.2, mlx_lm
/// 0.31.3 (the reference: mlx 0.32.4, mlx_lm 0.32.2)`. Empty when all ran in one.
pub fn other_environments(session: &SessionReport) -> Vec<String> {
    let of = |adapter| {
        let version = |f: fn(&Identity) -> String| joined(set_of(session, Some(adapter), f));
        let locks = set_of(session, Some(adapter), |i| i.lock_sha256.to_hex());
        (locks, format!("mlx {}, mlx_lm {}", version(|i| i.mlx_version.clone()), version(|i| i.mlx_lm_version.clone())))
    };
    let (reference_locks, reference) = of(&session.reference);
    adapters(session)
        .into_iter()
        .filter(|a| **a != session.reference)
        .filter_map(|adapter| {
            let (locks, versions) = of(adapter);
            (!locks.is_empty() && locks != reference_locks)
                .then(|| format!("{adapter}: {versions} (the reference: {reference})"))
        })
        .collect()
}

/// The fields that tell two pinned MLX environments apart. Sessions on two environments
/// differ in these by design; `compare --across-versions` asks for exactly that difference.
pub const ENVIRONMENT_FIELDS: [&str; 4] = ["mlx_version", "mlx_lm_version", "lock_sha256", "libmlx_sha256"];

/// Whether `mismatch` is one of the [`ENVIRONMENT_FIELDS`].
pub fn is_environment(mismatch: &Mismatch) -> bool {
    ENVIRONMENT_FIELDS.contains(&mismatch.field.as_str())
}

/// The fields that tell two devices apart: the environment's backend (`cpu`, `cuda`, `metal`) and
/// the device (its name, and on a GPU its memory and compute capability). Comparing across them
/// is never a like-for-like comparison; `compare --across-devices` asks for exactly that.
pub const DEVICE_FIELDS: [&str; 2] = ["backend", "device"];

/// Whether `mismatch` is one of the [`DEVICE_FIELDS`].
pub fn is_device(mismatch: &Mismatch) -> bool {
    DEVICE_FIELDS.contains(&mismatch.field.as_str())
}

/// The field that tells two CPU placements apart (`run --cpus`): where the workers' threads ran
/// changes both the step time and its scatter (`req/findings.md` §18), so two placements are
/// never like for like; `compare --across-placements` asks for exactly that.
pub const PLACEMENT_FIELD: &str = "placement";

/// Whether `mismatch` is the [`PLACEMENT_FIELD`].
pub fn is_placement(mismatch: &Mismatch) -> bool {
    mismatch.field == PLACEMENT_FIELD
}

/// A session's device in one line: name, then memory and compute capability where recorded.
pub fn device_line(device: &decode_baseline_wire::backend::DeviceIdentity) -> String {
    let mut line = device.name.clone();
    if let Some(memory) = device.info.get("total_memory").or_else(|| device.info.get("memory_size")) {
        line.push_str(&format!(", {memory} bytes"));
    }
    if let (Some(major), Some(minor)) =
        (device.info.get("compute_capability_major"), device.info.get("compute_capability_minor"))
    {
        line.push_str(&format!(", compute capability {major}.{minor}"));
    }
    line
}

/// The MLX and mlx_lm versions a session's workers ran on, e.g. `mlx 0.32.4, mlx_lm 0.32.2`.
pub fn versions(session: &SessionReport) -> String {
    format!(
        "mlx {}, mlx_lm {}",
        joined(set_of(session, None, |i| i.mlx_version.clone())),
        joined(set_of(session, None, |i| i.mlx_lm_version.clone()))
    )
}

/// The code versions (the repository's commit, `+dirty` when it had changes) a session's workers
/// ran from, e.g. `4f0c…` or `none recorded`.
pub fn code_versions(session: &SessionReport) -> String {
    joined(set_of(session, None, |i| i.code_version.clone()))
}

/// The worker source digests `adapter` ran in `session` (hex), or `none recorded`.
pub fn worker_sources(session: &SessionReport, adapter: &Adapter) -> String {
    joined(set_of(session, Some(adapter), |i| i.worker_sources_sha256.to_hex()))
}

/// Between two sessions: manifest, models (when the manifests differ), the environment
/// ([`ENVIRONMENT_FIELDS`]), worker sources per adapter, host. `cases` are the case ids both
/// sessions ran.
pub fn across(a: &SessionReport, b: &SessionReport, cases: &BTreeSet<String>) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut differ = |field: &str, x: String, y: String| {
        if x != y {
            out.push(Mismatch { field: field.to_owned(), a: x, b: y });
        }
    };
    differ("manifest_sha256", a.manifest_sha256.to_hex(), b.manifest_sha256.to_hex());
    let field = |s, f: fn(&Identity) -> String| joined(set_of(s, None, f));
    differ("mlx_version", field(a, |i| i.mlx_version.clone()), field(b, |i| i.mlx_version.clone()));
    differ("mlx_lm_version", field(a, |i| i.mlx_lm_version.clone()), field(b, |i| i.mlx_lm_version.clone()));
    differ("lock_sha256", field(a, |i| i.lock_sha256.to_hex()), field(b, |i| i.lock_sha256.to_hex()));
    differ("libmlx_sha256", field(a, |i| i.libmlx_sha256.to_hex()), field(b, |i| i.libmlx_sha256.to_hex()));
    let mut adapters: Vec<&Adapter> = a.workers.iter().chain(&b.workers).map(|w| &w.adapter).collect();
    adapters.sort();
    adapters.dedup();
    for adapter in adapters {
        let sources = |s| set_of(s, Some(adapter), |i| i.worker_sources_sha256.to_hex());
        let (x, y) = (sources(a), sources(b));
        // An adapter that one session did not run is not a difference in its sources.
        if !x.is_empty() && !y.is_empty() {
            differ(&format!("worker_sources_sha256 ({adapter})"), joined(x), joined(y));
        }
    }
    // Two unpinned sessions may be compared (a replaced worker against itself); one beside a
    // pinned session may not: nothing says its reports came from the pinned programs.
    differ("pinned", pinning(a), pinning(b));
    differ("host", hostname(a), hostname(b));
    // A session that recorded no device (before session version 4) is not a difference.
    if let (Some(x), Some(y)) = (&a.device, &b.device) {
        differ("backend", x.backend.as_str().to_owned(), y.backend.as_str().to_owned());
        differ("device", device_line(x), device_line(y));
    }
    // A session that recorded no placement (written before the field) is not a difference.
    if let (Some(x), Some(y)) = (&a.placement, &b.placement) {
        differ("placement", crate::session::placement_as_compared(x), crate::session::placement_as_compared(y));
    }
    // One process against a group of ranks is what `bench --ranks` sets side by side.
    differ("group", crate::session::group_setup(a), crate::session::group_setup(b));
    if a.manifest_sha256 != b.manifest_sha256 {
        out.extend(models(a, b, cases));
    }
    out
}

/// `pinned`, or `unpinned` with the adapters whose program was replaced, e.g. `unpinned (the
/// stock program was replaced by /x/worker.sh)`.
pub fn pinning(session: &SessionReport) -> String {
    if !session.unpinned {
        return "pinned".to_owned();
    }
    let replaced: Vec<String> = session
        .replaced_programs
        .iter()
        .map(|(adapter, argv)| format!("the {} program was replaced by {}", adapter.as_str(), argv.join(" ")))
        .collect();
    format!("unpinned ({})", if replaced.is_empty() { "no program recorded".to_owned() } else { replaced.join("; ") })
}

/// Whether `mismatch` says one session is unpinned and the other is not.
pub fn is_pinning(mismatch: &Mismatch) -> bool {
    mismatch.field == "pinned"
}

/// The pinned files of the session's cases: recorded in the session, or else from its manifest
/// if that still matches its digest.
fn case_files(session: &SessionReport) -> Result<Cow<'_, CaseFiles>, String> {
    if let Some(recorded) = &session.model_files {
        return Ok(Cow::Borrowed(recorded));
    }
    let path = &session.manifest_path;
    let bytes =
        std::fs::read(path).map_err(|err| format!("unknown (manifest {} unreadable: {err})", path.display()))?;
    if Sha256Digest::of_bytes(&bytes) != session.manifest_sha256 {
        return Err(format!("unknown (manifest {} changed since the session)", path.display()));
    }
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|err| format!("unknown (manifest {} unparsable: {err})", path.display()))?;
    Ok(Cow::Owned(manifest.cases.into_iter().map(|(id, case)| (id, case.files)).collect()))
}

fn models(a: &SessionReport, b: &SessionReport, cases: &BTreeSet<String>) -> Vec<Mismatch> {
    let (files_a, files_b) = (case_files(a), case_files(b));
    let mut out = Vec::new();
    for case in cases {
        let field = format!("model {case}");
        match (&files_a, &files_b) {
            (Ok(fa), Ok(fb)) => {
                let (x, y) = (fa.get(case), fb.get(case));
                let names: BTreeSet<&String> = x.into_iter().chain(y).flat_map(|m| m.keys()).collect();
                for name in names {
                    let digest = |m: Option<&BTreeMap<String, Sha256Digest>>| {
                        m.and_then(|m| m.get(name)).map_or("absent".to_owned(), Sha256Digest::to_hex)
                    };
                    let (dx, dy) = (digest(x), digest(y));
                    if dx != dy {
                        out.push(Mismatch { field: format!("{field}: {name}"), a: dx, b: dy });
                    }
                }
            }
            (x, y) => {
                let show = |r: &Result<_, String>| r.as_ref().map_or_else(Clone::clone, |_| "readable".to_owned());
                out.push(Mismatch { field, a: show(x), b: show(y) });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorded session of both adapters on one libmlx and one lock, and its other adapter
    /// (the one that is not the reference).
    fn recorded() -> (SessionReport, Adapter) {
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let session = crate::session::load_session(&path).unwrap().report;
        let other = session.job.adapters.iter().find(|a| **a != session.reference).unwrap().clone();
        (session, other)
    }

    /// `session` with `edit` applied to the identities of `adapter`'s reports, the first `count`
    /// of them in the session's order.
    fn edited(
        mut session: SessionReport,
        adapter: &Adapter,
        count: usize,
        edit: impl Fn(&mut Identity),
    ) -> SessionReport {
        let identities = session
            .workers
            .iter_mut()
            .filter(|w| w.adapter == *adapter)
            .filter_map(|w| w.report.as_mut()?.identity.as_mut());
        identities.take(count).for_each(edit);
        session
    }

    #[test]
    fn within_a_session_every_adapter_runs_on_the_references_libmlx_unless_its_lock_sets_it_apart() {
        let (session, other) = recorded();
        let runs = session.workers.iter().filter(|w| w.adapter == other).count();
        assert!(runs >= 2, "the recorded session has {runs} runs of {other}");
        assert_eq!(within(&session), vec![]);
        let reference = joined(set_of(&session, Some(&session.reference), |i| i.libmlx_sha256.to_hex()));
        let another = Sha256Digest::of_bytes(b"another libmlx");
        let another_lock = Sha256Digest::of_bytes(b"another lock");

        // Another libmlx on the same lock: one mismatch, the adapter's digest against the reference's.
        let moved = edited(session.clone(), &other, runs, |i| i.libmlx_sha256 = another);
        let expected = Mismatch { field: "libmlx_sha256".to_owned(), a: another.to_hex(), b: reference.clone() };
        assert_eq!(within(&moved), vec![expected]);

        // Declared apart: another libmlx from another lock (an adapter in its own environment).
        let apart =
            edited(session.clone(), &other, runs, |i| (i.libmlx_sha256, i.lock_sha256) = (another, another_lock));
        assert_eq!(within(&apart), vec![]);

        // Two libmlx digests among one adapter's runs, one of them the reference's: a mismatch
        // naming both, even when every run of it came from another lock.
        let relocked = edited(session.clone(), &other, runs, |i| i.lock_sha256 = another_lock);
        let split = edited(relocked, &other, 1, |i| i.libmlx_sha256 = another);
        let found = within(&split);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].a, joined([another.to_hex(), reference.clone()].into()), "{found:?}");

        // The same two digests among the reference's runs too: the sets agree, and the split is
        // still a mismatch.
        let split_alike = edited(session.clone(), &other, 1, |i| i.libmlx_sha256 = another);
        let both = edited(split_alike, &session.reference, 1, |i| i.libmlx_sha256 = another);
        assert_eq!(within(&both).len(), 1, "{:?}", within(&both));

        // No report of the adapter with an identity: nothing to compare, no mismatch.
        let mut silent = session.clone();
        silent.workers.iter_mut().filter(|w| w.adapter == other).for_each(|w| w.report = None);
        assert_eq!(within(&silent), vec![]);
        // Nor when the reference has none.
        let mut silent = moved;
        silent.workers.iter_mut().filter(|w| w.adapter == silent.reference).for_each(|w| w.report = None);
        assert_eq!(within(&silent), vec![]);
    }
}
