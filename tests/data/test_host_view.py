"""Feras's host views: whole topology, attributes of visible nodes only, kappa on Cora."""

from __future__ import annotations

import dataclasses
import gc
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from fedrec.data import (
    GraphDataset,
    HostView,
    assign_private_nodes,
    feras_host_views,
    load_dataset,
)
from fedrec.errors import ConfigError


def toy(n: int = 40, multilabel: bool = False) -> GraphDataset:
    rng = np.random.default_rng(0)
    src = np.arange(n)
    ei = np.concatenate([np.stack([src, (src + 1) % n]), np.stack([(src + 1) % n, src])], 1)
    y = (rng.random((n, 3)) < 0.5).astype(np.int64) if multilabel else np.arange(n) % 3
    idx = np.arange(n)
    return GraphDataset("toy", rng.random((n, 5)).astype(np.float32) + 1.0, y, ei, idx < 10,
                        (idx >= 10) & (idx < 20), idx >= 20, 3, multilabel=multilabel)


@pytest.fixture(scope="module")
def cora(data_root: Path) -> GraphDataset:
    if not (data_root / "planetoid/ind.cora.graph").is_file():
        pytest.skip("staged cora not available")
    return load_dataset("cora", data_root)


@pytest.mark.parametrize("num_hosts", [2, 4, 8])
@pytest.mark.parametrize("pi", [0.2, 0.5, 0.8])
def test_kappa_on_cora(cora: GraphDataset, num_hosts: int, pi: float) -> None:
    views = feras_host_views(cora, num_hosts, pi, seed=3)
    n = cora.num_nodes
    want = (num_hosts - 1) / num_hosts * pi
    for v in views:
        assert abs(v.kappa - want) <= 2 / n  # rounding of pi*n and of the round-robin deal
        assert v.kappa == pytest.approx(1 - v.visible_mask().mean())
        assert v.edge_index is views[0].edge_index  # the whole topology, one shared copy
        assert np.array_equal(v.edge_index, cora.edge_index)
    public = [set(v.visible_ids[v.is_public].tolist()) for v in views]
    assert all(p == public[0] for p in public) and len(public[0]) == n - round(pi * n)
    private = [set(v.visible_ids[~v.is_public].tolist()) for v in views]
    assert sum(map(len, private)) == len(set().union(*private)) == round(pi * n)


def test_view_holds_nothing_of_unseen_nodes(cora: GraphDataset) -> None:
    views = feras_host_views(cora, 4, 0.5, seed=1)
    v = views[2]
    seen = v.visible_mask()
    x, y = v.features(), v.labels()
    assert np.array_equal(x[seen], cora.x[seen]) and not x[~seen].any()
    assert np.array_equal(y[seen], cora.y[seen]) and not y[~seen].any()
    for split in ("train", "val", "test"):
        m = v.mask(split)
        assert np.array_equal(m[seen], getattr(cora, f"{split}_mask")[seen]) and not m[~seen].any()
    # the view is a function of the visible nodes' data only: scramble everything unseen
    rng = np.random.default_rng(0)
    hidden = ~seen
    x2, y2 = cora.x.copy(), cora.y.copy()
    x2[hidden] = rng.random((hidden.sum(), cora.num_features))
    y2[hidden] = rng.integers(0, cora.num_classes, hidden.sum())
    masks = {f"{s}_mask": np.where(hidden, ~getattr(cora, f"{s}_mask"),
                                   getattr(cora, f"{s}_mask")) for s in ("train", "val", "test")}
    other = GraphDataset(cora.name, x2, y2, cora.edge_index, num_classes=cora.num_classes,
                         **masks)
    w = feras_host_views(other, 4, 0.5, seed=1)[2]
    assert np.array_equal(v.visible_ids, w.visible_ids)
    assert np.array_equal(v.is_public, w.is_public)
    for field in array_fields(v):
        a, b = getattr(v, field), getattr(w, field)
        assert np.array_equal(a, b), field
        assert a.base is None and not a.flags.writeable
        for full in (cora.x, cora.y, cora.train_mask):
            assert not np.shares_memory(a, full)


def array_fields(view: HostView) -> list[str]:
    return [f.name for f in dataclasses.fields(view)
            if isinstance(getattr(view, f.name), np.ndarray)]


