"""THE privacy-boundary property, on real data: changing one client's data changes only that
client's messages. Every other client's upload must be bit-identical, however the simulator
batches the cohort (vectorised FCF) and whatever randomness (negative sampling) is involved."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedrec.algorithms.methods.fcf import FCFConfig, build_fcf_job
from fedrec.algorithms.methods.fedavg_gcn import FedAvgGCNConfig, build_fedavg_gcn_job
from fedrec.algorithms.methods.fedgnn import FedGNNConfig, build_fedgnn_job
from fedrec.algorithms.methods.feras import FerasAggregator, FerasConfig, build_feras_job
from fedrec.algorithms.methods.feras.steps import AVERAGE_EMBEDDINGS, EMBED, EVAL_EMBED
from fedrec.config import build_config
from fedrec.core.codec import Payload
from fedrec.data import (
    HostView,
    InteractionDataset,
    Interactions,
    RatingDataset,
    assign_private_nodes,
    partition_by_user,
)
from fedrec.federation import InProcessRuntime, decode, encode, role_of
from fedrec.federation.message import AGGREGATOR
from fedrec.federation.runtime import PartyContext, Routed
from fedrec.federation.secrets import ClientSecrets

pytestmark = pytest.mark.usefixtures("single_thread")  # bit-exact: see conftest.single_thread


Config = FCFConfig | FedGNNConfig


def uploads(ds, cfg: Config, rnd: int = 1, steps: frozenset[str] | None = None
            ) -> tuple[dict[int, tuple[bytes, ...]], dict]:
    """Run round ``rnd`` of FCF or FedGNN on ``ds``; every client's messages to a service (the
    server, FedGNN's third party) of the given ``steps`` (default all), in order, as wire
    bytes."""
    build = build_fedgnn_job if isinstance(cfg, FedGNNConfig) else build_fcf_job
    job = build(cfg, ds, torch.device("cpu"))
    rt = InProcessRuntime(parties=job.parties, seed=cfg.seed, dropout=cfg.dropout,
                          client_secrets=ClientSecrets(bytes(range(32))))
    seen: dict[int, list[bytes]] = {}
    sent: set[tuple[int, str]] = set()

    def observe(msg) -> None:
        if role_of(msg.sender) == "client" and (steps is None or msg.step in steps):
            assert (msg.sender, msg.step) not in sent  # one message per client per step
            sent.add((msg.sender, msg.step))
            seen.setdefault(msg.sender, []).append(encode(msg.payload))

    rt.observers.append(observe)
    rt.begin_round(rnd)
    job.server.run_round(rt, rnd)
    return {c: tuple(m) for c, m in seen.items()}, job.client_data


def with_user_rows(ds, user: int, items: np.ndarray, values: np.ndarray):
    """``ds`` with ``user``'s training rows replaced (every other row untouched)."""
    tr = ds.train
    keep = tr.users != user
    train = Interactions(
        np.concatenate([tr.users[keep], np.full(len(items), user, dtype=tr.users.dtype)]),
        np.concatenate([tr.items[keep], items.astype(tr.items.dtype)]),
        np.concatenate([tr.values[keep], values.astype(tr.values.dtype)]),
    )
    return dataclasses.replace(ds, train=train)


def _equal_up_to_rounding(a: tuple[bytes, ...], b: tuple[bytes, ...]) -> bool:
    """Same messages, floats within float32 rounding (relative 1e-5), everything else exact."""
    def same(x, y) -> bool:
        if isinstance(x, dict):
            return isinstance(y, dict) and x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.dtype.kind == "f":
            return bool(np.allclose(x, y, rtol=1e-5, atol=1e-6))
        return bool(np.array_equal(x, y))

    return len(a) == len(b) and all(same(decode(x), decode(y)) for x, y in zip(a, b, strict=True))


