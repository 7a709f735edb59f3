//! The `bench` subcommand: resolve the model, derive its case as `manifest add-case` does, write
//! that manifest and its pin into a new session folder, and run a normal session on it.
//!
//! The repository's `workloads.json` is never read for the case nor written: the session's
//! manifest pins the same worker sources and environment (recomputed from this checkout and its
//! installed environment), so the workers validate it exactly as they validate the repository's.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use anyhow::{ensure, Context};
use decode_baseline_pins::once;
use decode_baseline_pins::{built_in_sources, environment_pins, is_path_safe_id};
use decode_baseline_wire::{
    group::{GroupBackend, SessionGroup},
    manifest::{Cell, Manifest, WorkerSources, MANIFEST_SCHEMA_VERSION},
    session::{SessionJob, SessionReport, WorkerOrder, SESSION_JOB_SCHEMA_VERSION},
    Adapter, ExitCode, Mode, RunPolicy,
};

use super::{hub, support::controlled_refusal};
use crate::{
    export::Exporter,
    guard::{chain, MANIFEST_NAME},
    launcher::{self, SessionOptions, Show},
    manifest_cli::{self, PromptSource},
    session::{BenchRecord, ModelSource, BENCH_RECORD, BENCH_RECORD_SCHEMA_VERSION},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchPromptSource {
    /// The canonical English text; the seeded ids when the tokenizer does not cover it.
    Auto,
    /// The canonical English text (real tokenizers).
    Text,
    /// Ids drawn by a counter-mode hash from the ordinary vocabulary (the fixtures).
    Seeded,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The session table, then prefill and decode rows per length (llama-bench's pp and tg).
    Table,
    /// The rows as a Markdown table.
    Markdown,
    /// `session.json` on stdout.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// A local mlx_lm model folder, or a Hugging Face repo id (`org/name`) found in the local
    /// cache (`$HF_HUB_CACHE`, `$HF_HOME/hub`, `~/.cache/huggingface/hub`).
    pub model: String,
    /// Prompt lengths in tokens, comma-separated; each gets every mode of `--modes`.
    #[arg(short = 'p', long, value_delimiter = ',', default_value = "512")]
    pub prompt_lengths: Vec<usize>,
    /// Context depths in tokens, comma-separated: a prompt of D tokens, then the decode steps
    /// (headline cells), up to config.json's `max_position_embeddings`.
    #[arg(short = 'd', long, value_delimiter = ',')]
    pub depths: Vec<usize>,
    /// New tokens per request. The run policy freezes it (req/manifest.md); another value is
    /// refused with the frozen one named.
    #[arg(short = 'n', long, default_value_t = RunPolicy::frozen().max_new_tokens)]
    pub new_tokens: u32,
    /// Warm-up requests per worker run, after the first and before the measured ones (the run
    /// policy's `warmup_requests`). Every request prefills its prompt, so fewer make long
    /// prompts and deep contexts affordable; the session's manifest records the policy used.
    #[arg(long, value_name = "N", default_value_t = RunPolicy::frozen().warmup_requests)]
    pub warmup_requests: u32,
    /// Measured requests per worker run (`measured_requests`): fewer widen every interval.
    #[arg(long, value_name = "N", default_value_t = RunPolicy::frozen().measured_requests)]
    pub measured_requests: u32,
    /// Seconds from a worker's ready signal to its deadline (`job_deadline_s`).
    #[arg(long, value_name = "SECONDS", default_value_t = RunPolicy::frozen().job_deadline_s)]
    pub deadline_s: u32,
    /// The most prompt tokens one prefill forward takes, in both loops (the session job's
    /// `prefill_step_size`; default mlx_lm's 2048): a smaller one runs a prompt over several
    /// chunks where a longer prompt would take too long.
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub prefill_step_size: Option<u32>,
    /// Modes on each prompt length, comma-separated.
    #[arg(
        short = 'm',
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "headline,fixed_continuation,reference_pair"
    )]
    pub modes: Vec<Mode>,
    /// Adapters, comma-separated. One the controlled loop cannot run on this model is left out,
    /// with the reason in the table and the report.
    #[arg(short = 'a', long, value_delimiter = ',', value_parser = Adapter::parse, default_value = "controlled,stock")]
    pub adapters: Vec<Adapter>,
    /// Worker runs per adapter and cell: two or more for a verdict (a row's error must hold
    /// run-to-run effects), and the more runs, the smaller the difference it can detect.
    #[arg(short = 'r', long, default_value_t = 3)]
    pub repetitions: u32,
    /// Worker order (req/session.md): `interleaved` (the default) loads the adapters' models
    /// together and alternates them request by request, so the machine's drift cancels in the
    /// ratio; `alternate` runs one worker at a time, for models too large to load twice.
    #[arg(long, value_enum, default_value = "interleaved")]
    pub order: WorkerOrder,
    /// Also run an A/A pair of each headline cell, which bounds the run-to-run noise that
    /// `compare` needs before it calls anything faster, slower or no different.
    #[arg(long)]
    pub aa_pair: bool,
    /// Wait up to this many seconds for a quiet host before each worker (see `run --quiet-wait`).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub quiet_wait: u64,
    /// The CPUs the workers may run on (see `run --cpus`): `first` (the default), `all`, or a
    /// list such as `0`, `0,1`, `0-3`. Given more than once, one session per placement, one
    /// after the other, and a table of how each headline ratio and its parts move between them
    /// (e.g. `--cpus 0 --cpus all`: one CPU against every CPU).
    #[arg(long, value_name = "LIST", default_value = "first", value_parser = launcher::placement::Cpus::parse, action = clap::ArgAction::Append)]
    pub cpus: Vec<launcher::placement::Cpus>,
    /// Also run the model as a group of this many ranks (`req/distributed.md`: tensor parallel
    /// as mlx_lm shards it, over MLX's ring backend on this machine, each rank on its own CPU
    /// when the placement has one for each): a session as one process, then a session as the
    /// group, and a table of what the other ranks buy. At least 2; one `--cpus` only.
    #[arg(long, value_name = "N")]
    pub ranks: Option<u32>,
    /// Where the session folder is created. Default: the workspace's `out/`.
    #[arg(short = 'o', long)]
    pub output_root: Option<PathBuf>,
    /// What is printed at the end.
    #[arg(long, value_enum, default_value = "table")]
    pub format: OutputFormat,
    /// Where the prompt ids come from.
    #[arg(long, value_enum, default_value = "auto")]
    pub prompt_source: BenchPromptSource,
    /// For a repo id: the branch, tag or commit to measure.
    #[arg(long, default_value = "main")]
    pub revision: String,
    /// For a repo id not in the cache: fetch it as mlx_lm does (the pinned environment's
    /// huggingface_hub). Without it nothing touches the network.
    #[arg(long)]
    pub allow_network: bool,
    /// Fail at once (exit 7) if another session holds the benchmark lease.
    #[arg(long)]
    pub no_wait: bool,
}

