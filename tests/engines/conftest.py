"""Shared fixtures of the engine tests (skipped without flwr or without staged ML-100K)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("flwr", reason="the Flower engine needs flwr (pip install .[flower])")


@pytest.fixture(scope="session")
def ml100k_root(data_root):
    if not (data_root / "ml-100k" / "u.data").is_file():
        pytest.skip("ML-100K is not staged")
    return data_root


def _simulate_lost(data_root, overrides: dict, users: int, lost: list[int],
                   train_lost: bool) -> dict:
    """FCF on the first ``users`` users in the simulator, where the ``lost`` clients vanish in
    round 2 (before its training step when ``train_lost``, else after it, before the
    evaluation): what a deployment that lost a SuperNode in round 2 must reproduce."""
    from fedrec.engines.common import load_sliced, resolve
    from fedrec.federation.runtime import seed_everything

    spec, cfg = resolve("fcf", "ml-100k", None, overrides)
    ds = load_sliced("ml-100k", data_root, users)
    seed_everything(cfg.seed)
    trainer = spec.build(cfg, ds, torch.device("cpu"))
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
