"""FedGNN with ``item_privacy="secure_sum"`` on real ML-100K (u1 split): the cohort's dense
gradients reach the server only as a Bonawitz et al. secure sum.

* The server's decoded sum equals the plain sum of the clients' inputs (clipped, Laplace-noised
  on every coordinate, rated-item counts) within the fixed-point bound ``m * 0.5 / scale``.
* Without noise, training equals the paper's mode without pseudo items (the same sums).
* What reaches the server: public keys, share ciphertexts, masked ring vectors (uncorrelated
  with the inputs, none equal to an encoded input), shares of seeds; no item id, no float.
* Clients dropping after sharing their keys are left out and the survivors' sum is right.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fedgnn import FedGNNConfig, build_fedgnn_job, ring_bound
from fedrec.data import load_dataset
from fedrec.errors import ConfigError
from fedrec.federation.message import SERVER
from fedrec.federation.secrets import ClientSecrets
from fedrec.federation.secure_sum import SECAGG_STEPS, secure_sum_config
from fedrec.models import gnn

DATA = Path(os.environ.get("FEDREC_DATA", "/work/shared/datasets"))
COHORT = 12
SECRETS = ClientSecrets(bytes(range(32)))
BASE = dict(rounds=2, dim=8, clients_per_round=COHORT, neighbours=0, eval_every=1,
            loss_reduction="sum", bias=True, item_privacy="secure_sum")


@pytest.fixture(scope="module")
def ds():
    if not (DATA / "ml-100k" / "u.data").is_file():
        pytest.skip("ML-100K is not staged")
    return load_dataset("ml-100k", DATA)


def make(ds, **kw):
    cfg = FedGNNConfig(**{**BASE, **kw})
    cfg.validate()
    # One client secret for every trainer: runs are compared draw for draw.
    tr = FederatedTrainer(build_fedgnn_job(cfg, ds, torch.device("cpu")), cfg,
                          torch.device("cpu"), SECRETS)
    return tr, cfg


class Spy:
    """Records each client's input to the secure sum and every message the server receives."""

    def __init__(self, tr) -> None:
        self.inputs: dict[int, np.ndarray] = {}
        self.to_server: list = []
        tr.runtime.observers.append(
            lambda m: self.to_server.append(m) if m.receiver == SERVER else None)
        secure = tr.job.client_logic.secure
        advertise = secure.advertise

        def recording(ctx, x, request):
            self.inputs[int(ctx.party)] = np.array(x, dtype=np.float64)
            return advertise(ctx, x, request)

        secure.advertise = recording

    def received(self, step: str) -> dict[int, dict]:
        return {m.sender: m.payload for m in self.to_server if m.step == step}


def one_sum(tr):
    """Round 1's secure sum, called on the server as run_round does."""
    rt, srv = tr.runtime, tr.job.server
    rt.begin_round(1)
    stats: dict[str, float] = {}
    out = srv.secure_sum(rt, rt.sample_clients(COHORT), stats)
    return out, stats


def layout(tr):
    srv = tr.job.server
    p = gnn.flatten(srv.params).numel()
    num_items, width = srv.items.shape
    return p, num_items, width, p + num_items * width


def test_config_checks() -> None:
    def check(**kw):
        FedGNNConfig(rounds=1, **kw).validate()

    with pytest.raises(ConfigError, match="needs clip > 0"):
        check(item_privacy="secure_sum", clip=0.0, laplace=0.0)
    with pytest.raises(ConfigError, match="clients_per_round >= 2"):
        check(item_privacy="secure_sum", clients_per_round=1)
    with pytest.raises(ConfigError, match="item_privacy"):
        check(item_privacy="dense")
    with pytest.raises(ConfigError, match="secagg_threshold"):
        check(item_privacy="secure_sum", secagg_threshold=0.5)
    assert ring_bound(FedGNNConfig(rounds=1, clip=0.1, laplace=0.2)) == pytest.approx(4.1)
    assert ring_bound(FedGNNConfig(rounds=1, clip=0.1, laplace=0.0)) == 0.1


def test_sum_equals_the_clients_noised_dense_inputs(ds) -> None:
    tr, cfg = make(ds, item_avg="uploaders")  # LDP on (clip 0.1, Laplace 0.2) + counts
    spy = Spy(tr)
    (g_model, g_items, uploads, survivors), stats = one_sum(tr)
    p, num_items, width, grads = layout(tr)
    bound = ring_bound(cfg)
    assert stats["dropped_after_keys"] == 0 and sorted(survivors) == sorted(spy.inputs)
    assert len(survivors) == COHORT
    for u, x in spy.inputs.items():
        assert x.shape == (grads + num_items,)
        rated = np.zeros(num_items, dtype=bool)
        rated[tr.runtime._client_data[u].train_items] = True
        # Counts block: exactly the ring bound on the rated items, 0 elsewhere.
        np.testing.assert_array_equal(x[grads:], bound * rated)
        rows = x[p:grads].reshape(num_items, width)
        # Every coordinate is noised, rated or not: zeros would point at unrated items.
        assert np.count_nonzero(x[:grads]) == grads
        assert abs(np.abs(rows[~rated]).mean() - cfg.laplace) < 0.01  # E|Lap(0.2)| = 0.2
        assert np.abs(x[:grads]).max() <= bound
    total = sum(spy.inputs.values())
    enc = secure_sum_config(total.size, COHORT, cfg.secagg_threshold, bound,
                            cfg.secagg_bits).encoder
    tol = COHORT * 0.5 / enc.scale + 1e-6 * np.abs(total).max()  # fixed point + float32 cast
    np.testing.assert_allclose(g_model.numpy(), total[:p], rtol=0, atol=tol)
    np.testing.assert_allclose(g_items.numpy().ravel(), total[p:grads], rtol=0, atol=tol)
    raters = np.zeros(num_items)
    for u in survivors:
        np.add.at(raters, tr.runtime._client_data[u].train_items, 1)
    np.testing.assert_array_equal(uploads.numpy(), raters)
    report = tr.privacy_report()
    assert report["ldp"] and report["item_privacy"] == "secure_sum"
    assert report["upload_dim"] == grads  # epsilon per upload counts every coordinate


