//! One decode step's MLX graph, the controlled loop's beside mlx_lm's (issue 30, part 1).
//!
//! Both sides are read by the same MLX function on the same libmlx: `export_to_dot`
//! (mlx-c's `mlx_export_to_dot` here, `mx.export_to_dot` in `tools/graph/stock_step.py`),
//! which walks every unevaluated ancestor of the step's outputs once and prints one node per
//! primitive application, labelled by the primitive's own printed name. [`parse_dot`] reads
//! both files, so a node is counted the same way on both sides.
//!
//! The step is the one at `position` (the token fed there; the cache holds `position - 1`
//! positions before it), each loop's second decode step after its own prefill of the same
//! `position - 2` prompt ids. Not the first, which kept the comparison apart from the prefill
//! while the two loops prefilled differently (a sliding-window cache trims what a multi-token
//! prefill left there at the first one-token update); both now do that in their seed forward.
//!
//! * controlled: the loop's prefill ([`crate::decode::prefill`]), its argmax, everything evaluated, one
//!   step evaluated, then the step as `decode.rs` builds it: `forward` of the previous argmax,
//!   `argmax` of the logits; the outputs are what the loop evaluates (the argmax, the logits,
//!   every cache buffer);
//! * stock: `mlx_lm.generate.generate_step` as shipped, observed at its `mx.async_eval` (see the
//!   script): `(next_y, next_logprobs)`, the model call, the log-softmax and the greedy sampler.
//!   Stock's graph is read twice: as built (mlx_lm's `@mx.compile` activations are one
//!   `Compiled…` primitive each, shared by every layer) and with `mx.disable_compile()` (those
//!   functions as the ops they are made of), since the controlled loop compiles nothing.
//!   [`Comparison::excess`] holds the controlled graph against the uncompiled one.
//!
//! Bytes, two measures. Output bytes: the sum over nodes of each output's shape × dtype size;
//! exact for the controlled graph (mlx-c's `mlx_print_graph`, the same walk as the DOT, with
//! shapes and dtypes); for stock, Python MLX tells a node's shape only through its export
//! trace, which merges identical nodes and cannot trace a compiled primitive, so stock's figure
//! is its uncompiled step after that merge (its node count is printed beside it). Views
//! (reshape, slice, broadcast, transpose) count their full shape though they share a buffer.
//! Peak bytes: MLX's peak memory above its active memory while the step (as built) is
//! evaluated, the same three calls on both sides.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::argmax_axis;
use mlx_rs::Array;

use crate::decode::{prefill_prompt, DecodeError, PREFILL_STEP_SIZE};
use crate::model::{LayerCache, LoadError, Model};

/// The script that builds and reads mlx_lm's step (repository-relative).
pub const STOCK_SCRIPT: &str = "tools/graph/stock_step.py";

/// Why a graph could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("position must be at least 3 (a prompt of at least one token and one step before the step), got {0}")]
    Position(u32),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("mlx failed during {stage}")]
    Mlx {
        stage: &'static str,
        #[source]
        source: Exception,
    },
    #[error("failed to {what} {path}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to run {program}")]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{script} failed ({status}):\n{stderr}")]
    Script { script: &'static str, status: std::process::ExitStatus, stderr: String },
    #[error("failed to read {what}: {reason}")]
    Parse { what: &'static str, reason: String },
}

fn mlx(stage: &'static str) -> impl FnOnce(Exception) -> GraphError {
    move |source| GraphError::Mlx { stage, source }
}

/// Primitive applications by printed name.
pub type Census = BTreeMap<String, u32>;

/// The primitive labels of an MLX DOT file, one per node, in the file's order.
pub fn parse_dot(dot: &str) -> Result<Vec<String>, GraphError> {
    const OPEN: &str = " [label =\"";
    const CLOSE: &str = "\", shape=rectangle]";
    let bad = |reason: String| GraphError::Parse { what: "a DOT graph", reason };
    let body = dot.trim();
    if !body.starts_with("digraph {") || !body.ends_with('}') {
        return Err(bad("not an MLX `digraph { ... }`".into()));
    }
    let mut labels = Vec::new();
    for line in body.lines() {
        let Some(start) = line.find(OPEN) else { continue };
        let rest = &line[start + OPEN.len()..];
        let end = rest.find(CLOSE).ok_or_else(|| bad(format!("unterminated node label in {line:?}")))?;
        let id = line[..start].trim_start_matches("{ ");
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(format!("a node line without a numeric id: {line:?}")));
        }
        labels.push(rest[..end].to_owned());
    }
    Ok(labels)
}

