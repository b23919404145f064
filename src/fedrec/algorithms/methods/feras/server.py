"""Feras's orchestrator: runs the iterations' steps in the schedule's order; it holds no model
(each host keeps its weights, the AS its table) and receives only losses and scores."""

from __future__ import annotations

from typing import Any

from fedrec.algorithms.base import ServerLogic
from fedrec.algorithms.methods.feras import dp
from fedrec.algorithms.methods.feras.config import FerasConfig
from fedrec.algorithms.methods.feras.steps import (
    AVERAGE_EMBEDDINGS,
    AVERAGE_WEIGHTS,
    EMBED,
    EVAL_EMBED,
    EVALUATE,
    TAKE_WEIGHTS,
    TRAIN,
)
from fedrec.attacks.attribute_inference import AttributeInferenceAttack
from fedrec.core.codec import Payload
from fedrec.data.types import check_split
from fedrec.federation.message import AGGREGATOR, PartyId
from fedrec.federation.runtime import Observer, Runtime
from fedrec.privacy.report import PrivacyReport


class FerasServer(ServerLogic):
    def __init__(self, cfg: FerasConfig, multilabel: bool) -> None:
        self.cfg = cfg
        self.metric = "f1_micro" if multilabel else "accuracy"  # equal on single-label nodes
        self.attack: AttributeInferenceAttack | None = None
        self.attack_metrics: dict[str, float] | None = None  # the last round's, in this process

    def attach_instruments(self, instruments: dict[str, Any]) -> None:
        """The experimenter's attribute-inference ``attack`` (:func:`feras_instruments`), an
        observer of what the AS receives; it only computes metrics."""
        unknown = set(instruments) - {"attack"}
        if unknown:
            raise TypeError(f"feras has no instrument {sorted(unknown)}")
        self.attack = instruments.get("attack", self.attack)

    def observers(self) -> list[Observer]:
        return [self.attack] if self.attack is not None else []

    def _iteration(self, rt: Runtime, hosts: list[PartyId], t: int) -> dict[PartyId, Payload]:
        request = {"iteration": t, "share_weights": self.cfg.shares_weights
                   and t % self.cfg.weight_every == 0}
        replies: dict[PartyId, Payload] = {}
        if not self.cfg.shares_embeddings:  # the baselines: every host on its own subgraph
            replies = rt.broadcast(TRAIN, hosts, request)
        elif self.cfg.schedule == "synchronous":
            rt.broadcast(EMBED, hosts, request)
            rt.call(AVERAGE_EMBEDDINGS, {AGGREGATOR: {"persist": False}})
            replies = rt.broadcast(TRAIN, hosts, request)
        else:  # sequential: each host on the table as the hosts before it left it
            average: Payload = {"persist": True}
            if self.cfg.table_expiry:  # the AS needs the iteration only to age its entries
                average = {**average, "iteration": t, "expiry": self.cfg.table_expiry}
            for host in hosts:
                rt.broadcast(EMBED, [host], request)
                rt.call(AVERAGE_EMBEDDINGS, {AGGREGATOR: average})
                replies.update(rt.broadcast(TRAIN, [host], request))
        if request["share_weights"]:
            rt.call(AVERAGE_WEIGHTS, {AGGREGATOR: {}})
            rt.broadcast(TAKE_WEIGHTS, hosts, {})
        return {h: replies[h] for h in hosts if h in replies}

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        """Iterations ``(rnd - 1) * k + 1 .. rnd * k`` (``k = iterations_per_round``)."""
        hosts = rt.cohort(self.cfg.clients_per_round)
        k = self.cfg.iterations_per_round
        total, labelled = 0.0, 0
        for t in range((rnd - 1) * k + 1, rnd * k + 1):
            replies = rt.updates(self._iteration(rt, hosts, t), TRAIN, f"in iteration {t}")
            total += sum(float(r["loss"]) for r in replies.values())
            labelled += sum(int(r["n"]) for r in replies.values())
        # The plain mean loss of the labelled nodes the round's subgraphs held.
        return {"train_loss": total / max(labelled, 1), "hosts": float(len(hosts)),
                "iterations": float(k)}

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        """The mean over hosts of each host's micro-F1 on its visible nodes of ``split`` (the
        paper's "mean of all hosts' score"), after one full-graph pass with shared
        embeddings."""
        request = {"split": check_split(split)}
        if self.cfg.shares_embeddings:
            rt.broadcast(EVAL_EMBED, rt.client_ids, request)
            rt.call(AVERAGE_EMBEDDINGS, {AGGREGATOR: {"persist": False}})
        replies = rt.broadcast(EVALUATE, rt.client_ids, request)
        scored = [r for r in replies.values() if int(r["count"]) > 0]
        if not scored:
            return {"eval_clients": 0.0}
        score = sum(float(r["f1_micro"]) for r in scored) / len(scored)
        out = {self.metric: score, "eval_clients": float(len(scored))}
        if self.attack is not None and request["split"] == "test" and rt.round == self.cfg.rounds:
            self.attack_metrics = self.attack.summary()  # on the last round's uploads only
            out.update(self.attack_metrics)
        return out

    def state_dict(self) -> dict[str, Any]:
        return {}  # the hosts' weights and the AS's table are the parties' states

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def receives(self) -> dict[str, str]:
        # Embeddings and weights go to the aggregation server (AS), never to this server.
        return {TRAIN: "each host's training loss and its number of training nodes",
                EVALUATE: "each host's metric counts on its own nodes of the split"}

    def privacy(self) -> PrivacyReport:
        """No formal guarantee for the run; with ``embedding_dp``, the embedding uploads'
        (epsilon, delta) per private node and the weights' status (:func:`.dp.privacy_report`),
        with the AS's attack where it ran."""
        seen = {"embeddings+weights": "each host's first-layer embeddings of the visible nodes "
                                      "it sampled (hence which sampled nodes it sees) and, every "
                                      "q iterations, its weights",
                "weights": "each host's weights every q iterations",
                "none": "nothing"}[self.cfg.share]
        return dp.privacy_report(
            self.cfg, f"the aggregation server sees {seen}; the orchestrator sees losses and "
                      "scores", self.attack_metrics)
