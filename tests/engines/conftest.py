"""Shared fixtures of the engine tests (skipped without flwr or without staged ML-100K)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

pytest.importorskip("flwr", reason="the Flower engine needs flwr (pip install .[flower])")


@pytest.fixture(scope="session")
def ml100k_root(data_root):
    if not (data_root / "ml-100k" / "u.data").is_file():
        pytest.skip("ML-100K is not staged")
    return data_root


def _simulate_lost(data_root, overrides: dict, users: int, lost: list[int],
                   train_lost: bool, client_secrets) -> dict:
    """FCF on the first ``users`` users in the simulator, where the ``lost`` clients vanish in
    round 2 (before its training step when ``train_lost``, else after it, before the
    evaluation): what a deployment that lost a SuperNode in round 2 must reproduce (with the
    deployment's ``client_secrets``)."""
    from fedrec.engines.common import load_sliced, resolve
    from fedrec.federation.runtime import seed_everything

    spec, cfg = resolve("fcf", "ml-100k", None, overrides)
    ds = load_sliced("ml-100k", data_root, users)
    seed_everything(cfg.seed)
    trainer = spec.trainer(cfg, ds, torch.device("cpu"), client_secrets)
    for rnd in range(1, cfg.rounds + 1):
        trainer.runtime.begin_round(rnd)
        if rnd == 2 and train_lost:
            for c in lost:
                trainer.runtime.drop(c)
        trainer.job.server.run_round(trainer.runtime, rnd)
    for c in lost:
        trainer.runtime.drop(c)
    return trainer.evaluate()


@pytest.fixture(scope="session")
def simulate_lost():
    return _simulate_lost


class _Watch:
    """Round hook of a deployment: keeps the Deployment, records the addresses its processes
    listen on (after round 1) and what ``probe(dep)`` returns then (``probed``: the deployment
    is running), and then optionally SIGKILLs the SuperNode named ``kill`` (with its executor)
    and calls ``after_round1``."""

    def __init__(self, kill: str | None = None,
                 after_round1: Callable[[], None] | None = None,
                 probe: Callable[[Any], Any] | None = None) -> None:
        self.kill = kill
        self.after_round1 = after_round1
        self.probe = probe
        self.probed: Any = None
        self.dep = None
        self.killed: list[int] = []
        self.listening: set[str] = set()

    def __call__(self, row: dict, dep) -> None:
        import psutil

        self.dep = dep
        if row["round"] != 1:
            return
        for p in dep.procs:
            try:
                conns = psutil.Process(p.popen.pid).net_connections(kind="inet")
            except psutil.NoSuchProcess:
                continue
            self.listening |= {c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN}
        if self.probe is not None:
            self.probed = self.probe(dep)
        if self.kill:
            self.killed = dep.kill_node(self.kill)
        if self.after_round1 is not None:
            self.after_round1()


def _rel_diff(a: dict, b: dict) -> float:
    keys = set(a) & set(b)
    assert keys, (a, b)
    return max(abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in keys)


def _no_process_left(watch: _Watch) -> None:
    import psutil

    dep = watch.dep
    assert dep is not None
    for p in dep.procs:
        assert p.popen.poll() is not None, p.name
    assert dep.reaper is not None and dep.reaper.poll() is not None  # it ended with the rest
    for proc in dep.seen.values():  # psutil.Process: is_running() is False for a reused PID
        try:
            assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE, proc
        except psutil.NoSuchProcess:
            pass


@pytest.fixture(scope="session")
def deploy_helpers():
    """``Watch``, ``rel_diff`` and ``no_process_left`` for deployment tests."""
    from types import SimpleNamespace

    return SimpleNamespace(Watch=_Watch, rel_diff=_rel_diff, no_process_left=_no_process_left)