def assert_only_target_changed(ds, changed, cfg: Config, target: int,
                                steps: frozenset[str] | None = None,
                                rounding: bool = False) -> None:
    """Every client but ``target`` sends bit-identical messages; with ``rounding``, equal up to
    float rounding (for computations batched over a cohort whose grouping the change moves)."""
    for rnd in range(1, 21):  # with dropouts: a round in which the target takes part
        before, clients_before = uploads(ds, cfg, rnd, steps)
        if target in before:
            break
    after, clients_after = uploads(changed, cfg, rnd, steps)
    assert target in before and target in after
    assert set(before) == set(after)  # the same clients answered (dropouts are data-blind)
    if cfg.dropout:
        assert len(before) < len(clients_before)  # some did drop out
    assert before[target] != after[target]
    assert not _equal_up_to_rounding(before[target], after[target])
    differing = sorted(u for u in before if before[u] != after[u])
    if rounding:
        assert all(_equal_up_to_rounding(before[u], after[u]) for u in differing if u != target)
    else:
        assert differing == [target]
    # The partition itself: every other client's data is the same.
    for u, c in clients_before.items():
        if u != target:
            d = clients_after[u]
            assert np.array_equal(c.train_items, d.train_items)
            assert np.array_equal(c.train_values, d.train_values)


def _heaviest_and_lightest(ds) -> tuple[int, int]:
    counts = np.bincount(ds.train.users, minlength=ds.num_users)
    active = np.flatnonzero(counts > 0)
    return int(active[np.argmax(counts[active])]), int(active[np.argmin(counts[active])])


@pytest.mark.parametrize("which", ["heaviest", "lightest"])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_explicit_ratings_only_the_changed_client_differs(
    ml100k: RatingDataset, which: str, dropout: float
) -> None:
    cfg = build_config(FCFConfig, "fcf", "ml-100k", overrides={"dim": 16, "dropout": dropout})
    heavy, light = _heaviest_and_lightest(ml100k)
    target = heavy if which == "heaviest" else light
    rows = ml100k.train.users == target
    # Same items, different ratings: the upload names the same rows but carries other gradients.
    changed = with_user_rows(ml100k, target, ml100k.train.items[rows],
                             6.0 - ml100k.train.values[rows])
    assert_only_target_changed(ml100k, changed, cfg, target)


def test_explicit_ratings_other_items(ml100k: RatingDataset) -> None:
    cfg = build_config(FCFConfig, "fcf", "ml-100k", overrides={"dim": 16})
    target = 42
    rows = ml100k.train.users == target
    # Half the rows dropped, and some items the user never rated added.
    items = ml100k.train.items[rows][::2]
    unrated = np.setdiff1d(np.arange(ml100k.num_items), ml100k.train.items[rows])[:7]
    changed = with_user_rows(ml100k, target, np.concatenate([items, unrated]),
                             np.concatenate([ml100k.train.values[rows][::2], np.full(7, 5.0)]))
    assert_only_target_changed(ml100k, changed, cfg, target)


@pytest.mark.parametrize("step", ["train", "expand_key"])
def test_fedgnn_only_the_changed_client_differs(ml100k: RatingDataset, step: str) -> None:
    """FedGNN's uploads (clipped, noised, with pseudo items from the client's own keyed
    generator) and its expansion messages to the third party (tokens and user embedding):
    other items and ratings for one client change only that client's messages.

    The simulator computes a cohort's gradients in padded chunks of clients sorted by item
    count; the change moves other clients between chunks, and a batched matmul may then round
    their GNN-weight gradients differently (measured: four other clients' uploads moved by a
    few float32 ulps, at most 6e-8). So the train step's other uploads are
    compared up to float rounding; ids, the number of rows and everything else exactly. After
    an expansion the neighbours the third party returns to the target's co-raters do depend on
    the target: that is the protocol's exchange, so the train step is checked in a round
    without one."""
    expand = step == "expand_key"
    cfg = build_config(FedGNNConfig, "fedgnn", "ml-100k", overrides={
        "dim": 8, "pseudo_items": 50, "neighbours": 4, "dropout": 0.3,
        "expand_after": 0 if expand else 100})
    target = 42
    rows = ml100k.train.users == target
    items = ml100k.train.items[rows][::2]
    unrated = np.setdiff1d(np.arange(ml100k.num_items), ml100k.train.items[rows])[:7]
    changed = with_user_rows(ml100k, target, np.concatenate([items, unrated]),
                             np.concatenate([6.0 - ml100k.train.values[rows][::2],
                                             np.full(7, 5.0)]))
    assert_only_target_changed(ml100k, changed, cfg, target, frozenset({step}),
                               rounding=not expand)


