"""Attacks that difference a run's aggregates: what a server that keeps every round's sum, and
knows who was in it, learns of each client's items even under secure aggregation.

Threat model: an honest-but-curious server that follows the protocol and keeps, for every round
``r``, the set ``S_r`` of clients whose vectors its sum holds (it always knows this) and the sum
it decoded (exact under secure aggregation; noised under the DP aggregate,
:mod:`fedrec.federation.dp_sum`). It guesses each client's rated items; the truth is given to
:func:`f1_against` by the experimenter only to score the guesses.

* **counts linear system** (:func:`linear_system_guess`): a per-item statistic of each sum that
  adds up over clients (exact rater counts in FedGNN's ``item_avg: uploaders`` secure sum; under
  DP the noised sum's per-item row energy, the closest thing left) is, per item ``i``,
  ``c_r[i] = Σ_{u ∈ S_r} a_u[i]``: a linear system ``M a_i = c_i`` in the clients' item
  indicators, ``M`` the rounds x clients membership matrix. Its least-squares (minimum-norm)
  solution scores every (client, item); the guess is each client's ``k`` top-scored items, ``k``
  its true number of items, granted (as :mod:`fedrec.attacks.rated_items` grants it). As
  rounds accumulate ``M`` reaches full column rank and exact counts give every indicator.
* **support intersection** (:func:`support_intersection_guess`): in a sum of vectors that are
  zero outside each client's rows (a dense item gradient is zero on unrated items), a client's
  items lie in the support of every sum it took part in; intersecting those supports narrows to
  its items (FedGRec's row-space intersection in its simplest form). A noised sum has full
  support and the intersection is every item.

:func:`chance_f1` is the F1 of a guess of the same size drawn at random: an attack at chance
learns nothing from the sums about which items a client rated.
"""

from __future__ import annotations

import numpy as np

from fedrec.errors import ConfigError

__all__ = ["chance_f1", "f1_against", "linear_system_scores", "support_intersection_guess",
           "top_k_guess"]


def _membership(members: np.ndarray, stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    members = np.asarray(members, dtype=bool)
    stats = np.asarray(stats, dtype=np.float64)
    if members.ndim != 2 or stats.ndim != 2 or members.shape[0] != stats.shape[0]:
        raise ConfigError("membership must be rounds x clients and statistics rounds x items")
    return members, stats


def linear_system_scores(members: np.ndarray, stats: np.ndarray) -> np.ndarray:
    """``clients x items``: the least-squares (minimum-norm) solution of the linear system."""
    members, stats = _membership(members, stats)
    solution, *_ = np.linalg.lstsq(members.astype(np.float64), stats, rcond=None)
    return solution


def top_k_guess(scores: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``clients x items`` booleans: each client's ``k[c]`` top-scored items (ties by order)."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(scores.shape[1])[None, :].repeat(len(scores), 0),
                      axis=1)
    return ranks < np.asarray(k)[:, None]


def support_intersection_guess(members: np.ndarray, supports: np.ndarray) -> np.ndarray:
    """``clients x items`` booleans: the items in the support of every sum a client was in
    (every item for a client in no sum)."""
    members, supports = _membership(members, supports)
    supports = supports.astype(bool)
    outside = (~supports).astype(np.int64)
    # An item is out of the guess once any of the client's sums lacks it.
    excluded = members.astype(np.int64).T @ outside
    return excluded == 0


def f1_against(guess: np.ndarray, truth: np.ndarray, clients: np.ndarray | None = None
               ) -> float:
    """Mean per-client F1 of ``guess`` against ``truth`` (both clients x items), over
    ``clients`` (default: those with at least one true item)."""
    guess, truth = np.asarray(guess, dtype=bool), np.asarray(truth, dtype=bool)
    if clients is None:
        clients = np.flatnonzero(truth.any(1))
    tp = (guess & truth)[clients].sum(1)
    g, t = guess[clients].sum(1), truth[clients].sum(1)
    f1 = np.where(g + t > 0, 2 * tp / np.maximum(g + t, 1), 0.0)
    return float(f1.mean()) if len(clients) else 0.0


def chance_f1(guess: np.ndarray, truth: np.ndarray, clients: np.ndarray | None = None) -> float:
    """Expected F1 of random guesses of the same sizes: precision ``t/I``, recall ``g/I`` for a
    client with ``t`` true items and ``g`` guessed ones out of ``I``."""
    guess, truth = np.asarray(guess, dtype=bool), np.asarray(truth, dtype=bool)
    if clients is None:
        clients = np.flatnonzero(truth.any(1))
    items = truth.shape[1]
    g, t = guess[clients].sum(1), truth[clients].sum(1)
    expected_tp = g * t / items
    f1 = np.where(g + t > 0, 2 * expected_tp / np.maximum(g + t, 1), 0.0)
    return float(f1.mean()) if len(clients) else 0.0
