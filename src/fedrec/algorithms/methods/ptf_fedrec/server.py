"""PTF-FedRec's server (:mod:`fedrec.algorithms.methods.ptf_fedrec`): the hidden graph model,
trained on
uploaded scores, and the dispersal of soft labels."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from fedrec.algorithms.base import RANKING_EVALUATION, ServerLogic
from fedrec.algorithms.methods.ptf_fedrec.config import PTFFedRecConfig
from fedrec.algorithms.methods.ptf_fedrec.robust import item_trim_mask
from fedrec.algorithms.methods.ptf_fedrec.steps import DISPERSE, EVALUATE, TRAIN
from fedrec.algorithms.methods.ptf_fedrec.upload_dp import upload_dp_report, upload_plan
from fedrec.algorithms.mf_common import SplitRanking, eval_request, reduce_client_metrics
from fedrec.attacks.cross_upload import CrossUploadAttack
from fedrec.attacks.top_guess import TopGuessAttack
from fedrec.core.rng import counter_uniform, derive_seed, torch_generator
from fedrec.data.types import check_split
from fedrec.federation.dp_sum import evaluation_sender
from fedrec.federation.runtime import Observer, Runtime
from fedrec.metrics.exposure import exposure_sums, reduce_exposure
from fedrec.metrics.ranking import ScoreFn
from fedrec.models.lightgcn import NGCF, LightGCN, normalized_adjacency
from fedrec.models.training import minibatch_epoch
from fedrec.privacy.report import Attack, NoGuarantee, PrivacyReport


class PTFServer(ServerLogic):
    """Holds the hidden graph model; learns from uploaded scores; disperses soft labels."""

    def __init__(self, cfg: PTFFedRecConfig, num_users: int, num_items: int,
                 score_oracle: Callable[[ScoreFn, str], dict[str, float]] | None = None,
                 attack: TopGuessAttack | None = None) -> None:
        self.cfg = cfg
        self.num_users, self.num_items = num_users, num_items
        gen = torch_generator(cfg.seed, "ptf-server-init")
        if cfg.server_model == "ngcf":
            self.model: torch.nn.Module = NGCF(num_users, num_items, cfg.server_dim,
                                               cfg.server_layers, cfg.mess_dropout, gen)
        else:
            self.model = LightGCN(num_users, num_items, cfg.server_dim, len(cfg.server_layers),
                                  gen)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.server_lr)
        self.update_counts = torch.zeros(num_items, dtype=torch.int64)
        self.uploads: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        # The experimenter's instrument for the hidden model's full-ranking quality: it holds
        # the held-out interactions, the server only hands it a scoring function; no protocol
        # step reads it. None: no server-model metrics (a server built on metadata only).
        self.score_oracle = score_oracle
        self.attack = attack
        self.cross_attack: CrossUploadAttack | None = None
        self.plan = upload_plan(cfg, num_items)  # the formal mechanism (None: upload_dp none)
        self.participations: dict[int, int] = {}  # uploads per client (upload_dp's accounting)

    def attach_instruments(self, instruments: dict[str, Any]) -> None:
        """The experimenter's instruments of :func:`ptf_instruments` (before the first round)."""
        unknown = set(instruments) - {"score_oracle", "attack", "cross_attack"}
        if unknown:
            raise TypeError(f"PTF-FedRec has no instrument {sorted(unknown)}")
        self.score_oracle = instruments.get("score_oracle", self.score_oracle)
        self.attack = instruments.get("attack", self.attack)
        self.cross_attack = instruments.get("cross_attack", self.cross_attack)

    def observers(self) -> list[Observer]:
        return [a for a in (self.attack, self.cross_attack) if a is not None]

    def _graph(self) -> torch.Tensor:
        users = torch.cat([torch.full((len(it),), u) for u, (it, _) in self.uploads.items()])
        items = torch.cat([it for it, _ in self.uploads.values()])
        weights = torch.cat([s for _, s in self.uploads.values()])
        return normalized_adjacency(users, items, weights, self.num_users, self.num_items)

    def _embeddings(self) -> tuple[torch.Tensor, torch.Tensor]:
        self.model.eval()
        with torch.no_grad():
            adj = self._graph() if self.uploads else normalized_adjacency(
                [], [], None, self.num_users, self.num_items)
            return self.model(adj)

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        cfg = self.cfg
        selected = rt.cohort(cfg.clients_per_round)
        t0 = time.perf_counter()  # the round's time split: clients, server, dispersal
        replies = rt.updates(rt.broadcast(TRAIN, selected, {}), TRAIN)
        t_clients = time.perf_counter() - t0
        if self.plan is not None:  # upload_dp's accounting
            for c in replies:
                self.participations[int(c)] = self.participations.get(int(c), 0) + 1
        users, items, soft = self._accept(replies)
        # Train the hidden model on this round's uploads, over the graph of the latest uploads.
        adj = self._graph()
        self.model.train()

        def loss_of(idx: torch.Tensor) -> torch.Tensor:
            u_emb, i_emb = self.model(adj)  # every batch re-propagates the full graph
            logits = (u_emb[users[idx]] * i_emb[items[idx]]).sum(-1)
            return F.binary_cross_entropy_with_logits(logits, soft[idx].clamp(0, 1),
                                                      reduction="sum")

        def count_update(idx: torch.Tensor) -> None:
            self.update_counts[torch.unique(items[idx])] += 1

        total, n_batches = 0.0, 0
        for epoch in range(cfg.server_epochs):
            gen = torch_generator(cfg.seed, rnd, "ptf-server-shuffle", epoch)
            perm = torch.randperm(len(users), generator=gen)
            steps = minibatch_epoch(perm, cfg.server_batch, loss_of, self.opt, count_update)
            for batch_sum, _ in steps:  # one by one, as the batches came
                total += batch_sum
            n_batches += len(steps)
        t_server = time.perf_counter() - t0 - t_clients
        n_disp = self._disperse(rt, replies, rnd)
        stats: dict[str, float] = {
            "time_clients_s": t_clients,
            "time_server_s": t_server,
            "time_dispersal_s": time.perf_counter() - t0 - t_clients - t_server,
            "clients": float(len(replies)),
            "upload_items_mean": float(sum(len(r["items"]) for r in replies.values())
                                       / len(replies)),
            "trimmed_scores": float(sum(len(r["items"]) for r in replies.values())
                                    - len(items)),
            "server_loss": total / max(len(users) * cfg.server_epochs, 1),
            "server_batches": float(n_batches),
            "dispersed_clients": float(n_disp),
        }
        if self.attack is not None:
            stats.update(self.attack.summary(rnd))
        return stats

    def _accept(self, replies: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The round's uploads as the server trains on them (:mod:`.robust`): every score
        clamped to [0, 1] (upload_dp's noise is post-processed so; an honest score is a
        sigmoid, unchanged), then, with ``score_defense: item_trimmed``, each item's extreme
        scores dropped. Each client's kept rows become its latest upload in the graph; returns
        the ``(users, items, scores)`` rows to train on."""
        clients = [int(c) for c in replies]
        sizes = [len(r["items"]) for r in replies.values()]
        users = torch.cat([torch.full((n,), c) for c, n in zip(clients, sizes, strict=True)])
        items = torch.cat([torch.as_tensor(r["items"]).long() for r in replies.values()])
        soft = torch.cat([torch.as_tensor(r["scores"]).float()
                          for r in replies.values()]).clamp(0, 1)
        if self.cfg.score_defense == "item_trimmed":
            keep = item_trim_mask(items, soft, self.cfg.score_trim)
        else:
            keep = torch.ones(len(items), dtype=torch.bool)
        for c, k, it, sc in zip(clients, keep.split(sizes), items.split(sizes),
                                soft.split(sizes), strict=True):
            self.uploads[c] = (it[k], sc[k])
        return users[keep], items[keep], soft[keep]

    def dispersal(self, clients: Sequence[int], uploaded: Sequence[torch.Tensor], rnd: int,
                  chunk: int = 1024) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``(items, scores)`` to send to each client in round ``rnd`` (module doc).

        Per client ``u`` with uploaded items ``U``: the first ``round(mu * alpha)`` items are the
        top of a key over the items not in ``U`` -- the update count (confident) or a uniform
        random key ``counter_uniform(seed, rnd, u, i)`` --, the rest the top of a key over the
        items neither in ``U`` nor already chosen -- the score ``e_u . e_i`` (hard) or the same
        random key. Taking the ``k`` largest of i.i.d. uniform keys is a uniform sample of ``k``
        without replacement; keying them by (client, item) keeps a client's draw independent of
        its cohort, and ``random`` (both parts random) is one sample of ``alpha``.
        """
        cfg, n_items = self.cfg, self.num_items
        alpha = min(cfg.alpha, n_items)
        n_conf = round(cfg.mu * alpha)
        first_random = cfg.dispersal in ("no-confident", "random")
        rest_random = cfg.dispersal in ("no-hard", "random")
        seed_r = derive_seed(cfg.seed, rnd, "ptf-dispersal")
        u_emb, i_emb = self._embeddings()
        # Confidence: update count, ties broken by lower item id (a strict total order).
        conf_key = self.update_counts.double() - torch.arange(n_items) / (2.0 * n_items)
        out = []
        for start in range(0, len(clients), chunk):
            cl = torch.tensor(list(clients[start : start + chunk]), dtype=torch.int64)
            ups = uploaded[start : start + chunk]
            num = len(cl)
            sizes = torch.tensor([len(x) for x in ups], dtype=torch.int64)
            up_local = torch.repeat_interleave(torch.arange(num), sizes)
            up_items = torch.cat(list(ups)) if ups else torch.empty(0, dtype=torch.int64)
            blocked = torch.zeros(num, n_items, dtype=torch.bool)
            blocked[up_local, up_items] = True
            avail = (~blocked).sum(1)
            scores = u_emb[cl] @ i_emb.T
            rand_key = (counter_uniform(seed_r, cl[:, None], torch.arange(n_items)[None, :])
                        if first_random or rest_random else None)
            key1 = rand_key if first_random else conf_key.expand(num, -1)
            key1 = key1.masked_fill(blocked, -torch.inf)
            first = torch.topk(key1, n_conf, dim=1).indices if n_conf else torch.empty(
                num, 0, dtype=torch.int64)
            key2 = (rand_key if rest_random else scores).masked_fill(blocked, -torch.inf)
            key2.scatter_(1, first, -torch.inf)
            rest = torch.topk(key2, alpha - n_conf, dim=1).indices
            chosen = torch.cat([first, rest], 1)
            probs = torch.sigmoid(scores.gather(1, chosen))
            for i in range(num):
                k = min(alpha, int(avail[i]))  # a client who uploaded almost everything
                out.append((chosen[i, :k].clone(), probs[i, :k].float().clone()))
        return out

    def _disperse(self, rt: Runtime, replies: dict, rnd: int) -> int:
        clients = sorted(int(c) for c in replies)
        ups = [torch.as_tensor(replies[c]["items"]).long() for c in clients]
        disp = self.dispersal(clients, ups, rnd)
        requests = {c: {"items": it, "scores": sc} for c, (it, sc) in zip(clients, disp,
                                                                           strict=True)}
        rt.call(DISPERSE, requests)
        return len(requests)

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        cfg = self.cfg
        out: dict[str, float] = {}
        if self.score_oracle is not None:
            u_emb, i_emb = self._embeddings()
            out = self.score_oracle(lambda users: u_emb[users] @ i_emb.T, split)
        if cfg.eval_clients:
            replies = rt.broadcast(EVALUATE, rt.client_ids,
                                   eval_request({}, split, self.exposure_targets),
                                   sender=evaluation_sender(cfg))
            client = reduce_client_metrics(replies.values(), explicit=False)
            exposure = reduce_exposure(replies.values())
            out.update({f"client_{k}": v for k, v in client.items() if k not in exposure})
            out.update(exposure)
            if exposure:
                out.update(self._hidden_exposure(split, sorted(int(c) for c in replies)))
        return out

    def _hidden_exposure(self, split: str, users: Sequence[int], chunk: int = 1024
                         ) -> dict[str, float]:
        """The targets' exposure in the hidden model's ranking (``hidden_ER@K``, ...), over
        ``users`` (those who answered the evaluation: the benign ones), each ranking every item
        but its known ones (the experimenter's :class:`SplitRanking` holds them); ``{}``
        without that instrument. The clients' own ``ER@K`` is the headline: PTF-FedRec
        recommends with the clients' models, which the hidden model reaches only through the
        dispersal."""
        if not isinstance(self.score_oracle, SplitRanking) or self.exposure_targets is None:
            return {}
        known = self.score_oracle.matrices[check_split(split)][0]
        u_emb, i_emb = self._embeddings()
        shares = []
        for start in range(0, len(users), chunk):
            part = torch.tensor(users[start : start + chunk], dtype=torch.int64)
            rows = known[part.numpy()].tocoo()
            shares += exposure_sums(u_emb[part] @ i_emb.T, torch.from_numpy(rows.row).long(),
                                    torch.from_numpy(rows.col).long(), self.exposure_targets)
        return {f"hidden_{k}": v for k, v in reduce_exposure(shares).items()}

    def receives(self) -> dict[str, str]:
        if self.plan is not None:
            return {TRAIN: f"each cohort client's scores, with Gaussian noise (sigma "
                           f"{self.plan.sigma:.4g}), on {self.plan.items} "
                           "items it drew uniformly from the catalogue, with their ids",
                    EVALUATE: "nothing: client evaluation replies go to the experimenter"}
        return {TRAIN: "each cohort client's predicted scores on the items it chose to upload "
                       "(its sampled positives among sampled and swapped negatives), with "
                       "their ids",
                EVALUATE: RANKING_EVALUATION}

    def measured_attacks(self) -> tuple[Attack, dict[str, Any]]:
        """The attacks measured on the server's inbox: the cross-upload attack over all of each
        client's uploads is the figure (``measured_attack_f1``), the single-upload top-guess
        attack a detail; with the details' keys."""
        cfg = self.cfg
        cross = self.cross_attack.overall() if self.cross_attack is not None else {}
        name = ("CrossUploadAttack (fedrec.attacks.cross_upload): the server keeps every upload "
                "of a client, skips the items it dispersed to it, and guesses the k ids with the "
                f"highest {cross.get('statistic', 'mean')} score over all its uploads, scored "
                f"against the client's positives ({cfg.attack_truth}); mean F1 over clients")
        single = self.attack.summary() if self.attack is not None else {}
        details: dict[str, Any] = {f"measured_{k}": v for k, v in cross.items() if k != "f1"}
        if single:
            details.update({
                "single_upload_attack": "TopGuessAttack (fedrec.attacks.top_guess): the k "
                                        "highest scores of one upload; mean F1 over uploads",
                "single_upload_attack_f1": single["attack_f1"],
                "single_upload_attack_uploads": single["attack_uploads"]})
        if cross.get("f1") is None:
            return Attack(name, how_to_measure="set attack=true (a deployment also needs "
                                               "--experimenter-oracle)"), {}
        return Attack(name, float(cross["f1"])), details

    def privacy(self) -> PrivacyReport:
        """With ``upload_dp``: the user-level (ε, δ) of the most-participating client
        (:func:`~fedrec.algorithms.methods.ptf_fedrec.upload_dp.upload_dp_report`). Without:
        no formal guarantee -- sampling, swapping and dispersal bound nothing provably (and
        ``defense: ldp`` noises the scores while the uploaded ids, the client's trained items,
        travel in clear). Either way the cross-upload attack's F1 measured in this run says what
        the server learns (:meth:`measured_attacks`)."""
        cfg = self.cfg
        attack, details = self.measured_attacks()
        if self.plan is not None:
            return PrivacyReport((upload_dp_report(self.plan, self.participations, attack,
                                                   **details),))
        hides = {
            "none": "nothing: each upload names the client's trained items (positives and "
                    "sampled negatives) with its model's scores",
            "sampling": f"sampling: each upload holds a random share (beta_range "
                        f"{list(cfg.beta_range)}) of the client's positives and gamma_range "
                        f"{list(cfg.gamma_range)} times as many negatives",
            "sampling+swapping": f"sampling (beta_range {list(cfg.beta_range)}, gamma_range "
                                 f"{list(cfg.gamma_range)}) and swapping (the top swap_rate "
                                 f"{cfg.swap_rate} of positive scores exchanged with negatives')",
            "ldp": f"Laplace noise (scale ldp_scale {cfg.ldp_scale}) on each uploaded score, "
                   "clamped to [0, 1]; the uploaded ids travel in clear",
        }[cfg.defense]
        return PrivacyReport((NoGuarantee(
            protection=f"defense {cfg.defense!r}: {hides}; no model parameters are exchanged, "
                       f"and the server's model is never sent (clients get its scores on "
                       f"alpha {cfg.alpha} items per round, {cfg.dispersal!r} dispersal)",
            leakage="each upload names a subset of the client's trained items (positives and "
                    "negatives) with its model's scores",
            attack=attack, details={"defense": cfg.defense, **details}),))

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(), "opt": self.opt.state_dict(),
            "update_counts": self.update_counts.clone(),
            "uploads": {c: (i.clone(), s.clone()) for c, (i, s) in self.uploads.items()},
            "attack": self.attack.state_dict() if self.attack is not None else None,
            "cross_attack": (self.cross_attack.state_dict() if self.cross_attack is not None
                             else None),
            "participations": dict(self.participations),
            # NGCF's message dropout draws from torch's global generator (seeded once by the
            # runner): saving its state makes a resumed run continue the same draws.
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.update_counts = state["update_counts"].clone()
        self.uploads = dict(state["uploads"])
        if state.get("torch_rng") is not None:
            torch.set_rng_state(state["torch_rng"])
        if self.attack is not None and state.get("attack") is not None:
            self.attack.load_state_dict(state["attack"])
        if self.cross_attack is not None and state.get("cross_attack") is not None:
            self.cross_attack.load_state_dict(state["cross_attack"])
        self.participations = dict(state.get("participations", {}))

