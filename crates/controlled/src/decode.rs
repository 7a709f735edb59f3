//! The controlled decode loop: the leanest synchronous loop MLX allows.
//!
//! The prompt is prefilled as mlx_lm's `generate_step` prefills it: `prompt[:-1]` in chunks of
//! at most the job's prefill step size (mlx_lm's `prefill_step_size`, 2048 by default), each
//! chunk's forward built and only the caches evaluated; then the last prompt token alone, whose
//! logits give the first token. Under lazy evaluation a chunk's discarded output is never
//! computed: for the first `L − 1` positions the last layer's attention output and MLP, the
//! final norm and the head do not run, only the keys and values every layer writes to its
//! cache. One forward over the whole prompt with the head on the last position only (this
//! loop's prefill until issue 48) computes all of them: on the tiny 2-layer fixture at
//! L = 512 that is twice the work, 121–129 ms against 60–61 ms on one CPU
//! (`req/findings.md` §33); on a 32-layer model about a thirtieth more. No structure with fewer
//! operations gives the same cache: every layer's keys and values at every prompt position are
//! needed, and each needs its layer's input there. The split also gives the shapes stock's
//! matmuls have, so the first token's logits are stock's bit for bit (the reference tests).
//!
//! Then one cached single-token forward per step. Every forward ends with `eval` on the argmax,
//! the logits and every cache buffer, so nothing is queued past a step: no look-ahead, no
//! `async_eval`, no `clear_cache` (stock clears MLX's buffer cache after each prefill chunk; this
//! loop keeps it, so a chunk's buffers are reused by the next). The argmax is part of the
//! evaluated graph (`mx.argmax`, lowest index on ties), so the next step's input is an evaluated
//! array.
//!
//! Differences from stock (`mlx_lm.stream_generate`), on purpose: stock always runs one unused
//! look-ahead forward; this loop makes `chunks + 1 + steps` model calls. Stock's greedy sampler
//! takes the argmax of log-probabilities (`logits - logsumexp`), this loop of the logits; see
//! `req/findings.md` for what that does to ties.
//!
//! Per step the loop records the position fed, the argmax, a monotonic stamp, and the graph
//! build and evaluation times separately. Margins (fixed-continuation, reference-pair) and the
//! contract checks read the logits on the host after the stamp, never inside a step's interval:
//! fixed-continuation times each step from its own poll to its logits, so it reads the step's
//! margin right after the stamp and lets the logits go; reference-pair times stamp to stamp, so
//! it keeps every step's logits and reads the margins after the last step. Keeping 33 logits
//! buffers alive made every graph build of fixed-continuation dearer in glibc's allocator
//! (`req/findings.md`, the q4 fixed-continuation anomaly); reading them step by step does not.
//!
//! `poll` is called before every prefill chunk, before the last prompt token's forward and before
//! every decode step; an `Err` from it ends the request there (the record is dropped: only
//! complete requests are reported).

use std::time::Instant;

use decode_baseline_wire::{RequestRecord, StepRecord};
use mlx_rs::error::Exception;
use mlx_rs::ops::indexing::argmax_axis;
use mlx_rs::Array;

use crate::compiled::CompiledSteps;
use crate::contract::{top2, Boundary, Checker, ContractViolation};
use crate::model::{LayerCache, Model};

/// mlx_lm's default `prefill_step_size`: the most prompt tokens one prefill forward takes.
pub const PREFILL_STEP_SIZE: usize = decode_baseline_wire::policy::PREFILL_STEP_SIZE as usize;

/// Where the loop calls `poll`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkpoint {
    /// Before the forward of prefill chunk `index` (0-based) of `prompt[:-1]`.
    PrefillChunk { index: u32 },
    /// Before the forward of the last prompt token, which yields the first token.
    Seed,
    /// Before the decode step that feeds the token at `position`.
    Step { position: u32 },
}

