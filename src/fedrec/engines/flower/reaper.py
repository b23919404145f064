"""A deployment's reaper: stops its processes when the process that started them dies first.

:class:`~fedrec.engines.flower.deploy.Deployment` starts the SuperLink, the SuperNodes and their
workers each in a session (and process group) of its own, so that a terminal's Ctrl-C reaches
only the host, which then stops them in order; their descendants (SuperExec, ServerApp,
ClientApps) are started in those groups. A host killed by a signal it does not handle -- SIGKILL, or
SIGTERM when the deployment runs in a worker thread, where Python installs no handler -- would
leave all of them running for good. The reaper, a small process started with the first of
them, watches the host and a file of group leaders (one PID per line, appended as they start),
and notes the leaders' descendants as they appear (some leave the group: Flower's SuperExec
starts a session of its own). When the host has ended, it sends SIGTERM to the group of every
leader that still runs and to every descendant noted that still runs, waits up to ``grace``
seconds for them to end, then sends SIGKILL. It exits without acting when the file is removed:
the host stopped the deployment itself.

Every process is known by psutil's identity (PID and start time since boot), so neither a reused
PID nor a clock step misleads it; a group whose leader has ended is left alone (its ID may be
reused once the group is empty).

    python src/fedrec/engines/flower/reaper.py --host-pid PID --leaders FILE

It runs as a script, not with ``-m``: it imports neither fedrec's packages nor torch, which
keeps it at a few MB and ~30 ms to start.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil


_KILLED_WAIT_S = 60.0  # longest wait for SIGKILLed processes to end (see end_processes)


def is_alive(proc: psutil.Process) -> bool:
    """Whether ``proc`` still runs (neither ended, nor a zombie, nor its PID reused). psutil
    identifies a process by its PID and its start time counted since boot, which a clock step
    does not move (its wall-clock ``create_time()`` does)."""
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _own_group(pid: int) -> bool:
    """Whether ``pid`` still leads the group it was started with (setsid: its PID)."""
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def _group_empty(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def note_descendants(roots: list[int], known: dict[int, psutil.Process]
                     ) -> list[psutil.Process]:
    """Add to ``known`` (by PID) every descendant of the ``roots`` PIDs not in it yet, or whose
    PID was reused; returns those added."""
    import psutil

    added = []
    for root in roots:
        try:
            children = psutil.Process(root).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for child in children:
            seen = known.get(child.pid)
            if seen is None or not seen.is_running():
                known[child.pid] = child
                added.append(child)
    return added


def reap(host_pid: int, leaders_file: Path, poll: float = 0.5, grace: float = 5.0) -> list[int]:
    """Watch the host (see the module docstring); returns what had to be SIGKILLed."""
    import psutil

    try:
        host = psutil.Process(host_pid)
    except psutil.NoSuchProcess:
        host = None
    leaders: dict[int, psutil.Process | None] = {}
    descendants: dict[int, psutil.Process] = {}
    while True:
        try:
            text = leaders_file.read_text()
        except FileNotFoundError:
            return []
        for line in text.split("\n")[:-1]:  # a line without its newline is still being written
            pid = int(line)
            if pid not in leaders:
                try:
                    leaders[pid] = psutil.Process(pid)
                except psutil.NoSuchProcess:
                    leaders[pid] = None
        # Descendants may leave their leader's group (Flower's SuperExec starts a session).
        note_descendants([p.pid for p in leaders.values() if p is not None and is_alive(p)],
                         descendants)
        if host is None or not is_alive(host):
            break
        time.sleep(poll)
    groups = [leader.pid for leader in leaders.values()
              if leader is not None and is_alive(leader) and _own_group(leader.pid)]
    return end_processes(list(descendants.values()), grace, groups)


def end_processes(procs: list[psutil.Process], grace: float,
                  groups: list[int] | None = None) -> list[int]:
    """SIGTERM each process of ``procs`` that still runs, in order, and each process group of
    ``groups``; wait up to ``grace`` seconds for them to end; SIGKILL what is left and wait
    for those processes to end. Returns the PIDs (and group IDs) that had to be killed. psutil
    refuses to signal a reused PID."""
    import psutil

    groups = groups or []
    procs = [p for p in procs if is_alive(p)]
    for g in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(g, signal.SIGTERM)
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.terminate()

    def left() -> tuple[list[int], list[psutil.Process]]:
        return ([g for g in groups if not _group_empty(g)], [p for p in procs if is_alive(p)])

    end = time.monotonic() + grace
    while time.monotonic() < end and any(left()):
        time.sleep(0.1)
    killed = []
    groups, procs = left()
    for g in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(g, signal.SIGKILL)
            killed.append(g)
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
            killed.append(p.pid)
    # A SIGKILLed process ends when it is next scheduled, not when kill() returns: wait for
    # that, so that on a busy machine the caller does not find them still running. The bound
    # only catches a process the kernel holds (uninterruptible sleep).
    end = time.monotonic() + _KILLED_WAIT_S
    while time.monotonic() < end and any(is_alive(p) for p in procs):
        time.sleep(0.05)
    return killed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host-pid", type=int, required=True)
    ap.add_argument("--leaders", type=Path, required=True)
    ap.add_argument("--grace", type=float, default=5.0)
    args = ap.parse_args(argv)
    reap(args.host_pid, args.leaders, grace=args.grace)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
