"""Feras's host view of a graph: the whole topology, the attributes of the visible nodes only.

In Feras (federated GCN with shared embeddings, issue 17) each of ``N`` hosts sees the whole
graph's edges, but the attributes (features, labels, split membership) only of its *visible*
nodes ``H(n)``: the public nodes and its own private ones. A proportion ``pi`` of the nodes is
private, spread uniformly over the hosts (:func:`assign_private_nodes`), so a fraction

    kappa = (N - 1) / N * pi

of the nodes is invisible to each host (up to rounding: ``round(pi * |V|)`` nodes are private and
dealt round-robin, so host sizes differ by at most one).

:class:`HostView` stores the visible rows only (compact: ``N`` hosts of a Reddit-sized graph do
not hold ``N`` dense copies of the feature matrix) and hands out full-size arrays in which an
unseen node's attribute vector is zero, its label zero (an all-zero row for multi-label data) and
its masks ``False``: :meth:`HostView.features`, :meth:`HostView.labels`, :meth:`HostView.mask`,
for the whole graph or for the nodes of a sampled subgraph. Nothing else of an unseen node is
stored; the topology is public and one read-only copy of ``edge_index`` is shared by all views.

This sits beside :func:`fedrec.data.partition.partition_graph` (each host keeps only its induced
subgraph, as fedavg-gcn uses it), which is unchanged.

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


@dataclass(frozen=True, eq=False)
class HostView:
    """What host ``host`` holds of a graph (module docstring). ``visible_ids`` are the global ids
    of its visible nodes (sorted); ``is_public``, ``x_visible``, ``y_visible`` and the
    ``*_mask_visible`` arrays are indexed like ``visible_ids``."""

    host: int
    num_nodes: int
    edge_index: np.ndarray
    visible_ids: np.ndarray
    is_public: np.ndarray
    x_visible: np.ndarray
    y_visible: np.ndarray
    train_mask_visible: np.ndarray
    val_mask_visible: np.ndarray
    test_mask_visible: np.ndarray
    num_classes: int
    multilabel: bool = False

    @property
    def kappa(self) -> float:
        """The fraction of the graph's nodes this host cannot see."""
        return 1.0 - len(self.visible_ids) / self.num_nodes

    def visible_mask(self) -> np.ndarray:
        """``(num_nodes,)`` bool: which nodes this host sees."""
        out = np.zeros(self.num_nodes, dtype=bool)
        out[self.visible_ids] = True
        return out

    def _rows(self, values: np.ndarray, nodes: np.ndarray | None) -> np.ndarray:
        """``values`` (one row per visible node) spread over ``nodes`` (global ids; all nodes if
        ``None``), zero (or ``False``) where the host cannot see."""
        nodes = np.arange(self.num_nodes) if nodes is None else np.asarray(nodes, np.int64)
        pos = np.searchsorted(self.visible_ids, nodes).clip(max=max(len(self.visible_ids) - 1, 0))
        seen = self.visible_ids[pos] == nodes
        out = np.zeros((len(nodes), *values.shape[1:]), dtype=values.dtype)
        out[seen] = values[pos[seen]]
        return out

    def features(self, nodes: np.ndarray | None = None) -> np.ndarray:
        """Attribute vectors of ``nodes`` (default all), zero for unseen nodes."""
        return self._rows(self.x_visible, nodes)

    def labels(self, nodes: np.ndarray | None = None) -> np.ndarray:
        """Labels of ``nodes`` (default all), zero (a zero row if multi-label) for unseen nodes;
        use :meth:`mask` to know which are real."""
        return self._rows(self.y_visible, nodes)

    def mask(self, split: str, nodes: np.ndarray | None = None) -> np.ndarray:
        """``train``/``val``/``test`` membership of ``nodes`` (default all), ``False`` for unseen
        nodes."""
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
        return self._rows(getattr(self, f"{split}_mask_visible"), nodes)


def feras_host_views(g: GraphDataset, num_hosts: int, private_fraction: float,
                     seed: int = 0) -> list[HostView]:
    """One :class:`HostView` per host, from :func:`assign_private_nodes` (module docstring)."""
    owner = assign_private_nodes(g.num_nodes, num_hosts, private_fraction, seed)
    topology = _frozen(g.edge_index)  # public: one copy shared by every host
    views = []
    for h in range(num_hosts):
        seen = np.flatnonzero((owner == -1) | (owner == h))
        if len(seen) == 0:
            raise ConfigError(
                f"host {h} sees no node ({g.num_nodes} nodes, all private, over {num_hosts} "
                "hosts): use fewer hosts or a private_fraction below 1")
        views.append(HostView(
            host=h, num_nodes=g.num_nodes, edge_index=topology, visible_ids=_frozen(seen),
            is_public=_frozen(owner[seen] == -1), x_visible=_frozen(g.x[seen]),
            y_visible=_frozen(g.y[seen]), train_mask_visible=_frozen(g.train_mask[seen]),
            val_mask_visible=_frozen(g.val_mask[seen]),
            test_mask_visible=_frozen(g.test_mask[seen]), num_classes=g.num_classes,
            multilabel=g.multilabel))
    return views
