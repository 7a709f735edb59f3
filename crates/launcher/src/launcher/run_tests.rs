//! The session from prepare to finish with in-process stand-ins for the worker processes
//! (`run.rs`, `prepare.rs`, `groups.rs`, `finish.rs`).

use std::{os::unix::process::ExitStatusExt, path::Path, process::ExitStatus, time::Duration};

use crate::launcher::supervise::Intervention;

use decode_baseline_wire::{
    marker::Marker,
    outdir::{CLAIM_FILE, REPORT_FILE},
    report::{Identity, Phase, RequestRecord, Status, StepRecord, WorkerReport},
    session::{SessionReport, SessionStatus},
    Adapter, ExitCode, Mode, REPORT_SCHEMA_VERSION,
};

use super::{
    events::{Event, Observer},
    execute::{Execution, Prepared},
    finish::finish,
    groups::execute,
    prepare::{prepare, Session},
    session_job::{self, repo_root},
    session_options::SessionOptions,
    signals::Interrupts,
    supervise::{self, Limits},
};
use crate::{energy, export::Exporter};

/// An in-process stand-in for the worker processes: each member leaves its claim and a
/// report of the given status, as a worker of its job would, and "exits" accordingly.
struct FakeWorkers {
    status: Status,
    code_version: String,
    manifest: decode_baseline_wire::manifest::Manifest,
}

impl FakeWorkers {
    fn report(&self, p: &Prepared, pid: u32) -> WorkerReport {
        let job = &p.job;
        let pins = &job.environment;
        let steps_per_request = match job.mode {
            Mode::FixedContinuation => job.run_policy.fixed_continuation_steps,
            Mode::Headline | Mode::ReferencePair => job.run_policy.max_new_tokens - 1,
        };
        let prompt_len = job.prompt_ids.len() as u32;
        let plan: Vec<Option<Phase>> = job.run_policy.request_plan(job.mode);
        let requests = if self.status == Status::Ok { plan } else { Vec::new() };
        let requests = requests
            .into_iter()
            .enumerate()
            .map(|(index, phase)| RequestRecord {
                index: index as u32,
                phase,
                prompt_len,
                prefill_dur_ns: 1_000,
                first_token_ns: 1_000,
                first_token: 1,
                steps: (1..=steps_per_request)
                    .map(|s| StepRecord {
                        position: prompt_len + s,
                        argmax: 1,
                        // Step times that differ a little, as measured ones do.
                        t_ns: 1_000 + u64::from(s) * 500 + u64::from(s % 3),
                        dur_ns: 500,
                        build_ns: None,
                        eval_ns: None,
                        margin: (job.mode != Mode::Headline).then_some(1.0),
                        tie: (job.mode != Mode::Headline).then_some(false),
                    })
                    .collect(),
                unused_forwards: 0,
                model_calls: steps_per_request + 1,
                peak_memory_bytes: Some(1),
                finish_reason: "length".into(),
            })
            .collect();
        WorkerReport {
            schema_version: REPORT_SCHEMA_VERSION,
            run_id: job.run_id.clone(),
            adapter: job.adapter.clone(),
            mode: job.mode,
            case_id: job.case_id.clone(),
            prompt_id: job.prompt_id.clone(),
            status: self.status,
            exit_code: self.status.exit_code().code(),
            error: (self.status != Status::Ok).then(|| "validation failed: model_dir: fake refusal".to_owned()),
            pid,
            claimed_utc: "2026-12-01T00:00:00.000000Z".into(),
            finished_utc: "2026-12-01T00:00:01.000000Z".into(),
            start_to_ready_ns: Some(1),
            load_ns: Some(1),
            identity: Some(Identity {
                manifest_sha256: job.manifest_sha256,
                code_version: self.code_version.clone(),
                worker_sources_sha256: self.manifest.worker_sources_sha256(&job.adapter),
                lock_sha256: pins.lock_sha256,
                mlx_version: pins.mlx_version.clone(),
                mlx_lm_version: pins.mlx_lm_version.clone(),
                mlx_lm_freeze_sha256: pins.mlx_lm_freeze_sha256,
                libmlx_path: "/fake/libmlx.so".into(),
                libmlx_sha256: pins.libmlx_sha256,
                device: job.device,
                backend: Some(pins.backend()),
                device_info: Default::default(),
            }),
            test_slowdown_us: None,
            group: None,
            requests,
        }
    }
}

