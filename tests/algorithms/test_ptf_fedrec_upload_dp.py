"""PTF-FedRec's formal upload mechanism (``upload_dp: gaussian``): its accounting, its one-line
errors, its draws, the one-run audit, and a small ML-100K run where the attacks are at chance."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.ptf_fedrec import PTFFedRecConfig, build_ptf_fedrec_job
from fedrec.algorithms.methods.ptf_fedrec.upload_dp import (
    UploadPlan,
    audit_uploads,
    composed_epsilon,
    release,
    sample_items,
    solve_upload_noise,
    upload_plan,
)
from fedrec.cli.summary import privacy_rows
from fedrec.config import build_config
from fedrec.errors import ConfigError
from fedrec.federation.message import EXPERIMENTER, SERVER, Message
from fedrec.federation.secrets import ClientSecrets
from fedrec.privacy.mechanisms import GaussianMechanism, analytic_gaussian_delta

pytestmark = pytest.mark.usefixtures("one_thread_module")

DP = {"upload_dp": "gaussian", "defense": "none"}


def _cfg(**over) -> PTFFedRecConfig:
    return build_config(PTFFedRecConfig, "ptf-fedrec", "ml-100k", overrides=over)


# -- accounting ------------------------------------------------------------------------------
@pytest.mark.parametrize("z", [1.0, 4.0])
def test_epsilon_grows_with_uploads_as_the_composed_gaussian(z: float):
    plan = UploadPlan(items=100, noise_multiplier=z, delta=1e-5, rounds=20)
    eps = [plan.epsilon(n) for n in (1, 2, 5, 20)]
    assert all(a < b for a, b in itertools.pairwise(eps))
    for n, e in zip((1, 2, 5, 20), eps, strict=True):
        # Closed form: n Gaussian releases of multiplier z are one of multiplier z / sqrt(n)
        # (mu-GDP), whose exact (epsilon, delta) is Balle and Wang's.
        assert e == pytest.approx(composed_epsilon(z, n, 1e-5), rel=1e-6)
        one = GaussianMechanism(1.0, noise_multiplier=z / math.sqrt(n))
        assert e == pytest.approx(one.epsilon(1e-5), rel=1e-6)
        assert analytic_gaussian_delta(z / math.sqrt(n), e) == pytest.approx(1e-5, rel=1e-3)
    assert plan.epsilon(0) == 0.0
    # The sensitivity is sqrt(m): sigma scales with it, epsilon does not.
    assert plan.sigma == pytest.approx(z * 10.0)


def test_the_report_accounts_for_the_most_participating_client():
    plan = UploadPlan(items=50, noise_multiplier=2.0, delta=1e-5, rounds=10)
    rep_low = plan.accountant({1: 3, 2: 1}).report(1e-5)
    rep_high = plan.accountant({1: 3, 2: 7}).report(1e-5)
    assert rep_low.epsilon == pytest.approx(plan.epsilon(3))
    assert rep_high.epsilon == pytest.approx(plan.epsilon(7)) and rep_high.method == "pld"


def test_target_epsilon_solves_the_noise_for_the_planned_rounds():
    z = solve_upload_noise(2.0, 20, 1e-5)
    assert composed_epsilon(z, 20, 1e-5) <= 2.0 < composed_epsilon(z * 0.99, 20, 1e-5)
    plan = upload_plan(_cfg(**DP, target_epsilon=2.0, rounds=20), num_items=1682)
    assert plan is not None and plan.noise_multiplier == z and plan.items == 100
    assert plan.epsilon(20) <= 2.0 + 1e-9
    assert upload_plan(_cfg(**DP, upload_noise=3.0, upload_items=5000), 1682).items == 1682
    assert upload_plan(_cfg(), 1682) is None


# -- one-line errors -------------------------------------------------------------------------
@pytest.mark.parametrize("over, message", [
    ({"upload_dp": "gaussian", "target_epsilon": 1.0}, "set defense=none"),
    (DP, "needs upload_noise > 0 or target_epsilon > 0"),
    ({**DP, "upload_noise": 1.0, "target_epsilon": 1.0}, "not both"),
    ({"target_epsilon": 1.0}, "need upload_dp=gaussian"),
    ({"defense": "none", "upload_noise": 2.0}, "need upload_dp=gaussian"),
    ({**DP, "target_epsilon": 0.01, "rounds": 20}, "no noise multiplier up to 1000"),
    ({**DP, "upload_noise": 1.0, "dp_delta": 0.0}, "dp_delta"),
    ({"upload_dp": "laplace"}, "upload_dp"),
])
def test_impossible_settings_are_one_line_errors(over, message):
    with pytest.raises(ConfigError, match=message) as info:
        _cfg(**over)
    assert "\n" not in str(info.value)


def test_the_dp_aggregate_is_refused_naming_the_methods_own_mode():
    with pytest.raises(ConfigError, match="has no DP aggregate \\(dp\\), its DP mode is "
                                          "upload_dp") as info:
        _cfg(dp="distributed")
    assert "\n" not in str(info.value)


def test_a_dp_run_refuses_the_flower_engine():
    from fedrec.federation.dp_sum import check_engine

    with pytest.raises(ConfigError, match="upload_dp=gaussian runs on the simulator only"):
        check_engine(_cfg(**DP, upload_noise=1.0), "flower")
    check_engine(_cfg(), "flower")


# -- the draws ------------------------------------------------------------------------------
def test_item_samples_are_uniform_distinct_and_the_clients_own():
    keys = torch.tensor([11, 22, 33], dtype=torch.int64)
    local, items = sample_items(keys, 1, 50, 10)
    assert local.tolist() == [c for c in range(3) for _ in range(10)]
    for c in range(3):
        mine = items[local == c]
        assert len(torch.unique(mine)) == 10 and bool((mine[1:] > mine[:-1]).all())
    # A client's sample depends on its key and the round only (not on its cohort).
    _, alone = sample_items(keys[1:2], 1, 50, 10, chunk_cells=50)
    assert torch.equal(alone, items[local == 1])
    assert not torch.equal(sample_items(keys, 2, 50, 10)[1], items)
    # Uniform: every item about equally often over many clients.
    many = torch.arange(4000, dtype=torch.int64) * 7919
    hits = torch.bincount(sample_items(many, 1, 50, 10)[1], minlength=50).numpy()
    assert hits.min() > 0.8 * 800 and hits.max() < 1.2 * 800


def test_release_adds_keyed_gaussian_noise():
    n = 20000
    raw = torch.full((n,), 0.25)
    keys = torch.full((n,), 5, dtype=torch.int64)
    items = torch.arange(n)
    out = release(raw, keys, 3, items, 2.0)
    assert out.dtype == torch.float32
    assert float(out.mean()) == pytest.approx(0.25, abs=0.05)
    assert float(out.std()) == pytest.approx(2.0, rel=0.03)
    assert torch.equal(out, release(raw, keys, 3, items, 2.0))
    assert not torch.equal(out, release(raw, keys + 1, 3, items, 2.0))


def test_audit_below_the_accounted_epsilon_and_the_noiseless_mutation_caught():
    plan = UploadPlan(items=20, noise_multiplier=solve_upload_noise(1.0, 5, 1e-5), delta=1e-5,
                      rounds=5)
    res = audit_uploads(plan, canaries=1000, uploads=5, seed=0)
    assert res.accounted_epsilon == pytest.approx(1.0, abs=0.01)
    assert res.epsilon_lower_bound < res.accounted_epsilon
    broken = audit_uploads(plan, canaries=1000, uploads=5, seed=0, remove_noise=True)
    assert broken.epsilon_lower_bound > res.accounted_epsilon


# -- a small run ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dp_run(ml100k):
    cfg = _cfg(**DP, target_epsilon=1.0, rounds=3, clients_per_round=150, server_epochs=1,
               local_epochs=1, eval_every=3, upload_items=50)
    trainer = FederatedTrainer(build_ptf_fedrec_job(cfg, ml100k, torch.device("cpu")), cfg,
                               torch.device("cpu"), ClientSecrets(bytes(range(32))))
    tap: list[Message] = []
    trainer.runtime.observers.append(tap.append)
    stats = [trainer.train_round(r) for r in (1, 2, 3)]
    metrics = trainer.evaluate()
    return cfg, trainer, tap, stats, metrics


def test_a_dp_run_uploads_noised_scores_on_its_own_random_items(dp_run):
    _, trainer, tap, stats, metrics = dp_run
    ups = [m for m in tap if m.receiver == SERVER]
    assert ups and {m.step for m in ups} == {"train"}
    for m in ups:
        assert set(m.payload) == {"items", "scores"} and len(m.payload["items"]) == 50
    # The ids are the sample keyed by the client's own key, whatever its data.
    plan = trainer.job.server.plan
    some = ups[0]
    st = trainer.runtime.states[some.sender]
    assert torch.equal(torch.as_tensor(some.payload["items"]), st["last_upload"]["items"])
    noise = st["last_upload"]["scores"] - st["last_upload"]["raw_scores"]
    assert float(noise.abs().max()) > 1.0  # unclamped: the noise is sigma-sized
    assert plan.sigma == pytest.approx(plan.noise_multiplier * math.sqrt(50))
    # Evaluation replies go to the experimenter, never the server.
    evaluated = [m for m in tap if m.step == "evaluate"]
    assert evaluated and all(EXPERIMENTER in (m.sender, m.receiver) for m in evaluated)
    assert 0.0 <= metrics["Recall@20"] <= 1.0 and all(s["clients"] == 150 for s in stats)


def test_a_dp_run_reports_its_epsilon_and_the_attacks_at_chance(dp_run):
    cfg, trainer, _, _, _ = dp_run
    rep = trainer.privacy_report()
    most = max(trainer.job.server.participations.values())
    assert rep["participations_max"] == most <= cfg.rounds
    assert 0 < rep["epsilon"] <= cfg.target_epsilon + 1e-9
    assert rep["epsilon"] == pytest.approx(composed_epsilon(rep["noise_multiplier"], most,
                                                            1e-5), rel=1e-6)
    assert rep["delta"] == 1e-5 and rep["epsilon_method"].startswith("pld")
    assert rep["unit"].startswith("user") and "server" in rep["threat"]
    assert rep["server_receives"]["evaluate"].startswith("nothing")
    # The cross-upload attack (the figure) and the single-upload one are at chance.
    assert rep["measured_attack"].startswith("CrossUploadAttack")
    assert rep["measured_attack_f1"] == pytest.approx(rep["measured_chance_f1"], abs=0.01)
    assert rep["single_upload_attack_f1"] < 2 * rep["measured_chance_f1"]
    rows = privacy_rows(rep)
    assert rows[0] == ("privacy", f"user-level DP against the server, epsilon "
                                  f"{rep['epsilon']:.3g} (delta 1e-05, pld)")
    assert rows[1] == ("privacy", f"measured attack F1 {rep['measured_attack_f1']:.3f} "
                                  "(CrossUploadAttack)")
