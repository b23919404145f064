"""FedMF on the real ML-100K: the server only ever holds ciphertexts and the public key, one
round's encrypted update is the plaintext FCF-style SGD step (within the fixed-point resolution),
the model learns, and bad options are refused. 512-bit keys keep the tests fast (tests only)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from phe import PaillierPrivateKey

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fedmf import FedMFConfig, FedMFServer, build_fedmf_job
from fedrec.config import build_config
from fedrec.core.codec import iter_float_arrays, payload_size
from fedrec.data import RatingDataset
from fedrec.errors import ConfigError
from fedrec.federation import SERVER, Message
from fedrec.federation.secrets import ClientSecrets
from fedrec.privacy.paillier import EncryptedArray

CPU = torch.device("cpu")
SECRETS = ClientSecrets(bytes(range(32)))
RES = 2.0**-32  # the fixed-point resolution of fedrec.privacy.paillier


def _trainer(ds: RatingDataset, **overrides):
    base = {"key_bits": 512, "dim": 4, "clients_per_round": 3, "lr": 0.05}
    cfg = build_config(FedMFConfig, "fedmf", "ml-100k", overrides={**base, **overrides})
    # One client secret for every trainer: runs are compared draw for draw.
    return FederatedTrainer(build_fedmf_job(cfg, ds, CPU), cfg, CPU, SECRETS), cfg


def client_keys(trainer):
    """The key pair the clients share (derived from their role secret)."""
    rt = trainer.runtime
    return trainer.job.client_logic.keys(rt._context(rt.client_ids[0], "keys"))


@dataclass
class Round:
    trainer: object
    cfg: FedMFConfig
    seen: list[Message]
    table_before: np.ndarray  # V_0 as the clients decrypted it
    table_after: np.ndarray  # V_1, decrypted with the clients' key
    init_states: dict[int, tuple[torch.Tensor, torch.Tensor]]


def _run_one_round(ds: RatingDataset, **overrides) -> Round:
    trainer, cfg = _trainer(ds, **overrides)
    logic = trainer.job.client_logic
    data = trainer.job.client_data
    init = {}
    for u in trainer.runtime.client_ids:  # the user factors every client starts from
        state = logic.init_state(u, data[u], SECRETS.party(u))
        init[u] = (state["p"].clone(), state["b"].clone())
    seen: list[Message] = []
    trainer.runtime.observers.append(seen.append)
    trainer.train_round(1)
    _, private = client_keys(trainer)
    down = next(m for m in seen if m.step == "train" and m.sender == SERVER)
    public = client_keys(trainer)[0]
    before = EncryptedArray.from_wire(public, down.payload["table"]).decrypt(private)
    after = trainer.job.server.table.decrypt(private)
    return Round(trainer, cfg, seen, before, after, init)


@pytest.fixture(scope="module")
def full_round(ml100k: RatingDataset) -> Round:
    return _run_one_round(ml100k)


def _reference(cfg, data, p, b, q, b_i, mu):
    """One client's FCF-style step from the definitions (plain per-client autograd): user steps
    on the mean loss, then the gradient of the summed loss on the item rows."""
    items = torch.tensor(data.train_items, dtype=torch.int64)
    r = torch.tensor(data.train_values, dtype=torch.float32)
    p, b = p.clone().requires_grad_(True), b.clone().requires_grad_(True)
    for _ in range(cfg.local_steps):
        loss = ((r - (mu + b + b_i[items] + q[items] @ p)) ** 2).mean() + cfg.reg * (p @ p + b * b)
        gp, gb = torch.autograd.grad(loss, [p, b])
        with torch.no_grad():
            p -= cfg.lr_user * gp
            b -= cfg.lr_user * gb
    Q, B = q.clone().requires_grad_(True), b_i.clone().requires_grad_(True)
    p, b = p.detach(), b.detach()
    loss = ((r - (mu + b + B[items] + Q[items] @ p)) ** 2).sum() + cfg.reg * (Q[items] ** 2).sum()
    gq, gb_i = torch.autograd.grad(loss, [Q, B])
    return p, b, torch.cat([gq, gb_i[:, None]], dim=1).double().numpy()


def test_one_round_is_the_plaintext_sgd_step(full_round: Round, ml100k: RatingDataset) -> None:
    tr, cfg = full_round.trainer, full_round.cfg
    v0 = full_round.table_before
    # The starting table is FCF's initialisation (same seed), with zero item biases.
    assert v0.shape == (ml100k.num_items, cfg.dim + 1) and np.all(v0[:, -1] == 0)
    q = torch.as_tensor(v0[:, :-1], dtype=torch.float32)
    b_i = torch.as_tensor(v0[:, -1], dtype=torch.float32)
    mu = (ml100k.rating_min + ml100k.rating_max) / 2
    uploads = {m.sender: m.payload for m in full_round.seen
               if m.step == "train" and m.receiver == SERVER}
    assert len(uploads) == cfg.clients_per_round
    _, private = client_keys(tr)
    public = client_keys(tr)[0]
    expected = v0.copy()
    own_sum = np.zeros_like(v0)
    for u, up in uploads.items():
        data = tr.job.client_data[u]
        p_ref, b_ref, grad = _reference(cfg, data, *full_round.init_states[u], q, b_i, mu)
        expected -= cfg.lr * grad
        # Each upload (decrypted here with the clients' key) is exactly -lr · its own gradient,
        # zero on every unrated row.
        delta = EncryptedArray.from_wire(public, up["update"]).decrypt(private)
        own_sum += delta
        np.testing.assert_allclose(delta, -cfg.lr * grad, rtol=1e-4, atol=1e-6)
        unrated = np.setdiff1d(np.arange(ml100k.num_items), data.train_items)
        assert np.all(delta[unrated] == 0)
        # The user factor stayed on the device, updated as the reference says.
        state = tr.runtime.states[u]
        torch.testing.assert_close(state["p"], p_ref, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(state["b"], b_ref, rtol=1e-4, atol=1e-5)
    # The server's homomorphic sum is the plaintext sum up to the fixed-point rounding...
    assert np.abs(full_round.table_after - (v0 + own_sum)).max() <= (len(uploads) + 1) * RES
    # ...and so the plaintext FCF-style SGD step V_1 = V_0 - lr · Σ_u g_u.
    np.testing.assert_allclose(full_round.table_after, expected, rtol=1e-4, atol=1e-6)
    assert np.abs(full_round.table_after - v0).max() > 1e-3  # and it did move


def test_server_never_sees_a_plaintext_gradient(full_round: Round, ml100k: RatingDataset) -> None:
    tr, cfg, seen = full_round.trainer, full_round.cfg, full_round.seen
    width = 2 * cfg.key_bits // 8
    to_server = [m for m in seen if m.receiver == SERVER]
    assert {m.step for m in to_server} == {"public_key", "train"}
    key_msgs = [m for m in to_server if m.step == "public_key"]
    assert len(key_msgs) == 1 and set(key_msgs[0].payload) == {"n"}
    assert len(key_msgs[0].payload["n"]) == cfg.key_bits // 8  # n, nothing more
    shape = (ml100k.num_items, cfg.dim + 1, width)
    _, private = client_keys(tr)
    public = client_keys(tr)[0]
    for m in to_server:
        assert not list(iter_float_arrays(m.payload)), m.step  # not a single float
    uploads = [m for m in to_server if m.step == "train"]
    for m in uploads:
        # Full mode: one ciphertext per item and column, the same shape for every client, so the
        # upload's form says nothing about which items were rated...
        assert set(m.payload) == {"update"}
        assert m.payload["update"].dtype == np.uint8 and m.payload["update"].shape == shape
        # ...and no row is a trivial encryption: zero rows look like any other.
        cts = EncryptedArray.from_wire(public, m.payload["update"]).numbers
        assert all(c.ciphertext(False) % public.n != 1 for c in cts)
        # The ledger counts the ciphertexts' bytes exactly.
        assert m.nbytes == payload_size(m.payload) == 9 + 2 + 6 + 3 + 24 + int(np.prod(shape))
    up_bytes = tr.ledger.totals(1)["bytes_up"]
    assert up_bytes == sum(m.nbytes for m in to_server)
    # Downlink: the encrypted table only.
    for m in seen:
        if m.sender == SERVER:
            assert not list(iter_float_arrays(m.payload))
    # The server object holds the public key and ciphertexts, never a private key.
    server = tr.job.server
    assert isinstance(server, FedMFServer) and server.public_key == public
    assert not any(isinstance(v, PaillierPrivateKey) for v in vars(server).values())
    assert not hasattr(server, "keys")
    # Decrypting needs the clients' key: the stored table is not the plaintext.
    assert private.decrypt(server.table.numbers[0]) == pytest.approx(full_round.table_after[0, 0])


def test_part_mode_same_table_and_names_rated_items(
    full_round: Round, ml100k: RatingDataset
) -> None:
    part = _run_one_round(ml100k, upload="part")
    # The same round (seed, cohort, keys) gives exactly the same table: zero rows add zero.
    np.testing.assert_array_equal(part.table_after, full_round.table_after)
    uploads = {m.sender: m.payload for m in part.seen if m.step == "train" and m.receiver == SERVER}
    for u, up in uploads.items():
        data = part.trainer.job.client_data[u]
        # What part mode gives away: the ids of the rated items, in plaintext.
        assert sorted(up["items"].tolist()) == sorted(set(data.train_items.tolist()))
        assert up["update"].shape == (len(up["items"]), part.cfg.dim + 1, 128)
        assert not list(iter_float_arrays(up))
    assert part.trainer.ledger.totals(1)["bytes_up"] < full_round.trainer.ledger.totals(1)[
        "bytes_up"] / 5
    # Resuming from a checkpointed state gives the same encrypted table and model.
    fresh, _ = _trainer(ml100k, upload="part")
    fresh.load_state_dict(part.trainer.state_dict())
    _, private = client_keys(part.trainer)
    np.testing.assert_array_equal(fresh.job.server.table.decrypt(private), part.table_after)
    assert fresh.job.server.table.to_wire().tobytes() == part.trainer.job.server.table.to_wire(
    ).tobytes()


def test_rmse_decreases_over_rounds(ml100k: RatingDataset) -> None:
    # Part mode for speed: the previous test shows it computes the same table as full mode.
    trainer, _ = _trainer(ml100k, upload="part", clients_per_round=30)
    rmse = [trainer.evaluate()["rmse"]]
    for rnd in (1, 2, 3):
        assert trainer.train_round(rnd)["clients"] == 30
        metrics = trainer.evaluate()
        rmse.append(metrics["rmse"])
    # Measured: 1.272 -> 1.150 after 3 rounds of 30 clients (all 943 evaluate themselves).
    assert all(b < a for a, b in itertools.pairwise(rmse)), rmse
    assert rmse[-1] < rmse[0] - 0.08, rmse
    assert metrics["eval_clients"] == len(ml100k.user_ids())
    assert 0.5 < metrics["mae"] < metrics["rmse"]
    assert trainer.privacy_report()["epsilon"] is None


@pytest.mark.parametrize(("key", "value", "match"), [
    ("key_bits", 256, "key_bits must be >= 512"),
    ("key_bits", 1020, "multiple of 8"),
    ("key_bits", 16384, "key_bits must be <= 8192"),
    ("key_bits", "big", "integer"),
    ("upload", "some", "upload must be one of full, part"),
    ("lr", 0.0, "lr must be > 0"),
    ("dim", 0, "dim must be >= 1"),
    ("local_steps", 0, "local_steps"),
    ("secure_aggregation", True, "Paillier"),
    ("colour", 1, "unknown option"),
])
def test_bad_config_is_a_config_error(key: str, value, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        build_config(FedMFConfig, "fedmf", "ml-100k", overrides={key: value})


def test_registry_and_defaults() -> None:
    spec = get_algorithm("fedmf")
    assert spec.config_cls is FedMFConfig and spec.dataset_kinds == ("rating",)
    cfg = build_config(FedMFConfig, "fedmf", "ml-100k")
    assert (cfg.key_bits, cfg.upload, cfg.dim) == (2048, "full", 8)
    assert 0 < cfg.clients_per_round <= 10  # Paillier's cost: few clients per round
