"""FedGRec's options (:mod:`fedrec.algorithms.methods.fedgrec`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from fedrec.algorithms.ncf_common import ImplicitSplitConfig
from fedrec.attacks.poisoning import MODEL_ATTACKS, PoisoningOptions
from fedrec.config import check_choice, check_range, option
from fedrec.errors import ConfigError
from fedrec.federation.aggregation import DefenseOptions
from fedrec.federation.dp_sum import DPOptions, dp_on
from fedrec.federation.secure_sum import PLAIN_FORMATS, SecureSumOptions

LOSSES = ("bpr", "mse")
LR_SCHEDULES = ("constant", "cosine")
DOWNLOADS = ("full", "rows")
DP_LATENT = ("sums", "estimate", "none")


@dataclass
class FedGRecConfig(ImplicitSplitConfig, SecureSumOptions, DPOptions, PoisoningOptions,
                    DefenseOptions):
    """FedGRec's options; LightGCN's model settings (embedding 64, 3 layers, L2 1e-4 on the
    layer-0 rows, one uniform negative per positive); the DP aggregate's
    (:class:`~fedrec.federation.dp_sum.DPOptions`: ``dp`` replaces ``secure_aggregation``,
    whose masking is then ``dp_masking``'s); a poisoning experiment's
    (:class:`~fedrec.attacks.poisoning.PoisoningOptions`) and the server's defense of the
    item-row updates (:class:`~fedrec.federation.aggregation.DefenseOptions`; clear uploads
    only, :mod:`fedrec.algorithms.methods.fedgrec.defense`)."""

    rounds: int = option(300, "rounds; 300 chosen on ML-100K's validation Recall@20, still "
                                   "rising there (docs/fedgrec.md)")
    eval_every: int = option(10)
    clients_per_round: int = option(100, "clients sampled per round (0 = every client); also "
                                          "the size of the warm-up's sums")
    dim: int = option(64, "embedding size")
    num_layers: int = option(3, "K: latent embedding layers (0: none, federated BPR-MF)")
    refresh_period: int = option(2, "latent contributions are uploaded every this many rounds "
                                     "(the lazy update; 0: never after the warm-up)")
    local_steps: int = option(10, "E: client Adam steps per round on e_u^0 and its item rows")
    lr: float = option(0.05, "client Adam learning rate (a fresh optimizer each round)")
    lr_schedule: str = option("constant", "constant: lr every round | cosine: from lr in round "
                                          "1 down to lr_final in the last round")
    lr_final: float = option(0.005, "lr_schedule cosine: the client lr of the last round")
    server_lr: float = option(1.0, "server step on e_t^0: each row moves by this times the "
                                   "mean update of the clients that trained it (1: FedAvg)")
    # The three below are chosen on validation (results/fedgrec; --preset paper: the paper's
    # Step 3 and ranking): local computations, nothing a client sends changes in kind.
    own_edge_gradient: bool = option(True, "true: Step 3 differentiates e_u^1 and its items' "
                                           "e_t^1 through its own e_u^0 and item rows (not the "
                                           "paper's: there every latent embedding is fixed)",
                                     absent=False)
    user_fit_steps: int = option(200, "before ranking, each client fits e_u^0 alone to the "
                                      "downloaded tables for this many Adam steps (0: off, "
                                      "the paper's)", absent=0)
    user_fit_lr: float = option(0.05, "the Adam lr of that fit")
    user_fit_train_steps: int = option(50, "the same fit before Step 3 of every round, this "
                                           "many steps (0: off, the paper's; needs download: "
                                           "full)", absent=0)
    reg: float = option(1e-4, "L2 weight (times 1/2, per triple) on the layer-0 rows")
    loss: str = option("bpr", "bpr | mse (positives 1, sampled negatives 0)")
    num_negatives: int = option(1, "sampled negatives per positive per round")
    download: str = option("full", "full: every client downloads the whole tables (private) | "
                                   "rows: only its rows (the server learns which)")
    plain_upload: str = option("dense", "secure_aggregation false: dense (the whole encoded "
                                        "vector) | sparse (its nonzero entries and their "
                                        "positions: the same sum, far fewer bytes)")
    plain_sum_part: int = option(1000, "secure_aggregation false: the server asks this many "
                                       "clients at a time and adds their uploads as they come "
                                       "(0: the whole cohort at once); the same sum")
    secagg_clip: float = option(1.0, "bound of every upload coordinate: item updates are "
                                     "clipped to it, latent changes sent in parts that fit")
    # Under dp only (fedrec.algorithms.methods.fedgrec.dp: what each changes and its noise).
    dp_latent_clip: float = option(0.0, "dp: 0 clips a client's vector to dp_clip as a whole | "
                                        "b > 0: the latent block is clipped to L2 b on its own "
                                        "and given dp_latent_share of dp_clip^2 (the item and "
                                        "degree blocks the rest)")
    dp_latent_share: float = option(0.5, "dp_latent_clip > 0: the latent block's share of "
                                         "dp_clip^2 (its noise: z b / sqrt(share))")
    dp_latent: str = option("sums", "dp: sums: the latent sums add each client's change "
                                    "(their noise grows with the refreshes) | estimate: clients "
                                    "send their whole contribution, A <- (1 - beta) A + beta x "
                                    "the round's sum / rate | none: no latent block, the item "
                                    "latent tables stay 0 (e_u^1 still from e_t^0)")
    dp_latent_decay: float = option(1.0, "dp_latent: estimate: beta in (0, 1] (1: A is the "
                                         "last refresh round's estimate)")
    dp_degree: float = option(0.0, "dp: 0: |N_t| is the noised degree sum (a degree block in "
                                   "every vector) | c > 0: every |N_t| is this public constant "
                                   "(no degree block)")

    def validate(self) -> None:
        super().validate()
        for name in ("dim", "local_steps", "num_negatives"):
            check_range(name, getattr(self, name), 1)
        for name in ("num_layers", "refresh_period", "clients_per_round", "plain_sum_part"):
            check_range(name, getattr(self, name), 0)
        check_range("lr", self.lr, 0.0, low_open=True)
        check_range("server_lr", self.server_lr, 0.0, low_open=True)
        check_range("lr_final", self.lr_final, 0.0)
        check_range("user_fit_steps", self.user_fit_steps, 0)
        check_range("user_fit_train_steps", self.user_fit_train_steps, 0)
        check_range("user_fit_lr", self.user_fit_lr, 0.0, low_open=True)
        if self.user_fit_train_steps and self.download != "full":
            raise ConfigError("user_fit_train_steps needs download: full (the fit samples "
                              "negatives from the whole catalogue): with download: rows set "
                              "user_fit_train_steps: 0")
        check_choice("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        check_range("reg", self.reg, 0.0)
        check_choice("loss", self.loss, LOSSES)
        check_choice("download", self.download, DOWNLOADS)
        check_choice("plain_upload", self.plain_upload, PLAIN_FORMATS)
        check_range("dp_latent_clip", self.dp_latent_clip, 0.0)
        check_range("dp_latent_share", self.dp_latent_share, 0.0, 1.0, low_open=True)
        check_choice("dp_latent", self.dp_latent, DP_LATENT)
        check_range("dp_latent_decay", self.dp_latent_decay, 0.0, 1.0, low_open=True)
        check_range("dp_degree", self.dp_degree, 0.0)
        if self.dp_latent_clip > 0 and self.dp_latent_share >= 1:
            raise ConfigError("dp_latent_share must be < 1 (the item block needs a share of "
                              "dp_clip^2)")
        if self.dp != "none" and self.download != "full":
            raise ConfigError(f"dp={self.dp} needs download: full (with download: rows each "
                              "client names its items to the server in clear)")
        if self.defense != "none" and (self.secure_aggregation or dp_on(self)):
            # A server that sees only sums cannot apply a defense; secagg_clip (and under dp
            # dp_clip) is the one bound of a secure round's upload, and the clients apply it.
            raise ConfigError(f"defense {self.defense} needs each client's update in clear: "
                              "FedGRec with secure_aggregation or dp takes defense none "
                              "(secagg_clip, and dp_clip under dp, bound each upload)")
        if self.poisoning in MODEL_ATTACKS and self.download != "full":
            raise ConfigError(f"poisoning {self.poisoning} needs download: full (the attack "
                              "reads the whole item tables the training request carries)")
        if self.dp != "none" and self.num_layers and not self.refresh_period:
            raise ConfigError(f"dp={self.dp} needs refresh_period > 0 with num_layers > 0 "
                              "(under dp there is no warm-up: the latent tables fill from the "
                              "rounds' contributions)")

    def client_lr(self, round_: int) -> float:
        """The client's Adam lr in round ``round_`` (1-based): ``lr``, or with ``lr_schedule:
        cosine`` ``lr_final + (lr - lr_final) (1 + cos(pi (r - 1) / (R - 1))) / 2`` over the
        ``R = rounds`` rounds (``lr`` in round 1, ``lr_final`` in round R and after). The
        schedule is public, like every option: it keys nothing private."""
        if self.lr_schedule == "constant" or self.rounds <= 1:
            return self.lr
        progress = min(max(round_ - 1, 0) / (self.rounds - 1), 1.0)
        return self.lr_final + (self.lr - self.lr_final) * (1 + math.cos(math.pi * progress)) / 2
