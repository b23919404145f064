"""Secure aggregation as runtime steps (fedrec.federation.secure_sum), through FCF with
``secure_aggregation: true`` on the first 40 users of the real ML-100K.

* The trained model equals plain FCF's within the fixed-point tolerance: the summed gradient of
  ``m`` clients is off by at most ``m * 0.5 / scale`` per coordinate
  (``scale = floor((2^31 - 1) / n) / clip``; 3.7e-6 here for n = m = 40, clip = 10), which
  Adam's normalised steps carry into the factors: we allow 1e-5 after 3 rounds (observed
  8e-7); with 64-bit ring elements the sums are exact to float64 rounding and the factors agree
  to float32 rounding (allowed 1e-6, observed 3e-8).
* What reaches the server: public keys, share ciphertexts, masked vectors, unmasking shares;
  each masked vector is uncorrelated with the client's gradient, and removing its masks with the
  client's true seeds (recorded by the test) gives back exactly the encoded gradient.
* Clients that drop after sharing keys are left out and the sum of the others is right.
"""

from __future__ import annotations

import copy
import io
import os
import re
from collections import defaultdict

import numpy as np
import pytest
import torch
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fcf import FCFConfig, build_fcf_job
from fedrec.config import build_config
from fedrec.engines.common import load_sliced
from fedrec.errors import ConfigError, ProtocolError
from fedrec.federation import SERVER
from fedrec.federation.runtime import seed_everything
from fedrec.federation.secrets import ClientSecrets
from fedrec.federation.secure_sum import (
    SECAGG_STEPS,
    PlainSum,
    SparseUpload,
    plain_message,
    secure_sum_config,
    threshold_count,
)
from fedrec.privacy.prg import prg_accumulate
from fedrec.privacy.secagg import _MASK_INFO, _kdf, _mask_sign, _pair

USERS = 40
CPU = torch.device("cpu")
SECRETS = ClientSecrets(bytes(range(32)))
BASE = {"dim": 8, "rounds": 3}


@pytest.fixture(scope="module")
def ds(data_root):
    if not (data_root / "ml-100k" / "u.data").is_file():
        pytest.skip("ML-100K is not staged")
    return load_sliced("ml-100k", data_root, USERS)


def _trainer(ds, **overrides):
    cfg = build_config(FCFConfig, "fcf", "ml-100k", overrides=dict(BASE, **overrides))
    seed_everything(cfg.seed)
    # One client secret for every trainer: the comparisons are draw for draw.
    return FederatedTrainer(build_fcf_job(cfg, ds, CPU), cfg, CPU, SECRETS), cfg


def _train(trainer, rounds: int) -> list[dict]:
    return [trainer.train_round(r) for r in range(1, rounds + 1)]


class Spy:
    """Records what the server receives, each client's plaintext input and its random draws."""

    def __init__(self, trainer) -> None:
        self.to_server: list = []
        self.inputs: dict[int, np.ndarray] = {}
        self.draws: dict[int, list[bytes]] = defaultdict(list)
        trainer.runtime.observers.append(
            lambda m: self.to_server.append(m) if m.receiver == SERVER else None)
        secure = trainer.job.client_logic.secure
        advertise = secure.advertise

        def recording_advertise(ctx, x, request):
            self.inputs[ctx.party] = np.array(x, dtype=np.float64)
            return advertise(ctx, x, request)

        def rand_for(party):
            def rand(n: int) -> bytes:
                out = os.urandom(n)
                self.draws[party].append(out)
                return out
            return rand

        secure.advertise = recording_advertise
        secure.rand_factory = rand_for

    def received(self, step: str) -> dict[int, dict]:
        return {m.sender: m.payload for m in self.to_server if m.step == step}


