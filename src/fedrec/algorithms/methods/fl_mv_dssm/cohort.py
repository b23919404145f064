"""The views' local training, vectorised over the cohort of one ``view_train`` step
(:meth:`fedrec.algorithms.methods.fl_mv_dssm.view.ViewLogic.train`).

What each view computes is what it would compute alone: it draws its own batches and
negatives from its own generator (:func:`view_draws`, the same draws in the same order as a
view trained by itself), and its copy of the item sub-model and of its user sub-model is one
slice of a stack (:mod:`fedrec.models.dssm_stacked`) that no other view's loss reaches. The
stacking only lets one backward pass serve every view at a local step: at step ``s`` the views
with more than ``s`` batches run (the cohort is ordered by batch count, most first, so they are
a prefix of the stack), each on its own batch, padded to the longest with rows of weight 0.
The results differ from one view at a time by float rounding only (batched products, the
sparse first layer). The cohort is cut into chunks of :data:`CHUNK` views to bound memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fedrec.algorithms.methods.fl_mv_dssm.config import FLMVDSSMConfig
from fedrec.models import dssm, dssm_stacked

#: Views trained in one stack (at most about 0.8 MB of item-tower parameters each, 3 copies).
CHUNK = 64


def view_draws(cfg: FLMVDSSMConfig, train_items: np.ndarray, num_items: int,
               gen: torch.Generator, new_items: np.ndarray | None = None
               ) -> list[torch.Tensor]:
    """A view's local steps: for each epoch a permutation of its positives, cut into batches of
    ``client_batch``, each with ``num_negatives`` items per positive drawn uniformly from the
    items it has not trained on (with replacement), never from ``new_items`` (a cold-start
    run's new items, which training must not see: drawn as negatives only, they would be
    learnt as items nobody wants). Each step is ``[b, 1 + N]``, the positive first. No positive
    or no unseen item: no step."""
    positives = torch.as_tensor(np.asarray(train_items, dtype=np.int64))
    free = np.ones(num_items, dtype=bool)
    free[np.asarray(train_items, dtype=np.int64)] = False
    if new_items is not None:
        free[np.asarray(new_items, dtype=np.int64)] = False
    unseen = torch.from_numpy(np.flatnonzero(free).astype(np.int64))
    out: list[torch.Tensor] = []
    if not len(positives) or not len(unseen):
        return out
    for _ in range(cfg.local_epochs):
        order = positives[torch.randperm(len(positives), generator=gen)]
        for batch in order.split(cfg.client_batch):
            negs = unseen[torch.randint(len(unseen), (len(batch), cfg.num_negatives),
                                        generator=gen)]
            out.append(torch.cat([batch[:, None], negs], dim=1))
    return out


@dataclass
class TrainedViews:
    """The trained stacks of a cohort's views, in the cohort's order: ``item`` (every view),
    ``user`` (one stack per view name, rows in the order of ``user_rows[name]``, the views'
    positions in the cohort), and each view's number of local steps."""

    item: dssm.Params
    user: dict[str, dssm.Params]
    user_rows: dict[str, list[int]]
    steps: list[int]


def train_views(cfg: FLMVDSSMConfig, features: dssm_stacked.SparseRows,
                item_start: dssm.Params, user_starts: Sequence[dssm.Params],
                names: Sequence[str], x_users: Sequence[np.ndarray],
                draws: Sequence[list[torch.Tensor]]) -> TrainedViews:
    """SGD (``client_lr``) of view ``k``'s copies of ``item_start`` and ``user_starts[k]`` (a
    tower of view kind ``names[k]`` on its feature row ``x_users[k]``) through ``draws[k]``."""
    num = len(names)
    item = {k: v.expand(num, *v.shape).clone() for k, v in item_start.items()}
    user_rows: dict[str, list[int]] = {}
    for k, name in enumerate(names):
        user_rows.setdefault(name, []).append(k)
    user = {n: dssm_stacked.stack([user_starts[k] for k in rows])
            for n, rows in user_rows.items()}
    x = {n: torch.from_numpy(np.stack([np.asarray(x_users[k], dtype=np.float32)
                                       for k in rows]))[:, None, :]
         for n, rows in user_rows.items()}
    for start in range(0, num, CHUNK):
        chunk = list(range(start, min(start + CHUNK, num)))
        _train_chunk(cfg, features, item, user, x, user_rows, chunk, draws)
    return TrainedViews(item, user, user_rows, [len(d) for d in draws])


