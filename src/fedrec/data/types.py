"""Typed containers for the three kinds of data fedrec works on.

* :class:`RatingDataset` -- explicit ratings (ML-100K, ML-1M, ML-10M, Douban, Flixster,
  YahooMusic).
* :class:`InteractionDataset` -- implicit feedback (Gowalla, Yelp2018, Amazon-Book, Steam-200K).
* :class:`GraphDataset` -- node classification (Cora, CiteSeer, PubMed, GraphSAINT
  PPI/Flickr/Reddit).

All ids are dense, zero-based ``int64``; every array is a NumPy array so that the containers are
cheap to pickle into a client process and independent of the torch device.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class Interactions:
    """A bag of (user, item, value) triples.

    ``value`` is the rating, or 1.0 for implicit feedback.
    """

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.users)
        if len(self.items) != n or len(self.values) != n:
            raise ValueError(
                f"interactions have mismatched lengths: users {n}, items {len(self.items)}, "
                f"values {len(self.values)}"
            )

    def __len__(self) -> int:
        return len(self.users)

    def select(self, mask_or_index: np.ndarray) -> Interactions:
        return Interactions(
            self.users[mask_or_index], self.items[mask_or_index], self.values[mask_or_index]
        )

    def to_csr(self, num_users: int, num_items: int) -> sp.csr_matrix:
        """User x item matrix of the values (duplicates are summed)."""
        return sp.csr_matrix(
            (self.values.astype(np.float32), (self.users, self.items)), shape=(num_users, num_items)
        )

    @staticmethod
    def concat(*parts: Interactions) -> Interactions:
        """The rows of ``parts``, one after the other."""
        return Interactions(*(np.concatenate([getattr(p, f) for p in parts])
                              for f in ("users", "items", "values")))


def no_rows() -> Interactions:
    """An empty bag of triples (the validation rows of a dataset that has none)."""
    return Interactions(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))


#: The held-out parts an evaluation can score: ``valid`` (carved from the training rows, what
#: settings are chosen on) and ``test`` (what is reported, never read to choose anything).
EVAL_SPLITS = ("valid", "test")

#: Per evaluated part, the parts whose items count as the user's known interactions (excluded
#: from a full ranking). Validation ranks everything not trained on: excluding the test items
#: too would make the validation metric depend on the test rows. Test excludes the training
#: and the validation items (both observed before test time).
KNOWN_SPLITS: dict[str, tuple[str, ...]] = {"valid": ("train",), "test": ("train", "valid")}


def check_split(split: str) -> str:
    if split not in EVAL_SPLITS:
        raise ValueError(f"unknown evaluation split {split!r}; use one of {EVAL_SPLITS}")
    return split


@dataclass(frozen=True)
class _RecDataset:
    name: str
    num_users: int
    num_items: int
    train: Interactions
    test: Interactions
    user_features: np.ndarray | None = None
    item_features: np.ndarray | None = None
    user_graph: sp.csr_matrix | None = None
    item_graph: sp.csr_matrix | None = None
    meta: dict = field(default_factory=dict)
    #: Rows carved from the loader's training rows (:func:`fedrec.data.splits.carve_validation`,
    #: applied by :func:`~fedrec.data.load_dataset`); ``train`` no longer holds them.
    valid: Interactions = field(default_factory=no_rows)

    def user_ids(self) -> np.ndarray:
        """Users with at least one training row: each becomes one client."""
        return np.unique(self.train.users)

    def known_and_target(self, split: str) -> tuple[Interactions, Interactions]:
        """``(known rows, scored rows)`` of an evaluation on ``split`` (see
        :data:`KNOWN_SPLITS`)."""
        known = Interactions.concat(*(getattr(self, s) for s in KNOWN_SPLITS[check_split(split)]))
        return known, getattr(self, split)


@dataclass(frozen=True)
class RatingDataset(_RecDataset):
    """Explicit ratings in ``[rating_min, rating_max]``."""

    rating_min: float = 1.0
    rating_max: float = 5.0


@dataclass(frozen=True)
class InteractionDataset(_RecDataset):
    """Implicit feedback: every listed (user, item) pair is a positive."""


@dataclass(frozen=True)
class GraphDataset:
    """A node-classification graph.

    ``y`` is ``(N,)`` class ids, or ``(N, C)`` 0/1 for multi-label data (PPI). ``edge_index`` is
    ``(2, E)`` with both directions of every undirected edge.
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    edge_index: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    num_classes: int
    multilabel: bool = False
    meta: dict = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])


Dataset = RatingDataset | InteractionDataset | GraphDataset
