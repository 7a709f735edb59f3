//! The validation scenario: a table of tampers of the manifest, the job or the artifact, each
//! run against the worker, which must refuse it naming the field (`validation failed: <field>`).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use decode_baseline_pins as pins;
use decode_baseline_wire::{
    manifest::Manifest, outdir::REPORT_FILE, Adapter, Mode, Sha256Digest, Status, WorkerJob, WorkerReport,
};

use super::{
    fixture::{fixture_job, FIXTURE_DIR},
    harness::{tail, test_policy, wait, write_job, Failure, Outcome, Suite, RUN_BOUND},
};

/// An edit of the manifest (given the scratch root).
type ManifestEdit = Box<dyn Fn(&mut Manifest, &Path)>;
/// An edit of the worker job (given the scratch root).
type JobEdit = Box<dyn Fn(&mut WorkerJob, &Path)>;

/// A tamper of the manifest, the job or the artifact, the field the worker must name and,
/// where both workers word it alike, what the error must say.
struct Tamper {
    name: &'static str,
    field: String,
    says: Option<String>,
    manifest: ManifestEdit,
    job: JobEdit,
}

/// The pinned source map of `adapter`.
fn source_set<'m>(m: &'m mut Manifest, adapter: &Adapter) -> &'m mut BTreeMap<String, Sha256Digest> {
    m.worker_sources.entry(adapter.clone()).or_default()
}

/// An artifact copy of `fixture` in the scratch root, made the case's folder, so that the real
/// fixture is never touched.
fn copy_fixture(fixture: &Path, m: &mut Manifest, root: &Path, case: &str) -> PathBuf {
    let dir = root.join("artifact");
    std::fs::create_dir_all(&dir).expect("create the artifact copy's folder");
    for entry in std::fs::read_dir(fixture).expect("list the fixture") {
        let entry = entry.expect("list the fixture");
        std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy the fixture");
    }
    m.cases.get_mut(case).expect("the fixture case").path = dir.clone();
    dir
}

/// The key an unknown-key tamper adds.
const UNKNOWN_KEY: &str = "conformance_unknown";

/// A tamper that adds [`UNKNOWN_KEY`] to the manifest's object at the JSON `pointer` and
/// re-pins the manifest (the job follows), so that only the unknown key is wrong: refused as
/// serde refuses it, naming `manifest_path`.
fn unknown_key(name: &'static str, pointer: String) -> Tamper {
    let job: JobEdit = Box::new(move |j, _| {
        let mut value: serde_json::Value = serde_json::from_slice(&std::fs::read(&j.manifest_path).unwrap()).unwrap();
        let object = value.pointer_mut(&pointer).and_then(serde_json::Value::as_object_mut);
        object.expect("the tampered object").insert(UNKNOWN_KEY.into(), serde_json::Value::Bool(true));
        let mut bytes = serde_json::to_vec_pretty(&value).unwrap();
        bytes.push(b'\n');
        std::fs::write(&j.manifest_path, &bytes).unwrap();
        std::fs::write(pins::pin_path(&j.manifest_path), pins::pin_text(&j.manifest_path, &bytes)).unwrap();
        j.manifest_sha256 = Sha256Digest::of_bytes(&bytes);
    });
    Tamper {
        name,
        field: "manifest_path".into(),
        says: Some(format!("unknown field `{UNKNOWN_KEY}`")),
        manifest: Box::new(|_, _| {}),
        job,
    }
}

