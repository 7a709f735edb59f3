#!/usr/bin/env python3
"""Compares sessions pairwise with `decode-baseline compare B A --format json` and tallies the
verdicts: for each pair, the rows called faster or slower, the judged rows' ratios and MDEs.

    tools/measure/compare_series.py BINARY A1 B1 [A2 B2 ...]

With PROFILE set, every comparison uses that noise profile file (`compare --noise-profile`).
With POOL set (session folders, space-separated), each comparison uses a profile fitted out of
sample: `calibrate --from` the pool less the two sessions compared, written to a temporary file
(a profile of sessions spread in time, which holds their session-level part, never fitted on
the sessions it judges).

Prints one line per pair and a summary: how many comparisons had any row called faster or
slower, and, of the headline rows, how many were called slower (the detections of a slowdown
in B). With QUANTITY=first_token the headline tally is of the time-to-first-token rows (a row's
name then ends in ` TTFT`). Used for issue 42's A/A and slowdown series
(`tools/measure/aa_series.sh`) and issue 48's (`tools/measure/ttft_series.sh`)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def left_out_profile(binary, pool, a, b, folder):
    """A profile file fitted on `pool` less `a` and `b` (`calibrate --from`), in `folder`."""
    path = os.path.join(folder, "profile.json")
    if os.path.exists(path):
        os.remove(path)
    fitted = [s for s in pool if os.path.realpath(s) not in (os.path.realpath(a), os.path.realpath(b))]
    subprocess.run([binary, "calibrate", "--out", path, "--from", *fitted], check=True, capture_output=True)
    return path


def compare(binary, a, b, profile_file=None):
    profile_file = profile_file or os.environ.get("PROFILE")
    profile = ["--noise-profile", profile_file] if profile_file else []
    out = subprocess.run([binary, "compare", a, b, "--format", "json", *profile], capture_output=True, text=True)
    report = json.loads(out.stdout)
    rows = []
    for row in report["rows"]:
        decision = row["outcome"].get("decision") if isinstance(row["outcome"], dict) else None
        if not row["judged"] or decision is None:
            continue
        name = row["cell"] + (" TTFT" if row.get("quantity") == "first_token" else "")
        rows.append((name, decision["verdict"], decision["ratio"], decision["mde"]))
    return out.returncode, report.get("verdict"), rows


def main():
    binary, sessions = sys.argv[1], sys.argv[2:]
    pairs = list(zip(sessions[0::2], sessions[1::2]))
    any_called, headline_slower, headline_rows, ratios = 0, 0, 0, []
    pool = os.environ.get("POOL", "").split()
    folder = tempfile.mkdtemp(prefix="compare-series-")
    for a, b in pairs:
        profile = left_out_profile(binary, pool, a, b, folder) if pool else None
        code, verdict, rows = compare(binary, a, b, profile)
        called = [r for r in rows if r[1] in ("faster", "slower")]
        any_called += bool(called)
        tallied = ".headline TTFT" if os.environ.get("QUANTITY") == "first_token" else ".headline"
        for cell, v, ratio, _ in rows:
            if cell.endswith(tallied):
                headline_rows += 1
                headline_slower += v == "slower"
                ratios.append(ratio)
        mdes = [r[3] for r in rows]
        print(
            f"{b.rsplit('/', 1)[-1]} vs {a.rsplit('/', 1)[-1]}: exit {code} {verdict}; "
            f"rows called {len(called)}/{len(rows)} {[(c.split('.', 1)[1], v, round(x, 3)) for c, v, x, _ in called]}; "
            f"ratios {min(r[2] for r in rows):.3f}-{max(r[2] for r in rows):.3f}; "
            f"MDE median {100 * statistics.median(mdes):.1f} %"
        )
    print(
        f"summary: {len(pairs)} comparisons, {any_called} with any row called faster or slower; "
        f"headline rows called slower {headline_slower}/{headline_rows}; "
        f"headline ratio median {statistics.median(ratios):.3f}"
    )


if __name__ == "__main__":
    main()