/// Counts labels.
pub fn census<S: AsRef<str>>(labels: &[S]) -> Census {
    let mut counts = Census::new();
    for label in labels {
        *counts.entry(label.as_ref().to_owned()).or_default() += 1;
    }
    counts
}

/// The size in bytes of one element of the dtype MLX prints as `name`.
fn dtype_size(name: &str) -> Option<u64> {
    Some(match name {
        "bool" | "uint8" | "int8" => 1,
        "uint16" | "int16" | "float16" | "bfloat16" => 2,
        "uint32" | "int32" | "float32" => 4,
        "uint64" | "int64" | "float64" | "complex64" => 8,
        _ => return None,
    })
}

/// Bytes of one printed array, `(d0,d1,...), dtype`.
fn array_bytes(spec: &str) -> Result<u64, String> {
    let (shape, dtype) = spec.rsplit_once(", ").ok_or_else(|| format!("no dtype in [{spec}]"))?;
    let size = dtype_size(dtype.trim()).ok_or_else(|| format!("unknown dtype {dtype:?}"))?;
    let dims = shape.trim().trim_start_matches('(').trim_end_matches(')');
    dims.split(',').filter(|d| !d.trim().is_empty()).try_fold(size, |acc, d| {
        d.trim().parse::<u64>().map(|d| acc * d).map_err(|_| format!("bad dimension {d:?} in [{spec}]"))
    })
}

/// The output bytes of each node of an `mlx_print_graph` text, in its order: the tape lines
/// after `Inputs:` and `Outputs:`, each `<primitive> <inputs> -> <outputs>`, every array
/// printed as `NAME [(shape), dtype]`.
pub fn parse_print_graph(text: &str) -> Result<Vec<u64>, GraphError> {
    let bad = |reason: String| GraphError::Parse { what: "an MLX print_graph text", reason };
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        (Some(i), Some(o)) if i.starts_with("Inputs:") && o.starts_with("Outputs:") => {}
        _ => return Err(bad("no `Inputs:` and `Outputs:` header".into())),
    }
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (_, outputs) = line.rsplit_once(" -> ").ok_or_else(|| bad(format!("no ` -> ` in {line:?}")))?;
            let mut total = 0;
            let mut rest = outputs;
            while let Some(open) = rest.find('[') {
                let close = rest[open..].find(']').ok_or_else(|| bad(format!("unclosed `[` in {line:?}")))? + open;
                total += array_bytes(&rest[open + 1..close]).map_err(bad)?;
                rest = &rest[close + 1..];
            }
            Ok(total)
        })
        .collect()
}

/// One side's step graph.
#[derive(Debug, Clone, PartialEq)]
pub struct SideGraph {
    /// Applications by primitive, from the DOT.
    pub census: Census,
    /// Output bytes by primitive (where this side can tell them).
    pub bytes: BTreeMap<String, u64>,
    /// Total output bytes.
    pub output_bytes: u64,
    /// Nodes the output bytes were summed over (the DOT's own count for the controlled side;
    /// the export trace's, after its merge, for stock).
    pub bytes_nodes: u32,
    /// Peak memory above active memory while the step is evaluated.
    pub peak_bytes: u64,
}

impl SideGraph {
    pub fn nodes(&self) -> u32 {
        self.census.values().sum()
    }
}

/// The smallest position a step graph can be read at.
pub const MIN_POSITION: u32 = 3;

