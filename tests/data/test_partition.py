"""Per-user client partition (the privacy boundary) and graph host partition."""

from __future__ import annotations

import dataclasses
import gc
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from fedrec.data import (
    GraphDataset,
    InteractionDataset,
    Interactions,
    RatingDataset,
    load_dataset,
    partition_by_user,
    partition_graph,
)
from fedrec.errors import ConfigError


def toy() -> RatingDataset:
    train = Interactions(np.array([2, 0, 2, 1, 0]), np.array([5, 1, 3, 0, 2]),
                         np.array([1, 2, 3, 4, 5], np.float32))  # fmt: skip
    test = Interactions(np.array([0, 3]), np.array([4, 4]), np.array([3, 1], np.float32))
    feats = np.arange(8, dtype=np.float32).reshape(4, 2)
    return RatingDataset("toy", 4, 6, train, test, user_features=feats)


def test_toy_clients_hold_only_their_rows() -> None:
    clients = partition_by_user(toy())
    assert sorted(clients) == [0, 1, 2]  # user 3 has only a test row
    c0 = clients[0]
    assert (c0.train_items.tolist(), c0.train_values.tolist()) == ([1, 2], [2.0, 5.0])
    assert (c0.test_items.tolist(), c0.test_values.tolist()) == ([4], [3.0])
    assert c0.features.tolist() == [0.0, 1.0] and c0.num_items == 6
    assert clients[2].train_items.tolist() == [5, 3] and clients[2].num_test == 0
    with_cold = partition_by_user(toy(), include_test_only=True)
    assert with_cold[3].num_train == 0 and with_cold[3].test_items.tolist() == [4]


def test_client_arrays_are_private_copies() -> None:
    ds = toy()
    c = partition_by_user(ds)[0]
    for arr in (c.train_items, c.train_values, c.test_items, c.test_values, c.features):
        assert arr.base is None and not arr.flags.writeable
        for full in (ds.train.items, ds.train.values, ds.test.items, ds.user_features):
            assert not np.shares_memory(arr, full)
    with pytest.raises(AttributeError):
        c.user = 5  # type: ignore[misc]


def test_gowalla_partition_is_complete(gowalla: InteractionDataset) -> None:
    # Its speed is a benchmark (bench/bench_partition.py), not a timed test.
    clients = partition_by_user(gowalla)
    assert len(clients) == 29_858
    # The loader's 810,128 training rows, 10% of each user's held out for validation.
    assert sum(c.num_train + c.num_valid for c in clients.values()) == 810_128
    assert sum(c.num_valid for c in clients.values()) == len(gowalla.valid) > 0
    assert sum(c.num_test for c in clients.values()) == 217_242
    rng = np.random.default_rng(0)
    for u in rng.choice(29_858, size=20, replace=False).tolist():
        mine = gowalla.train.users == u
        assert np.array_equal(clients[u].train_items, gowalla.train.items[mine])
        assert np.array_equal(clients[u].test_items, gowalla.test.items[gowalla.test.users == u])


def test_ml100k_clients_get_their_feature_row(data_root: Path, need) -> None:
    need(data_root / "ml-100k", "u.data", "u.user", "u.item", "u1.test")
    ds = load_dataset("ml-100k", data_root)
    clients = partition_by_user(ds)
    assert len(clients) == 943
    assert np.array_equal(clients[17].features, ds.user_features[17])


def ring(n: int = 60) -> GraphDataset:
    src = np.arange(n)
    dst = (src + 1) % n
    ei = np.concatenate([np.stack([src, dst]), np.stack([dst, src])], axis=1)
    train = np.arange(n) < 20
    val = (np.arange(n) >= 20) & (np.arange(n) < 40)
    x = np.eye(n, dtype=np.float32)
    return GraphDataset("ring", x, np.arange(n) % 3, ei, train, val, np.arange(n) >= 40, 3)


def test_graph_hosts_public_and_private_nodes() -> None:
    g = ring()
    hosts = partition_graph(g, num_hosts=4, public_fraction=0.25, seed=1)
    assert len(hosts) == 4
    public = [set(h.node_ids[h.is_public].tolist()) for h in hosts]
    assert all(p == public[0] for p in public) and len(public[0]) == 15
    private = [set(h.node_ids[~h.is_public].tolist()) for h in hosts]
    assert sum(len(p) for p in private) == 45 and len(set().union(*private)) == 45
    for h in hosts:
        assert np.all(np.diff(h.node_ids) > 0)
        assert np.array_equal(h.x, g.x[h.node_ids]) and np.array_equal(h.y, g.y[h.node_ids])
        assert np.array_equal(h.train_mask, g.train_mask[h.node_ids])
        # edges are exactly the induced subgraph, in local ids
        glob = h.node_ids[h.edge_index]
        mine = np.isin(g.edge_index, h.node_ids).all(axis=0)
        assert sorted(map(tuple, glob.T.tolist())) == sorted(
            map(tuple, g.edge_index[:, mine].T.tolist())
        )
    again = partition_graph(g, num_hosts=4, public_fraction=0.25, seed=1)
    assert all(np.array_equal(a.node_ids, b.node_ids) for a, b in zip(hosts, again, strict=True))


