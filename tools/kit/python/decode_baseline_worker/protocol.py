"""The worker side of the frozen protocol (req/protocol.md): files, markers, stops, the report.

Mirrors crates/worker-runtime/src/ in spirit: the out dir check, the exclusive claim and ready
markers, the cancellation flag set by SIGTERM/SIGINT, the watchdog with its backstop, the
deterministic test hooks, the request gate, the test-only slowdown, the poll a loop makes before
every forward, and the report written exactly once by hard link. Standard library only: this
module is imported before MLX.
"""

import datetime
import json
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path

# The protocol's constants, generated from the Rust definitions (crates/wire/src/constants.rs)
# and committed beside this module; a test there fails when this file is stale.
CONSTANTS = json.loads(Path(__file__).with_name("protocol_constants.json").read_text(encoding="utf-8"))

STATUS_EXIT = CONSTANTS["status_exit_codes"]
EXIT_OK = STATUS_EXIT["ok"]
EXIT_FAILED = STATUS_EXIT["failed"]
EXIT_TIMEOUT = STATUS_EXIT["timeout"]
EXIT_CANCELLED = STATUS_EXIT["cancelled"]

_FILES = CONSTANTS["files"]
JOB_FILE = _FILES["job"]
CLAIM_FILE = _FILES["claim"]
READY_FILE = _FILES["ready"]
REPORT_FILE = _FILES["report"]
REPORT_TEMP_PREFIX = _FILES["report_temp_prefix"]
REQUEST_FILE_PREFIX = _FILES["request_prefix"]
GATE_FIFO = _FILES["gate_fifo"]
GATE_POLL_S = CONSTANTS["gate"]["poll_s"]
GATE_WAKE_TIMEOUT_S = CONSTANTS["gate"]["wake_timeout_s"]
LAUNCHER_MESSAGE = CONSTANTS["launcher_message"]
# mlx_lm's default prefill_step_size: the step of a job written before jobs carried one.
PREFILL_STEP_SIZE = CONSTANTS["prefill_step_size"]


def prefill_step_size(job):
    """The most prompt tokens one prefill forward of `job` takes (req/protocol.md §5)."""
    return job.get("prefill_step_size", PREFILL_STEP_SIZE)


_ENV = CONSTANTS["env"]
SLOWDOWN_ENV = _ENV["slowdown"]
SLOWDOWN_ADAPTER_ENV = _ENV["slowdown_adapter"]
SLOWDOWN_SITE_ENV = _ENV["slowdown_site"]
SLOWDOWN_SITES = ("before_decode_step", "before_seed_forward")
HOOK_ENV = _ENV["hook"]
HOOK_REQUEST_ENV = _ENV["hook_request"]
HOOK_ARRIVAL_ENV = _ENV["hook_arrival"]
HOOK_SITES = tuple(site["name"] for site in CONSTANTS["hook_sites"])
# The sites a decode loop reaches itself, before its forwards; a loop offers some of them.
FORWARD_SITES = tuple(site["name"] for site in CONSTANTS["hook_sites"] if site["before_forward"])
PER_REQUEST_SITES = frozenset(site["name"] for site in CONSTANTS["hook_sites"] if site["per_request"])
DEADLINE_SITES = frozenset(site["name"] for site in CONSTANTS["hook_sites"] if site["forces_deadline"])


class Refused(Exception):
    """The worker refuses to run; nothing may be written (no report target is ours)."""


class Refusal(Exception):
    """Validation failed on a named field; the run ends failed with a report."""

    def __init__(self, field, message):
        super().__init__(f"validation failed: {field}: {message}")
        self.field = field


def mismatch(field, expected, actual):
    """A Refusal worded `expected <expected>, found <actual>`."""
    return Refusal(field, f"expected {expected}, found {actual}")


class Interrupted(Exception):
    """A request stopped at a poll: `reason` is "timeout" or "cancelled"."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def utc_now():
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- out dir, claim, ready -------------------------------------------------------------------


def open_out_dir(raw):
    """Checks that `raw` is an existing directory; writes nothing."""
    path = Path(raw)
    try:
        is_dir = path.is_dir()
        exists = path.exists()
    except OSError as err:
        raise Refused(f"failed to inspect out dir {path}: {err}") from err
    if not exists:
        raise Refused(f"out dir {path} does not exist: {LAUNCHER_MESSAGE}")
    if not is_dir:
        raise Refused(f"out dir {path} is not a directory: {LAUNCHER_MESSAGE}")
    return path


def _write_new_synced(path, data):
    """Creates `path` (it must not exist), writes all of `data`, fsyncs and closes it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _create_exclusive(path, marker):
    _write_new_synced(path, (json.dumps(marker, separators=(",", ":")) + "\n").encode())


