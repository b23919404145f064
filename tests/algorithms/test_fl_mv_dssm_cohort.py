"""FL-MV-DSSM's vectorised view training equals each view trained alone (up to float rounding),
and a view's result does not depend on which other views share its stack."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.methods.fl_mv_dssm import FLMVDSSMConfig, cohort
from fedrec.models import dssm, dssm_stacked

pytestmark = pytest.mark.usefixtures("single_thread")

NUM_ITEMS, ITEM_DIM = 60, 40
DIMS = {"demographics": 5, "svd": 3}


def config(**overrides: object) -> FLMVDSSMConfig:
    return resolve_config("fl-mv-dssm", "ml-100k", overrides=overrides)  # type: ignore[return-value]


def sparse_items(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    feats = (rng.random((NUM_ITEMS, ITEM_DIM)) < 0.15) * rng.random((NUM_ITEMS, ITEM_DIM))
    return feats.astype(np.float32)


def alone(cfg: FLMVDSSMConfig, items: torch.Tensor, item_start: dssm.Params,
          user_start: dssm.Params, x_user: np.ndarray,
          steps: list[torch.Tensor]) -> tuple[dssm.Params, dssm.Params]:
    """One view's local SGD on its own, with the dense towers of fedrec.models.dssm."""
    item = {k: v.clone().requires_grad_(True) for k, v in item_start.items()}
    user = {k: v.clone().requires_grad_(True) for k, v in user_start.items()}
    x = torch.from_numpy(x_user)
    for cands in steps:
        loss = dssm.softmax_loss(dssm.tower(user, x), dssm.tower(item, items[cands]), cfg.gamma)
        params = [*item.values(), *user.values()]
        with torch.no_grad():
            for p, g in zip(params, torch.autograd.grad(loss, params), strict=True):
                p -= cfg.client_lr * g
    return ({k: v.detach() for k, v in item.items()}, {k: v.detach() for k, v in user.items()})


def test_sparse_item_tower_equals_the_dense_one() -> None:
    feats = sparse_items()
    params = dssm.init_tower(ITEM_DIM, (8, 4), torch.Generator().manual_seed(1))
    ids = torch.tensor([[0, 5, 5, 59], [3, 2, 1, 0]])
    stacked = dssm_stacked.item_tower(dssm_stacked.stack([params, params]),
                                      dssm_stacked.SparseRows.of(feats), ids)
    dense = dssm.tower(params, torch.from_numpy(feats)[ids])
    assert torch.allclose(stacked, dense, atol=1e-6)


@pytest.mark.parametrize("chunk", [2, 64])
def test_cohort_training_equals_each_view_alone(chunk: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cohort, "CHUNK", chunk)
    cfg = config(client_batch=4, local_epochs=2)
    feats = sparse_items()
    items = torch.from_numpy(feats)
    item_start = dssm.init_tower(ITEM_DIM, cfg.widths, torch.Generator().manual_seed(2))
    rng = np.random.default_rng(3)
    names = ["svd", "demographics", "svd", "demographics", "svd"]
    positives = [rng.choice(NUM_ITEMS, size=n, replace=False) for n in (9, 3, 0, 17, 6)]
    starts = [dssm.init_tower(DIMS[n], cfg.widths, torch.Generator().manual_seed(10 + k))
              for k, n in enumerate(names)]
    xs = [rng.random(DIMS[n]).astype(np.float32) for n in names]
    draws = [cohort.view_draws(cfg, p, NUM_ITEMS, torch.Generator().manual_seed(20 + k))
             for k, p in enumerate(positives)]
    assert [len(d) for d in draws] == [6, 2, 0, 10, 4]  # ceil(n / 4) batches, 2 epochs
    trained = cohort.train_views(cfg, dssm_stacked.SparseRows.of(feats), item_start, starts,
                                 names, xs, draws)
    assert trained.steps == [6, 2, 0, 10, 4]
    for k, name in enumerate(names):
        item_ref, user_ref = alone(cfg, items, item_start, starts[k], xs[k], draws[k])
        row = trained.user_rows[name].index(k)
        for p in item_ref:
            assert torch.allclose(trained.item[p][k], item_ref[p], atol=1e-5), (k, p)
        for p in user_ref:
            assert torch.allclose(trained.user[name][p][row], user_ref[p], atol=1e-5), (k, p)
    # the view without positives is untouched; the others moved
    assert all(torch.equal(trained.item[p][2], item_start[p]) for p in item_start)
    assert not torch.equal(trained.item["w1"][3], item_start["w1"])