impl Execution for FakeWorkers {
    fn run_group(
        &mut self,
        members: &[Prepared],
        _: Limits,
        _: &Interrupts,
        observer: &dyn Observer,
        energy: &mut energy::GroupRecorder<'_>,
    ) -> anyhow::Result<Vec<supervise::Outcome>> {
        // An interleaved group goes through the gate as `interleave` drives it: each
        // request granted in turn and seen done 2 ms later.
        if members[0].job.gate {
            let requests: Vec<u32> = members.iter().map(|p| p.requests()).collect();
            let order = crate::launcher::interleave::grant_order(&requests, true);
            for (m, k) in order {
                energy.before_grant(m, k);
                std::thread::sleep(Duration::from_millis(2));
                energy.done(m, k);
            }
        }
        let mut outcomes = Vec::new();
        for p in members {
            let pid = 40_000 + p.sequence;
            let claim = Marker { utc: "2026-12-01T00:00:00.000000Z".into(), pid };
            std::fs::write(p.out_dir.join(CLAIM_FILE), serde_json::to_vec(&claim)?)?;
            let report = self.report(p, pid);
            std::fs::write(p.out_dir.join(REPORT_FILE), serde_json::to_vec_pretty(&report)?)?;
            observer.on(Event::Requests(u64::from(p.requests())));
            outcomes.push(supervise::Outcome {
                pid,
                status: ExitStatus::from_raw(report.exit_code << 8),
                intervention: Intervention::None,
                sent: None,
                wall: Duration::from_millis(3),
                cpus: Some("0".to_owned()),
                ranks: Vec::new(),
            });
        }
        Ok(outcomes)
    }
}

/// A session of the repository's manifest, prepared (folders and worker jobs) in a temp
/// folder without the host lease, and a fake for its workers.
fn prepared_session(root: &Path, status: Status) -> (Session, FakeWorkers) {
    prepared_session_in_order(root, status, "fixed")
}

fn prepared_session_in_order(root: &Path, status: Status, order: &str) -> (Session, FakeWorkers) {
    prepared_session_with(root, status, order, false)
}

/// As [`prepared_session_in_order`], with `energy` telling `prepare` whether an energy
/// source is active.
fn prepared_session_with(root: &Path, status: Status, order: &str, energy: bool) -> (Session, FakeWorkers) {
    let job = serde_json::json!({
        "schema_version": decode_baseline_wire::session::SESSION_JOB_SCHEMA_VERSION,
        "manifest": repo_root().join("workloads.json"),
        "cells": ["tiny-qwen3.tiny-qwen3-L16.headline", "tiny-qwen3.tiny-qwen3-L16.reference_pair"],
        "adapters": ["stock", "controlled"],
        "reference": "stock",
        "output_root": root.join("out"),
        "repetitions": 1,
        "order": order,
        "aa_pair": false
    });
    let job_path = root.join("job.json");
    std::fs::write(&job_path, job.to_string()).unwrap();
    let resolved = session_job::load(&job_path).unwrap();
    // Prepared as a dry run prepares it: no lease, no launcher marker.
    let options = SessionOptions { no_wait: true, dry_run: true, ..SessionOptions::default() };
    let session = prepare(resolved, &options, energy, &Silent).unwrap_or_else(|err| panic!("prepare refused: {err:#}"));
    let fake = FakeWorkers {
        status,
        code_version: decode_baseline_pins::code_version(&session.repo),
        manifest: session.loaded.manifest.clone(),
    };
    (session, fake)
}

/// Hears nothing.
struct Silent;