def claim(out):
    """Creates worker-claim exclusively; an existing claim refuses the run."""
    marker = {"utc": utc_now(), "pid": os.getpid()}
    try:
        _create_exclusive(out / CLAIM_FILE, marker)
    except FileExistsError:
        raise Refused(f"out dir {out} is already claimed by another worker (its {CLAIM_FILE} exists)")
    except OSError as err:
        raise Refused(f"failed to create the claim {out / CLAIM_FILE}: {err}") from err
    return marker


def signal_ready(out):
    """Creates worker-ready exclusively; the folder is ours, so a failure is reported."""
    path = out / READY_FILE
    try:
        _create_exclusive(path, {"utc": utc_now(), "pid": os.getpid()})
    except FileExistsError:
        raise RuntimeError(f"{path} already exists (created by someone other than this worker)")
    except OSError as err:
        raise RuntimeError(f"failed to create {path}: {err}") from err


# --- cancellation -------------------------------------------------------------------------------


class CancelFlag:
    """Set by SIGTERM/SIGINT; a second signal exits at once with code 4 and no report."""

    def __init__(self):
        self._event = threading.Event()

    def install(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum, frame):
        if self._event.is_set():
            os._exit(EXIT_CANCELLED)
        self._event.set()

    def is_set(self):
        return self._event.is_set()

    def set(self):
        self._event.set()


# --- watchdog -----------------------------------------------------------------------------------


class Watchdog:
    """Polls every `poll_s`; fires once `deadline_s` has passed since start; if the main loop
    has not taken over the report `grace_s` after the fire, runs `backstop` (which exits)."""

    def __init__(self, deadline_s, poll_s, grace_s, backstop):
        self._cond = threading.Condition()
        self._deadline = time.monotonic() + deadline_s
        self._paused_since = None
        self._fired = threading.Event()
        self._stopped = False
        self._poll_s = poll_s
        self._grace_s = grace_s
        self._backstop = backstop
        self._thread = threading.Thread(target=self._watch, name="watchdog", daemon=True)
        self._thread.start()

    def fired(self):
        return self._fired.is_set()

    def force_deadline(self):
        with self._cond:
            self._deadline = time.monotonic()

    def pause(self):
        """Stops the deadline's clock while the worker waits at the request gate."""
        with self._cond:
            if self._paused_since is None:
                self._paused_since = time.monotonic()

    def resume(self):
        """Restarts it; the deadline moves later by the time spent paused."""
        with self._cond:
            if self._paused_since is not None:
                self._deadline += time.monotonic() - self._paused_since
                self._paused_since = None

    def wait_fired(self):
        self._fired.wait()

    def stop(self):
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _watch(self):
        with self._cond:
            while True:
                if self._stopped:
                    return
                if self._paused_since is None and time.monotonic() >= self._deadline:
                    self._fired.set()
                    break
                self._cond.wait(self._poll_s)
            grace_end = time.monotonic() + self._grace_s
            while not self._stopped:
                left = grace_end - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            if self._stopped:
                return
        self._backstop()


# --- test hooks ---------------------------------------------------------------------------------


