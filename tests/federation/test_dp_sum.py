"""The DP aggregate on real data: the sampler the accountant assumes, masking that changes nothing
but what the server sees, resume, bad input. (That a DP run's server receives no clear value
derived from client data is the conformance suite's, for every method: tests/conformance.)"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fcf import FCFConfig, build_fcf_job
from fedrec.algorithms.methods.fedgnn import FedGNNConfig, build_fedgnn_job
from fedrec.algorithms.methods.fedmf import FedMFConfig
from fedrec.config import build_config
from fedrec.data import RatingDataset
from fedrec.errors import ConfigError
from fedrec.federation.dp_sum import check_engine, plan_for
from fedrec.federation.runtime import poisson_cohort
from fedrec.federation.secrets import ClientSecrets
from fedrec.privacy.rdp import rdp_epsilon

CPU = torch.device("cpu")
SECRETS = ClientSecrets(bytes(range(32)))
JOBS = {"fcf": (FCFConfig, build_fcf_job), "fedgnn": (FedGNNConfig, build_fedgnn_job)}

def _trainer(ds: RatingDataset, algorithm: str, **overrides):
    cls, build = JOBS[algorithm]
    cfg = build_config(cls, algorithm, "ml-100k", overrides={
        "dim": 8, "dp": "distributed", "noise_multiplier": 1.0, "clients_per_round": 40,
        "rounds": 3, **overrides})
    return FederatedTrainer(build(cfg, ds, CPU), cfg, CPU, SECRETS), cfg


def test_the_sampler_is_the_accountants() -> None:
    """Each client is in a round's cohort independently with the plan's rate: inclusion
    frequencies and cohort-size variance are the Poisson sampler's, and the plan's cohorts (from
    the public seed) are exactly the runtime's."""
    ids, rate, rounds = list(range(400)), 0.05, 2000
    members = np.zeros((rounds, len(ids)), dtype=bool)
    for r in range(1, rounds + 1):  # one draw a round (not one per client: 800,000 draws)
        members[r - 1, poisson_cohort(ids, rate, 3, r)] = True
    freq = members.mean(0)
    assert abs(freq.mean() - rate) < 0.002
    assert np.abs(freq - rate).max() < 5 * np.sqrt(rate * (1 - rate) / rounds)
    sizes = members.sum(1)
    assert sizes.var() == pytest.approx(len(ids) * rate * (1 - rate), rel=0.15)
    cfg = build_config(FCFConfig, "fcf", "ml-100k", overrides={
        "dp": "distributed", "noise_multiplier": 1.0, "clients_per_round": 20, "rounds": 50,
        "seed": 3})
    plan = plan_for(cfg, 400, 10)
    assert plan.rate == pytest.approx(0.05)
    assert plan.planned_sizes.tolist() == members[:50].sum(1).tolist()


def test_masking_changes_only_what_the_server_sees(ml100k: RatingDataset) -> None:
    """The secure sum of the noised ring vectors decodes to their plain ring sum bit for bit: the
    model after two rounds is the same either way; only the server-side bound differs."""
    models = []
    for masking in (True, False):
        trainer, _ = _trainer(ml100k, "fcf", dp_masking=masking)
        for r in (1, 2):
            trainer.train_round(r)
        models.append(trainer.job.server.q.detach().clone())
        report = trainer.privacy_report()
        assert (report["epsilon"] is None) != masking
    assert torch.equal(models[0], models[1])


@pytest.mark.parametrize("mode", [{"dp_masking": False}, {"dp": "central"}])
def test_a_sum_in_clear_streams_in_parts_to_the_same_model(
        ml100k: RatingDataset, monkeypatch: pytest.MonkeyPatch, mode: dict) -> None:
    """A sum in clear adds the replies up as they arrive, a few clients at a time (the part
    size from STREAM_BYTES): the model, the survivors, every message and every metered byte
    are those of one part holding the whole cohort."""
    from fedrec.federation import dp_sum

    runs = []
    for stream_bytes in (dp_sum.STREAM_BYTES, 1):  # 1 byte: one client a part
        monkeypatch.setattr(dp_sum, "STREAM_BYTES", stream_bytes)
        trainer, _ = _trainer(ml100k, "fcf", **mode)
        sent: Counter = Counter()
        trainer.runtime.observers.append(lambda m, sent=sent: sent.update([(m.sender, m.step)]))
        stats = [trainer.train_round(r) for r in (1, 2)]
        runs.append((trainer.job.server.q.detach().clone(), stats, sent,
                     trainer.ledger.totals()))
    assert torch.equal(runs[0][0], runs[1][0])
    assert runs[0][1:] == runs[1][1:]


