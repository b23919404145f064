"""PTF-FedRec on the real ML-100K (per-user 80/20 split): protocol, privacy and learning checks.

Two module-scoped runs keep the file fast: the default method (every default, all 943 clients,
two rounds: one round does not yet move Recall@20, the second does) and an undefended one (one
round, 150 clients). Torch runs single-threaded here: on the shared 2-core machine two threads
oversubscribe the cores (5-50x slower steps).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.ptf_fedrec import (
    PTFClient,
    PTFFedRecConfig,
    build_ptf_fedrec_job,
    swap_top_scores,
)
from fedrec.config import build_config
from fedrec.errors import ConfigError
from fedrec.federation.message import Message
from fedrec.federation.secrets import ClientSecrets

# Listed first in every test's fixture closure, so module-scoped runs get one thread too.
pytestmark = pytest.mark.usefixtures("one_thread_module")


SECRETS = ClientSecrets(bytes(range(32)))


def _build(cfg: PTFFedRecConfig, ds) -> FederatedTrainer:
    """The simulator under one client secret: tests compare runs draw for draw."""
    return FederatedTrainer(build_ptf_fedrec_job(cfg, ds, torch.device("cpu")), cfg,
                            torch.device("cpu"), SECRETS)


def _cfg(**over) -> PTFFedRecConfig:
    return build_config(PTFFedRecConfig, "ptf-fedrec", "ml-100k", overrides=over)


@pytest.fixture(scope="module")
def run(ml100k):
    cfg = _cfg(rounds=2, eval_clients=False)
    trainer = _build(cfg, ml100k)
    tap: list[Message] = []  # every delivered message
    trainer.runtime.observers.append(tap.append)
    before = trainer.evaluate()
    stats = [trainer.train_round(r) for r in (1, 2)]
    after = trainer.evaluate()
    return cfg, trainer, tap, before, stats, after


@pytest.fixture(scope="module")
def undefended(ml100k):
    cfg = _cfg(rounds=1, defense="none", clients_per_round=150, server_epochs=1,
               eval_clients=False)
    trainer = _build(cfg, ml100k)
    return trainer.train_round(1)


def test_registered_and_defaults():
    spec = get_algorithm("ptf-fedrec")
    cfg = _cfg()
    assert spec.config_cls is PTFFedRecConfig
    assert (cfg.rounds, cfg.server_model, cfg.server_dim, cfg.server_layers) == (
        20, "ngcf", 32, (32, 16))
    assert (cfg.client_dim, cfg.client_lr, cfg.client_batch, cfg.local_epochs) == (
        16, 0.01, 256, 5)
    assert (cfg.alpha, cfg.swap_rate, cfg.beta_range, cfg.gamma_range) == (
        30, 0.1, (0.1, 1.0), (1.0, 4.0))
    with pytest.raises(ConfigError):
        _cfg(defense="bogus")
    with pytest.raises(ConfigError):
        _cfg(beta_range=[0.5, 1.5])


def test_only_item_ids_and_scores_cross_the_network(run):
    _, trainer, tap, *_ = run
    steps = {m.step for m in tap}
    assert {"train", "disperse"} <= steps
    for m in tap:
        if m.step == "evaluate":  # client metrics only: scalars
            assert all(isinstance(v, int | float) for v in m.payload.values())
            continue
        assert set(m.payload) <= {"items", "scores"}, m.payload.keys()
        if m.payload:
            items, scores = np.asarray(m.payload["items"]), np.asarray(m.payload["scores"])
            assert items.dtype == np.int64 and items.ndim == 1
            assert scores.dtype == np.float32 and scores.shape == items.shape
            assert ((scores >= 0) & (scores <= 1)).all()
            assert len(np.unique(items)) == len(items)
    # Bytes per client per round: a few KB (12 bytes per (item, score) pair plus headers).
    totals = trainer.ledger.totals(1)
    per_client = totals["bytes_total"] / len(trainer.runtime.client_ids)
    assert per_client < 10_000


def test_upload_sampling_and_swapping(run):
    cfg, trainer, *_ = run
    n_checked = 0
    for cid in trainer.runtime.client_ids:
        st = trainer.runtime.states.get(cid)
        if st is None or "last_upload" not in st:
            continue
        up = st["last_upload"]
        n_pos_total = len(trainer.job.client_data[cid].train_items)
        # Non-positives: the fixed negatives and the soft-labelled items trained this round.
        non_pos = up["non_positives"]
        assert torch.equal(non_pos, torch.unique(non_pos))
        assert set(st["negatives"].tolist()) <= set(non_pos.tolist())
        assert not set(non_pos.tolist()) & set(trainer.job.client_data[cid].train_items.tolist())
        n_neg_total = len(non_pos)
        is_pos = up["is_pos"]
        k_pos, k_neg = int(is_pos.sum()), int((~is_pos).sum())
        lo, hi = cfg.beta_range
        assert lo <= up["beta"] <= hi
        lo, hi = cfg.gamma_range
        assert lo <= up["gamma"] <= hi
        # Floors and "at least one", as in the authors' code.
        assert k_pos == min(max(1, math.floor(up["beta"] * n_pos_total)), n_pos_total)
        assert k_neg == min(max(1, math.floor(up["gamma"] * k_pos)), n_neg_total)
        # Uploaded items are trained items: positives from the client's own, the rest from its
        # non-positives.
        assert set(up["items"][is_pos].tolist()) <= set(trainer.job.client_data[cid]
                                                        .train_items.tolist())
        assert set(up["items"][~is_pos].tolist()) <= set(non_pos.tolist())
        n_swap = min(max(1, math.floor(cfg.swap_rate * k_pos)), k_neg)  # a few positives: 1
        assert up["n_swap"] == n_swap
        changed_pos = int((up["scores"][is_pos] != up["raw_scores"][is_pos]).sum())
        assert changed_pos == n_swap
        # The multiset of scores is unchanged: swapping only exchanges.
        assert torch.equal(torch.sort(up["scores"]).values, torch.sort(up["raw_scores"]).values)
        n_checked += n_swap > 0
    assert n_checked > 50


def test_swap_top_scores_unit():
    local = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1])
    is_pos = torch.tensor([1, 1, 1, 0, 0, 1, 0, 0], dtype=torch.bool)
    scores = torch.tensor([0.9, 0.8, 0.7, 0.3, 0.2, 0.6, 0.5, 0.1])
    out = swap_top_scores(local, is_pos, scores, torch.tensor([2, 1]))
    assert out.tolist() == pytest.approx([0.3, 0.2, 0.7, 0.9, 0.8, 0.5, 0.6, 0.1])


def test_dispersal_excludes_uploads_and_sends_alpha_items(run):
    cfg, trainer, tap, *_ = run
    last_round = max(m.round for m in tap)
    disp = {m.receiver: m.payload for m in tap
            if m.step == "disperse" and m.round == last_round}
    assert len(disp) == len(trainer.runtime.client_ids)
    n_conf = round(cfg.mu * cfg.alpha)
    counts = trainer.job.server.update_counts.numpy()
    order = np.lexsort((np.arange(len(counts)), -counts))  # count desc, then item id
    for cid, payload in list(disp.items())[:200]:
        items = np.asarray(payload["items"])
        up = trainer.runtime.states[cid]["last_upload"]["items"].numpy()
        # alpha items, fewer only when the client uploaded nearly the whole catalogue
        assert len(items) == min(cfg.alpha, trainer.job.server.num_items - len(up))
        assert len(np.unique(items)) == len(items)
        assert not np.isin(items, up).any()
        # Confident half: the most-updated items the client did not upload.
        expected = order[~np.isin(order, up)][:n_conf]
        assert np.array_equal(items[: len(expected)], expected[: len(items)])
    # What the client stored is what it was sent, less its own positives.
    n_dropped = 0
    for cid, payload in disp.items():
        items = np.asarray(payload["items"])
        own = np.isin(items, trainer.job.client_data[cid].train_items)
        stored = trainer.runtime.states[cid]
        assert np.array_equal(stored["soft_items"].numpy(), items[~own])
        assert np.array_equal(stored["soft_scores"].numpy(), np.asarray(payload["scores"])[~own])
        n_dropped += int(own.sum())
    assert n_dropped > 0  # dispersal does hit clients' positives (the server cannot know them)


def test_random_dispersal_ablations(ml100k):
    """``dispersal: random`` sends alpha uniform items outside the client's upload, unlike the
    mixed method; ``no-hard`` / ``no-confident`` randomise one part only (Table VII)."""
    import dataclasses

    with pytest.raises(ConfigError):
        _cfg(dispersal="bogus")
    runs = {}
    for mode in ("mixed", "random"):
        cfg = _cfg(rounds=1, clients_per_round=60, local_epochs=1, server_epochs=1,
                   eval_clients=False, attack=False, dispersal=mode)
        trainer = _build(cfg, ml100k)
        tap: list[Message] = []
        trainer.runtime.observers.append(tap.append)
        trainer.train_round(1)
        ups = {m.sender: np.asarray(m.payload["items"]) for m in tap
               if m.step == "train" and m.payload}
        sent = {m.receiver: np.asarray(m.payload["items"]) for m in tap if m.step == "disperse"}
        runs[mode] = (cfg, trainer, ups, sent)
    cfg, trainer, ups, rand = runs["random"]
    _, _, ups_mixed, mixed = runs["mixed"]
    n_items = trainer.job.server.num_items
    assert len(rand) == 60 and rand.keys() == mixed.keys()
    for c, items in rand.items():
        assert np.array_equal(ups[c], ups_mixed[c])  # the runs differ only from the dispersal on
        assert len(items) == min(cfg.alpha, n_items - len(ups[c]))
        assert len(np.unique(items)) == len(items)
        assert not np.isin(items, ups[c]).any()
        # Mostly different items: a uniform draw of 30 of ~1500 meets the 30 sent by the
        # method in about one item on average.
        assert np.isin(items, mixed[c]).sum() < cfg.alpha // 3
    # Uniform over the catalogue: the number of distinct items sent is what uniform draws give
    # (item i escapes client c with probability 1 - alpha / (I - |U_c|) unless uploaded; sd ~20),
    # whereas the method concentrates on fewer (confident, top-scored) items.
    escape = np.ones(n_items)
    for c in rand:
        p = np.full(n_items, 1 - cfg.alpha / (n_items - len(ups[c])))
        p[ups[c]] = 1.0
        escape *= p
    expected = (1 - escape).sum()
    spread = {m: len(np.unique(np.concatenate(list(d.values())))) for m, d in
              (("random", rand), ("mixed", mixed))}
    assert abs(spread["random"] - expected) < 80, (spread, expected)
    assert spread["random"] > 2 * spread["mixed"], spread
    # Keyed by (seed, round, client, item): the same draw in another cohort, another next round.
    server = trainer.job.server
    clients = sorted(rand)
    up_t = [torch.from_numpy(ups[c]) for c in clients]
    again = server.dispersal(clients[3:5], up_t[3:5], 1)
    assert all(np.array_equal(a.numpy(), rand[c]) for (a, _), c in
               zip(again, clients[3:5], strict=True))
    assert not np.array_equal(server.dispersal(clients[3:4], up_t[3:4], 2)[0][0].numpy(),
                              rand[clients[3]])
    # One part random: no-hard keeps the confident part, no-confident the hard ranking.
    n_conf = round(cfg.mu * cfg.alpha)
    for mode in ("no-hard", "no-confident"):
        server.cfg = dataclasses.replace(cfg, dispersal=mode)
        for c, (items, _) in zip(clients, server.dispersal(clients, up_t, 1), strict=True):
            items = items.numpy()
            assert len(items) == cfg.alpha and not np.isin(items, ups[c]).any()
            kept, randomised = (slice(0, n_conf), slice(n_conf, None)) if mode == "no-hard" \
                else (slice(n_conf, None), slice(0, n_conf))
            assert not np.array_equal(items[randomised], mixed[c][randomised])
            if mode == "no-hard":
                assert np.array_equal(items[kept], mixed[c][kept])
            else:  # the hard part: the top scores among the items neither uploaded nor drawn
                with torch.no_grad():
                    u_emb, i_emb = server._embeddings()
                    score = (u_emb[c] @ i_emb.T).numpy()
                free = np.setdiff1d(np.arange(n_items), np.concatenate([ups[c], items]))
                assert score[items[kept]].min() >= score[free].max()


def test_server_recall_improves(run):
    _, _, _, before, stats, after = run
    assert after["Recall@20"] > before["Recall@20"] + 0.015
    assert after["NDCG@20"] > before["NDCG@20"]
    assert stats[-1]["server_loss"] < stats[0]["server_loss"]


def test_top_guess_attack(run, undefended):
    _, _, _, _, stats, _ = run
    assert undefended["attack_f1"] > 0.9
    defended = stats[-1]["attack_f1"]
    assert defended < undefended["attack_f1"] - 0.2


def test_privacy_report_has_no_epsilon_and_the_cross_upload_attack_f1(run):
    _, trainer, _, _, stats, _ = run
    rep = trainer.privacy_report()
    assert rep["guarantee"] == "no formal guarantee" and rep["epsilon"] is None
    assert "sampling" in rep["protection"] and "swapping" in rep["protection"]
    # The figure: the attack over all of each client's uploads (two here), not one upload's.
    assert rep["measured_attack"].startswith("CrossUploadAttack")
    cross = trainer.job.server.cross_attack
    final = [r for r in cross.records if r["uploads"] == "all"]
    assert len(final) == rep["measured_clients"] == len(cross.kept)
    assert rep["measured_mean_uploads"] == pytest.approx(2.0)
    stat = rep["measured_statistic"]
    assert rep["measured_attack_f1"] == pytest.approx(np.mean([r[stat] for r in final]))
    assert rep["measured_chance_f1"] < rep["measured_attack_f1"] < 1.0
    # The single-upload top-guess figure stays beside it.
    records = trainer.job.server.attack.records  # every upload of both rounds
    assert rep["single_upload_attack_uploads"] == len(records) == sum(s["clients"]
                                                                     for s in stats)
    assert rep["single_upload_attack_f1"] == pytest.approx(np.mean([r["f1"] for r in records]))


def test_client_randomness_is_cohort_independent(ml100k):
    """A client's upload depends on (seed, round, client), not on who else is in its cohort."""
    from fedrec.federation.runtime import InProcessRuntime, declare_parties

    cfg = _cfg(rounds=1, local_epochs=1)
    job = get_algorithm("ptf-fedrec").build_job(cfg, ml100k, torch.device("cpu"))
    ids = sorted(job.client_data)[:6]
    outs = []
    for cohort in (ids[:3], ids[:1] + ids[3:]):
        rt = InProcessRuntime(
            parties=declare_parties({i: job.client_data[i] for i in ids},
                                    PTFClient(cfg, ml100k.num_items)),
            seed=0, client_secrets=SECRETS)
        rt.begin_round(1)
        outs.append(rt.broadcast("train", cohort, {}))
    a, b = outs[0][ids[0]], outs[1][ids[0]]
    assert torch.equal(torch.as_tensor(a["items"]), torch.as_tensor(b["items"]))
    assert torch.allclose(torch.as_tensor(a["scores"]), torch.as_tensor(b["scores"]), atol=1e-5)


