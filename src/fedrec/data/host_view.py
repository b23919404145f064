"""Feras's host view of a graph: the whole topology, the attributes of the visible nodes only.

In Feras (federated GCN with shared embeddings, issue 17) each of ``N`` hosts sees the whole
graph's edges, but the attributes (features, labels, split membership) only of its *visible*
nodes ``H(n)``: the public nodes and its own private ones. A proportion ``pi`` of the nodes is
private, spread uniformly over the hosts (:func:`assign_private_nodes`), so a fraction

    kappa = (N - 1) / N * pi

of the nodes is invisible to each host (up to rounding: ``round(pi * |V|)`` nodes are private and
dealt round-robin, so host sizes differ by at most one).

What is public is held once: the topology (``edge_index``) and the public nodes' ids,
attributes, labels and split membership are read-only arrays that every view of one
:func:`feras_host_views` call *references* (the same objects, so ``N`` hosts cost one copy of
them, not ``N``); each :class:`HostView` owns a copy of its own private nodes' rows only. No
view references another host's private node: a host's data reaches nothing private to anyone
else (``tests/data/test_host_view.py``, ``tests/conformance``). :meth:`HostView.features`,
:meth:`HostView.labels` and :meth:`HostView.mask` hand out full-size arrays (for the whole graph
or for the nodes of a sampled subgraph) in which an unseen node's attribute vector is zero, its
label zero (an all-zero row for multi-label data) and its masks ``False``. Nothing else of an
unseen node is stored.

This sits beside :func:`fedrec.data.partition.partition_graph` (each host keeps only its induced
subgraph, as fedavg-gcn uses it; its public rows are shared the same way).

Bad input: fewer than 2 hosts (with one host nothing is private from anyone: train centrally),
``pi`` outside ``[0, 1]`` and a host left with no visible node (``pi = 1`` and fewer nodes than
hosts) are one-line ConfigErrors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrec.data.partition import _own as _frozen  # a read-only copy owning its memory
from fedrec.data.types import GraphDataset
from fedrec.errors import ConfigError

SPLITS = ("train", "val", "test")


def assign_private_nodes(num_nodes: int, num_hosts: int, private_fraction: float,
                         seed: int = 0) -> np.ndarray:
    """Owner of every node: ``-1`` for public, else the host ``0..num_hosts-1`` it is private to.

    ``round(private_fraction * num_nodes)`` nodes, drawn uniformly at random (seeded), are
    private; they are dealt round-robin in that random order, so every host gets ``floor`` or
    ``ceil`` of ``n_private / num_hosts`` of them."""
    if isinstance(num_hosts, bool) or not isinstance(num_hosts, int | np.integer) \
            or num_hosts < 2:
        raise ConfigError(f"Feras needs at least 2 hosts, got num_hosts={num_hosts!r} (with one "
                          "host nothing is private from anyone: train centrally)")
    if not 0.0 <= float(private_fraction) <= 1.0:
        raise ConfigError(f"private_fraction (pi) must be in [0, 1], got {private_fraction}")
    perm = np.random.default_rng(seed).permutation(num_nodes)
    n_private = round(float(private_fraction) * num_nodes)
    owner = np.full(num_nodes, -1, dtype=np.int64)
    owner[perm[:n_private]] = np.arange(n_private) % num_hosts
    return owner


#: The per-node attribute arrays of a view, each held in two parts (``*_public``, shared by
#: every view, and ``*_private``, the host's own), indexed like ``public_ids`` and
#: ``private_ids``.
ATTRIBUTES = ("x", "y", "train_mask", "val_mask", "test_mask")


@dataclass(frozen=True, eq=False)
class HostView:
    """What host ``host`` holds of a graph (module docstring).

    ``public_ids`` (sorted global ids) and the ``*_public`` arrays indexed like them are the
    public nodes' rows: the same read-only objects in every view built together. ``private_ids``
    (sorted) and the ``*_private`` arrays are this host's own private nodes' rows, a copy owned
    by this view alone."""

    host: int
    num_nodes: int
    edge_index: np.ndarray
    public_ids: np.ndarray
    x_public: np.ndarray
    y_public: np.ndarray
    train_mask_public: np.ndarray
    val_mask_public: np.ndarray
    test_mask_public: np.ndarray
    private_ids: np.ndarray
    x_private: np.ndarray
    y_private: np.ndarray
    train_mask_private: np.ndarray
    val_mask_private: np.ndarray
    test_mask_private: np.ndarray
    num_classes: int
    multilabel: bool = False

    @property
    def num_visible(self) -> int:
        return len(self.public_ids) + len(self.private_ids)

    @property
    def kappa(self) -> float:
        """The fraction of the graph's nodes this host cannot see."""
        return 1.0 - self.num_visible / self.num_nodes

    @property
    def visible_ids(self) -> np.ndarray:
        """The global ids of the visible nodes, sorted (a new array)."""
        return np.union1d(self.public_ids, self.private_ids)

    @property
    def is_public(self) -> np.ndarray:
        """Indexed like :attr:`visible_ids`: whether each visible node is public."""
        return np.isin(self.visible_ids, self.public_ids, assume_unique=True)

    @property
    def num_train(self) -> int:
        """This host's labelled training nodes (public and its own private ones)."""
        return int(self.train_mask_public.sum()) + int(self.train_mask_private.sum())

    def visible_mask(self) -> np.ndarray:
        """``(num_nodes,)`` bool: which nodes this host sees."""
        out = np.zeros(self.num_nodes, dtype=bool)
        out[self.public_ids] = True
        out[self.private_ids] = True
        return out

    def _rows(self, name: str, nodes: np.ndarray | None) -> np.ndarray:
        """Attribute ``name``'s rows of ``nodes`` (global ids; all nodes if ``None``), from the
        public and the private part, zero (or ``False``) where the host cannot see."""
        nodes = np.arange(self.num_nodes) if nodes is None else np.asarray(nodes, np.int64)
        public = getattr(self, f"{name}_public")
        out = np.zeros((len(nodes), *public.shape[1:]), dtype=public.dtype)
        for ids, values in ((self.public_ids, public),
                            (self.private_ids, getattr(self, f"{name}_private"))):
            if len(ids) == 0:
                continue
            pos = np.searchsorted(ids, nodes).clip(max=len(ids) - 1)
            seen = ids[pos] == nodes
            out[seen] = values[pos[seen]]
        return out

    def features(self, nodes: np.ndarray | None = None) -> np.ndarray:
        """Attribute vectors of ``nodes`` (default all), zero for unseen nodes."""
        return self._rows("x", nodes)

    def labels(self, nodes: np.ndarray | None = None) -> np.ndarray:
        """Labels of ``nodes`` (default all), zero (a zero row if multi-label) for unseen nodes;
        use :meth:`mask` to know which are real."""
        return self._rows("y", nodes)

    def mask(self, split: str, nodes: np.ndarray | None = None) -> np.ndarray:
        """``train``/``val``/``test`` membership of ``nodes`` (default all), ``False`` for unseen
        nodes."""
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
        return self._rows(f"{split}_mask", nodes)


