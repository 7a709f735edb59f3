#!/usr/bin/env bash
# On a CUDA host with no network and no Rust: assemble the bundle written by tools/gpu/bundle.sh,
# install the suite offline next to the host's nvidia-* libraries, generate the real-size
# models, run a prepared session and write it, with a summary, to OUT (see req/gpu.md).
#
#   bash host.sh OUT            run from the bundle's folder (the pieces, SHA256SUMS, host.sh)
#
# Settings (environment variables; defaults in brackets):
#   DB_ROOT      where the bundle is unpacked [OUT/root]
#   DB_PYTHON    the host's Python, whose site-packages holds nvidia/* [python3]
#   DB_MODELS    real-size models to generate and measure [qwen3-0.6b qwen3-8b]
#   DB_FORMATS   their formats [bf16 q4]
#   DB_SMOKE     the smoke cells (the committed tiny fixture) [tiny-qwen3.tiny-qwen3-L16.*]
#   DB_SESSION_TIMEOUT_S  the session's own bound [330]
#   DB_FIXTURE_PYTHON     the interpreter that generates the models [the installed venv's];
#                a machine without a GPU can name a CPU MLX environment here to rehearse
#
# Steps, each timed into OUT/steps.tsv; a failed step stops the script with its name and exit
# code: 1 assemble (pieces, hashes) 2 unpack 3 venv (offline install of the lock, the host's
# nvidia-* linked in) 4 device (driver, GPU, MLX's device) 5 models 6 manifest (add-case, pin)
# 7 job 8 bandwidth (the roofline's ceiling) 9 session 10 summary (compare, plots with the roofline,
# energy per token and the clocks-event reasons per adapter).
# Energy: the launcher reads NVML (the driver's libnvidia-ml.so.1, loaded at run time; nothing to
# install) at the request gate of the interleaved session: per request the energy counter's
# delta, the SM and memory clocks and the clocks-event (throttle) reasons (req/session.md,
# "Energy"). The device step says whether the library is there; without it the session says
# "energy: no source: nvml missing (...)" and everything else runs as before.
# Exit codes: 0 done; 2 bad input (OUT not empty, a piece missing or altered); 3 a step failed.
set -uo pipefail
bundle="$(cd "$(dirname "$0")" && pwd)"
[ $# -eq 1 ] || { echo "usage: bash host.sh OUT" >&2; exit 2; }
out="$1"
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then echo "host: $out exists and is not empty" >&2; exit 2; fi
mkdir -p "$out" && out="$(cd "$out" && pwd)"
root="${DB_ROOT:-$out/root}"
python="${DB_PYTHON:-python3}"
models="${DB_MODELS:-qwen3-0.6b qwen3-8b}"
formats="${DB_FORMATS:-bf16 q4}"
smoke="${DB_SMOKE:-tiny-qwen3.tiny-qwen3-L16.headline tiny-qwen3.tiny-qwen3-L16.fixed_continuation tiny-qwen3.tiny-qwen3-L16.reference_pair}"
session_timeout="${DB_SESSION_TIMEOUT_S:-330}"
log="$out/host.log"
t0=$(date +%s.%N)
printf 'step\tseconds\tstatus\n' > "$out/steps.tsv"
say() { echo "host: $*" | tee -a "$log" >&2; }
# run_step NAME COMMAND...: times COMMAND, logs its output, stops the script if it fails.
run_step() {
  local name="$1"; shift
  local start; start=$(date +%s.%N)
  say "== $name"
  "$@" >> "$log" 2>&1
  local rc=$?
  local took; took=$(python3 -c "print(round($(date +%s.%N) - $start, 2))" 2>/dev/null || echo "?")
  printf '%s\t%s\t%s\n' "$name" "$took" "$rc" >> "$out/steps.tsv"
  if [ $rc -ne 0 ]; then
    say "step $name failed (exit $rc) after ${took}s; see $log"
    tail -n 15 "$log" >&2
    exit 3
  fi
  say "   $name done in ${took}s"
}

assemble() {
  cd "$bundle"
  sha256sum -c --quiet <(grep 'payload.tar.part-' SHA256SUMS) || { echo "a piece is missing or altered" >&2; return 2; }
  cat payload.tar.part-* > "$out/payload.tar"
  (cd "$out" && sha256sum -c --quiet <(grep ' payload.tar$' "$bundle/SHA256SUMS")) || return 2
  ls -l payload.tar.part-* "$out/payload.tar"
}

unpack() {
  mkdir -p "$root"
  [ -z "$(ls -A "$root")" ] || { echo "$root is not empty" >&2; return 2; }
  tar -xf "$out/payload.tar" -C "$root" --strip-components=1 && rm "$out/payload.tar"
  mv "$root/repo" "$root/src" && mv "$root/bin" "$root/src/bin-cuda"
  cat "$root/payload.json"
}

venv_install() {
  local src="$root/src" venv="$root/src/.venv-cuda"
  "$python" -c 'import sys; print(sys.version)'
  local want; want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["python_version"])' "$root/payload.json")
  local have; have=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [ "$want" = "$have" ] || { echo "the wheels are for Python $want, $python is $have: set DB_PYTHON" >&2; return 2; }
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps \
    --require-hashes --only-binary=:all: --find-links "$root/wheels" -r "$src/tools/env/envs/cuda/requirements-linux.lock"
  sha256sum "$src/tools/env/envs/cuda/requirements-linux.lock" | cut -d' ' -f1 > "$venv/decode-baseline-lock.sha256"
  local site host_site
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  host_site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # libmlx.so finds cuBLAS, cuDNN, NCCL, ... through its RPATH $ORIGIN/../../nvidia/*/lib: the
  # host's nvidia-* wheels, linked into this environment's site-packages.
  if [ -d "$host_site/nvidia" ]; then
    ln -s "$host_site/nvidia" "$site/nvidia" && echo "linked $site/nvidia -> $host_site/nvidia"
    ls "$host_site/nvidia"
  else
    echo "no nvidia-* libraries in $host_site/nvidia: not a CUDA host (libmlx.so will not load)"
  fi
  echo "$site" > "$root/site"
}

