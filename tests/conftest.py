"""Fixtures shared by every test folder: where the staged datasets are, and the real datasets.

The data root is ``$FEDREC_DATA`` (default ``/work/shared/datasets``). Tests that need a dataset
that is not staged are skipped, never faked. ``tests/data/conftest.py`` keeps its own helpers
(``need``, ``mirror``, ``replace_file``) and the same ``data_root`` semantics.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from fedrec.data import InteractionDataset, Interactions, RatingDataset, load_dataset

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = "/work/shared/datasets"

# The test machine has two cores; more torch threads only oversubscribe them. On a machine
# shared with other jobs, FEDREC_TEST_THREADS=1 avoids torch's thread barriers spinning against
# them (measured: 2 threads ~10x slower than 1 when the cores are already busy).
torch.set_num_threads(int(os.environ.get("FEDREC_TEST_THREADS", "2")))


def data_root_path() -> Path:
    raw = Path(os.environ.get("FEDREC_DATA", DEFAULT_DATA)).expanduser()
    return (raw if raw.is_absolute() else REPO / raw).resolve()


@pytest.fixture(scope="session")
def data_root() -> Path:
    """Absolute path of the staged datasets ($FEDREC_DATA, default /work/shared/datasets)."""
    return data_root_path()


def _load(root: Path, name: str, required: str):
    if not (root / required).is_file():
        pytest.skip(f"staged dataset {name} not available ({required} missing under {root})")
    return load_dataset(name, root)


@pytest.fixture(scope="session")
def ml100k(data_root: Path) -> RatingDataset:
    """The real MovieLens-100K (u1 split). Shared: never mutate it."""
    ds = _load(data_root, "ml-100k", "ml-100k/u.data")
    assert isinstance(ds, RatingDataset)
    return ds


@pytest.fixture(scope="session")
def ml100k_1_to_100(ml100k: RatingDataset) -> RatingDataset:
    """ML-100K with its ratings mapped affinely from 1..5 onto YahooMusic's 1..100."""
    f = 99.0 / 4.0

    def move(x: Interactions) -> Interactions:
        return dataclasses.replace(x, values=(1.0 + (x.values - 1.0) * f).astype(np.float32))

    return dataclasses.replace(ml100k, train=move(ml100k.train), test=move(ml100k.test),
                               rating_min=1.0, rating_max=100.0)


@pytest.fixture(scope="session")
def cora(data_root: Path):
    """Cora (Planetoid files, the public split): a graph for node classification."""
    return _load(data_root, "cora", "planetoid/ind.cora.graph")


@pytest.fixture(scope="session")
def gowalla(data_root: Path) -> InteractionDataset:
    """The real Gowalla (LightGCN split). Shared: never mutate it."""
    ds = _load(data_root, "gowalla", "gowalla/train.txt")
    assert isinstance(ds, InteractionDataset)
    return ds


def first_users(ds: InteractionDataset, n: int) -> InteractionDataset:
    """``ds`` restricted to users ``0..n-1``; items re-indexed densely over the kept rows."""
    train = ds.train.select(ds.train.users < n)
    test = ds.test.select(ds.test.users < n)
    kept = np.unique(np.concatenate([train.items, test.items]))
    remap = np.full(ds.num_items, -1, dtype=np.int64)
    remap[kept] = np.arange(len(kept))

    def reindex(x: Interactions) -> Interactions:
        return Interactions(x.users.copy(), remap[x.items], x.values.copy())

    return InteractionDataset(
        name=f"{ds.name}-first{n}", num_users=n, num_items=len(kept),
        train=reindex(train), test=reindex(test),
    )


@pytest.fixture(scope="session")
def gowalla_500(gowalla: InteractionDataset) -> InteractionDataset:
    return first_users(gowalla, 500)


@pytest.fixture(scope="session")
def gowalla_1000(gowalla: InteractionDataset) -> InteractionDataset:
    return first_users(gowalla, 1000)


@pytest.fixture
def single_thread():
    """Bit-exact comparisons need one torch thread: with more, torch's CPU
    ``index_put_(accumulate=True)`` (the backward of row indexing) adds duplicate rows in a
    varying order, so two identical runs can differ in the last bits."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def one_thread_module():
    """:func:`single_thread` for a whole module (its module-scoped runs included)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def cold_start_dp_run():
    """A runner of a multi-view method's cold-start DP job: ``run(build, cfg, mv)`` builds
    ``build(cfg, mv re-split by cfg.cold_start)``, checks that the DP aggregate's plan counts
    only the clients that train, trains ``rounds`` rounds, checks that only those clients were
    accounted, and returns the trainer and each round's statistics."""
    from fedrec.algorithms.base import FederatedTrainer
    from fedrec.data.multiview import cold_start
    from fedrec.federation.secrets import ClientSecrets

    def run(build, cfg, mv, rounds: int = 2):
        job = build(cfg, cold_start(mv, cfg.cold_start, cfg.cold_fraction, cfg.split_seed))
        server = job.server
        assert server.dp.plan.num_clients == len(server.trainable) < len(job.client_ids)
        trainer = FederatedTrainer(job, cfg, torch.device("cpu"), ClientSecrets(bytes(32)))
        stats = [trainer.train_round(rnd) for rnd in range(1, rounds + 1)]
        assert set(server.dp.accountant.per_client) <= set(server.trainable)
        return trainer, stats

    return run


@pytest.fixture
def load_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each in-memory "SuperNode" message parses its dataset again, as a real SuperNode's
    process does; here the nodes share one parse (a deep copy per message, so no message sees
    another's changes). Loading is deterministic, so this changes no value a test compares,
    only its time."""
    import copy

    from fedrec.engines.flower import node

    cache: dict[tuple, object] = {}

    def load_sliced(*args):
        if args not in cache:
            cache[args] = real(*args)
        return copy.deepcopy(cache[args])

    real = node.load_sliced
    monkeypatch.setattr(node, "load_sliced", load_sliced)


class Delivered(list):
    """The messages a runtime delivered, in order (:func:`observed_trainer`)."""

    def uploads(self, step: str = "train") -> dict:
        """``{sender: message}`` of the messages of ``step`` that reached the server."""
        return {m.sender: m for m in self if m.receiver == "server" and m.step == step}


@pytest.fixture
def observed_trainer():
    """A factory of simulator trainers that record what they deliver: ``(algorithm, ds,
    **overrides)`` gives ``(trainer, delivered)``: the trainer of ``algorithm`` on ``ds`` with
    its ML-100K config and ``overrides`` (through the spec, so a poisoning experiment gets its
    malicious clients) under one fixed client secret, and the :class:`Delivered` list every
    message it delivers is appended to."""
    from fedrec.algorithms import get_algorithm
    from fedrec.config import build_config
    from fedrec.federation.secrets import ClientSecrets

    def make(algorithm: str, ds, **overrides):
        spec = get_algorithm(algorithm)
        cfg = build_config(spec.config_cls, algorithm, "ml-100k", overrides=overrides)
        trainer = spec.trainer(cfg, ds, torch.device("cpu"), ClientSecrets(bytes(range(32))))
        seen = Delivered()
        trainer.runtime.observers.append(seen.append)
        return trainer, seen

    return make