/// The model folder and where it came from.
fn resolve_model(args: &BenchArgs, python: &Path) -> anyhow::Result<(PathBuf, ModelSource, String)> {
    let path = Path::new(&args.model);
    if path.is_dir() {
        let dir = path.canonicalize().with_context(|| format!("failed to resolve {}", path.display()))?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
        return Ok((dir.clone(), ModelSource::Folder { path: dir }, name));
    }
    crate::ensure_input!(
        hub::is_repo_id(&args.model),
        "MODEL {:?} is neither a model folder nor a Hugging Face repo id (`org/name`)",
        args.model
    );
    let cache = hub::cache_dir();
    let cached = match hub::resolve(&cache, &args.model, &args.revision, python) {
        Err(hub::HubError::NotCached { .. }) if args.allow_network => {
            fetch(python, &cache, &args.model, &args.revision)?;
            hub::resolve(&cache, &args.model, &args.revision, python)?
        }
        other => other?,
    };
    let name = cached.repo_id.replace('/', "--");
    let source = ModelSource::Hub { repo_id: cached.repo_id, revision: cached.revision, commit: cached.commit, cache };
    Ok((cached.snapshot, source, name))
}

/// Runs the fetch command `hub::fetch_command` names (the user allowed the network).
fn fetch(python: &Path, cache: &Path, repo_id: &str, revision: &str) -> anyhow::Result<()> {
    eprintln!("bench: fetching {repo_id} ({revision}) into {}", cache.display());
    let code = format!("from mlx_lm.utils import _download; print(_download({repo_id:?}, revision={revision:?}))");
    let status = std::process::Command::new(python)
        .args(["-c", &code])
        .env("HF_HUB_CACHE", cache)
        .status()
        .with_context(|| format!("failed to run {}", python.display()))?;
    ensure!(status.success(), "fetching {repo_id} failed ({status})");
    Ok(())
}