device() {
  (command -v nvidia-smi && nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv) || echo "no nvidia-smi"
  (ldconfig -p | grep -E 'libcuda\.so\.1') || echo "libcuda.so.1 is not in the loader cache: no NVIDIA driver"
  (ldconfig -p | grep -E 'libnvidia-ml\.so\.1') || echo "libnvidia-ml.so.1 is not in the loader cache: the session records no energy"
  # The clocks-event reasons and clocks before anything runs (older drivers name the field
  # clocks_throttle_reasons): a GPU already capped here is capped for the whole session.
  (nvidia-smi --query-gpu=power.draw,clocks.sm,clocks.mem,clocks_event_reasons.active --format=csv 2>/dev/null \
    || nvidia-smi --query-gpu=power.draw,clocks.sm,clocks.mem,clocks_throttle_reasons.active --format=csv 2>/dev/null) \
    || echo "nvidia-smi cannot report power and clocks-event reasons"
  "$root/src/.venv-cuda/bin/python" -c 'import mlx.core as mx, json; print(mx.__version__, mx.default_device()); print(json.dumps(mx.device_info(), default=str))' \
    || echo "mlx (CUDA) does not import here"
  return 0
}

models() {
  local fixture_python="${DB_FIXTURE_PYTHON:-$root/src/.venv-cuda/bin/python}"
  mkdir -p "$root/src/models"
  for m in $models; do
    for f in $formats; do
      "$fixture_python" "$root/src/tools/fixture/make_fixture.py" --real "$m" --format "$f" --out "$root/src/models/$m-$f" \
        | tee -a "$out/models.jsonl" || return 1
    done
  done
}

# The launcher and the tools of the moved build: the repository and the CUDA environment are
# the unpacked ones, and the controlled worker finds the CUDA libmlx.so through LD_LIBRARY_PATH
# (its RPATH names the build machine's environment).
suite() {
  ${DB_WRAP:-} env DECODE_BASELINE_ENV=cuda DECODE_BASELINE_REPO="$root/src" DECODE_BASELINE_VENV="$root/src/.venv-cuda" \
    LD_LIBRARY_PATH="$(cat "$root/site")/mlx/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" HF_HUB_OFFLINE=1 \
    "$root/src/bin-cuda/decode-baseline" "$@"
}

manifest() {
  # The unpacked copy's own workloads.json (it holds the cuda pins): the real-size cases are
  # added to it and it is re-pinned there, as a user adds a case to their checkout.
  local manifest="$root/src/workloads.json"
  for m in $models; do
    for f in $formats; do
      [ -d "$root/src/models/$m-$f" ] || continue
      # A case that cannot be added is left out of the job (the job step names it), not fatal:
      # the other cells still run.
      suite manifest add-case --manifest "$manifest" --id "$m-$f" --model-dir "$root/src/models/$m-$f" \
        --prompt-source seeded --cells short || echo "host: add-case $m-$f failed: its cells are left out"
    done
  done
  suite manifest pin --manifest "$manifest"
}