def test_graph_partition_on_cora(data_root: Path, need) -> None:
    need(data_root / "planetoid", "ind.cora.x", "ind.cora.allx", "ind.cora.graph")
    g = load_dataset("cora", data_root)
    hosts = partition_graph(g, 5, public_fraction=0.1, seed=0)
    n_public = int(hosts[0].is_public.sum())
    assert n_public == round(0.1 * 2708)
    assert sum(h.num_nodes - n_public for h in hosts) == 2708 - n_public
    assert (
        sum(int(h.train_mask[~h.is_public].sum()) for h in hosts)
        + int(hosts[0].train_mask[hosts[0].is_public].sum())
        == 140
    )


def test_graph_hosts_share_the_public_rows_and_own_their_private_ones(
        data_root: Path, need) -> None:
    """Issue 42: each host held its own copy of every public node's features (7.4 MiB a host
    on Cora at public_fraction 0.5). The public features and labels are now one read-only copy
    every host references; a host owns only its private rows, which no other host's partition
    reaches, and building 200 hosts costs far less than 200 copies of the public rows."""
    need(data_root / "planetoid", "ind.cora.x", "ind.cora.allx", "ind.cora.graph")
    g = load_dataset("cora", data_root)
    hosts = partition_graph(g, 6, public_fraction=0.5, seed=0)
    public_bytes = hosts[0].x[hosts[0].is_public].nbytes
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        many = partition_graph(g, 200, public_fraction=0.5, seed=0)
        per_host = (tracemalloc.get_traced_memory()[0] - before - public_bytes) / 200
    finally:
        tracemalloc.stop()
    assert len(many) == 200 and per_host < public_bytes / 20, (per_host, public_bytes)
    arrays = [f.name for f in dataclasses.fields(hosts[0])
              if isinstance(getattr(hosts[0], f.name), np.ndarray)]
    shared = ["x_public", "y_public"]
    for h in hosts:
        assert all(getattr(h, f) is getattr(hosts[0], f) for f in shared)
        assert np.array_equal(h.x, g.x[h.node_ids]) and np.array_equal(h.y, g.y[h.node_ids])
        for f in arrays:
            a = getattr(h, f)
            assert a.base is None and not a.flags.writeable, f
            assert not np.shares_memory(a, g.x) and not np.shares_memory(a, g.y)
        for other in hosts:
            if other is not h:
                for f in set(arrays) - set(shared):
                    assert not any(np.shares_memory(getattr(h, f), getattr(other, o))
                                   for o in arrays), f


def test_bad_graph_arguments() -> None:
    with pytest.raises(ConfigError, match="num_hosts"):
        partition_graph(ring(), 0)
    with pytest.raises(ConfigError, match="public_fraction"):
        partition_graph(ring(), 2, public_fraction=1.5)


@pytest.mark.parametrize("name", ["ml100k", "gowalla_500"])
def test_client_data_holds_only_its_own_rows(name: str, request: pytest.FixtureRequest) -> None:
    ds = request.getfixturevalue(name)
    clients = partition_by_user(ds)
    assert sorted(clients) == ds.user_ids().tolist()
    order = np.argsort(ds.train.users, kind="stable")
    users, items, values = ds.train.users[order], ds.train.items[order], ds.train.values[order]
    starts = np.searchsorted(users, np.arange(ds.num_users + 1))
    def by_user(part):  # one held-out part's item ids, cut per user
        o = np.argsort(part.users, kind="stable")
        cuts = np.searchsorted(part.users[o], np.arange(ds.num_users + 1))
        return part.items[o], cuts

    (t_items, t_starts), (v_items, v_starts) = by_user(ds.test), by_user(ds.valid)
    assert len(ds.valid) > 0 or name == "gowalla_500"  # a slice made without load_dataset
    total = 0
    held = ("test_items", "test_values", "valid_items", "valid_values")
    for u, c in clients.items():
        assert c.user == u and c.num_items == ds.num_items
        lo, hi = starts[u], starts[u + 1]
        assert np.array_equal(c.train_items, items[lo:hi])  # exactly this user's rows, in order
        assert np.array_equal(c.train_values, values[lo:hi])
        assert np.array_equal(c.test_items, t_items[t_starts[u] : t_starts[u + 1]])
        assert np.array_equal(c.valid_items, v_items[v_starts[u] : v_starts[u + 1]])
        for arr in (c.train_items, c.train_values, *(getattr(c, k) for k in held)):
            assert arr.base is None and not arr.flags.writeable  # a private copy, not a view
        total += c.num_train
    assert total == len(ds.train)  # nothing dropped, nothing duplicated
    # The client object reaches nothing of the full dataset.
    c = clients[int(ds.user_ids()[0])]
    for arr in (c.train_items, c.train_values, *(getattr(c, k) for k in held)):
        for part in (ds.train, ds.valid, ds.test):
            for full in (part.items, part.values):
                assert not np.shares_memory(arr, full)
    assert {f.name for f in dataclasses.fields(c)} == {
        "user", "train_items", "train_values", "valid_items", "valid_values", "test_items",
        "test_values", "features", "num_items",
    }
