"""The centralized ranking baselines' options (:mod:`fedrec.algorithms.methods.central_ranking`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.ncf_common import ImplicitSplitConfig
from fedrec.config import check_choice, check_range, option
from fedrec.errors import ConfigError

MODELS = ("lightgcn", "ngcf", "neumf")


@dataclass
class CentralRankingConfig(ImplicitSplitConfig):
    """The options of the three baselines, with LightGCN's defaults (those of ``fedrec run
    lightgcn``); :class:`NGCFConfig` and :class:`NeuMFConfig` hold those of ``ngcf`` and
    ``neumf``. ``layers``: NGCF's layer sizes, LightGCN's number of layers (its length), NeuMF's
    MLP tower after ``concat(user_mlp, item_mlp)`` (input ``2 dim``)."""

    # LightGCN, the paper's settings: embedding 64, 3 layers, Adam lr 0.001, batch 1024, L2 1e-4
    # on the batch's layer-0 embeddings, BPR with one uniform negative per positive, redrawn
    # every epoch; it trains up to 1000 epochs with early stopping. Here 150 epochs, to stay
    # under ~5 min: ~0.8-1.8 s per epoch on ML-100K on a loaded 2-core CPU with --threads 1
    # (Recall@20 still creeps up to ~240 epochs).
    rounds: int = option(150, "epochs")
    eval_every: int = option(15)
    model: str = option("lightgcn", "must equal the algorithm name")
    dim: int = option(64, "embedding size")
    layers: tuple[int, ...] = option((64, 64, 64), "LightGCN uses only the number of layers")
    lr: float = option(0.001, "Adam learning rate")
    batch: int = option(1024, "BPR triples per step (full-graph propagation per step)")
    reg: float = option(1e-4, "L2 weight (times 1/2, batch mean) on the layer-0 embeddings")
    num_negatives: int = option(1, "BPR negatives per positive per epoch")
    mess_dropout: float = option(0.1, "NGCF's message dropout (the other models have none)")

    def validate(self) -> None:
        super().validate()
        check_choice("model", self.model, MODELS)
        for name in ("dim", "batch", "num_negatives"):
            check_range(name, getattr(self, name), 1)
        check_range("lr", self.lr, 0.0, low_open=True)
        check_range("reg", self.reg, 0.0)
        check_range("mess_dropout", self.mess_dropout, 0.0, 0.99)
        if not self.layers or any(x < 1 for x in self.layers):
            raise ConfigError("layers must be a non-empty list of positive sizes")


@dataclass
class NGCFConfig(CentralRankingConfig):
    """NGCF's defaults (``fedrec run ngcf``)."""

    # The paper's settings: embedding 64, three layers of 64, batch 1024, L2 1e-5 on the batch's
    # final representations, message dropout 0.1, no node dropout, BPR with one uniform
    # negative per positive per epoch; lr searched in {1e-4, 5e-4, 1e-3, 5e-3} (its code's
    # example: 1e-4, ~400 epochs). Here lr 1e-3 from that grid and 40 epochs, to stay under ~5
    # min (~2.5-5 s per epoch on ML-100K on a loaded 2-core CPU with --threads 1; Recall@20
    # still creeps up to ~70 epochs); at lr 1e-4, 60 epochs reach only Recall@20 ~0.25 with the
    # training loss still falling.
    rounds: int = option(40)
    eval_every: int = option(10)
    model: str = option("ngcf")
    layers: tuple[int, ...] = option((64, 64, 64), "output size of each propagation layer")
    reg: float = option(1e-5, "L2 weight (times 1/2, batch mean) on the final representations")


@dataclass
class NeuMFConfig(CentralRankingConfig):
    """NeuMF's defaults (``fedrec run neumf``)."""

    # The paper's settings: Adam lr 0.001, batch 256, 4 uniform negatives per positive redrawn
    # every epoch, log loss, no L2, no pre-training here; embedding 16 and the tower 32 -> 16 ->
    # 8 (the paper's example for 8 predictive factors, and the shape of PTF-FedRec's client
    # NeuMF). 20 epochs (~5 s per epoch on ML-100K on a loaded 2-core CPU with --threads 1);
    # without L2 it overfits after ~10 epochs (the paper's curves also peak within its first
    # ~10-20 iterations).
    rounds: int = option(20)
    eval_every: int = option(5)
    model: str = option("neumf")
    dim: int = option(16, "GMF and MLP embedding size")
    layers: tuple[int, ...] = option((16, 8), "MLP tower after concat(user_mlp, item_mlp) "
                                              "(input 2 * dim)")
    batch: int = option(256, "(user, item, label) instances per step")
    reg: float = option(0.0, "L2 weight (times 1/2, batch mean) on the batch's embedding rows")
    num_negatives: int = option(4, "negatives per positive per epoch")


