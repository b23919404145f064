"""``bench/bench_aggregate_attacks.py``'s FedGRec cases: the wrapped aggregation keeps one
statistic per round (the round's upload, not the warm-up's sums), the support of exact sums
leaves items out and that of noised sums is every item; the wrap is undone afterwards."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from fedrec.data import RatingDataset
from fedrec.engines.common import slice_users
from fedrec.federation import secure_sum

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_aggregate_attacks.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_aggregate_attacks", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["fedgrec-secure-sum", "fedgrec-dp"])
def test_fedgrec_cases_keep_one_statistic_per_round(ml100k: RatingDataset, name: str) -> None:
    bench = _bench()
    ds = slice_users(ml100k, 100)
    trainer, opts = bench.build(name, ds, 2)
    keeper = bench.Keeper(ds.num_users)
    server, original = trainer.job.server, secure_sum.run_secure_sum
    undo = bench.instrument(name, server, keeper, ds.num_items)
    try:
        for rnd in (1, 2):
            trainer.train_round(rnd)
    finally:
        undo()
    assert secure_sum.run_secure_sum is original
    if server.dp is not None:
        assert server.dp.aggregate.__func__ is type(server.dp).aggregate
    assert len(keeper.stats) == len(keeper.members) == 2
    stats = np.stack(keeper.stats)
    assert stats.shape == (2, ds.num_items)
    members = np.stack(keeper.members)
    assert members.sum(1).min() > 50
    if "dp" in opts:  # every row of a noised sum is nonzero: the attack learns nothing
        assert stats.all()
    else:  # an exact sum: items no member trained are zero rows, the rest are not
        assert 0 < stats.sum(1).min() and stats.sum(1).max() < ds.num_items
        truth = np.zeros((ds.num_users, ds.num_items), dtype=bool)
        truth[ds.train.users, ds.train.items] = True
        assert np.all(stats[0].astype(bool)[truth[members[0]].any(0)])