def test_threshold_and_config_checks() -> None:
    assert threshold_count(40, 0.6) == 24 and threshold_count(3, 0.6) == 2
    assert threshold_count(10, 1.0) == 10
    with pytest.raises(ConfigError):
        threshold_count(10, 0.5)
    with pytest.raises(ProtocolError):
        threshold_count(1, 0.6)
    with pytest.raises(ConfigError):
        build_config(FCFConfig, "fcf", "ml-100k", overrides={"secagg_threshold": 0.4})


@pytest.mark.parametrize(("bits", "tol"), [(32, 1e-5), (64, 1e-6)])
def test_secure_fcf_equals_plain_fcf(ds, bits: int, tol: float) -> None:
    plain, _ = _trainer(ds)
    _train(plain, 3)
    secure, _ = _trainer(ds, secure_aggregation=True, secagg_bits=bits)
    stats = _train(secure, 3)
    assert stats == [{"clients": USERS, "dropped_after_keys": 0}] * 3
    a, b = secure.job.server, plain.job.server
    assert (a.q - b.q).abs().max().item() <= tol
    assert (a.b_i - b.b_i).abs().max().item() <= tol
    ea, eb = secure.evaluate(), plain.evaluate()
    assert all(abs(ea[k] - eb[k]) <= 1e-5 for k in eb), (ea, eb)
    report = secure.privacy_report()
    assert report["secure_aggregation"] is True and report["protection"].startswith(
        "secure aggregation (Bonawitz")


def test_server_sees_only_masked_uploads(ds) -> None:
    trainer, cfg = _trainer(ds, secure_aggregation=True)
    spy = Spy(trainer)
    _train(trainer, 1)
    size = ds.num_items * (cfg.dim + 1)
    sa = secure_sum_config(size, USERS, cfg.secagg_threshold, cfg.secagg_clip, cfg.secagg_bits)
    enc = sa.encoder
    steps = {m.step for m in spy.to_server}
    assert steps == {"train", *SECAGG_STEPS}
    # Step 1: public keys only (the gradient stays on the device).
    for payload in spy.received("train").values():
        assert set(payload) == {"c_pk", "s_pk"}
        assert all(isinstance(v, bytes) and len(v) == 32 for v in payload.values())
    # Step 2: AES-GCM ciphertexts of shares, one per other client.
    for payload in spy.received("secagg_share").values():
        assert len(payload) == USERS - 1 and all(isinstance(v, bytes) for v in payload.values())
    # Step 3: masked vectors, dense over all items.
    masked = spy.received("secagg_mask")
    assert sorted(masked) == list(range(USERS)) == sorted(spy.inputs)
    pub = {v: X25519PrivateKey.from_private_bytes(d[1]).public_key().public_bytes_raw()
           for v, d in spy.draws.items()}
    for u, payload in masked.items():
        y, x = payload["y"], spy.inputs[u]
        assert y.dtype == np.uint32 and y.shape == (size,) and x.shape == (size,)
        assert np.count_nonzero(x) > 0 and np.abs(x).max() < cfg.secagg_clip
        encoded = enc.encode(x)
        # Uncorrelated with the gradient, and no coordinate left in the clear.
        lifted = enc.decode(y)
        assert abs(np.corrcoef(lifted, x)[0, 1]) < 0.05
        assert np.mean(y == encoded) < 1e-3
        # The mask is real: y minus the self mask PRG(b_u) and the pairwise masks PRG(s_uv),
        # computed from u's true secrets, is exactly u's encoded gradient.
        _c_sk, s_sk, b_seed = spy.draws[u][:3]  # draw order: c_sk, s_sk, then b_u
        unmasked = y.copy()
        prg_accumulate(unmasked, b_seed, -1)
        mine = X25519PrivateKey.from_private_bytes(s_sk)
        for v in range(USERS):
            if v != u:
                prg_accumulate(unmasked, _kdf(mine, pub[v], _MASK_INFO + _pair(u, v)),
                               -_mask_sign(u, v))
        np.testing.assert_array_equal(unmasked, encoded)
    # Step 4: shares of seeds only (bytes), no vectors.
    for payload in spy.received("secagg_unmask").values():
        assert all(isinstance(v, bytes) for v in payload.values())
    # The summed gradient the server applied is the sum of the inputs.
    total = sum(spy.inputs.values())
    grad = torch.cat([trainer.job.server.q.grad.ravel(), trainer.job.server.b_i.grad])
    np.testing.assert_allclose(grad.numpy(), total, atol=USERS * 0.5 / enc.scale + 1e-6)
    # No float vector of any client's size ever reached the server in this round.
    for m in spy.to_server:
        for v in m.payload.values():
            assert not (isinstance(v, np.ndarray | torch.Tensor) and v.dtype in (
                np.float32, np.float64, torch.float32, torch.float64))


