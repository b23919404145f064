"""Feras's options."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.gcn_common import SaintSamplerConfig
from fedrec.algorithms.methods.feras import dp
from fedrec.config import check_choice, check_clients, check_range, option
from fedrec.errors import ConfigError

SCHEDULES = ("sequential", "synchronous")
#: What the hosts share: Feras itself; GraphSAINT-SW (FedAvg of the weights every q iterations,
#: no embedding); isolated hosts (nothing: each trains alone on its own view).
SHARING = ("embeddings+weights", "weights", "none")
#: What a host shares of a node: its first layer's output H1 (p = 1) or the projection X W1.
SHARE_POINTS = ("layer", "projection")
#: The embedding uploads' calibrated mode: none, or node-attribute DP (:mod:`.dp`).
EMBEDDING_DP = ("none", "node")


@dataclass
class FerasConfig(SaintSamplerConfig):
    """The paper's protocol (q = 10, sequential hosts); GraphSAINT budgets for Cora. The
    network (``hidden``, the width of both GCN layers, and ``feature_dropout``) and what is
    shared (``share_at``, ``embedding_noise``) are chosen on validation (results/feras);
    ``--preset paper`` sets the paper's: 16 units, GraphSAINT's dropout 0.1, H1 shared (p = 1),
    no noise."""

    rounds: int = option(40, "rounds of iterations_per_round iterations each")
    eval_every: int = option(1)
    num_hosts: int = option(4, "hosts N (each a client); at least 2")
    private_fraction: float = option(0.5, "pi: share of the nodes private to one host (dealt "
                                          "uniformly), in [0, 1]; the others are public")
    weight_every: int = option(10, "q: the hosts' weights are averaged every q iterations")
    iterations_per_round: int = option(10, "iterations (one subgraph per host each) per round")
    schedule: str = option("sequential", "sequential: hosts one after another, each on the "
                                         "latest shared embeddings (the paper's); synchronous: "
                                         "all hosts in parallel, the AS averages")
    table_expiry: int = option(0, "sequential schedule: the AS forgets a table entry this many "
                                  "iterations after its upload (1: only the current "
                                  "iteration's; 0: never, the paper's table)")
    share: str = option("embeddings+weights", "what the hosts share through the AS: "
                                              "embeddings+weights (Feras), weights (GraphSAINT-"
                                              "SW, FedAvg every q iterations) or none (isolated "
                                              "hosts); the baselines on the same host views")
    share_at: str = option("projection", "what the AS averages: layer (each host's first-"
                                         "layer output H1, p = 1, the paper's) or projection "
                                         "(X W1, before the neighbourhood aggregation: every "
                                         "host's H1 then has all neighbours' attributes)",
                           absent="layer")
    embedding_noise: float = option(0.03, "defence: std of the Gaussian noise a host adds to "
                                          "every embedding it uploads (0: none, the paper's)")
    embedding_dp: str = option("none", "node: every uploaded projection row clipped to "
                                       "embedding_clip (L2) and the private ones given "
                                       "Gaussian noise sigma*C, node-attribute DP of the "
                                       "uploads (share_at=projection only; replaces "
                                       "embedding_noise; the weights stay uncovered)")
    embedding_clip: float = option(0.1, "embedding_dp: C, the L2 bound of an uploaded row (the "
                                          "order of a row's norm at initialisation on Cora)")
    embedding_noise_multiplier: float = option(0.0, "embedding_dp: sigma, noise std / C "
                                                    "(0: solved from embedding_target_epsilon)")
    embedding_target_epsilon: float = option(0.0, "embedding_dp: epsilon of a private node's "
                                                  "uploads over the run; solves sigma")
    embedding_delta: float = option(1e-5, "embedding_dp: delta of that epsilon")
    attack: bool = option(False, "run the AS's attribute-inference attack on the last "
                                 "round's evaluation uploads (metrics only)")
    attack_targets: int = option(300, "attack: at most this many private and public target "
                                      "nodes per host")
    hidden: int = option(128, "hidden units of both GCN layers (the paper's: 16)")
    # 0.1 is GraphSAINT's rate and the paper's; 0.5 on each of the three layers' inputs starts
    # slowly but is chosen on validation with 128 units.
    feature_dropout: float = option(0.5, "dropout rate on each layer's input (the paper's: 0.1)")

    def validate(self) -> None:
        super().validate()
        if self.num_hosts < 2:
            raise ConfigError(f"feras needs num_hosts >= 2, got {self.num_hosts} (with one host "
                              "nothing is private from anyone: use saint-central)")
        check_clients(self.clients_per_round, self.num_hosts, "feras", "num_hosts")
        check_range("private_fraction", self.private_fraction, 0.0, 1.0)
        check_range("weight_every", self.weight_every, 1)
        check_range("iterations_per_round", self.iterations_per_round, 1)
        check_range("table_expiry", self.table_expiry, 0)
        if self.table_expiry and self.schedule != "sequential":
            raise ConfigError("table_expiry ages the sequential schedule's table; the "
                              f"{self.schedule} schedule keeps none")
        check_range("walk_length", self.walk_length, 1)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_choice("share", self.share, SHARING)
        check_choice("share_at", self.share_at, SHARE_POINTS)
        check_range("embedding_noise", self.embedding_noise, 0.0)
        check_range("attack_targets", self.attack_targets, 1)
        check_choice("embedding_dp", self.embedding_dp, EMBEDDING_DP)
        check_range("embedding_clip", self.embedding_clip, 0.0, low_open=True)
        check_range("embedding_noise_multiplier", self.embedding_noise_multiplier, 0.0)
        check_range("embedding_target_epsilon", self.embedding_target_epsilon, 0.0)
        dp.check(self)

    @property
    def shares_embeddings(self) -> bool:
        return self.share == "embeddings+weights"

    @property
    def shares_weights(self) -> bool:
        return self.share != "none"
