"""The stock worker: the shipped mlx_lm decode path under the frozen worker protocol.

    .venv/bin/python tools/stock/worker.py --out-dir DIR

The launcher creates DIR and writes DIR/job.json. This worker refuses a missing DIR (or a file
in its place) and an existing claim without writing anything; otherwise it claims DIR,
validates the job against the manifest and the installed environment, loads the model,
creates worker-ready (the job deadline starts), runs the mode's requests with cancellation
and the deadline polled before every forward, and writes DIR/report.json exactly once.
Exit codes: 0 ok, 1 failed or refused, 3 timeout, 4 cancelled (req/protocol.md).

Every file under tools/stock/ is pinned by digest in the manifest (worker_sources.stock).
"""

import sys
import time

_STARTED_NS = time.perf_counter_ns()
# No bytecode caches next to the pinned sources; this directory is appended (not prepended)
# so that it can never shadow an installed package.
sys.dont_write_bytecode = True

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

_HERE = Path(__file__).resolve().parent
sys.path.append(str(_HERE))

import stock_protocol as proto  # noqa: E402

WORKER_REPO = _HERE.parent.parent
REPORT_SCHEMA_VERSION = 1


def request_plan(job):
    """[(index, phase, last)] for the job's mode."""
    if job["mode"] == "reference_pair":
        phases = [None]
    else:
        policy = job["run_policy"]
        phases = (
            ["first"] * policy["first_requests"]
            + ["warmup"] * policy["warmup_requests"]
            + ["measured"] * policy["measured_requests"]
        )
    return [(i, phase, i + 1 == len(phases)) for i, phase in enumerate(phases)]


def main(argv):
    parser = argparse.ArgumentParser(description="decode-baseline stock worker")
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args(argv)

    cancel = proto.CancelFlag()
    cancel.install()
    try:
        out = proto.open_out_dir(args.out_dir)
        hooks = proto.Hooks(out)
        slowdown = proto.Slowdown("stock")
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

    slot = proto.ReportSlot(
        out,
        {
            "schema_version": REPORT_SCHEMA_VERSION,
            "run_id": header["run_id"],
            "adapter": "stock",
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
            "requests": [],
        },
    )

    def fail(message):
        print(f"worker: {message}", file=sys.stderr, flush=True)
        code = slot.finish("failed", message, lambda: hooks.reach("before_report_write", None, cancel, None))
        return proto.EXIT_FAILED if code is None else code

    try:
        import stock_validate

        manifest, manifest_sha256 = stock_validate.validate_job(job, WORKER_REPO)
        identity = stock_validate.check_environment_and_identify(job, manifest, manifest_sha256, WORKER_REPO)
    except proto.Refusal as err:
        return fail(str(err))
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        # ValueError: e.g. a path with an embedded NUL byte, which os functions refuse.
        return fail(f"validation failed: job: malformed ({err!r})")
    slot.report["identity"] = identity

    try:
        import mlx.core as mx
        from mlx_lm import load

        import stock_generate

        model, tokenizer = load(str(job["model_dir"]))
        # The stop set: completed from the job through the wrapper's own API, then asserted
        # equal, so the wrapper neither lacks a manifest id nor stops on one the manifest lacks.
        for token_id in job["stop_ids"]:
            tokenizer.add_eos_token(str(token_id))
        if sorted(tokenizer.eos_token_ids) != job["stop_ids"]:
            return fail(
                f"validation failed: stop_ids: expected the tokenizer's stop set to equal "
                f"{job['stop_ids']}, found {sorted(tokenizer.eos_token_ids)}"
            )
        counting = stock_generate.CountingModel(model)
    except Exception as err:  # noqa: BLE001 - any load failure ends the run failed, reported
        return fail(f"failed to load the model from {job['model_dir']}: {err!r}")
    load_ns = time.perf_counter_ns() - _STARTED_NS

    # Made before ready, so that the launcher's first grant finds it.
    gate = proto.Gate(out) if job.get("gate", False) else None
    try:
        proto.signal_ready(out)
    except RuntimeError as err:
        if gate is not None:
            gate.close()
        return fail(str(err))
    slot.report["load_ns"] = load_ns
    slot.report["start_to_ready_ns"] = time.perf_counter_ns() - _STARTED_NS

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

    end = None
    for index, phase, last in request_plan(job):
        ctx = proto.PollContext(index, cancel, watchdog, hooks, slowdown)
        try:
            ctx.check()
            if gate is not None:
                gate.wait(out, index, cancel, watchdog)
            if hooks.armed:
                hooks.reach("request_loop", index, cancel, watchdog)
                hooks.reach("stall", index, cancel, watchdog)
            if job["mode"] == "fixed_continuation":
                record = stock_generate.run_fixed_continuation(counting, job, ctx)
            else:
                record = stock_generate.run_stream(
                    counting, tokenizer, job, ctx, want_margins=job["mode"] == "reference_pair"
                )
        except proto.Interrupted as stop:
            # Whatever the interrupted request dispatched is drained before the report.
            mx.synchronize()
            verb = "job deadline passed" if stop.reason == "timeout" else "cancelled by signal"
            end = (stop.reason, f"{verb}; stopped before completing request {index}")
            break
        except Exception as err:  # noqa: BLE001 - a crashed request ends the run failed, reported
            end = ("failed", f"request {index} failed: {err!r}")
            break
        slot.add_request({"index": index, "phase": phase, **record})
        if gate is not None:
            try:
                proto.signal_done(out, index)
            except OSError as err:
                end = ("failed", f"request {index}: failed to create its done file: {err!r}")
                break
        if last:
            hooks.reach("final_request", None, cancel, watchdog)

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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