def test_implicit_feedback_with_negative_sampling(gowalla_500: InteractionDataset) -> None:
    ds = gowalla_500
    cfg = build_config(FCFConfig, "fcf", "gowalla", overrides={"dim": 16})
    counts = np.bincount(ds.train.users)
    target = int(counts[:50].argmax())  # early in the cohort, with many rows
    rows = ds.train.users == target
    own = ds.train.items[rows]
    # Other, and more, positives: the negatives sampled for this user (redrawn when they hit a
    # positive) change with them, but nobody else's may, though every later row shifts.
    others = np.setdiff1d(np.arange(ds.num_items), own)[: len(own) + 9]
    changed = with_user_rows(ds, target, others, np.ones(len(others), np.float32))
    assert_only_target_changed(ds, changed, cfg, target)


def test_implicit_feedback_removing_a_client_entirely(gowalla_500: InteractionDataset) -> None:
    """A client that leaves changes no one else's upload (its negatives were its own)."""
    ds = gowalla_500
    cfg = build_config(FCFConfig, "fcf", "gowalla", overrides={"dim": 16})
    target = 7
    keep = ds.train.users != target
    without = dataclasses.replace(ds, train=ds.train.select(keep))
    before, _ = uploads(ds, cfg)
    after, _ = uploads(without, cfg)
    assert target in before and target not in after
    assert set(before) - {target} == set(after)
    assert all(before[u] == after[u] for u in after)


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


def _host_uploads(graph, cfg) -> tuple[dict, dict]:
    """An evaluation, then round 1's training, of fedavg-gcn on ``graph`` (both steps on the
    weights every host is sent alike): every host's messages (wire bytes), and its data."""
    job = build_fedavg_gcn_job(cfg, graph, torch.device("cpu"))
    rt = InProcessRuntime(parties=job.parties, seed=cfg.seed,
                          client_secrets=ClientSecrets(bytes(range(32))))
    seen: dict = {}
    rt.observers.append(lambda msg: seen.setdefault(msg.sender, []).append(encode(msg.payload))
                        if msg.direction == "up" else None)
    rt.begin_round(1)
    job.server.evaluate(rt, "valid")
    job.server.run_round(rt, 1)
    return {h: tuple(m) for h, m in seen.items()}, job.client_data


def test_graph_hosts_only_the_changed_host_differs(cora) -> None:
    from fedrec.data import assign_nodes

    cfg = build_config(FedAvgGCNConfig, "fedavg-gcn", "cora",
                       overrides={"num_hosts": 3, "local_epochs": 2})
    owner = assign_nodes(cora.num_nodes, cfg.num_hosts, cfg.public_fraction, cfg.seed)
    mine = owner == 1  # host-1's private nodes: their features and labels change
    x = cora.x.copy()
    x[mine] = 1.0 - x[mine]
    y = cora.y.copy()
    y[mine] = (y[mine] + 1) % cora.num_classes
    changed = dataclasses.replace(cora, x=x, y=y)
    before, hosts_before = _host_uploads(cora, cfg)
    after, hosts_after = _host_uploads(changed, cfg)
    assert set(before) == set(after) == {"host-0", "host-1", "host-2"}
    assert [h for h in before if before[h] != after[h]] == ["host-1"]
    assert len(before["host-1"]) == 2  # its evaluation and its training upload both changed
    assert all(b != a for b, a in zip(before["host-1"], after["host-1"], strict=True))
    for h in ("host-0", "host-2"):  # the partition: every other host's data is the same
        assert np.array_equal(hosts_before[h].x, hosts_after[h].x)
        assert np.array_equal(hosts_before[h].y, hosts_after[h].y)


