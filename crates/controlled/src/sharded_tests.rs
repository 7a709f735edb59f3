//! Tensor parallelism held against mlx_lm's own: a model sharded across the two ranks of a
//! ring group on loopback, by mlx_lm's `sharded_load` in two Python processes
//! (`tools/fixture/sharded_logits.py`) and by the controlled worker (its driver's `join_group`
//! and `load`) in two processes of this test binary ([`rank_process`]).
//!
//! On each rank, the logits at the prompt (the controlled structure: the head on the last
//! position) and after every token of the fixed continuation equal mlx_lm's on the same rank
//! bit for bit, the two ranks' equal each other, and the rank's layer-0 projections are mlx_lm's
//! shard of them bit for bit. The last check is the one that sees which part a rank keeps: with
//! two ranks, swapping the parts would leave the logits as they are, since the two partial
//! products add in either order to the same bits.
//!
//! Against the one-process model (the unsharded load) the logits need not be identical (the
//! sharded products sum in another order); their argmax agreement and largest difference are
//! printed. Refusals at validation are tested on the configs alone.

use std::collections::HashMap;
use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use decode_baseline_wire::group::{GroupBackend, RankJob, HOSTFILE_ENV, RANK_ENV};
use decode_baseline_wire::job::EnvironmentPins;
use decode_baseline_wire::{Adapter, DeviceKind, Mode, RunPolicy, Sha256Digest, WorkerJob, WORKER_JOB_SCHEMA_VERSION};
use decode_baseline_worker_runtime::Driver;
use mlx_rs::ops::indexing::argmax_axis;
use mlx_rs::Array;

use crate::config::ModelConfig;
use crate::decode::{prefill_prompt, run_fixed, Options, PREFILL_STEP_SIZE};
use crate::model::{LayerCache, Model};
use crate::reference_tests::{continuation, make_tiny, repo, row, PROMPT};
use crate::worker::{check_group, ControlledDriver, COMPILED};

const RANKS: u32 = 2;
/// A group's time to finish: a rank whose peer died waits for it without end.
const DEADLINE: Duration = Duration::from_secs(180);
/// Set (to a [`RankTask`]'s JSON) in the environment of the processes [`rank_process`] runs in.
const TASK_ENV: &str = "DECODE_BASELINE_SHARDED_TEST_RANK";

/// What one controlled rank process does: the same as `sharded_logits.py` with these arguments.
#[derive(serde::Serialize, serde::Deserialize)]
struct RankTask {
    model_dir: PathBuf,
    prompt: Vec<u32>,
    continuation: Vec<u32>,
    out: PathBuf,
}

/// One rank of a controlled group, run only as a process the tests below start (this test
/// binary, filtered to this test, with [`TASK_ENV`], `MLX_RANK` and `MLX_HOSTFILE` set): the
/// worker's driver joins the ring group and loads its shard, then writes what
/// `sharded_logits.py` writes, and `loop.json`: the argmax at each step of the controlled loop's
/// fixed-continuation request on the same model, the contract checked at every boundary.
#[test]
#[ignore = "a rank process of the sharded tests, which start it with DECODE_BASELINE_SHARDED_TEST_RANK set"]
fn rank_process() {
    let task = std::env::var(TASK_ENV)
        .unwrap_or_else(|_| panic!("{TASK_ENV} unset: this is a rank process the sharded tests start, not a test"));
    let task: RankTask = serde_json::from_str(&task).unwrap();
    let rank: u32 = std::env::var(RANK_ENV).unwrap().parse().unwrap();
    let hostfile = PathBuf::from(std::env::var(HOSTFILE_ENV).unwrap());
    crate::identity::set_default_device(DeviceKind::Cpu).unwrap();
    let group = RankJob { rank, ranks: RANKS, backend: GroupBackend::Ring, hostfile };
    let mut driver = ControlledDriver::new(repo(), Adapter::Controlled);
    let joined = driver.join_group(&group).unwrap_or_else(|e| panic!("{e}"));
    driver
        .load(&job(&task.model_dir, group))
        .unwrap_or_else(|e| panic!("{}", decode_baseline_worker_runtime::chain(&e)));
    let model = driver.model().unwrap();

    let logits = logits(model, &task.prompt, &task.continuation);
    let params: Vec<(String, &Array)> = model
        .projections(0)
        .into_iter()
        .flat_map(|(name, linear)| linear.parameters().into_iter().map(move |(p, a)| (format!("{name}.{p}"), a)))
        .collect();
    std::fs::create_dir_all(&task.out).unwrap();
    Array::save_safetensors(logits, None, task.out.join("logits.safetensors")).unwrap();
    Array::save_safetensors(params, None, task.out.join("params.safetensors")).unwrap();
    let identity = serde_json::json!({ "rank": joined.rank, "ranks": joined.ranks });
    std::fs::write(task.out.join("rank.json"), format!("{identity}\n")).unwrap();
    let checked = Options { check_contract: true, ..Options::default() };
    let run = run_fixed(model, &task.prompt, &task.continuation, checked, &mut |_| Ok::<(), ()>(())).unwrap();
    let argmax: Vec<u32> = run.record.steps.iter().map(|s| s.argmax).collect();
    std::fs::write(task.out.join("loop.json"), serde_json::to_string(&argmax).unwrap()).unwrap();
}

