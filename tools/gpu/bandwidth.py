"""Measure the device's peak memory bandwidth with MLX, for the roofline (`decode-baseline plot
--peak-bandwidth-gbs`).

Two timed kernels on a buffer far larger than any cache, on MLX's default device (the GPU on a
CUDA or Metal host):

* read: ``mx.sum(x)`` reads every byte once and writes one scalar: bytes read per second, the
  rate a decode step's weight and KV reads are bounded by;
* copy: ``x + 1`` reads and writes every byte: (read + written) bytes per second.

Each is evaluated ``--warmup`` times, then timed ``--repeats`` times with ``mx.synchronize()``
around each evaluation; the best (shortest) time is reported, as a peak is. Prints one JSON
object: ``{"device": ..., "bytes": N, "read_gbs": ..., "copy_gbs": ..., "read_s": [...],
"copy_s": [...]}`` (GB = 1e9 bytes).

    python tools/gpu/bandwidth.py [--gib 4] [--repeats 10] [--warmup 3]
"""

from __future__ import annotations

import argparse
import json
import time

import mlx.core as mx


def timed(fn, warmup: int, repeats: int) -> list[float]:
    for _ in range(warmup):
        mx.eval(fn())
    mx.synchronize()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        mx.eval(fn())
        mx.synchronize()
        out.append(time.perf_counter() - start)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=4.0, help="buffer size in GiB (default 4)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args(argv)
    n = int(args.gib * 2**30) // 4
    x = mx.ones((n,), dtype=mx.float32)
    mx.eval(x)
    nbytes = n * 4
    read = timed(lambda: mx.sum(x), args.warmup, args.repeats)
    copy = timed(lambda: x + 1, args.warmup, args.repeats)
    print(
        json.dumps(
            {
                "device": str(mx.default_device()),
                "bytes": nbytes,
                "read_gbs": round(nbytes / min(read) / 1e9, 2),
                "copy_gbs": round(2 * nbytes / min(copy) / 1e9, 2),
                "read_s": [round(t, 6) for t in read],
                "copy_s": [round(t, 6) for t in copy],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
