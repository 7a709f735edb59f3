"""Rank groups (req/distributed.md): the checks on a job's `group` before the loop joins it,
and the check of what the joined group reports, by the rules of
crates/worker-runtime/src/group.rs."""

import json
import os

from .protocol import CONSTANTS, Refusal, mismatch

RANK_ENV = CONSTANTS["env"]["rank"]
HOSTFILE_ENV = CONSTANTS["env"]["hostfile"]


def check_rank_job(group):
    """A rank inside a group of two or more, the environment agreeing with the job (MLX reads
    the environment, the report the job), a host file listing one entry per rank."""
    ranks, rank = group["ranks"], group["rank"]
    if ranks < 2:
        raise Refusal("group.ranks", f"expected at least 2, found {ranks}")
    if not 0 <= rank < ranks:
        raise Refusal("group.rank", f"expected 0..{ranks}, found {rank}")
    _check_env(RANK_ENV, str(rank))
    _check_env(HOSTFILE_ENV, str(group["hostfile"]))
    try:
        with open(group["hostfile"], "rb") as f:
            hosts = json.load(f)
    except OSError as err:
        raise Refusal("group.hostfile", f"failed to read {group['hostfile']}: {err}") from None
    except ValueError as err:
        raise Refusal("group.hostfile", f'{group["hostfile"]} is not a JSON list of lists of "ip:port": {err}') from None
    if not isinstance(hosts, list) or len(hosts) != ranks:
        found = len(hosts) if isinstance(hosts, list) else "no"
        raise Refusal("group.hostfile", f"{group['hostfile']} lists {found} ranks, expected {ranks}")


def check_joined(group, joined):
    """What the joined group reports against the job."""
    for field in ("ranks", "rank", "backend"):
        if joined[field] != group[field]:
            raise mismatch(f"group.{field}", group[field], joined[field])


def _check_env(name, expected):
    found = os.environ.get(name)
    if found != expected:
        raise Refusal(f"environment {name}", f"expected {expected}, found {'it unset' if found is None else found}")
