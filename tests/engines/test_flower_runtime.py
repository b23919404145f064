"""The Flower adapter without processes (:mod:`fedrec.engines.flower.grid`): what the
conformance suite's Flower check (``tests/conformance/test_flower.py``: every federated method on
the in-memory grid equals the simulator) does not look at, and only an in-memory grid can
observe: a broadcast crosses once per SuperNode, each party's state stays on the node that hosts
it, every party runs where its job places it, the relay never carries a private value in clear,
and a dead SuperNode is a dropout."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedrec.algorithms.methods.fedgnn import FedGNNConfig
from fedrec.core.rng import torch_generator
from fedrec.engines.common import resolve
from fedrec.engines.flower.grid import InMemoryGrid, run_in_memory
from fedrec.engines.flower.node import NodeHost, node_share
from fedrec.errors import ProtocolError
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import RunOptions

USERS = 40  # ML-100K users 0..39: a few dozen clients
# One client secret for the Flower run and the simulator: compared draw for draw.
SECRETS = ClientSecrets(bytes(range(32)))
# Three client SuperNodes answering at once: short timeouts only bound a dead node's silence.
FLOWER = RunOptions(engine="flower", nodes=3, max_users=USERS, client_secret=SECRETS,
                    progress=False, connect_timeout=5.0, call_timeout=2.0,
                    straggler_timeout=0.5)
FCF = {"rounds": 2, "eval_every": 1, "dim": 16}
FEDGNN = {"rounds": 2, "eval_every": 1, "dim": 16, "clients_per_round": 16, "pseudo_items": 50,
          "neighbours": 4, "expand_after": 0}


def rel_diff(a: dict, b: dict) -> float:
    keys = set(a) & set(b)
    assert keys, (a, b)
    return max(abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in keys)


@pytest.fixture(autouse=True)
def _one_thread(one_thread_module):
    pass


def local_run(tmp_path, data_root, algorithm: str, overrides: dict, dataset: str = "ml-100k",
              kill=None) -> tuple[dict, InMemoryGrid]:
    options = FLOWER if dataset == "ml-100k" else dataclasses.replace(FLOWER, max_users=None)
    return run_in_memory(algorithm, dataset, data_root, tmp_path, overrides=overrides,
                         options=options, kill=kill)


def test_a_broadcast_crosses_once_per_supernode_and_states_stay_on_their_nodes(
        tmp_path, ml100k_root, load_once) -> None:
    res, grid = local_run(tmp_path, ml100k_root, "fcf", FCF)
    assert res["engine"]["clients"] == USERS and res["engine"]["dead_nodes"] == []
    # A broadcast travels once per SuperNode, not once per client: Flower's bytes are fewer
    # than the ledger's (which counts what each client receives, as in the simulator).
    wire = res["engine"]["wire"]
    assert sum(wire["sent"].values()) < res["communication"]["totals"]["bytes_down"] / 5
    # Client state persisted in each node's Context.state, not in the server.
    assert all("fedrec_states" in s for s in grid.states.values())


def test_the_relay_sees_no_user_embedding_in_clear(tmp_path, ml100k_root, load_once) -> None:
    # FedGNN's clients route their user embeddings to the third party (which routes back
    # neighbours): sealed mail through the server's relay, never in the clear.
    res, grid = local_run(tmp_path, ml100k_root, "fedgnn", FEDGNN)
    assert res["history"][0]["train"]["expanded"] == 1.0
    cfg = FedGNNConfig(**FEDGNN)
    relayed = b"".join(grid.relayed)
    for client in (0, 17, 39):
        gen = torch_generator(cfg.seed, "init-user", client)
        e_u = (torch.randn(cfg.dim, generator=gen) * cfg.init_std).numpy()
        assert e_u[:4].tobytes() not in relayed


def test_dead_supernode_is_a_dropout(tmp_path, ml100k_root, simulate_lost,
                                     load_once) -> None:
    settings = dict(FCF, eval_every=2)
    res, _ = local_run(tmp_path, ml100k_root, "fcf", settings, kill={102: 2})
    lost = node_share(list(range(USERS)), 2, 3)
    assert res["status"] == "complete" and len(res["engine"]["dead_nodes"]) == 1
    assert res["history"][0]["train"]["clients"] == USERS
    assert res["history"][1]["train"]["clients"] == USERS - len(lost)
    assert res["final"]["eval_clients"] == USERS - len(lost)
    # Exactly the simulator with those clients dropped in round 2.
    expected = simulate_lost(ml100k_root, settings, USERS, lost, train_lost=True,
                             client_secrets=SECRETS)
    assert rel_diff(res["final"], expected) <= 1e-12


def test_node_share_partitions_clients() -> None:
    ids = list(range(40))
    shares = [node_share(ids, i, 3) for i in range(3)]
    assert sorted(c for s in shares for c in s) == ids
    assert [len(s) for s in shares] == [14, 13, 13]


def test_node_share_keeps_the_declared_order() -> None:
    ids = [f"host-{i}" for i in range(12)]
    assert node_share(ids, 0, 3) == ids[:4] and node_share(ids, 2, 3) == ids[8:]


def _staged_cora(data_root) -> None:
    if not (data_root / "planetoid" / "ind.cora.graph").is_file():
        pytest.skip("Cora is not staged")


def test_graph_hosts_run_on_the_supernodes_their_job_places_them(tmp_path, data_root) -> None:
    """fedavg-gcn on Cora: 4 hosts (clients named ``host-i``, not users) over 3 SuperNodes,
    contiguous shares of the job's declared order."""
    _staged_cora(data_root)
    res, grid = local_run(tmp_path, data_root, "fedavg-gcn",
                          {"rounds": 1, "num_hosts": 4, "local_epochs": 1}, dataset="cora")
    assert res["engine"]["clients"] == 4 and res["engine"]["nodes"] == 3
    hosted = [NodeHost(grid.rc, c, grid.states[n])._info()["parties"]
              for n, c in grid.node_configs.items()]
    assert hosted == [["host-0", "host-1"], ["host-2"], ["host-3"]]


