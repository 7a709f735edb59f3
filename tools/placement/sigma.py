#!/usr/bin/env python3
"""Per-pair scatter of a yardstick session: for every measured request pair (same cell,
repetition, A/A flag and request index) of adapter X against the reference R,
d = ln(median step X) - ln(median step R), with the step's time taken from `dur_ns` (the
whole step, what the rule tests), `eval_ns` or `build_ns` (its two parts; controlled workers
only). Prints per field the SD of d over all pairs, over the even and the odd pairs (the
interleaved order grants the even rounds in the job's adapter order and the odd ones in
reverse), the mean of d over each (their difference is the order
effect the A B / B A blocks cancel), and the SD of the block means (each even pair with the
odd pair after it) times sqrt(2), comparable with the per-pair SD; then the pair count and
each adapter's per-token median (median of the requests' median dur_ns).

usage: sigma.py SESSION.json [X] [R]   (default X=controlled-b, R=controlled)
"""
import json, math, statistics, sys

FIELDS = ("dur_ns", "eval_ns", "build_ns")

path = sys.argv[1]
x_name = sys.argv[2] if len(sys.argv) > 2 else "controlled-b"
r_name = sys.argv[3] if len(sys.argv) > 3 else "controlled"
session = json.load(open(path))
medians = {f: {} for f in FIELDS}
for w in session["workers"]:
    report = w.get("report")
    if not report:
        continue
    for req in report["requests"]:
        if req.get("phase") != "measured" or not req["steps"]:
            continue
        key = (w["cell"], w["repetition"], w["aa"], req["index"])
        for f in FIELDS:
            values = [s[f] for s in req["steps"] if s.get(f) is not None]
            if values:
                medians[f].setdefault(w["adapter"], {})[key] = statistics.median(values)


def sd(values):
    return round(statistics.stdev(values), 4) if len(values) > 1 else None


def scatter(field):
    xs, rs = medians[field].get(x_name, {}), medians[field].get(r_name, {})
    keys = sorted(set(xs) & set(rs))
    if not keys:
        return None
    d = {k: math.log(xs[k] / rs[k]) for k in keys}
    even = [v for k, v in d.items() if k[3] % 2 == 0]
    odd = [v for k, v in d.items() if k[3] % 2 == 1]
    blocks = [(d[k] + d[(*k[:3], k[3] + 1)]) / 2 for k in keys if k[3] % 2 == 0 and (*k[:3], k[3] + 1) in d]
    return {
        "sigma": sd(list(d.values())),
        "sigma_even": sd(even),
        "sigma_odd": sd(odd),
        "mean_even": round(statistics.mean(even), 4) if even else None,
        "mean_odd": round(statistics.mean(odd), 4) if odd else None,
        "sigma_blocks_x_sqrt2": round(sd(blocks) * math.sqrt(2), 4) if len(blocks) > 1 else None,
        "pairs": len(d),
    }


per_token = {a: statistics.median(m.values()) / 1000 for a, m in medians["dur_ns"].items()}
print(json.dumps({
    "session": session["session_id"],
    "placement": session.get("placement"),
    **{f.removesuffix("_ns"): scatter(f) for f in FIELDS},
    "per_token_us": {a: round(v, 1) for a, v in sorted(per_token.items())},
    "wall_s": round(session["wall_ns"] / 1e9, 1),
}))
