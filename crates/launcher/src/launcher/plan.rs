//! The ordered list of worker runs a session makes, and the command each one runs.

use std::path::{Path, PathBuf};

use decode_baseline_wire::{
    manifest::{Cell, Interpreter, Manifest},
    session::{SessionJob, WorkerOrder},
    Adapter, Mode,
};

/// One worker run to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRun {
    pub cell: Cell,
    pub adapter: Adapter,
    /// 0-based repetition; the A/A pair's second run is `repetitions`.
    pub repetition: u32,
    /// `true` for the extra run of an A/A pair.
    pub aa: bool,
}

impl PlannedRun {
    /// The worker folder's name below the cell's folder, unique within the session.
    pub fn folder_name(&self) -> String {
        let suffix = if self.aa { AA_SUFFIX } else { "" };
        format!("{}-{}{suffix}", self.adapter.as_str(), self.repetition)
    }
}

/// Whether a worker folder is the extra run of an A/A pair, by the name [`PlannedRun::folder_name`]
/// gave it: for folders found on disk without their session's record (recovery), where the
/// folder name is all there is.
pub fn is_aa_folder(worker_dir: &std::path::Path) -> bool {
    worker_dir.file_name().is_some_and(|name| name.to_string_lossy().ends_with(AA_SUFFIX))
}

/// The suffix of an A/A run's folder name.
const AA_SUFFIX: &str = "-aa";

/// Every run, cell by cell. With `alternate` and `interleaved`, repetition r lists the adapters
/// in the job's order when r is even and reversed when odd (A B B A …); an A/A pair adds one more
/// run of each adapter for headline cells, after the others.
pub fn plan(job: &SessionJob, cells: &[Cell]) -> Vec<PlannedRun> {
    let mut runs = Vec::new();
    for cell in cells {
        for repetition in 0..job.repetitions {
            let mut adapters = job.adapters.clone();
            if job.order != WorkerOrder::Fixed && repetition % 2 == 1 {
                adapters.reverse();
            }
            runs.extend(adapters.into_iter().map(|adapter| PlannedRun {
                cell: cell.clone(),
                adapter,
                repetition,
                aa: false,
            }));
        }
        if job.aa_pair && cell.mode == Mode::Headline {
            runs.extend(job.adapters.iter().map(|adapter| PlannedRun {
                cell: cell.clone(),
                adapter: adapter.clone(),
                repetition: job.repetitions,
                aa: true,
            }));
        }
    }
    runs
}

/// The runs that run at the same time, as index ranges into `runs`: with `interleaved`, the
/// runs of one cell and repetition (the A/A runs of a cell form one more group); otherwise each
/// run alone.
pub fn groups(order: WorkerOrder, runs: &[PlannedRun]) -> Vec<std::ops::Range<usize>> {
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let joins = order == WorkerOrder::Interleaved
            && groups.last().is_some_and(|g| {
                let first = &runs[g.start];
                first.cell == run.cell && first.repetition == run.repetition && first.aa == run.aa
            });
        match groups.last_mut() {
            Some(group) if joins => group.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    groups
}

pub use decode_baseline_wire::hooks::replacement_variable;

/// The program that replaces `adapter`'s pinned worker, when its [`replacement_variable`] is set
/// and not blank: its whitespace-separated words (the launcher's tests use them for misbehaving
/// workers). A session that runs one is unpinned (`req/session.md`).
pub fn replacement(adapter: &Adapter) -> Option<Vec<String>> {
    let words = std::env::var(replacement_variable(adapter)).ok()?;
    let argv: Vec<String> = words.split_whitespace().map(str::to_owned).collect();
    (!argv.is_empty()).then_some(argv)
}

/// The program `adapter`'s workers run, without `--out-dir`: its [`replacement`] if there is
/// one, else the pinned worker: the built-ins' own, or the command the manifest declares, its
/// first word resolved against the manifest's folder when it is a relative path with a `/`,
/// under the pinned environment's Python when the declaration asks for it. `Err` names an
/// adapter the manifest does not declare.
pub fn program(
    adapter: &Adapter,
    manifest: &Manifest,
    manifest_path: &Path,
    repo: &Path,
) -> Result<Vec<String>, String> {
    if let Some(argv) = replacement(adapter) {
        return Ok(argv);
    }
    let display = |p: PathBuf| p.display().to_string();
    Ok(match adapter {
        Adapter::Controlled => vec![display(controlled_program()), "worker".into()],
        Adapter::Stock => vec![display(venv_python(repo)), display(repo.join("tools/stock/worker.py"))],
        Adapter::Declared(name) => {
            let declared = manifest.declared(adapter).ok_or_else(|| {
                format!("adapter {name:?} is not declared in the manifest's `adapters` ({})", manifest_path.display())
            })?;
            let folder = manifest_path.parent().unwrap_or(Path::new("."));
            let mut words = declared.command.iter();
            let first = words.next().ok_or_else(|| format!("adapters[{name:?}].command is empty"))?;
            let first = if first.contains('/') && Path::new(first).is_relative() {
                display(folder.join(first))
            } else {
                first.clone()
            };
            let interpreter = declared.interpreter.map(|Interpreter::Python| display(venv_python(repo)));
            interpreter.into_iter().chain(std::iter::once(first)).chain(words.cloned()).collect()
        }
    })
}

/// The command line of one worker: its adapter's [`program`] writing into `out_dir`. The command
/// actually run is recorded in `session.json` either way.
pub fn worker_command(program: &[String], out_dir: &Path) -> Vec<String> {
    let mut argv = program.to_vec();
    argv.extend(["--out-dir".to_owned(), out_dir.display().to_string()]);
    argv
}

fn current_exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("decode-baseline"))
}