def test_clients_dropping_after_key_sharing_are_recovered(ds) -> None:
    # A dropped client answers train (+ advertise keys) and secagg_share, then goes silent.
    trainer, cfg = _trainer(ds, secure_aggregation=True, dropout=0.3, dropout_after_calls=2)
    spy = Spy(trainer)
    stats = _train(trainer, 1)[0]
    shared, masked = spy.received("secagg_share"), spy.received("secagg_mask")
    dropped = sorted(set(shared) - set(masked))
    assert len(shared) == USERS and stats["dropped_after_keys"] == len(dropped) > 0
    assert stats["clients"] == len(masked) == USERS - len(dropped)
    total = sum(spy.inputs[u] for u in masked)
    grad = torch.cat([trainer.job.server.q.grad.ravel(), trainer.job.server.b_i.grad])
    enc = secure_sum_config(total.size, USERS, cfg.secagg_threshold, cfg.secagg_clip,
                            cfg.secagg_bits).encoder
    np.testing.assert_allclose(grad.numpy(), total, atol=USERS * 0.5 / enc.scale + 1e-6)
    # The same clients dropping before training in plain FCF (the draw depends on the seed and
    # round only): the same item step.
    plain, _ = _trainer(ds, dropout=0.3)
    assert _train(plain, 1)[0]["clients"] == stats["clients"]
    assert (plain.job.server.q - trainer.job.server.q).abs().max().item() <= 1e-5
    # The dropped clients' session is kept until their next sum; the others' is gone.
    states = trainer.runtime.states
    assert all(("secagg" in states[u]) == (u in dropped) for u in range(USERS))
    # ... as plain values, so checkpoints (deepcopy here, torch.save on a SuperNode) work.
    buf = io.BytesIO()
    torch.save(copy.deepcopy(trainer.state_dict()), buf)


def test_too_few_survivors_abort_the_round(ds) -> None:
    trainer, _ = _trainer(ds, secure_aggregation=True, dropout=0.6, dropout_after_calls=2,
                          secagg_threshold=0.9)
    with pytest.raises(ProtocolError, match="fewer than the threshold") as err:
        trainer.train_round(1)
    # The message says what decides the threshold and what to change (issue 42): a run whose
    # cohort keeps losing more than the threshold allows aborts every round otherwise.
    text = str(err.value)
    assert "\n" not in text
    assert re.search(r"the threshold is t = ceil\(secagg_threshold \* cohort\) = 36 of a "
                     r"cohort of 40, and \d+ survived: lower secagg_threshold", text), text
    assert "raise clients_per_round, or lower dropout" in text


def test_a_small_cohort_losing_most_clients_names_the_options_to_change(ds) -> None:
    # 5 clients a round, t = max(2, ceil(0.6 * 5)) = 3; 80% drop after sharing keys.
    trainer, _ = _trainer(ds, secure_aggregation=True, clients_per_round=5, dropout=0.8,
                          dropout_after_calls=2)
    with pytest.raises(ProtocolError) as err:
        trainer.train_round(1)
    text = str(err.value)
    assert re.search(r"^secure sum aborted: only \d clients .*, fewer than the threshold 3; the "
                     r"threshold is t = ceil\(secagg_threshold \* cohort\) = 3 of a cohort of "
                     r"5, and \d survived: lower secagg_threshold \(down to just above 0.5\), "
                     r"raise clients_per_round, or lower dropout$", text), text


