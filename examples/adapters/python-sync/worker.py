"""python-sync: a synchronous greedy decode loop on mlx_lm's own model, on the Python worker kit.

    .venv/bin/python examples/adapters/python-sync/worker.py --out-dir DIR

The kit (tools/kit/python/decode_baseline_worker) does the protocol; this file is the loop. The
model is mlx_lm's (`mlx_lm.utils.load_model`, the prompt cache of `make_prompt_cache`); the loop
is not mlx_lm's: no look-ahead, one forward per token, evaluated (`mx.eval`) before its argmax.

Per request, in every mode: the prompt cache is made, then the clock starts
(`records.start_request`). The whole prompt is prefilled in chunks of at most the job's
`prefill_step_size` tokens (mlx_lm's 2048 unless the session sets another), `before_prefill_chunk`
polled before each; the first token is the
argmax of the last chunk's logits at position L. There is no separate seed forward: in headline
and reference_pair `before_seed_forward` is polled just after the last chunk's
`before_prefill_chunk`, before the forward that produces the first token (req/protocol.md §7).
Each step then polls `before_decode_step` and runs one forward:
* headline / reference_pair: feeds the token just produced, up to max_new_tokens tokens in all,
  ending early (`stop`) on a stop-set token, the first token included; reference_pair margins
  come from the logits, after the request.
* fixed_continuation: feeds the job's continuation whatever was predicted; argmax, margin and
  tie are taken from the logits after each step's end stamp; `finish_reason` is `length`.
`model_calls` = prefill chunks + steps, `unused_forwards` 0, `build_ns`/`eval_ns` null.
"""

import sys
import time

STARTED_NS = time.perf_counter_ns()
sys.dont_write_bytecode = True  # no bytecode caches beside the pinned sources

import os  # noqa: E402
from pathlib import Path  # noqa: E402

# The kit: handed over by the launcher, else the one of the checkout this file lies in, at any depth.
KIT = os.environ.get("DECODE_BASELINE_KIT") or next(
    str(p / "tools/kit/python") for p in Path(__file__).resolve().parents if (p / "tools/kit/python").is_dir()
)
sys.path.append(KIT)

from decode_baseline_worker import prefill_step_size, records, run_worker  # noqa: E402

ADAPTER = "python-sync"


def load(job):
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache
    from mlx_lm.utils import load_model

    model, _ = load_model(Path(job["model_dir"]))
    stop_ids = set(job["stop_ids"])
    step = prefill_step_size(job)

    def forward(ids, cache):
        """Logits at the last of `ids`; the cache advances by len(ids)."""
        return model(mx.array(ids)[None], cache=cache)[0, -1, :]

    def prefill(ids, cache, ctx, seed_site):
        chunks = [ids[i : i + step] for i in range(0, len(ids), step)]
        for n, chunk in enumerate(chunks, start=1):
            ctx.poll("before_prefill_chunk")
            if seed_site and n == len(chunks):
                ctx.poll("before_seed_forward")
            logits = forward(chunk, cache)
            mx.eval(logits if n == len(chunks) else [c.state for c in cache])
        return logits, len(chunks)

    def generate(job, ctx):
        """headline and reference_pair: greedy, each token fed back."""
        ids, L = job["prompt_ids"], len(job["prompt_ids"])
        cache = make_prompt_cache(model)
        t0 = records.start_request()
        logits, calls = prefill(ids, cache, ctx, seed_site=True)
        token = mx.argmax(logits).item()
        first_ns = prev = time.perf_counter_ns() - t0
        first, stamps, tokens, rows = token, [], [], []
        for _ in range(1, job["run_policy"]["max_new_tokens"]):
            if token in stop_ids:
                break
            ctx.poll("before_decode_step")
            logits = forward([token], cache)
            mx.eval(logits)
            token = mx.argmax(logits).item()
            stamps.append(time.perf_counter_ns() - t0)
            tokens.append(token)
            if job["mode"] == "reference_pair":
                rows.append(logits)
        peak = records.peak_memory()
        steps = []
        for s, (t_ns, token) in enumerate(zip(stamps, tokens), start=1):
            margin = tie = None
            if rows:
                _, margin, tie = records.top2(records.host_scores(rows[s - 1]))
            steps.append(records.step_record(L + s, token, t_ns, t_ns - prev, margin, tie))
            prev = t_ns
        reason = "stop" if token in stop_ids else "length"
        return records.request_record(L, first_ns, first, steps, calls + len(steps), reason, peak)

    def fixed_continuation(job, ctx):
        """Teacher forcing: the continuation is fed whatever the model predicted."""
        ids, L = job["prompt_ids"], len(job["prompt_ids"])
        cache = make_prompt_cache(model)
        t0 = records.start_request()
        logits, calls = prefill(ids, cache, ctx, seed_site=False)
        first_ns = time.perf_counter_ns() - t0
        first, _, _ = records.top2(records.host_scores(logits))
        steps = []
        for s, fed in enumerate(job["continuation"], start=1):
            begin = time.perf_counter_ns()
            ctx.poll("before_decode_step")
            logits = forward([fed], cache)
            mx.eval(logits)
            end = time.perf_counter_ns()
            argmax, margin, tie = records.top2(records.host_scores(logits))
            steps.append(records.step_record(L + s, argmax, end - t0, end - begin, margin, tie))
        peak = records.peak_memory()
        return records.request_record(L, first_ns, first, steps, calls + len(steps), "length", peak)

    return fixed_continuation if job["mode"] == "fixed_continuation" else generate


if __name__ == "__main__":
    sys.exit(run_worker(ADAPTER, load, started_ns=STARTED_NS))