def _train_chunk(cfg: FLMVDSSMConfig, features: dssm_stacked.SparseRows, item: dssm.Params,
                 user: dict[str, dssm.Params], x: dict[str, torch.Tensor],
                 user_rows: dict[str, list[int]], chunk: list[int],
                 draws: Sequence[list[torch.Tensor]]) -> None:
    """Train the views ``chunk`` (cohort positions) in place in the stacks."""
    order = sorted(chunk, key=lambda k: -len(draws[k]))  # most steps first (stable)
    # Each stack's rows of this chunk, in ``order``: item rows are cohort positions; a user
    # stack's rows are positions in its ``user_rows``.
    item_idx = torch.tensor(order)
    where = {n: {k: r for r, k in enumerate(rows)} for n, rows in user_rows.items()}
    groups = {n: [(slot, where[n][k]) for slot, k in enumerate(order) if k in where[n]]
              for n in user_rows}
    item_c = {k: v[item_idx].clone() for k, v in item.items()}
    user_c = {n: {k: v[torch.tensor([r for _, r in g])].clone() for k, v in user[n].items()}
              for n, g in groups.items() if g}
    x_c = {n: x[n][torch.tensor([r for _, r in g])] for n, g in groups.items() if g}
    slots = {n: torch.tensor([s for s, _ in g]) for n, g in groups.items() if g}
    counts = [len(draws[k]) for k in order]
    width = 1 + cfg.num_negatives
    for s in range(counts[0] if counts else 0):
        active = sum(c > s for c in counts)
        batches = [draws[k][s] for k in order[:active]]
        rows = max(len(b) for b in batches)
        cands = torch.zeros(active, rows, width, dtype=torch.int64)
        mask = torch.zeros(active, rows)
        for a, b in enumerate(batches):
            cands[a, : len(b)] = b
            mask[a, : len(b)] = 1.0
        item_leaves = {k: v[:active].detach().requires_grad_(True) for k, v in item_c.items()}
        y_items = dssm_stacked.item_tower(item_leaves, features, cands.reshape(active, -1))
        user_leaves, outs, placed = {}, [], []
        for n, slot in slots.items():
            m = int((slot < active).sum())  # the group's rows are in slot order: a prefix
            if m == 0:
                continue
            user_leaves[n] = {k: v[:m].detach().requires_grad_(True)
                              for k, v in user_c[n].items()}
            outs.append(dssm_stacked.tower(user_leaves[n], x_c[n][:m])[:, 0, :])
            placed.append(slot[:m])
        y_user = torch.cat(outs)[torch.argsort(torch.cat(placed))]
        loss = dssm_stacked.softmax_loss(y_user, y_items.reshape(active, rows, width, -1),
                                         mask, cfg.gamma)
        stacks = [(item_c, item_leaves)] + [(user_c[n], user_leaves[n]) for n in user_leaves]
        leaves = [p for _, lv in stacks for p in lv.values()]
        grads = iter(torch.autograd.grad(loss, leaves))
        with torch.no_grad():
            for stack, lv in stacks:
                for name in lv:
                    g = next(grads)
                    stack[name][: g.shape[0]] -= cfg.client_lr * g
    for k, v in item_c.items():
        item[k][item_idx] = v
    for n, params in user_c.items():
        rows = torch.tensor([r for _, r in groups[n]])
        for k, v in params.items():
            user[n][k][rows] = v