/// A path-safe case id from a folder or repo name.
fn case_id(name: &str) -> String {
    let id: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect();
    let id = id.trim_start_matches('.').to_owned();
    if is_path_safe_id(&id) {
        id
    } else {
        "model".to_owned()
    }
}

/// The cells: every mode on each prompt length, a headline cell on each further depth.
fn cells(case: &str, args: &BenchArgs) -> Vec<Cell> {
    let mut out = Vec::new();
    let mut push = |length: usize, mode: Mode| {
        let cell = Cell { case: case.to_owned(), prompt: manifest_cli::prompt_id(case, length), mode };
        if !out.contains(&cell) {
            out.push(cell);
        }
    };
    for &length in &args.prompt_lengths {
        for &mode in &args.modes {
            push(length, mode);
        }
    }
    for &depth in &args.depths {
        push(depth, Mode::Headline);
    }
    out
}

/// The frozen run policy with the request counts and the deadline the options give.
fn run_policy(args: &BenchArgs) -> anyhow::Result<RunPolicy> {
    let policy = RunPolicy {
        warmup_requests: args.warmup_requests,
        measured_requests: args.measured_requests,
        job_deadline_s: args.deadline_s,
        ..RunPolicy::frozen()
    };
    policy.validate().map_err(|e| {
        let flag = match e.field {
            "warmup_requests" => "--warmup-requests",
            "measured_requests" => "--measured-requests",
            _ => "--deadline-s",
        };
        crate::exit::bad_input(format!("{flag} {}: must be at least 1 ({e})", e.value))
    })?;
    Ok(policy)
}