impl Observer for Silent {
    fn on(&self, _: Event<'_>) {}
}

/// Writes down every event, as text.
#[derive(Default)]
struct Recording(std::cell::RefCell<Vec<String>>);

impl Observer for Recording {
    fn on(&self, event: Event<'_>) {
        let line = match event {
            // The times vary from run to run; what ended and its requests do not.
            Event::GroupDone { cell, members, requests, .. } => format!("GroupDone {cell} {members} {requests}"),
            other => format!("{other:?}"),
        };
        self.0.borrow_mut().push(line);
    }
}

/// A meter with no source, as on this project's machines.
fn no_energy() -> energy::Meter {
    energy::Meter::new(
        Vec::new(),
        vec![energy::MissingSource {
            source: "nvml",
            why: energy::Missing::NoDriver { library: energy::NVML_LIBRARY.into() },
        }],
        None,
    )
}

/// A meter with the fake source of `spec` (`DECODE_BASELINE_FAKE_ENERGY`'s syntax).
fn fake_meter(spec: &str) -> energy::Meter {
    energy::Meter::new(
        vec![Box::new(energy::FakeSource::from_spec(energy::FakeSpec::parse(spec).unwrap()))],
        Vec::new(),
        Some(spec.into()),
    )
}

/// `run`'s summary table of a session written by these tests.
fn table_of(report: &SessionReport) -> String {
    let view = crate::report::SessionView::new(report, Path::new("."), None, true).unwrap();
    crate::report::Table.export(&view).unwrap()
}

#[test]
fn an_interleaved_session_with_the_fake_source_records_energy_and_marks_it_fake() {
    let tmp = tempfile::tempdir().unwrap();
    let (session, mut fake) = prepared_session_in_order(tmp.path(), Status::Ok, "interleaved");
    let dir = session.dir.clone();
    let spec = "watts=120,throttle_every=5";
    let mut meter = fake_meter(spec);
    let executed = execute(&session, 0, &mut fake, &mut meter, &Silent).unwrap();
    assert_eq!(finish(session, executed, None, &Silent).unwrap().code, ExitCode::Ok);
    let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
    let (_, warnings) = crate::report::publish(&report, &dir);
    assert!(warnings.is_empty(), "{warnings:?}");
    let record = report.energy.as_ref().expect("an energy record");
    assert_eq!(record.fake.as_deref(), Some(spec));
    assert_eq!(record.idle.len(), 2, "one idle reading per interleaved group");
    for w in &report.workers {
        let requests = w.report.as_ref().unwrap().requests.len();
        assert_eq!(w.energy.as_ref().map(Vec::len), Some(requests), "{}", w.run_id);
    }
    let headline = record.cells.iter().find(|c| c.cell.ends_with(".headline")).expect("the headline cell");
    let domain = &headline.domains[0];
    assert_eq!(domain.domain, "fake:0");
    assert!(domain.adapters.contains_key(&Adapter::Stock) && domain.adapters.contains_key(&Adapter::Controlled));
    let paired = &domain.paired[&Adapter::Controlled];
    assert!(paired.throttled_pairs > 0, "every fifth reading is throttled: {paired:?}");
    let table = table_of(&report);
    assert!(table.contains("energy: FAKE source (DECODE_BASELINE_FAKE_ENERGY=watts=120,throttle_every=5)"), "{table}");
    assert!(table.contains("controlled/stock energy paired (fake:0)"), "{table}");
    let page = std::fs::read_to_string(dir.join(crate::report::PAGE)).unwrap();
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(&page, options).expect("the page is well-formed XML");
    let section = doc.descendants().find(|n| n.attribute("id") == Some("energy")).expect("an energy section");
    assert!(section.descendants().any(|n| n.attribute("id") == Some("energy-table")));
    // The energy figure is a file of the session folder and on the page, as every figure is:
    // one per cell and domain of the analysis, here the headline cell (the reference-pair
    // cell has one request per worker, too few for a summary).
    let analysed: Vec<String> = record
        .cells
        .iter()
        .flat_map(|c| c.domains.iter().map(|d| format!("{}.energy-{}", c.cell, d.domain.replace(':', "-"))))
        .collect();
    assert_eq!(analysed, ["tiny-qwen3.tiny-qwen3-L16.headline.energy-fake-0"]);
    let svg = std::fs::read_to_string(dir.join(format!("{}.svg", analysed[0]))).expect("the energy figure's file");
    assert!(svg.contains("energy per token against time per token, fake:0 FAKE"), "the figure says it is fake");
    assert!(doc.descendants().any(|n| n.attribute("data-figure") == Some(analysed[0].as_str())));
    let csv = std::fs::read_to_string(dir.join(energy::CSV_FILE)).unwrap();
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",true")), "{csv}");
}