def _node_rows(g: GraphDataset, ids: np.ndarray, part: str) -> dict[str, np.ndarray]:
    """The ``*_{part}`` fields of a view: read-only copies of ``g``'s rows of ``ids``."""
    return {f"{part}_ids": _frozen(ids),
            **{f"{name}_{part}": _frozen(getattr(g, name)[ids]) for name in ATTRIBUTES}}


def feras_host_views(g: GraphDataset, num_hosts: int, private_fraction: float,
                     seed: int = 0) -> list[HostView]:
    """One :class:`HostView` per host, from :func:`assign_private_nodes` (module docstring): the
    topology and the public nodes' rows copied once and shared by all views, each host's
    private rows copied into its own view only."""
    owner = assign_private_nodes(g.num_nodes, num_hosts, private_fraction, seed)
    topology = _frozen(g.edge_index)  # public: one copy shared by every host
    public = _node_rows(g, np.flatnonzero(owner == -1), "public")
    # Every host's private nodes, in id order, by one stable sort (not a pass per host).
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(num_hosts + 1))
    views = []
    for h in range(num_hosts):
        mine = order[bounds[h]:bounds[h + 1]]
        if len(mine) == 0 and len(public["public_ids"]) == 0:
            raise ConfigError(
                f"host {h} sees no node ({g.num_nodes} nodes, all private, over {num_hosts} "
                "hosts): use fewer hosts or a private_fraction below 1")
        views.append(HostView(host=h, num_nodes=g.num_nodes, edge_index=topology, **public,
                              **_node_rows(g, mine, "private"), num_classes=g.num_classes,
                              multilabel=g.multilabel))
    return views