/// `key` as one token of a JSON pointer.
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The tampers of `set`'s fixture: `source` is one of its pinned worker files, `missing` a pinned
/// name that does not exist.
fn tampers(repo: &Path, case: &str, prompt: &str, set: &Adapter, source: &str, missing: &str) -> Vec<Tamper> {
    let fixture_dir = repo.join(FIXTURE_DIR);
    let set_name = set.as_str().to_owned();
    let case = case.to_owned();
    let prompt = prompt.to_owned();
    let stock_file = source.to_owned();
    let missing = missing.to_owned();
    let none_m = || -> ManifestEdit { Box::new(|_, _| {}) };
    let none_j = || -> JobEdit { Box::new(|_, _| {}) };
    let flip = |d: &mut Sha256Digest| {
        let mut hex = d.to_hex();
        let c = if hex.starts_with('0') { "1" } else { "0" };
        hex.replace_range(0..1, c);
        *d = hex.parse().unwrap();
    };
    let case_q = format!("cases[{case:?}]");
    let mut out = vec![
        Tamper {
            name: "job schema version",
            field: "schema_version".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(|j, _| j.schema_version = 2),
        },
        Tamper {
            name: "job for the other adapter",
            field: "adapter".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(|j, _| {
                j.adapter = if j.adapter == Adapter::Stock { Adapter::Controlled } else { Adapter::Stock }
            }),
        },
        Tamper {
            name: "run-policy value differs from the manifest",
            field: "run_policy.measured_requests".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(|j, _| j.run_policy.measured_requests += 1),
        },
        // A built-in worker knows its own checkout; a declared one only that `repo_root` must
        // be an existing absolute folder (the launcher's repository; req/protocol.md §3).
        if set.is_built_in() {
            Tamper {
                name: "repo_root names another checkout",
                field: "repo_root".into(),
                says: None,
                manifest: none_m(),
                job: Box::new(|j, root| j.repo_root = root.to_owned()),
            }
        } else {
            Tamper {
                name: "repo_root names no folder",
                field: "repo_root".into(),
                says: None,
                manifest: none_m(),
                job: Box::new(|j, root| j.repo_root = root.join("no-such-checkout")),
            }
        },
        Tamper {
            name: "manifest digest in the job is wrong",
            field: "manifest_sha256".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(move |j, _| flip(&mut j.manifest_sha256)),
        },
        Tamper {
            name: "manifest edited without re-pinning",
            field: "manifest_sha256".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(|j, _| {
                // The job follows the edited bytes; the pin beside the manifest does not.
                let mut text = std::fs::read_to_string(&j.manifest_path).unwrap();
                text.push(' ');
                std::fs::write(&j.manifest_path, &text).unwrap();
                j.manifest_sha256 = Sha256Digest::of_bytes(text.as_bytes());
            }),
        },
        Tamper {
            name: "prompt id changed",
            field: "prompt_ids".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(|j, _| j.prompt_ids[0] += 1),
        },
        Tamper {
            name: "prompt digest changed",
            field: "prompt_sha256".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(move |j, _| flip(&mut j.prompt_sha256)),
        },
        Tamper {
            name: "stop set differs from the case's",
            field: "stop_ids".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(|j, _| j.stop_ids = vec![510, 511]),
        },
        Tamper {
            name: "continuation in headline mode",
            field: "continuation".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(|j, _| j.continuation = Some(vec![1; 32])),
        },
        Tamper {
            name: "worker source byte changed",
            field: format!("worker_sources.{set_name}[{stock_file:?}]"),
            says: None,
            manifest: Box::new({
                let (f, set) = (stock_file.clone(), set.to_owned());
                move |m, _| flip(source_set(m, &set).get_mut(&f).expect("a pinned source"))
            }),
            job: none_j(),
        },
        Tamper {
            name: "worker file added (not pinned)",
            field: format!("worker_sources.{set_name}"),
            says: None,
            manifest: Box::new({
                let (f, set) = (stock_file.clone(), set.to_owned());
                move |m, _| {
                    source_set(m, &set).remove(&f);
                }
            }),
            job: none_j(),
        },
        Tamper {
            name: "worker file removed (pinned, missing)",
            field: format!("worker_sources.{set_name}[{missing:?}]"),
            says: None,
            manifest: Box::new({
                let set = set.to_owned();
                move |m, _| {
                    source_set(m, &set).insert(missing.clone(), Sha256Digest::of_bytes(b"gone"));
                }
            }),
            job: none_j(),
        },
        Tamper {
            name: "stray model-extra.safetensors beside the case",
            field: format!("{case_q}.files"),
            says: None,
            manifest: Box::new({
                let (case, fixture) = (case.clone(), fixture_dir.clone());
                move |m, root| {
                    let dir = copy_fixture(&fixture, m, root, &case);
                    std::fs::write(dir.join("model-extra.safetensors"), b"stray").unwrap();
                }
            }),
            job: Box::new(|j, root| j.model_dir = root.join("artifact")),
        },
        Tamper {
            name: "artifact byte flipped",
            field: format!("{case_q}.files[\"config.json\"]"),
            says: None,
            manifest: Box::new({
                let (case, fixture) = (case.clone(), fixture_dir.clone());
                move |m, root| {
                    let dir = copy_fixture(&fixture, m, root, &case);
                    let mut bytes = std::fs::read(dir.join("config.json")).unwrap();
                    bytes[0] ^= 1;
                    std::fs::write(dir.join("config.json"), bytes).unwrap();
                }
            }),
            job: Box::new(|j, root| j.model_dir = root.join("artifact")),
        },
        Tamper {
            name: "case path escapes the repository",
            field: format!("{case_q}.path"),
            says: None,
            manifest: Box::new({
                let case = case.clone();
                move |m, _| m.cases.get_mut(&case).unwrap().path = PathBuf::from("../outside")
            }),
            job: none_j(),
        },
        Tamper {
            name: "cell not in the manifest",
            field: "cells".into(),
            says: None,
            manifest: Box::new(|m, _| m.cells.retain(|c| c.mode != Mode::Headline)),
            job: none_j(),
        },
        Tamper {
            name: "lock file edited (its pin differs)",
            field: "environment.lock_sha256".into(),
            says: None,
            manifest: Box::new(move |m, _| flip(&mut m.environment.lock_sha256)),
            job: Box::new(move |j, _| flip(&mut j.environment.lock_sha256)),
        },
        Tamper {
            name: "installed mlx_lm file edited (the freeze differs)",
            field: "environment.mlx_lm_freeze_sha256".into(),
            says: None,
            manifest: Box::new(move |m, _| flip(&mut m.environment.mlx_lm_freeze_sha256)),
            job: Box::new(move |j, _| flip(&mut j.environment.mlx_lm_freeze_sha256)),
        },
        Tamper {
            name: "libmlx differs from its pin",
            field: "environment.libmlx_sha256".into(),
            says: None,
            manifest: Box::new(move |m, _| flip(&mut m.environment.libmlx_sha256)),
            job: Box::new(move |j, _| flip(&mut j.environment.libmlx_sha256)),
        },
        Tamper {
            name: "mlx version differs from its pin",
            field: "environment.mlx_version".into(),
            says: None,
            manifest: Box::new(|m, _| m.environment.mlx_version = "0.0.1".into()),
            job: Box::new(|j, _| j.environment.mlx_version = "0.0.1".into()),
        },
        Tamper {
            name: "job environment differs from the manifest's",
            field: "environment.mlx_lm_version".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(|j, _| j.environment.mlx_lm_version = "0.0.1".into()),
        },
        Tamper {
            name: "prompt's continuation digest wrong (manifest re-pinned)",
            field: format!("prompts[{prompt:?}].continuation_sha256"),
            says: None,
            manifest: Box::new({
                let prompt = prompt.clone();
                move |m, _| flip(&mut m.prompts.get_mut(&prompt).expect("the fixture prompt").continuation_sha256)
            }),
            job: none_j(),
        },
        unknown_key("unknown key inside a case", format!("/cases/{}", pointer_token(&case))),
        unknown_key("unknown key inside a prompt", format!("/prompts/{}", pointer_token(&prompt))),
        unknown_key("unknown key inside the run policy", "/run_policy".into()),
        Tamper {
            name: "prompt of another name",
            field: "prompt_id".into(),
            says: None,
            manifest: none_m(),
            job: Box::new(move |j, _| j.prompt_id = format!("{prompt}-other")),
        },
    ];
    // A declared adapter that names an environment of its own runs only in it: the session's
    // selection (here the default) is refused (req/protocol.md §3).
    if let Adapter::Declared(name) = set {
        let name = name.as_str().to_owned();
        out.push(Tamper {
            name: "its adapter declares another environment than the selected one",
            field: format!("adapters.{name}.environment"),
            says: None,
            manifest: Box::new(move |m, _| {
                let mut other = m.environment.clone();
                other.mlx_version = "0.0.1".into();
                m.environments.insert("conformance-other".into(), other);
                m.adapters.get_mut(&name).expect("the set is declared").environment = Some("conformance-other".into());
            }),
            job: none_j(),
        });
    }
    out
}