def _first_uploads(ml100k, **over) -> dict[int, dict]:
    cfg = _cfg(rounds=1, clients_per_round=60, server_epochs=1, eval_clients=False, **over)
    trainer = _build(cfg, ml100k)
    ups: dict[int, dict] = {}
    trainer.runtime.observers.append(
        lambda m: ups.__setitem__(m.sender, m.payload) if m.step == "train"
        and m.direction == "up" else None)
    trainer.train_round(1)
    for cid, up in ups.items():
        up["raw"] = trainer.runtime.states[cid]["last_upload"]["raw_scores"]
    return ups


def test_swap_rate_zero_swaps_nothing(ml100k):
    ups = _first_uploads(ml100k, swap_rate=0.0)
    assert len(ups) == 60
    for up in ups.values():
        assert torch.equal(torch.as_tensor(up["scores"]), up["raw"].float())


def test_client_groups_do_not_change_uploads(ml100k):
    # Training the cohort in many small groups (chunk_samples) instead of one or two: the same
    # items and, up to float rounding, the same scores for every client.
    whole, grouped = _first_uploads(ml100k), _first_uploads(ml100k, chunk_samples=3000)
    assert whole.keys() == grouped.keys()
    for cid, up in whole.items():
        assert np.array_equal(up["items"], grouped[cid]["items"])
        np.testing.assert_allclose(up["scores"], grouped[cid]["scores"], atol=1e-5)
