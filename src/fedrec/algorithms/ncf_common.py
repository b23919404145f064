"""NeuMF clients on implicit feedback: the split, the clients' options and their vectorised local
training and evaluation, called by PTF-FedRec (:mod:`fedrec.algorithms.methods.ptf_fedrec`) and
FedAvg over
NeuMF (:mod:`fedrec.algorithms.methods.fedavg_ncf`); the centralized ranking baselines
(:mod:`fedrec.algorithms.methods.central_ranking`) use the split.

Local training (:meth:`NeuMFCohort.fit`): each client trains its NeuMF (:mod:`fedrec.models.ncf`)
for ``local_epochs`` epochs (Adam ``client_lr``, batch ``client_batch``, BCE with the batch mean)
on its positives (label 1), its ``num_negatives`` negatives per positive (label 0, drawn once,
when the client is created, uniformly without replacement from the items it has not interacted
with: :meth:`NeuMFCohort.init_state`) and any soft-labelled items in its state. Every draw is a
counter-based function of (the client's secret key, round, item or position), so the cohort's
training is vectorised (stacked per-client parameters, one backward pass per local step;
:class:`~fedrec.models.ncf.StackedAdam` keeps each client's own Adam state, fresh each round).
Item rows are updated lazily (only at steps where the row is in the client's batch); a row never
trained is not stored but read from the method's initial table (:data:`InitialRows`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from fedrec.algorithms.mf_common import known_rows
from fedrec.config import RunConfig, check_choice, check_range, option
from fedrec.core.codec import Payload
from fedrec.core.rng import counter_uniform
from fedrec.data.implicit import (
    DEFAULT_SPLIT_SEED,
    DEFAULT_TEST_FRACTION,
    IMPLICIT_SPLITS,
    implicit_dataset,
)
from fedrec.data.types import Dataset, InteractionDataset
from fedrec.errors import ConfigError
from fedrec.federation.runtime import PartyContext, cohort_seeds
from fedrec.federation.secrets import PartySecret
from fedrec.metrics.ranking import per_user_topk_metrics
from fedrec.models import ncf

# ``(clients, items) -> (table, index)``: the untrained row of item ``items[k]`` of the client
# whose key (:func:`init_keys`) is ``clients[k]`` is ``table[index[k]]`` (broadcasting).
InitialRows = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@dataclass
class ImplicitSplitConfig(RunConfig):
    """Ratings as implicit positives, their train/test split (:func:`implicit_dataset`) and the
    top-K cut-off: one definition for PTF-FedRec, FedAvg-NeuMF and the centralized ranking
    baselines (:mod:`fedrec.algorithms.methods.central_ranking`), so equal options mean equal test
    sets
    (:func:`implicit_split`)."""

    # Ratings become implicit positives; a per-user 80/20 re-split of train + test (seed
    # split_seed), or the loader's own split.
    split: str = option("per-user", "per-user | given (keep the loader's split)")
    test_fraction: float = option(DEFAULT_TEST_FRACTION, "share of each user's positives in "
                                                         "the test set (split: per-user)")
    split_seed: int = option(DEFAULT_SPLIT_SEED, "seed of the per-user split")
    topk: int = option(20, "K of Recall@K / NDCG@K")

    def validate(self) -> None:
        super().validate()
        check_choice("split", self.split, IMPLICIT_SPLITS)
        check_range("test_fraction", self.test_fraction, 0.0, 1.0, low_open=True)
        check_range("topk", self.topk, 1)


@dataclass
class NCFClientConfig(ImplicitSplitConfig):
    """The NeuMF clients' local training (and the split), shared by PTF-FedRec and its
    parameter-transmission baseline FedAvg-NeuMF (:mod:`fedrec.algorithms.methods.fedavg_ncf`)."""

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


def implicit_split(ds: Dataset, cfg: ImplicitSplitConfig) -> InteractionDataset:
    """``ds`` as implicit positives, split as ``cfg`` says (:func:`fedrec.data.implicit.
    implicit_dataset`)."""
    return implicit_dataset(ds, cfg.split, cfg.test_fraction, cfg.split_seed)


def rank_within(local: torch.Tensor, key: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
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


def pad_slots(local: torch.Tensor, num: int) -> tuple[torch.Tensor, int]:
    """Slot of each row in a ``[num, width]`` padded layout (rows of a client in given order)."""
    _, slot = rank_within(local, torch.arange(len(local), dtype=torch.float64))
    width = int(torch.bincount(local, minlength=num).max()) if len(local) else 0
    return slot, width


def init_keys(ctxs: Sequence[PartyContext]) -> torch.Tensor:
    """Each client's secret key of its initial item-row permutation (:func:`ncf.base_row_index`)."""
    return cohort_seeds(ctxs, "ncf-init-items-perm")


@dataclass
class CohortFit:
    """What :meth:`NeuMFCohort.fit` leaves for the caller's upload: each client's round key,
    positives, the stacked trained parameters, the item table and its sorted keys, the round."""

    clients: torch.Tensor
    positives: list[torch.Tensor]
    params: dict[str, torch.Tensor]
    table: torch.Tensor
    keys: torch.Tensor
    round: int