@pytest.mark.parametrize("schedule", ["sequential", "synchronous"])
def test_feras_aggregation_server_runs_on_a_node_of_its_own(tmp_path, data_root, load_once,
                                                             schedule: str) -> None:
    """feras on Cora: the aggregation server on a service SuperNode of its own (role
    ``aggregator``, built from the public metadata, no data); embeddings and weights reach it as
    sealed mail through the relay; its table persists in its own node's state."""
    _staged_cora(data_root)
    settings = {"rounds": 2, "eval_every": 1, "num_hosts": 4, "hidden": 16,
                "iterations_per_round": 2, "weight_every": 2, "presample": 20,
                "schedule": schedule}
    res, grid = local_run(tmp_path, data_root, "feras", settings, dataset="cora")
    assert res["engine"]["clients"] == 4 and res["engine"]["nodes"] == 4
    steps = res["communication"]["by_step"]
    assert steps["embed (client->aggregator)"]["messages"] > 0
    hosted = [NodeHost(grid.rc, c, grid.states[n])._info()["parties"]
              for n, c in grid.node_configs.items()]
    assert hosted == [["host-0", "host-1"], ["host-2"], ["host-3"], ["aggregator"]]
    as_states = NodeHost(grid.rc, grid.node_configs[900], grid.states[900])._load_states()
    assert set(as_states) == {"aggregator"}
    assert len(as_states["aggregator"]["table"]) == (4 if schedule == "sequential" else 0)


@pytest.mark.parametrize("schedule", ["sequential", "synchronous"])
def test_a_dead_aggregation_server_is_named_not_its_hosts(tmp_path, data_root, load_once,
                                                          schedule: str) -> None:
    """Issue 42: Feras's AS killed in round 2 was reported as a step no host answered (the
    hosts waited for its embeddings); a lost service is no dropout, and the error names it."""
    _staged_cora(data_root)
    settings = {"rounds": 3, "eval_every": 1, "num_hosts": 4, "hidden": 16,
                "iterations_per_round": 2, "weight_every": 2, "presample": 20,
                "schedule": schedule}
    with pytest.raises(ProtocolError) as err:
        local_run(tmp_path, data_root, "feras", settings, dataset="cora", kill={900: 2})
    assert str(err.value) == ("round 2, step 'average_embeddings': SuperNode 900, which hosts "
                              "the aggregator, did not answer (killed, crashed or cut off); the "
                              "run cannot go on without it")


