"""Typed containers for the three kinds of data fedrec works on.

* :class:`RatingDataset` -- explicit ratings (ML-100K, ML-1M, ML-10M, Douban, Flixster,
  YahooMusic).
* :class:`InteractionDataset` -- implicit feedback (Gowalla, Yelp2018, Amazon-Book, Steam-200K).
* :class:`GraphDataset` -- node classification (Cora, CiteSeer, PubMed, GraphSAINT
  PPI/Flickr/Reddit).

All ids are dense, zero-based ``int64``; every array is a NumPy array so that the containers are
cheap to pickle into a client process and independent of the torch device.

**Public metadata.** A server (or a service party) of a deployment never loads the data: each
type says which facts about it are public (:meth:`public_meta`: a catalogue's size, a rating
scale, a graph's node, feature and class counts; never a rating, a label or an edge) and builds
a *metadata-only* dataset from them (:func:`metadata_dataset`) on which an algorithm's
``build_job`` yields the server logic. A recommendation metadata dataset holds one placeholder
training row per registered client, so that ``partition_by_user`` yields the client ids and
nothing else; a graph one holds no edge and zero-strided (memory-free) zero features and labels.
Either is marked ``meta["metadata_only"]``; its placeholder rows are never sent anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

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

    KIND: ClassVar[str] = ""

    def user_ids(self) -> np.ndarray:
        """Users with at least one training row: each becomes one client."""
        return np.unique(self.train.users)

    def public_meta(self) -> dict[str, Any]:
        """The public facts a server may hold (module docstring): no rating, no statistic."""
        return {"kind": self.KIND, "name": self.name, "num_users": int(self.num_users),
                "num_items": int(self.num_items)}

    @classmethod
    def probe_meta(cls) -> dict[str, Any]:
        """The public metadata of a tiny dataset of this type (to ask a job what parties it
        declares without any data)."""
        return {"kind": cls.KIND, "name": "probe", "num_users": 2, "num_items": 4}

    @classmethod
    def from_public_meta(cls, meta: dict[str, Any], client_ids: Sequence[int] = ()) -> Any:
        """A metadata-only dataset (module docstring): ``meta`` and one placeholder training
        row per client of ``client_ids``."""
        ids = np.asarray(sorted(client_ids), dtype=np.int64)
        train = Interactions(ids, np.zeros(len(ids), dtype=np.int64),
                             np.ones(len(ids), np.float32))
        extra = {k: meta[k] for k in meta
                 if k not in ("kind", "name", "num_users", "num_items")}
        return cls(name=meta["name"], num_users=meta["num_users"],
                   num_items=meta["num_items"], train=train, test=no_rows(),
                   meta={"metadata_only": True}, **extra)

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

    KIND: ClassVar[str] = "rating"

    def public_meta(self) -> dict[str, Any]:
        return {**super().public_meta(), "rating_min": float(self.rating_min),
                "rating_max": float(self.rating_max)}

    @classmethod
    def probe_meta(cls) -> dict[str, Any]:
        return {**super().probe_meta(), "rating_min": 1.0, "rating_max": 5.0}


@dataclass(frozen=True)
class InteractionDataset(_RecDataset):
    """Implicit feedback: every listed (user, item) pair is a positive."""

    KIND: ClassVar[str] = "interaction"


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

    KIND: ClassVar[str] = "graph"

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.x.shape[1])

    def public_meta(self) -> dict[str, Any]:
        """The public facts a server may hold (module docstring): the node, feature and class
        counts; no feature, label, edge or split."""
        return {"kind": self.KIND, "name": self.name, "num_nodes": self.num_nodes,
                "num_features": self.num_features, "num_classes": int(self.num_classes),
                "multilabel": bool(self.multilabel)}

    @classmethod
    def probe_meta(cls) -> dict[str, Any]:
        return {"kind": cls.KIND, "name": "probe", "num_nodes": 4, "num_features": 3,
                "num_classes": 2, "multilabel": False}

    @classmethod
    def from_public_meta(cls, meta: dict[str, Any],
                         client_ids: Sequence[Any] = ()) -> GraphDataset:
        """A metadata-only graph (module docstring): no edge, and features, labels and masks
        of the right shapes that are zero-strided views of one zero (no memory per node).
        ``client_ids`` is not used: a graph's parties come from the job's configuration."""
        n, f, c = int(meta["num_nodes"]), int(meta["num_features"]), int(meta["num_classes"])
        multilabel = bool(meta.get("multilabel", False))

        def zeros(shape: tuple[int, ...], dtype: type) -> np.ndarray:
            return np.broadcast_to(np.zeros((), dtype=dtype), shape)

        return cls(name=meta["name"], x=zeros((n, f), np.float32),
                   y=zeros((n, c) if multilabel else (n,), np.int64),
                   edge_index=np.empty((2, 0), dtype=np.int64),
                   train_mask=zeros((n,), bool), val_mask=zeros((n,), bool),
                   test_mask=zeros((n,), bool), num_classes=c, multilabel=multilabel,
                   meta={"metadata_only": True})


Dataset = RatingDataset | InteractionDataset | GraphDataset
_TYPES: dict[str, type] = {t.KIND: t for t in (RatingDataset, InteractionDataset, GraphDataset)}


def dataset_type(kind: str) -> type:
    """The container type of a dataset kind (``rating``, ``interaction``, ``graph``)."""
    if kind not in _TYPES:
        raise ValueError(f"unknown dataset kind {kind!r}; use one of {', '.join(_TYPES)}")
    return _TYPES[kind]


def public_meta(ds: Dataset) -> dict[str, Any]:
    """``ds``'s public metadata (its type's :meth:`public_meta`)."""
    return ds.public_meta()


def dataset_sizes(ds: Dataset) -> dict[str, Any]:
    """What a memory estimate reads of ``ds`` (:attr:`fedrec.algorithms.AlgorithmSpec.
    memory_estimate`): its public metadata and, for a graph, ``num_edges`` (the columns of its
    ``edge_index``). The experimenter's figures, sent to no party."""
    sizes = public_meta(ds)
    if isinstance(ds, GraphDataset):
        sizes["num_edges"] = int(ds.edge_index.shape[1])
    return sizes


def metadata_dataset(meta: dict[str, Any], client_ids: Sequence[Any] = ()) -> Dataset:
    """The metadata-only dataset of ``meta`` (module docstring), of the type ``meta["kind"]``
    names, with placeholder rows for ``client_ids`` where the type needs them."""
    return dataset_type(str(meta["kind"])).from_public_meta(meta, client_ids)


def is_metadata_only(ds: Dataset) -> bool:
    """Whether ``ds`` holds public metadata only (:func:`metadata_dataset`)."""
    return bool(ds.meta.get("metadata_only", False))


#: Where a metadata-only dataset's ``meta`` carries a job's public facts (what a client's node
#: reports beside the metadata: :attr:`fedrec.algorithms.base.FederatedJob.public_facts`).
FACTS = "facts"
#: Marks the probe dataset a deployment builds a job on only to learn the roles it declares.
PROBE = "probe"


def public_facts(ds: Dataset) -> dict[str, Any] | None:
    """The public facts a metadata-only dataset carries; ``{}`` for the probe (asked only what
    roles a job declares, it has none); None for a dataset without them (a builder with data
    computes them itself)."""
    meta = getattr(ds, "meta", None) or {}
    if meta.get(PROBE):
        return {}
    return meta.get(FACTS)