class NeuMFCohort:
    """Local NeuMF training and ranking evaluation of a cohort of clients (module doc); the
    model lives in each client's state."""

    def __init__(self, cfg: NCFClientConfig, num_items: int) -> None:
        self.cfg = cfg
        self.num_items = num_items
        self.shape = ncf.NCFShape(cfg.client_dim, tuple(cfg.client_layers))

    def init_state(self, data: Any, secret: PartySecret) -> dict[str, Any]:
        """A new client: its fixed negatives and its private model's initialisation."""
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

    def stack_params(self, ctxs: Sequence[PartyContext]) -> dict[str, torch.Tensor]:
        names = ctxs[0].state["params"].keys()
        return {k: torch.stack([c.state["params"][k] for c in ctxs]) for k in names}

    def secret_rows(self, clients: torch.Tensor,
                    items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The default :data:`InitialRows`: a client's untrained rows are a permutation of the
        shared base table keyed by its secret (:func:`ncf.init_item_rows`)."""
        return (ncf.base_item_table(self.shape, self.cfg.seed, self.num_items),
                ncf.base_row_index(clients, items, self.num_items))

    def item_table(self, ctxs: Sequence[PartyContext], keys: torch.Tensor,
                   initial_rows: InitialRows) -> torch.Tensor:
        """Rows of the sorted (local * I + item) ``keys``: stored rows, else the initial ones."""
        n_items = self.num_items
        local = keys // n_items
        shared, index = initial_rows(init_keys(ctxs)[local], keys % n_items)
        table = shared[index]
        old_keys = torch.cat([c.state["items"] + i * n_items for i, c in enumerate(ctxs)])
        if len(old_keys):
            old_rows = torch.cat([c.state["rows"] for c in ctxs])
            table[torch.searchsorted(keys, old_keys)] = old_rows
        return table

    # -- training ----------------------------------------------------------------------------
    def fit(self, ctxs: Sequence[PartyContext],
            initial_rows: InitialRows | None = None) -> CohortFit:
        """Local training (module doc), saved into each client's state; untrained rows from
        ``initial_rows`` (default :meth:`secret_rows`)."""
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
        table = self.item_table(ctxs, keys, initial_rows or self.secret_rows)
        row_client = keys // n_items
        sample_row = torch.searchsorted(keys, sample_keys)
        params = self.stack_params(ctxs)
        opt = ncf.StackedAdam({**params, "_table": table}, cfg.client_lr)
        steps = torch.zeros(num, dtype=torch.float64)
        n_per = torch.bincount(local, minlength=num)
        starts = torch.cumsum(n_per, 0) - n_per
        position = torch.arange(len(items)) - starts[local]
        bsz = cfg.client_batch
        for epoch in range(cfg.local_epochs):
            u = counter_uniform(clients[local], rnd_c, torch.tensor(epoch), position)
            _, rank = rank_within(local, u)
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
        return CohortFit(clients, pos, params, table, keys, rnd)

    def logits(self, params: dict[str, torch.Tensor], table: torch.Tensor, keys: torch.Tensor,
                local: torch.Tensor, items: torch.Tensor, num: int) -> torch.Tensor:
        """Logits of (client ``local``, item) rows whose embeddings are ``table[keys == local *
        I + item]``, with the models ``params`` (stacked over ``num`` clients)."""
        if len(local) == 0:
            return torch.empty(0)
        rows = torch.searchsorted(keys, local * self.num_items + items)
        slot, width = pad_slots(local, num)
        emb = torch.zeros(num, width, 2 * self.shape.dim).index_put((local, slot), table[rows])
        with torch.no_grad():
            logits = ncf.forward(self.shape, params, emb)
        return logits[local, slot]

    def scores(self, ctxs: Sequence[PartyContext],
               initial_rows: InitialRows | None = None) -> torch.Tensor:
        """Each client's NeuMF logits on every item, ``[clients, items]`` (what it ranks by);
        untrained rows from ``initial_rows`` (default :meth:`secret_rows`), as in :meth:`fit`."""
        initial_rows = initial_rows or self.secret_rows
        n_items, num = self.num_items, len(ctxs)
        params = self.stack_params(ctxs)
        # Untrained rows are rows of a shared table (:data:`InitialRows`): score that table
        # once per client (no per-client copy of it), then read each item's row.
        all_items = torch.arange(n_items)
        shared, index = initial_rows(init_keys(ctxs)[:, None], all_items[None, :])
        with torch.no_grad():
            on_shared = ncf.forward(self.shape, params, shared.expand(num, -1, -1))
        scores = on_shared.gather(1, index)
        # Trained rows replace their initial ones.
        st_local = torch.cat([torch.full((len(c.state["items"]),), i)
                              for i, c in enumerate(ctxs)])
        st_items = torch.cat([c.state["items"] for c in ctxs])
        if len(st_items):
            st_rows = torch.cat([c.state["rows"] for c in ctxs])
            scores[st_local, st_items] = self.logits(
                params, st_rows, st_local * n_items + st_items, st_local, st_items, num)
        return scores

    def evaluate(self, ctxs: Sequence[PartyContext], split: str = "test",
                 initial_rows: InitialRows | None = None, chunk: int = 128) -> list[Payload]:
        """Each client ranks every item but its known ones with its own NeuMF and reports its
        metrics on ``split`` (untrained rows from ``initial_rows``, as in :meth:`fit`)."""
        cfg, n_items = self.cfg, self.num_items
        out: list[Payload] = []
        for start in range(0, len(ctxs), chunk):
            part = ctxs[start : start + chunk]
            num = len(part)
            scores = self.scores(part, initial_rows)
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

