"""PTF-FedRec: a parameter transmission-free federated recommender (Yuan et al., ICDE 2024).

No model parameter ever crosses the network: the server's graph model (NGCF or LightGCN,
:mod:`fedrec.models.lightgcn`) stays on the server, each client's NeuMF
(:mod:`fedrec.models.ncf`) stays on the device, and the parties exchange only
``{"items": int64[n], "scores": float32[n]}`` payloads. One round:

1. ``train`` (server -> selected clients, empty payload): each client trains its NeuMF for
   ``local_epochs`` epochs (Adam ``client_lr``, batch ``client_batch``, BCE with the batch mean) on
   its positives (label 1), its ``num_negatives`` negatives per positive (label 0; drawn *once*,
   when the client is created, uniformly without replacement from the items it has not
   interacted with) and the soft labels the server dispersed to it last round (a dispersed item
   that is one of its positives is dropped: the authors' ``server_data_clean``). It then uploads
   scores (sigmoid of its model) on a privacy-preserving subset of its trained items
   (``defense``). Its trained *non-positives* ``N`` are its negatives and this round's
   soft-labelled items, as in the authors' code (which draws the uploaded negatives from every
   trained item that is not a positive). The paper's text mentions only sampled negatives; with
   them alone, the forced swap below inverts the only positive of a one-interaction client (65%
   of Steam-200K's users have at most two), whereas the top soft-labelled item usually carries a
   score close to the positive's:

   * ``sampling+swapping`` (the paper's method, default): ``beta ~ U[beta_range]``,
     ``gamma ~ U[gamma_range]`` drawn per client and round; ``max(1, floor(beta * |P|))``
     positives and ``min(max(1, floor(gamma * n_pos_up)), |N|)`` distinct non-positives are
     drawn uniformly; then the ``n_swap = min(max(1, floor(swap_rate *
     n_pos_up)), n_neg_up)`` top-scored uploaded positives (none when ``swap_rate`` is 0)
     exchange scores with the ``n_swap`` top-scored uploaded non-positives (the i-th highest
     positive with the i-th highest non-positive). The floors and the "at least one" follow the
     authors' code (``int(...)`` and ``max(..., 1)``): a client uploading few positives still
     swaps one of them;
   * ``sampling``: the same without swapping; ``none``: every positive and every
     non-positive, unperturbed; ``ldp``: like ``none`` plus Laplace noise of scale ``ldp_scale`` on
     every score (clipped to [0, 1]).

   The upload is sorted by item id, so its order carries nothing about the labels.
2. The server keeps the latest upload of every client, builds the user-item graph whose edge
   weights are the uploaded scores, normalises it symmetrically, and trains its model for
   ``server_epochs`` epochs on this round's uploads as soft labels (BCE summed over the batch,
   Adam ``server_lr``, batch ``server_batch``; every batch re-propagates the full graph). An item's
   *update count* is the number of training batches in which it appeared (all rounds).
3. ``disperse`` (server -> clients): ``alpha`` items per client with the server's scores
   ``sigmoid(e_u . e_i)``: ``round(mu * alpha)`` *confident* items (highest update counts) and the
   rest *hard* items (highest server scores for that user), both excluding the items the client
   uploaded this round (and hard excluding the confident ones). The client keeps them for its next
   local training. ``dispersal`` selects the paper's ablations (its Table VII), which replace a
   part by *random* items, uniform without replacement among the items not uploaded by that
   client this round (nor already chosen), keyed by (seed, round, client, item):
   ``mixed`` (the method), ``no-hard`` ("-hard": the hard part random), ``no-confident``
   ("-confidence": the confident part random) and ``random`` ("-confidence -hard": all ``alpha``
   items random). ``mu: 1`` / ``mu: 0`` instead fill all ``alpha`` items with confident / hard
   ones.

Randomness: every client draw (negatives, beta, gamma, the subsets, batch order, LDP noise, its
private model's initialisation) is a counter-based function of (the client's secret key, round,
item or position), never of the cohort nor of the public seed (which would let the server replay
them: :mod:`fedrec.attacks.seed_replay`), so the cohort's training is vectorised (stacked
per-client NeuMF parameters, ``bmm``, one backward pass per local step;
:class:`~fedrec.models.ncf.StackedAdam` keeps each client's own Adam state and step count, a
fresh optimiser per round as in per-round local training). Item embedding rows use lazy
(SparseAdam-style) updates: a row is updated only at steps where it is in the client's batch. A
client's item rows that were never trained are not stored; they are regenerated from the
counter-based initialisation.

Evaluation (``evaluate``): the server model is ranked over all items each user has not trained
on (``Recall@K``, ``NDCG@K``, ... on the validation or test split via
:class:`~fedrec.algorithms.mf_common.SplitRanking`; its matrices are an experimenter's instrument
held next to the server, not something it learns from the protocol); each client ranks all
items but its known ones with its own NeuMF and reports only its metrics on the split the
``evaluate`` request names (``client_Recall@K``, ...). The top-guess attack
(:class:`fedrec.attacks.TopGuessAttack`) runs as an observer on the server's inbox; its
per-round means are in each round's training statistics, its mean F1 over the run in the
privacy report (``measured_attack_f1``: PTF-FedRec's defences give no formal guarantee, so the
report gives no epsilon).
Both instruments come from :func:`ptf_instruments` (the registry's ``instruments``): a server
built on public metadata only (a Flower ServerApp) has neither unless the experimenter attaches
them (``fedrec deploy --experimenter-oracle``); without them it reports the clients' metrics
only and no attack statistics.
``attack_k: ratio`` (default) lets it guess ``k = round(n_uploaded / (1 + num_negatives))``: the
protocol's public negative ratio, exact when everything trained is uploaded (``defense: none``)
in round 1; later the soft-labelled items in the upload raise it by ``~alpha / (1 +
num_negatives)``;
``attack_k: oracle`` grants it the true number of uploaded positives.

Cost (ML-100K, 943 clients, defaults, shared 2-core CPU, ``--threads 1``): ~8-12 s per round
(client training + upload 4.7-7.0 s, server NGCF training 2.7-4.2 s for 312 full-graph batches,
dispersal 0.2-0.3 s), 3-4.5 min per 20-round run, ~2.4 KB per client per round on the wire
(~168 uploaded pairs of 12 bytes up, 30 pairs down). Two torch threads were 4x slower on the
loaded machine (oversubscription). Gowalla (29,858 clients, 40,981 items, server batch 16,384 from
its config section): ~2 min per round (clients ~60 s, server ~30 s, dispersal ~25 s).

Data: ratings are treated as implicit positives. With ``split: per-user`` the loaded
train + test rows are re-split per user (``test_fraction``, seed ``split_seed``) with
:func:`fedrec.data.splits.per_user_split`; ``split: given`` keeps the loader's split.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from fedrec.algorithms.base import FederatedJob, FederatedTrainer, ServerLogic
from fedrec.algorithms.mf_common import (
    SplitRanking,
    eval_request,
    known_rows,
    reduce_client_metrics,
    requested_split,
)
from fedrec.attacks.top_guess import TopGuessAttack
from fedrec.config import RunConfig, check_choice, check_range, option
from fedrec.core.codec import Payload
from fedrec.core.rng import counter_uniform, derive_seed, torch_generator
from fedrec.data.partition import partition_by_user
from fedrec.data.splits import VAL_FRACTION, carve_validation, per_user_split
from fedrec.data.types import Dataset, InteractionDataset, Interactions
from fedrec.errors import ConfigError, ProtocolError
from fedrec.federation.runtime import (
    Observer,
    PartyContext,
    PartyLogic,
    Runtime,
    cohort_chunks,
    cohort_seeds,
)
from fedrec.federation.secrets import PartySecret
from fedrec.metrics.ranking import ScoreFn, per_user_topk_metrics
from fedrec.models import ncf
from fedrec.models.lightgcn import NGCF, LightGCN, normalized_adjacency
from fedrec.models.training import minibatch_epoch
from fedrec.privacy.report import attack_fields, no_guarantee

DEFENSES = ("none", "ldp", "sampling", "sampling+swapping")
DISPERSALS = ("mixed", "no-hard", "no-confident", "random")


@dataclass
class ImplicitSplitConfig(RunConfig):
    """Ratings as implicit positives, their train/test split (:func:`implicit_dataset`) and the
    top-K cut-off: one definition for PTF-FedRec, FedAvg-NeuMF and the centralized ranking
    baselines (:mod:`fedrec.algorithms.central_ranking`), so equal options mean equal test sets."""

    # Ratings become implicit positives; a per-user 80/20 re-split of train + test (seed
    # split_seed), or the loader's own split.
    split: str = option("per-user", "per-user | given (keep the loader's split)")
    test_fraction: float = option(0.2, "share of each user's positives in the test set "
                                       "(split: per-user)")
    split_seed: int = option(0, "seed of the per-user split")
    topk: int = option(20, "K of Recall@K / NDCG@K")

    def validate(self) -> None:
        super().validate()
        check_choice("split", self.split, ("per-user", "given"))
        check_range("test_fraction", self.test_fraction, 0.0, 1.0, low_open=True)
        check_range("topk", self.topk, 1)


@dataclass
class NCFClientConfig(ImplicitSplitConfig):
    """The NeuMF clients' local training (and the split), shared by PTF-FedRec and its
    parameter-transmission baseline FedAvg-NeuMF (:mod:`fedrec.algorithms.fedavg_ncf`)."""

    client_dim: int = option(16, "client NeuMF: GMF and MLP embedding size")
    client_layers: tuple[int, ...] = option((16, 8), "client MLP tower after concat(user_mlp, "
                                                     "item_mlp)")
    client_lr: float = option(0.01, "client Adam learning rate (a fresh optimizer each round)")
    client_batch: int = option(256, "client training rows per step")
    local_epochs: int = option(5, "client epochs per round")
    num_negatives: int = option(4, "negatives per positive, drawn once per client")

    def validate(self) -> None:
        super().validate()
        for name in ("client_dim", "client_batch", "local_epochs", "num_negatives"):
            check_range(name, getattr(self, name), 1)
        check_range("client_lr", self.client_lr, 0.0, low_open=True)
        if not self.client_layers or any(x < 1 for x in self.client_layers):
            raise ConfigError("client_layers must be a non-empty list of positive sizes")


@dataclass
class PTFFedRecConfig(NCFClientConfig):
    """Defaults follow the authors' code (hi-weiyuan/PTF-FedRec README: "gives the main
    results")."""

    rounds: int = option(20)
    eval_every: int = option(5)
    # The server's (hidden) model.
    server_model: str = option("ngcf", "ngcf | lightgcn (LightGCN uses len(server_layers) "
                                       "layers)")
    server_dim: int = option(32, "server model's embedding size")
    server_layers: tuple[int, ...] = option((32, 16), "server model's layer sizes")
    server_lr: float = option(0.001, "server Adam learning rate")
    server_batch: int = option(1024, "server training rows per step")
    server_epochs: int = option(2, "server epochs per round on the round's uploads (BCE summed, "
                                   "soft labels)")
    mess_dropout: float = option(0.1, "NGCF message dropout")
    # Dispersal: what the server sends back to each client.
    alpha: int = option(30, "items sent back per client (paper: 50 best on ML-100K/Steam)")
    mu: float = option(0.5, "share of confident items (the rest are hard items)")
    # no-hard / no-confident / random are the paper's Table VII ablations "-hard",
    # "-confidence", "-confidence -hard": they replace the hard / confident / both parts by items
    # drawn uniformly from those the client did not upload this round (mu 1 or 0 instead make
    # all alpha items confident, or all hard).
    dispersal: str = option("mixed", "mixed (the method) | no-hard | no-confident | random "
                                     "(the paper's Table VII ablations)")
    # Upload privacy.
    defense: str = option("sampling+swapping", "none | ldp | sampling | sampling+swapping")
    swap_rate: float = option(0.1, "lambda: share of the uploaded positives whose scores "
                                    "are swapped with non-positives")
    beta_range: tuple[float, ...] = option((0.1, 1.0), "share of positives uploaded, drawn per "
                                                       "client and round")
    gamma_range: tuple[float, ...] = option((1.0, 4.0), "negatives per uploaded positive, drawn "
                                                        "per client and round")
    ldp_scale: float = option(0.1, "Laplace scale on scores (defense: ldp)")
    attack: bool = option(True, "run the top-guess attack on uploads (metrics only)")
    attack_k: str = option("ratio", "ratio: k = n_up / (1 + num_negatives) | oracle: the true "
                                    "number of positives")
    attack_truth: str = option("interactions", "interactions: score guesses against all the "
                                               "client's positives (the paper's goal) | "
                                               "uploaded: only the uploaded ones")
    eval_clients: bool = option(True, "also evaluate every client's NeuMF (client_Recall@K, "
                                      "...)")
    chunk_samples: int = option(262_144, "padded training rows per vectorised group of clients "
                                         "(memory)")

    def validate(self) -> None:
        super().validate()
        check_choice("server_model", self.server_model, ("ngcf", "lightgcn"))
        check_choice("defense", self.defense, DEFENSES)
        check_choice("dispersal", self.dispersal, DISPERSALS)
        check_choice("attack_k", self.attack_k, ("ratio", "oracle"))
        check_choice("attack_truth", self.attack_truth, ("interactions", "uploaded"))
        for name in ("server_dim", "server_batch", "server_epochs", "chunk_samples"):
            check_range(name, getattr(self, name), 1)
        check_range("alpha", self.alpha, 0)
        check_range("server_lr", self.server_lr, 0.0, low_open=True)
        check_range("mu", self.mu, 0.0, 1.0)
        check_range("swap_rate", self.swap_rate, 0.0, 1.0)
        check_range("mess_dropout", self.mess_dropout, 0.0, 0.99)
        check_range("ldp_scale", self.ldp_scale, 0.0)
        if not self.server_layers or any(x < 1 for x in self.server_layers):
            raise ConfigError("server_layers must be a non-empty list of positive sizes")
        for name, lo in (("beta_range", 0.0), ("gamma_range", 0.0)):
            r = getattr(self, name)
            if len(r) != 2 or not lo < r[0] <= r[1]:
                raise ConfigError(f"{name} must be [low, high] with 0 < low <= high, got {r}")
        if self.beta_range[1] > 1.0:
            raise ConfigError(f"beta_range must lie in (0, 1], got {self.beta_range}")