class Hooks:
    """DECODE_BASELINE_TEST_HOOK=<site> holds the worker at the site's first match (in request
    DECODE_BASELINE_TEST_HOOK_REQUEST for per-request sites; the
    DECODE_BASELINE_TEST_HOOK_ARRIVAL-th arrival there, default 0) until
    <out>/hook-<site>-release exists or the cancel flag is set (see req/protocol.md). Every
    site is part of the protocol: the worker's loop must reach each of FORWARD_SITES."""

    def __init__(self, out):
        self._dir = out
        self._spent = False
        site = os.environ.get(HOOK_ENV, "")
        if site and site not in HOOK_SITES:
            raise Refused(f"{HOOK_ENV}={site!r} names no hook site")
        self.site = site or None
        self._arrivals = 0
        self.request = self._count(HOOK_REQUEST_ENV, "a request index")
        self.arrival = self._count(HOOK_ARRIVAL_ENV, "an arrival count (0 for the first)")

    @staticmethod
    def _count(name, what):
        raw = os.environ.get(name, "")
        try:
            value = int(raw) if raw else 0
        except ValueError:
            value = -1
        if value < 0:
            raise Refused(f"{name}={raw!r} is not {what}")
        return value

    @property
    def armed(self):
        return self.site is not None

    def reach(self, site, request, cancel, watchdog):
        if self.site != site or self._spent:
            return
        if site in PER_REQUEST_SITES and request != self.request:
            return
        self._arrivals += 1
        if self._arrivals - 1 != self.arrival:
            return
        self._spent = True
        if site in DEADLINE_SITES and watchdog is not None:
            watchdog.force_deadline()
            watchdog.wait_fired()
        try:
            (self._dir / f"hook-{site}-reached").touch()
        except OSError:
            pass
        release = self._dir / f"hook-{site}-release"
        while True:
            if site == "stall":
                time.sleep(0.05)
                continue
            if release.exists() or cancel.is_set():
                return
            time.sleep(0.001)


class Slowdown:
    """The test-only slowdown (crates/worker-runtime/src/slowdown.rs): a busy wait of
    DECODE_BASELINE_TEST_SLOWDOWN_US microseconds at every before_decode_step poll (or at the site
    DECODE_BASELINE_TEST_SLOWDOWN_SITE names), for the adapter named by
    DECODE_BASELINE_TEST_SLOWDOWN_ADAPTER only; recorded in the report."""

    def __init__(self, adapter):
        raw = os.environ.get(SLOWDOWN_ENV, "")
        target = os.environ.get(SLOWDOWN_ADAPTER_ENV, "")
        if bool(raw) != bool(target):
            raise Refused(f"{SLOWDOWN_ENV} and {SLOWDOWN_ADAPTER_ENV} must be set together")
        try:
            micros = int(raw.strip()) if raw else 0
        except ValueError:
            raise Refused(f"{SLOWDOWN_ENV}={raw!r} is not a whole number of microseconds")
        if micros < 0:
            raise Refused(f"{SLOWDOWN_ENV}={raw!r} is not a whole number of microseconds")
        self.micros = micros if (target == adapter and micros > 0) else None
        self._ns = (self.micros or 0) * 1000
        self.site = os.environ.get(SLOWDOWN_SITE_ENV, "") or "before_decode_step"
        if self.site not in SLOWDOWN_SITES:
            raise Refused(
                f"{SLOWDOWN_SITE_ENV}={self.site!r} names no slowdown site: expected "
                "before_decode_step or before_seed_forward"
            )

    def apply(self, site):
        if self._ns and site == self.site:
            until = time.perf_counter_ns() + self._ns
            while time.perf_counter_ns() < until:
                pass


# --- the request gate -----------------------------------------------------------------------------


class Gate:
    """The worker's side of the request gate (req/protocol.md, "The request gate"): the wake-up
    FIFO <out>/gate, which the launcher writes a byte to after each grant, when it can be made;
    polling every GATE_POLL_S otherwise. close() removes the FIFO."""

    def __init__(self, out):
        self._path = out / GATE_FIFO
        self._fd = None
        try:
            os.mkfifo(self._path, 0o600)
        except OSError:
            return
        try:
            # Read and write: the worker holds a writer itself, so the FIFO never reads as hung
            # up between the launcher's writes.
            self._fd = os.open(self._path, os.O_RDWR | os.O_NONBLOCK)
        except OSError:
            self._path.unlink(missing_ok=True)

    @property
    def wakes(self):
        return self._fd is not None

    def wait(self, out, index, cancel, watchdog):
        """Waits until <out>/request-<index>-granted exists, the deadline paused, and returns
        the grant's sequence number (None when its file has none or cannot be read); raises
        Interrupted on cancellation or an already fired deadline."""
        granted = out / f"{REQUEST_FILE_PREFIX}{index}-granted"
        watchdog.pause()
        try:
            while True:
                if cancel.is_set():
                    raise Interrupted("cancelled")
                if watchdog.fired():
                    raise Interrupted("timeout")
                if granted.exists():
                    return _grant_seq(granted)
                self._sleep()
        finally:
            watchdog.resume()

    def _sleep(self):
        if self._fd is None:
            time.sleep(GATE_POLL_S)
            return
        ready, _, _ = select.select([self._fd], [], [], GATE_WAKE_TIMEOUT_S)
        if ready:
            try:
                while os.read(self._fd, 64):
                    pass
            except BlockingIOError:
                pass

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self._path.unlink(missing_ok=True)


