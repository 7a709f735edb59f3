#!/usr/bin/env python3
"""Time to first token of each adapter against the reference, per cell of a session.

    tools/measure/ttft_table.py SESSION_DIR_OR_JSON [ADAPTER [REFERENCE]]

Per cell (reference-pair cells left out): each adapter's median `first_token_ns` over its
measured requests, and the ratio ADAPTER/REFERENCE (default controlled/stock) as the geometric
mean over worker runs of each run's mean log ratio of paired requests (request k of ADAPTER's
run r against request k of REFERENCE's run r), with a 95 % t-interval on the runs (df = runs - 1):
an error that holds run-to-run effects. Needs two runs or more a side; with one it prints no
interval. Below each cell, the noise of the paired log ratios at two levels (the figures the
first-token looks' simulation is set to, `stats::simulation`): σ a pair (the pooled sd within
runs) and the run part (the sd of the run means less what σ gives them, σ²/n). The session's own
verdicts on time to first token are its `TTFT` rows; this is a measurement aid.
"""
import json
import math
import statistics
import sys
from pathlib import Path

# Two-sided 97.5 % points of Student's t for df 1..40.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042, 2.040, 2.037, 2.035, 2.032, 2.030, 2.028, 2.026, 2.024, 2.023, 2.021]


def t975(df):
    """Student's t at 97.5 %: the table to df 40, then 1.96 + 2.4/df (within 0.001 from df 40 on)."""
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.4 / df


def measured(report):
    return {q["index"]: q for q in report["requests"] if q.get("phase") in ("measured", None)}


def main(argv):
    path = Path(argv[1])
    session = json.loads((path / "session.json" if path.is_dir() else path).read_text())
    adapter = argv[2] if len(argv) > 2 else "controlled"
    reference = argv[3] if len(argv) > 3 else "stock"
    runs = {}
    for w in session["workers"]:
        report = w.get("report")
        if w.get("aa") or w["validation_errors"] or not report or report["status"] != "ok":
            continue
        if report["mode"] == "reference_pair":
            continue
        runs.setdefault(w["cell"], {}).setdefault(w["adapter"], {})[w["repetition"]] = measured(report)
    print(f"{'cell':<48} {adapter + ' TTFT':>16} {reference + ' TTFT':>12} {'ratio':>7}  95 % interval (runs)")
    for cell, by_adapter in runs.items():
        if adapter not in by_adapter or reference not in by_adapter:
            continue
        med = {a: statistics.median(q["first_token_ns"] for r in by_adapter[a].values() for q in r.values()) / 1e6
               for a in (adapter, reference)}
        run_means, within, n = [], [], 0
        for rep, xs in by_adapter[adapter].items():
            rs = by_adapter[reference].get(rep)
            if not rs:
                continue
            logs = [math.log(xs[k]["first_token_ns"] / rs[k]["first_token_ns"]) for k in xs if k in rs]
            run_means.append(statistics.fmean(logs))
            within.append(statistics.variance(logs) if len(logs) >= 2 else float("nan"))
            n = len(logs)
        ratio = math.exp(statistics.fmean(run_means))
        interval = ""
        if len(run_means) >= 2:
            half = t975(len(run_means) - 1) * statistics.stdev(run_means) / math.sqrt(len(run_means))
            lo, hi = math.exp(math.log(ratio) - half), math.exp(math.log(ratio) + half)
            interval = f"[{lo:.3f}, {hi:.3f}] ({len(run_means)} runs)"
        print(f"{cell:<48} {med[adapter]:>13.2f} ms {med[reference]:>9.2f} ms {ratio:>7.3f}  {interval}")
        if len(run_means) >= 2 and n >= 2:
            sigma2 = statistics.fmean(within)
            run_part = max(0.0, statistics.variance(run_means) - sigma2 / n)
            print(f"{'':<48} noise: σ {math.sqrt(sigma2):.4f} a pair, run part {math.sqrt(run_part):.4f} "
                  f"(run means sd {statistics.stdev(run_means):.4f}, {n} pairs a run)")


if __name__ == "__main__":
    main(sys.argv)
