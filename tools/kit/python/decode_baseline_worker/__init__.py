"""decode_baseline_worker: the Python worker kit. Write the decode loop; the kit does the protocol.

A decode-baseline worker is a program the launcher runs as `<program> --out-dir DIR` with
DIR/job.json written (req/protocol.md is the contract). This package implements everything in
that contract except decoding, in the standard library only, so it is imported before MLX. The
stock worker (tools/stock/worker.py) and examples/adapters/python-sync/worker.py are built on it.

What the author writes
----------------------
    import sys, time
    STARTED = time.perf_counter_ns()
    sys.dont_write_bytecode = True          # no caches beside pinned sources
    sys.path.append("<decode-baseline checkout>/tools/kit/python")
    from decode_baseline_worker import records, run_worker

    def load(job):                          # after validation, before worker-ready
        model = ...                         # load job["model_dir"]
        def run_request(job, ctx):          # one request of job["mode"]
            ...                             # ctx.poll(site) before every forward
            return records.request_record(...)
        return run_request

    sys.exit(run_worker("my-loop", load, started_ns=STARTED))

The adapter name is `stock` or a declared name (`^[a-z][a-z0-9_-]{0,31}$`, not `controlled`
or `stock`) with an entry in the manifest's `adapters` map (examples/adapters/README.md).

The protocol's constants (file names, environment variables, hook sites, statuses and exit
codes, schema versions, the request plan's rule, the key sets of the job and the manifest) are
read at import from protocol_constants.json beside this package's modules, generated from the
Rust definitions (crates/wire/src/constants.rs) and checked there for staleness.

What the kit does (runner.run_worker), in the protocol's order
---------------------------------------------------------------
1. Out dir: refuses a missing DIR or a file in its place, writing nothing (exit 1); reads the
   test hook and test slowdown variables (an unknown site is refused the same way).
2. Claim: creates DIR/worker-claim exclusively (an existing claim: exit 1, nothing written).
3. Job: a job.json that cannot be read, lacks its header, or has a key the job does not allow
   (or lacks one it requires) at any depth is refused with no report (exit 1).
4. Validation (validate.py), each failure a `failed` report whose error names the field:
   schema_version; `adapter` equal to this worker's name; mode; gate; `repo_root` (stock: resolving to
   `root`, its own repository; a declared adapter: the launcher's repository, an absolute
   folder); the manifest, its digest and its pin; the manifest's keys at every depth (an unknown
   or missing key names `manifest_path`, as serde does), and the shape of its optional
   `adapters` map; case, `model_dir` and the artifact's exact file set; prompt, its
   continuation's digest, continuation, cell, stop set; run policy; environment pins and device; the worker's own
   sources (stock: trees tools/stock and tools/kit/python; a declared name: the members of
   `manifest.adapters[name].sources` under the manifest's folder) against `manifest.worker_sources[name]`
   (a changed byte, an added or a removed file); the lock file and its backend; then, importing
   MLX and mlx_lm, their versions, the mlx_lm freeze, the device, the mapped libmlx. It builds the
   report's `identity` (worker_sources_sha256: the freeze of `worker_sources[name]`; code_version:
   `git rev-parse HEAD` of `repo_root`, `+dirty` if modified, `unknown` when it is no git
   checkout: the launcher's code for every adapter, a declared adapter's own code being pinned
   by its sources digest).
5. `load(job)`: a Refusal it raises is reported as is (e.g. `validation failed: stop_ids: ...`);
   any other exception as `failed to load the model from <model_dir>: ...`.
6. Ready: the gate FIFO for a gated job, then DIR/worker-ready; the deadline starts; the watchdog
   thread polls every `watchdog_poll_ms` and, `backstop_grace_s` after it fires, writes the
   `timeout` report itself if the main loop has not started writing it.
7. Requests (`request_plan`, by the rule in protocol_constants.json): `first`, `warmup`,
   `measured` by the run policy (reference_pair: one request, phase None). Before each: the cancel/deadline check, the gate wait (deadline
   paused), the `request_loop` and `stall` hooks. The record `run_request` returns gets its
   `index` and `phase`; a gated job then creates request-<i>-done. A stop (ctx.poll raising
   protocol.Interrupted) drops the request, drains MLX (`mx.synchronize`) and ends `timeout` or
   `cancelled`; any other exception ends the run `failed` naming the request.
8. Post-loop check, the `final_request` and `before_report_write` hooks, the report written
   exactly once (temp file, hard link, temp removed; a refused link downgrades `ok` to `failed`),
   and the exit code: 0 ok, 1 failed, 3 timeout, 4 cancelled (a second signal: 4 at once).

What the loop must do (req/protocol.md §5)
-------------------------------------------
* Call `t0 = records.start_request()` after its per-request set-up (a prompt cache): it drains
  earlier work and resets the peak memory. Every `*_ns` stamp is `time.perf_counter_ns() - t0`.
* Prefill in chunks of at most `prefill_step_size(job)` tokens (the job's `prefill_step_size`:
  mlx_lm's 2048 unless the session job sets another); both built-in loops prefill as `generate_step`
  does: `prompt[:-1]` in chunks, only the caches evaluated, then the last prompt token alone.
* Call `ctx.poll(site)` before every forward: `before_prefill_chunk` before each prefill chunk,
  `before_seed_forward` before a separate forward of the last prompt token (headline and
  reference_pair),
  `before_decode_step` before each decode or fed step. poll checks cancellation and the
  deadline, holds at an armed test hook, checks again, and at `before_decode_step` spins the
  test slowdown, so it must lie inside the step's timed interval. A loop without a separate seed forward
  polls `before_seed_forward` in headline and reference_pair just after the last chunk's
  `before_prefill_chunk` (before the forward that yields the first token), so that every site
  the conformance suite holds is reached.
* Return `records.request_record(prompt_len, first_token_ns, first_token, steps, model_calls,
  finish_reason, peak_memory_bytes, unused_forwards=0)` with `steps` a list of
  `records.step_record(position, argmax, t_ns, dur_ns, margin, tie)`:
  - headline: steps s = 1 .. max_new_tokens - 1 feed token s at position L + s and produce token
    s + 1 (`argmax`); `t_ns` when it is known on the host, `dur_ns` = `t_ns` minus the previous
    stamp (`first_token_ns` for s = 1); margin and tie None; `finish_reason` `stop` when a
    `job["stop_ids"]` token is produced (it is the last; a first token in the stop set: no steps,
    `stop`), else `length`.
  - reference_pair: as headline, with margin and tie per step, computed after the request from
    the step's scores (`records.top2(records.host_scores(logits_row))`).
  - fixed_continuation: prefill the whole prompt (no seed forward); steps s = 1 .. 32 feed
    `job["continuation"][s-1]` at L + s whatever was predicted; `dur_ns` from the poll to the
    logits evaluated, argmax/margin/tie taken after the end stamp; `finish_reason` `length`.
  - `model_calls` counts forwards; `unused_forwards` those whose result was never used (0 for a
    loop without look-ahead); `build_ns`/`eval_ns` stay None unless the loop separates them.
"""

from .protocol import (
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_TIMEOUT,
    FORWARD_SITES,
    Interrupted,
    PollContext,
    Refusal,
    prefill_step_size,
)
from .runner import request_plan, run_worker

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "FORWARD_SITES",
    "Interrupted",
    "PollContext",
    "Refusal",
    "prefill_step_size",
    "request_plan",
    "run_worker",
]