def _grant_seq(path):
    """The first complete line `seq <n>` of a grant file (decimal digits only), else None."""
    try:
        first, newline, _ = path.read_bytes().decode("utf-8").partition("\n")
    except (OSError, UnicodeDecodeError):
        return None
    digits = first[len("seq "):] if first.startswith("seq ") else ""
    if not newline or not digits or not all("0" <= c <= "9" for c in digits) or int(digits) >= 2**64:
        return None
    return int(digits)


def signal_done(out, index, seq=None):
    """Creates <out>/request-<index>-done (exclusive: never overwritten), carrying the grant's
    `seq <n>` line back to the launcher; empty when seq is None."""
    fd = os.open(out / f"{REQUEST_FILE_PREFIX}{index}-done", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        if seq is not None:
            os.write(fd, f"seq {seq}\n".encode())
    finally:
        os.close(fd)


class PollContext:
    """What the decode loop polls before every forward: check, hook, check again; the
    test-only slowdown at before_decode_step, inside the step's timed interval."""

    def __init__(self, index, cancel, watchdog, hooks, slowdown):
        self.index = index
        self._cancel = cancel
        self._watchdog = watchdog
        self._hooks = hooks
        self._slowdown = slowdown

    def check(self):
        if self._cancel.is_set():
            raise Interrupted("cancelled")
        if self._watchdog.fired():
            raise Interrupted("timeout")

    def poll(self, site):
        self.check()
        if self._hooks.armed:
            self._hooks.reach(site, self.index, self._cancel, self._watchdog)
            self.check()
        self._slowdown.apply(site)


# --- the report -----------------------------------------------------------------------------------


class ReportWriteError(Exception):
    pass


def write_once(out, report):
    """Writes report.json once: temp file, hard link (refused if the target exists), temp
    removed. Returns "written" or "refused"; raises ReportWriteError leaving no temp."""
    temp = out / f"{REPORT_TEMP_PREFIX}{os.getpid()}"
    target = out / REPORT_FILE
    data = (json.dumps(report, indent=2) + "\n").encode()
    try:
        _write_new_synced(temp, data)
    except OSError as err:
        _remove(temp)
        raise ReportWriteError(f"failed to write the report temp file {temp}: {err}") from err
    try:
        os.link(temp, target)
    except FileExistsError:
        _remove(temp)
        return "refused"
    except OSError as err:
        _remove(temp)
        raise ReportWriteError(f"failed to link {temp} to {target}: {err}") from err
    _remove(temp)
    try:
        dfd = os.open(out, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return "written"


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


class ReportSlot:
    """The report under construction, shared by the main loop and the watchdog's backstop;
    whoever takes it first writes it, the other never does."""

    def __init__(self, out, report):
        self._out = out
        self._lock = threading.Lock()
        self._taken = False
        self.report = report

    def add_request(self, record):
        with self._lock:
            self.report["requests"].append(record)

    def finish(self, status, error, before_write=None):
        """Returns the exit code, or None if the other party already took over."""
        with self._lock:
            if self._taken:
                return None
            self._taken = True
            if before_write is not None:
                before_write()
            code = STATUS_EXIT[status]
            self.report["status"] = status
            self.report["exit_code"] = code
            self.report["error"] = error
            self.report["finished_utc"] = utc_now()
            try:
                outcome = write_once(self._out, self.report)
            except ReportWriteError as err:
                print(f"worker: {err}; no report was left", file=sys.stderr, flush=True)
                return EXIT_FAILED
            if outcome == "refused":
                shown = "ok, downgraded to failed" if status == "ok" else status
                print(
                    f"worker: {self._out / REPORT_FILE} already exists and was left untouched; "
                    f"this run's report (status {shown}) was not recorded, so the run ends failed",
                    file=sys.stderr,
                    flush=True,
                )
                return EXIT_FAILED
            return code
