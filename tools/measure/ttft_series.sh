#!/usr/bin/env bash
# Issue 48's series (`aa_series.sh` on jobs/ttft.json): ROUNDS times (default 2) two clean
# sessions of the fixture's L512 headline cell, six interleaved runs a side (A A), then one with
# the controlled worker's time to first token slowed by the test-only spin at its seed forward
# (B: SPIN µs per request, default 3100, 5 % of the fixture's 62 ms on 2026-12-05; the share a
# spin realizes is not in proportion to it, 0.9 times on 2026-12-06 and 1.4–1.7 times on
# 2026-12-07, so read it off the A and B sessions' TTFT ratios, req/findings.md §43, §44).
# Lines in out/ttft-series.log. Then compare, tallying the TTFT rows:
#   QUANTITY=first_token tools/measure/compare_series.py target/release/decode-baseline A1 A2 ...  (A/A)
#   QUANTITY=first_token tools/measure/compare_series.py target/release/decode-baseline A2 B1 ...  (slowed)
cd "$(dirname "$0")/../.."
JOB=jobs/ttft.json OUT=out/ttft LOG=out/ttft-series.log ROUNDS=${ROUNDS:-2} SPIN=${SPIN:-3100} \
  SITE=before_seed_forward exec tools/measure/aa_series.sh