def test_public_rows_are_held_once_and_private_rows_by_their_host_only(
        cora: GraphDataset) -> None:
    """Issue 42: every host held its own copy of the public nodes' rows (7.4 MiB a host on
    Cora; 5000 hosts were killed by the OOM killer at 22 GB). The public part is now one
    read-only copy that every view references; each view owns only its private rows, and no
    view reaches another host's private node."""
    views = feras_host_views(cora, 6, 0.5, seed=2)
    owner = assign_private_nodes(cora.num_nodes, 6, 0.5, seed=2)
    fields = array_fields(views[0])
    shared = [f for f in fields if f.startswith("public_") or f.endswith("_public")]
    shared.append("edge_index")
    own = [f for f in fields if f.startswith("private_") or f.endswith("_private")]
    assert len(shared) == 7 and len(own) == 6 and len(fields) == 13
    for v in views:
        assert all(getattr(v, f) is getattr(views[0], f) for f in shared)  # one copy for all
        assert (owner[v.public_ids] == -1).all() and (owner[v.private_ids] == v.host).all()
        for f in shared + own:
            a = getattr(v, f)
            assert a.base is None and not a.flags.writeable, f
        for other in views:
            if other is not v:  # a host's own rows are in no other host's view
                for f in own:
                    assert not any(np.shares_memory(getattr(v, f), getattr(other, g))
                                   for g in shared + own), f
    # What a view's arrays hold of the graph: its visible nodes' rows, nothing else.
    for v in views:
        rows = np.concatenate([v.x_public, v.x_private])
        assert np.array_equal(rows, cora.x[np.concatenate([v.public_ids, v.private_ids])])


def test_memory_per_extra_host_is_small(cora: GraphDataset) -> None:
    """Building 200 hosts' views allocates far less than 200 copies of the public features:
    each extra host costs its private rows and a small overhead (it cost a copy of every
    public row, 7.4 MiB on Cora, before issue 42)."""
    public_bytes = cora.x[assign_private_nodes(cora.num_nodes, 2, 0.5) == -1].nbytes

    def traced(num_hosts: int) -> int:
        gc.collect()
        tracemalloc.start()
        try:
            views = feras_host_views(cora, num_hosts, 0.5)
            return tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
            del views

    per_host = (traced(200) - traced(2)) / 198
    assert per_host < public_bytes / 50, (per_host, public_bytes)
    # The same by the arrays' sizes, each buffer counted once however many views hold it.
    views = feras_host_views(cora, 200, 0.5)
    buffers = {id(a): a.nbytes for v in views for f in array_fields(v)
               if (a := getattr(v, f)) is not None}
    assert sum(buffers.values()) < 2 * public_bytes + 200 * 4096


def test_subgraph_rows_and_multilabel() -> None:
    g = toy(multilabel=True)
    v = feras_host_views(g, 3, 1.0, seed=0)[1]  # all private: kappa = 2/3
    assert v.kappa == pytest.approx(1 - 13 / 40)  # 40 private nodes dealt 14, 13, 13
    nodes = np.array([0, 5, 7, 39, 5])
    seen = v.visible_mask()[nodes]
    assert np.array_equal(v.features(nodes)[seen], g.x[nodes][seen])
    assert not v.features(nodes)[~seen].any() and not v.labels(nodes)[~seen].any()
    assert v.labels(nodes).shape == (5, 3)
    with pytest.raises(ConfigError, match="unknown split 'valid'"):
        v.mask("valid")


@pytest.mark.parametrize(
    ("num_hosts", "pi", "message"),
    [
        (1, 0.5, "Feras needs at least 2 hosts, got num_hosts=1"),
        (0, 0.5, "at least 2 hosts"),
        (2, -0.1, r"private_fraction \(pi\) must be in \[0, 1\], got -0.1"),
        (2, 1.5, r"must be in \[0, 1\]"),
        (5, 1.0, "host 4 sees no node"),
    ],
)
def test_bad_host_settings(num_hosts: int, pi: float, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        feras_host_views(toy(4), num_hosts, pi)
    assert "\n" not in str(err.value)


def test_no_private_nodes_means_everyone_sees_everything() -> None:
    views = feras_host_views(toy(), 3, 0.0)
    assert all(v.kappa == 0.0 and v.is_public.all() for v in views)
