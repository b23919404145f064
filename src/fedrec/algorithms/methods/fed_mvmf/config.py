"""FED-MVMF's options (:mod:`fedrec.algorithms.methods.fed_mvmf`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fedrec.algorithms.multiview_common import MultiViewSplitConfig
from fedrec.config import check_range, option
from fedrec.federation.dp_sum import DPOptions, check_not_with_secure_aggregation
from fedrec.federation.secure_sum import SecureSumOptions


@dataclass
class FedMVMFConfig(MultiViewSplitConfig, DPOptions, SecureSumOptions):
    """FL-MV-DSSM's protocol where the two share a setting (100 rounds, 100 clients a round, its
    split, latent dimension 30, Precision/Recall/NDCG@10 and AUC); the rest are FED-MVMF's and
    FCF's own (confidence weights, L2, the server's Adam, secure aggregation off by default),
    and the user-level DP aggregate's (:class:`~fedrec.federation.dp_sum.DPOptions`)."""

    #: Without secure aggregation the server adds the raw gradients (not encodings).
    PLAIN_SUM_ENCODED: ClassVar[bool] = False

    rounds: int = option(100)
    eval_every: int = option(10)
    clients_per_round: int = option(100, "clients sampled per round (0 = every client)")
    dim: int = option(30, "latent factors (columns of U, V, A, B)")
    alpha: float = option(4.0, "confidence of a positive: c = 1 + alpha (1 for the rest)")
    reg: float = option(0.1, "lambda: L2 weight on every factor matrix")
    user_view_weight: float = option(1.0, "weight of the user side information term "
                                          "||Y - U A^T||^2 (0: none)")
    item_view_weight: float = option(1.0, "weight of the item side information term "
                                          "||Z - V B^T||^2 (0: none; 0 and 0: FCF)")
    lr: float = option(0.05, "server Adam learning rate on V, A and B")
    topk: int = option(10, "K of Precision/Recall/NDCG@K")
    eval_devices: int = option(0, "clients evaluated: a sample of this many drawn once from "
                                  "the run's seed, the same at every evaluation (0: every "
                                  "client)")
    secure_aggregation: bool = option(False, "true: the server sees only masked, dense uploads "
                                             "and their sum (secagg_variant); false: every "
                                             "upload in clear (float32, unclipped)")
    # Gradient coordinates reach ~13 in the first rounds on ML-100K (every item's row of a
    # user's objective); 100 leaves them unclipped at a resolution of 5e-6 (32-bit ring, 100
    # clients).
    secagg_clip: float = option(100.0)

    def validate(self) -> None:
        super().validate()
        for name in ("dim", "topk"):
            check_range(name, getattr(self, name), 1)
        for name in ("alpha", "reg", "user_view_weight", "item_view_weight"):
            check_range(name, getattr(self, name), 0.0)
        check_range("lr", self.lr, 0.0, low_open=True)
        check_range("eval_devices", self.eval_devices, 0)
        check_not_with_secure_aggregation(self)
