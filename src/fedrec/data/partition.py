"""Splitting a dataset into per-party pieces: one client per user, or graph hosts.

Privacy boundary: a :class:`ClientData` holds copies of exactly one user's rows (no views into
the full arrays, so no other user's data is reachable from it), and a :class:`HostPartition`
holds only its own nodes, their features/labels and the edges among them. The public nodes'
features and labels, which every host holds, are one read-only copy that every host's
partition references (``N`` hosts do not hold ``N`` copies of them); a host's private nodes'
rows are its own copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedrec.data.types import (
    KNOWN_SPLITS,
    GraphDataset,
    InteractionDataset,
    Interactions,
    RatingDataset,
    check_split,
)
from fedrec.errors import ConfigError


def _own(a: np.ndarray) -> np.ndarray:
    """A read-only copy that owns its memory (``.base is None``)."""
    out = np.array(a, copy=True)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class ClientData:
    """One user's data: train, validation and test rows (item ids and values) and the user's
    feature row. The validation rows are private to the client like its test rows: the client
    scores them itself when asked to evaluate on ``valid``.

    ``num_items`` (catalogue size) is public metadata every client needs to score items.
    """

    user: int
    train_items: np.ndarray
    train_values: np.ndarray
    test_items: np.ndarray
    test_values: np.ndarray
    features: np.ndarray | None
    num_items: int
    valid_items: np.ndarray = field(default_factory=lambda: _own(np.empty(0, np.int64)))
    valid_values: np.ndarray = field(default_factory=lambda: _own(np.empty(0, np.float32)))

    @property
    def num_train(self) -> int:
        return len(self.train_items)

    @property
    def num_test(self) -> int:
        return len(self.test_items)

    @property
    def num_valid(self) -> int:
        return len(self.valid_items)

    def rows(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """``(items, values)`` of one part: ``train``, ``valid`` or ``test``."""
        if split != "train":
            check_split(split)
        return getattr(self, f"{split}_items"), getattr(self, f"{split}_values")

    def known_items(self, split: str) -> np.ndarray:
        """The items a ranking evaluated on ``split`` excludes
        (:data:`fedrec.data.types.KNOWN_SPLITS`)."""
        return np.concatenate([self.rows(s)[0] for s in KNOWN_SPLITS[check_split(split)]])


def _sorted_by_user(inter: Interactions, num_users: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(items, values)`` sorted by user (stable within a user) and, per user id, the start
    and end of its rows there: one argsort per part; a client's chunk is then a slice."""
    order = np.argsort(inter.users, kind="stable")
    su = inter.users[order]
    ids = np.arange(num_users)
    return (inter.items[order], inter.values[order], np.searchsorted(su, ids, "left"),
            np.searchsorted(su, ids, "right"))


def partition_by_user(
    ds: RatingDataset | InteractionDataset, include_test_only: bool = False
) -> dict[int, ClientData]:
    """``{user id: ClientData}`` for every user with at least one training row (the clients of
    :meth:`user_ids`); with ``include_test_only`` also users that only have test rows.

    Validation and test rows of users without training rows are dropped unless
    ``include_test_only``. Vectorised (one argsort per part), then each user's slice is copied.
    """
    n_users = int(max(ds.num_users, *(int(x.users.max(initial=-1)) + 1
                                      for x in (ds.train, ds.valid, ds.test))))
    parts = [_sorted_by_user(getattr(ds, name), n_users) for name in ("train", "valid", "test")]
    tr_users = np.unique(ds.train.users)
    clients_users = np.union1d(tr_users, ds.test.users) if include_test_only else tr_users
    feats = ds.user_features
    out: dict[int, ClientData] = {}
    for u in clients_users.tolist():
        (tr_i, tr_v), (va_i, va_v), (te_i, te_v) = (
            (_own(items[lo[u]:hi[u]]), _own(vals[lo[u]:hi[u]]))
            for items, vals, lo, hi in parts)
        out[u] = ClientData(
            user=u, train_items=tr_i, train_values=tr_v, test_items=te_i, test_values=te_v,
            valid_items=va_i, valid_values=va_v,
            features=None if feats is None else _own(feats[u]), num_items=ds.num_items,
        )
    return out