fn check_args(args: &BenchArgs, max_positions: Option<u64>) -> anyhow::Result<()> {
    let frozen = RunPolicy::frozen();
    crate::ensure_input!(
        args.new_tokens == frozen.max_new_tokens,
        "--new-tokens {}: the run policy freezes new tokens at {} (req/manifest.md, run_policy.max_new_tokens)",
        args.new_tokens,
        frozen.max_new_tokens
    );
    crate::ensure_input!(
        !args.prompt_lengths.is_empty() || !args.depths.is_empty(),
        "give at least one --prompt-lengths or --depths value"
    );
    crate::ensure_input!(!args.modes.is_empty(), "--modes must name at least one mode");
    if let Some(ranks) = args.ranks {
        crate::ensure_input!(
            ranks >= 2,
            "--ranks {ranks}: expected at least 2 (one process is the session it is set beside)"
        );
        crate::ensure_input!(
            args.cpus.len() == 1,
            "--ranks takes one --cpus, found {}: the group's ranks each take a CPU of it",
            args.cpus.len()
        );
    }
    crate::ensure_input!(!args.adapters.is_empty(), "--adapters must name at least one adapter");
    for (flag, values) in [("--prompt-lengths", &args.prompt_lengths), ("--depths", &args.depths)] {
        for &length in values.iter() {
            crate::ensure_input!(length >= 1, "{flag}: every length must be at least 1, found {length}");
            let last = length as u64 + u64::from(frozen.max_new_tokens);
            if let Some(max) = max_positions {
                crate::ensure_input!(
                    last <= max,
                    "{flag} {length}: a request reaches position {last} ({length} + {} new tokens), past the model's \
                     max_position_embeddings {max} (config.json)",
                    frozen.max_new_tokens
                );
            }
        }
    }
    Ok(())
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let repo = crate::launcher::session_job::repo_root();
    let installed = manifest_cli::installed(&repo, decode_baseline_pins::installed::selected_environment().as_deref())?;
    let python = installed.venv.join("bin/python");
    let (model_dir, source, name) = resolve_model(&args, &python)?;
    let config_path = model_dir.join("config.json");
    let config: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&config_path).with_context(|| format!("failed to read {}", config_path.display()))?,
    )
    .with_context(|| format!("failed to parse {}", config_path.display()))?;
    let max_positions = config["max_position_embeddings"].as_u64();
    check_args(&args, max_positions)?;
    let mut notes = Vec::new();
    let policy = run_policy(&args)?;
    let frozen = RunPolicy::frozen();
    if policy != frozen {
        notes.push(format!(
            "run policy: {} warm-up and {} measured requests per worker run, deadline {} s (the frozen policy: {}, {}, {} s)",
            policy.warmup_requests,
            policy.measured_requests,
            policy.job_deadline_s,
            frozen.warmup_requests,
            frozen.measured_requests,
            frozen.job_deadline_s
        ));
    }

    let mut adapters = args.adapters.clone();
    if adapters.contains(&Adapter::Controlled) {
        if let Some(reason) = controlled_refusal(&model_dir) {
            notes.push(format!("stock only: the controlled loop does not implement this model: {reason}"));
            adapters.retain(|a| *a != Adapter::Controlled);
        }
    }
    crate::ensure_input!(!adapters.is_empty(), "no adapter left to run: {}", notes.join("; "));

    let id = case_id(&name);
    let lengths: Vec<usize> =
        args.prompt_lengths.iter().chain(&args.depths).copied().collect::<BTreeSet<_>>().into_iter().collect();
    let steps = RunPolicy::frozen().fixed_continuation_steps as usize;
    let derive = |source| manifest_cli::derive_case(&installed, &repo, &model_dir, &id, &lengths, source, steps);
    let derived = match args.prompt_source {
        BenchPromptSource::Text => derive(PromptSource::Text)?,
        BenchPromptSource::Seeded => derive(PromptSource::Seeded)?,
        BenchPromptSource::Auto => match derive(PromptSource::Text) {
            Ok(derived) => derived,
            Err(err) if format!("{err:#}").contains("does not cover the text") => {
                notes.push("prompts: seeded ids (the tokenizer does not cover the canonical text)".to_owned());
                derive(PromptSource::Seeded)?
            }
            Err(err) => return Err(err),
        },
    };

    let cells = cells(&id, &args);
    let pins = environment_pins(&repo, &installed).map_err(|e| crate::exit::bad_input(chain(&e)))?;
    // A named environment (DECODE_BASELINE_ENV) is pinned under its name as well, where the
    // launcher and the workers look for it.
    let environments = decode_baseline_pins::installed::selected_environment()
        .map(|name| [(name, pins.clone())].into())
        .unwrap_or_default();
    let mut manifest = Manifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        cases: [(id.clone(), derived.case.clone())].into(),
        prompts: derived.prompts.iter().cloned().collect(),
        cells: cells.clone(),
        run_policy: policy,
        adapters: BTreeMap::new(),
        worker_sources: WorkerSources::new(),
        environment: pins,
        environments,
    };
    manifest.worker_sources = built_in_sources(&repo).map_err(|e| crate::exit::bad_input(chain(&e)))?;
    let count = |a: &Adapter| manifest.worker_sources.get(a).map_or(0, BTreeMap::len);
    if count(&Adapter::Stock) == 0 || count(&Adapter::Controlled) == 0 {
        crate::bad_input!(
            "this checkout has no worker sources by the rule ({} stock, {} controlled)",
            count(&Adapter::Stock),
            count(&Adapter::Controlled)
        );
    }

    let record = BenchRecord {
        schema_version: BENCH_RECORD_SCHEMA_VERSION,
        model: args.model.clone(),
        source,
        model_dir: model_dir.clone(),
        case_id: id.clone(),
        architecture: derived.case.architecture.clone(),
        max_position_embeddings: max_positions,
        prompt_lengths: args.prompt_lengths.clone(),
        depths: args.depths.clone(),
        modes: args.modes.clone(),
        adapters: adapters.clone(),
        prompt_source: derived.prompt_source.clone(),
        notes: notes.clone(),
    };
    eprintln!(
        "bench: {} ({} {}), {} cells, {} placement(s)",
        record.model,
        derived.case.architecture,
        derived.case.dtype,
        cells.len(),
        args.cpus.len()
    );
    for note in &notes {
        eprintln!("bench: note: {note}");
    }
    // One session per placement, one after the other, each in its own folder.
    let mut sessions = Vec::new();
    let mut code = ExitCode::Ok;
    // One session per placement, or with `--ranks`, one process and then the group.
    let runs: Vec<(&launcher::placement::Cpus, Option<SessionGroup>)> = match args.ranks {
        None => args.cpus.iter().map(|c| (c, None)).collect(),
        Some(ranks) => {
            let group = SessionGroup { ranks, backend: GroupBackend::Ring, hosts: None };
            vec![(&args.cpus[0], None), (&args.cpus[0], Some(group))]
        }
    };
    // With `--ranks`: the one-process session's report, then the rank table, written into the
    // group session's folder before its page so that the page, written once, shows it.
    let mut one_process: Option<SessionReport> = None;
    let mut by_ranks: Option<String> = None;
    for (cpus, group) in runs {
        let ranks = group.as_ref().map(|g| g.ranks);
        let beside = |report: &SessionReport, dir: &Path| -> anyhow::Result<()> {
            let (Some(ranks), Some(one)) = (ranks, one_process.as_ref()) else { return Ok(()) };
            let bytes = crate::plot::step_bytes::ModelBytes::of_dir(&model_dir).ok();
            let config = crate::stats::DecisionConfig::default();
            let table = crate::ranks::rank_table(one, report, ranks, bytes.as_ref(), &config);
            let path = dir.join(crate::ranks::RANKS_FILE);
            once::create_new(&path, table.trim_start().as_bytes())
                .with_context(|| format!("the rank table not written to {}", path.display()))?;
            by_ranks = Some(table);
            Ok(())
        };
        let (outcome, session_dir) = placement_session(&args, cpus, group, &manifest, &record, beside)?;
        // The table only for a session whose `session.json` was written (its page and figures too).
        let written = outcome.report.filter(|_| outcome.code != ExitCode::OutputFailed);
        if let Some(report) = written.as_ref().filter(|_| args.format != OutputFormat::Json) {
            let view = crate::report::SessionView::new(report, &session_dir, None, true)?;
            let exporter: &dyn Exporter<_> =
                if args.format == OutputFormat::Markdown { &crate::report::Markdown } else { &crate::report::Headline };
            print!("{}", exporter.export(&view)?);
            for note in &notes {
                println!("note: {note}");
            }
            println!("report page: {}", session_dir.join(crate::report::PAGE).display());
        }
        code = code.worse(outcome.code);
        match (args.ranks, ranks) {
            (None, _) => sessions.extend(written.map(|report| (cpus.to_string(), report))),
            (Some(_), None) => one_process = written,
            (Some(_), Some(_)) => {}
        }
    }
    if let Some(table) = by_ranks.filter(|_| args.format != OutputFormat::Json) {
        print!("{table}");
    }
    if sessions.len() > 1 && args.format != OutputFormat::Json {
        print!("{}", crate::decomposition::placement_table(&sessions, &crate::stats::DecisionConfig::default()));
    }
    if args.format != OutputFormat::Json {
        println!("bench to table: {:.1} s", started.elapsed().as_secs_f64());
    }
    Ok(code)
}

