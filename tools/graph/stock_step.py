"""mlx_lm's graph of one decode step, as its own generator builds it, for `decode-baseline graph`.

    .venv/bin/python tools/graph/stock_step.py --model-dir DIR --prompt IDS

IDS is the prompt of length L (comma-separated); the step is the one that feeds the token at
position L+2 (the cache holds L+1 positions before it), the second step of stock's loop (the
first after a prompt is not a steady one: see `crates/controlled/src/graph.rs`).

The step is not rebuilt here: `mlx_lm.generate.generate_step` runs unmodified with its defaults
(what `stream_generate` passes: the greedy sampler on log-probabilities, no logits processors,
no KV quantization, prefill in chunks of 2048), on the model `mlx_lm.utils.load_model` loads,
on MLX's default device (as the controlled side). Its prefill (`prompt[:-1]`, then the last prompt token alone) runs as
shipped; `mx.async_eval`, which `generate_step` calls once per model call, is observed:

* the first two calls (the last prompt token's step, then the first decode step, at L+1) are
  evaluated to the end before returning, so the next step's input is an evaluated array, as
  in a synchronous loop (in stock's own loop that array may still be in flight when the next
  graph is built: the look-ahead);
* the third call receives `(next_y, next_logprobs)`, the step at position L+2, unevaluated.
  The generator is stopped there.

Printed on stdout, one JSON object:

``as_built_dot``     `mx.export_to_dot` of that step (MLX's DOT: one node per primitive
                     application, labelled by the primitive's printed name).
``uncompiled_dot``   the same step built again with `mx.disable_compile()`: mlx_lm's
                     `@mx.compile` functions (swiglu, gelu, ...) run as the ops they are made
                     of, which is how the controlled loop, which compiles nothing, builds them.
``uncompiled_export`` the output bytes of that uncompiled step's nodes (shape x dtype size,
                     summed, and by primitive) from MLX's export trace (`mx.export_function`
                     with a callback), the only place Python MLX tells a node's shape. The
                     trace merges identical nodes (MLX's compile_simplify: repeated scalar
                     broadcasts and casts mostly) and names some primitives by their family
                     (`Reduce` for `Sum`, `Sqrt` for `Rsqrt`); ``nodes`` says how many it kept.
                     The as-built graph cannot be traced so: a compiled primitive has no
                     exportable state.
``peak_bytes``       MLX's peak memory above its active memory while the as-built step is
                     evaluated (`mx.reset_peak_memory`, `mx.get_active_memory`,
                     `mx.get_peak_memory`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

import mlx.core as mx


STEP_CALL = 3
"""The `mx.async_eval` call that receives the step read (the seed step's is the first)."""


class _Captured(Exception):
    """Stops generate_step once the step is in hand."""


def capture_step(model, prompt: list[int]) -> list[mx.array]:
    """The outputs of `generate_step`'s step at position len(prompt)+2, unevaluated."""
    generate = importlib.import_module("mlx_lm.generate")
    real = mx.async_eval
    calls: list[tuple] = []

    def observe(*arrays):
        calls.append(arrays)
        if len(calls) < STEP_CALL:
            real(*arrays)
            mx.eval(*arrays)
            return
        raise _Captured

    mx.async_eval = observe
    try:
        for _ in generate.generate_step(mx.array(prompt), model, max_tokens=4):
            pass
    except _Captured:
        pass
    finally:
        mx.async_eval = real
    if len(calls) != STEP_CALL:
        raise RuntimeError(f"generate_step called mx.async_eval {len(calls)} times before its second decode step, expected {STEP_CALL}")
    return list(calls[-1])


def dot(outputs: list[mx.array]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "step.dot"
        mx.export_to_dot(str(path), *outputs)
        return path.read_text()


def export_bytes(outputs: list[mx.array]) -> dict:
    records: list[dict] = []
    mx.export_function(records.append, lambda: outputs)
    by_primitive: Counter = Counter()
    nodes = 0
    for r in records:
        if r["type"] != "primitive":
            continue
        nodes += 1
        for _name, shape, dtype in r["outputs"]:
            size = dtype.size
            for d in shape:
                size *= d
            by_primitive[r["name"]] += size
    return {"nodes": nodes, "output_bytes": sum(by_primitive.values()), "by_primitive": dict(sorted(by_primitive.items()))}


def peak_bytes(outputs: list[mx.array]) -> int:
    mx.synchronize()
    before = mx.get_active_memory()
    mx.reset_peak_memory()
    mx.eval(*outputs)
    return max(mx.get_peak_memory() - before, 0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", type=Path, required=True)
    ap.add_argument("--prompt", required=True, help="comma-separated token ids, at least one")
    args = ap.parse_args(argv)
    prompt = [int(s) for s in args.prompt.split(",") if s.strip()]
    if not prompt:
        ap.error("--prompt is empty")
    from mlx_lm.utils import load_model

    model, _config = load_model(args.model_dir)
    mx.disable_compile()
    try:
        uncompiled = capture_step(model, prompt)
        uncompiled_dot = dot(uncompiled)
        uncompiled_export = export_bytes(uncompiled)
    finally:
        mx.enable_compile()
    del uncompiled
    as_built = capture_step(model, prompt)
    as_built_dot = dot(as_built)
    result = {
        "as_built_dot": as_built_dot,
        "uncompiled_dot": uncompiled_dot,
        "uncompiled_export": uncompiled_export,
        "peak_bytes": peak_bytes(as_built),
    }
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