/// A job for the driver's `load`, which reads its `model_dir` and nothing else; the rest is
/// inert (validation, which reads it, is not run here).
fn job(model_dir: &Path, group: RankJob) -> WorkerJob {
    let digest = Sha256Digest::of_bytes(b"");
    WorkerJob {
        schema_version: WORKER_JOB_SCHEMA_VERSION,
        run_id: String::new(),
        adapter: Adapter::Controlled,
        mode: Mode::FixedContinuation,
        device: DeviceKind::Cpu,
        repo_root: repo(),
        manifest_path: PathBuf::new(),
        manifest_sha256: digest,
        case_id: String::new(),
        model_dir: model_dir.to_owned(),
        prompt_id: String::new(),
        prompt_ids: Vec::new(),
        prompt_sha256: digest,
        continuation: None,
        stop_ids: Vec::new(),
        run_policy: RunPolicy::frozen(),
        prefill_step_size: decode_baseline_wire::policy::PREFILL_STEP_SIZE,
        environment: EnvironmentPins {
            backend: None,
            lock_sha256: digest,
            mlx_version: String::new(),
            mlx_lm_version: String::new(),
            mlx_lm_freeze_sha256: digest,
            libmlx_sha256: digest,
        },
        gate: false,
        group: Some(group),
    }
}

/// The logits rows (`[vocab]`) in `sharded_logits.py`'s structure and names: `split_last` after
/// the loop's prefill, `fixed_K` after feeding continuation token K; every step evaluated with
/// the caches, as there.
fn logits(model: &Model, prompt: &[u32], continuation: &[u32]) -> Vec<(String, Array)> {
    let (mut cache, first) = prefill_prompt(model, prompt, PREFILL_STEP_SIZE).unwrap();
    let mut rows = Vec::new();
    rows.push(("split_last".to_owned(), evaluated(first, &cache)));
    for (k, &t) in continuation.iter().enumerate() {
        let step = model.forward(&Array::from_slice(&[t as i32], &[1, 1]), &mut cache).unwrap();
        rows.push((format!("fixed_{k}"), evaluated(step, &cache)));
    }
    rows
}

fn evaluated(logits: Array, cache: &[LayerCache]) -> Array {
    let row = logits.reshape(&[-1]).unwrap();
    mlx_rs::transforms::eval(cache.iter().flat_map(LayerCache::state).chain([&row])).unwrap();
    row
}

/// A ring host file for the ranks on loopback, `[["127.0.0.1:P0"], ["127.0.0.1:P1"]]`, on ports
/// nobody listens on now (the OS's choices for port 0, all held until all are chosen).
fn loopback_hostfile() -> String {
    let listeners: Vec<TcpListener> = (0..RANKS).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    let hosts: Vec<[String; 1]> =
        listeners.iter().map(|l| [format!("127.0.0.1:{}", l.local_addr().unwrap().port())]).collect();
    serde_json::to_string(&hosts).unwrap()
}

