#!/usr/bin/env python3
"""Summarizes the output of tools/placement/candidates.sh: per variant, the median over its
sessions of the per-pair σ (whole step, evaluation part, build part), of the block means' σ
times sqrt(2), and the mean order effect (mean d of the even pairs minus the odd pairs).

usage: summary.py CANDIDATES.txt
"""
import json, statistics, sys

by_variant = {}
for line in open(sys.argv[1]):
    if "\t" not in line:
        continue
    label, record = line.rstrip("\n").split("\t", 1)
    by_variant.setdefault(label, []).append(json.loads(record))


def med(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 4) if values else None


for label, records in by_variant.items():
    print(json.dumps({
        "variant": label,
        "sessions": len(records),
        "sigma_dur": med(r["dur"]["sigma"] for r in records),
        "sigma_dur_each": [r["dur"]["sigma"] for r in records],
        "sigma_eval": med(r["eval"]["sigma"] for r in records),
        "sigma_build": med(r["build"]["sigma"] for r in records),
        "sigma_blocks_x_sqrt2": med(r["dur"]["sigma_blocks_x_sqrt2"] for r in records),
        "order_effect_even_minus_odd": med(r["dur"]["mean_even"] - r["dur"]["mean_odd"] for r in records),
        "per_token_us": med(r["per_token_us"]["controlled"] for r in records),
        "wall_s": med(r["wall_s"] for r in records),
    }))
