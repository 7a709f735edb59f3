#!/usr/bin/env bash
# Build everything a CUDA host without network or Rust needs to run the suite, as pieces of at
# most 60 MiB with their SHA-256 (see req/gpu.md).
#
#   tools/gpu/bundle.sh OUT [--python 3.12]
#
# OUT receives:
#   payload.tar.part-NNN   the payload, split: the repository at HEAD (git archive), the CUDA
#                          build's launcher and controlled worker (stripped), and the wheels of
#                          the CUDA environment's lock for that Python (linux x86_64)
#   SHA256SUMS             the pieces' digests, then the whole payload's
#   host.sh, README.txt    the host side (not split, so they can be read and run first)
#   bundle.json            what was built: commit, Python, files and sizes
#
# The tree must be clean (the binaries are built from HEAD, and HEAD is what is carried).
# --python names the host's Python (the wheels are binary, for that version only); 3.12 is the
# GPU host's. Exit codes: 0 written, 2 bad input (dirty tree, OUT not empty), 3 a step failed.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
piece_mib=60
python_version=3.12
die() { echo "bundle: $*" >&2; exit "${2:-2}"; }
step() { echo "bundle: $*" >&2; }

[ $# -ge 1 ] || die "usage: tools/gpu/bundle.sh OUT [--python 3.12]"
out="$1"; shift
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python_version="${2:?--python needs a version, e.g. 3.12}"; shift 2 ;;
    *) die "unknown argument $1: expected --python VERSION" ;;
  esac
done
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then die "$out exists and is not empty"; fi
cd "$repo"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  die "the tree has uncommitted changes: commit them, the bundle carries HEAD"
fi
commit="$(git rev-parse HEAD)"
lock="tools/env/envs/cuda/requirements-linux.lock"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

step "1/4 build the CUDA launcher and controlled worker (tools/env/mlxenv build cuda)"
tools/env/mlxenv build cuda --quiet || die "the CUDA build failed" 3
mkdir -p "$stage/payload/bin"
for exe in decode-baseline decode-baseline-controlled; do
  strip -o "$stage/payload/bin/$exe" "target/env-cuda/release/$exe"
done

step "2/4 the repository at $commit"
git archive --format=tar --prefix=repo/ HEAD | tar -x -C "$stage/payload"

step "3/4 the wheels of $lock for Python $python_version (manylinux_2_35 x86_64)"
# Every manylinux tag a glibc 2.35 host accepts (pip does not widen a given --platform itself).
platforms=()
for minor in $(seq 35 -1 17); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform linux_x86_64)
python3 -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
  --only-binary=:all: --python-version "$python_version" "${platforms[@]}" \
  --implementation cp -r "$lock" -d "$stage/payload/wheels" || die "pip download failed" 3
printf '{"commit": "%s", "python_version": "%s", "lock": "%s"}\n' "$commit" "$python_version" "$lock" \
  > "$stage/payload/payload.json"

step "4/4 split into pieces of $piece_mib MiB"
tar -C "$stage" -cf "$stage/payload.tar" payload
split -b "${piece_mib}M" -d -a 3 "$stage/payload.tar" "$out/payload.tar.part-"
(cd "$out" && sha256sum payload.tar.part-* > SHA256SUMS)
(cd "$stage" && sha256sum payload.tar) >> "$out/SHA256SUMS"
cp tools/gpu/host.sh "$out/host.sh"
cp tools/gpu/README.txt "$out/README.txt"
python3 - "$stage/payload" "$out" "$commit" "$python_version" <<'PY'
import json, os, sys
payload, out, commit, python = sys.argv[1:]
def sizes(folder):
    return {name: os.path.getsize(os.path.join(folder, name)) for name in sorted(os.listdir(folder))}
facts = {
    "commit": commit,
    "python_version": python,
    "binaries": sizes(os.path.join(payload, "bin")),
    "wheels": sizes(os.path.join(payload, "wheels")),
    "pieces": {k: v for k, v in sizes(out).items() if k.startswith("payload.tar.part-")},
}
facts["wheels_bytes"] = sum(facts["wheels"].values())
facts["pieces_bytes"] = sum(facts["pieces"].values())
with open(os.path.join(out, "bundle.json"), "w") as f:
    json.dump(facts, f, indent=2)
    f.write("\n")
print(f"bundle: {len(facts['pieces'])} pieces, {facts['pieces_bytes']} bytes, largest {max(facts['pieces'].values())}",
      file=sys.stderr)
PY
step "written to $out"
