"""The deployment's reaper (:mod:`fedrec.engines.flower.reaper`), with real processes and no
Flower: a host that starts a :class:`Deployment` (a plain process, and one with a child in its
group and one in a session of its own, as a SuperLink's ServerApp and SuperExec) and then dies by
SIGKILL or SIGTERM leaves nothing running; a host that stops its deployment leaves no reaper
either."""

from __future__ import annotations

import signal
import subprocess
import sys

import psutil
import pytest

HOST = """
import os, sys, time
from pathlib import Path
import psutil
from fedrec.engines.flower.deploy import Deployment

dep = Deployment(Path(sys.argv[1]), dict(os.environ))
sleep = [sys.executable, "-c", "import time; time.sleep(600)"]
a = dep.start("a", sleep)
b = dep.start("b", [sys.executable, "-c", f"import subprocess; "
                   f"c = subprocess.Popen({sleep!r}, start_new_session=True); "
                   f"subprocess.run({sleep!r})"])
while len(kids := psutil.Process(b.popen.pid).children()) < 2:
    time.sleep(0.05)
print(a.popen.pid, b.popen.pid, *(k.pid for k in kids), flush=True)
if sys.argv[2] == "stop":
    input()
    dep.stop()
    print("stopped", flush=True)
time.sleep(600)
"""


# Longest wait for the processes to end; they sleep far longer (600 s), so that only the
# reaper can end them within it.
END_S = 120.0


def _host(tmp_path, mode: str) -> tuple[subprocess.Popen, list[psutil.Process]]:
    """The host process, and the deployment's processes: a, b and b's two children, one in
    b's process group (as a SuperLink's ServerApp), one in a session of its own (as its
    SuperExec)."""
    host = subprocess.Popen([sys.executable, "-c", HOST, str(tmp_path), mode],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return host, [psutil.Process(int(x)) for x in host.stdout.readline().split()]


def _reapers(host: psutil.Process) -> list[psutil.Process]:
    return [c for c in host.children() if any(a.endswith("reaper.py") for a in c.cmdline())]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_host_that_dies_leaves_no_process(tmp_path, sig) -> None:
    # SIGTERM: what a host whose deployment runs in a worker thread cannot catch.
    host, procs = _host(tmp_path, "die")
    try:
        reapers = _reapers(psutil.Process(host.pid))
        assert len(reapers) == 1
        host.send_signal(sig)
        # Waits on the processes' ends (the reaper notices the host's within 0.5 s, then gives
        # SIGTERM 5 s before SIGKILL); the bound only turns a hang into a failure.
        host.wait(timeout=END_S)
        _, alive = psutil.wait_procs(procs + reapers, timeout=END_S)
        assert not alive, alive
    finally:
        for p in procs:
            if p.is_running():
                p.kill()
        host.kill()


def test_a_stopped_deployment_leaves_no_reaper(tmp_path) -> None:
    host, procs = _host(tmp_path, "stop")
    try:
        assert len(_reapers(psutil.Process(host.pid))) == 1
        host.stdin.write("\n")
        host.stdin.flush()
        assert host.stdout.readline().strip() == "stopped"
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs)
        assert _reapers(psutil.Process(host.pid)) == []
        assert not (tmp_path / "reaper-leaders").exists()
    finally:
        host.kill()
        host.wait()
