#!/usr/bin/env python3
"""Provision the pinned Python environment that both workers and the Rust build use.

The suite can hold several pinned environments (say the previous and the current MLX release).
`$DECODE_BASELINE_ENV` names one of `tools/env/envs/<name>/`; unset or empty, the default
environment of `tools/env/` is meant. The default environment lives in `<repo>/.venv`, a named
one in `<repo>/.venv-<name>` (either: `$DECODE_BASELINE_VENV`). It is created from the
environment's hash-locked requirements for this platform with `pip --require-hashes --no-deps`,
so every file that lands in it is the one the lock names. (The same rules, in Rust:
`crates/pins/src/installed.rs`.) A stamp file records the lock's SHA-256; when it matches,
provisioning is a no-op, and when the lock changes the environment is rebuilt from scratch.

Prints one line, `key=value` pairs describing the environment, for build scripts to read:
`environment=… backend=… python=… site=… mlx_dir=… libclang_dir=… lock_sha256=…` (`environment`
is the name, `default` for the default one; `backend` is `cpu`, `cuda` or `metal`, the MLX
backend package the lock names: `mlx-cpu`, `mlx-cuda-*` or `mlx-metal`).

The CUDA environment is the named environment `cuda` (`DECODE_BASELINE_ENV=cuda`, Linux only):
the default environment's MLX and mlx_lm with `mlx-cuda-13` in place of `mlx-cpu`. Its lock
leaves out the `nvidia-*` libraries listed in its `host-provided.txt`: a CUDA host brings them
(tools/gpu/host.sh links the host's into the environment), and a machine without them can still
build and link against the CUDA libmlx.so.

Exit codes: 0 ready; 2 unusable input (python too old, lock missing or edited, bad MLX_DIR);
3 the install itself failed (network, registry, disk).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV_DIR = Path(__file__).resolve().parent
MIN_PYTHON = (3, 11)
STAMP = "decode-baseline-lock.sha256"
ENV_VAR = "DECODE_BASELINE_ENV"
NAMED_DIR = ENV_DIR / "envs"
DEFAULT_NAME = "default"


class SetupError(Exception):
    """A problem the user can fix; the message names it and the fix."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def env_name() -> str | None:
    """The selected named environment, or None for the default one (also when named `default`)."""
    name = os.environ.get(ENV_VAR) or None
    return None if name == DEFAULT_NAME else name


def env_folder() -> Path:
    name = env_name()
    if name is None:
        return ENV_DIR
    folder = NAMED_DIR / name
    if "/" in name or name.startswith(".") or not folder.is_dir():
        known = sorted(p.name for p in NAMED_DIR.iterdir() if p.is_dir()) if NAMED_DIR.is_dir() else []
        raise SetupError(
            f"{ENV_VAR}={name!r} names no environment: expected one of {known or 'none'} "
            f"(folders of {NAMED_DIR}), or unset it for the default environment"
        )
    return folder


def lock_path() -> Path:
    system = platform.system()
    if system == "Linux":
        return env_folder() / "requirements-linux.lock"
    if system == "Darwin":
        return env_folder() / "requirements-macos.lock"
    raise SetupError(f"unsupported platform {system!r}: expected Linux or Darwin")


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_lock(lock: Path) -> str:
    """The lock's digest, after checking it against the pin committed beside it."""
    if not lock.is_file():
        raise SetupError(f"lock file {lock} is missing: restore it with `git checkout -- {lock}`")
    actual = sha256_file(lock)
    pin_file = lock.with_suffix(".lock.sha256")
    expected = pin_file.read_text().split()[0] if pin_file.is_file() else None
    if expected != actual:
        raise SetupError(
            f"lock file {lock} was edited: expected sha256 {expected}, found {actual}; "
            f"restore it with `git checkout -- {lock}`, or regenerate it with tools/env/relock "
            f"(which re-pins {pin_file.name})"
        )
    return actual


BACKEND_PACKAGES = (("mlx-cpu==", "cpu"), ("mlx-cuda-", "cuda"), ("mlx-metal==", "metal"))


