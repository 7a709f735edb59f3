"""Validation of a worker job before anything is loaded, and the identity block.

The same checks as the Rust side (crates/pins/src/, req/manifest.md), applied to
one job for one adapter (`stock` or a declared name): the manifest and its pin, the folder the
worker's sources are relative to, the artifact's exact file set and digests, the prompt and
continuation digests, the cell, the stop set, the run policy, the worker's own sources, the lock
file, and the installed environment (mlx and mlx_lm versions, the mlx_lm source freeze, the
libmlx the process actually mapped). Every failure raises Refusal naming the field.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .protocol import CONSTANTS, Refusal, mismatch, prefill_step_size

MANIFEST_SCHEMA_VERSION = CONSTANTS["schema_versions"]["manifest"]
WORKER_JOB_SCHEMA_VERSION = CONSTANTS["schema_versions"]["worker_job"]
# The stock worker's sources by rule: its own tree and this kit's (crates/pins/src/sources.rs).
STOCK_ROOTS = tuple(CONSTANTS["adapters"]["stock_roots"])
BUILT_IN_ADAPTERS = tuple(CONSTANTS["adapters"]["built_in"])
# A declared adapter's name (the manifest's `adapters` keys).
ADAPTER_NAME = re.compile(CONSTANTS["adapters"]["name_pattern"].removeprefix("^").removesuffix("$"))
INTERPRETERS = (None, *CONSTANTS["adapters"]["interpreters"])
MODES = tuple(CONSTANTS["request_plan"])
# The selected environment and its lock, by the rules of crates/pins/src/installed.rs.
ENV_NAME_ENV = CONSTANTS["env"]["environment"]
LOCK_FILE_NAME = "requirements-macos.lock" if sys.platform == "darwin" else "requirements-linux.lock"


def selected_environment():
    """The named environment `$DECODE_BASELINE_ENV` selects, or None for the default one."""
    name = os.environ.get(ENV_NAME_ENV) or None
    return None if name == "default" else name


def lock_path():
    name = selected_environment()
    return f"tools/env/{LOCK_FILE_NAME}" if name is None else f"tools/env/envs/{name}/{LOCK_FILE_NAME}"


LIBMLX_NAME = "libmlx.dylib" if sys.platform == "darwin" else "libmlx.so"
# The Rust worker's order: sorted by name.
POLICY_FIELDS = tuple(CONSTANTS["policy_fields"])
ENVIRONMENT_FIELDS = tuple(CONSTANTS["environment_fields"])
# The key sets of the manifest and the job at every depth, as serde reads them.
MANIFEST_SHAPE = CONSTANTS["manifest"]
JOB_SHAPE = CONSTANTS["job"]


# An environment's backend is the one MLX backend package its lock names; on cpu the worker runs
# on MLX's CPU device, on cuda and metal on its GPU (crates/wire/src/backend.rs).
BACKEND_PACKAGES = (("mlx-cpu==", "cpu"), ("mlx-cuda-", "cuda"), ("mlx-metal==", "metal"))
BACKEND_DEVICES = {"cpu": "cpu", "cuda": "gpu", "metal": "gpu"}


def lock_backend(text):
    """The backend a lock's text installs, or None unless it names exactly one."""
    found = {b for line in text.splitlines() for prefix, b in BACKEND_PACKAGES if line.startswith(prefix)}
    return found.pop() if len(found) == 1 else None


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()


def token_ids_sha256(ids):
    """SHA-256 of the ids as decimal numbers joined by single commas (req/protocol.md)."""
    return hashlib.sha256(",".join(str(i) for i in ids).encode()).hexdigest()


def q(key):
    """A map key as the Rust side prints it in a field name (Debug of a string)."""
    return json.dumps(key)


def key_error(value, shape, where=""):
    """The first key `value` has that `shape` does not allow, or lacks that it requires, at
    any depth, worded as serde words it; None when every key is allowed."""
    if shape is None:
        return None
    at = f" at {where}" if where else ""
    if "keys" in shape:
        if not isinstance(value, dict):
            return None
        for key in value:
            if key not in shape["keys"]:
                expected = ", ".join(f"`{k}`" for k in shape["keys"])
                return f"unknown field `{key}`{at}, expected one of {expected}"
        for key in shape["required"]:
            if key not in value:
                return f"missing field `{key}`{at}"
        found = (key_error(value[k], sub, f"{where}.{k}" if where else k) for k, sub in shape["fields"].items() if k in value)
    elif "values" in shape and isinstance(value, dict):
        found = (key_error(v, shape["values"], f"{where}[{q(k)}]") for k, v in value.items())
    elif "items" in shape and isinstance(value, list):
        found = (key_error(v, shape["items"], f"{where}[{i}]") for i, v in enumerate(value))
    else:
        return None
    return next((err for err in found if err is not None), None)