def _view_round_messages(cfg, mv) -> dict[object, list[bytes]]:
    """Round 1 of FL-MV-DSSM: every party's messages, by sender, as wire bytes."""
    from fedrec.algorithms.methods.fl_mv_dssm import build_job_from_multiview

    job = build_job_from_multiview(cfg, mv)
    rt = InProcessRuntime(parties=job.parties, seed=cfg.seed,
                          client_secrets=ClientSecrets(bytes(range(32))))
    seen: dict[object, list[bytes]] = {}
    rt.observers.append(lambda m: seen.setdefault(m.sender, []).append(encode(m.payload)))
    rt.begin_round(1)
    job.server.run_round(rt, 1)
    return seen


def test_fl_mv_dssm_changing_one_view_changes_only_its_messages(ml100k: RatingDataset) -> None:
    # A device's views are parties of their own: changing one view's features changes that
    # view's messages and its device's upload (which aggregates it), nothing any other view
    # sends, the other view of the same device included.
    from fedrec.algorithms import resolve_config
    from fedrec.algorithms.methods.fl_mv_dssm import multiview_of
    from fedrec.algorithms.methods.fl_mv_dssm.view import view_id
    from fedrec.federation.runtime import sample_cohort

    cfg = resolve_config("fl-mv-dssm", "ml-100k",
                         overrides={"clients_per_round": 4, "secure_aggregation": False})
    mv = multiview_of(cfg, ml100k)
    target = sample_cohort(list(range(943)), 4, cfg.seed, 1)[1]
    svd = mv.user_views[1].copy()
    svd[target] = svd[target][::-1] + 0.5
    changed = dataclasses.replace(mv, user_views=(mv.user_views[0], svd))
    before, after = _view_round_messages(cfg, mv), _view_round_messages(cfg, changed)
    assert before.keys() == after.keys()
    mine = view_id(target, "svd")
    assert before[mine] != after[mine]
    assert before[target] != after[target]
    same = [s for s in before if s not in (mine, target, "server")]
    assert len(same) == 3 * 4 - 2  # 4 devices, 2 views each
    assert view_id(target, "demographics") in same
    for sender in same:
        assert before[sender] == after[sender], sender



Wire = tuple[object, object, str, bytes]  # (sender, receiver, step, payload's wire bytes)


def _feras_messages(graph, cfg: FerasConfig, aggregator: FerasAggregator | None = None
                    ) -> tuple[list[Wire], dict]:
    """An evaluation, round 1, another evaluation of feras on ``graph`` (with ``aggregator`` as
    the AS's logic if given): every delivered message in order, and the parties by id."""
    job = build_feras_job(cfg, graph, torch.device("cpu"))
    parties = [dataclasses.replace(p, logic=aggregator) if aggregator and p.id == AGGREGATOR
               else p for p in job.parties]
    rt = InProcessRuntime(parties=parties, seed=cfg.seed,
                          client_secrets=ClientSecrets(bytes(range(32))))
    seen: list[Wire] = []
    rt.observers.append(lambda m: seen.append((m.sender, m.receiver, m.step, encode(m.payload))))
    rt.begin_round(1)
    job.server.evaluate(rt, "valid")
    job.server.run_round(rt, 1)
    job.server.evaluate(rt, "test")  # on the averaged weights
    return seen, {p.id: p for p in parties}


