"""Ratings as implicit feedback: every rating a positive, re-split per user or kept as loaded.

One definition for every ranking method trained on implicit positives (PTF-FedRec, FedAvg over
NeuMF, the centralized LightGCN/NGCF/NeuMF baselines), so equal options give equal train,
validation and test sets."""

from __future__ import annotations

import numpy as np

from fedrec.data.splits import VAL_FRACTION, carve_validation, per_user_split
from fedrec.data.types import Dataset, InteractionDataset, Interactions
from fedrec.errors import ConfigError

IMPLICIT_SPLITS = ("per-user", "given")
#: The per-user split's defaults (``ImplicitSplitConfig``): what ``implicit: per-user`` of the
#: rating models (:func:`as_implicit`) uses, so that their rows equal the ranking methods'.
DEFAULT_TEST_FRACTION = 0.2
DEFAULT_SPLIT_SEED = 0
#: The ``implicit`` option of the matrix-factorisation baselines (pmf, fcf).
IMPLICIT_CHOICES = ("no", "per-user")


def implicit_dataset(ds: Dataset, split: str, test_fraction: float,
                     split_seed: int) -> InteractionDataset:
    """Every rating is a positive; ``split: per-user`` re-splits train + validation + test per
    user (``test_fraction`` of each user's positives to test, seed ``split_seed``), then carves
    the validation rows from the new training rows again (the loader's ``val_fraction`` and
    seed, :func:`fedrec.data.splits.carve_validation`), so validation stays a part of what the
    algorithm would otherwise train on; ``split: given`` keeps the loader's split."""
    if not hasattr(ds, "train"):
        raise ConfigError("this algorithm needs a rating or interaction dataset")
    if split == "per-user":
        users = np.concatenate([ds.train.users, ds.valid.users, ds.test.users])
        items = np.concatenate([ds.train.items, ds.valid.items, ds.test.items])
        pairs = np.unique(np.stack([users, items], 1), axis=0)
        everything = Interactions(pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64),
                                  np.ones(len(pairs), np.float32))
        train, test = per_user_split(everything, test_fraction, split_seed)
        frac = test_fraction
        described = f"per-user {1 - frac:.0%}/{frac:.0%}, seed {split_seed}"
        out = InteractionDataset(name=ds.name, num_users=ds.num_users, num_items=ds.num_items,
                                 train=train, test=test, meta={**ds.meta, "split": described})
        val = ds.meta.get("validation")
        if not isinstance(val, dict):  # not made by load_dataset: it asked for no validation
            return out
        return carve_validation(out, val.get("fraction", VAL_FRACTION), val.get("seed", 0))
    positive = {name: Interactions(x.users, x.items, np.ones(len(x), np.float32))
                for name, x in (("train", ds.train), ("valid", ds.valid), ("test", ds.test))}
    return InteractionDataset(name=ds.name, num_users=ds.num_users, num_items=ds.num_items,
                              **positive, meta={**ds.meta, "split": ds.meta.get("split")})


def as_implicit(ds: Dataset, implicit: str) -> Dataset:
    """``ds`` as loaded (``implicit: no``), or (``per-user``) as implicit positives on the
    per-user split with the ranking methods' defaults (:func:`implicit_dataset`): the option
    that lets PMF and FCF train BPR on the rows lightgcn, PTF-FedRec and FedGRec use."""
    if implicit == "no":
        return ds
    if implicit != "per-user":
        raise ConfigError(f"implicit must be one of {', '.join(IMPLICIT_CHOICES)}, got "
                          f"{implicit!r}")
    return implicit_dataset(ds, "per-user", DEFAULT_TEST_FRACTION, DEFAULT_SPLIT_SEED)