def test_without_noise_training_equals_the_paper_mode_without_pseudo_items(ds) -> None:
    common = dict(laplace=0.0, item_avg="uploaders", pseudo_items=0)
    secure, _ = make(ds, **common)
    plain, _ = make(ds, **{**common, "item_privacy": "pseudo"})
    for r in (1, 2):
        s, q = secure.train_round(r), plain.train_round(r)
        assert s["clients"] == q["clients"] == COHORT
    a, b = secure.job.server, plain.job.server
    assert (a.items - b.items).abs().max().item() <= 1e-6
    assert (gnn.flatten(a.params) - gnn.flatten(b.params)).abs().max().item() <= 1e-6
    ea, eb = secure.evaluate(), plain.evaluate()
    assert abs(ea["rmse"] - eb["rmse"]) <= 1e-6


def test_server_sees_no_item_ids_and_no_individual_vector(ds) -> None:
    tr, cfg = make(ds)
    spy = Spy(tr)
    tr.train_round(1)
    _, _, _, grads = layout(tr)
    assert {m.step for m in spy.to_server} == {"train", *SECAGG_STEPS}
    for payload in spy.received("train").values():  # keys only: no ids, rows or loss
        assert set(payload) == {"c_pk", "s_pk"}
        assert all(isinstance(v, bytes) and len(v) == 32 for v in payload.values())
    for step in ("secagg_share", "secagg_unmask"):
        for payload in spy.received(step).values():
            assert all(isinstance(v, bytes) for v in payload.values())
    enc = secure_sum_config(grads, COHORT, cfg.secagg_threshold, ring_bound(cfg),
                            cfg.secagg_bits).encoder
    masked = spy.received("secagg_mask")
    assert sorted(masked) == sorted(spy.inputs) and len(masked) == COHORT
    for u, payload in masked.items():
        assert set(payload) == {"y"}
        y, x = payload["y"], spy.inputs[u]
        assert y.dtype == np.uint32 and y.shape == (grads,)  # dense: the same for everyone
        assert np.mean(y == enc.encode(x)) < 1e-3  # no coordinate in the clear
        assert abs(np.corrcoef(enc.decode(y), x)[0, 1]) < 0.05
    # Nothing else an observer of the server could read: no float or id array anywhere.
    for m in spy.to_server:
        for v in m.payload.values():
            if isinstance(v, np.ndarray | torch.Tensor):
                assert m.step == "secagg_mask" and v.dtype == np.uint32


def test_dropout_after_key_sharing_still_completes(ds) -> None:
    # A dropped client answers train (+ keys) and secagg_share, then goes silent.
    tr, cfg = make(ds, dropout=0.3, dropout_after_calls=2)
    spy = Spy(tr)
    (g_model, g_items, _, survivors), stats = one_sum(tr)
    shared, masked = spy.received("secagg_share"), spy.received("secagg_mask")
    dropped = sorted(set(shared) - set(masked))
    assert len(shared) == COHORT and stats["dropped_after_keys"] == len(dropped) > 0
    assert sorted(survivors) == sorted(masked)
    p, _, _, grads = layout(tr)
    total = sum(spy.inputs[u] for u in survivors)
    enc = secure_sum_config(grads, COHORT, cfg.secagg_threshold, ring_bound(cfg),
                            cfg.secagg_bits).encoder
    tol = COHORT * 0.5 / enc.scale + 1e-6 * np.abs(total).max()
    np.testing.assert_allclose(g_model.numpy(), total[:p], rtol=0, atol=tol)
    np.testing.assert_allclose(g_items.numpy().ravel(), total[p:], rtol=0, atol=tol)
    # A whole round with dropouts completes and counts only the survivors.
    tr2, _ = make(ds, dropout=0.3, dropout_after_calls=2)
    st = tr2.train_round(1)
    assert st["clients"] + st["dropped_after_keys"] <= COHORT and st["dropped_after_keys"] > 0


def test_secaggplus_variant_trains_the_same_model(ds) -> None:
    # SecAgg+ decodes the same ring sum of the same encodings as Bonawitz: equal models.
    plus, cfg = make(ds, secagg_variant="secagg+")
    bonawitz, _ = make(ds)
    spy = Spy(plus)
    for r in (1, 2):
        assert plus.train_round(r) == bonawitz.train_round(r)
    degree = secure_sum_config(1, COHORT, cfg.secagg_threshold, 1.0, 32, variant="secagg+",
                               corrupt=cfg.secagg_corrupt, dropout=cfg.secagg_dropout).degree
    assert all(len(p) == degree < COHORT - 1 for p in spy.received("secagg_share").values())
    a, b = plus.job.server, bonawitz.job.server
    assert torch.equal(a.items, b.items)
    assert torch.equal(gnn.flatten(a.params), gnn.flatten(b.params))
    assert plus.privacy_report()["protection"].startswith("secure aggregation (SecAgg+")
    with pytest.raises(ConfigError, match="secagg_variant"):
        FedGNNConfig(rounds=1, item_privacy="secure_sum", secagg_variant="plus").validate()