/// Why the loop failed.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("the prompt is empty")]
    EmptyPrompt,
    #[error("token id {id} at {what} index {index} is outside the vocabulary of {vocab}")]
    TokenOutOfRange { what: &'static str, index: usize, id: u32, vocab: i32 },
    #[error("max_new_tokens must be at least 1")]
    NoTokens,
    #[error("the prefill step size must be at least 1")]
    NoPrefillStep,
    #[error("mlx failed during {stage}")]
    Mlx {
        stage: &'static str,
        #[source]
        source: Exception,
    },
    #[error("failed to read logits or argmax at position {position}: {reason}")]
    Logits { position: u32, reason: String },
    #[error(transparent)]
    Contract(#[from] ContractViolation),
}

/// How a request ended without completing.
#[derive(Debug, thiserror::Error)]
pub enum RunError<E> {
    /// `poll` refused to continue at this checkpoint.
    #[error("request stopped before {at:?}")]
    Aborted { at: Checkpoint, reason: E },
    #[error(transparent)]
    Failed(#[from] DecodeError),
}

/// The loop's settings.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Check the per-step contract at every boundary (reads the logits on the host after the
    /// stamp; does not change what is measured). Default: on in debug builds.
    pub check_contract: bool,
    /// The most tokens of `prompt[:-1]` one prefill forward takes. Default: [`PREFILL_STEP_SIZE`].
    pub prefill_step_size: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { check_contract: cfg!(debug_assertions), prefill_step_size: PREFILL_STEP_SIZE }
    }
}

/// A completed request. `record.index` and `record.phase` are left 0 and `None` for the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeRun {
    pub record: RequestRecord,
    /// Top-1 minus top-2 of the logits at the prompt's last position (fixed-continuation and
    /// reference-pair; the report's request record has no field for it yet).
    pub first_token_margin: Option<f64>,
    pub first_token_tie: Option<bool>,
}

/// Which step function the loop runs after the prompt forward.
pub enum Stepper<'a> {
    /// The model's forward, built op by op each step.
    Eager,
    /// The same forward under MLX's `compile`, one trace per position, kept in the given
    /// [`CompiledSteps`] across requests ([`crate::compiled`]).
    Compiled(&'a mut CompiledSteps),
}

/// One request, in the job's mode.
#[derive(Debug, Clone, Copy)]
pub enum Request<'a> {
    /// [`run_headline`].
    Headline { prompt: &'a [u32], max_new_tokens: usize, stop: &'a [u32] },
    /// [`run_reference`].
    Reference { prompt: &'a [u32], max_new_tokens: usize, stop: &'a [u32] },
    /// [`run_fixed`].
    Fixed { prompt: &'a [u32], continuation: &'a [u32] },
}

/// One request of any mode on either step function.
pub fn run_request<E>(
    model: &Model,
    request: Request<'_>,
    options: Options,
    stepper: Stepper<'_>,
    poll: &mut dyn FnMut(Checkpoint) -> Result<(), E>,
) -> Result<DecodeRun, RunError<E>> {
    match request {
        Request::Headline { prompt, max_new_tokens, stop } | Request::Reference { prompt, max_new_tokens, stop } => {
            let steps = max_new_tokens.checked_sub(1).ok_or(DecodeError::NoTokens)?;
            let margins = matches!(request, Request::Reference { .. });
            run(model, prompt, Feed::Greedy { steps, stop }, margins, options, stepper, poll)
        }
        Request::Fixed { prompt, continuation } => {
            check_ids(model, "continuation", continuation)?;
            run(model, prompt, Feed::Fixed(continuation), true, options, stepper, poll)
        }
    }
}

