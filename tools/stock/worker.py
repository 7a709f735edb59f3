"""The stock worker: the shipped mlx_lm decode path under the frozen worker protocol.

    .venv/bin/python tools/stock/worker.py [--as NAME] --out-dir DIR

`--as NAME` runs it as the declared adapter NAME (workloads.json declares `stock-b`, this very
worker under a second name, the stock A/A yardstick of `decode-baseline calibrate --loop stock`).

The launcher creates DIR and writes DIR/job.json. The protocol itself (claim, validation,
ready, watchdog, cancellation, hooks, gate, report, exit codes) is the Python worker kit's
(tools/kit/python/decode_baseline_worker, req/protocol.md); what is stock's is here and in
stock_generate.py: `mlx_lm.load`, the stop set completed through the tokenizer wrapper, and
`mlx_lm.stream_generate` (or the shipped model call, fixed_continuation) observed through a
counting proxy of the model. As one rank of a group (req/distributed.md) it joins MLX's group
and loads with mlx_lm's own `sharded_load`, which calls the model's shipped `shard()`. Exit codes: 0 ok, 1 failed or refused, 3 timeout, 4 cancelled.

Every file under tools/stock/ and tools/kit/python/ is pinned by digest in the manifest
(worker_sources.stock).
"""

import sys
import time

_STARTED_NS = time.perf_counter_ns()
# No bytecode caches next to the pinned sources; these directories are appended (not
# prepended) so that they can never shadow an installed package.
sys.dont_write_bytecode = True

from pathlib import Path  # noqa: E402

_HERE = Path(__file__).resolve().parent
WORKER_REPO = _HERE.parent.parent
sys.path.append(str(_HERE))
sys.path.append(str(WORKER_REPO / "tools" / "kit" / "python"))

from decode_baseline_worker import Refusal, run_worker  # noqa: E402


_GROUP = []


def join_group(group):
    """One rank of a group (req/distributed.md): MLX's own group, strict, on the job's backend."""
    import mlx.core as mx

    joined = mx.distributed.init(strict=True, backend=group["backend"])
    _GROUP.append(joined)
    return {"rank": joined.rank(), "ranks": joined.size(), "backend": group["backend"]}


def check_shardable(model_dir, ranks):
    """A model mlx_lm shards, with attention and KV heads that divide by the group's size:
    refused before anything is loaded, naming the reason."""
    from mlx_lm.utils import _get_classes, load_config

    config = load_config(Path(model_dir))
    model_class, _ = _get_classes(config)
    if not hasattr(model_class, "shard"):
        raise Refusal("group", f"mlx_lm does not shard {config.get('model_type')} models")
    for key in ("num_attention_heads", "num_key_value_heads"):
        if config.get(key, 0) % ranks:
            raise Refusal("group.ranks", f"{key} {config.get(key)} does not divide by {ranks}")


def load(job):
    """mlx_lm.load (or, in a group, mlx_lm's own sharded_load), the stop set, the counting
    proxy; returns the request runner."""
    from mlx_lm import load as mlx_lm_load
    from mlx_lm.utils import sharded_load

    import stock_generate

    if _GROUP:
        check_shardable(job["model_dir"], _GROUP[0].size())
        model, tokenizer = sharded_load(str(job["model_dir"]), tensor_group=_GROUP[0])
    else:
        model, tokenizer = mlx_lm_load(str(job["model_dir"]))
    # The stop set: completed from the job through the wrapper's own API, then asserted
    # equal, so the wrapper neither lacks a manifest id nor stops on one the manifest lacks.
    for token_id in job["stop_ids"]:
        tokenizer.add_eos_token(str(token_id))
    if sorted(tokenizer.eos_token_ids) != job["stop_ids"]:
        raise Refusal(
            "stop_ids",
            f"expected the tokenizer's stop set to equal {job['stop_ids']}, found {sorted(tokenizer.eos_token_ids)}",
        )
    counting = stock_generate.CountingModel(model)

    def run_request(job, ctx):
        if job["mode"] == "fixed_continuation":
            return stock_generate.run_fixed_continuation(counting, job, ctx)
        return stock_generate.run_stream(counting, tokenizer, job, ctx, want_margins=job["mode"] == "reference_pair")

    return run_request


def main(argv):
    """`--as NAME` first, if given; the rest is the kit's command line."""
    adapter = "stock"
    if argv[:1] == ["--as"] and len(argv) >= 2:
        adapter, argv = argv[1], argv[2:]
    return run_worker(adapter, load, root=WORKER_REPO, argv=argv, started_ns=_STARTED_NS, join_group=join_group)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
