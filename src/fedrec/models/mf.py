"""Matrix factorisation: the scoring function and losses shared by PMF and FCF.

Explicit ratings (PMF, Salakhutdinov & Mnih 2007, with biases)::

    r_hat(u, i) = mu + b_u + b_i + p_u . q_i
    L = sum_{(u,i) in R} (r_ui - r_hat(u, i))^2 + reg * (|p_u|^2 + b_u^2 + |q_i|^2)

``mu`` is a *public* constant (the midpoint of the dataset's rating scale), never the global mean
of the training ratings, which no single federated client could compute. PMF, FCF and FedMF
apply these to ratings divided by a public unit (a quarter of the rating scale,
:func:`fedrec.algorithms.mf_common.rating_unit`), so one learning rate serves 1..5 and 1..100.

Implicit feedback (BPR, Rendle et al. 2009)::

    L = - sum_{(u,i,j)} ln sigmoid(p_u . q_i - p_u . q_j) + reg * (|p_u|^2 + |q_i|^2 + |q_j|^2)

with ``j`` a sampled item the user has not interacted with.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from fedrec.core.rng import counter_randint


def init_factors(n: int, dim: int, generator: torch.Generator, std: float = 0.1) -> torch.Tensor:
    return torch.randn(n, dim, generator=generator) * std


def predict_ratings(
    p: torch.Tensor, b_u: torch.Tensor, q: torch.Tensor, b_i: torch.Tensor, mu: float,
    unit: float = 1.0,
) -> torch.Tensor:
    """Row-wise ``mu + unit * (b_u + b_i + p . q)`` for aligned rows of user and item
    parameters learnt in rating units (``unit`` 1: the plain formula, bit for bit)."""
    return mu + unit * b_u + unit * b_i + unit * (p * q).sum(-1)


def rating_loss(
    p: torch.Tensor, b_u: torch.Tensor, q: torch.Tensor, b_i: torch.Tensor,
    ratings: torch.Tensor, mu: float, reg: float, *, item_penalty: bool = True,
) -> torch.Tensor:
    """Summed squared error plus L2 on the rows involved (see module docstring).

    ``item_penalty=False`` drops the item terms, constant when only user parameters move.
    """
    err = ratings - predict_ratings(p, b_u, q, b_i, mu)
    penalty = (p.square().sum(-1) + b_u.square()).sum()
    if item_penalty:
        penalty = penalty + q.square().sum()
    return err.square().sum() + reg * penalty


def bpr_loss(
    p: torch.Tensor, q_pos: torch.Tensor, q_neg: torch.Tensor, reg: float,
    *, item_penalty: bool = True,
) -> torch.Tensor:
    """Summed BPR loss plus L2 on the rows involved (see module docstring).

    ``item_penalty=False`` drops the item terms, constant when only user parameters move.
    """
    diff = (p * (q_pos - q_neg)).sum(-1)
    penalty = p.square().sum()
    if item_penalty:
        penalty = penalty + q_pos.square().sum() + q_neg.square().sum()
    return -F.logsigmoid(diff).sum() + reg * penalty


def sample_negatives(
    seed: int | torch.Tensor,
    users: torch.Tensor,
    row_index: torch.Tensor,
    num_items: int,
    positive_keys: torch.Tensor,
    tries: int = 3,
) -> torch.Tensor:
    """One uniform negative item per (user, row), keyed by ``(seed, user, row_index)``.

    The draw for a row depends only on the user's id and the row's position in that user's own
    data, so a client's negatives never depend on which other clients share its cohort.
    ``positive_keys`` is the sorted tensor of ``user * num_items + item`` of all positives of
    the users involved; a negative that hits a positive is redrawn up to ``tries`` times (the
    rare survivors after that are kept, as in most BPR samplers). ``seed`` may be a tensor with
    one key per row (each client's own secret: federated clients' negatives are private).
    """
    per_row = isinstance(seed, torch.Tensor)
    neg = counter_randint(seed, num_items, users, row_index, torch.tensor(0))
    for t in range(1, tries + 1):
        keys = users * num_items + neg
        pos = torch.searchsorted(positive_keys, keys).clamp(max=len(positive_keys) - 1)
        hit = positive_keys[pos] == keys
        if not bool(hit.any()):
            break
        redraw = counter_randint(seed[hit] if per_row else seed, num_items, users[hit],
                                 row_index[hit], torch.tensor(t))
        neg[hit] = redraw
    return neg