def test_resume_equals_an_uninterrupted_run(ml100k: RatingDataset) -> None:
    whole, _ = _trainer(ml100k, "fcf", dp_masking=False)
    for r in (1, 2, 3):
        whole.train_round(r)
    first, _ = _trainer(ml100k, "fcf", dp_masking=False)
    for r in (1, 2):
        first.train_round(r)
    state = first.state_dict()
    second, _ = _trainer(ml100k, "fcf", dp_masking=False)
    second.load_state_dict(state)
    second.train_round(3)
    assert torch.equal(whole.job.server.q, second.job.server.q)
    assert whole.privacy_report() == second.privacy_report()


def test_central_noise_is_the_servers_and_accounted_for_the_released_model(
        ml100k: RatingDataset) -> None:
    trainer, _ = _trainer(ml100k, "fedgnn", dp="central", noise_multiplier=2.0)
    trainer.train_round(1)
    report = trainer.privacy_report()
    assert report["epsilon"] is None and report["epsilon_released_model"] > 0
    assert report["paper_mechanisms"].startswith("not used")


@pytest.mark.parametrize("overrides,message", [
    ({"noise_multiplier": -1.0}, "noise_multiplier must be >= 0"),
    ({"dp_clip": 0.0}, "dp_clip must be > 0"),
    ({"noise_multiplier": 0.0}, "needs noise_multiplier > 0 or target_epsilon"),
    ({"noise_multiplier": 0.0, "target_epsilon": 1e-3, "rounds": 500}, "reaches target"),
    ({"noise_multiplier": 1.0, "target_epsilon": 3.0}, "not both"),
    ({"dp": "laplace"}, "dp must be one of"),
    ({"secure_aggregation": True}, "exclusive"),
    ({"clients_per_round": 0, "secagg_bits": 32, "noise_multiplier": 50000.0}, "too small"),
])
def test_bad_input_is_refused_before_training(ml100k: RatingDataset, overrides: dict,
                                              message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _trainer(ml100k, "fcf", **overrides)


def test_dp_on_an_engine_or_method_without_it_is_refused() -> None:
    cfg = build_config(FCFConfig, "fcf", "ml-100k", overrides={
        "dp": "distributed", "noise_multiplier": 1.0})
    with pytest.raises(ConfigError, match="simulator only"):
        check_engine(cfg, "flower")
    with pytest.raises(ConfigError, match="dp"):
        build_config(FedMFConfig, "fedmf", "ml-100k", overrides={"dp": "distributed"})


def test_dropouts_leave_only_survivors_noise_and_are_accounted(ml100k: RatingDataset) -> None:
    """Clients that drop after sharing keys are out of the sum and their noise with them; each
    sum is accounted at its survivors (never below the threshold it was sized for), so the run's
    epsilon is at least that of the same rounds without dropouts."""
    trainer, _ = _trainer(ml100k, "fcf", dropout=0.2, dropout_after_calls=2,
                          secagg_threshold=0.6)
    for r in (1, 2):
        trainer.train_round(r)
    agg = trainer.job.server.dp
    keys = list(agg.accountant.rounds)
    assert all(survivors < cohort for cohort, survivors in keys)  # some dropped in each round
    assert all(survivors >= agg.plan.threshold(cohort) for cohort, survivors in keys)
    full = trainer.privacy_report()["epsilon"]
    no_drop = type(agg.accountant)("distributed", 1.0, agg.plan.curve)
    for cohort, _ in keys:
        no_drop.record((cohort, cohort), [0])
    assert full > rdp_epsilon(no_drop.server_curve(), 1e-5)


def test_the_summary_prints_both_threats(ml100k: RatingDataset) -> None:
    from fedrec.cli.summary import privacy_rows

    for masking in (True, False):
        trainer, _ = _trainer(ml100k, "fcf", dp_masking=masking)
        trainer.train_round(1)
        report = trainer.privacy_report()
        rows = dict(privacy_rows(report))
        released = report["epsilon_released_model"]
        assert released > 0
        assert rows["privacy (released model)"] == (
            f"user-level DP against the released model, epsilon {released:.3g} (delta 1e-05, "
            "rdp)")
        if masking:
            assert report["epsilon"] >= released
            assert rows["privacy"] == (f"user-level DP against the server, epsilon "
                                       f"{report['epsilon']:.3g} (delta 1e-05, rdp)")
        else:
            assert rows["privacy"].startswith("no formal guarantee against the server "
                                              "(user-level DP against the released model only")