class _ReplayedAS(FerasAggregator):
    """The AS, answering every host but ``target`` with what the AS of ``recorded`` sent it
    (in order) instead of its own averages: what those hosts receive is held fixed."""

    def __init__(self, cfg: FerasConfig, num_nodes: int, recorded: list[Wire],
                 target: str) -> None:
        super().__init__(num_nodes, cfg.hidden)
        self.target = target
        self.queues: dict[object, list[dict]] = {}
        for sender, receiver, _, wire in recorded:
            if sender == AGGREGATOR and receiver != target:
                # Writable copies: torch takes arrays that own their memory without a warning.
                self.queues.setdefault(receiver, []).append(
                    {k: np.array(v) for k, v in decode(wire).items()})

    def _replay(self, routed: Routed) -> Routed:
        return Routed({h: p if h == self.target else self.queues[h].pop(0)
                       for h, p in routed.to.items()})

    def average_embeddings(self, ctx: PartyContext, payload: Payload) -> Routed:
        return self._replay(super().average_embeddings(ctx, payload))

    def average_weights(self, ctx: PartyContext, payload: Payload) -> Routed:
        return self._replay(super().average_weights(ctx, payload))


def _first_exchange(msgs: list[Wire], step: str, hosts: list[str]) -> tuple[dict, dict]:
    """The index of each host's first ``step`` upload to the AS, and of the AS's first answer
    (``average_embeddings``) to each host after the first of these uploads."""
    ups: dict[str, int] = {}
    for i, (sender, receiver, s, _) in enumerate(msgs):
        if s == step and receiver == AGGREGATOR:
            ups.setdefault(sender, i)
    answers: dict[str, int] = {}
    for i in range(min(ups.values()), len(msgs)):
        sender, receiver, s, _ = msgs[i]
        if s == AVERAGE_EMBEDDINGS and sender == AGGREGATOR:
            answers.setdefault(receiver, i)
    assert sorted(ups) == sorted(answers) == hosts
    return ups, answers


def _private_changed(graph, owner: np.ndarray, host: int):
    """``graph`` with the attributes and labels of ``host``'s private nodes changed."""
    mine = owner == host
    x = graph.x.copy()
    x[mine] = 1.0 - x[mine]
    y = graph.y.copy()
    y[mine] = (y[mine] + 1) % graph.num_classes
    return dataclasses.replace(graph, x=x, y=y)


def _assert_only_host_differs_until_the_as_answers(
        before: list[Wire], after: list[Wire], target: str, hosts: list[str],
        visible: np.ndarray) -> None:
    """The first exchange and causality checks of the test below, for one changed host."""
    assert [m[:3] for m in before] == [m[:3] for m in after]
    others = [h for h in hosts if h != target]
    for step in (EVAL_EMBED, EMBED):
        ups, answers = _first_exchange(before, step, hosts)
        assert before[ups[target]] != after[ups[target]], step  # the check can fail
        for h in others:
            assert before[ups[h]] == after[ups[h]], (step, target, h)
        target_seen = np.asarray(decode(before[ups[target]][3])["seen"])
        assert visible[target_seen].all()  # it uploads embeddings of nodes it sees only
        for h, i in answers.items():
            b, a = decode(before[i][3]), decode(after[i][3])
            assert np.array_equal(b["nodes"], a["nodes"]), (step, target, h)
            not_its = ~np.isin(np.asarray(b["nodes"]), target_seen)
            assert not_its.any() or h == target  # its own answer may hold its nodes only
            assert np.asarray(b["embeddings"])[not_its].tobytes() == \
                np.asarray(a["embeddings"])[not_its].tobytes(), (step, target, h)
    # Causality: a party's message differs only after one it received did.
    received_changed: dict[object, bool] = {}
    propagated = set()
    for b, a in zip(before, after, strict=True):
        sender, receiver = b[0], b[1]
        if b != a and sender != target:
            assert received_changed.get(sender), (target, sender, receiver, b[2])
            propagated.add(sender)
        if b != a:
            received_changed[receiver] = True
    assert {*others, AGGREGATOR} <= propagated  # the averages carry it on, as messages


