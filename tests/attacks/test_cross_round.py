"""Cross-round attacks on FedGNN uploads: the scoring functions on rows built here, and every
attack on short real runs (ML-100K u1 sliced to its first users) for each ``pseudo_set``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.fedgnn import FedGNNConfig
from fedrec.attacks import CrossRoundAttack
from fedrec.attacks.cross_round import (
    ClientRows,
    consistency_scores,
    frequency_guess,
    intersection_guess,
    top_k,
)
from fedrec.config import build_config
from fedrec.engines.common import slice_users
from fedrec.federation.message import SERVER, Message

USERS, CLIENTS, M = 40, 20, 200
NOISE = {"on": {"clip": 0.1, "laplace": 0.2}, "off": {"clip": 0.1, "laplace": 0.0}}


# -- the scoring functions ---------------------------------------------------------------------
def _built(fresh_ids: bool, seed: int = 0) -> tuple[ClientRows, np.ndarray]:
    """12 uploads of 5 real ids whose rows share a direction per id plus noise, and 20 pseudo
    ids (drawn afresh each upload, or kept) with fresh zero-mean rows."""
    rng = np.random.default_rng(seed)
    n_items, w, real = 50, 8, np.arange(5)
    direction = rng.normal(size=(5, w))
    acc = ClientRows(n_items, w)
    for _ in range(12):
        pseudo = rng.choice(np.arange(5, n_items), 20, replace=False) if fresh_ids \
            else np.arange(5, 25)
        rows = np.concatenate([direction + rng.normal(size=(5, w)), rng.normal(size=(20, w))])
        acc.add(np.concatenate([real, pseudo]), rows.astype(np.float32))
    return acc, real


def test_scoring_functions_on_built_rows():
    acc, real = _built(fresh_ids=True)
    assert acc.uploads == 12 and acc.rows == 12 * 25
    assert set(intersection_guess(acc.count, acc.uploads)) == set(real)
    assert set(frequency_guess(acc.count, acc.uploads, 1.0)) == set(real)
    assert set(real) < set(frequency_guess(acc.count, acc.uploads, 0.05))
    with pytest.raises(ValueError, match="share"):
        frequency_guess(acc.count, 1, 0.0)
    # centered / whitened are calibrated for ids seen a different number of times ...
    for stat in ("centered", "whitened"):
        assert set(top_k(consistency_scores(acc, stat), 5)) == set(real), stat
    # ... the ratio is not (~1 / sqrt(n) for noise): its top ids are pseudo ids seen rarely.
    top = top_k(consistency_scores(acc, "ratio"), 5)
    pseudo_seen = acc.count[5:][acc.count[5:] > 0]
    assert set(top) != set(real) and acc.count[top].min() < pseudo_seen.mean()
    kept, real = _built(fresh_ids=False)
    assert len(intersection_guess(kept.count, kept.uploads)) == 25
    for stat in ("ratio", "centered", "whitened"):
        assert set(top_k(consistency_scores(kept, stat), 5)) == set(real), stat
    with pytest.raises(ValueError, match="statistic"):
        consistency_scores(acc, "vibes")
    never = np.flatnonzero(acc.count == 0)
    assert np.isneginf(consistency_scores(acc, "centered")[never]).all()
    assert len(top_k(np.array([1.0, -np.inf]), 2)) == 1  # never guesses an unseen id


def test_observer_reads_only_uploads_to_the_server():
    attack = CrossRoundAttack({0: np.array([1, 2])}, num_items=4, at_uploads=(1,))
    payload = {"items": np.array([1, 2, 3]), "grad_items": np.ones((3, 2))}
    attack(Message(SERVER, 0, "train", 1, payload))  # server -> client
    attack(Message(0, SERVER, "evaluate", 1, payload))  # another step
    assert attack.acc == {} and attack.records == []
    attack(Message(0, SERVER, "train", 1, payload))
    assert attack.acc[0].uploads == 1 and len(attack.records) == 1
    assert attack.records[0]["intersection"] == pytest.approx(2 * 2 / (3 + 2))


# -- real runs ---------------------------------------------------------------------------------
def _run(ml100k, mode: str, noise: str, rounds: int, evidence: bool = False
         ) -> CrossRoundAttack:
    """FedGNN's configured ML-100K settings, small (first 40 users, 20 a round, dim 16, M 200,
    no expansion): ``rounds * 20 / 40`` uploads per client on average."""
    ds = slice_users(ml100k, USERS)
    cfg = build_config(FedGNNConfig, "fedgnn", "ml-100k", overrides={
        "pseudo_items": M, "pseudo_set": mode, "rounds": rounds, "dim": 16,
        "clients_per_round": CLIENTS, "neighbours": 0, **NOISE[noise]})
    trainer = get_algorithm("fedgnn").trainer(cfg, ds, torch.device("cpu"))
    positives = {u: c.train_items for u, c in trainer.job.client_data.items()}
    attack = CrossRoundAttack(positives, ds.num_items, at_uploads=(1, 5, 10),
                              statistics=("ratio", "centered"), pseudo_items=M,
                              evidence=evidence)
    trainer.runtime.observers.append(attack)
    for rnd in range(1, rounds + 1):
        trainer.train_round(rnd)
    attack.finish()
    return attack


def _row(attack: CrossRoundAttack, label: str) -> dict:
    return next(r for r in attack.summary() if r["uploads"] == label)


def test_intersection_recovers_per_round_pseudo_sets(ml100k):
    # A pseudo id is in an upload with probability M / (num_items - K) ~ 0.13 here, so after 5
    # uploads ~2e-4 of them survive the intersection; every real item is in every upload.
    attack = _run(ml100k, "per_round", "on", rounds=12)
    one, five = _row(attack, "1"), _row(attack, "5")
    assert five["clients"] >= 20
    for r in attack.records:  # one upload: the whole set, precision K / (K + M), recall 1
        if r["uploads"] == "1":
            assert r["intersection"] == pytest.approx(2 * r["rated"] / (2 * r["rated"] + M))
    assert one["intersection"] < 0.5
    assert five["intersection"] > 0.97
    assert five["frequency_0.9"] > 0.97
    for r in attack.records:  # exact: recall 1, so F1 = 1 iff no pseudo id is left
        if r["uploads"] == "5":
            assert r["intersection"] > 0.9


@pytest.mark.parametrize("mode", ["fixed", "fixed_coupled", "fixed_copy"])
def test_kept_pseudo_sets_defeat_the_intersection(ml100k, mode):
    attack = _run(ml100k, mode, "on", rounds=6)
    assert attack.records
    for r in attack.records:
        # The set never changes: the intersection is the whole upload, F1 = 2K / (2K + M).
        k = r["rated"]
        assert r["intersection"] == pytest.approx(2 * k / (2 * k + M))
        assert r["ids_seen"] == k + M


def test_row_consistency_breaks_fixed_sets(ml100k):
    # Without noise, a real item's rows point the same way round after round, while "fixed"
    # pseudo rows are redrawn each round: their average shrinks to the client's mean row.
    fixed = _row(_run(ml100k, "fixed", "off", rounds=20), "10")
    print(fixed)
    assert fixed["clients"] >= 10
    assert fixed["consistency_ratio"] > fixed["chance"] + 0.3
    assert fixed["consistency_centered"] > fixed["chance"] + 0.3


@pytest.mark.parametrize("mode", ["fixed_coupled", "fixed_copy"])
def test_row_consistency_does_not_break_kept_rows(ml100k, mode):
    # Same run as above, but the pseudo rows follow the real rows' trajectories (a kept
    # combination of them, or a copy of one): as consistent as the real rows.
    kept = _row(_run(ml100k, mode, "off", rounds=20, evidence=True), "10")
    print(kept)
    assert kept["clients"] >= 10
    for stat in ("consistency_ratio", "consistency_centered"):
        assert kept[stat] < kept["chance"] + 0.1, stat
    # The shape of the rows: coupled pseudo rows are Gaussian mixtures of the real rows, real
    # rows are not Gaussian, and summed over uploads that shows (measured 0.46 vs chance 0.19);
    # copies have the real rows' shape exactly (measured 0.19).
    if mode == "fixed_coupled":
        assert kept["evidence_gaussian"] > kept["chance"] + 0.15
    else:
        assert kept["evidence_gaussian"] < kept["chance"] + 0.1