@dataclass(frozen=True, eq=False)
class HostPartition:
    """One graph host's share. ``node_ids`` are global ids (sorted); everything else is indexed
    locally (``0..len(node_ids)-1``). ``is_public[k]`` marks node ``k`` as public (held by every
    host) rather than private to this host.

    The features and labels are held in two parts: ``x_public``/``y_public``, the public nodes'
    rows in id order, the same read-only arrays in every host's partition, and
    ``x_private``/``y_private``, this host's private nodes' rows in id order, its own copy.
    :attr:`x` and :attr:`y` put them together in local order (a new array on each access)."""

    host: int
    node_ids: np.ndarray
    x_public: np.ndarray
    y_public: np.ndarray
    x_private: np.ndarray
    y_private: np.ndarray
    edge_index: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    is_public: np.ndarray
    num_classes: int
    multilabel: bool = False

    @property
    def num_nodes(self) -> int:
        return len(self.node_ids)

    def _local(self, public: np.ndarray, private: np.ndarray) -> np.ndarray:
        out = np.empty((self.num_nodes, *public.shape[1:]), dtype=public.dtype)
        out[self.is_public] = public
        out[~self.is_public] = private
        return out

    @property
    def x(self) -> np.ndarray:
        """``(num_nodes, F)`` features in local order."""
        return self._local(self.x_public, self.x_private)

    @property
    def y(self) -> np.ndarray:
        """Labels in local order."""
        return self._local(self.y_public, self.y_private)


def assign_nodes(
    num_nodes: int, num_hosts: int, public_fraction: float = 0.1, seed: int = 0
) -> np.ndarray:
    """Owner of every node: ``-1`` for public nodes, else the host id ``0..num_hosts-1``.

    ``round(public_fraction * num_nodes)`` nodes are drawn uniformly at random as public; the rest
    are shuffled and dealt round-robin, so host sizes differ by at most one.
    """
    if num_hosts < 1:
        raise ConfigError(f"num_hosts must be at least 1, got {num_hosts}")
    if not 0.0 <= public_fraction < 1.0:
        raise ConfigError(f"public_fraction must be in [0, 1), got {public_fraction}")
    perm = np.random.default_rng(seed).permutation(num_nodes)
    n_public = round(public_fraction * num_nodes)
    owner = np.empty(num_nodes, dtype=np.int64)
    owner[perm[:n_public]] = -1
    owner[perm[n_public:]] = np.arange(num_nodes - n_public) % num_hosts
    return owner


def partition_graph(
    g: GraphDataset, num_hosts: int, public_fraction: float = 0.1, seed: int = 0
) -> list[HostPartition]:
    """Split ``g`` among ``num_hosts`` hosts with shared public nodes (Feras-style setting).

    Choice made here: a random ``public_fraction`` of the nodes is public and is given to *every*
    host (features, labels and masks included; the features and labels as one read-only copy
    that every host's partition references); every other node is private to exactly one host,
    chosen uniformly at random (seeded, balanced; see :func:`assign_nodes`). A host gets the
    subgraph induced by its private plus the public nodes, so edges between private nodes of
    different hosts are dropped, while private-public and public-public edges appear in every
    host that holds both ends. No METIS: random assignment keeps hosts statistically alike.
    """
    n = g.num_nodes
    owner = assign_nodes(n, num_hosts, public_fraction, seed)
    public = owner == -1
    shared = np.flatnonzero(public)
    x_public, y_public = _own(g.x[shared]), _own(g.y[shared])  # once, for every host
    src, dst = g.edge_index
    hosts = []
    local = np.empty(n, dtype=np.int64)
    # Every host's private nodes, in id order, by one stable sort (not a pass per host).
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(num_hosts + 1))
    for h in range(num_hosts):
        own = order[bounds[h]:bounds[h + 1]]
        mine = public.copy()
        mine[own] = True
        nodes = np.flatnonzero(mine)
        local[nodes] = np.arange(len(nodes))
        keep = mine[src] & mine[dst]
        hosts.append(
            HostPartition(
                host=h,
                node_ids=_own(nodes),
                x_public=x_public,
                y_public=y_public,
                x_private=_own(g.x[own]),
                y_private=_own(g.y[own]),
                edge_index=_own(np.stack([local[src[keep]], local[dst[keep]]])),
                train_mask=_own(g.train_mask[nodes]),
                val_mask=_own(g.val_mask[nodes]),
                test_mask=_own(g.test_mask[nodes]),
                is_public=_own(public[nodes]),
                num_classes=g.num_classes,
                multilabel=g.multilabel,
            )
        )
    return hosts