def lock_backend(lock: Path) -> str:
    """The MLX backend the lock installs, from its backend package (one rule, also in
    crates/pins/src/installed.rs)."""
    found = {
        backend
        for line in lock.read_text().splitlines()
        for prefix, backend in BACKEND_PACKAGES
        if line.startswith(prefix)
    }
    if len(found) != 1:
        raise SetupError(
            f"lock file {lock} names {sorted(found) or 'no'} MLX backend package: expected exactly one "
            "of mlx-cpu, mlx-cuda-*, mlx-metal"
        )
    return found.pop()


def venv_dir() -> Path:
    name = env_name()
    default = REPO / (".venv" if name is None else f".venv-{name}")
    return Path(os.environ.get("DECODE_BASELINE_VENV") or default).resolve()


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def base_python() -> str:
    """The interpreter that creates the environment: $DECODE_BASELINE_PYTHON or this one."""
    chosen = os.environ.get("DECODE_BASELINE_PYTHON", sys.executable)
    probe = subprocess.run(
        [chosen, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise SetupError(f"python interpreter {chosen!r} does not run: set DECODE_BASELINE_PYTHON")
    major, minor = (int(x) for x in probe.stdout.strip().split("."))
    if (major, minor) < MIN_PYTHON:
        raise SetupError(
            f"python {major}.{minor} at {chosen} is too old: expected {MIN_PYTHON[0]}.{MIN_PYTHON[1]} "
            "or newer; install it and point DECODE_BASELINE_PYTHON at it"
        )
    return chosen


def install(venv: Path, lock: Path, digest: str) -> None:
    python = base_python()
    print(f"decode-baseline: provisioning {venv} from {lock.name} (one time, about a minute)", file=sys.stderr)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    result = subprocess.run(
        [
            str(venv_python(venv)),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "--require-hashes",
            "--no-deps",
            "--only-binary=:all:",
            "-r",
            str(lock),
        ]
    )
    if result.returncode != 0:
        raise SetupError(f"pip install from {lock} failed (exit {result.returncode}); see above", 3)
    # The stamp is written last: an interrupted install leaves no stamp and is redone next time.
    (venv / STAMP).write_text(digest + "\n")


def describe(venv: Path, digest: str, backend: str) -> dict[str, str]:
    python = venv_python(venv)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    mlx_dir = os.environ.get("MLX_DIR") or str(Path(site) / "mlx")
    check_mlx_dir(Path(mlx_dir))
    return {
        "environment": env_name() or DEFAULT_NAME,
        "backend": backend,
        "python": str(python),
        "site": site,
        "mlx_dir": mlx_dir,
        "libclang_dir": str(Path(site) / "clang" / "native"),
        "lock_sha256": digest,
    }


def check_mlx_dir(mlx_dir: Path) -> None:
    lib = "libmlx.dylib" if platform.system() == "Darwin" else "libmlx.so"
    wanted = [mlx_dir / "include" / "mlx" / "mlx.h", mlx_dir / "lib" / lib]
    missing = [str(p) for p in wanted if not p.is_file()]
    if missing:
        source = "MLX_DIR" if os.environ.get("MLX_DIR") else "the pinned environment"
        raise SetupError(
            f"{source} points at {mlx_dir}, which is not an MLX install: missing {', '.join(missing)}; "
            "expected the folder that `python -m mlx --cmake-dir` prints (unset MLX_DIR to use the pinned one)"
        )


def provision() -> dict[str, str]:
    lock = lock_path()
    digest = check_lock(lock)
    backend = lock_backend(lock)
    venv = venv_dir()
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(venv.name + ".provision-lock"), "w") as guard:
        # Cargo build scripts and tests may provision at the same time; one installs, the others wait.
        fcntl.flock(guard, fcntl.LOCK_EX)
        stamp = venv / STAMP
        current = stamp.is_file() and stamp.read_text().strip() == digest
        if not current or not venv_python(venv).exists():
            install(venv, lock, digest)
        return describe(venv, digest, backend)


def main() -> int:
    try:
        facts = provision()
    except SetupError as err:
        print(f"decode-baseline: setup error: {err}", file=sys.stderr)
        return err.code
    except subprocess.CalledProcessError as err:
        print(f"decode-baseline: setup error: {err}", file=sys.stderr)
        return 3
    print(" ".join(f"{k}={v}" for k, v in facts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