/// The deterministic prompt both sides prefill for a step at `position`: `position - 2`
/// ordinary ids below `vocab - 3` (the generators keep special tokens at the top ids).
pub fn prompt_ids(position: u32, vocab: i32) -> Result<Vec<u32>, GraphError> {
    if position < MIN_POSITION {
        return Err(GraphError::Position(position));
    }
    let ordinary = (vocab.max(4) - 3) as u32;
    Ok((0..position - 2).map(|i| (i * 7 + 3) % ordinary).collect())
}

extern "C" {
    fn fopen(path: *const std::os::raw::c_char, mode: *const std::os::raw::c_char) -> *mut mlx_sys::FILE;
    fn fclose(file: *mut mlx_sys::FILE) -> std::os::raw::c_int;
}

/// Runs one of mlx-c's graph writers on `outputs` into a temporary file and returns the text.
fn write_graph(
    stage: &'static str,
    writer: unsafe extern "C" fn(*mut mlx_sys::FILE, mlx_sys::mlx_node_namer, mlx_sys::mlx_vector_array) -> i32,
    outputs: &[Array],
) -> Result<String, GraphError> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("decode-baseline-graph-{}-{n}.txt", std::process::id()));
    let c_path = CString::new(path.as_os_str().as_encoded_bytes()).expect("a temp path has no NUL");
    let raw: Vec<mlx_sys::mlx_array> = outputs.iter().map(Array::as_ptr).collect();
    // SAFETY: the vector and namer are created and freed here; the arrays outlive the call;
    // the FILE is opened, written by mlx-c and closed before the file is read.
    let status = unsafe {
        let file = fopen(c_path.as_ptr(), c"w".as_ptr());
        if file.is_null() {
            return Err(GraphError::Io { what: "create", path, source: std::io::Error::last_os_error() });
        }
        let vector = mlx_sys::mlx_vector_array_new_data(raw.as_ptr(), raw.len());
        let namer = mlx_sys::mlx_node_namer_new();
        let status = writer(file, namer, vector);
        mlx_sys::mlx_node_namer_free(namer);
        mlx_sys::mlx_vector_array_free(vector);
        fclose(file);
        status
    };
    let text = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    if status != 0 {
        return Err(GraphError::Mlx { stage, source: Exception::custom(format!("{stage} returned {status}")) });
    }
    text.map_err(|source| GraphError::Io { what: "read", path, source })
}

/// The outputs of the controlled loop's step at `position`, unevaluated, after its prefill.
fn controlled_outputs(model: &Model, prompt: &[u32]) -> Result<Vec<Array>, GraphError> {
    // The prefill, as decode.rs runs it (chunks of `prompt[:-1]`, then the last token), the
    // argmax, everything evaluated.
    let (mut cache, logits) = prefill_prompt(model, prompt, PREFILL_STEP_SIZE)?;
    let token = argmax_axis(&logits, -1, false).map_err(mlx("prompt argmax"))?;
    evaluate(&[token.clone(), logits], &cache, "prompt eval")?;
    // The greedy step, as decode.rs builds it: the previous argmax ([1, 1]) fed, the argmax of
    // the logits; the loop evaluates the argmax, the logits and every cache buffer. The first
    // is evaluated, the second returned.
    let (token, logits) = step(model, &token, &mut cache)?;
    evaluate(&[token.clone(), logits], &cache, "first step eval")?;
    let (next, logits) = step(model, &token, &mut cache)?;
    let mut outputs = vec![next, logits];
    outputs.extend(cache.iter().flat_map(|c| c.state().cloned()));
    Ok(outputs)
}

fn step(model: &Model, token: &Array, cache: &mut [LayerCache]) -> Result<(Array, Array), GraphError> {
    let logits = model.forward(token, cache).map_err(mlx("step forward"))?;
    let next = argmax_axis(&logits, -1, false).map_err(mlx("step argmax"))?;
    Ok((next, logits))
}

fn evaluate(arrays: &[Array], cache: &[LayerCache], stage: &'static str) -> Result<(), GraphError> {
    mlx_rs::transforms::eval(arrays.iter().chain(cache.iter().flat_map(LayerCache::state))).map_err(mlx(stage))
}