def test_secagg_plus_shares_go_to_the_neighbours_only(tmp_path, ml100k_root, load_once) -> None:
    # SecAgg+ (Bell et al. 2020) over the relay; its client state between the secure-sum steps
    # lives in each node's Context.state. A loopback deployment of Bonawitz et al.'s variant is
    # in test_flower_deploy.py (its secure FCF deployment); the variants differ only in the
    # apps' code, which runs here.
    settings = {"rounds": 1, "eval_every": 1, "dim": 16, "secure_aggregation": True,
                "secagg_variant": "secagg+"}
    res, grid = local_run(tmp_path, ml100k_root, "fcf", settings)
    assert res["history"][0]["train"] == {"clients": USERS, "dropped_after_keys": 0}
    # 40 clients, k = 14: each share upload holds 14 ciphertexts of 168 bytes, not 39.
    share_up = res["communication"]["by_step"]["secagg_share (client->server)"]
    assert share_up["messages"] == USERS
    assert 14 * 168 < share_up["bytes"] / share_up["messages"] < 20 * 168
    assert all("fedrec_states" in s for s in grid.states.values())


# FL-MV-DSSM: each device's two views are parties of their own, co-located with the device
# (``Party.host``): they run on the device's SuperNode, on that node's data, and everything
# between a view and its device is sealed mail through the server's relay. Small towers, 8
# devices a round, 12 evaluated: a few seconds.
FLMV = {"rounds": 2, "eval_every": 1, "widths": (8, 4), "clients_per_round": 8,
        "eval_devices": 12, "local_epochs": 1, "client_batch": 50, "secagg_clip": 8.0}


@pytest.fixture
def multiview_once():
    """Every in-memory node message builds FL-MV-DSSM's job again, as a real SuperNode's process
    does; here they share each multi-view build (deterministic: values unchanged, time saved)."""
    from fedrec.algorithms.methods.fl_mv_dssm import reuse_multiviews

    with reuse_multiviews():
        yield


def test_fl_mv_dssm_views_run_on_their_devices_node(tmp_path, ml100k_root, load_once,
                                                    multiview_once) -> None:
    """The views of a device are co-located with it: hosted by its SuperNode, built from that
    node's own data, each with its own state and secret; their messages to the device travel as
    sealed mail through the relay and are metered as in the simulator."""
    from fedrec.algorithms.methods.fl_mv_dssm import multiview_of
    from fedrec.algorithms.methods.fl_mv_dssm.view import VIEW, device_of, name_of
    from fedrec.engines.common import load_sliced

    settings = FLMV
    res, grid = local_run(tmp_path, ml100k_root, "fl-mv-dssm", settings)
    assert res["status"] == "complete" and res["engine"]["dead_nodes"] == []
    assert res["engine"]["nodes"] == 3  # no SuperNode of the views' own
    steps = res["communication"]["by_step"]
    assert steps["view_train (view->client)"]["messages"] == 2 * 2 * 8  # metered mail
    assert any(k.startswith("secagg_mask") for k in steps)
    # Each view lives on its device's node alone, with its own state and its own feature row.
    _, cfg = resolve("fl-mv-dssm", "ml-100k", None, settings)
    mv = multiview_of(cfg, load_sliced("ml-100k", str(ml100k_root), USERS))
    rc = grid.rc
    devices_of_node, views_of_node, stated = {}, {}, []
    for n, nc in grid.node_configs.items():
        host = NodeHost(rc, nc, grid.states[n])
        hosted = set(host._info()["parties"])
        devices_of_node[n] = {p for p in hosted if isinstance(p, int)}
        views_of_node[n] = hosted - devices_of_node[n]
        assert {device_of(v) for v in views_of_node[n]} == devices_of_node[n]
        assert len(views_of_node[n]) == 2 * len(devices_of_node[n])
        states = host._load_states()
        assert set(states) <= hosted  # state only of the parties the node hosts
        stated += [p for p in states if p in views_of_node[n]]
        built = host._job({}, hosted)
        for v in views_of_node[n]:
            # Each view's data on its node is its own row of that node's data, nothing else.
            assert built[v].role == VIEW and built[v].host == device_of(v)
            k = mv.view_names.index(name_of(v))
            np.testing.assert_array_equal(built[v].data.features,
                                          mv.user_views[k][device_of(v)])
    assert sorted(d for s in devices_of_node.values() for d in s) == list(range(USERS))
    assert len(stated) == len(set(stated)) > 0
    # The views' features never cross the relay (the SVD view's rows are continuous values).
    relayed = b"".join(grid.relayed)
    k = mv.view_names.index("svd")
    for device in (0, 17, 39):
        row = np.ascontiguousarray(mv.user_views[k][device], dtype=np.float32)
        assert np.all(row[:4] != 0) and row[:4].tobytes() not in relayed
