"""Train/test splitting and filtering of interaction triples (all vectorised, seeded)."""

from __future__ import annotations

import dataclasses

import numpy as np

from fedrec.data.types import Dataset, GraphDataset, Interactions
from fedrec.errors import ConfigError

#: Default share of each user's training rows (or of a graph's training nodes) held out for
#: validation.
VAL_FRACTION = 0.1
#: Train and validation shares of :func:`random_node_split` (the rest is test).
RANDOM_TRAIN, RANDOM_VAL = 0.6, 0.2


def _check_fraction(test_fraction: float) -> None:
    if not 0.0 <= float(test_fraction) < 1.0:
        raise ConfigError(f"test_fraction must be in [0, 1), got {test_fraction}")


def random_split(
    inter: Interactions, test_fraction: float = 0.1, seed: int = 0
) -> tuple[Interactions, Interactions]:
    """Global random split: exactly ``round(test_fraction * n)`` rows go to test.

    Rows keep their original relative order inside each part.
    """
    _check_fraction(test_fraction)
    n = len(inter)
    n_test = round(test_fraction * n)
    perm = np.random.default_rng(seed).permutation(n)
    test_mask = np.zeros(n, dtype=bool)
    test_mask[perm[:n_test]] = True
    return inter.select(~test_mask), inter.select(test_mask)


def per_user_split(
    inter: Interactions, test_fraction: float = 0.2, seed: int = 0
) -> tuple[Interactions, Interactions]:
    """Split every user's rows separately: ``floor(test_fraction * n_u)`` rows (at least one when
    ``n_u >= 2`` and ``test_fraction > 0``) go to test; a user with a single row keeps it in train.
    """
    _check_fraction(test_fraction)
    if len(inter) == 0:
        return inter, inter
    test_mask = _per_user_mask(inter, test_fraction, seed)
    return inter.select(~test_mask), inter.select(test_mask)


def _per_user_mask(inter: Interactions, fraction: float, seed: int) -> np.ndarray:
    """The held-out rows of :func:`per_user_split`, as a mask over ``inter``'s rows."""
    n = len(inter)
    rng = np.random.default_rng(seed)
    key = rng.random(n)
    order = np.lexsort((key, inter.users))
    users_sorted = inter.users[order]
    _, start, counts = np.unique(users_sorted, return_index=True, return_counts=True)
    n_test = np.floor(fraction * counts).astype(np.int64)
    if fraction > 0:
        n_test = np.where(counts >= 2, np.maximum(n_test, 1), 0)
    rank = np.arange(n) - np.repeat(start, counts)
    test_sorted = rank < np.repeat(n_test, counts)
    test_mask = np.zeros(n, dtype=bool)
    test_mask[order] = test_sorted
    return test_mask


def _validation_seed(seed: int) -> int:
    # A stream of its own: the validation draw never coincides with a loader's test draw made
    # from the same dataset seed.
    return int(np.random.SeedSequence([int(seed), 0x76616C6964]).generate_state(1)[0])


def carve_validation(ds: Dataset, val_fraction: float = VAL_FRACTION, seed: int = 0) -> Dataset:
    """``ds`` with a validation part taken from its training data only (test data untouched).

    Rating and interaction data: :func:`per_user_split` of the training rows with
    ``val_fraction``: ``floor(val_fraction * n_u)`` of user ``u``'s ``n_u`` training rows, at
    least one when ``n_u >= 2``, none when ``n_u == 1`` (so every client keeps a training row),
    go to ``ds.valid`` and leave ``ds.train``. Graphs: a graph with a validation mask keeps all
    its masks; one without gets ``round(val_fraction * n_train)`` (at least one of two or more)
    training nodes, drawn uniformly, moved to ``val_mask``. Seeded by the dataset's ``seed``
    (the experimenter prepares the data, so a public seed is right here), on a stream apart
    from the test split's. ``meta["validation"]`` records what was done.
    """
    if not 0.0 <= float(val_fraction) < 1.0:
        raise ConfigError(f"val_fraction must be in [0, 1), got {val_fraction}")
    vseed = _validation_seed(seed)
    if isinstance(ds, GraphDataset):
        if ds.val_mask.any():
            return dataclasses.replace(ds, meta={**ds.meta, "validation": "given val_mask"})
        train_nodes = np.flatnonzero(ds.train_mask)
        n_val = round(val_fraction * len(train_nodes))
        if val_fraction > 0 and len(train_nodes) >= 2:
            n_val = max(n_val, 1)
        picked = np.random.default_rng(vseed).permutation(train_nodes)[:n_val]
        train_mask, val_mask = ds.train_mask.copy(), np.zeros_like(ds.train_mask)
        train_mask[picked], val_mask[picked] = False, True
        note = {"fraction": float(val_fraction), "seed": int(seed), "nodes": int(n_val)}
        return dataclasses.replace(ds, train_mask=train_mask, val_mask=val_mask,
                                   meta={**ds.meta, "validation": note})
    if len(ds.valid):
        raise ValueError(f"{ds.name} already has validation rows")
    # Drawn over the rows sorted by (user, item): the same training rows in another file
    # order (ML-100K's u1 and mgcnn splits) give the same validation rows.
    order = np.lexsort((ds.train.items, ds.train.users))
    held = np.zeros(len(ds.train), dtype=bool)
    if len(order):
        held[order] = _per_user_mask(ds.train.select(order), val_fraction, vseed)
    train, valid = ds.train.select(~held), ds.train.select(held)
    note = {"fraction": float(val_fraction), "seed": int(seed), "rows": len(valid)}
    return dataclasses.replace(ds, train=train, valid=valid,
                               meta={**ds.meta, "validation": note})


def random_node_split(labelled: np.ndarray, n: int, seed: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train, validation and test masks over ``n`` nodes: ``labelled`` (node ids) shuffled with
    ``seed``, cut at ``round(0.6 k)`` and ``round(0.2 k)`` (Planetoid's ``split="random"``, a
    user's graph without masks)."""
    order = np.random.default_rng(seed).permutation(labelled)
    n_train = round(RANDOM_TRAIN * len(order))
    n_val = round(RANDOM_VAL * len(order))
    masks = [np.zeros(n, bool) for _ in range(3)]
    for mask, part in zip(masks, np.split(order, [n_train, n_train + n_val]), strict=True):
        mask[part] = True
    return masks[0], masks[1], masks[2]


def k_core(users: np.ndarray, items: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the rows of the ``k``-core: iteratively drop users and items with fewer
    than ``k`` rows until every remaining user and item has at least ``k``."""
    if k < 1:
        raise ConfigError(f"k_core must be a positive integer, got {k}")
    keep = np.ones(len(users), dtype=bool)
    while True:
        u_counts = np.bincount(users[keep], minlength=int(users.max(initial=-1)) + 1)
        i_counts = np.bincount(items[keep], minlength=int(items.max(initial=-1)) + 1)
        new_keep = keep & (u_counts[users] >= k) & (i_counts[items] >= k)
        if new_keep.sum() == keep.sum():
            return new_keep
        keep = new_keep
