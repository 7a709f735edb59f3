"""What `mx.compile` does to a greedy decode step on this backend, measured (req/findings.md §4).

    .venv/bin/python tools/measure/compiled_step.py [MODEL_DIR] [--requests N] [--prompt-len L]

Two synchronous greedy loops on mlx_lm's own model, the same prompt and 128 tokens:

* eager: one forward per token, `mx.eval` before its argmax (as `examples/adapters/python-sync`);
* compiled: the same step under `mx.compile`, one trace per position. mlx_lm's KV cache writes
  the new key and value at `offset`, a Python int, so a trace is only valid at the position it
  was traced at: the step is compiled once per position and the compiled functions are kept
  across requests, so the first request traces every position (cold) and later ones replay.

Per loop it prints the first request's per-token median apart from the measured ones', and the
largest absolute logit difference of the compiled loop against the eager one at every step of
every request (0 means bit-identical). The loops alternate request by request (eager, compiled,
eager, ...) so that a machine that slows down slows both.
"""

import argparse
import json
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.utils import load_model

REPO = Path(__file__).resolve().parents[2]


def prompt(length):
    manifest = json.loads((REPO / "workloads.json").read_text())
    return manifest["prompts"][f"tiny-qwen3-L{length}"]["ids"]


def eager_loop(model):
    def step(token, cache):
        return model(mx.array([[token]]), cache=cache)[0, -1, :]

    return step


def compiled_loop(model):
    traces = {}

    def traced(offset, token, keys, values):
        cache = make_prompt_cache(model)
        for c, k, v in zip(cache, keys, values):
            c.keys, c.values, c.offset = k, v, offset
        logits = model(token[None], cache=cache)[0, -1, :]
        return logits, [c.keys for c in cache], [c.values for c in cache]

    def step(token, cache):
        offset = cache[0].offset
        fn = traces.get(offset)
        if fn is None:
            fn = traces[offset] = mx.compile(partial(traced, offset))
        logits, keys, values = fn(mx.array([token]), [c.keys for c in cache], [c.values for c in cache])
        for c, k, v in zip(cache, keys, values):
            c.keys, c.values, c.offset = k, v, offset + 1
        return logits

    return step


def request(model, step, ids, tokens):
    cache = make_prompt_cache(model)
    mx.synchronize()
    logits = model(mx.array(ids)[None], cache=cache)[0, -1, :]
    mx.eval(logits)
    token = mx.argmax(logits).item()
    durations, rows, stream = [], [], [token]
    prev = time.perf_counter_ns()
    for _ in range(tokens - 1):
        logits = step(token, cache)
        mx.eval(logits)
        token = mx.argmax(logits).item()
        now = time.perf_counter_ns()
        durations.append(now - prev)
        prev = now
        rows.append(logits)
        stream.append(token)
    return statistics.median(durations), rows, stream


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=str(REPO / "fixtures/tiny-qwen3"))
    parser.add_argument("--requests", type=int, default=21, help="requests per loop, the first cold")
    parser.add_argument("--prompt-len", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    model, _ = load_model(Path(args.model))
    ids = prompt(args.prompt_len)
    loops = {"eager": eager_loop(model), "compiled": compiled_loop(model)}
    medians = {name: [] for name in loops}
    worst, same_stream = 0.0, True
    for _ in range(args.requests):
        results = {name: request(model, step, ids, args.tokens) for name, step in loops.items()}
        for name, (median, _, _) in results.items():
            medians[name].append(median)
        (_, eager_rows, eager_stream), (_, compiled_rows, compiled_stream) = results["eager"], results["compiled"]
        same_stream &= eager_stream == compiled_stream
        for a, b in zip(eager_rows, compiled_rows):
            worst = max(worst, mx.abs(a - b).max().item())
    print(f"model {args.model}, L{args.prompt_len}, {args.tokens} tokens, backend {mx.default_device()}")
    for name, values in medians.items():
        measured = statistics.median(values[1:])
        print(f"{name:>9}: first request {values[0] / 1e3:8.1f} µs per token, "
              f"measured (median of {len(values) - 1}) {measured / 1e3:8.1f} µs per token")
    ratio = statistics.median(medians["compiled"][1:]) / statistics.median(medians["eager"][1:])
    print(f"compiled/eager per token {ratio:.3f}; streams identical: {same_stream}; "
          f"max |logit difference| {worst:g}")
    return 0 if same_stream else 1


if __name__ == "__main__":
    sys.exit(main())