/// Peak memory above active memory while `outputs` are evaluated.
fn peak_bytes(outputs: &[Array]) -> Result<u64, GraphError> {
    let before = mlx_rs::memory::active_memory().map_err(mlx("active_memory"))?;
    mlx_rs::memory::reset_peak_memory().map_err(mlx("reset_peak_memory"))?;
    mlx_rs::transforms::eval(outputs).map_err(mlx("step eval"))?;
    let peak = mlx_rs::memory::peak_memory().map_err(mlx("peak_memory"))?;
    Ok(peak.saturating_sub(before) as u64)
}

/// The controlled loop's step graph at `position` on the model in `dir`.
pub fn controlled(dir: &Path, position: u32) -> Result<SideGraph, GraphError> {
    let model = Model::load(dir)?;
    let prompt = prompt_ids(position, model.config().vocab_size)?;
    let outputs = controlled_outputs(&model, &prompt)?;
    let labels = parse_dot(&write_graph("mlx_export_to_dot", mlx_sys::mlx_export_to_dot, &outputs)?)?;
    let node_bytes = parse_print_graph(&write_graph("mlx_print_graph", mlx_sys::mlx_print_graph, &outputs)?)?;
    if node_bytes.len() != labels.len() {
        return Err(GraphError::Parse {
            what: "the controlled graph",
            reason: format!("the DOT has {} nodes, print_graph {}", labels.len(), node_bytes.len()),
        });
    }
    let mut bytes = BTreeMap::<String, u64>::new();
    for (label, b) in labels.iter().zip(&node_bytes) {
        *bytes.entry(label.clone()).or_default() += b;
    }
    Ok(SideGraph {
        census: census(&labels),
        output_bytes: node_bytes.iter().sum(),
        bytes_nodes: labels.len() as u32,
        bytes,
        peak_bytes: peak_bytes(&outputs)?,
    })
}

