"""The per-request records a loop returns (crates/wire/src/report.rs, req/protocol.md §5).

`request_record` and `step_record` build the dicts with every key the report reader requires;
`top2` and `host_scores` give a step's argmax, top-1 minus top-2 margin and tie from its logits;
`start_request` is the per-request set-up before the request's clock starts. numpy and MLX are
imported by the functions that need them, so importing this module stays cheap.
"""

import time


def start_request():
    """Drains earlier work and resets the peak memory; returns the request's start stamp."""
    import mlx.core as mx

    mx.synchronize()
    mx.reset_peak_memory()
    return time.perf_counter_ns()


def peak_memory():
    """Drains the request's work; returns MLX's peak memory since start_request, in bytes."""
    import mlx.core as mx

    mx.synchronize()
    return int(mx.get_peak_memory())


def host_scores(row):
    """A 1-D MLX array of scores as a float32 host vector."""
    import mlx.core as mx
    import numpy as np

    return np.array(row.astype(mx.float32))


def top2(scores):
    """(argmax, top1 - top2, tie) of a 1-D float32 host vector; argmax is the lowest index of
    the maximum, as mx.argmax resolves ties."""
    import numpy as np

    index = int(np.argmax(scores))
    best2 = np.partition(scores, -2)[-2:]
    first, second = float(best2.max()), float(best2.min())
    return index, first - second, first == second


def step_record(position, argmax, t_ns, dur_ns, margin=None, tie=None, build_ns=None, eval_ns=None):
    """One step: the token fed at `position` (L+s) produced `argmax`, stamped `t_ns` after the
    request's start; `margin`/`tie` None in headline; `build_ns`/`eval_ns` None unless the loop
    separates graph build from evaluation."""
    return {
        "position": position,
        "argmax": argmax,
        "t_ns": t_ns,
        "dur_ns": dur_ns,
        "build_ns": build_ns,
        "eval_ns": eval_ns,
        "margin": margin,
        "tie": tie,
    }


def request_record(
    prompt_len, first_token_ns, first_token, steps, model_calls, finish_reason, peak_memory_bytes, unused_forwards=0
):
    """One request (without `index` and `phase`, which the kit adds). `first_token_ns` is also
    `prefill_dur_ns`: prefill includes producing the first token. `finish_reason` is `length`
    or `stop` (fixed_continuation: always `length`)."""
    return {
        "prompt_len": prompt_len,
        "prefill_dur_ns": first_token_ns,
        "first_token_ns": first_token_ns,
        "first_token": first_token,
        "steps": steps,
        "unused_forwards": unused_forwards,
        "model_calls": model_calls,
        "peak_memory_bytes": peak_memory_bytes,
        "finish_reason": finish_reason,
    }
