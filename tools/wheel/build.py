#!/usr/bin/env python3
"""Build the decode-baseline wheel: the launcher (which is also the controlled worker), with the
program files it serves as package data, installable with `pip install` or `uv tool install`.

    python3 tools/wheel/build.py [--out DIR]      (default: target/wheels)
    python3 tools/wheel/build.py --package-only SITE_PACKAGES

It packs the release build that `cargo build --release` made (maturin runs Cargo, which finds
it current and relinks nothing), so run that first; the wheel's executable is that build's.

The wheel holds (req/install.md):
* `decode-baseline` as a script: the executable. Its rpath looks first in the installing
  environment's `lib/python3.*/site-packages/mlx/lib`, so both workers load the one libmlx of
  the environment it is installed into (build.rs);
* the package `decode_baseline`, laid out as the checkout is: the manifest with the embedded
  fixture cases and its pin, the fixtures, the built-in workers' pinned sources (exactly the
  files the manifest pins: the stock worker and its kit, the controlled worker's crates and
  Cargo.lock), the fixture and case generators, the environment's lock, the schemas and the
  jobs, plus `installed.json` (the version, the commit it was built from, the `mlx` and
  `mlx_lm` versions it links and requires);
* metadata that requires exactly the `mlx` (with its CPU backend on Linux) and `mlx-lm`
  versions of the environment it was built against.

maturin itself is installed from tools/wheel/requirements.lock (hash-checked) into
target/wheel-tools. Exit codes: 0 built (the wheel's path is the last line printed); 2 unusable
input (no release build, no environment, a dirty pin); 3 a tool failed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PACKAGE = "decode_baseline"
MARKER = "installed.json"
# Files and trees (git-tracked members) of the checkout the installed launcher serves, beside
# the pinned worker sources the manifest lists.
TREES = [
    "workloads.json",
    "workloads.json.sha256",
    "fixtures",
    "jobs",
    "schemas",
    "tools/fixture",
    "tools/manifest",
    "tools/graph",
    "tools/env/requirements-linux.lock",
    "tools/env/requirements-linux.lock.sha256",
    "tools/env/requirements-macos.lock",
    "tools/env/requirements-macos.lock.sha256",
]


class BuildError(Exception):
    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def run(argv: list[str], **kw) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        raise BuildError(f"{' '.join(map(str, argv))} failed ({done.returncode}):\n{done.stderr}", 3)
    return done.stdout


def cargo_version() -> str:
    meta = json.loads(run(["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=REPO))
    return next(p["version"] for p in meta["packages"] if p["name"] == "decode-baseline")


def environment() -> dict:
    """The pinned default environment of the manifest: the versions the executable links."""
    manifest = json.loads((REPO / "workloads.json").read_text())
    return manifest["environment"]


def tracked(paths: list[str]) -> list[str]:
    out = run(["git", "-C", str(REPO), "ls-files", "-z", "--", *paths])
    return sorted(p for p in out.split("\0") if p)


def code_version(version: str) -> str:
    """`<commit>+wheel-<version>`, with `+dirty` after the commit when the checkout has changes:
    what sessions run from the installed wheel record where a checkout records its commit."""
    head = run(["git", "-C", str(REPO), "rev-parse", "HEAD"]).strip()
    dirty = run(["git", "-C", str(REPO), "status", "--porcelain"]).strip()
    return head + ("+dirty" if dirty else "") + f"+wheel-{version}"


def package_tree(package: Path, version: str, env: dict) -> int:
    """Writes the program files the installed launcher serves into `package`; returns the count."""
    manifest = json.loads((REPO / "workloads.json").read_text())
    pinned = {path for adapter in ("controlled", "stock") for path in manifest["worker_sources"].get(adapter, {})}
    files = sorted(set(tracked(TREES)) | pinned)
    for rel in files:
        source = REPO / rel
        if not source.is_file():
            raise BuildError(f"{rel}: listed for the wheel but not a file in {REPO}")
        target = package / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    (package / "__init__.py").write_text('"""decode-baseline\'s program files; the executable is `decode-baseline`."""\n')
    marker = {
        "package": "decode-baseline",
        "version": version,
        "code_version": code_version(version),
        "mlx_version": env["mlx_version"],
        "mlx_lm_version": env["mlx_lm_version"],
        "backend": env["backend"],
    }
    (package / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
    return len(files) + 2


def stage(stage_dir: Path, version: str, env: dict) -> int:
    """Writes the package tree and pyproject.toml into `stage_dir`; returns the file count."""
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    count = package_tree(stage_dir / PACKAGE, version, env)
    mlx = f"mlx[cpu]=={env['mlx_version']}" if sys.platform.startswith("linux") else f"mlx=={env['mlx_version']}"
    (stage_dir / "pyproject.toml").write_text(
        f"""[build-system]
requires = ["maturin>=1.9,<2"]
build-backend = "maturin"

[project]
name = "decode-baseline"
version = "{version}"
description = "A reproducible measurement suite for LLM decoding on MLX"
license = {{ text = "MIT OR Apache-2.0" }}
requires-python = ">=3.10"
dependencies = ["{mlx}", "mlx-lm=={env['mlx_lm_version']}"]

[tool.maturin]
bindings = "bin"
manifest-path = "{REPO / 'Cargo.toml'}"
include = [{{ path = "{PACKAGE}/**/*", format = "wheel" }}]
"""
    )
    return count


def maturin() -> Path:
    tools = REPO / "target/wheel-tools"
    exe = tools / "bin/maturin"
    if not exe.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(tools)
        run([str(tools / "bin/python"), "-m", "pip", "install", "--quiet", "--require-hashes", "--no-deps",
             "-r", str(HERE / "requirements.lock")])
    return exe


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "target/wheels")
    parser.add_argument("--package-only", type=Path, metavar="SITE_PACKAGES",
                        help="only write the program files, as the wheel installs them, into SITE_PACKAGES/decode_baseline "
                             "(the tests lay out an installed environment this way, without maturin)")
    args = parser.parse_args()
    try:
        if args.package_only:
            target = args.package_only / PACKAGE
            if target.exists():
                raise BuildError(f"{target} exists")
            count = package_tree(target, cargo_version(), environment())
            print(f"wrote {count} files into {target}")
            return 0
        release = REPO / "target/release/decode-baseline"
        if not release.is_file():
            raise BuildError(f"no release build at {release}: run `cargo build --release` first")
        version, env = cargo_version(), environment()
        stage_dir = REPO / "target/wheel/stage"
        count = stage(stage_dir, version, env)
        print(f"staged {count} files for decode-baseline {version} (mlx {env['mlx_version']}, mlx_lm {env['mlx_lm_version']})")
        # On Linux the executable needs the environment's libmlx.so, which no manylinux policy
        # allows, so the wheel is tagged plain `linux` (installable, not uploadable to an index);
        # on macOS maturin tags it for the deployment target.
        compatibility = ["--compatibility", "linux"] if sys.platform.startswith("linux") else []
        out = run([str(maturin()), "build", "--release", *compatibility, "--out", str(args.out.resolve())], cwd=stage_dir)
        wheels = sorted(args.out.resolve().glob(f"decode_baseline-{version}-*.whl"), key=lambda p: p.stat().st_mtime)
        if not wheels:
            raise BuildError(f"maturin wrote no wheel into {args.out}:\n{out}", 3)
        print(wheels[-1])
        return 0
    except BuildError as err:
        print(f"tools/wheel/build.py: error: {err}", file=sys.stderr)
        return err.code


if __name__ == "__main__":
    sys.exit(main())