@pytest.mark.parametrize("schedule", ["sequential", "synchronous"])
def test_feras_a_hosts_private_data_reaches_the_others_only_through_the_as(
        cora, schedule: str) -> None:
    """A target host's private nodes (which it alone sees) get other attributes and labels.

    In the protocol as it runs (target host 1), bit-identical: every other host's uploads of
    the first exchange (its full-graph ``eval_embed``, then its iteration-1 ``embed``, computed
    from its own view, the public topology and sampler and its initial weights before anything
    from the AS arrived), and in the AS's answers to that exchange the node ids and every row
    of a node the target did not upload (the AS averages the uploads of the hosts that see the
    node). Beyond that a message of any party but the target (other hosts, the AS, the
    orchestrator) may differ, but only after one it received differed: the target's embeddings
    enter the AS's averages (in the sequential schedule its table carries them on to later
    iterations) and its weights the averaged weights, messages of the protocol.

    With the AS's answers to the other hosts replaced by the unchanged run's (every host in turn
    the target), every message the other hosts send in the whole run (two evaluations, two
    iterations, the weight average) is bit-identical: a host's messages are a function of its
    own data and its inbox only (the evaluation's averages leave no trace: no host keeps them,
    the AS does not persist them). That the AS never receives an attribute or a label is
    ``test_the_as_receives_no_attribute_or_label`` in ``tests/algorithms/test_feras.py``."""
    hosts = ["host-0", "host-1", "host-2"]
    cfg = build_config(FerasConfig, "feras", "cora", overrides={
        "num_hosts": len(hosts), "private_fraction": 0.5, "schedule": schedule,
        "presample": 20, "iterations_per_round": 2, "weight_every": 2})
    owner = assign_private_nodes(cora.num_nodes, len(hosts), 0.5, cfg.seed)
    before, parties_before = _feras_messages(cora, cfg)
    after, _ = _feras_messages(_private_changed(cora, owner, 1), cfg)
    _assert_only_host_differs_until_the_as_answers(before, after, "host-1", hosts,
                                                   (owner == -1) | (owner == 1))
    for t, target in enumerate(hosts):
        changed = _private_changed(cora, owner, t)
        replayed, parties_after = _feras_messages(
            changed, cfg, _ReplayedAS(cfg, cora.num_nodes, before, target))
        assert [m[:3] for m in replayed] == [m[:3] for m in before]
        for b, r in zip(before, replayed, strict=True):
            if b[0] == target and b[1] == AGGREGATOR:
                assert b != r, b[:3]  # each of the target's uploads: the check can fail
            elif b[0] in hosts and b[0] != target:
                assert b == r, (target, b[:3])
        # The parties' data: each host its view (its visible nodes' attributes and labels, zero
        # elsewhere: no other host's private node); only the target's changed; the AS has none.
        for parties in (parties_before, parties_after):
            assert parties[AGGREGATOR].data is None
        for h, host in enumerate(hosts):
            views = [parties_before[host].data, parties_after[host].data]
            visible = (owner == -1) | (owner == h)
            for view, graph in zip(views, (cora, changed), strict=True):
                assert isinstance(view, HostView) and view.host == h
                assert np.array_equal(view.visible_ids, np.flatnonzero(visible))
                feats, labels = view.features(), view.labels()
                assert np.array_equal(feats[visible], graph.x[visible])
                assert np.array_equal(labels[visible], graph.y[visible])
                assert not feats[~visible].any() and not labels[~visible].any()
                assert not np.shares_memory(view.x_visible, graph.x)
            same = all(np.array_equal(getattr(views[0], f), getattr(views[1], f))
                       for f in ("x_visible", "y_visible"))
            assert same == (host != target), (target, host)