/// Writes the manifest, its pin, the bench record and the job into a new session folder and runs
/// the session with the workers on `cpus`, in this process; `beside` writes what goes into the
/// folder before the page ([`launcher::run_session`]).
fn placement_session(
    args: &BenchArgs,
    cpus: &launcher::placement::Cpus,
    group: Option<SessionGroup>,
    manifest: &Manifest,
    record: &BenchRecord,
    beside: impl FnOnce(&SessionReport, &Path) -> anyhow::Result<()>,
) -> anyhow::Result<(launcher::SessionOutcome, PathBuf)> {
    let output_root = args.output_root.clone().unwrap_or_else(crate::workspace::output_root);
    let session_dir = launcher::new_session_dir(&output_root)?;
    let manifest_path = session_dir.join(MANIFEST_NAME);
    manifest_cli::write_pinned(&manifest_path, manifest)?;
    write_json(&session_dir.join(BENCH_RECORD), record)?;
    let job = SessionJob {
        schema_version: SESSION_JOB_SCHEMA_VERSION,
        manifest: Some(PathBuf::from(MANIFEST_NAME)),
        cells: None,
        adapters: record.adapters.clone(),
        reference: None,
        output_root: session_dir.parent().context("the session folder has no parent")?.to_owned(),
        repetitions: args.repetitions,
        order: args.order,
        aa_pair: args.aa_pair,
        group,
        prefill_step_size: args.prefill_step_size,
    };
    let job_path = session_dir.join("bench-job.json");
    write_json(&job_path, &job)?;
    let ranks = job.group.as_ref().map(|g| format!(" as {} ranks", g.ranks)).unwrap_or_default();
    eprintln!("bench: --cpus {cpus}{ranks}: session folder {}", session_dir.display());
    // The job written above is the session's record; the session runs from the job in hand, in
    // this process, and hands its report back.
    let resolved = launcher::session_job::resolve(job, &job_path)?;
    let options = SessionOptions {
        no_wait: args.no_wait,
        session_dir: Some(session_dir.clone()),
        quiet_wait: args.quiet_wait,
        cpus: cpus.clone(),
        ..SessionOptions::default()
    };
    let shown =
        Show { json: args.format == OutputFormat::Json, quiet: args.format == OutputFormat::Markdown, verbose: false };
    let outcome = launcher::run_session(resolved, &options, &shown, beside)?;
    Ok((outcome, session_dir))
}

