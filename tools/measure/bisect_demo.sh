#!/usr/bin/env bash
# Issue 45's bisection demonstration: a loop repository (the python-sync example adapter) with
# 8 commits after a first one; commit SLOW_AT (default 5; 0: none) adds a busy wait of SPIN_US
# µs (default 90, about 5 % of its 1.8 ms per token here) before every decode step. The other
# commits change a notes file only. Then `decode-baseline bisect` over them, printing each step.
#   DIR (default out/bisect-demo): where the repository is made (replaced).
#   BUDGET (default 5m): each step's `--budget`. BIN (default target/release/decode-baseline) runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${DIR:-out/bisect-demo}
slow_at=${SLOW_AT:-5}
spin_us=${SPIN_US:-90}
rm -rf "$dir"
mkdir -p "$dir/loop"
cp examples/adapters/python-sync/worker.py "$dir/loop/worker.py"
git -C "$dir/loop" init -q
git -C "$dir/loop" config user.email bisect@example.invalid
git -C "$dir/loop" config user.name bisect
commit() { git -C "$dir/loop" add -A && git -C "$dir/loop" commit -q -m "$1"; }
echo "notes 0" >"$dir/loop/NOTES"
commit "the loop as it was"
for i in 1 2 3 4 5 6 7 8; do
  echo "notes $i" >>"$dir/loop/NOTES"
  if [ "$i" = "$slow_at" ]; then
    python3 - "$dir/loop/worker.py" "$spin_us" <<'PY'
import sys
path, spin_us = sys.argv[1], int(sys.argv[2])
text = open(path).read()
anchor = '            ctx.poll("before_decode_step")\n            logits = forward([token], cache)\n'
assert text.count(anchor) == 1, "the decode step of generate() moved"
spin = f'            ctx.poll("before_decode_step")\n            end = time.perf_counter_ns() + {spin_us * 1000}\n            while time.perf_counter_ns() < end:\n                pass\n            logits = forward([token], cache)\n'
open(path, "w").write(text.replace(anchor, spin))
PY
    commit "commit $i: a busy wait of $spin_us us before each decode step"
  else
    commit "commit $i: notes"
  fi
done
git -C "$dir/loop" log --oneline
good=$(git -C "$dir/loop" rev-list --max-parents=0 HEAD)
time "${BIN:-./target/release/decode-baseline}" bisect --loop "$dir/loop" --worker worker.py --good "$good" --bad HEAD \
  --budget "${BUDGET:-5m}" --out "$dir/work"
