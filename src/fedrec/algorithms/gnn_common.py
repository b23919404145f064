"""The options of FedGNN's model (:mod:`fedrec.models.gnn`), shared by FedGNN
(:mod:`fedrec.algorithms.methods.fedgnn`) and its centralized counterpart
(:mod:`fedrec.algorithms.methods.gnn_central`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.config import RunConfig, check_choice, check_range, option
from fedrec.models import gnn


@dataclass
class GNNModelConfig(RunConfig):
    """The options of FedGNN's model (:mod:`fedrec.models.gnn`), federated or centralized."""

    # Paper: 256; authors' code: 64. 64 keeps an ML-100K epoch of FedGNN at a few seconds on 2
    # CPU cores.
    dim: int = option(64, "embedding = hidden size (paper: 256; authors' code: 64)")
    gnn: str = option("gat", "gat | gcn | ggnn (paper's default: GAT)")
    loss: str = option("mse", "mse | mae")
    init_std: float = option(0.1, "standard deviation of the initial embeddings")
    feature_dropout: float = option(0.0, "inverted dropout on the subgraph's input embeddings "
                                         "(paper: 0.2)")
    chunk_slots: int = option(400_000, "padded (user, item) slots per vectorised chunk "
                                       "(memory)")

    def validate(self) -> None:
        super().validate()
        check_range("dim", self.dim, 1)
        check_choice("gnn", self.gnn, gnn.GNN_KINDS)
        check_choice("loss", self.loss, gnn.LOSSES)
        check_range("init_std", self.init_std, 0.0, low_open=True)
        check_range("feature_dropout", self.feature_dropout, 0.0, 0.9)
        check_range("chunk_slots", self.chunk_slots, 1)