# ---------------------------------------------------------------------------------------------
# Vectorised helpers (all per-client quantities are computed per row and grouped by ``local``)
# ---------------------------------------------------------------------------------------------


def _rank_within(local: torch.Tensor, key: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Order of rows sorted by (local, key) and each row's rank inside its client (0-based)."""
    o1 = torch.sort(key, stable=True).indices
    o2 = torch.sort(local[o1], stable=True).indices
    order = o1[o2]
    loc = local[order]
    counts = torch.bincount(loc, minlength=int(loc.max()) + 1 if len(loc) else 0)
    starts = torch.cumsum(counts, 0) - counts
    rank_sorted = torch.arange(len(loc)) - starts[loc]
    rank = torch.empty_like(rank_sorted)
    rank[order] = rank_sorted
    return order, rank


def _pad(local: torch.Tensor, num: int) -> tuple[torch.Tensor, int]:
    """Slot of each row in a ``[num, width]`` padded layout (rows of a client in given order)."""
    _, slot = _rank_within(local, torch.arange(len(local), dtype=torch.float64))
    width = int(torch.bincount(local, minlength=num).max()) if len(local) else 0
    return slot, width


def _laplace(u: torch.Tensor, scale: float) -> torch.Tensor:
    c = u - 0.5
    return -scale * torch.sign(c) * torch.log1p(-2 * c.abs().clamp(max=0.5 - 1e-12))


def swap_top_scores(local: torch.Tensor, is_pos: torch.Tensor, scores: torch.Tensor,
                    n_swap: torch.Tensor) -> torch.Tensor:
    """Per client ``c``: the ``n_swap[c]`` highest-scored positives exchange scores with the
    ``n_swap[c]`` highest-scored negatives (i-th highest with i-th highest). Returns new scores."""
    out = scores.clone()
    if len(scores) == 0:
        return out
    num = int(local.max()) + 1
    width = int(torch.bincount(local, minlength=num).max())
    pos_idx = torch.nonzero(is_pos).squeeze(1)
    neg_idx = torch.nonzero(~is_pos).squeeze(1)
    _, rp = _rank_within(local[pos_idx], -scores[pos_idx].double())
    _, rn = _rank_within(local[neg_idx], -scores[neg_idx].double())
    sel_p = rp < n_swap[local[pos_idx]]
    sel_n = rn < n_swap[local[neg_idx]]
    table = torch.full((num * width,), -1, dtype=torch.int64)
    table[local[neg_idx][sel_n] * width + rn[sel_n]] = neg_idx[sel_n]
    p_rows = pos_idx[sel_p]
    n_rows = table[local[p_rows] * width + rp[sel_p]]
    if (n_rows < 0).any():
        raise ProtocolError("swap: fewer negatives than positives to swap")
    out[p_rows] = scores[n_rows]
    out[n_rows] = scores[p_rows]
    return out


# ---------------------------------------------------------------------------------------------
# Client
# ---------------------------------------------------------------------------------------------


def init_keys(ctxs: Sequence[PartyContext]) -> torch.Tensor:
    """Each client's secret key of its initial item-row permutation (:func:`ncf.base_row_index`)."""
    return cohort_seeds(ctxs, "ncf-init-items-perm")


class PTFClient(PartyLogic):
    """A device: its private NeuMF, its positives, its fixed negatives, the last soft labels."""

    def __init__(self, cfg: PTFFedRecConfig, num_items: int) -> None:
        self.cfg = cfg
        self.num_items = num_items
        self.shape = ncf.NCFShape(cfg.client_dim, tuple(cfg.client_layers))

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        cfg, n_items = self.cfg, self.num_items
        pos = np.asarray(data.train_items, dtype=np.int64)
        # The sorted complement of the positives (np.setdiff1d's result; a mask is ~50x faster,
        # which matters for Gowalla's 30k clients).
        free = np.ones(n_items, dtype=bool)
        free[pos] = False
        pool = np.flatnonzero(free)
        rng = secret.rng("ptf-negatives")
        # Distinct negatives (without replacement) so that the trained pool has exactly the
        # public ratio num_negatives : 1, unless the user's complement is too small.
        size = min(cfg.num_negatives * len(pos), len(pool))
        neg = np.sort(rng.choice(pool, size=size, replace=False))
        params = ncf.init_params(self.shape, secret.seed("ncf-init"), torch.tensor([0]))
        return {
            "negatives": torch.from_numpy(neg.astype(np.int64)),
            "soft_items": torch.empty(0, dtype=torch.int64),
            "soft_scores": torch.empty(0),
            "params": {k: v[0] for k, v in params.items()},
            "items": torch.empty(0, dtype=torch.int64),  # items whose rows were ever trained
            "rows": torch.empty(0, 2 * cfg.client_dim),
        }

    def handle(self, step: str, ctx: PartyContext, payload: Payload) -> Payload | None:
        return self.handle_cohort(step, [ctx], [payload])[0]

    def handle_cohort(
        self, step: str, ctxs: Sequence[PartyContext], payloads: Sequence[Payload]
    ) -> list[Payload | None]:
        if step == "disperse":
            for ctx, p in zip(ctxs, payloads, strict=True):
                items = torch.as_tensor(p["items"]).to(torch.int64)
                # The server does not know the client's positives and may disperse one: the
                # client drops it, keeping its own label 1 (the authors' server_data_clean).
                keep = torch.from_numpy(~np.isin(items.numpy(), ctx.data.train_items))
                ctx.state["soft_items"] = items[keep]
                ctx.state["soft_scores"] = torch.as_tensor(p["scores"]).float()[keep]
            return [None] * len(ctxs)
        if step == "train":
            # Groups of similar-sized clients bound the padded batches' memory (Gowalla's 30k
            # clients at once need more than 24 GiB); each client's training is its own.
            sizes = np.array([c.data.num_train + len(c.state["negatives"])
                              + len(c.state["soft_items"]) for c in ctxs])
            out: list[Payload | None] = [None] * len(ctxs)
            for idx in cohort_chunks(sizes, self.cfg.chunk_samples):
                for i, up in zip(idx.tolist(), self._train([ctxs[i] for i in idx]), strict=True):
                    out[i] = up
            return out
        if step == "evaluate":
            return self._evaluate(ctxs, requested_split(payloads[0]))
        raise ValueError(f"PTF-FedRec clients have no step {step!r}")

    # -- model state -----------------------------------------------------------------------
    def _stack_params(self, ctxs: Sequence[PartyContext]) -> dict[str, torch.Tensor]:
        names = ctxs[0].state["params"].keys()
        return {k: torch.stack([c.state["params"][k] for c in ctxs]) for k in names}

    def _initial_rows(self, clients: torch.Tensor,
                      items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(table, index)``: the untrained row of item ``items[k]`` of the client whose secret
        key (:func:`init_keys`) is ``clients[k]`` is ``table[index[k]]`` (broadcasting): a
        secretly keyed permutation of the shared base table (:func:`ncf.init_item_rows`)."""
        return (ncf.base_item_table(self.shape, self.cfg.seed, self.num_items),
                ncf.base_row_index(clients, items, self.num_items))

    def _item_table(self, ctxs: Sequence[PartyContext], keys: torch.Tensor) -> torch.Tensor:
        """Rows of the sorted (local * I + item) ``keys``: stored rows, else the initial ones."""
        n_items = self.num_items
        local = keys // n_items
        shared, index = self._initial_rows(init_keys(ctxs)[local], keys % n_items)
        table = shared[index]
        old_keys = torch.cat([c.state["items"] + i * n_items for i, c in enumerate(ctxs)])
        if len(old_keys):
            old_rows = torch.cat([c.state["rows"] for c in ctxs])
            table[torch.searchsorted(keys, old_keys)] = old_rows
        return table

    # -- training and upload ---------------------------------------------------------------
    def _train(self, ctxs: Sequence[PartyContext]) -> list[Payload]:
        return self._uploads(ctxs, *self._fit(ctxs))

    def _fit(self, ctxs: Sequence[PartyContext]) -> tuple[
            torch.Tensor, list[torch.Tensor], dict[str, torch.Tensor], torch.Tensor,
            torch.Tensor, int]:
        """Local training (module doc), saved into each client's state; returns what
        :meth:`_uploads` needs: (clients, positives, params, item table, table keys, seed)."""
        cfg, n_items, shape = self.cfg, self.num_items, self.shape
        num = len(ctxs)
        rnd = ctxs[0].round
        # Each client's own key for this round's draws (batches, sampling, swapping, noise):
        # from its secret, never from the public seed, so the server cannot replay them.
        clients = cohort_seeds(ctxs, "ptf-client")
        rnd_c = torch.tensor(rnd)
        pos = [torch.tensor(c.data.train_items, dtype=torch.int64) for c in ctxs]
        parts_items, parts_labels, parts_local = [], [], []
        for i, c in enumerate(ctxs):
            st = c.state
            its = torch.cat([pos[i], st["negatives"], st["soft_items"]])
            lab = torch.cat([torch.ones(len(pos[i])), torch.zeros(len(st["negatives"])),
                             st["soft_scores"].clamp(0, 1)])
            parts_items.append(its)
            parts_labels.append(lab)
            parts_local.append(torch.full((len(its),), i, dtype=torch.int64))
        items = torch.cat(parts_items)
        labels = torch.cat(parts_labels)
        local = torch.cat(parts_local)
        sample_keys = local * n_items + items
        old_keys = torch.cat([c.state["items"] + i * n_items for i, c in enumerate(ctxs)])
        keys = torch.unique(torch.cat([sample_keys, old_keys]))  # sorted
        table = self._item_table(ctxs, keys)
        row_client = keys // n_items
        sample_row = torch.searchsorted(keys, sample_keys)
        params = self._stack_params(ctxs)
        opt = ncf.StackedAdam({**params, "_table": table}, cfg.client_lr)
        steps = torch.zeros(num, dtype=torch.float64)
        n_per = torch.bincount(local, minlength=num)
        starts = torch.cumsum(n_per, 0) - n_per
        position = torch.arange(len(items)) - starts[local]
        bsz = cfg.client_batch
        for epoch in range(cfg.local_epochs):
            u = counter_uniform(clients[local], rnd_c, torch.tensor(epoch), position)
            _, rank = _rank_within(local, u)
            batch = rank // bsz
            slot = rank % bsz
            order = torch.sort(batch * num + local).indices
            counts = torch.bincount(batch[order])
            for idx in torch.split(order, counts.tolist()):
                if len(idx) == 0:
                    continue
                loc = local[idx]
                active = torch.unique(loc)
                a_of = torch.searchsorted(active, loc)
                width = int(slot[idx].max()) + 1
                urows, inv = torch.unique(sample_row[idx], return_inverse=True)
                emb = table[urows].requires_grad_(True)
                leaves = {k: v[active].requires_grad_(True) for k, v in params.items()}
                rows = torch.zeros(len(active), width, 2 * shape.dim).index_put(
                    (a_of, slot[idx]), emb[inv])
                lab = torch.zeros(len(active), width).index_put((a_of, slot[idx]), labels[idx])
                mask = torch.zeros(len(active), width).index_put(
                    (a_of, slot[idx]), torch.ones(len(idx)))
                logits = ncf.forward(shape, leaves, rows)
                bce = F.binary_cross_entropy_with_logits(logits, lab, reduction="none") * mask
                loss = (bce.sum(1) / mask.sum(1)).sum()
                grads = torch.autograd.grad(loss, [emb, *leaves.values()])
                steps[active] += 1
                opt.step("_table", table, urows, grads[0], steps[row_client[urows]])
                for (name, p), g in zip(params.items(), grads[1:], strict=True):
                    opt.step(name, p, active, g, steps[active])
        # Save the trained model back into each client's own state.
        split_counts = torch.bincount(row_client, minlength=num).tolist()
        for i, (k_part, r_part) in enumerate(
            zip(torch.split(keys, split_counts), torch.split(table, split_counts), strict=True)
        ):
            st = ctxs[i].state
            st["items"] = k_part - i * n_items
            st["rows"] = r_part.clone()
            st["params"] = {k: v[i].clone() for k, v in params.items()}
        return clients, pos, params, table, keys, rnd

    def _logits(self, params: dict[str, torch.Tensor], table: torch.Tensor, keys: torch.Tensor,
                local: torch.Tensor, items: torch.Tensor, num: int) -> torch.Tensor:
        """Logits of (client ``local``, item) rows whose embeddings are ``table[keys == local *
        I + item]``, with the models ``params`` (stacked over ``num`` clients)."""
        if len(local) == 0:
            return torch.empty(0)
        rows = torch.searchsorted(keys, local * self.num_items + items)
        slot, width = _pad(local, num)
        emb = torch.zeros(num, width, 2 * self.shape.dim).index_put((local, slot), table[rows])
        with torch.no_grad():
            logits = ncf.forward(self.shape, params, emb)
        return logits[local, slot]

    def _uploads(self, ctxs: Sequence[PartyContext], clients: torch.Tensor,
                 pos: list[torch.Tensor], params: dict[str, torch.Tensor], table: torch.Tensor,
                 keys: torch.Tensor, rnd: int) -> list[Payload]:
        cfg, num = self.cfg, len(ctxs)
        rnd_c = torch.tensor(rnd)
        # The trained non-positives: the fixed negatives and this round's soft-labelled items.
        negs = [torch.unique(torch.cat([c.state["negatives"], c.state["soft_items"]]))
                for c in ctxs]
        p_items = torch.cat(pos)
        p_local = torch.repeat_interleave(torch.arange(num), torch.tensor([len(p) for p in pos]))
        n_items_ = torch.cat(negs)
        n_local = torch.repeat_interleave(torch.arange(num), torch.tensor([len(n) for n in negs]))
        n_pos = torch.bincount(p_local, minlength=num)
        n_neg = torch.bincount(n_local, minlength=num)
        sampling = cfg.defense in ("sampling", "sampling+swapping")
        if sampling:
            lo, hi = cfg.beta_range
            beta = lo + (hi - lo) * counter_uniform(clients, rnd_c, torch.tensor(1))
            lo, hi = cfg.gamma_range
            gamma = lo + (hi - lo) * counter_uniform(clients, rnd_c, torch.tensor(2))
            k_pos = torch.minimum(torch.floor(beta * n_pos).long().clamp(min=1), n_pos)
            k_neg = torch.minimum(torch.floor(gamma * k_pos).long().clamp(min=1), n_neg)
            _, rp = _rank_within(p_local, counter_uniform(
                clients[p_local], rnd_c, torch.tensor(3), p_items))
            _, rn = _rank_within(n_local, counter_uniform(
                clients[n_local], rnd_c, torch.tensor(4), n_items_))
            keep_p = rp < k_pos[p_local]
            keep_n = rn < k_neg[n_local]
        else:
            beta = torch.ones(num, dtype=torch.float64)
            gamma = n_neg / n_pos.clamp(min=1)
            k_pos, k_neg = n_pos, n_neg
            keep_p = torch.ones(len(p_items), dtype=torch.bool)
            keep_n = torch.ones(len(n_items_), dtype=torch.bool)
        up_local = torch.cat([p_local[keep_p], n_local[keep_n]])
        up_items = torch.cat([p_items[keep_p], n_items_[keep_n]])
        is_pos = torch.cat([torch.ones(int(keep_p.sum()), dtype=torch.bool),
                            torch.zeros(int(keep_n.sum()), dtype=torch.bool)])
        raw = torch.sigmoid(self._logits(params, table, keys, up_local, up_items, num))
        scores = raw
        n_swap = torch.zeros(num, dtype=torch.int64)
        if cfg.defense == "sampling+swapping":
            at_least = 1 if cfg.swap_rate > 0 else 0
            n_swap = torch.floor(cfg.swap_rate * k_pos).long().clamp(min=at_least)
            n_swap = torch.minimum(n_swap, k_neg)
            scores = swap_top_scores(up_local, is_pos, raw, n_swap)
        elif cfg.defense == "ldp":
            u = counter_uniform(clients[up_local], rnd_c, torch.tensor(5), up_items).float()
            scores = (raw + _laplace(u, cfg.ldp_scale)).clamp(0, 1)
        # Per client, sorted by item id: the order says nothing about which are positives.
        order = torch.sort(up_local * self.num_items + up_items).indices
        counts = torch.bincount(up_local, minlength=num).tolist()
        out: list[Payload] = []
        for i, o in enumerate(torch.split(order, counts)):
            ctxs[i].state["last_upload"] = {  # private bookkeeping, never sent
                "items": up_items[o], "raw_scores": raw[o], "scores": scores[o],
                "is_pos": is_pos[o], "beta": float(beta[i]), "gamma": float(gamma[i]),
                "n_swap": int(n_swap[i]), "non_positives": negs[i],
            }
            out.append({"items": up_items[o].clone(), "scores": scores[o].float().clone()})
        return out

    # -- evaluation ------------------------------------------------------------------------
    def _evaluate(self, ctxs: Sequence[PartyContext], split: str = "test",
                  chunk: int = 128) -> list[Payload]:
        cfg, n_items = self.cfg, self.num_items
        out: list[Payload] = []
        all_items = torch.arange(n_items)
        for start in range(0, len(ctxs), chunk):
            part = ctxs[start : start + chunk]
            num = len(part)
            clients = init_keys(part)
            params = self._stack_params(part)
            # Untrained rows are rows of a shared table (:meth:`_initial_rows`): score that table
            # once per client (no per-client copy of it), then read each item's row.
            shared, index = self._initial_rows(clients[:, None], all_items[None, :])
            with torch.no_grad():
                on_shared = ncf.forward(self.shape, params, shared.expand(num, -1, -1))
            scores = on_shared.gather(1, index)
            # Trained rows replace their initial ones.
            st_local = torch.cat([torch.full((len(c.state["items"]),), i)
                                  for i, c in enumerate(part)])
            st_items = torch.cat([c.state["items"] for c in part])
            if len(st_items):
                st_rows = torch.cat([c.state["rows"] for c in part])
                scores[st_local, st_items] = self._logits(
                    params, st_rows, st_local * n_items + st_items, st_local, st_items, num)
            kn_local, kn_items = known_rows(part, split)
            scores[kn_local, kn_items.long()] = -torch.inf
            top = torch.topk(scores, min(cfg.topk, n_items), dim=1).indices
            scored = [c.data.rows(split)[0] for c in part]
            te_counts = np.array([len(x) for x in scored])
            te_local = torch.from_numpy(np.repeat(np.arange(num), te_counts))
            te_items = torch.from_numpy(np.concatenate(scored))
            test_keys = torch.sort(te_local * n_items + te_items.long()).values
            qk = torch.arange(num)[:, None] * n_items + top
            if len(test_keys):
                at = torch.searchsorted(test_keys, qk).clamp(max=len(test_keys) - 1)
                hits = test_keys[at] == qk
            else:
                hits = torch.zeros_like(qk, dtype=torch.bool)
            metrics = per_user_topk_metrics(hits.numpy(), te_counts, (cfg.topk,))
            for i in range(num):
                msg: Payload = {name: float(v[i]) for name, v in metrics.items()}
                msg["count"] = int(te_counts[i] > 0)
                out.append(msg)
        return out


# ---------------------------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------------------------


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

    def attach_instruments(self, instruments: dict[str, Any]) -> None:
        """The experimenter's instruments of :func:`ptf_instruments` (before the first round)."""
        unknown = set(instruments) - {"score_oracle", "attack"}
        if unknown:
            raise TypeError(f"PTF-FedRec has no instrument {sorted(unknown)}")
        self.score_oracle = instruments.get("score_oracle", self.score_oracle)
        self.attack = instruments.get("attack", self.attack)

    def observers(self) -> list[Observer]:
        return [self.attack] if self.attack is not None else []

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
        selected = rt.sample_clients(cfg.clients_per_round or len(rt.client_ids))
        t0 = time.perf_counter()  # the round's time split: clients, server, dispersal
        replies = rt.broadcast("train", selected, {})
        t_clients = time.perf_counter() - t0
        if not replies:
            raise ProtocolError(f"round {rnd}: no client upload arrived")
        for c, r in replies.items():
            self.uploads[int(c)] = (torch.as_tensor(r["items"]).long(),
                                    torch.as_tensor(r["scores"]).float())
        # Train the hidden model on this round's uploads, over the graph of the latest uploads.
        users = torch.cat([torch.full((len(r["items"]),), int(c)) for c, r in replies.items()])
        items = torch.cat([torch.as_tensor(r["items"]).long() for r in replies.values()])
        soft = torch.cat([torch.as_tensor(r["scores"]).float() for r in replies.values()])
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
            "upload_items_mean": float(len(items) / len(replies)),
            "server_loss": total / max(len(users) * cfg.server_epochs, 1),
            "server_batches": float(n_batches),
            "dispersed_clients": float(n_disp),
        }
        if self.attack is not None:
            stats.update(self.attack.summary(rnd))
        return stats

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
        rt.call("disperse", requests)
        return len(requests)

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        cfg = self.cfg
        out: dict[str, float] = {}
        if self.score_oracle is not None:
            u_emb, i_emb = self._embeddings()
            out = self.score_oracle(lambda users: u_emb[users] @ i_emb.T, split)
        if cfg.eval_clients:
            replies = rt.broadcast("evaluate", rt.client_ids, eval_request({}, split))
            client = reduce_client_metrics(replies.values(), explicit=False)
            out.update({f"client_{k}": v for k, v in client.items()})
        return out

    def privacy_report(self) -> dict[str, Any]:
        """No formal guarantee: sampling, swapping and dispersal bound nothing provably (and
        ``defense: ldp`` noises the scores while the uploaded ids, the client's trained items,
        travel in clear); the top-guess attack's F1 measured in this run says what they hid."""
        cfg = self.cfg
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
        name = ("TopGuessAttack (fedrec.attacks.top_guess): the k highest uploaded scores "
                "guessed as positives, scored against the client's positives "
                f"({cfg.attack_truth}), mean F1 over every upload of the run")
        summary = self.attack.summary() if self.attack is not None else {}
        measured = attack_fields(
            name, summary.get("attack_f1"),
            "set attack=true (a deployment also needs --experimenter-oracle)",
            **{f"measured_{k}": v for k, v in summary.items() if k != "attack_f1"})
        return no_guarantee(
            protection=f"defense {cfg.defense!r}: {hides}; no model parameters are exchanged, "
                       f"and the server's model is never sent (clients get its scores on "
                       f"alpha {cfg.alpha} items per round, {cfg.dispersal!r} dispersal)",
            leakage="each upload names a subset of the client's trained items (positives and "
                    "negatives) with its model's scores",
            defense=cfg.defense, **measured)

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(), "opt": self.opt.state_dict(),
            "update_counts": self.update_counts.clone(),
            "uploads": {c: (i.clone(), s.clone()) for c, (i, s) in self.uploads.items()},
            "attack": self.attack.state_dict() if self.attack is not None else None,
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


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------


def implicit_dataset(ds: Dataset, cfg: ImplicitSplitConfig) -> InteractionDataset:
    """Every rating is a positive; ``split: per-user`` re-splits train + validation + test per
    user, then carves the validation rows from the new training rows again (the loader's
    ``val_fraction`` and seed, :func:`fedrec.data.splits.carve_validation`), so validation
    stays a part of what the algorithm would otherwise train on."""
    if not hasattr(ds, "train"):
        raise ConfigError("this algorithm needs a rating or interaction dataset")
    if cfg.split == "per-user":
        users = np.concatenate([ds.train.users, ds.valid.users, ds.test.users])
        items = np.concatenate([ds.train.items, ds.valid.items, ds.test.items])
        pairs = np.unique(np.stack([users, items], 1), axis=0)
        everything = Interactions(pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64),
                                  np.ones(len(pairs), np.float32))
        train, test = per_user_split(everything, cfg.test_fraction, cfg.split_seed)
        frac = cfg.test_fraction
        split = f"per-user {1 - frac:.0%}/{frac:.0%}, seed {cfg.split_seed}"
        out = InteractionDataset(name=ds.name, num_users=ds.num_users, num_items=ds.num_items,
                                 train=train, test=test, meta={**ds.meta, "split": split})
        val = ds.meta.get("validation")
        if not isinstance(val, dict):  # not made by load_dataset: it asked for no validation
            return out
        return carve_validation(out, val.get("fraction", VAL_FRACTION), val.get("seed", 0))
    positive = {name: Interactions(x.users, x.items, np.ones(len(x), np.float32))
                for name, x in (("train", ds.train), ("valid", ds.valid), ("test", ds.test))}
    return InteractionDataset(name=ds.name, num_users=ds.num_users, num_items=ds.num_items,
                              **positive, meta={**ds.meta, "split": ds.meta.get("split")})


