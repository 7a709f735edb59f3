"""The worker's sequence (req/protocol.md §2), from `--out-dir` to the exit code, around a loop.

`run_worker` does everything but decoding: out dir, hooks and slowdown from the environment,
claim, job, validation, the loop's `load`, ready, the watchdog and its backstop, the request
plan with the gate and the per-request hooks, the post-loop check, the report written once, and
the status mapped to the exit code. The loop is the `run_request` that `load` returns.
"""

import argparse
import json
import os
import sys
import time

from . import protocol as proto
from . import group as groups
from . import validate as checks

REPORT_SCHEMA_VERSION = proto.CONSTANTS["schema_versions"]["report"]
_IMPORTED_NS = time.perf_counter_ns()


def request_plan(job):
    """[(index, phase, last)] for the job's mode, by the rule of crates/worker-runtime/src/run.rs
    (protocol_constants.json `request_plan`): runs of one phase, each counted by a run-policy
    field or a fixed number (`first`, `warmup`, `measured` for headline and fixed_continuation,
    one request of phase None for reference_pair)."""
    phases = []
    for run in proto.CONSTANTS["request_plan"][job["mode"]]:
        count = run["count"]
        phases += [run["phase"]] * (job["run_policy"][count] if isinstance(count, str) else count)
    return [(i, phase, i + 1 == len(phases)) for i, phase in enumerate(phases)]


def _drain():
    """Waits for whatever an interrupted request dispatched, before the report is written."""
    mx = sys.modules.get("mlx.core")
    if mx is not None:
        mx.synchronize()


def run_worker(adapter, load, *, root=None, argv=None, started_ns=None, join_group=None):
    """Runs one worker job for `adapter` and returns the exit code.

    adapter:    this worker's adapter name (`stock` or the declared name); a job for another is
                refused naming `adapter`.
    load:       load(job) -> run_request, called once after validation, before ready. It loads
                the model; it may raise Refusal (reported as is) or anything else (reported as
                a load failure). run_request(job, ctx) runs one request and returns its record
                without `index` and `phase` (records.request_record builds one).
    root:       the repository a built-in worker's code lives in (stock passes its own), which
                the job's `repo_root` must resolve to. A declared adapter passes nothing: its
                `repo_root` is the launcher's repository (relative case paths, the lock files
                and `code_version` are read there), and its sources are pinned relative to the
                manifest's folder.
    argv:       the command line after the program (default sys.argv[1:]): `--out-dir DIR`, and
                optionally `--as NAME`, which runs the loop as the declared adapter NAME instead
                of `adapter` (two builds of one loop side by side, as `bisect` runs them).
    started_ns: time.perf_counter_ns() at the worker's entry point (default: when the kit was
                imported), the origin of `load_ns` and `start_to_ready_ns`.
    join_group: join_group(group) -> {"rank", "ranks", "backend"}, for a loop that runs as one
                rank of a group (req/distributed.md): called with the job's `group` after
                validation and before `load`, once the kit has checked the job and MLX_RANK /
                MLX_HOSTFILE; it initializes MLX's group and returns what the group reports.
                Without it, a job with a group is refused naming `group`.
    """
    started_ns = _IMPORTED_NS if started_ns is None else started_ns
    parser = argparse.ArgumentParser(description=f"decode-baseline {adapter} worker")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--as", dest="as_adapter", metavar="NAME")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    adapter = args.as_adapter or adapter

    cancel = proto.CancelFlag()
    cancel.install()
    try:
        out = proto.open_out_dir(args.out_dir)
        hooks = proto.Hooks(out)
        slowdown = proto.Slowdown(adapter)
        marker = proto.claim(out)
    except proto.Refused as err:
        print(f"worker refused: {err}", file=sys.stderr, flush=True)
        return proto.EXIT_FAILED
    hooks.reach("after_claim", None, cancel, None)

    # A job that cannot be read leaves no report: there is nothing to fill its header with.
    try:
        job = json.loads((out / proto.JOB_FILE).read_bytes())
        header = {k: job[k] for k in ("run_id", "adapter", "mode", "case_id", "prompt_id")}
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"worker refused: failed to read {out / proto.JOB_FILE}: {err!r}", file=sys.stderr, flush=True)
        return proto.EXIT_FAILED
    wrong = checks.key_error(job, checks.JOB_SHAPE)
    if wrong:
        print(f"worker refused: failed to parse {out / proto.JOB_FILE}: {wrong}", file=sys.stderr, flush=True)
        return proto.EXIT_FAILED

    slot = proto.ReportSlot(
        out,
        {
            "schema_version": REPORT_SCHEMA_VERSION,
            "run_id": header["run_id"],
            "adapter": adapter,
            "mode": header["mode"],
            "case_id": header["case_id"],
            "prompt_id": header["prompt_id"],
            "status": "failed",
            "exit_code": proto.EXIT_FAILED,
            "error": None,
            "pid": marker["pid"],
            "claimed_utc": marker["utc"],
            "finished_utc": "",
            "start_to_ready_ns": None,
            "load_ns": None,
            "identity": None,
            "test_slowdown_us": slowdown.micros,
            "group": None,
            "requests": [],
        },
    )

    def fail(message):
        print(f"worker: {message}", file=sys.stderr, flush=True)
        code = slot.finish("failed", message, lambda: hooks.reach("before_report_write", None, cancel, None))
        return proto.EXIT_FAILED if code is None else code

    try:
        manifest, manifest_sha256, repo = checks.validate_job(job, root, adapter)
        identity = checks.check_environment_and_identify(job, manifest, manifest_sha256, repo, adapter)
    except proto.Refusal as err:
        return fail(str(err))
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        # ValueError: e.g. a path with an embedded NUL byte, which os functions refuse.
        return fail(f"validation failed: job: malformed ({err!r})")
    slot.report["identity"] = identity

    if job.get("group") is not None:
        try:
            joined = _join(job["group"], join_group, adapter)
        except proto.Refusal as err:
            return fail(str(err))
        except Exception as err:  # noqa: BLE001 - a group that cannot be joined ends the run failed
            return fail(f"failed to join the rank group: {err!r}")
        slot.report["group"] = joined

    try:
        run_request = load(job)
    except proto.Refusal as err:
        return fail(str(err))
    except Exception as err:  # noqa: BLE001 - any load failure ends the run failed, reported
        return fail(f"failed to load the model from {job['model_dir']}: {err!r}")
    load_ns = time.perf_counter_ns() - started_ns

    # Made before ready, so that the launcher's first grant finds it.
    gate = proto.Gate(out) if job.get("gate", False) else None
    try:
        proto.signal_ready(out)
    except RuntimeError as err:
        if gate is not None:
            gate.close()
        return fail(str(err))
    slot.report["load_ns"] = load_ns
    slot.report["start_to_ready_ns"] = time.perf_counter_ns() - started_ns

    policy = job["run_policy"]
    grace = policy["backstop_grace_s"]

    def backstop():
        message = (
            f"job deadline passed and the decode loop did not stop within {grace} s; "
            "report written by the watchdog"
        )
        print(f"worker: {message}", file=sys.stderr, flush=True)
        code = slot.finish("timeout", message)
        if code is not None:
            os._exit(code)

    watchdog = proto.Watchdog(policy["job_deadline_s"], policy["watchdog_poll_ms"] / 1000.0, grace, backstop)
    hooks.reach("after_ready", None, cancel, watchdog)

    end = _run_requests(job, run_request, out, slot, gate, (cancel, watchdog, hooks, slowdown))
    if gate is not None:
        gate.close()
    # The post-loop check: a deadline that fired during the final request is never ok.
    if end is None:
        if watchdog.fired():
            end = ("timeout", "job deadline passed during the final request")
        elif cancel.is_set():
            end = ("cancelled", "cancelled after the final request")
        else:
            end = ("ok", None)
    status, error = end
    if error:
        print(f"worker: {error}", file=sys.stderr, flush=True)

    def before_write():
        watchdog.stop()
        hooks.reach("before_report_write", None, cancel, None)

    code = slot.finish(status, error, before_write)
    if code is None:
        # The backstop took over and exits the process.
        while True:
            time.sleep(1)
    return code