enum Feed<'a> {
    Greedy { steps: usize, stop: &'a [u32] },
    Fixed(&'a [u32]),
}

/// Headline: greedy, `max_new_tokens` tokens (the first from the prompt forward, then
/// `max_new_tokens - 1` cached steps), stopping early at a `stop` token; no margins.
pub fn run_headline<E>(
    model: &Model,
    prompt: &[u32],
    max_new_tokens: usize,
    stop: &[u32],
    options: Options,
    poll: &mut dyn FnMut(Checkpoint) -> Result<(), E>,
) -> Result<DecodeRun, RunError<E>> {
    run_request(model, Request::Headline { prompt, max_new_tokens, stop }, options, Stepper::Eager, poll)
}

/// Reference-pair: as headline, with the top-2 margin and tie flag of every step.
pub fn run_reference<E>(
    model: &Model,
    prompt: &[u32],
    max_new_tokens: usize,
    stop: &[u32],
    options: Options,
    poll: &mut dyn FnMut(Checkpoint) -> Result<(), E>,
) -> Result<DecodeRun, RunError<E>> {
    run_request(model, Request::Reference { prompt, max_new_tokens, stop }, options, Stepper::Eager, poll)
}

/// Fixed-continuation: the prompt forward, then one step per `continuation` token fed whatever
/// was predicted; argmax, margin and tie per step.
pub fn run_fixed<E>(
    model: &Model,
    prompt: &[u32],
    continuation: &[u32],
    options: Options,
    poll: &mut dyn FnMut(Checkpoint) -> Result<(), E>,
) -> Result<DecodeRun, RunError<E>> {
    run_request(model, Request::Fixed { prompt, continuation }, options, Stepper::Eager, poll)
}

fn check_ids(model: &Model, what: &'static str, ids: &[u32]) -> Result<(), DecodeError> {
    let vocab = model.config().vocab_size;
    match ids.iter().enumerate().find(|(_, &id)| id as i64 >= vocab as i64) {
        Some((index, &id)) => Err(DecodeError::TokenOutOfRange { what, index, id, vocab }),
        None => Ok(()),
    }
}

fn mlx(stage: &'static str) -> impl FnOnce(Exception) -> DecodeError {
    move |source| DecodeError::Mlx { stage, source }
}

fn ns(from: Instant, to: Instant) -> u64 {
    to.duration_since(from).as_nanos() as u64
}

/// `eval` on the step's outputs and every cache buffer. `token` is `None` when the argmax is not
/// part of the loop (fixed-continuation feeds its own tokens): then it stays outside the interval.
fn eval_step<'a>(
    token: Option<&'a Array>,
    logits: &'a Array,
    buffers: impl Iterator<Item = &'a Array>,
) -> Result<(), Exception> {
    mlx_rs::transforms::eval(token.into_iter().chain([logits]).chain(buffers))
}

/// The argmax of `logits`: the one evaluated inside the step when the loop needs it, else
/// computed and evaluated now, after the step's stamp.
fn settle_argmax(timed: Option<Array>, logits: &Array) -> Result<Array, Exception> {
    match timed {
        Some(token) => Ok(token),
        None => {
            let token = argmax_axis(logits, -1, false)?;
            token.eval()?;
            Ok(token)
        }
    }
}

/// A prompt as the prefill feeds it: `prompt[:-1]` in chunks of at most the step size, and the
/// last token alone, each `[1, n]`.
pub struct PromptChunks {
    chunks: Vec<Array>,
    last: Array,
}

impl PromptChunks {
    pub fn new(prompt: &[u32], step_size: usize) -> Result<PromptChunks, DecodeError> {
        let (&last, head) = prompt.split_last().ok_or(DecodeError::EmptyPrompt)?;
        if step_size == 0 {
            return Err(DecodeError::NoPrefillStep);
        }
        let ids = |ids: &[u32]| {
            let ids: Vec<i32> = ids.iter().map(|&t| t as i32).collect();
            Array::from_slice(&ids, &[1, ids.len() as i32])
        };
        Ok(PromptChunks { chunks: head.chunks(step_size).map(ids).collect(), last: ids(&[last]) })
    }

    /// The prefill's model calls: the chunks and the last token's forward.
    pub fn forwards(&self) -> u32 {
        self.chunks.len() as u32 + 1
    }
}

/// mlx_lm's prefill (see the module docs): `poll`, then each chunk's forward with only the
/// caches evaluated, then `poll` at [`Checkpoint::Seed`] and the last token's forward. Returns
/// the instant the first `poll` returned, and the last token's logits `[1, 1, vocab]`,
/// unevaluated (the caller evaluates them with the caches and its argmax).
pub fn prefill<E>(
    model: &Model,
    prompt: &PromptChunks,
    cache: &mut [LayerCache],
    poll: &mut dyn FnMut(Checkpoint) -> Result<(), E>,
) -> Result<(Instant, Array), RunError<E>> {
    let mut poll_at = |at: Checkpoint| poll(at).map_err(|reason| RunError::Aborted { at, reason });
    let mut started = None;
    for (index, chunk) in prompt.chunks.iter().enumerate() {
        poll_at(Checkpoint::PrefillChunk { index: index as u32 })?;
        started.get_or_insert_with(Instant::now);
        // The hidden states are dropped unevaluated: only the keys and values are computed.
        model.hidden(chunk, cache).map_err(mlx("prefill chunk"))?;
        mlx_rs::transforms::eval(cache.iter().flat_map(LayerCache::state)).map_err(mlx("prefill chunk eval"))?;
    }
    poll_at(Checkpoint::Seed)?;
    let started = *started.get_or_insert_with(Instant::now);
    let logits = model.forward(&prompt.last, cache).map_err(mlx("prompt forward"))?;
    Ok((started, logits))
}