job() {
  python3 - "$root/src/jobs/gpu-host.json" "$root/src/workloads.json" "$out/sessions" "$smoke" "$models" "$formats" <<'PY'
import json, sys
path, manifest, output_root, smoke, models, formats = sys.argv[1:]
cells = smoke.split()
try:
    known = {f"{c['case']}.{c['prompt']}.{c['mode']}" for c in json.load(open(manifest))["cells"]}
except FileNotFoundError:
    known = set()
for m in models.split():
    for f in formats.split():
        for mode in ("headline", "fixed_continuation"):
            cell = f"{m}-{f}.{m}-{f}-L16.{mode}"
            if cell in known:
                cells.append(cell)
            else:
                print(f"job: {cell} is not in {manifest} (its case was not added): left out", file=sys.stderr)
job = {"schema_version": 1, "manifest": manifest, "cells": cells, "adapters": ["controlled", "stock"],
       "output_root": output_root, "repetitions": 1, "order": "interleaved", "aa_pair": False}
with open(path, "w") as f:
    json.dump(job, f, indent=2)
    f.write("\n")
print(json.dumps(job, indent=2))
PY
  cp "$root/src/jobs/gpu-host.json" "$out/gpu-host.json"
  mkdir -p "$out/sessions"
  # A dry run writes every worker's folder and job and spawns nothing: the jobs are shown
  # before any GPU time is spent. It is kept as OUT/dry-run.
  suite run --job "$root/src/jobs/gpu-host.json" --dry-run || return 1
  mv "$(ls -d "$out"/sessions/*/ | head -n 1)" "$out/dry-run"
  find "$out/dry-run" -name job.json | sort
}

# The roofline's ceiling: MLX's own peak read bandwidth on this device (tools/gpu/bandwidth.py).
# Not fatal: without it the figures have no roofline.
bandwidth() {
  "$root/src/.venv-cuda/bin/python" "$root/src/tools/gpu/bandwidth.py" --gib 4 > "$out/bandwidth.json" \
    || { echo "host: no bandwidth measured: the figures get no roofline"; rm -f "$out/bandwidth.json"; }
  cat "$out/bandwidth.json" 2>/dev/null
  return 0
}

session() {
  # The table (time, energy rows, the energy sources line) is kept for the summary.
  DB_WRAP="timeout -k 10 $session_timeout" suite run --job "$root/src/jobs/gpu-host.json" | tee "$out/session-table.txt"
  return "${PIPESTATUS[0]}"
}

# Per adapter: requests with an energy reading, how many were throttled, the clocks-event
# reason bits seen (OR-ed) and the SM clock range, from session.json's workers[].energy.
energy_summary() {
  python3 - "$1/session.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
e = s.get("energy") or {}
print("energy sources:", "; ".join(f"{x['source']}: " + (x["missing"] or ", ".join(x["domains"])) for x in e.get("sources", [])) or "none recorded")
for adapter in sorted({w["adapter"] for w in s["workers"]}):
    reqs = [r for w in s["workers"] if w["adapter"] == adapter for r in (w.get("energy") or [])]
    if not reqs:
        print(f"{adapter}: no per-request energy")
        continue
    bits = 0
    for r in reqs:
        bits |= r.get("reasons") or 0
    sm = [d[k]["sm_mhz"] for r in reqs for d in r["domains"] for k in ("clocks_start", "clocks_end") if d.get(k)]
    print(f"{adapter}: {len(reqs)} requests with energy, {sum(r['throttled'] for r in reqs)} throttled, "
          f"clocks-event reasons seen 0x{bits:x}, SM clock {min(sm) if sm else '?'}-{max(sm) if sm else '?'} MHz")
PY
}

summary() {
  local session; session=$(ls -d "$out"/sessions/*/ | tail -n 1)
  { echo "session $session"; cat "$out/steps.tsv"; echo; suite compare "$session" || true; } > "$out/summary.txt"
  # Energy per token and the paired energy ratio are in the session's table; the reasons here.
  { echo; grep -E '^energy|J/token|energy paired|throttled pairs' "$out/session-table.txt" || true
    energy_summary "$session" || true
    [ -f "$session/energy.csv" ] && cp "$session/energy.csv" "$out/energy.csv"
  } >> "$out/summary.txt"
  local gbs; gbs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["read_gbs"])' "$out/bandwidth.json" 2>/dev/null)
  # With the measured bandwidth, plot prints each cell's bytes per step and each adapter's share
  # of the roofline; they go into the summary.
  { echo; echo "peak read bandwidth: ${gbs:-not measured} GB/s"
    suite plot "$session" --out "$out/figures" ${gbs:+--peak-bandwidth-gbs "$gbs"} | grep '^roofline ' || true
  } >> "$out/summary.txt"
  cat "$out/summary.txt"
}

run_step assemble assemble
run_step unpack unpack
run_step venv venv_install
run_step device device
run_step models models
run_step manifest manifest
run_step job job
run_step bandwidth bandwidth
run_step session session
run_step summary summary
say "done in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))")s: $out"
