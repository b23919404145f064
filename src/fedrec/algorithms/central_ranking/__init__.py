"""Centralized ranking baselines on PTF-FedRec's splits: LightGCN, NGCF and NeuMF.

The accuracy ceiling that PTF-FedRec (:mod:`fedrec.algorithms.ptf_fedrec`) is compared with: the
same models (:mod:`fedrec.models.lightgcn`, :mod:`fedrec.models.ncf`) trained with every
interaction in one place, on the *same* split (:class:`~fedrec.algorithms.ptf_fedrec.
ImplicitSplitConfig`, :func:`~fedrec.algorithms.ptf_fedrec.implicit_dataset`: equal ``split``,
``test_fraction`` and ``split_seed`` give equal train and test sets) and with the same full-ranking
evaluation (:func:`fedrec.metrics.evaluate_topk`, the user's known items excluded: see
:class:`~fedrec.algorithms.mf_common.SplitRanking`). One
"round" is one epoch; Adam, minibatches of ``batch`` training instances in a random order.

* ``lightgcn`` (He et al., SIGIR 2020) and ``ngcf`` (Wang et al., SIGIR 2019): propagation over
  the normalised training graph ``D^-1/2 A D^-1/2`` (recomputed in every batch, as in their
  reference code), BPR (Rendle et al. 2009) with ``num_negatives`` uniform negatives ``j`` per
  training pair ``(u, i)``, drawn afresh every epoch::

      L = 1/B sum_{(u,i,j)} [ -ln sigmoid(e_u . e_i - e_u . e_j)
                              + reg/2 (|r_u|^2 + |r_i|^2 + |r_j|^2) ]

  where ``e`` are the final representations and the penalised rows ``r`` are, following each
  reference implementation, the layer-0 embeddings for LightGCN and the final (concatenated)
  representations for NGCF. NGCF's message dropout uses a generator seeded by (seed, epoch).
* ``neumf`` (He et al., WWW 2017): :class:`fedrec.models.ncf.NeuMF` (no GMF/MLP pre-training),
  binary cross-entropy on every positive (label 1) and ``num_negatives`` uniform negatives per
  positive (label 0), redrawn every epoch (NCF's ``get_train_instances``), batch mean::

      L = 1/B sum_{(u,i,y)} [ BCE(sigmoid(f(u, i)), y) + reg/2 (|p_u|^2 + |q_i|^2) ]

Negatives are keyed by (seed, epoch, user, row) (:func:`fedrec.models.mf.sample_negatives`), so a
run, and a run resumed from a checkpoint, is reproducible. Nothing is sent: the ledger stays empty
and there is no privacy guarantee.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from fedrec.algorithms.base import CentralizedTrainer
from fedrec.algorithms.mf_common import SplitRanking
from fedrec.algorithms.ptf_fedrec import ImplicitSplitConfig, implicit_dataset
from fedrec.config import check_choice, check_range, option
from fedrec.core.rng import derive_seed, torch_generator
from fedrec.data.types import Dataset
from fedrec.errors import ConfigError
from fedrec.models import ncf
from fedrec.models.lightgcn import NGCF, LightGCN, normalized_adjacency
from fedrec.models.mf import bpr_loss, sample_negatives
from fedrec.models.training import minibatch_epoch

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


class CentralRankingTrainer(CentralizedTrainer):
    """LightGCN, NGCF or NeuMF trained on all training interactions (module doc)."""

    def __init__(self, cfg: CentralRankingConfig, dataset: Dataset, device: torch.device) -> None:
        super().__init__()
        self.cfg, self.device = cfg, device
        self.ds = ds = implicit_dataset(dataset, cfg)
        n_u, n_i = ds.num_users, ds.num_items
        tr = ds.train
        self.users = torch.from_numpy(tr.users.astype(np.int64)).to(device)
        self.items = torch.from_numpy(tr.items.astype(np.int64)).to(device)
        self.keys = torch.sort(self.users * n_i + self.items).values  # for negative sampling
        self.train_csr = tr.to_csr(n_u, n_i)
        self.test_csr = ds.test.to_csr(n_u, n_i)
        self.ranking = SplitRanking(ds, (cfg.topk,), device=device)
        self.adj: torch.Tensor | None = None
        gen = torch_generator(cfg.seed, "central-init", cfg.model)
        if cfg.model == "neumf":
            shape = ncf.NCFShape(cfg.dim, tuple(cfg.layers))
            self.model: torch.nn.Module = ncf.NeuMF(n_u, n_i, shape, cfg.seed)
        else:
            self.adj = normalized_adjacency(tr.users, tr.items, None, n_u, n_i).to(device)
            if cfg.model == "lightgcn":
                self.model = LightGCN(n_u, n_i, cfg.dim, len(cfg.layers), gen)
            else:
                self.model = NGCF(n_u, n_i, cfg.dim, cfg.layers, cfg.mess_dropout, gen)
        self.model.to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)

    # -- training --------------------------------------------------------------------------
    def _bpr(self, u: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        """Batch-mean BPR loss with the reference implementations' L2 term (module doc)."""
        u_emb, i_emb = self.model(self.adj)
        eu, ei, ej = u_emb[u], i_emb[i], i_emb[j]
        if self.cfg.model == "lightgcn":
            e0, n_u = self.model.embedding, self.ds.num_users
            rows = (e0[u], e0[n_u + i], e0[n_u + j])
        else:
            rows = (eu, ei, ej)
        penalty = sum(r.square().sum() for r in rows)
        return (bpr_loss(eu, ei, ej, 0.0) + 0.5 * self.cfg.reg * penalty) / len(u)

    def _bce(self, u: torch.Tensor, i: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Batch-mean NCF log loss plus L2 on the batch's embedding rows (module doc)."""
        m: ncf.NeuMF = self.model  # type: ignore[assignment]
        bce = F.binary_cross_entropy_with_logits(m(u, i), y, reduction="sum")
        penalty = m.user[u].square().sum() + m.item[i].square().sum()
        return (bce + 0.5 * self.cfg.reg * penalty) / len(u)

    def train_round(self, rnd: int) -> dict[str, float]:
        cfg, n_i = self.cfg, self.ds.num_items
        n, k = len(self.users), cfg.num_negatives
        rep_users = self.users.repeat_interleave(k)
        row = torch.arange(n * k, device=self.device)
        neg = sample_negatives(derive_seed(cfg.seed, rnd, "central-negatives"), rep_users, row,
                               n_i, self.keys)
        if cfg.model == "neumf":
            # Instances (u, item, label): every positive once, its k negatives once each.
            cols = (torch.cat([self.users, rep_users]), torch.cat([self.items, neg]),
                    torch.cat([torch.ones(n), torch.zeros(n * k)]).to(self.device))
            loss_fn = self._bce
        else:
            # Triples (u, i, j): every positive paired with each of its k negatives.
            cols = (rep_users, self.items.repeat_interleave(k), neg)
            loss_fn = self._bpr
        m = len(cols[0])
        order = torch.randperm(m, generator=torch_generator(cfg.seed, rnd, "central-order"))
        self.model.train()
        total = 0.0
        # NGCF's dropout draws from torch's global generator: seed a forked copy per epoch so
        # the epoch is a function of (seed, epoch) alone (exact resume) and the caller's
        # generator is left as it was.
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(derive_seed(cfg.seed, rnd, "central-dropout"))
            steps = minibatch_epoch(order.to(self.device), cfg.batch,
                                    lambda idx: loss_fn(*(c[idx] for c in cols)), self.opt)
        for batch_mean, size in steps:  # one by one, as the batches came
            total += batch_mean * size
        return {"train_loss": total / m}

    # -- evaluation ------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self, split: str = "test") -> dict[str, float]:
        """Full-ranking ``Recall@K``, ``NDCG@K``, ... on ``split`` (:class:`SplitRanking`)."""
        self.model.eval()
        if isinstance(self.model, ncf.NeuMF):
            score_fn = self.model.score_all
            # score_all holds ~ users * items * 2 dim floats: keep a batch near 2^19 pairs.
            batch = max(1, (1 << 19) // self.ds.num_items)
        else:
            u_emb, i_emb = self.model(self.adj)

            def score_fn(users: torch.Tensor) -> torch.Tensor:
                return u_emb[users] @ i_emb.T

            batch = 2048
        return self.ranking(score_fn, split, batch_size=batch)

    # -- checkpoints -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        # Copies: torch's state dicts share the live tensors, which keep training.
        return {"model": copy.deepcopy(self.model.state_dict()),
                "opt": copy.deepcopy(self.opt.state_dict())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])


def build_central_ranking(cfg: CentralRankingConfig, dataset: Dataset,
                          device: torch.device) -> CentralRankingTrainer:
    return CentralRankingTrainer(cfg, dataset, device)


def central_ranking_builder(
    model: str,
) -> Callable[[CentralRankingConfig, Dataset, torch.device], CentralRankingTrainer]:
    """The registry's ``build`` for algorithm ``model``: refuses a config naming another model
    (``fedrec run lightgcn --set model=neumf`` would otherwise record the wrong algorithm)."""

    def build(cfg: CentralRankingConfig, dataset: Dataset,
              device: torch.device) -> CentralRankingTrainer:
        if cfg.model != model:
            raise ConfigError(f"algorithm {model} trains model {model}, got model: {cfg.model}; "
                              f"run algorithm {cfg.model} instead")
        return build_central_ranking(cfg, dataset, device)

    return build
