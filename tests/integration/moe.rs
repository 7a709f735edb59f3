//! A 4-bit mixture-of-experts model written by mlx_lm's own classes
//! (`tools/fixture/make_tiny_moe.py`: Qwen3-MoE, float32 before quantizing) decodes in the stock
//! worker on the pinned MLX. Its experts are `QuantizedSwitchLinear`, whose every call passes
//! `global_scale` to `mx.gather_qmm`; MLX before 0.32.3 refuses that argument, so this test fails
//! on such a pin (`req/findings.md` records that failure).

use std::process::Stdio;

use decode_baseline_pins as pins;
use decode_baseline_wire::{
    manifest::Case,
    outdir::REPORT_FILE,
    report::{Status, WorkerReport},
    Mode, RunPolicy,
};

use crate::util::{self, Worker};

#[test]
fn a_4bit_qwen3_moe_decodes_in_the_stock_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("tiny-qwen3-moe-q4");
    let written = std::process::Command::new(util::venv_python())
        .arg(util::repo_root().join("tools/fixture/make_tiny_moe.py"))
        .arg("--out")
        .arg(&model)
        .output()
        .expect("run make_tiny_moe.py");
    assert!(written.status.success(), "make_tiny_moe.py failed: {}", util::stderr(&written));
    let config: serde_json::Value = serde_json::from_slice(&std::fs::read(model.join("config.json")).unwrap()).unwrap();
    assert_eq!((config["model_type"].as_str(), config["quantization"]["bits"].as_u64()), (Some("qwen3_moe"), Some(4)));

    let policy = RunPolicy { first_requests: 1, warmup_requests: 1, measured_requests: 1, ..RunPolicy::frozen() };
    let fixture = util::fixture_manifest(tmp.path(), &policy, |manifest| {
        let case = manifest.cases.values_mut().next().expect("the fixture case");
        *case = Case {
            path: model.clone(),
            architecture: "qwen3_moe".into(),
            dtype: "float32".into(),
            files: pins::case_files(&model).expect("hash the model"),
            stop_ids: vec![511],
        };
    });
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let job = util::fixture_job(&fixture, Worker::Stock.adapter(), Mode::ReferencePair, "moe/stock/worker-0");
    std::fs::write(out.join("job.json"), serde_json::to_vec_pretty(&job).unwrap()).unwrap();

    let run = util::run(Worker::Stock.command(&out).stdin(Stdio::null()));
    let report: WorkerReport = serde_json::from_slice(&std::fs::read(out.join(REPORT_FILE)).expect("report.json"))
        .unwrap_or_else(|err| panic!("report.json: {err}\nstderr: {}", util::stderr(&run)));
    assert_eq!(
        report.status,
        Status::Ok,
        "stock worker on the MoE model: {:?}\nstderr: {}",
        report.error,
        util::stderr(&run)
    );
    assert_eq!(run.status.code(), Some(0));
    let [request] = report.requests.as_slice() else {
        panic!("one reference-pair request, got {}", report.requests.len())
    };
    // The first token and one per decode step: every generated token went through gather_qmm.
    assert_eq!(1 + request.steps.len() as u32, policy.max_new_tokens, "tokens generated");
    let identity = report.identity.expect("identity");
    assert_eq!(identity.mlx_version, pins::selected_pins(&fixture.manifest).unwrap().mlx_version);
}