#[test]
fn a_sequential_session_with_an_energy_source_gates_each_worker_and_tests_energy_unpaired() {
    let tmp = tempfile::tempdir().unwrap();
    let (session, mut fake) = prepared_session_with(tmp.path(), Status::Ok, "alternate", true);
    assert!(session.prepared.iter().all(|p| p.job.gate), "every lone worker goes through the gate");
    let dir = session.dir.clone();
    let mut meter = fake_meter("watts=120");
    let executed = execute(&session, 0, &mut fake, &mut meter, &Silent).unwrap();
    assert_eq!(finish(session, executed, None, &Silent).unwrap().code, ExitCode::Ok);
    let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
    let record = report.energy.as_ref().expect("an energy record");
    assert_eq!(record.idle.len(), report.workers.len(), "one idle reading before each lone worker");
    for w in &report.workers {
        let requests = w.report.as_ref().unwrap().requests.len();
        assert_eq!(w.energy.as_ref().map(Vec::len), Some(requests), "{}", w.run_id);
    }
    let headline = record.cells.iter().find(|c| c.cell.ends_with(".headline")).expect("the headline cell");
    let paired = &headline.domains[0].paired[&Adapter::Controlled];
    let ratio = paired.all.expect("a two-sample ratio");
    // The fake draws the same power for both and each fake request takes about as long:
    // joules per token about equal; the requests of both, not pairs, are counted.
    assert!(ratio.lower < ratio.ratio && ratio.ratio < ratio.upper, "{ratio:?}");
    let measured: usize = report
        .workers
        .iter()
        .filter(|w| w.cell.ends_with(".headline"))
        .flat_map(|w| &w.report.as_ref().unwrap().requests)
        .filter(|q| matches!(q.phase, Some(decode_baseline_wire::report::Phase::Measured) | None))
        .count();
    assert_eq!(paired.pairs, measured, "{paired:?}");
    let table = table_of(&report);
    assert!(table.contains("controlled/stock energy"), "{table}");
}

/// The engine tells its progress as events and prints none of it: per group its start, each
/// request done, its end; the groups' end once; and the profile note at the end. The requests
/// told add up to the session's, the groups to the schedule's.
#[test]
fn a_session_tells_its_progress_as_events_in_the_order_it_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (session, mut fake) = prepared_session_in_order(tmp.path(), Status::Ok, "interleaved");
    let groups = session.schedule.groups().len();
    let requests: u64 = session.prepared.iter().map(|p| u64::from(p.requests())).sum();
    let heard = Recording::default();
    let executed = execute(&session, 0, &mut fake, &mut no_energy(), &heard).unwrap();
    assert_eq!(finish(session, executed, None, &heard).unwrap().code, ExitCode::Ok);
    let heard = heard.0.into_inner();
    assert_eq!(heard[0], format!("Started {{ groups: {groups}, requests: {requests} }}"), "{heard:#?}");
    let started: Vec<usize> = (0..heard.len()).filter(|&i| heard[i].starts_with("GroupStarted")).collect();
    let done: Vec<usize> = (0..heard.len()).filter(|&i| heard[i].starts_with("GroupDone")).collect();
    assert_eq!((started.len(), done.len()), (groups, groups), "{heard:#?}");
    for (s, d) in started.iter().zip(&done) {
        assert!(s < d && heard[s + 1..*d].iter().all(|e| e.starts_with("Requests(")), "{heard:#?}");
        // `GroupStarted { cell: "<cell>", members: "<a> + <b>" }`: the same group ends.
        let quoted: Vec<&str> = heard[*s].split('"').collect();
        assert!(heard[*d].starts_with(&format!("GroupDone {} {} ", quoted[1], quoted[3])), "{heard:#?}");
    }
    let told: u64 =
        heard.iter().filter_map(|e| e.strip_prefix("Requests(")?.strip_suffix(')')?.parse::<u64>().ok()).sum();
    assert_eq!(told, requests, "{heard:#?}");
    let end = heard.iter().position(|e| e == "GroupsDone").expect("the groups' end");
    assert_eq!(end, done[groups - 1] + 1, "{heard:#?}");
    assert!(heard[end + 1..].iter().all(|e| e.starts_with("Detail(")), "only details after the groups: {heard:#?}");
}

