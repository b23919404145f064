"""FL-MV-DSSM's data: the task's implicit interactions, two user views and item content features.

:func:`load_multiview` (by dataset name) and :func:`build_multiview` (from a loaded dataset)
return a :class:`MultiViewData`. The steps, in order:

1. Every rating is a positive (:func:`fedrec.data.implicit.implicit_dataset`, the definition
   PTF-FedRec and the ranking baselines use), over all of the dataset's rows; a (user, item) pair
   rated twice counts once (its first row).
2. A seeded share of each user's positives is held aside as another app's data
   (:func:`fedrec.data.other_app.hold_aside`) and leaves the task.
3. The task's remaining positives are split: ``split="random"`` (the paper's random 80/20:
   :func:`fedrec.data.splits.random_split`) or ``"per-user"`` (each user's rows separately, as
   :func:`~fedrec.data.implicit.implicit_dataset` does for PTF-FedRec); then validation rows are
   carved from the training rows (:func:`fedrec.data.splits.carve_validation`, as
   :func:`fedrec.data.load_dataset` does).
4. Features, each from public data or one party's own data only: view 1 from the user's
   demographics (:mod:`fedrec.data.demographics`), view 2 from the held-aside rows
   (:mod:`fedrec.data.other_app`, which says where its SVD is computed), items from the public
   catalogue (:mod:`fedrec.data.content`). No row of the task (train, valid or test) enters a
   feature.

Shapes on ML-100K (defaults): ``task`` 943 users x 1,682 items; of the 100,000 positives 19,633
are held aside and 80,367 stay in the task: 58,295 train, 5,999 valid, 16,073 test (random
80/20, then 10% of each user's training rows to validation; ``split="per-user"``: 58,627,
6,033, 15,707); ``user_views[0]`` (943, 23), ``user_views[1]`` (943, 30), ``item_features``
(1682, 3188) = 3,169 title trigrams + 19 genre bits; all float32 NumPy arrays (``torch.
from_numpy`` shares their memory).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

import numpy as np

from fedrec.data.content import item_content_features
from fedrec.data.demographics import demographic_view
from fedrec.data.implicit import implicit_dataset
from fedrec.data.other_app import (
    HELD_ASIDE_FRACTION,
    SVD_DIM,
    check_everyone_held_aside,
    hold_aside,
    svd_view,
)
from fedrec.data.registry import load_dataset
from fedrec.data.side_info import item_info, user_info
from fedrec.data.splits import VAL_FRACTION, carve_validation, random_split
from fedrec.data.types import Dataset, InteractionDataset, Interactions, no_rows
from fedrec.errors import ConfigError

TASK_SPLITS = ("random", "per-user")
VIEW_NAMES = ("demographics", "svd")


@dataclass(frozen=True)
class MultiViewData:
    """FL-MV-DSSM's inputs (module docstring).

    ``task``: the implicit train / valid / test positives (the held-aside rows removed);
    ``held_aside``: the other app's positives (never in ``task``); ``user_views[v]``: view
    ``v``'s ``(num_users, dim_v)`` float32 matrix, named ``view_names[v]``, columns named
    ``view_feature_names[v]``; ``item_features``: ``(num_items, dim)`` float32, columns named
    ``item_feature_names``. Row ``u``/``i`` is dense user/item id ``u``/``i`` of ``task``.
    """

    task: InteractionDataset
    held_aside: Interactions
    user_views: tuple[np.ndarray, ...]
    view_names: tuple[str, ...]
    view_feature_names: tuple[tuple[str, ...], ...]
    item_features: np.ndarray
    item_feature_names: tuple[str, ...]
    meta: dict = field(default_factory=dict)

    @property
    def view_dims(self) -> tuple[int, ...]:
        return tuple(int(v.shape[1]) for v in self.user_views)


def _first_occurrences(rows: Interactions, num_items: int) -> Interactions:
    """``rows`` without repeated (user, item) pairs, each kept at its first row, in row order."""
    _, first = np.unique(rows.users * num_items + rows.items, return_index=True)
    return rows.select(np.sort(first))


def build_multiview(
    ds: Dataset,
    split: str = "random",
    test_fraction: float = 0.2,
    seed: int = 0,
    held_aside_fraction: float = HELD_ASIDE_FRACTION,
    svd_dim: int = SVD_DIM,
    val_fraction: float = VAL_FRACTION,
    val_seed: int | None = None,
) -> MultiViewData:
    """The multi-view data of ``ds``'s rows (all of train, valid and test, in that order; the
    module docstring's steps). ``seed`` seeds the task split and, on streams of their own, the
    held-aside draw and (unless ``val_seed`` is given) the validation split. Bad input (a
    dataset without demographics or titles, an unknown split, a fraction out of range, a user
    with no held-aside row, ``svd_dim`` above the item or user count) -> one-line ConfigError."""
    users, items = user_info(ds), item_info(ds)
    if split not in TASK_SPLITS:
        raise ConfigError(f"split must be one of {', '.join(TASK_SPLITS)}, got {split!r}")
    if not 0.0 < float(test_fraction) < 1.0:
        raise ConfigError(f"test_fraction must be in (0, 1), got {test_fraction}")
    if len(users) != ds.num_users or len(items) != ds.num_items:
        raise ConfigError(f"{ds.name}: side information for {len(users)} users and "
                          f"{len(items)} items, but {ds.num_users} x {ds.num_items} ids")
    val_seed = seed if val_seed is None else val_seed
    positives = implicit_dataset(ds, "given", float(test_fraction), seed)
    every = _first_occurrences(
        Interactions.concat(positives.train, positives.valid, positives.test), ds.num_items)
    task_rows, held = hold_aside(every, held_aside_fraction, seed)
    check_everyone_held_aside(held, np.unique(every.users))
    view_2, view_2_names = svd_view(held, ds.num_users, ds.num_items, svd_dim)  # check dim early

    aside = {"fraction": float(held_aside_fraction), "seed": int(seed), "rows": len(held)}
    meta = {**ds.meta, "held_aside": aside}
    meta.pop("validation", None)
    if split == "random":
        train, test = random_split(task_rows, float(test_fraction), seed)
        frac = float(test_fraction)
        meta["split"] = f"random {1 - frac:.0%}/{frac:.0%}, seed {seed}"
        task = carve_validation(_interactions(ds, train, test, meta), val_fraction, val_seed)
    else:
        note = {"fraction": float(val_fraction), "seed": int(val_seed)}
        unsplit = _interactions(ds, task_rows, no_rows(), {**meta, "validation": note})
        task = implicit_dataset(unsplit, "per-user", float(test_fraction), seed)
    view_1, view_1_names = demographic_view(users)
    item_features, item_names = item_content_features(items)
    return MultiViewData(
        task=task, held_aside=held, user_views=(view_1, view_2), view_names=VIEW_NAMES,
        view_feature_names=(view_1_names, view_2_names), item_features=item_features,
        item_feature_names=item_names,
        meta={"held_aside": aside, "svd_dim": int(svd_dim), "split": task.meta["split"]})


def _interactions(ds: Dataset, train: Interactions, test: Interactions,
                  meta: dict) -> InteractionDataset:
    return InteractionDataset(name=ds.name, num_users=ds.num_users, num_items=ds.num_items,
                              train=train, test=test, meta=meta)


def load_multiview(
    name: str = "ml-100k",
    data_dir: str | os.PathLike[str] | None = None,
    *,
    split: str = "random",
    test_fraction: float = 0.2,
    seed: int = 0,
    held_aside_fraction: float = HELD_ASIDE_FRACTION,
    svd_dim: int = SVD_DIM,
    val_fraction: float = VAL_FRACTION,
    val_seed: int | None = None,
    source: str = "auto",
    download: bool = False,
) -> MultiViewData:
    """:func:`build_multiview` of all of dataset ``name``'s ratings (``source`` picks ML-100K's
    GroupLens or RecBole files, as :func:`fedrec.data.load_dataset`'s option does; both give
    the same result). Only ML-100K's loader keeps titles and demographics; another name is a
    one-line ConfigError."""
    if name != "ml-100k":
        raise ConfigError(f"{name}: multi-view data needs item titles and user demographics; "
                          "only ml-100k's loader keeps them")
    every = load_dataset(name, data_dir, download=download, source=source, split="random",
                         test_fraction=0.0, val_fraction=0.0)
    every = dataclasses.replace(every, meta={**every.meta, "split": "all ratings"})
    return build_multiview(every, split, test_fraction, seed, held_aside_fraction, svd_dim,
                           val_fraction, val_seed)


COLD_START = ("none", "users", "items", "users-items")


def new_items(mv: MultiViewData) -> np.ndarray:
    """The catalogue's new items of a cold-start split (:func:`cold_start`; public: a catalogue
    lists what it has just added), int64; empty for a warm split."""
    return np.asarray(mv.meta.get("cold_start", {}).get("item_ids", []), dtype=np.int64)


def cold_start(mv: MultiViewData, scenario: str, fraction: float = 0.1, seed: int = 0,
               val_fraction: float = VAL_FRACTION) -> MultiViewData:
    """``mv`` re-split for a cold-start scenario (FL-MV-DSSM's CS-Users, CS-Items,
    CS-Users-Items): a seeded random ``fraction`` of the users (``"users"``), of the items
    (``"items"``) or of both (``"users-items"``) is held out of training entirely. Every task row
    (train, valid and test alike) of a held-out user (item) becomes a test row; for
    ``"users-items"`` the test rows are those of a held-out user *and* a held-out item, and the
    rows with only one side held out are dropped (they would tell the model about the other
    side). Training is every row with neither side held out, and validation is carved from it
    again (:func:`fedrec.data.splits.carve_validation`). The views' features and the item
    features are unchanged: a new user has its view features but no interactions in the task.
    ``meta["cold_start"]["item_ids"]`` lists the held-out (new) items, which a catalogue would
    publish. ``"none"`` returns ``mv``. Bad scenario or fraction -> one-line ConfigError."""
    if scenario not in COLD_START:
        raise ConfigError(f"cold_start must be one of {', '.join(COLD_START)}, got {scenario!r}")
    if scenario == "none":
        return mv
    if not 0.0 < float(fraction) < 1.0:
        raise ConfigError(f"cold_fraction must be in (0, 1), got {fraction}")
    task = mv.task
    rng = np.random.default_rng([int(seed), 0xC01D])
    cold_users = np.zeros(task.num_users, dtype=bool)
    cold_items = np.zeros(task.num_items, dtype=bool)
    if scenario in ("users", "users-items"):
        cold_users[rng.choice(task.num_users, round(fraction * task.num_users), replace=False)] = 1
    if scenario in ("items", "users-items"):
        cold_items[rng.choice(task.num_items, round(fraction * task.num_items), replace=False)] = 1
    rows = Interactions.concat(task.train, task.valid, task.test)
    u_cold, i_cold = cold_users[rows.users], cold_items[rows.items]
    warm = ~u_cold & ~i_cold
    test = (u_cold & i_cold) if scenario == "users-items" else ~warm
    meta = {**task.meta, "cold_start": {"scenario": scenario, "fraction": float(fraction),
                                        "seed": int(seed), "users": int(cold_users.sum()),
                                        "items": int(cold_items.sum()),
                                        "item_ids": np.flatnonzero(cold_items).tolist()}}
    meta.pop("validation", None)
    unsplit = InteractionDataset(name=task.name, num_users=task.num_users,
                                 num_items=task.num_items, train=rows.select(np.flatnonzero(warm)),
                                 test=rows.select(np.flatnonzero(test)), meta=meta)
    new_task = carve_validation(unsplit, val_fraction, seed)
    return dataclasses.replace(mv, task=new_task,
                               meta={**mv.meta, "cold_start": meta["cold_start"]})