/// Runs both ranks of a group in `dir` (`command(rank)`, with `MLX_RANK` and a fresh ring host
/// file in `MLX_HOSTFILE`) and waits for both; past [`DEADLINE`] both are killed. Panics with
/// their output if either fails.
fn run_group(label: &str, dir: &Path, command: impl Fn(u32) -> Command) {
    std::fs::create_dir_all(dir).unwrap();
    let hostfile = dir.join("hostfile.json");
    std::fs::write(&hostfile, loopback_hostfile()).unwrap();
    let log = |rank: u32| dir.join(format!("rank{rank}.log"));
    let mut children: Vec<Child> = (0..RANKS)
        .map(|rank| {
            let out = File::create(log(rank)).unwrap();
            command(rank)
                .env(RANK_ENV, rank.to_string())
                .env(HOSTFILE_ENV, &hostfile)
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .unwrap_or_else(|e| panic!("{label}: failed to start rank {rank}: {e}"))
        })
        .collect();
    let started = Instant::now();
    let mut statuses = vec![None; children.len()];
    while statuses.iter().any(Option::is_none) {
        for (child, status) in children.iter_mut().zip(&mut statuses) {
            if status.is_none() {
                *status = child.try_wait().unwrap();
            }
        }
        if started.elapsed() > DEADLINE {
            children.iter_mut().for_each(|c| drop(c.kill()));
            children.iter_mut().for_each(|c| drop(c.wait()));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let logs = || {
        (0..RANKS).map(|r| format!("--- rank {r}:\n{}", std::fs::read_to_string(log(r)).unwrap())).collect::<String>()
    };
    for (rank, status) in statuses.iter().enumerate() {
        match status {
            Some(s) if s.success() => {}
            Some(s) => panic!("{label}: rank {rank} failed ({s})\n{}", logs()),
            None => panic!("{label}: the group did not finish within {DEADLINE:?}\n{}", logs()),
        }
    }
    eprintln!("{label}: both ranks done in {:.1} s", started.elapsed().as_secs_f64());
}

/// What one rank wrote.
struct RankOutput {
    identity: serde_json::Value,
    logits: HashMap<String, Array>,
    params: HashMap<String, Array>,
}

impl RankOutput {
    fn read(dir: &Path) -> Self {
        let read = |name: &str| {
            let path = dir.join(name);
            assert!(path.exists(), "{} was not written (see the rank's log beside it)", path.display());
            path
        };
        RankOutput {
            identity: serde_json::from_str(&std::fs::read_to_string(read("rank.json")).unwrap()).unwrap(),
            logits: Array::load_safetensors(read("logits.safetensors")).unwrap(),
            params: Array::load_safetensors(read("params.safetensors")).unwrap(),
        }
    }
}

/// An array's bytes as stored (any dtype; the packed uint32 weights too).
fn bytes(a: &Array) -> Vec<u8> {
    let v = a.view::<u8>().unwrap();
    v.eval().unwrap();
    v.as_slice::<u8>().to_vec()
}

fn sorted_keys(m: &HashMap<String, Array>) -> Vec<&String> {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    keys
}

/// Every logits row of `ours` has `theirs`'s dtype and bits.
fn assert_same_logits(label: &str, ours: &HashMap<String, Array>, theirs: &HashMap<String, Array>) {
    assert_eq!(sorted_keys(ours), sorted_keys(theirs), "{label}: logits rows");
    for key in sorted_keys(theirs) {
        let (o, t) = (&ours[key], &theirs[key]);
        assert_eq!(o.dtype(), t.dtype(), "{label}: {key} dtype");
        let (a, b) = (row(o), row(t));
        let diff = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(
            a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{label}: {key} differs (max abs diff {diff})"
        );
    }
}

/// How far the sharded rows are from the one-process model's: rows whose argmax agrees, and
/// the largest absolute difference.
fn against_one_process(sharded: &HashMap<String, Array>, single: &[(String, Array)]) -> (usize, f32) {
    let mut agree = 0;
    let mut max = 0.0f32;
    for (key, s) in single {
        let t = &sharded[key];
        let argmax = |a: &Array| argmax_axis(a, -1, false).unwrap().item_exact::<u32>();
        agree += usize::from(argmax(s) == argmax(t));
        max = row(s).iter().zip(row(t)).map(|(x, y)| (x - y).abs()).fold(max, f32::max);
    }
    (agree, max)
}

/// Shards `model_dir` across two ranks in mlx_lm and in the controlled worker and compares
/// them (see the module's text).
fn check_model(label: &str, model_dir: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let (prompt, continuation) = (PROMPT.to_vec(), continuation());
    let ids = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let (stock, controlled) = (tmp.path().join("mlx_lm"), tmp.path().join("controlled"));
    run_group(&format!("{label}: mlx_lm"), &stock, |rank| {
        let mut c = Command::new(repo().join(".venv/bin/python"));
        c.arg(repo().join("tools/fixture/sharded_logits.py"))
            .args(["--model-dir", model_dir.to_str().unwrap(), "--prompt", &ids(&prompt)])
            .args(["--continuation", &ids(&continuation), "--out"])
            .arg(stock.join(format!("rank{rank}")))
            .env("HF_HUB_OFFLINE", "1")
            .current_dir(repo());
        c
    });
    run_group(&format!("{label}: controlled"), &controlled, |rank| {
        let task = RankTask {
            model_dir: model_dir.to_owned(),
            prompt: prompt.clone(),
            continuation: continuation.clone(),
            out: controlled.join(format!("rank{rank}")),
        };
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.args(["sharded_tests::rank_process", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(TASK_ENV, serde_json::to_string(&task).unwrap());
        c
    });

    let read = |side: &Path, rank: u32| RankOutput::read(&side.join(format!("rank{rank}")));
    let ours: Vec<RankOutput> = (0..RANKS).map(|r| read(&controlled, r)).collect();
    for (rank, o) in ours.iter().enumerate() {
        let label = format!("{label} rank {rank}");
        let theirs = read(&stock, rank as u32);
        let expected = serde_json::json!({ "rank": rank, "ranks": RANKS });
        assert_eq!(theirs.identity, expected, "{label}: mlx_lm's group");
        assert_eq!(o.identity, expected, "{label}: the controlled group");
        assert_same_logits(&label, &o.logits, &theirs.logits);
        assert_eq!(sorted_keys(&o.params), sorted_keys(&theirs.params), "{label}: layer 0's parameters");
        for (name, t) in &theirs.params {
            let p = &o.params[name];
            assert_eq!((p.shape(), p.dtype()), (t.shape(), t.dtype()), "{label}: {name}");
            assert!(bytes(p) == bytes(t), "{label}: {name} is not mlx_lm's shard of it");
        }
    }
    assert_same_logits(&format!("{label} rank 1 against rank 0"), &ours[1].logits, &ours[0].logits);
    // The loop itself on the sharded model: mlx_lm's argmax after each fed token.
    let argmax = |a: &Array| argmax_axis(a, -1, false).unwrap().item_exact::<u32>();
    let expected: Vec<u32> = (0..continuation.len()).map(|k| argmax(&ours[0].logits[&format!("fixed_{k}")])).collect();
    for rank in 0..RANKS {
        let path = controlled.join(format!("rank{rank}/loop.json"));
        let found: Vec<u32> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(found, expected, "{label} rank {rank}: the fixed-continuation loop's argmax");
    }

    let single = logits(&Model::load(model_dir).unwrap(), &prompt, &continuation);
    let (agree, max) = against_one_process(&ours[0].logits, &single);
    eprintln!(
        "{label}: 2 ranks bit-identical to mlx_lm's at the prompt and {} steps; against one process: argmax \
         agrees on {agree}/{} rows, max abs logit diff {max:e}",
        continuation.len(),
        single.len()
    );
}

/// `reference_logits.py --make-tiny KIND --variant VARIANT`, with the fixture's tokenizer beside
/// it (`sharded_load` loads one).
fn tiny(kind: &str, variant: &str) -> tempfile::TempDir {
    let dir = make_tiny(kind, variant);
    for file in ["tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(repo().join("fixtures/tiny-qwen3").join(file), dir.path().join(file)).unwrap();
    }
    dir
}

#[test]
fn sharded_qwen3_matches_mlx_lm_bit_for_bit() {
    for fixture in ["tiny-qwen3", "tiny-qwen3-bf16"] {
        check_model(fixture, &repo().join("fixtures").join(fixture));
    }
}

#[test]
fn sharded_qwen2_matches_mlx_lm_bit_for_bit() {
    for variant in ["float32", "q4g32"] {
        check_model(&format!("qwen2 {variant}"), tiny("qwen2", variant).path());
    }
}

/// llama with biases on every projection: the sharded-to-all biases added once, after the sum.
#[test]
fn sharded_llama_matches_mlx_lm_bit_for_bit() {
    for variant in ["float32", "q4g32"] {
        check_model(&format!("llama {variant}"), tiny("llama", variant).path());
    }
}

#[test]
fn sharded_ministral3_matches_mlx_lm_bit_for_bit() {
    for variant in ["float32", "bfloat16"] {
        check_model(&format!("ministral3 {variant}"), tiny("ministral3", variant).path());
    }
}

fn rank_job(ranks: u32) -> RankJob {
    RankJob { rank: 0, ranks, backend: GroupBackend::Ring, hostfile: PathBuf::from("/nonexistent/hostfile.json") }
}

/// The fixture's config with one field replaced.
fn fixture_config_with(field: &str, value: serde_json::Value) -> ModelConfig {
    let path = repo().join("fixtures/tiny-qwen3/config.json");
    let mut config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    config[field] = value;
    ModelConfig::parse(&config.to_string(), &path).unwrap()
}

/// What validation says of a rank-group job for this config, as `check_group` refuses it.
fn refusal(adapter: &Adapter, config: &ModelConfig, ranks: u32) -> String {
    check_group(adapter, config, &rank_job(ranks)).map(|()| "accepted".to_owned()).unwrap_or_else(|r| r.to_string())
}

#[test]
fn what_mlx_lm_does_not_shard_so_is_refused_at_validation() {
    let controlled = Adapter::Controlled;
    let fixture = |name: &str| ModelConfig::load(&repo().join("fixtures").join(name)).unwrap();
    let made = |kind: &str| ModelConfig::load(make_tiny(kind, "float32").path()).unwrap();
    let cases = [
        (refusal(&controlled, &fixture("tiny-qwen3"), 2), "accepted"),
        (refusal(&controlled, &fixture("tiny-qwen3-bf16"), 2), "accepted"),
        (refusal(&controlled, &made("phi3"), 2), "validation failed: group: phi3 is not sharded by mlx_lm"),
        (
            refusal(&controlled, &made("gemma3_text"), 2),
            "validation failed: group: gemma3_text is not sharded by mlx_lm",
        ),
        (refusal(&controlled, &made("smollm3"), 2), "validation failed: group: smollm3 is not sharded by mlx_lm"),
        (
            refusal(&controlled, &made("qwen3_moe"), 2),
            "validation failed: group: mlx_lm shards qwen3_moe's experts in place, which the controlled loop does not",
        ),
        (
            refusal(&controlled, &made("gpt_oss"), 2),
            "validation failed: group: mlx_lm shards gpt_oss's experts in place, which the controlled loop does not",
        ),
        (
            refusal(&controlled, &fixture_config_with("num_key_value_heads", 1.into()), 2),
            "validation failed: group.ranks: num_key_value_heads 1 does not divide by 2",
        ),
        (
            refusal(&controlled, &fixture("tiny-qwen3"), 0),
            "validation failed: group.ranks: num_attention_heads 4 does not divide by 0",
        ),
        (
            refusal(&controlled, &fixture("tiny-qwen3"), 3),
            "validation failed: group.ranks: num_attention_heads 4 does not divide by 3",
        ),
        (
            refusal(&controlled, &fixture_config_with("intermediate_size", 191.into()), 2),
            "validation failed: group.ranks: intermediate_size 191 does not divide by 2",
        ),
        // Group size 64: each rank's 32 input columns of o_proj would split a group.
        (
            refusal(&controlled, &fixture("tiny-qwen3-q4"), 2),
            "validation failed: group.ranks: model.layers.0.self_attn.o_proj's 64 input columns / 2 = 32 are not \
             a multiple of its quantization group_size 64",
        ),
        (
            refusal(&Adapter::parse(COMPILED).unwrap(), &fixture("tiny-qwen3"), 2),
            "validation failed: group: the compiled loop does not run in rank groups",
        ),
    ];
    for (found, expected) in cases {
        assert_eq!(found, expected);
    }
}