#[test]
fn without_quiet_wait_nothing_is_counted_as_waiting_and_no_waited_line_is_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let (session, mut fake) = prepared_session_in_order(tmp.path(), Status::Ok, "interleaved");
    let dir = session.dir.clone();
    let executed = execute(&session, 0, &mut fake, &mut no_energy(), &Silent).unwrap();
    assert_eq!(executed.quiet_wait, std::time::Duration::ZERO);
    assert_eq!(finish(session, executed, None, &Silent).unwrap().code, ExitCode::Ok);
    let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
    assert_eq!(report.quiet_wait_ns, Some(0));
    let table = table_of(&report);
    assert!(!table.contains("quiet host"), "{table}");
}

#[test]
fn a_session_without_a_source_says_why_once_and_shows_no_energy_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let (session, mut fake) = prepared_session_in_order(tmp.path(), Status::Ok, "interleaved");
    let dir = session.dir.clone();
    let executed = execute(&session, 0, &mut fake, &mut no_energy(), &Silent).unwrap();
    assert_eq!(finish(session, executed, None, &Silent).unwrap().code, ExitCode::Ok);
    let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
    assert!(report.workers.iter().all(|w| w.energy.is_none()));
    let table = table_of(&report);
    let lines: Vec<&str> = table.lines().filter(|l| l.starts_with("energy")).collect();
    assert_eq!(lines, ["energy: no source: nvml missing (no NVIDIA driver: libnvidia-ml.so.1 not found)"], "{table}");
    assert!(!table.contains("J/token"), "{table}");
    assert!(!dir.join(energy::CSV_FILE).exists());
}

#[test]
fn a_session_of_fake_workers_is_validated_analysed_and_recorded_ok() {
    let tmp = tempfile::tempdir().unwrap();
    let (session, mut fake) = prepared_session(tmp.path(), Status::Ok);
    assert_eq!(session.prepared.len(), 4, "two cells, two adapters");
    let dir = session.dir.clone();
    let executed = execute(&session, 0, &mut fake, &mut no_energy(), &Silent).unwrap();
    assert!(executed.problems.is_empty(), "{:?}", executed.problems);
    assert_eq!(finish(session, executed, None, &Silent).unwrap().code, ExitCode::Ok);

    let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
    assert_eq!(report.status, SessionStatus::Ok, "{:?}", report.problems);
    assert_eq!(report.workers.len(), 4);
    assert!(report.workers.iter().all(|w| w.validation_errors.is_empty() && w.exit_code == Some(0)));
    let analysis = report.analysis.as_ref().expect("an analysis");
    let headline = analysis.cells.iter().find(|c| c.cell == "tiny-qwen3.tiny-qwen3-L16.headline").expect("headline");
    // Both fake adapters take 500 ns a step: the medians are 500 ns and the ratio is 1.
    for adapter in [Adapter::Controlled, Adapter::Stock] {
        assert_eq!(headline.adapters[&adapter].per_token_ns.median, 500.0, "{adapter:?}");
    }
    let (_, ratio) = headline.ratio_to_reference(&Adapter::Controlled).expect("controlled against stock");
    assert!((ratio.ratio - 1.0).abs() < 1e-12, "{ratio:?}");
    assert!(ratio.ci.lower <= 1.0 && 1.0 <= ratio.ci.upper, "{ratio:?}");
    // The engine writes the record; the page and the figures are views of it, published after.
    assert!(!dir.join(crate::report::PAGE).exists());
    let (_, warnings) = crate::report::publish(&report, &dir);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(dir.join(crate::report::PAGE).is_file());
}

#[test]
fn a_session_whose_fake_workers_fail_is_worker_failed_with_exit_5() {
    let tmp = tempfile::tempdir().unwrap();
    let (session, mut fake) = prepared_session(tmp.path(), Status::Failed);
    let dir = session.dir.clone();
    let executed = execute(&session, 0, &mut fake, &mut no_energy(), &Silent).unwrap();
    assert_eq!(finish(session, executed, None, &Silent).unwrap().code, ExitCode::WorkerFailed);
    let report: SessionReport = serde_json::from_slice(&std::fs::read(dir.join("session.json")).unwrap()).unwrap();
    assert_eq!(report.status, SessionStatus::WorkerFailed);
    assert!(
        report.problems.iter().any(|p| p.contains("worker ended Failed: validation failed: model_dir")),
        "{:?}",
        report.problems
    );
}