# SecAgg+ (secagg_variant: secagg+): the same steps, each client masking with its neighbours.

PLUS = {"secure_aggregation": True, "secagg_variant": "secagg+"}


def test_secaggplus_fcf_equals_bonawitz_fcf_exactly(ds) -> None:
    # Both decode the same ring sum of the same encodings (the masks cancel exactly), so the
    # models are equal, not merely close; and both are plain FCF's within the fixed-point bound.
    bonawitz, _ = _trainer(ds, secure_aggregation=True)
    _train(bonawitz, 2)
    plus, _ = _trainer(ds, **PLUS)
    stats = _train(plus, 2)
    assert stats == [{"clients": USERS, "dropped_after_keys": 0}] * 2
    assert torch.equal(plus.job.server.q, bonawitz.job.server.q)
    assert torch.equal(plus.job.server.b_i, bonawitz.job.server.b_i)
    plain, _ = _trainer(ds)
    _train(plain, 2)
    assert (plus.job.server.q - plain.job.server.q).abs().max().item() <= 1e-5
    assert plus.privacy_report()["protection"].startswith("secure aggregation (SecAgg+")


def test_secaggplus_server_sees_only_masked_uploads(ds) -> None:
    trainer, cfg = _trainer(ds, **PLUS)
    spy = Spy(trainer)
    _train(trainer, 1)
    size = ds.num_items * (cfg.dim + 1)
    sa = secure_sum_config(size, USERS, cfg.secagg_threshold, cfg.secagg_clip, cfg.secagg_bits,
                           variant="secagg+", corrupt=cfg.secagg_corrupt,
                           dropout=cfg.secagg_dropout)
    assert sa.degree == 14 < USERS - 1  # 40 clients, 5% corrupt, 10% dropouts
    shares = spy.received("secagg_share")
    neighbours = {u: {int(k[3:]) for k in payload} for u, payload in shares.items()}
    assert all(len(vs) == sa.degree and all(u in neighbours[v] for v in vs)
               for u, vs in neighbours.items())  # k ciphertexts each, to a symmetric graph
    pub = {v: X25519PrivateKey.from_private_bytes(d[1]).public_key().public_bytes_raw()
           for v, d in spy.draws.items()}
    for u, payload in spy.received("secagg_mask").items():
        y, encoded = payload["y"], sa.encoder.encode(spy.inputs[u])
        assert np.mean(y == encoded) < 1e-3
        unmasked = y.copy()
        prg_accumulate(unmasked, spy.draws[u][2], -1)
        mine = X25519PrivateKey.from_private_bytes(spy.draws[u][1])
        for v in neighbours[u]:  # the self mask and k pairwise masks: all the masks there are
            prg_accumulate(unmasked, _kdf(mine, pub[v], _MASK_INFO + _pair(u, v)),
                           -_mask_sign(u, v))
        np.testing.assert_array_equal(unmasked, encoded)
    for m in spy.to_server:
        for v in m.payload.values():
            assert not (isinstance(v, np.ndarray | torch.Tensor) and v.dtype in (
                np.float32, np.float64, torch.float32, torch.float64))


@pytest.mark.parametrize("fraction", [0.1, 0.3])
def test_secaggplus_dropouts_after_key_sharing(ds, fraction: float) -> None:
    trainer, cfg = _trainer(ds, **PLUS, secagg_dropout=0.3, dropout=fraction,
                            dropout_after_calls=2)
    spy = Spy(trainer)
    stats = _train(trainer, 1)[0]
    shared, masked = spy.received("secagg_share"), spy.received("secagg_mask")
    dropped = sorted(set(shared) - set(masked))
    assert len(shared) == USERS and stats["dropped_after_keys"] == len(dropped) > 0
    total = sum(spy.inputs[u] for u in masked)
    grad = torch.cat([trainer.job.server.q.grad.ravel(), trainer.job.server.b_i.grad])
    enc = secure_sum_config(total.size, USERS, cfg.secagg_threshold, cfg.secagg_clip,
                            cfg.secagg_bits, variant="secagg+", dropout=0.3).encoder
    np.testing.assert_allclose(grad.numpy(), total, atol=USERS * 0.5 / enc.scale + 1e-6)


