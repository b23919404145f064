"""feras's ``embedding_dp = node`` (:mod:`fedrec.algorithms.methods.feras.dp`) on real Cora:
one node's attribute row changes only its own uploaded row, by at most 2C; public rows carry
no noise; the composed epsilon is the accountant's closed form; the report claims no bound for
the whole run; bad input is a one-line ConfigError before training."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import FederatedTrainer, privacy_report_of
from fedrec.algorithms.methods.feras import build_feras_job, dp, host_id
from fedrec.algorithms.methods.feras.steps import EMBED
from fedrec.data import assign_private_nodes
from fedrec.errors import ConfigError
from fedrec.federation.message import AGGREGATOR, Message
from fedrec.federation.secrets import ClientSecrets
from fedrec.privacy.rdp import ORDERS
from fedrec.privacy.report import NO_GUARANTEE

CPU = torch.device("cpu")
pytestmark = pytest.mark.usefixtures("single_thread")

DP = {"num_hosts": 4, "private_fraction": 0.5, "presample": 50, "schedule": "synchronous",
      "iterations_per_round": 1, "rounds": 3, "embedding_dp": "node",
      "embedding_noise_multiplier": 2.0, "embedding_clip": 0.05}


def first_uploads(ds, **overrides) -> dict[str, dict]:
    """Every host's upload of iteration 1 (all hosts on the public initial weights)."""
    cfg = resolve_config("feras", "cora", overrides={**DP, **overrides})
    tr = FederatedTrainer(build_feras_job(cfg, ds, CPU), cfg, CPU, ClientSecrets(bytes(32)))
    seen: list[Message] = []
    tr.runtime.observers.append(seen.append)
    tr.train_round(1)
    return {m.sender: m.payload for m in seen if m.step == EMBED and m.receiver == AGGREGATOR}


def test_one_node_changes_only_its_own_uploaded_row_by_at_most_2c(cora) -> None:
    base = first_uploads(cora)
    owner = assign_private_nodes(cora.num_nodes, 4, 0.5, 0)
    seen0 = np.asarray(base[host_id(0)]["seen"])
    v = int(next(n for n in seen0 if owner[n] == 0))  # a private node of host 0 it sampled
    x = np.array(cora.x, copy=True)
    x[v] = 1 - x[v]  # every word flipped
    changed = first_uploads(dataclasses.replace(cora, x=x))
    for h in range(1, 4):  # the other hosts do not hold v: their uploads are the same
        np.testing.assert_array_equal(np.asarray(base[host_id(h)]["embeddings"]),
                                      np.asarray(changed[host_id(h)]["embeddings"]))
    a = np.asarray(base[host_id(0)]["embeddings"], np.float64)
    b = np.asarray(changed[host_id(0)]["embeddings"], np.float64)
    differs = np.flatnonzero(np.abs(a - b).max(axis=1) > 0)
    assert seen0[differs].tolist() == [v]
    assert np.linalg.norm(a[differs[0]] - b[differs[0]]) <= 2 * DP["embedding_clip"]


def test_public_rows_are_clipped_without_noise_and_private_rows_carry_sigma_c(cora) -> None:
    owner = assign_private_nodes(cora.num_nodes, 4, 0.5, 0)
    up = first_uploads(cora)[host_id(1)]
    seen, emb = np.asarray(up["seen"]), np.asarray(up["embeddings"], np.float64)
    public = owner[seen] < 0
    assert public.any() and (~public).any()
    c = DP["embedding_clip"]
    assert np.linalg.norm(emb[public], axis=1).max() <= c
    # Private rows: clipped row plus N(0, (sigma C)^2) per coordinate; the noise dominates.
    noise_std = float(np.std(emb[~public]))
    assert noise_std == pytest.approx(DP["embedding_noise_multiplier"] * c, rel=0.05)


def cks_epsilon(count: int, z: float, delta: float, orders: np.ndarray | None = None) -> float:
    """Closed form: ``count`` Gaussians at noise multiplier ``z`` are ``(a, count a / 2z^2)``-
    RDP; Canonne, Kamath & Steinke's conversion, minimised over ``orders`` (default: a dense
    grid of real orders, so the minimum is the continuous one to ~1e-5)."""
    a = np.geomspace(1.0001, 4096, 400_000) if orders is None else orders.astype(np.float64)
    eps = count * a / (2 * z * z) + np.log((a - 1) / a) - (math.log(delta) + np.log(a)) / (a - 1)
    return float(eps.min())