/// Writes `value` as `path` in the new session folder, once ([`once::link_new`]).
fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    let name = path.file_name().context("the target has no file name")?.to_string_lossy();
    let temp = path.with_file_name(format!(".{name}.{}", std::process::id()));
    match once::link_new(&temp, path, &bytes)? {
        once::Linked::Written => Ok(()),
        once::Linked::Exists => crate::bad_input!("{} already exists; it is never overwritten", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_ids_are_path_safe() {
        assert_eq!(case_id("mlx-community--Qwen3-0.6B-4bit"), "mlx-community--Qwen3-0.6B-4bit");
        assert_eq!(case_id(".hidden model"), "hidden-model");
        assert_eq!(case_id("..."), "model");
    }

    #[test]
    fn cpus_given_twice_are_two_placements_and_by_default_one() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let cpus = |extra: &[&str]| {
            Cli::parse_from([&["bench", "model"], extra].concat())
                .bench
                .cpus
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(cpus(&[]), ["first"]);
        assert_eq!(cpus(&["--cpus", "0", "--cpus", "all"]), ["0", "all"]);
        assert_eq!(cpus(&["--cpus", "0,1"]), ["0-1"], "a list is one placement, written as a range");
        assert!(Cli::try_parse_from(["bench", "model", "--cpus", "x"]).is_err());
    }

    #[test]
    fn the_run_policy_takes_the_request_counts_and_refuses_zero_naming_the_flag() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let args = |extra: &[&str]| Cli::parse_from([&["bench", "model"], extra].concat()).bench;
        assert_eq!(run_policy(&args(&[])).unwrap(), RunPolicy::frozen());
        let short =
            run_policy(&args(&["--warmup-requests", "1", "--measured-requests", "3", "--deadline-s", "1800"])).unwrap();
        assert_eq!((short.warmup_requests, short.measured_requests, short.job_deadline_s), (1, 3, 1800));
        assert_eq!(short.total_requests(), 5);
        let err = run_policy(&args(&["--measured-requests", "0"])).unwrap_err().to_string();
        assert!(err.starts_with("--measured-requests 0: must be at least 1"), "{err}");
    }
}