def test_secaggplus_too_few_survivors_in_a_neighbourhood_abort(ds) -> None:
    # 60% drop after sharing keys, the graph sized for 10%: some neighbourhood keeps fewer than
    # its threshold, though more than t clients survive overall.
    trainer, _ = _trainer(ds, **PLUS, dropout=0.6, dropout_after_calls=2)
    with pytest.raises(ProtocolError, match="neighbourhood sent masked inputs, fewer than the "
                                            "threshold") as err:
        trainer.train_round(1)
    assert "raise secagg_dropout to the share of clients this run drops, raise " \
           "clients_per_round, or lower dropout" in str(err.value)


def test_secaggplus_options_are_checked() -> None:
    for bad in ({"secagg_variant": "bell"}, {"secagg_corrupt": 1.0}, {"secagg_dropout": -0.1}):
        with pytest.raises(ConfigError, match="secagg_"):
            build_config(FCFConfig, "fcf", "ml-100k", overrides=bad)
    with pytest.raises(ConfigError, match="no SecAgg\\+ graph on 10 clients"):
        secure_sum_config(5, 10, 0.6, 1.0, 32, variant="secagg+", corrupt=0.5, dropout=0.5)


@pytest.mark.parametrize("bits", [32, 64])
def test_plain_sum_of_sparse_and_dense_uploads_is_the_same(bits: int) -> None:
    """A plain upload sent dense or as its nonzero entries sums to the same ring element, part
    by part or whole, and decodes to the sum of the clipped inputs within the grid."""
    rng = np.random.default_rng(0)
    size, n = 500, 7
    cfg = secure_sum_config(size, n, 0.6, 1.0, bits)
    uploads = []
    for _ in range(n):
        at = rng.choice(size, 40, replace=False)
        uploads.append(SparseUpload(size, at.astype(np.int64), rng.normal(0, 0.8, 40)))
    dense, sparse = PlainSum(cfg), PlainSum(cfg)
    for u, up in enumerate(uploads):
        dense.add(u, plain_message(up, cfg, "dense"))
        msg = plain_message(up, cfg, "sparse")
        assert msg["x"].size == 40  # only the nonzero entries travel
        sparse.add(u, msg)
        # A dense vector given to the sparse form keeps exactly its nonzero entries.
        assert np.array_equal(plain_message(up.dense(), cfg, "sparse")["x"],
                              msg["x"][np.argsort(up.at)])
    (a, ca), (b, cb) = dense.result(), sparse.result()
    assert ca == cb == n and np.array_equal(a, b)
    want = np.clip(np.stack([up.dense() for up in uploads]), -1, 1).sum(0)
    assert np.abs(a - want).max() <= n * 0.5 / cfg.encoder.scale + 1e-12


def test_plain_sum_rejects_malformed_uploads() -> None:
    cfg = secure_sum_config(10, 2, 0.6, 1.0, 32)
    x = cfg.encoder.encode(np.ones(3))
    for bad in ({"x": x}, {"x": x.astype(np.int64)},
                {"x": x, "at": np.array([0, 1, 10])}, {"x": x, "at": np.array([0, 1])},
                {"x": x, "at": np.array([-1, 1, 2])}, {"x": x, "at": np.array([0., 1., 2.])}):
        with pytest.raises(ProtocolError):
            PlainSum(cfg).add(0, bad)
    with pytest.raises(ConfigError):
        plain_message(np.ones(10), cfg, "zip")