@pytest.mark.parametrize("sigma", [1.0, 4.0, 30.0])
def test_the_composed_epsilon_is_the_accountants_closed_form(sigma: float) -> None:
    cfg = resolve_config("feras", "cora", overrides={
        **DP, "rounds": 7, "iterations_per_round": 10, "eval_every": 3,
        "embedding_noise_multiplier": sigma})
    n = 7 * 10 + 3  # every iteration, and rounds 3, 6 and 7 evaluated
    assert dp.planned_uploads(cfg) == n
    acct = dp.upload_accountant(cfg)
    closed = cks_epsilon(n, sigma / 2, 1e-5)  # sensitivity 2C, noise sigma C
    # dp-accounting minimises the same expression over its own discrete orders: at or just
    # above the continuous minimum, and at or below the minimum over fedrec's integer orders.
    assert closed * (1 - 1e-6) <= acct.epsilon_rdp(1e-5) <= closed * 1.02
    assert acct.epsilon_rdp(1e-5) <= cks_epsilon(n, sigma / 2, 1e-5, ORDERS) * (1 + 1e-9)
    report = dp.privacy_report(cfg, "x", None).to_json()["embedding_uploads"]
    assert report["epsilon"] == min(report["epsilon_pld"], report["epsilon_rdp"])
    assert report["epsilon_rdp"] == pytest.approx(acct.epsilon_rdp(1e-5))


@pytest.mark.parametrize("target", [0.5, 8.0, 100.0])
def test_a_target_epsilon_solves_sigma_on_the_planned_uploads(target: float) -> None:
    cfg = resolve_config("feras", "cora", overrides={
        **DP, "rounds": 40, "iterations_per_round": 10, "embedding_noise_multiplier": 0.0,
        "embedding_target_epsilon": target})
    sigma, n = dp.noise_multiplier(cfg), dp.planned_uploads(cfg)
    # Solved on fedrec's RDP bound (integer orders): the smallest sigma (to 0.1%) reaching it.
    assert cks_epsilon(n, sigma / 2, 1e-5, ORDERS) <= target * (1 + 1e-9)
    assert cks_epsilon(n, sigma / 2 / 1.002, 1e-5, ORDERS) > target
    assert dp.privacy_report(cfg, "x", None).to_json()["embedding_uploads"]["epsilon"] <= target


def test_the_report_claims_no_bound_for_the_run_and_states_the_weights(cora) -> None:
    cfg = resolve_config("feras", "cora", overrides=DP)
    tr = FederatedTrainer(build_feras_job(cfg, cora, CPU), cfg, CPU, ClientSecrets(bytes(32)))
    tr.train_round(1)
    typed = privacy_report_of(tr.job.server)
    assert typed is not None
    report = typed.to_json()
    assert report is not None
    assert report["guarantee"] == NO_GUARANTEE and report["epsilon"] is None
    assert "no formal guarantee for the weights" in report["protection"]
    assert report["unit"] == dp.UNIT and "aggregation server" in report["threat"]
    uploads = report["embedding_uploads"]
    assert uploads["epsilon"] == dp.upload_accountant(cfg).report(1e-5).epsilon
    assert uploads["uploads_per_node"] == 3 * 1 + 3
    assert report["weights"]["guarantee"] == NO_GUARANTEE
    assert "not measured" in report["weights"]["measured_attack"]
    # Without the mode: the report of before, no figure for the uploads.
    plain = dp.privacy_report(resolve_config("feras", "cora"), "x", None).to_json()
    assert plain["guarantee"] == NO_GUARANTEE and "embedding_uploads" not in plain


@pytest.mark.parametrize(("overrides", "message"), [
    ({"share_at": "layer"}, r"^embedding_dp=node needs share_at=projection: "),
    ({"share": "weights"}, r"^embedding_dp=node calibrates the embedding uploads; share="),
    ({"embedding_target_epsilon": 1.0}, r"^embedding_dp=node needs exactly one of "),
    ({"embedding_noise_multiplier": 0.0}, r"^embedding_dp=node needs exactly one of "),
    ({"embedding_noise_multiplier": 0.0, "embedding_target_epsilon": 1e-9},
     r"^no noise multiplier up to 10000 reaches target_epsilon 1e-09"),
    ({"embedding_dp": "host"}, r"embedding_dp"),
    ({"embedding_clip": 0.0}, r"^embedding_clip must be > 0"),
    ({"embedding_delta": 1.0}, r"^embedding_delta must be in \(0, 1\)"),
])
def test_bad_input_is_a_one_line_config_error(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        resolve_config("feras", "cora", overrides={**DP, **overrides})
    assert "\n" not in str(err.value)