/// Every tamper against the worker, each in its own folder: each must exit 1 with a failed
/// report whose error starts `validation failed: <field>`.
pub fn validation_failures_name_the_field(suite: &Suite) -> Outcome {
    let adapter = &suite.target.adapter;
    let Some(source) = suite.source.sources.get(adapter).and_then(|files| files.keys().next().cloned()) else {
        return Err(Failure::new(format!("no worker sources pinned for {}", adapter.as_str())));
    };
    // A pinned name beside a real one that no file has.
    let missing = match source.rsplit_once('/') {
        Some((folder, _)) => format!("{folder}/conformance-removed"),
        None => "conformance-removed".to_owned(),
    };
    let probe = suite.fixture(&suite.folder("tamper-probe")?, &test_policy(), |_| {})?;
    let mut failures = Vec::new();
    for tamper in tampers(&suite.source.repo, &probe.case_id, &probe.prompt_id, adapter, &source, &missing) {
        if let Some(why) = refused_naming_the_field(suite, &tamper)? {
            failures.push(format!("{}: {why}", tamper.name));
        }
    }
    if failures.is_empty() {
        return Ok(());
    }
    Err(Failure::new(format!("{} tamper(s) not refused as expected: {}", failures.len(), failures.join("; "))))
}

/// Runs the worker on `tamper`'s job; `None` when it was refused naming the field.
fn refused_naming_the_field(suite: &Suite, tamper: &Tamper) -> Result<Option<String>, Failure> {
    let root = suite.folder("tamper")?;
    let out = root.join("out");
    std::fs::create_dir(&out)?;
    let fixture = suite.fixture(&root, &test_policy(), |m| (tamper.manifest)(m, &root))?;
    let mut job = fixture_job(&fixture, &suite.target.adapter, Mode::Headline, "conformance/tamper/worker-0");
    (tamper.job)(&mut job, &root);
    write_job(&out, &job)?;
    let finished = wait(suite.spawn_on(&out)?, RUN_BOUND)?;
    let expected = format!("validation failed: {}", tamper.field);
    let code = finished.code()?;
    if code != 1 {
        return Ok(Some(format!("exit {code} instead of 1; stderr: {}", tail(&finished.stderr))));
    }
    let report = std::fs::read(out.join(REPORT_FILE)).map(|b| serde_json::from_slice::<WorkerReport>(&b));
    Ok(match report {
        Ok(Ok(report)) => match report.error.as_deref() {
            Some(error)
                if error.starts_with(&expected)
                    && tamper.says.as_ref().is_none_or(|says| error.contains(says.as_str()))
                    && report.status == Status::Failed =>
            {
                None
            }
            other => {
                let says = tamper.says.as_ref().map(|s| format!(" and saying {s:?}")).unwrap_or_default();
                Some(format!("expected an error starting {expected:?}{says}, found {other:?}"))
            }
        },
        Ok(Err(err)) => Some(format!("{REPORT_FILE} does not parse: {err}")),
        Err(err) => Some(format!("no {REPORT_FILE}: {err}")),
    })
}
