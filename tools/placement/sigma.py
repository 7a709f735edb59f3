#!/usr/bin/env python3
"""Per-pair scatter of a yardstick session: for every measured request pair (same cell,
repetition, A/A flag and request index) of adapter X against the reference R,
d = ln(median step X) - ln(median step R); prints the SD of d, the pair count and each
adapter's per-token median (median of the requests' median step times).

usage: sigma.py SESSION.json [X] [R]   (default X=controlled-b, R=controlled)
"""
import json, math, statistics, sys

path = sys.argv[1]
x_name = sys.argv[2] if len(sys.argv) > 2 else "controlled-b"
r_name = sys.argv[3] if len(sys.argv) > 3 else "controlled"
session = json.load(open(path))
medians = {}
for w in session["workers"]:
    report = w.get("report")
    if not report:
        continue
    for req in report["requests"]:
        if req.get("phase") != "measured" or not req["steps"]:
            continue
        key = (w["cell"], w["repetition"], w["aa"], req["index"])
        medians.setdefault(w["adapter"], {})[key] = statistics.median(s["dur_ns"] for s in req["steps"])
xs, rs = medians.get(x_name, {}), medians.get(r_name, {})
d = [math.log(xs[k] / rs[k]) for k in sorted(set(xs) & set(rs))]
per_token = {a: statistics.median(m.values()) / 1000 for a, m in medians.items()}
print(json.dumps({
    "session": session["session_id"],
    "placement": session.get("placement"),
    "pairs": len(d),
    "sigma": round(statistics.stdev(d), 4) if len(d) > 1 else None,
    "mean_d": round(statistics.mean(d), 4) if d else None,
    "per_token_us": {a: round(v, 1) for a, v in sorted(per_token.items())},
    "wall_s": round(session["wall_ns"] / 1e9, 1),
}))