def ptf_instruments(cfg: PTFFedRecConfig, dataset: Dataset) -> dict[str, Any]:
    """The experimenter's instruments (:attr:`~fedrec.algorithms.base.AlgorithmSpec.instruments`)
    built from the ratings: ``score_oracle`` (a :class:`SplitRanking` of the split, ranking the
    hidden model) and, with ``attack``, the top-guess ``attack`` with each client's positives as
    the truth it is scored against. Neither is read by any protocol step."""
    ds = implicit_dataset(dataset, cfg)
    out: dict[str, Any] = {}
    if cfg.attack:
        clients = partition_by_user(ds)
        ratio = float(cfg.num_negatives) if cfg.attack_k == "ratio" else None
        out["attack"] = TopGuessAttack({u: c.train_items for u, c in clients.items()},
                                       assumed_ratio=ratio, truth=cfg.attack_truth)
    out["score_oracle"] = SplitRanking(ds, (cfg.topk,))
    return out


def build_ptf_fedrec_job(cfg: PTFFedRecConfig, dataset: Dataset,
                         device: torch.device) -> FederatedJob:
    """The job; on a metadata-only dataset (a ServerApp's, which holds no ratings) the server
    has no experimenter's instruments (see :func:`ptf_instruments`)."""
    ds = implicit_dataset(dataset, cfg)
    server = PTFServer(cfg, ds.num_users, ds.num_items)
    if not dataset.meta.get("metadata_only"):
        server.attach_instruments(ptf_instruments(cfg, dataset))
    return FederatedJob(server=server, client_logic=PTFClient(cfg, ds.num_items),
                        client_data=partition_by_user(ds))


def build_ptf_fedrec(cfg: PTFFedRecConfig, dataset: Dataset,
                     device: torch.device) -> FederatedTrainer:
    return FederatedTrainer(build_ptf_fedrec_job(cfg, dataset, device), cfg, device)
