"""FedGRec under the DP aggregate (:mod:`fedrec.algorithms.methods.fedgrec.dp`) on real ML-100K:
the server's degree and latent sums are the sums of what every client recorded as sent (clipped
or not), a DP run resumes to the same model and report, and the combinations it cannot honour
are one-line errors before training (what the server receives, the report and the plain
resume are the conformance suite's: tests/conformance)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms.methods.fedgrec import FedGRecConfig, build_fedgrec_job
from fedrec.algorithms.methods.fedgrec.dp import (
    DEGREE_SENT,
    DPBudget,
    DPLayout,
    clipped,
    dp_tables,
)
from fedrec.algorithms.ncf_common import implicit_split
from fedrec.config import build_config
from fedrec.errors import ConfigError
from fedrec.privacy.clipping import clip_l2

from .test_fedgrec import CPU, config, first_users, run, trainer

pytestmark = pytest.mark.usefixtures("single_thread")  # bit-exact comparisons

#: Small and fast; 60 users at 10 a round (Poisson rate 1/6).
SMALL = {"dim": 8, "num_layers": 2, "clients_per_round": 10, "local_steps": 2,
         "refresh_period": 2}
#: No noise and a 64-bit ring: the sums are the clipped vectors' sums up to float64 rounding.
EXACT = {"dp": "central", "noise_multiplier": 0.0, "secagg_bits": 64}


@pytest.fixture(scope="module")
def ml100k_60(ml100k):
    return first_users(ml100k, 60)


def recorded_sums(t, cfg, ds) -> tuple[torch.Tensor, torch.Tensor]:
    """``D_t = sum_u g_u [t in N_u]`` and ``A_t^k = sum_u sent_u^{k-1} / sqrt(|N_u|)
    [t in N_u]`` from every client's record (``g_u``: the share of its indicator it recorded
    as sent)."""
    deg = torch.zeros(ds.num_items, dtype=torch.float64)
    lat = torch.zeros(cfg.num_layers, ds.num_items, cfg.dim, dtype=torch.float64)
    for u, data in t.job.client_data.items():
        st, items = t.runtime.states.get(u), torch.from_numpy(np.array(data.train_items))
        if st is None or len(items) == 0:  # never sampled, or nothing to contribute
            continue
        deg[items] += st[DEGREE_SENT]
        lat[:, items] += (st["sent"] / len(items) ** 0.5)[:, None, :]
    return deg, lat


@pytest.mark.parametrize("dp_clip", [1e3, 0.3])
def test_the_sums_are_what_every_client_recorded(ml100k_60, dp_clip) -> None:
    t, cfg = trainer(ml100k_60, **SMALL, **EXACT, dp_clip=dp_clip)
    run(t, 5)
    ds = implicit_split(ml100k_60, cfg)
    srv = t.job.server
    deg, lat = recorded_sums(t, cfg, ds)
    assert torch.allclose(srv.degrees, deg, atol=1e-9)
    assert torch.allclose(srv.latent, lat, atol=1e-9)
    assert float(lat.abs().max()) > 1e-3  # not a comparison of zeros
    shares = [t.runtime.states.get(u, {DEGREE_SENT: 0.0})[DEGREE_SENT]
              for u in t.job.client_data]
    sampled = sum(s > 0 for s in shares)
    assert 0 < sampled < len(shares)  # five rounds at rate 1/6 leave some unsampled
    if dp_clip > 1:  # nothing clipped: a sampled client's whole indicator is in D
        assert set(shares) == {0.0, 1.0}
        assert torch.equal(srv.degrees.round(), deg.round())
    else:  # clipped: part of a change is recorded, the rest follows at later rounds
        assert any(0 < s < 1 for s in shares)
    # The tables sent are the sums normalised by the clamped degree sums.
    sent = dp_tables(srv.item_emb, srv.latent, srv.degrees)
    d = srv.degrees.clamp(min=1)
    assert torch.allclose(sent["latent"].double(), srv.latent / d.sqrt()[None, :, None],
                          rtol=1e-6)


@pytest.mark.parametrize("latent_clip", [1e3, 0.05])
def test_per_block_budgets_keep_the_sums_what_every_client_recorded(ml100k_60,
                                                                     latent_clip) -> None:
    """Per-block budgets, latent sums of changes: the server divides the latent block by its
    public weight, so its sums are still those of the clients' records (clipped latent blocks
    included: their rest follows later)."""
    t, cfg = trainer(ml100k_60, **SMALL, **EXACT, dp_clip=0.3, dp_latent_clip=latent_clip,
                     dp_latent_share=0.4)
    run(t, 5)
    deg, lat = recorded_sums(t, cfg, implicit_split(ml100k_60, cfg))
    srv = t.job.server
    assert torch.allclose(srv.degrees, deg, atol=1e-9)
    assert torch.allclose(srv.latent, lat, atol=1e-9)
    assert float(lat.abs().max()) > 1e-4


@pytest.mark.parametrize("latent_clip", [1e3, 0.05])
def test_latent_estimate_at_rate_one_is_the_last_refresh_sum(ml100k_60, latent_clip) -> None:
    """``dp_latent: estimate`` with every client in every round and ``beta = 1``: after a
    refresh round ``A`` is the sum of every client's whole contribution as it recorded it
    (``f_A s_u``, clipped or not), not a running sum of changes."""
    t, cfg = trainer(ml100k_60, **{**SMALL, "clients_per_round": 0}, **EXACT,
                     dp_latent="estimate", dp_latent_clip=latent_clip, dp_latent_share=0.5)
    run(t, 3)  # refreshes in rounds 1 and 3
    _, lat = recorded_sums(t, cfg, implicit_split(ml100k_60, cfg))
    assert torch.allclose(t.job.server.latent, lat, atol=1e-9)
    assert float(lat.abs().max()) > 1e-4
    if latent_clip < 1:  # clipped: every recorded share is at most the latent bound
        for state in t.runtime.states.values():
            assert float(state["sent"].norm()) <= latent_clip * (1 + 1e-9)


def test_no_latent_release_and_a_public_degree_send_only_item_updates(ml100k_60) -> None:
    """``dp_latent: none`` and ``dp_degree: c``: the vector is the item block alone, the latent
    and degree tables never move from zero, the tables carry ``c`` for every degree, and the
    item rows still learn under noise."""
    t, _ = trainer(ml100k_60, **SMALL, dp="distributed", noise_multiplier=1.0,
                   dp_latent="none", dp_degree=40.0)
    before = t.job.server.item_emb.clone()
    assert t.job.server.dp.plan.dim == t.job.server.num_items * SMALL["dim"]
    run(t, 3)
    srv = t.job.server
    assert not srv.latent.any() and not srv.degrees.any()
    sent = srv.tables()
    assert torch.equal(sent["degrees"], torch.full_like(sent["degrees"], 40.0))
    assert not sent["latent"].any()
    assert not torch.equal(srv.item_emb, before)


def test_the_dp_preset_releases_the_item_updates_alone() -> None:
    """``--preset dp`` (docs/fedgrec.md's measured row): distributed DP solved for epsilon 8,
    every client in every round, a vector of the item block only."""
    cfg = build_config(FedGRecConfig, "fedgrec", "ml-100k", preset="dp")
    assert (cfg.dp, cfg.target_epsilon, cfg.rounds, cfg.clients_per_round) == (
        "distributed", 8.0, 10, 0)
    assert cfg.dp_masking  # the preset keeps the secure sum's masking
    lay = DPLayout.of(cfg, 1682)
    assert lay.degrees is None and lay.latent is None and lay.size == 1682 * cfg.dim


def test_a_client_vector_is_bounded_per_block() -> None:
    """Per-block budgets: the head is clipped to ``C sqrt(1 - s)``, the latent block to ``b``
    and weighted by ``w = C sqrt(s) / b``; the whole is within ``C``, so the DP aggregate's
    own clipping leaves it as it is, up to rounding (the guarantee's sensitivity is
    unchanged)."""
    lay = DPLayout(num_items=5, dim=2, num_layers=1)
    budget = DPBudget(clip=2.0, latent_clip=0.5, latent_share=0.36)
    x = np.arange(lay.size, dtype=np.float64)
    out, f_head, f_latent = budget.bound(x, lay)
    head, tail = out[: lay.latent], out[lay.latent:]
    assert np.linalg.norm(head) <= 2.0 * 0.8 and np.linalg.norm(tail) <= 2.0 * 0.6
    assert budget.latent_weight == pytest.approx(2.0 * 0.6 / 0.5)
    assert np.allclose(tail / budget.latent_weight, f_latent * x[lay.latent:])
    assert np.allclose(head, f_head * x[: lay.latent]) and f_head < 1 and f_latent < 1
    assert np.linalg.norm(out) <= 2.0  # the aggregate's clip moves it by rounding at most
    assert np.allclose(clip_l2(torch.from_numpy(out), 2.0).numpy(), out, rtol=1e-12, atol=0)
    # b = 0: clipped as a whole, one factor for both.
    whole, f1, f2 = DPBudget(clip=2.0).bound(x, lay)
    assert f1 == f2 and np.allclose(whole, clipped(x, 2.0)[0])


def test_a_client_vector_is_clipped_as_a_whole() -> None:
    lay = DPLayout(num_items=5, dim=2, num_layers=1)
    assert (lay.degrees, lay.latent, lay.size) == (10, 15, 25)
    x = np.arange(lay.size, dtype=np.float64)
    out, f = clipped(x, 1.0)
    assert np.linalg.norm(out) <= 1.0 and f == pytest.approx(1.0 / np.linalg.norm(x))
    same, one = clipped(np.full(4, 0.1), 1.0)
    assert one == 1.0 and np.array_equal(same, np.full(4, 0.1))
    assert DPLayout(5, 2, 0).latent is None and DPLayout(5, 2, 0).size == 15
    # Blocks a run does not release are not in the vector.
    item_only = DPLayout(5, 2, 0, has_degrees=False)
    assert (item_only.degrees, item_only.latent, item_only.size) == (None, None, 10)
    assert (DPLayout(5, 2, 1, has_degrees=False).latent, DPLayout(5, 2, 1, False).size) == (10, 20)


def test_a_distributed_run_resumes_to_the_same_model_and_report(ml100k_60) -> None:
    dp = {"dp": "distributed", "noise_multiplier": 1.0, **SMALL}
    straight, _ = trainer(ml100k_60, **dp)
    run(straight, 3)
    first, _ = trainer(ml100k_60, **dp)
    run(first, 2)
    resumed, _ = trainer(ml100k_60, **dp)
    resumed.load_state_dict(first.state_dict())
    resumed.train_round(3)
    a, b = straight.job.server, resumed.job.server
    assert torch.equal(a.item_emb, b.item_emb) and torch.equal(a.latent, b.latent)
    assert torch.equal(a.degrees, b.degrees)
    report = straight.privacy_report()
    assert report == resumed.privacy_report()
    assert report["epsilon_server"] > 0 and report["rounds_released"] == 3
    assert "warm-up" in report["releases"]
    # Noised: the degree sums are not the counts (the release is not exact).
    ds = implicit_split(ml100k_60, config(**dp))
    counts = torch.from_numpy(np.bincount(ds.train.items, minlength=ds.num_items)).double()
    assert not torch.equal(a.degrees.round(), counts)


def test_what_dp_cannot_honour_is_a_one_line_error_before_training(ml100k_60) -> None:
    for bad, match in (({"download": "rows"}, "download: full"),
                       ({"refresh_period": 0}, "refresh_period > 0"),
                       ({"dp_latent": "mean"}, "dp_latent"),
                       ({"dp_latent_clip": 1.0, "dp_latent_share": 1.0}, "dp_latent_share"),
                       ({"dp_latent_decay": 0.0}, "dp_latent_decay"),
                       ({"noise_multiplier": 0.0}, "noise_multiplier > 0 or target_epsilon")):
        with pytest.raises(ConfigError, match=match) as err:
            config(**{**SMALL, "dp": "distributed", "noise_multiplier": 1.0, **bad})
        assert "\n" not in str(err.value)
    # A target the planned rounds cannot meet fails when the job is built, before round 1.
    cfg = config(**SMALL, dp="distributed", target_epsilon=1e-3, rounds=300)
    with pytest.raises(ConfigError, match="target_epsilon") as err:
        build_fedgrec_job(cfg, ml100k_60, CPU)
    assert "\n" not in str(err.value)
    # Without latent layers refresh_period does not matter.
    config(dp="distributed", noise_multiplier=1.0, num_layers=0, refresh_period=0)
