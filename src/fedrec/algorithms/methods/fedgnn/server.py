"""FedGNN's server (:mod:`fedrec.algorithms.methods.fedgnn`): the GNN weights and the item table,
SGD on the
aggregated uploads, the graph expansion's schedule, the privacy report."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.base import RATING_EVALUATION, ServerLogic
from fedrec.algorithms.methods.fedgnn.config import FedGNNConfig, ldp_mechanism, ring_bound
from fedrec.algorithms.methods.fedgnn.defense import defended_sums
from fedrec.algorithms.methods.fedgnn.steps import (
    EVALUATE,
    EXPAND_INSTALL,
    EXPAND_KEY,
    EXPAND_MATCH,
    TRAIN,
)
from fedrec.algorithms.mf_common import eval_request, reduce_client_metrics
from fedrec.attacks.rated_items import RatedItemsAttack
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.federation.aggregation import sum_rows
from fedrec.federation.dp_sum import DPAggregate, dp_on, evaluation_sender, expected_mean
from fedrec.federation.message import THIRD_PARTY
from fedrec.federation.runtime import Observer, Runtime, cohort_size
from fedrec.federation.secure_sum import (
    protection_text,
    receives,
    run_secure_sum,
    secure_sum_request,
)
from fedrec.models import gnn
from fedrec.privacy import linf_laplace_epsilon, worst_client_accountant
from fedrec.privacy.report import (
    NO_GUARANTEE,
    WEAK_EPSILON,
    Attack,
    Guarantee,
    NoGuarantee,
    PrivacyReport,
)


class FedGNNServer(ServerLogic):
    """Holds the GNN weights and item embeddings; FedAvg + SGD; drives the expansion."""

    def __init__(self, cfg: FedGNNConfig, num_items: int, num_clients: int) -> None:
        self.cfg = cfg
        gen = torch_generator(cfg.seed, "init-items")
        self.items = torch.randn(num_items, cfg.dim, generator=gen) * cfg.init_std
        if cfg.bias:  # item biases in the last column, starting at 0
            self.items = torch.cat([self.items, torch.zeros(num_items, 1)], 1)
        self.params = gnn.init_params(cfg.gnn, cfg.dim, torch_generator(cfg.seed, "init-gnn"))
        self.num_clients = num_clients
        self.rounds_per_epoch = math.ceil(num_clients
                                          / cohort_size(cfg.clients_per_round, num_clients))
        self.expansions = 0
        self.mechanism = ldp_mechanism(cfg)  # None: the run claims no local DP
        # The accounting's bookkeeping: uploads received per client, the largest upload's size.
        self.participation: dict[int, int] = {}
        self.max_upload_dim = 0
        self.attack: RatedItemsAttack | None = None  # the experimenter's (measure_leakage)
        width = self.items.shape[1]
        self.dp = (DPAggregate(cfg, num_clients, gnn.flatten(self.params).numel()
                               + num_items * width) if dp_on(cfg) else None)
        if self.dp is None and cfg.item_privacy == "pseudo":  # Krum's f against the cohort
            cfg.check_defense(secure=False, cohort=cohort_size(cfg.clients_per_round,
                                                               num_clients))

    def attach_instruments(self, instruments: dict[str, Any]) -> None:
        """The experimenter's instruments of :func:`fedgnn_instruments`."""
        unknown = set(instruments) - {"attack"}
        if unknown:
            raise TypeError(f"FedGNN has no instrument {sorted(unknown)}")
        self.attack = instruments.get("attack", self.attack)

    def observers(self) -> list[Observer]:
        return [self.attack] if self.attack is not None else []

    def _broadcast(self) -> Payload:
        return {"model": gnn.flatten(self.params), "items": self.items}

    def _expansion_due(self, rnd: int) -> bool:
        if self.cfg.neighbours == 0:
            return False
        done = (rnd - 1) / self.rounds_per_epoch  # epochs completed before this round
        if done < self.cfg.expand_after:
            return False
        if self.expansions == 0:
            return True
        return self.cfg.trainable_neighbours  # the paper's "updated in each iteration"

    def expand(self, rt: Runtime) -> None:
        """Algorithm 2: key to clients, tokens+embeddings to the third party, neighbours back.

        The key comes from the server's own secret (``rt.server_secret``), never from the public
        seed, from which the third party could tokenise every item and read each client's
        items; the matching does not depend on its value (groups are numbered by first
        appearance), so the same job gives the same results on every engine.
        """
        raw = rt.server_secret.key_bytes(rt.round, "fedgnn-expansion-key", size=32)  # AES-256
        key = np.frombuffer(raw, dtype=np.uint8).copy()
        clients = list(rt.client_ids)
        rt.broadcast(EXPAND_KEY, clients, {"key": key})
        rt.call(EXPAND_MATCH, {THIRD_PARTY: {}})
        rt.broadcast(EXPAND_INSTALL, clients, {})
        self.expansions += 1

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        if self.dp is not None:
            return self._dp_round(rt, rnd)
        stats: dict[str, float] = {}
        if self._expansion_due(rnd):
            self.expand(rt)
            stats["expanded"] = 1.0
        selected = rt.cohort(self.cfg.clients_per_round)
        replies: dict[Any, Payload] = {}
        if self.cfg.item_privacy == "secure_sum":
            g_model, g_items, uploads, senders = self.secure_sum(rt, selected, stats)
        else:
            replies = rt.updates(rt.broadcast(TRAIN, selected, self._broadcast()), TRAIN)
            g_model, g_items, uploads = self._sum_uploads(replies)
            senders = [int(c) for c in replies]
        for c in senders:
            self.participation[c] = self.participation.get(c, 0) + 1
        s = len(senders)
        self._step(rnd, g_model, g_items, g_items_denominator=(
            uploads.clamp(min=1.0)[:, None] if self.cfg.item_avg == "uploaders" else s),
            g_model_denominator=s)
        stats["clients"] = float(s)
        losses = [r["loss"] for r in replies.values() if "loss" in r]
        if losses:  # only without local DP (see FedGNNClient.protect)
            stats["train_loss"] = float(np.mean(losses))
        return stats

    def _step(self, rnd: int, g_model: torch.Tensor, g_items: torch.Tensor, *,
              g_items_denominator: torch.Tensor | float, g_model_denominator: float) -> None:
        """The server's SGD step on the summed gradients (epoch-decayed lr, its own L2)."""
        lr = self.cfg.lr * self.cfg.lr_decay ** ((rnd - 1) // self.rounds_per_epoch)
        if self.cfg.l2 > 0:  # the server's own regulariser on its table: no upload needed
            self.items *= 1.0 - lr * self.cfg.l2
        self.items -= lr * g_items / g_items_denominator
        lr_model = (self.cfg.lr_model or self.cfg.lr) * lr / self.cfg.lr
        flat = gnn.flatten(self.params) - lr_model * g_model / g_model_denominator
        self.params = gnn.unflatten(flat, self.params)

    def _dp_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        """One round of the DP aggregate (:mod:`fedrec.federation.dp_sum`): the noised sum of
        the Poisson cohort's clipped dense gradients, divided by the expected cohort size; no
        graph expansion, no pseudo item, no LDP."""
        assert self.dp is not None
        released = self.dp.round(rt, TRAIN, self._broadcast())
        mean = torch.from_numpy(expected_mean(released.total, self.dp.plan)).float()
        p = gnn.flatten(self.params).numel()
        self._step(rnd, mean[:p], mean[p:].view(self.items.shape), g_items_denominator=1.0,
                   g_model_denominator=1.0)
        return {"clients": float(len(released.survivors))}

    def _sum_uploads(self, replies: dict[Any, Payload]
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The paper's aggregation: item rows summed per uploaded id (real or pseudo), GNN-weight
        gradients summed, and how many clients uploaded each id; with a ``defense``, both sums
        as it estimates them (:func:`~fedrec.algorithms.methods.fedgnn.defense.defended_sums`)."""
        g_items = torch.zeros_like(self.items)
        g_model = torch.zeros_like(gnn.flatten(self.params))
        uploads = torch.zeros(len(self.items))
        for r in replies.values():
            ids = torch.as_tensor(r["items"]).long()
            if self.cfg.defense == "none":
                sum_rows(ids, torch.as_tensor(r["grad_items"]).float(), out=g_items)
                g_model += torch.as_tensor(r["grad_model"]).float()
            self.max_upload_dim = max(self.max_upload_dim, g_model.numel() + ids.numel()
                                      * self.items.shape[1])
            sum_rows(ids, torch.ones(len(ids)), out=uploads)
        if self.cfg.defense != "none":
            g_model, g_items = defended_sums(self.cfg, list(replies.values()), g_model.numel(),
                                             len(self.items))
        return g_model, g_items, uploads

    def secure_sum(self, rt: Runtime, selected: list[int], stats: dict[str, float]
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
        """``item_privacy="secure_sum"``: the cohort's inputs (:meth:`FedGNNClient.secure_input`)
        summed by Bonawitz et al.'s protocol or SecAgg+ (``secagg_variant``); one vector per
        client, laid out as
        ``[GNN-weight gradient (P), item gradients (num_items x width, row-major), rated-item
        counts (num_items; item_avg="uploaders" only)]``. Returns the same sums as
        :meth:`_sum_uploads` (the counts are the numbers of survivors who rated each item) and
        the survivors: the server never sees a client's vector or item ids."""
        cfg = self.cfg
        num_items, width = self.items.shape
        p = gnn.flatten(self.params).numel()
        grads = p + num_items * width
        bound = ring_bound(cfg)
        size = grads + (num_items if cfg.item_avg == "uploaders" else 0)
        sa_cfg = cfg.sum_config(size, len(selected))
        adverts = rt.broadcast(TRAIN, selected,
                               dict(self._broadcast(), **secure_sum_request(len(selected))))
        result = run_secure_sum(rt, adverts, sa_cfg, step=TRAIN)
        total = torch.from_numpy(result.total)
        self.max_upload_dim = max(self.max_upload_dim, grads)
        # The decoded counts are integers times the ring bound, off by < m * 0.5 / scale.
        uploads = ((total[grads:] / bound).round().float() if cfg.item_avg == "uploaders"
                   else torch.zeros(num_items))
        stats["dropped_after_keys"] = float(len(result.dropped))
        return (total[:p].float(), total[p:grads].view(num_items, width).float(), uploads,
                list(result.survivors))

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        replies = rt.broadcast(EVALUATE, rt.client_ids,
                               eval_request(self._broadcast(), split, self.exposure_targets),
                               sender=evaluation_sender(self.cfg))
        return reduce_client_metrics(replies.values(), True)

    def receives(self) -> dict[str, str]:
        vector = "the GNN-weight gradient and the item-embedding gradients of its subgraph"
        if self.dp is not None:
            return self.dp.receives(TRAIN, vector)
        if self.cfg.item_privacy == "secure_sum":
            return {**receives(TRAIN, vector + ", dense over the item table"),
                    EVALUATE: RATING_EVALUATION}
        return {TRAIN: "each cohort client's clipped, Laplace-noised GNN-weight gradient and "
                       "the gradients of its rated items and pseudo items, with their ids",
                EVALUATE: RATING_EVALUATION}

    def privacy(self) -> PrivacyReport:
        """What a client's uploads are protected by, over the run so far.

        Guarantee (local DP, with ``clip`` δ and ``laplace`` λ > 0): neighbouring inputs are
        any two gradients of the same shape that a client could have computed in a round. An
        upload of ``d`` coordinates, each clipped to ``[-δ, δ]`` and given ``Lap(λ)``, is
        ``2δd/λ``-DP (pure); with ``d`` the largest upload received, this bounds every upload.
        Client ``c`` released ``n_c`` uploads (the rounds it took part in), so its uploads are
        together ``n_c · 2δd/λ``-DP by basic composition; ``epsilon`` is that bound for the
        largest ``n_c`` (:func:`fedrec.privacy.worst_client_accountant`, PLD where it is
        computed). ``exp(epsilon)`` bounds the likelihood ratio of any two private datasets
        given everything the client sent; at the sizes of a FedGNN upload it bounds nothing.
        Not covered: which items are uploaded (ids and their number, hidden only among pseudo
        items: ``item_ids``, no formal guarantee) and the graph expansion (user embeddings
        and item tokens to the third party, neighbours' embeddings to clients, in clear).
        """
        cfg = self.cfg
        if self.dp is not None:
            return self.dp.report().with_caveat("paper_mechanisms", (
                "not used under dp: no pseudo item (no item id is sent), no LDP (the noise is "
                "the aggregate's), no graph expansion (it would send user embeddings and item "
                "tokens to the third party in clear)"))
        secure = self._secure_facts() if cfg.item_privacy == "secure_sum" else {}
        report = PrivacyReport((self._ldp_entry(secure),))
        if secure:
            report = report.with_caveat(
                "item_ids", "not sent: every client's upload is dense over all items and "
                            "reaches the server only inside the cohort's secure sum")
            report = report.with_caveat("ldp_scope", (
                "each client's whole dense gradient vector, against any observer, the server "
                "included" if self.mechanism is not None else
                "none (clip only: the clip bounds the fixed-point ring)")
                + ("; the rated-item counts block (item_avg=uploaders) is protected by the "
                   "secure sum only" if cfg.item_avg == "uploaders" else ""))
        else:
            report = report.with_part(self._item_ids_entry())
        if cfg.neighbours > 0:
            report = report.with_caveat("graph_expansion", (
                f"{NO_GUARANTEE}: each client sends its user embedding (no noise) and keyed "
                "tokens of its rated items to the third party, which returns up to "
                f"{cfg.neighbours} co-raters' embeddings per item to every client"))
        return report

    def _secure_facts(self) -> dict[str, Any]:
        """What the secure sum changes in the run's own entry (protection, leakage)."""
        cfg = self.cfg
        counts = cfg.item_avg == "uploaders"
        return {
            "item_privacy": "secure_sum",
            "pseudo_items": 0,
            "secure_aggregation": True,
            "protection": ("secure aggregation (Bonawitz et al. 2017) of the dense gradients: "
                           "against an honest-but-curious server and fewer than t = "
                           f"ceil({cfg.secagg_threshold} * cohort) colluding clients"
                           if cfg.secagg_variant == "bonawitz" else
                           protection_text(cfg.secagg_variant, cfg.secagg_threshold,
                                           cfg.secagg_corrupt) + ", of the dense gradients"),
            "leakage": "the server learns each round's sum over the surviving clients of "
                       "[GNN-weight gradient, item gradients dense over all items"
                       + (", per-item rater counts" if counts else "")
                       + "] and who survived; no item ids, no individual upload",
        }

    def _ldp_entry(self, secure: dict[str, Any]) -> Guarantee | NoGuarantee:
        """The run's own entry: local DP of the uploads' values (or none), with ``secure``'s
        protection and leakage where the uploads are summed securely."""
        cfg = self.cfg
        most = max(self.participation.values(), default=0)
        counts = {
            "participations_max": most,
            "participations_mean": (float(np.mean(list(self.participation.values())))
                                    if self.participation else 0.0),
            "clients_participated": len(self.participation),
        }
        if self.mechanism is None:
            what = ("clipping only (clip > 0, laplace = 0)" if cfg.clip > 0
                    else "no clipping, no noise")
            facts = dict(secure)
            return NoGuarantee(
                protection=facts.pop("protection",
                                     f"{what}: gradient values are released without noise"),
                leakage=facts.pop("leakage",
                                  "each upload carries the gradient rows of the client's rated "
                                  "items (among pseudo items) and its training loss, unnoised"),
                details={"ldp": False, **counts, **facts})
        eps = linf_laplace_epsilon(cfg.clip, cfg.laplace, max(self.max_upload_dim, 1))
        vector = eps.vector_mechanism
        rep = worst_client_accountant(vector, self.participation).report(cfg.dp_delta)
        pure = rep.method.startswith("basic")
        meaning = (f"exp({rep.epsilon:.3g}) bounds nothing: the values are not protected in any "
                   "practical sense" if rep.epsilon > WEAK_EPSILON else
                   f"exp({rep.epsilon:.3g}) bounds the likelihood ratio of any two private "
                   "datasets given all of the client's uploads")
        return Guarantee(
            f"local DP of the gradient values a client uploads, whole upload: d = {eps.dim} "
            f"coordinates (the largest upload received) clipped to L-infinity {cfg.clip} "
            f"(L1 sensitivity 2*clip*d = {2 * cfg.clip * eps.dim:.6g}) with Laplace scale "
            f"{cfg.laplace}, epsilon {eps.per_vector:.6g} per upload, composed over the "
            f"{most} uploads of the most-participating client; {meaning}. Not covered: "
            "the uploaded item ids (item_ids) and the graph expansion",
            rep.epsilon, 0.0 if pure else rep.delta, rep.method, unit="client-level",
            threat="against every observer (local DP: the server and the third party "
                   "included)",
            details={
                "ldp": True,
                "mechanism": "laplace",
                "pld_note": rep.pld_note,
                "epsilon_pld": rep.epsilon_pld,
                "epsilon_basic": rep.epsilon_basic,
                "epsilon_per_upload": eps.per_vector,
                "upload_dim": eps.dim,
                "upload_dim_note": "the largest upload received (GNN weight gradients plus "
                                   "one row per real and pseudo item); every upload is "
                                   "accounted at it",
                "noise_multiplier": vector.noise_multiplier,
                "neighboring_relation": "local DP: any two same-shape gradients of one client",
                **counts,
                "epsilon_per_coordinate_per_upload": eps.per_coordinate,
                "epsilon_per_coordinate_note": "secondary: one coordinate of one upload with all "
                                               "the others held fixed (the figure FedGNN "
                                               "reports); it does not bound what a client "
                                               "releases",
                **secure})

    def _item_ids_entry(self) -> NoGuarantee:
        """Which items a client uploads: hidden among pseudo items, no formal guarantee."""
        m = self.cfg.pseudo_items
        hide = (f"pseudo items: {m} unrated items per upload with Gaussian rows of the real "
                "rows' mean and covariance, ids shuffled" if m > 0 else
                "none: with pseudo_items = 0 the uploaded ids are the client's rated items")
        summary = self.attack.summary() if self.attack is not None else {}
        name = ("RatedItemsAttack (fedrec.attacks.rated_items): each upload's rated items "
                "guessed from its rows alone (k = uploaded - pseudo_items), the guess rule "
                "with the best mean F1 over every upload of the run; attacks that combine a "
                "client's uploads across rounds are not measured here")
        details = {} if not summary else {
            "measured_attack_rule": self.attack.best_rule() if self.attack else None,
            "measured_attack_uploads": summary["attack_uploads"],
            "measured_attack_random_f1": summary.get("attack_random_f1")}  # chance level
        f1 = summary.get("attack_f1")
        attack = (Attack(name, float(f1)) if f1 is not None else
                  Attack(name, how_to_measure="set measure_leakage=true"))
        return NoGuarantee(protection=hide,
                           leakage="each upload names its rated items among the pseudo ones",
                           attack=attack, part="item_ids", details=details)

    def state_dict(self) -> dict[str, Any]:
        return {"items": self.items.clone(), "params": {k: v.clone() for k, v in
                                                        self.params.items()},
                "expansions": self.expansions, "participation": dict(self.participation),
                "max_dim": self.max_upload_dim,
                "attack": self.attack.state_dict() if self.attack is not None else None,
                "dp": self.dp.state_dict() if self.dp is not None else None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.items = state["items"].clone()
        self.params = {k: v.clone() for k, v in state["params"].items()}
        self.expansions = state["expansions"]
        self.participation = dict(state["participation"])
        self.max_upload_dim = state["max_dim"]
        if self.attack is not None and state.get("attack") is not None:
            self.attack.load_state_dict(state["attack"])
        if self.dp is not None:
            self.dp.load_state_dict(state["dp"])
