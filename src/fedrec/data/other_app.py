"""FL-MV-DSSM's view 2: SVD user factors from "another app's" interactions.

The paper's second view is a user's latent factors from a matrix factorisation of *another*
app's data on the same device. ML-100K has one app, so we make the other one: before the
task's train/valid/test split, a seeded share of each user's interactions is held aside
(:func:`hold_aside`) and removed from the task. The held-aside rows are the other app's data:
they never appear in the task's training, validation or test rows, and the task's rows (test
rows above all) never reach a feature, because the factors are computed from the held-aside rows
alone. The price: the task has that share fewer interactions than ML-100K (a default of 20% of
each user's ratings; every user of ML-100K has at least 20, so at least 4 are held aside).

Where it is computed, honestly: a factorisation couples users. We split it in two.

1. *Item side, the other app's operator* (:func:`fit_item_factors`): the rank-``k`` truncated SVD
   ``X ~ U_k S_k V_k^T`` of the binary users x items matrix of all held-aside rows gives the item
   factors ``V_k`` and singular values ``S_k``. This is a computation across users: we attribute
   it to the other app, which (as a non-federated app would) holds its users' interactions
   centrally; the experimenter treats ``V_k S_k^{-1/2}`` as that app's published model, public
   to this task. It is not a step of FL-MV-DSSM's federated protocol, and no data of the task
   enters it.
2. *User side, each device* (:func:`project_users`): a user's view-2 vector is its own
   held-aside row projected onto those public item factors, ``x_u V_k S_k^{-1/2}``, which needs
   nothing but the device's own other-app data. For a user in the fit this equals its SVD user
   factor ``U_k S_k^{1/2}`` (the user half of ``X ~ (U_k S_k^{1/2})(V_k S_k^{1/2})^T``).

The SVD is dense and exact (``numpy.linalg.svd`` of the users x items matrix: ML-100K's
943 x 1682 took 3.2 s on one core shared with other jobs, most of :func:`~fedrec.data.multiview.
build_multiview`'s 3.9 s); each factor's sign is fixed (its largest-magnitude item entry
positive) so the factors do not depend on the LAPACK build's sign choice; a zero singular value
(rank below ``k``) gives a zero column (the pseudo-inverse's convention).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrec.data.splits import per_user_split
from fedrec.data.types import Interactions
from fedrec.errors import ConfigError

#: Default share of each user's interactions held aside as the other app's.
HELD_ASIDE_FRACTION = 0.2
#: FL-MV-DSSM's view-2 width (Table I; the paper's MF dimension 30).
SVD_DIM = 30


def other_app_seed(seed: int) -> int:
    """The held-aside draw's seed: a stream of its own, apart from the task split's (``seed``)
    and the validation split's."""
    return int(np.random.SeedSequence([int(seed), 0x6F74686572]).generate_state(1)[0])


def hold_aside(
    rows: Interactions, fraction: float = HELD_ASIDE_FRACTION, seed: int = 0
) -> tuple[Interactions, Interactions]:
    """``(task rows, held-aside rows)``: ``floor(fraction * n_u)`` of user ``u``'s ``n_u`` rows, at
    least one when ``n_u >= 2``, none when ``n_u == 1``, drawn uniformly (seed
    :func:`other_app_seed` of ``seed``) and taken out of the task; both parts keep ``rows``'s
    order. The draw depends on the users column and the row count only, not on the items."""
    if not 0.0 < float(fraction) < 1.0:
        raise ConfigError(f"held_aside_fraction must be in (0, 1), got {fraction}")
    return per_user_split(rows, float(fraction), other_app_seed(seed))


def check_everyone_held_aside(held: Interactions, users: np.ndarray) -> None:
    """ConfigError naming the first of ``users`` with no held-aside row (it would have no
    view-2 data: a user needs two or more interactions)."""
    lacking = np.setdiff1d(users, held.users)
    if len(lacking):
        raise ConfigError(f"user {int(lacking[0])} (and {len(lacking) - 1} more) has no held-aside "
                          "interaction for view 2: each user needs at least two")


@dataclass(frozen=True)
class ItemFactors:
    """The other app's published item side: ``projection`` = ``V_k S_k^{-1/2}``, ``(num_items,
    k)`` float64 (zero columns where ``S_k`` is zero), and the singular values ``(k,)``."""

    projection: np.ndarray
    singular_values: np.ndarray


def fit_item_factors(held: Interactions, num_users: int, num_items: int,
                     dim: int = SVD_DIM) -> ItemFactors:
    """The item side of the rank-``dim`` SVD of the held-aside rows' binary matrix (step 1 of
    the module docstring)."""
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
        raise ConfigError(f"svd_dim must be a positive integer, got {dim!r}")
    if dim > num_items:
        raise ConfigError(f"svd_dim {dim} is above the item count {num_items}")
    if dim > num_users:
        raise ConfigError(f"svd_dim {dim} is above the user count {num_users}")
    matrix = np.zeros((num_users, num_items), dtype=np.float64)
    matrix[held.users, held.items] = 1.0
    _, sigma, vt = np.linalg.svd(matrix, full_matrices=False)
    sigma, v = sigma[:dim], vt[:dim].T.copy()
    flip = v[np.argmax(np.abs(v), axis=0), np.arange(dim)] < 0
    v[:, flip] *= -1.0
    scale = np.zeros(dim)
    scale[sigma > 0] = sigma[sigma > 0] ** -0.5
    return ItemFactors(projection=v * scale, singular_values=sigma)


def project_users(held: Interactions, num_users: int, factors: ItemFactors) -> np.ndarray:
    """``(num_users, k)`` float32: each user's own held-aside row times the public projection
    (step 2 of the module docstring); a user's row depends on its own held-aside items only."""
    out = np.zeros((num_users, factors.projection.shape[1]), dtype=np.float64)
    np.add.at(out, held.users, factors.projection[held.items])
    return out.astype(np.float32)


def svd_view(held: Interactions, num_users: int, num_items: int,
             dim: int = SVD_DIM) -> tuple[np.ndarray, tuple[str, ...]]:
    """``(features, names)``: the ``(num_users, dim)`` float32 view-2 matrix (both steps) and
    its column names (``svd0``...)."""
    factors = fit_item_factors(held, num_users, num_items, dim)
    return project_users(held, num_users, factors), tuple(f"svd{k}" for k in range(dim))
