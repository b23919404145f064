"""FedGNN's options and the noise they define (:mod:`fedrec.algorithms.methods.fedgnn`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.gnn_common import GNNModelConfig
from fedrec.attacks.poisoning import PoisoningOptions
from fedrec.config import check_choice, check_range, option
from fedrec.errors import ConfigError
from fedrec.federation.aggregation import DefenseOptions
from fedrec.federation.dp_sum import DPOptions
from fedrec.federation.secure_sum import SecureSumParameters
from fedrec.privacy import LaplaceMechanism

PSEUDO_SETS = ("per_round", "fixed", "fixed_coupled", "fixed_copy")


@dataclass
class FedGNNConfig(GNNModelConfig, DPOptions, SecureSumParameters, PoisoningOptions,
                   DefenseOptions):
    """FedGNN's options. The secure sum's (``secagg_*``) are
    :class:`~fedrec.federation.secure_sum.SecureSumParameters`, used by ``item_privacy:
    secure_sum`` (and the ring of ``dp: distributed``); the ring's bound follows from the LDP
    noise unless ``secagg_clip`` is set (:func:`ring_bound`). A poisoning experiment's
    (:class:`~fedrec.attacks.poisoning.PoisoningOptions`) and the server's defense
    (:class:`~fedrec.federation.aggregation.DefenseOptions`, clear uploads only)."""

    rounds: int = option(100)
    clients_per_round: int = option(128, "|S| (paper: 128)")
    eval_every: int = option(10)
    loss_reduction: str = option("mean", "mean over the client's ratings (paper) | sum")
    lr: float = option(0.01, "server SGD learning rate (paper: 0.01)")
    lr_user: float = option(0.5, "client SGD step on its own user embedding (on the mean loss)")
    # The last step's gradients are uploaded; the paper: one gradient per round. 5 steps
    # overfit the user embeddings of sparse datasets (seed 0, privacy on: Flixster 0.944 ->
    # 0.904, Douban 0.773 -> 0.759, YahooMusic 28.2 -> 21.5 with 1 step) and do not help
    # ML-100K (0.968 -> 0.970).
    local_steps: int = option(1, "client steps on its user embedding per round (paper: 1)")
    pseudo_items: int = option(1000, "M pseudo interacted items per upload (paper: 1000)")
    # per_round: new pseudo ids each round (the intersection of a client's uploads finds its
    # items) | fixed: ids kept, rows redrawn (row consistency finds them) | fixed_coupled: ids
    # and mixing coefficients kept | fixed_copy: ids kept, each copies a real row (module doc).
    pseudo_set: str = option("fixed", "per_round | fixed | fixed_coupled | fixed_copy (see "
                                      "fedrec.algorithms.methods.fedgnn)")
    clip: float = option(0.1, "delta: L-infinity clip of the unified gradient (0 = no "
                              "clipping)")
    laplace: float = option(0.2, "lambda: Laplace noise scale (0 = no noise, no LDP)")
    neighbours: int = option(100, "N neighbours per item from the expansion (0 = no expansion)")
    expand_after: int = option(2, "T: expand after this many epochs (epoch = ceil(clients / "
                                  "|S|) rounds)")
    trainable_neighbours: bool = option(False, "true: redo the exchange every round (the "
                                               "paper's trainable variant)")
    bias: bool = option(False, "true: user bias (device) + item bias (last column of the item "
                               "table, uploaded like the item rows)")
    item_avg: str = option("cohort", "cohort: item rows summed / |S| (FedAvg) | uploaders: / "
                                     "clients that uploaded that row (real or pseudo)")
    lr_decay: float = option(1.0, "server lr x lr_decay every epoch")
    lr_model: float = option(0.0, "server lr of the GNN weights (0 = lr); item rows always use "
                                  "lr")
    l2: float = option(0.0, "L2 on user embeddings (client) and the item table (server)")
    # Costs more CPU per round than training: bench/bench_leakage_cost.py.
    measure_leakage: bool = option(False, "run the rated-items attack on the uploads; its F1 "
                                          "in the privacy report")
    item_privacy: str = option("pseudo", "pseudo: the paper's pseudo items | secure_sum: "
                                         "dense gradients, only as the cohort's secure sum "
                                         "(needs clip > 0)")
    secagg_clip: float = option(0.0, "secure_sum: ring bound per coordinate (0: clip, + 20 * "
                                     "laplace with LDP)")

    def coordinate_bound(self) -> float:
        """:func:`ring_bound`: ``secagg_clip``, or one that follows from the LDP options."""
        return ring_bound(self)

    def validate(self) -> None:
        super().validate()
        check_choice("loss_reduction", self.loss_reduction, ("mean", "sum"))
        check_range("lr", self.lr, 0.0, low_open=True)
        check_range("lr_user", self.lr_user, 0.0)
        check_range("local_steps", self.local_steps, 1)
        check_range("pseudo_items", self.pseudo_items, 0)
        check_choice("pseudo_set", self.pseudo_set, PSEUDO_SETS)
        check_range("clip", self.clip, 0.0)
        check_range("laplace", self.laplace, 0.0)
        if self.laplace > 0 and self.clip <= 0:
            raise ConfigError("laplace noise needs clip > 0 (without clipping it bounds nothing)")
        check_range("neighbours", self.neighbours, 0)
        check_range("expand_after", self.expand_after, 0)
        check_choice("item_avg", self.item_avg, ("cohort", "uploaders"))
        check_range("lr_decay", self.lr_decay, 0.0, low_open=True)
        check_range("l2", self.l2, 0.0)
        check_range("lr_model", self.lr_model, 0.0)
        check_choice("item_privacy", self.item_privacy, ITEM_PRIVACY)
        check_range("secagg_clip", self.secagg_clip, 0.0)
        if self.dp != "none" and self.item_privacy != "pseudo":
            raise ConfigError("dp replaces item_privacy: leave item_privacy=pseudo (under dp "
                              "no pseudo item, no LDP and no graph expansion is used)")
        if self.item_privacy == "secure_sum":
            if self.clip <= 0:
                raise ConfigError("item_privacy=secure_sum needs clip > 0 (the secure sum's "
                                  "fixed-point ring holds only bounded values)")
            if self.clients_per_round == 1:
                raise ConfigError("item_privacy=secure_sum needs clients_per_round >= 2 "
                                  "(a sum of one client is that client's upload)")
            self.validate_sum()
        if self.defense != "none" and (self.dp != "none" or self.item_privacy != "pseudo"):
            # A server that sees only the (noised) sum cannot apply a defense.
            raise ConfigError(f"defense {self.defense} needs each client's update in clear: "
                              "FedGNN with item_privacy=secure_sum or dp takes defense none")


ITEM_PRIVACY = ("pseudo", "secure_sum")
RING_TAILS = 20.0  # ring bound = clip + RING_TAILS * laplace: P(|Lap| > bound - clip) = e^-20


def ring_bound(cfg: FedGNNConfig) -> float:
    """Bound of each coordinate in the secure sum's fixed-point ring: ``secagg_clip`` if set,
    else ``clip`` without noise and ``clip + 20 laplace`` with it. Noised values beyond it are
    clipped by the encoder (post-processing: the local DP guarantee is unchanged; about one
    coordinate in 5e8 is affected)."""
    return cfg.secagg_clip or cfg.clip + RING_TAILS * cfg.laplace


def ldp_mechanism(cfg: FedGNNConfig) -> LaplaceMechanism | None:
    """The noise of one upload coordinate: clipped to [-clip, clip] (L1 sensitivity ``2 clip``
    for that coordinate alone), plus ``Lap(laplace)``: FedGNN's Eq. 1. Its ``epsilon()`` is the
    per-coordinate figure only; an upload's guarantee is that of the whole vector
    (:func:`linf_laplace_epsilon`, :meth:`FedGNNServer.privacy_report`). None when ``clip`` or
    ``laplace`` is 0: the run then claims no local DP (the one place that decides)."""
    if cfg.laplace <= 0 or cfg.clip <= 0:
        return None
    return LaplaceMechanism(2 * cfg.clip, cfg.laplace)