def _join(group, join_group, adapter):
    """Checks the rank's job, joins the group through the loop, checks what it joined."""
    if join_group is None:
        raise proto.Refusal("group", f"the {adapter} worker does not run in rank groups")
    groups.check_rank_job(group)
    joined = join_group(group)
    groups.check_joined(group, joined)
    return {"rank": joined["rank"], "ranks": joined["ranks"], "backend": joined["backend"]}


def _run_requests(job, run_request, out, slot, gate, stops):
    """The request plan: boundary check, gate, per-request hooks, the request, its record, its
    done file. Returns None when every request completed, else (status, error)."""
    cancel, watchdog, hooks, slowdown = stops
    for index, phase, last in request_plan(job):
        ctx = proto.PollContext(index, cancel, watchdog, hooks, slowdown)
        seq = None
        try:
            ctx.check()
            if gate is not None:
                seq = gate.wait(out, index, cancel, watchdog)
            if hooks.armed:
                hooks.reach("request_loop", index, cancel, watchdog)
                hooks.reach("stall", index, cancel, watchdog)
            record = run_request(job, ctx)
        except proto.Interrupted as stop:
            _drain()
            verb = "job deadline passed" if stop.reason == "timeout" else "cancelled by signal"
            return (stop.reason, f"{verb}; stopped before completing request {index}")
        except Exception as err:  # noqa: BLE001 - a crashed request ends the run failed, reported
            return ("failed", f"request {index} failed: {err!r}")
        slot.add_request({"index": index, "phase": phase, **record})
        if gate is not None:
            try:
                proto.signal_done(out, index, seq)
            except OSError as err:
                return ("failed", f"request {index}: failed to create its done file: {err!r}")
        if last:
            hooks.reach("final_request", None, cancel, watchdog)
    return None