# --- trees and freezes (req/manifest.md) ------------------------------------------------------


def _is_bytecode_cache(rel):
    parts = rel.split("/")
    return len(parts) >= 2 and parts[-2] == "__pycache__" and parts[-1].endswith(".pyc")


def list_tree(root, field):
    """Every regular file below root, relative with '/', bytecode caches excluded, sorted by
    UTF-8 bytes; a symbolic link or special file is refused."""
    out = []

    def walk(directory, prefix):
        try:
            entries = list(os.scandir(directory))
        except OSError as err:
            raise Refusal(field, f"failed to list {directory}: {err}") from err
        for entry in entries:
            rel = entry.name if not prefix else f"{prefix}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path, rel)
            elif entry.is_file(follow_symlinks=False):
                out.append(rel)
            else:
                raise Refusal(field, f"{entry.path} is a symbolic link or special file, not a regular file")

    walk(root, "")
    out = [rel for rel in out if not _is_bytecode_cache(rel)]
    try:
        out.sort(key=lambda rel: rel.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise Refusal(field, f"a name below {root} is not UTF-8") from err
    return out


def freeze_digest(members):
    """SHA-256 over `path NUL sha256hex LF` per (path, hex) member, in the order given."""
    h = hashlib.sha256()
    for rel, hexdigest in members:
        h.update(rel.encode("utf-8") + b"\0" + hexdigest.encode() + b"\n")
    return h.hexdigest()


def freeze_tree(root, field):
    members = [(rel, sha256_file(os.path.join(root, rel))) for rel in list_tree(root, field)]
    return freeze_digest(members), len(members)


def check_relative(rel):
    """None if `rel` is a normal repository-relative path, else why not."""
    if not rel:
        return "is empty"
    if rel.startswith("/"):
        return "is absolute"
    if "\\" in rel:
        return "contains a backslash"
    if any(part in ("", ".", "..") for part in rel.split("/")):
        return "has an empty, `.` or `..` component"
    return None


# --- the checks ------------------------------------------------------------------------------------


def _require(container, key, field):
    if not isinstance(container, dict) or key not in container:
        raise Refusal(field, "missing from the manifest")
    return container[key]


def is_declared_name(name):
    """Whether `name` can name a declared adapter (req/manifest.md)."""
    return isinstance(name, str) and ADAPTER_NAME.fullmatch(name) is not None and name not in BUILT_IN_ADAPTERS


def check_adapters(adapters, environments):
    """The shape of the manifest's optional `adapters` map: per name, `command` (a non-empty
    list of strings), optional `interpreter` (null or "python"), `sources` (a non-empty list of
    normal relative paths), optional `environment` (`default` or a key of `environments`)."""
    if not isinstance(adapters, dict):
        raise Refusal("adapters", f"expected an object of declared adapters by name, found {adapters!r}")
    for name, entry in sorted(adapters.items()):
        field = f"adapters[{q(name)}]"
        if not is_declared_name(name):
            raise Refusal(field, f"expected a name matching {ADAPTER_NAME.pattern} other than {BUILT_IN_ADAPTERS}")
        if not isinstance(entry, dict):
            raise mismatch(field, "an object with `command`, `sources` and optionally `interpreter`", entry)
        command = entry["command"]
        if not isinstance(command, list) or not command or not all(isinstance(w, str) for w in command):
            raise mismatch(f"{field}.command", "a non-empty list of strings", command)
        if entry.get("interpreter") not in INTERPRETERS:
            raise mismatch(f"{field}.interpreter", 'null or "python"', entry.get("interpreter"))
        environment = entry.get("environment")
        if environment is not None and environment != "default" and environment not in environments:
            raise mismatch(f"{field}.environment", "absent, `default` or a key of `environments`", repr(environment))
        sources = entry["sources"]
        if not isinstance(sources, list) or not sources or not all(isinstance(p, str) for p in sources):
            raise mismatch(f"{field}.sources", "a non-empty list of relative paths", sources)
        for rel in sources:
            reason = check_relative(rel)
            if reason:
                raise Refusal(f"{field}.sources", f"path {rel!r} escapes the manifest's folder: it {reason}")


def validate_job(job, worker_repo, adapter):
    """Every check that needs no MLX, for the worker of `adapter`. `worker_repo`: the repository
    a built-in worker's own code lives in, which `repo_root` must be; `None` for a declared
    adapter, whose `repo_root` is the launcher's repository and whose sources are relative to
    the manifest's folder. Returns the parsed manifest, the manifest digest and the resolved
    `repo_root`."""
    if job["schema_version"] != WORKER_JOB_SCHEMA_VERSION:
        raise mismatch("schema_version", WORKER_JOB_SCHEMA_VERSION, job["schema_version"])
    if job["adapter"] != adapter:
        raise mismatch("adapter", adapter, job["adapter"])
    if job["mode"] not in MODES:
        raise Refusal("mode", f"unknown mode {job['mode']!r}")
    if not isinstance(job.get("gate", False), bool):
        raise Refusal("gate", f"expected true or false, found {job['gate']!r}")

    repo = Path(job["repo_root"])
    if worker_repo is not None and (not repo.is_absolute() or repo.resolve() != worker_repo):
        raise mismatch("repo_root", f"the repository this worker runs from ({worker_repo})", repo)
    if not repo.is_absolute() or not repo.is_dir():
        raise mismatch("repo_root", "the absolute path of the launcher's repository", repo)
    worker_repo = repo.resolve()

    manifest_path = Path(job["manifest_path"])
    if not manifest_path.is_absolute():
        raise Refusal("manifest_path", f"must be absolute, found {manifest_path}")
    try:
        manifest_bytes = manifest_path.read_bytes()
    except OSError as err:
        raise Refusal("manifest_path", f"failed to read {manifest_path}: {err}") from err
    actual = hashlib.sha256(manifest_bytes).hexdigest()
    if actual != job["manifest_sha256"]:
        raise mismatch("manifest_sha256", job["manifest_sha256"], f"{actual} for {manifest_path}")
    pin = manifest_path.with_name(manifest_path.name + ".sha256")
    try:
        pin_text = pin.read_text()
    except OSError as err:
        raise Refusal("manifest_sha256", f"failed to read the manifest pin {pin}: {err}") from err
    line = pin_text[:-1] if pin_text.endswith("\n") else pin_text
    if line != f"{actual}  {manifest_path.name}":
        raise mismatch("manifest_sha256", f"the pin {pin} to read `{actual}  {manifest_path.name}`", repr(line))
    try:
        manifest = json.loads(manifest_bytes)
    except ValueError as err:
        raise Refusal("manifest_path", f"failed to parse {manifest_path}: {err}") from err
    if not isinstance(manifest, dict) or manifest.get("schema_version") != MANIFEST_SCHEMA_VERSION:
        found = manifest.get("schema_version") if isinstance(manifest, dict) else None
        raise mismatch("manifest.schema_version", MANIFEST_SCHEMA_VERSION, found)
    wrong = key_error(manifest, MANIFEST_SHAPE)
    if wrong:
        raise Refusal("manifest_path", f"failed to parse {manifest_path}: {wrong}")
    if "adapters" in manifest:
        check_adapters(manifest["adapters"], manifest.get("environments", {}))

    # The case and its artifact.
    case_id = job["case_id"]
    cases = manifest["cases"]
    if case_id not in cases:
        raise Refusal("case_id", f"{case_id!r} is not a case of the manifest")
    case = cases[case_id]
    case_field = f"cases[{q(case_id)}]"
    case_path = _require(case, "path", f"{case_field}.path")
    if os.path.isabs(case_path):
        parts = case_path.split("/")[1:]
        if any(part in ("", ".", "..") for part in parts):
            raise Refusal(f"{case_field}.path", f"path {case_path!r} has an empty, `.` or `..` component")
        case_dir = Path(case_path)
    else:
        reason = check_relative(case_path)
        if reason:
            raise Refusal(f"{case_field}.path", f"path {case_path!r} escapes the repository: it {reason}")
        case_dir = worker_repo / case_path
        if case_dir.exists() and not case_dir.resolve().is_relative_to(worker_repo):
            raise Refusal(f"{case_field}.path", f"path {case_path!r} resolves outside the repository")
    model_dir = Path(job["model_dir"])
    if model_dir.resolve() != case_dir.resolve():
        raise mismatch("model_dir", f"the case folder {case_dir}", model_dir)
    check_artifact(case_dir, _require(case, "files", f"{case_field}.files"), case_field)

    # The prompt, continuation and cell.
    prompt_id = job["prompt_id"]
    prompts = manifest["prompts"]
    if prompt_id not in prompts:
        raise Refusal("prompt_id", f"{prompt_id!r} is not a prompt of the manifest")
    prompt = prompts[prompt_id]
    if prompt["case"] != case_id:
        raise mismatch("prompt_id", f"a prompt of case {case_id!r}", f"one of case {prompt['case']!r}")
    if job["prompt_ids"] != prompt["ids"]:
        raise Refusal("prompt_ids", f"differ from prompts[{q(prompt_id)}].ids")
    actual = token_ids_sha256(job["prompt_ids"])
    if job["prompt_sha256"] != prompt["sha256"]:
        raise mismatch("prompt_sha256", prompt["sha256"], job["prompt_sha256"])
    if actual != prompt["sha256"]:
        raise mismatch("prompt_sha256", prompt["sha256"], f"{actual} for the ids as listed")
    actual = token_ids_sha256(prompt["continuation"])
    if actual != prompt["continuation_sha256"]:
        raise mismatch(
            f"prompts[{q(prompt_id)}].continuation_sha256",
            f"token-id sha256 {prompt['continuation_sha256']}",
            f"{actual} for the ids as listed",
        )
    policy = manifest["run_policy"]
    if job["mode"] == "fixed_continuation":
        continuation = job["continuation"]
        if continuation is None:
            raise Refusal("continuation", "required in fixed_continuation mode, found null")
        if continuation != prompt["continuation"]:
            raise Refusal("continuation", f"differs from prompts[{q(prompt_id)}].continuation")
        if len(continuation) != policy["fixed_continuation_steps"]:
            raise mismatch("continuation", f"{policy['fixed_continuation_steps']} ids", len(continuation))
    elif job["continuation"] is not None:
        raise Refusal("continuation", f"must be null in {job['mode']} mode")
    cell = {"case": case_id, "prompt": prompt_id, "mode": job["mode"]}
    if cell not in manifest["cells"]:
        raise Refusal("cells", f"the cell {case_id}.{prompt_id}.{job['mode']} is not in the manifest")
    if job["stop_ids"] != case["stop_ids"]:
        raise mismatch("stop_ids", f"{case['stop_ids']} ({case_field}.stop_ids)", job["stop_ids"])

    # The run policy: the job's must be the manifest's, and positive.
    for name in POLICY_FIELDS:
        expected, found = policy.get(name), job["run_policy"].get(name)
        if found != expected:
            raise mismatch(f"run_policy.{name}", f"{expected} (the manifest's)", found)
        if not isinstance(found, int) or found <= 0:
            raise Refusal(f"run_policy.{name}", f"must be positive, found {found}")
    # The prefill step size (absent in jobs written before it existed: mlx_lm's default).
    step = prefill_step_size(job)
    if not isinstance(step, int) or isinstance(step, bool) or step <= 0:
        raise Refusal("prefill_step_size", f"must be at least 1 token, found {step}")

    # An adapter that declares an environment of its own runs in it: the launcher selects it.
    selected = selected_environment()
    declared = manifest.get("adapters", {}).get(adapter, {}).get("environment")
    if declared is not None and (None if declared == "default" else declared) != selected:
        raise mismatch(
            f"adapters.{adapter}.environment",
            f"{declared} (the environment the adapter declares)",
            f"{selected or 'default'} (${ENV_NAME_ENV})",
        )
    # The environment pins: the job's must be the manifest's for the selected environment.
    pinned = manifest["environment"] if selected is None else manifest.get("environments", {}).get(selected)
    if pinned is None:
        raise Refusal(
            f"environments.{selected}",
            f"the selected environment {selected!r} (${ENV_NAME_ENV}) is not pinned; "
            "run `decode-baseline manifest pin` in it",
        )
    for name in ENVIRONMENT_FIELDS:
        expected, found = pinned.get(name), job["environment"].get(name)
        if found != expected:
            raise mismatch(f"environment.{name}", f"{expected} (the manifest's)", found)
    # Pins written before backends were recorded (no or null backend) pinned the CPU backend.
    backend = job["environment"].get("backend") or "cpu"
    device = BACKEND_DEVICES.get(backend)
    if job.get("device", "cpu") != device:
        raise mismatch("device", f"{device} (the device of backend {backend})", job.get("device"))

    check_worker_sources(sources_root(adapter, worker_repo, manifest_path), manifest, adapter)
    lock = worker_repo / lock_path()
    try:
        actual = sha256_file(lock)
    except OSError as err:
        raise Refusal("environment.lock_sha256", f"failed to read {lock}: {err}") from err
    if actual != job["environment"]["lock_sha256"]:
        raise mismatch("environment.lock_sha256", f"{job['environment']['lock_sha256']} for {lock}", actual)
    backend = lock_backend(lock.read_text())
    pinned_backend = job["environment"].get("backend") or "cpu"
    if backend != pinned_backend:
        raise mismatch("environment.backend", f"backend {pinned_backend}", f"backend {backend} for {lock}")
    return manifest, hashlib.sha256(manifest_bytes).hexdigest(), worker_repo


def check_artifact(case_dir, files, case_field):
    """The folder holds exactly the pinned files (top-level, non-hidden, non-folder entries),
    each with its pinned digest."""
    field = f"{case_field}.files"
    try:
        present = sorted(
            entry.name
            for entry in os.scandir(case_dir)
            if not entry.name.startswith(".") and not os.path.isdir(entry.path)
        )
    except OSError as err:
        raise Refusal(f"{case_field}.path", f"failed to read {case_dir}: {err}") from err
    for name in present:
        if name not in files:
            note = ", and mlx_lm would load these weights" if name.endswith(".safetensors") else ""
            raise Refusal(field, f"{case_dir / name} is in the artifact folder but not pinned (a stray file{note})")
    for name, expected in sorted(files.items()):
        path = case_dir / name
        if name not in present:
            raise Refusal(f"{field}[{q(name)}]", f"pinned file {path} is missing")
        actual = sha256_file(path)
        if actual != expected:
            raise mismatch(f"{field}[{q(name)}]", f"sha256 {expected}", f"{actual} for {path}")


def sources_root(adapter, repo, manifest_path):
    """The folder `adapter`'s pinned sources are relative to: the repository for stock, the
    manifest's folder for a declared adapter."""
    return repo if adapter == "stock" else manifest_path.resolve().parent


def source_roots(manifest, adapter):
    """The files and folders whose members are `adapter`'s sources, relative to its
    `sources_root`: the stock rule, or the manifest's `adapters.<name>.sources`."""
    if adapter == "stock":
        return STOCK_ROOTS
    declared = manifest.get("adapters", {}).get(adapter)
    if declared is None:
        raise Refusal(f"adapters[{q(adapter)}]", "missing from the manifest: it declares no adapter of this name")
    return declared["sources"]


def worker_sources(repo, roots, field):
    """Every member of each folder in `roots` and each file named there, relative to `repo`,
    sorted; an entry that does not exist contributes nothing."""
    found = set()
    for entry in roots:
        path = repo / entry
        if path.is_dir() and not path.is_symlink():
            found.update(f"{entry}/{rel}" for rel in list_tree(path, field))
        elif path.is_symlink() or (path.exists() and not path.is_file()):
            raise Refusal(field, f"{path} is a symbolic link or special file, not a regular file")
        elif path.exists():
            found.add(entry)
    return sorted(found, key=lambda rel: rel.encode("utf-8"))


def pinned_sources(manifest, adapter):
    """The manifest's `worker_sources.<adapter>` map."""
    pinned = manifest["worker_sources"].get(adapter)
    if not isinstance(pinned, dict):
        raise Refusal(f"worker_sources.{adapter}", f"missing from the manifest, found {pinned!r}")
    return pinned


def check_worker_sources(repo, manifest, adapter):
    """The worker's files by rule against the pins: none added, none missing, each digest."""
    field = f"worker_sources.{adapter}"
    pinned = pinned_sources(manifest, adapter)
    found = worker_sources(repo, source_roots(manifest, adapter), field)
    for rel in found:
        if rel not in pinned:
            raise Refusal(field, f"{repo / rel} is a worker source by the rule but not pinned (a file was added)")
    for rel, expected in sorted(pinned.items()):
        key = f"{field}[{q(rel)}]"
        reason = check_relative(rel)
        if reason:
            raise Refusal(key, f"path {rel!r} escapes the repository: it {reason}")
        path = repo / rel
        if rel not in found:
            raise Refusal(key, f"pinned file {path} is missing or not a worker source by the rule")
        actual = sha256_file(path)
        if actual != expected:
            raise mismatch(key, f"sha256 {expected}", f"{actual} for {path}")


def worker_sources_sha256(pinned):
    """The identity's digest of the worker's source set: the freeze over the pinned map
    (`worker_sources.<adapter>`, which validation proved equal to the files on disk)."""
    return freeze_digest(sorted(pinned.items(), key=lambda kv: kv[0].encode("utf-8")))


# --- the installed environment and identity ------------------------------------------------------


def mapped_libmlx():
    """The canonical path of the libmlx mapped into this process."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].strip().endswith("/" + LIBMLX_NAME):
                    return os.path.realpath(parts[5].strip())
    except OSError:
        pass
    import mlx.core as mx

    candidate = Path(mx.__file__).resolve().parent.parent / "lib" / LIBMLX_NAME
    if candidate.exists():
        return str(candidate)
    raise Refusal("environment.libmlx_sha256", "no libmlx is mapped into this process")


INSTALL_MARKER = "installed.json"


def code_version(repo):
    """The `code_version` of the repository's `installed.json` when it is the program files of an
    installed wheel (req/install.md); else `git rev-parse HEAD` of the repository, `+dirty` when
    `git status --porcelain` is not empty; `unknown` when neither can tell."""
    marker = Path(repo) / INSTALL_MARKER
    if marker.is_file():
        try:
            version = json.loads(marker.read_text()).get("code_version")
        except (OSError, ValueError, AttributeError):
            version = None
        return version if isinstance(version, str) else "unknown"
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if status.strip() else "")


def check_environment_and_identify(job, manifest, manifest_sha256, worker_repo, adapter):
    """Imports MLX and mlx_lm, checks them against the pins, returns the identity block."""
    import mlx.core as mx
    import mlx_lm

    pins = job["environment"]
    if mx.__version__ != pins["mlx_version"]:
        raise mismatch("environment.mlx_version", pins["mlx_version"], mx.__version__)
    if mlx_lm.__version__ != pins["mlx_lm_version"]:
        raise mismatch("environment.mlx_lm_version", pins["mlx_lm_version"], mlx_lm.__version__)
    mlx_lm_dir = Path(mlx_lm.__file__).resolve().parent
    freeze, files = freeze_tree(mlx_lm_dir, "environment.mlx_lm_freeze_sha256")
    if freeze != pins["mlx_lm_freeze_sha256"]:
        raise mismatch(
            "environment.mlx_lm_freeze_sha256",
            pins["mlx_lm_freeze_sha256"],
            f"{freeze} for the installed mlx_lm at {mlx_lm_dir} ({files} files)",
        )
    try:
        mx.set_default_device(mx.gpu if job.get("device", "cpu") == "gpu" else mx.cpu)
    except (RuntimeError, ValueError) as err:
        raise Refusal("device", f"MLX could not make its {job.get('device', 'cpu')} device the default: {err}") from err
    if mx.default_device().type.name != job.get("device", "cpu"):
        raise mismatch("device", job.get("device", "cpu"), mx.default_device().type.name)
    libmlx = mapped_libmlx()
    libmlx_sha256 = sha256_file(libmlx)
    if libmlx_sha256 != pins["libmlx_sha256"]:
        raise mismatch("environment.libmlx_sha256", pins["libmlx_sha256"], f"{libmlx_sha256} for {libmlx}")
    return {
        "manifest_sha256": manifest_sha256,
        "code_version": code_version(worker_repo),
        "worker_sources_sha256": worker_sources_sha256(pinned_sources(manifest, adapter)),
        "lock_sha256": sha256_file(worker_repo / lock_path()),
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "mlx_lm_freeze_sha256": freeze,
        "libmlx_path": libmlx,
        "libmlx_sha256": libmlx_sha256,
        "device": mx.default_device().type.name,
        "backend": job["environment"].get("backend") or "cpu",
        "device_info": {k: str(v) for k, v in sorted(mx.device_info(mx.default_device()).items())},
    }
