#!/usr/bin/env python3
"""Shrinks a launcher-written session.json into test data, keeping everything `compare` and
`plot` read and the file a valid SessionReport.

- Requests in the `first` and `warmup` phases are dropped (the launcher's analysis and `compare`
  use only `measured` requests, and reference-pair's single request, phase null).
- Step fields that are null are dropped (they are `Option`s; a missing one reads as null), and so
  are the controlled worker's `build_ns`/`eval_ns` split (also `Option`s; neither `compare` nor
  `plot` reads them, and the launcher's analysis already holds their medians).
- The JSON is written compact.
Nothing else changes: timings, identities and the launcher's analysis are as recorded.

usage: strip.py SESSION_JSON OUT_JSON
"""
import json
import sys


def main(src: str, dst: str) -> None:
    with open(src) as f:
        session = json.load(f)
    for worker in session["workers"]:
        report = worker.get("report")
        if not report:
            continue
        report["requests"] = [q for q in report["requests"] if q.get("phase") in ("measured", None)]
        for request in report["requests"]:
            request["steps"] = [
                {k: v for k, v in step.items() if v is not None and k not in ("build_ns", "eval_ns")}
                for step in request["steps"]
            ]
    with open(dst, "w") as f:
        json.dump(session, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