/// The file name of the controlled worker's own executable (`crates/controlled/src/main.rs`).
pub const CONTROLLED_PROGRAM: &str = "decode-baseline-controlled";

/// The controlled worker's program: this executable when it links MLX (its `worker`
/// subcommand), else the [`CONTROLLED_PROGRAM`] beside it (a launcher built without MLX, as the
/// CUDA build is, so that it starts where the CUDA libmlx cannot).
pub fn controlled_program() -> PathBuf {
    let exe = current_exe();
    if cfg!(feature = "controlled") {
        return exe;
    }
    exe.with_file_name(CONTROLLED_PROGRAM)
}

/// Whether the controlled worker is a separate program that the launcher must probe before it
/// spawns it (see `preflight.rs`): no replacement program is set and this build links no MLX.
pub fn controlled_needs_probe() -> bool {
    !cfg!(feature = "controlled") && replacement(&Adapter::Controlled).is_none()
}

/// The selected pinned environment's interpreter.
pub fn venv_python(repo: &Path) -> PathBuf {
    decode_baseline_pins::installed::venv_dir(repo).join("bin/python")
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::session::SESSION_JOB_SCHEMA_VERSION;

    fn job(order: WorkerOrder, repetitions: u32, aa_pair: bool) -> SessionJob {
        SessionJob {
            schema_version: SESSION_JOB_SCHEMA_VERSION,
            manifest: None,
            cells: None,
            adapters: vec![Adapter::Controlled, Adapter::Stock],
            reference: None,
            output_root: "out".into(),
            repetitions,
            order,
            aa_pair,
        }
    }

    fn cell(mode: Mode) -> Cell {
        Cell { case: "c".into(), prompt: "p".into(), mode }
    }

    #[test]
    fn alternate_order_flips_every_repetition() {
        let runs = plan(&job(WorkerOrder::Alternate, 3, false), &[cell(Mode::Headline)]);
        let order: Vec<_> = runs.iter().map(|r| (r.adapter.clone(), r.repetition)).collect();
        use Adapter::*;
        assert_eq!(order, [(Controlled, 0), (Stock, 0), (Stock, 1), (Controlled, 1), (Controlled, 2), (Stock, 2)]);
    }

    #[test]
    fn interleaved_groups_one_cell_and_repetition_and_flips_the_first_adapter() {
        let cells = [cell(Mode::Headline), Cell { case: "d".into(), prompt: "p".into(), mode: Mode::Headline }];
        let runs = plan(&job(WorkerOrder::Interleaved, 2, true), &cells);
        let grouped = groups(WorkerOrder::Interleaved, &runs);
        assert_eq!(grouped, [0..2, 2..4, 4..6, 6..8, 8..10, 10..12]);
        assert_eq!(runs[2].adapter, Adapter::Stock, "repetition 1 starts with the other adapter");
        assert!(runs[4].aa && runs[5].aa && !runs[3].aa);
        assert_eq!(groups(WorkerOrder::Alternate, &runs).len(), runs.len(), "one run at a time");
    }

    #[test]
    fn aa_pair_adds_one_run_per_adapter_for_headline_only() {
        let runs = plan(&job(WorkerOrder::Fixed, 1, true), &[cell(Mode::Headline), cell(Mode::ReferencePair)]);
        assert_eq!(runs.len(), 2 + 2 + 2);
        assert_eq!(runs.iter().filter(|r| r.aa).count(), 2);
        assert!(runs.iter().filter(|r| r.aa).all(|r| r.cell.mode == Mode::Headline));
        let names: std::collections::BTreeSet<_> = runs.iter().map(|r| (r.cell.name(), r.folder_name())).collect();
        assert_eq!(names.len(), runs.len(), "folder names are unique per cell");
    }
}