def _fed_mvmf_round_messages(cfg, mv) -> dict[object, list[bytes]]:
    """An evaluation and round 1 of FED-MVMF (both on the initial model, which no client's data
    has reached yet): every party's messages, by sender, as wire bytes."""
    from fedrec.algorithms.methods.fed_mvmf import build_job_from_multiview

    job = build_job_from_multiview(cfg, mv)
    rt = InProcessRuntime(parties=job.parties, seed=cfg.seed,
                          client_secrets=ClientSecrets(bytes(range(32))))
    seen: dict[object, list[bytes]] = {}
    rt.observers.append(lambda m: seen.setdefault(m.sender, []).append(encode(m.payload)))
    job.server.evaluate(rt, "test")
    rt.begin_round(1)
    job.server.run_round(rt, 1)
    return seen


@pytest.mark.parametrize("what", ["interactions", "side-information"])
def test_fed_mvmf_changing_one_users_data_changes_only_its_messages(
        ml100k: RatingDataset, what: str) -> None:
    # A client's X row (its positives) and Y row (its side information) are its own: changing
    # either changes that client's training upload and evaluation, nothing any other client
    # sends (the cohort is computed together, one client at a time).
    from fedrec.algorithms import resolve_config
    from fedrec.algorithms.methods.fed_mvmf import multiview_of
    from fedrec.algorithms.methods.fed_mvmf.server import evaluated_clients
    from fedrec.federation.runtime import sample_cohort

    cfg = resolve_config("fed-mvmf", "ml-100k",
                         overrides={"clients_per_round": 12, "eval_devices": 100})
    mv = multiview_of(cfg, ml100k)
    evaluated = evaluated_clients(list(range(943)), cfg.eval_devices, cfg.seed)
    target = next(u for u in sample_cohort(list(range(943)), 12, cfg.seed, 1)
                  if u in evaluated)  # trained in round 1 and evaluated
    if what == "interactions":
        tr = mv.task.train
        own = tr.users == target
        moved = tr.items.copy()
        moved[own] = (moved[own] + 7) % mv.task.num_items
        changed = dataclasses.replace(mv, task=dataclasses.replace(
            mv.task, train=Interactions(tr.users, moved, tr.values)))
    else:
        svd = mv.user_views[1].copy()
        svd[target] = svd[target][::-1] + 0.5
        changed = dataclasses.replace(mv, user_views=(mv.user_views[0], svd))
    before, after = _fed_mvmf_round_messages(cfg, mv), _fed_mvmf_round_messages(cfg, changed)
    assert before.keys() == after.keys()
    assert len(before[target]) == 2  # its evaluation and its training upload both changed
    assert all(b != a for b, a in zip(before[target], after[target], strict=True))
    others = [s for s in before if s not in (target, "server")]
    assert len(others) >= 5
    for sender in others:
        assert before[sender] == after[sender], sender


@pytest.mark.parametrize("algorithm", ["fcf", "fedgnn"])
def test_dp_aggregate_only_the_changed_client_differs(ml100k: RatingDataset,
                                                      algorithm: str) -> None:
    """The DP aggregate's uploads (clipped, randomly rounded and Skellam-noised from the client's
    own secret; unmasked here so that they can be compared): other ratings for one client change
    only that client's vector. The same items keep FedGNN's padded chunks as they were."""
    cls = FedGNNConfig if algorithm == "fedgnn" else FCFConfig
    cfg = build_config(cls, algorithm, "ml-100k", overrides={
        "dim": 8, "dp": "distributed", "dp_masking": False, "noise_multiplier": 1.0,
        "clients_per_round": 100, "rounds": 20})
    target = 42
    rows = ml100k.train.users == target
    changed = with_user_rows(ml100k, target, ml100k.train.items[rows],
                             6.0 - ml100k.train.values[rows])
    assert_only_target_changed(ml100k, changed, cfg, target, frozenset({"train"}))