/// mlx_lm's step, as built and uncompiled.
#[derive(Debug, Clone, PartialEq)]
pub struct StockGraph {
    /// As built; its bytes are the uncompiled step's (the as-built one cannot be traced), its
    /// peak its own.
    pub as_built: SideGraph,
    /// With `mx.disable_compile()`; bytes and peak as in `as_built`.
    pub uncompiled: Census,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StockOutput {
    as_built_dot: String,
    uncompiled_dot: String,
    uncompiled_export: StockExport,
    peak_bytes: u64,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StockExport {
    nodes: u32,
    output_bytes: u64,
    by_primitive: BTreeMap<String, u64>,
}

/// Runs `python tools/graph/stock_step.py` from `repo` on the model in `dir`.
pub fn stock(repo: &Path, python: &Path, dir: &Path, position: u32) -> Result<StockGraph, GraphError> {
    let config = crate::config::ModelConfig::load(dir).map_err(LoadError::from)?;
    let prompt = prompt_ids(position, config.vocab_size)?;
    let prompt: Vec<String> = prompt.iter().map(u32::to_string).collect();
    let out = Command::new(python)
        .arg(repo.join(STOCK_SCRIPT))
        .arg("--model-dir")
        .arg(dir)
        .arg("--prompt")
        .arg(prompt.join(","))
        .current_dir(repo)
        .output()
        .map_err(|source| GraphError::Spawn { program: python.to_owned(), source })?;
    if !out.status.success() {
        return Err(GraphError::Script {
            script: STOCK_SCRIPT,
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let parsed: StockOutput = serde_json::from_slice(&out.stdout)
        .map_err(|e| GraphError::Parse { what: "the stock script's output", reason: e.to_string() })?;
    let as_built = parse_dot(&parsed.as_built_dot)?;
    let uncompiled = parse_dot(&parsed.uncompiled_dot)?;
    Ok(StockGraph {
        as_built: SideGraph {
            census: census(&as_built),
            bytes: parsed.uncompiled_export.by_primitive,
            output_bytes: parsed.uncompiled_export.output_bytes,
            bytes_nodes: parsed.uncompiled_export.nodes,
            peak_bytes: parsed.peak_bytes,
        },
        uncompiled: census(&uncompiled),
    })
}

/// The two graphs of one step side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub position: u32,
    pub controlled: SideGraph,
    pub stock: StockGraph,
}

/// A primitive's applications on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Excess {
    pub controlled: u32,
    pub stock: u32,
}

impl Comparison {
    /// Builds both graphs of the step at `position` on the model in `dir`.
    pub fn of(repo: &Path, python: &Path, dir: &Path, position: u32) -> Result<Self, GraphError> {
        let controlled = controlled(dir, position)?;
        let stock = stock(repo, python, dir, position)?;
        Ok(Comparison { position, controlled, stock })
    }

    /// Primitives the controlled graph applies more often than mlx_lm's uncompiled step does.
    pub fn excess(&self) -> BTreeMap<String, Excess> {
        excess(&self.controlled.census, &self.stock.uncompiled)
    }

    /// The side-by-side table (`decode-baseline graph`).
    pub fn render(&self) -> String {
        let c = &self.controlled.census;
        let (s, u) = (&self.stock.as_built.census, &self.stock.uncompiled);
        let names: BTreeSet<&String> = c.keys().chain(s.keys()).chain(u.keys()).collect();
        let width = names.iter().map(|n| n.len()).max().unwrap_or(9).clamp(9, 48);
        let get = |m: &Census, n: &str| m.get(n).copied().unwrap_or(0);
        let mut out = String::new();
        let _ =
            writeln!(out, "decode step at position {} (cache holding {} positions)", self.position, self.position - 1);
        let _ = writeln!(
            out,
            "{:<width$}  {:>10}  {:>14}  {:>15}  {:>16}",
            "primitive", "controlled", "stock as built", "stock uncompiled", "controlled bytes"
        );
        for n in &names {
            let shown = if n.len() > width { format!("{}…", &n[..width - 1]) } else { (*n).clone() };
            let (cn, sn, un) = (get(c, n), get(s, n), get(u, n));
            let mark = if cn > un { "  <- controlled excess" } else { "" };
            let bytes = self.controlled.bytes.get(*n).copied().unwrap_or(0);
            let _ = writeln!(out, "{shown:<width$}  {cn:>10}  {sn:>14}  {un:>15}  {bytes:>16}{mark}");
        }
        let (cb, sb) = (&self.controlled, &self.stock.as_built);
        let _ = writeln!(
            out,
            "{:<width$}  {:>10}  {:>14}  {:>15}",
            "nodes",
            cb.nodes(),
            sb.nodes(),
            u.values().sum::<u32>()
        );
        let _ = writeln!(out);
        let list = |names: Vec<&String>| {
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
            }
        };
        let _ = writeln!(
            out,
            "only controlled (vs stock as built): {}",
            list(c.keys().filter(|n| !s.contains_key(*n)).collect())
        );
        let _ = writeln!(out, "only stock as built: {}", list(s.keys().filter(|n| !c.contains_key(*n)).collect()));
        let _ = writeln!(out, "only stock uncompiled: {}", list(u.keys().filter(|n| !c.contains_key(*n)).collect()));
        let excess = self.excess();
        let _ = writeln!(
            out,
            "controlled excess over stock uncompiled: {}",
            if excess.is_empty() {
                "none".to_owned()
            } else {
                excess.iter().map(|(n, e)| format!("{n} {} > {}", e.controlled, e.stock)).collect::<Vec<_>>().join(", ")
            }
        );
        let _ = writeln!(
            out,
            "output bytes: controlled {} over its {} nodes; stock {} over the {} nodes MLX's export trace keeps of its uncompiled step",
            cb.output_bytes, cb.bytes_nodes, sb.output_bytes, sb.bytes_nodes
        );
        let _ = writeln!(
            out,
            "peak bytes above active while the step evaluates: controlled {}, stock {}",
            cb.peak_bytes, sb.peak_bytes
        );
        out
    }
}

/// Primitives `controlled` applies more often than `stock`.
pub fn excess(controlled: &Census, stock: &Census) -> BTreeMap<String, Excess> {
    controlled
        .iter()
        .filter_map(|(name, &c)| {
            let s = stock.get(name).copied().unwrap_or(0);
            (c > s).then(|| (name.clone(), Excess { controlled: c, stock: s }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOT: &str = "digraph {\n{ rank=source; \"A\"; }\n{ 9411 [label =\"Transpose\", shape=rectangle]; }\n\"A\" -> 9411\n{ \"B\"; }\n9411 -> \"B\"\n{ 9412 [label =\"SliceUpdate Prod\", shape=rectangle]; }\n\"A\" -> 9412\n\"B\" -> 9412\n{ rank=sink; \"C\"; }\n9412 -> \"C\"\n{ 9411 [label =\"Transpose\", shape=rectangle]; }\n}";

    #[test]
    fn dot_labels_are_read_per_application_with_spaces_kept() {
        // The same primitive id twice is two applications (a compiled primitive is shared by
        // every call of its function), so nothing is deduplicated.
        assert_eq!(parse_dot(DOT).unwrap(), ["Transpose", "SliceUpdate Prod", "Transpose"]);
        assert_eq!(census(&parse_dot(DOT).unwrap()).get("Transpose"), Some(&2));
    }

    #[test]
    fn dot_that_is_not_mlx_is_refused() {
        assert!(parse_dot("graph { }").is_err());
        assert!(parse_dot("digraph {\n{ x [label =\"Add\", shape=rectangle]; }\n}").is_err());
        assert!(parse_dot("digraph {\n{ 1 [label =\"Add }\n}").is_err());
    }

    #[test]
    fn print_graph_bytes_sum_every_output() {
        let text = "Inputs: A [(2,3), float32]\nOutputs: C [(2), bfloat16]\n\
                    Arange  -> B [(4), int32]\nSplit A [(2,3), float32] -> C [(2,1), bfloat16], D [(2,2), bfloat16]\n\
                    Sum A [(2,3), float32] -> E [(), float32]\n";
        assert_eq!(parse_print_graph(text).unwrap(), [16, 4 + 8, 4]);
        assert!(parse_print_graph("Add A -> B\n").is_err());
        assert!(parse_print_graph("Inputs: \nOutputs: \nAdd A [(2), float8] -> B [(2), float8]\n").is_err());
    }

    #[test]
    fn excess_is_more_applications_than_stock() {
        let c = census(&["Add", "Add", "Copy", "Exp"]);
        let s = census(&["Add", "Exp", "Exp"]);
        let e = excess(&c, &s);
        assert_eq!(e.len(), 2);
        assert_eq!(e["Add"], Excess { controlled: 2, stock: 1 });
        assert_eq!(e["Copy"], Excess { controlled: 1, stock: 0 });
    }

    #[test]
    fn mlx_graph_of_a_small_function_is_read_with_its_bytes() {
        use mlx_rs::ops::softmax_axis;
        let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        a.eval().unwrap();
        let b = a.add(&a).unwrap();
        let c = softmax_axis(&b, -1, None).unwrap();
        let outputs = [c];
        let labels = parse_dot(&write_graph("dot", mlx_sys::mlx_export_to_dot, &outputs).unwrap()).unwrap();
        assert_eq!(census(&labels), census(&["Add", "Softmax"]));
        let bytes = parse_print_graph(&write_graph("print", mlx_sys::mlx_print_graph, &outputs).unwrap()).unwrap();
        assert_eq!(bytes, [24, 24]);
    }

    #[test]
    fn prompt_needs_a_token_before_the_step() {
        assert!(matches!(prompt_ids(2, 512), Err(GraphError::Position(2))));
        let p = prompt_ids(300, 512).unwrap();
        assert_eq!(p.len(), 298);
        assert!(p.iter().all(|&t| t < 509));
    }
}