/// [`prefill`] of `prompt` into a fresh cache, without polls: the loop's prompt forward for
/// the tests and the graph reader, which build it outside a request.
pub fn prefill_prompt(
    model: &Model,
    prompt: &[u32],
    step_size: usize,
) -> Result<(Vec<LayerCache>, Array), DecodeError> {
    let chunks = PromptChunks::new(prompt, step_size)?;
    let mut cache = model.new_cache();
    match prefill(model, &chunks, &mut cache, &mut |_| Ok::<(), std::convert::Infallible>(())) {
        Ok((_, logits)) => Ok((cache, logits)),
        Err(RunError::Failed(err)) => Err(err),
        Err(RunError::Aborted { reason, .. }) => match reason {},
    }
}

fn run<E>(
    model: &Model,
    prompt: &[u32],
    feed: Feed<'_>,
    margins: bool,
    options: Options,
    mut stepper: Stepper<'_>,
    poll: &mut dyn FnMut(Checkpoint) -> Result<(), E>,
) -> Result<DecodeRun, RunError<E>> {
    check_ids(model, "prompt", prompt)?;
    let prompt_len = prompt.len() as u32;
    let n_steps = match feed {
        Feed::Greedy { steps, .. } => steps,
        Feed::Fixed(c) => c.len(),
    };
    // Built before the clock starts: host-side input preparation is not part of the loop.
    let chunks = PromptChunks::new(prompt, options.prefill_step_size)?;
    let mut checker = options.check_contract.then(Checker::new);
    // Evaluated logits kept for the margins, read after the last step.
    let mut kept: Vec<Array> =
        Vec::with_capacity(if margins && matches!(feed, Feed::Greedy { .. }) { n_steps + 1 } else { 0 });
    mlx_rs::memory::reset_peak_memory().map_err(mlx("reset_peak_memory"))?;

    let start = Instant::now();
    let mut cache = model.new_cache();
    // Greedy decoding samples inside the loop; fixed-continuation only needs the logits there.
    let sample_in_loop = matches!(feed, Feed::Greedy { .. });
    let (t0, logits) = prefill(model, &chunks, &mut cache, poll)?;
    let timed = sample_in_loop.then(|| argmax_axis(&logits, -1, false)).transpose().map_err(mlx("prompt argmax"))?;
    eval_step(timed.as_ref(), &logits, cache.iter().flat_map(LayerCache::state)).map_err(mlx("prompt eval"))?;
    let t1 = Instant::now();
    let mut token = settle_argmax(timed, &logits).map_err(mlx("prompt argmax"))?;
    let first_token = token
        .try_item_exact::<u32>()
        .map_err(|e| DecodeError::Logits { position: prompt_len, reason: e.to_string() })?;
    let first_token_ns = ns(start, t1);
    let prefill_dur_ns = ns(t0, t1);
    if let Some(c) = checker.as_mut() {
        c.check(&Boundary {
            position: prompt_len,
            produced: 1,
            t_ns: first_token_ns,
            argmax: first_token,
            logits: &logits,
            cache: &cache,
        })
        .map_err(DecodeError::from)?;
    }
    // Fixed-continuation reads each margin at once (see the module docs); reference-pair keeps.
    let keep = margins && sample_in_loop;
    let (mut first_token_margin, mut first_token_tie) = (None, None);
    if keep {
        kept.push(logits);
    } else if margins {
        let top = top2(&logits).map_err(|reason| DecodeError::Logits { position: prompt_len, reason })?;
        (first_token_margin, first_token_tie) = (Some(top.margin()), Some(top.tie()));
    }

    // The compiled step's cache buffers, carried from step to step (the caches lag, see
    // `crate::compiled`); empty for the eager step, which keeps them in `cache`.
    let mut state: Vec<Array> = match stepper {
        Stepper::Eager => Vec::new(),
        Stepper::Compiled(_) => cache.iter().flat_map(LayerCache::state).cloned().collect(),
    };
    let mut steps: Vec<StepRecord> = Vec::with_capacity(n_steps);
    let mut previous_stamp = t1;
    let mut finish_reason = "length";
    let stopped = |t: u32| matches!(feed, Feed::Greedy { stop, .. } if stop.contains(&t));
    if stopped(first_token) {
        finish_reason = "stop";
    }
    while finish_reason == "length" && steps.len() < n_steps {
        let k = steps.len();
        let position = prompt_len + 1 + k as u32;
        let at = Checkpoint::Step { position };
        let step_start = Instant::now();
        poll(at).map_err(|reason| RunError::Aborted { at, reason })?;
        let s0 = Instant::now();
        let input = match feed {
            // The previous argmax: evaluated, already shaped [1, 1].
            Feed::Greedy { .. } => token.clone(),
            Feed::Fixed(c) => Array::from_slice(&c[k..k + 1], &[1, 1]),
        };
        let logits = match &mut stepper {
            Stepper::Eager => model.forward(&input, &mut cache).map_err(mlx("step forward"))?,
            Stepper::Compiled(compiled) => {
                let offset = position as i32 - 1;
                let (logits, next) = compiled
                    .step(model, &mut cache, prompt_len, offset, &input, &state)
                    .map_err(mlx("compiled step"))?;
                state = next;
                logits
            }
        };
        let timed = sample_in_loop.then(|| argmax_axis(&logits, -1, false)).transpose().map_err(mlx("step argmax"))?;
        let s1 = Instant::now();
        // The compiled step's buffers are in `state` (the lagging caches must not be evaluated).
        let buffers = cache.iter().filter(|_| state.is_empty()).flat_map(LayerCache::state).chain(&state);
        eval_step(timed.as_ref(), &logits, buffers).map_err(mlx("step eval"))?;
        let s2 = Instant::now();
        token = settle_argmax(timed, &logits).map_err(mlx("step argmax"))?;
        let argmax =
            token.try_item_exact::<u32>().map_err(|e| DecodeError::Logits { position, reason: e.to_string() })?;
        steps.push(StepRecord {
            position,
            argmax,
            t_ns: ns(start, s2),
            // Greedy: stamp to stamp, as a stream of tokens is timed. Fixed-continuation: this
            // step's poll and forward to its logits evaluated (req/protocol.md, timing per mode).
            dur_ns: if sample_in_loop { ns(previous_stamp, s2) } else { ns(step_start, s2) },
            build_ns: Some(ns(s0, s1)),
            eval_ns: Some(ns(s1, s2)),
            margin: None,
            tie: None,
        });
        previous_stamp = s2;
        if let Some(c) = checker.as_mut() {
            if matches!(stepper, Stepper::Compiled(_)) {
                // The checks read the caches: bring them to this step (after the stamp).
                CompiledSteps::sync(&mut cache, position as i32, &state).map_err(mlx("cache sync"))?;
            }
            c.check(&Boundary {
                position,
                produced: k + 2,
                t_ns: ns(start, s2),
                argmax,
                logits: &logits,
                cache: &cache,
            })
            .map_err(DecodeError::from)?;
        }
        if keep {
            kept.push(logits);
        } else if margins {
            let top = top2(&logits).map_err(|reason| DecodeError::Logits { position, reason })?;
            let step = steps.last_mut().expect("the step was just recorded");
            (step.margin, step.tie) = (Some(top.margin()), Some(top.tie()));
        }
        if stopped(argmax) {
            finish_reason = "stop";
        }
    }

    let peak_memory_bytes = mlx_rs::memory::peak_memory().map_err(mlx("peak_memory"))? as u64;
    for (i, logits) in kept.iter().enumerate() {
        let position = prompt_len + i as u32;
        let top = top2(logits).map_err(|reason| DecodeError::Logits { position, reason })?;
        if i == 0 {
            first_token_margin = Some(top.margin());
            first_token_tie = Some(top.tie());
        } else {
            steps[i - 1].margin = Some(top.margin());
            steps[i - 1].tie = Some(top.tie());
        }
    }
    let model_calls = chunks.forwards() + steps.len() as u32;
    Ok(DecodeRun {
        record: RequestRecord {
            index: 0,
            phase: None,
            prompt_len,
            prefill_dur_ns,
            first_token_ns,
            first_token,
            steps,
            unused_forwards: 0,
            model_calls,
            peak_memory_bytes: Some(peak_memory_bytes),
            finish_reason: finish_reason.to_owned(),
        },
        first_token_margin,
        first_token_tie,
    })
}
