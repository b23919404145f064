"""The Flower adapter without processes: the ServerApp's ``run_server`` drives
:class:`FlowerRuntime` over an in-memory Grid whose "SuperNodes" run the real ClientApp code
(:class:`NodeHost`, each with its own Flower ``Context.state``). Fast checks of what the
loopback deployment tests (``test_flower_deploy.py``) check end to end, plus what only an
in-memory grid can observe: every byte the relay handles.

Tolerances: FCF is compared exactly (1e-12 relative): its per-client step is row-wise, so
splitting the cohort over SuperNodes changes no floating-point operation. FedGNN pads each
chunk of clients to its longest subgraph; a SuperNode's chunk is not the simulator's chunk, so
reductions run over differently padded tensors and float32 sums round differently (observed
~5e-8 relative); 1e-6 relative bounds that and is far below any protocol error (a client
missing, a wrong neighbour or noise draw changes the metrics at 1e-3 and more). FedGRec is
compared exactly (==): each client's step is its own computation, every upload is a sum of
fixed-point ring elements (secure or plain), exact whatever the order, and the server decodes
and updates its tables once from that sum, so the SuperNodes' split changes nothing.
The fedavg-gcn
and feras runs (hosts on client SuperNodes, feras's aggregation server on a service SuperNode)
are compared exactly: each host's step is its own computation, and the server and the AS combine
the hosts' messages in the simulator's order. FL-MV-DSSM (each device's views co-located with
it on its SuperNode) is compared within 1e-6 relative, ledgers exactly: a node trains its share
of the cohort's views in one padded stack, the simulator the whole cohort's (observed ~1e-9 on
the update norm, eval metrics identical).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms.methods.fedgnn import FedGNNConfig
from fedrec.config import to_dict
from fedrec.core.rng import torch_generator
from fedrec.engines.common import resolve, simulate
from fedrec.engines.flower.deploy import SECRET_KEY, encode_config, node_roots
from fedrec.engines.flower.envelope import from_content, to_content
from fedrec.engines.flower.node import NodeHost, node_share
from fedrec.engines.flower.server import run_server
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import RunOptions

USERS = 40  # ML-100K users 0..39: a few dozen clients
# One client secret for the Flower run and the simulator: compared draw for draw.
SECRETS = ClientSecrets(bytes(range(32)))
# The simulator twin of the deployments here: the same users, the same client secret.
SIM = RunOptions(max_users=USERS, client_secret=SECRETS, progress=False)
FCF = {"rounds": 2, "eval_every": 1, "dim": 16}
FEDGNN = {"rounds": 2, "eval_every": 1, "dim": 16, "clients_per_round": 16, "pseudo_items": 50,
          "neighbours": 4, "expand_after": 0}


def rel_diff(a: dict, b: dict) -> float:
    keys = set(a) & set(b)
    assert keys, (a, b)
    return max(abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in keys)


@pytest.fixture(autouse=True)
def _flower_identity(one_thread_module):
    from flwr.supercore.task_identity import TaskIdentity

    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 1


class LocalGrid:
    """A Flower ``Grid`` whose nodes answer in-process with the ClientApp's :class:`NodeHost`.
    ``kill={node: round}`` makes a node silent from that round on (a dead SuperNode)."""

    def __init__(self, run_config: dict, node_configs: dict[int, dict], kill=None) -> None:
        from flwr.app import RecordDict

        self.rc = run_config
        self.node_configs = node_configs
        self.states = {n: RecordDict() for n in node_configs}
        self.kill = kill or {}
        self.replies: dict[str, object] = {}
        self.relayed: list[bytes] = []  # every blob the ServerApp sent or received

    def get_node_ids(self):
        return list(self.node_configs)

    def push_messages(self, msgs):
        from flwr.app import Message

        ids = []
        for m in msgs:
            m.metadata.__dict__["_message_id"] = m.object_id
            node = m.metadata.dst_node_id
            header, blobs = from_content(m.content)
            self.relayed += blobs.values()
            ids.append(m.object_id)
            if node in self.kill and int(m.metadata.group_id) >= self.kill[node]:
                continue
            host = NodeHost(self.rc, self.node_configs[node], self.states[node])
            out_header, out_blobs = host.handle(header, blobs)
            self.relayed += out_blobs.values()
            self.replies[m.object_id] = Message(to_content(out_header, out_blobs), reply_to=m)
        return ids

    def pull_messages(self, ids):
        return [self.replies.pop(i) for i in ids if i in self.replies]


def local_run(tmp_path, data_root, algorithm: str, overrides: dict, nodes: int = 3,
              services: tuple[str, ...] = (), kill=None) -> tuple[dict, LocalGrid]:
    _, cfg = resolve(algorithm, "ml-100k", None, overrides)
    rc = {"algorithm": algorithm, "dataset": "ml-100k", "config": encode_config(to_dict(cfg)),
          "max-users": USERS, "num-nodes": nodes + len(services), "out-dir": str(tmp_path),
          "connect-timeout": 5.0, "call-timeout": 2.0, "straggler-timeout": 0.5}
    roots = node_roots(SECRETS, services)
    configs = {100 + i: {"role": "client", "partition-id": i, "num-partitions": nodes,
                         "data-dir": str(data_root), SECRET_KEY: roots["client"]}
               for i in range(nodes)}
    configs.update({900 + k: {"role": r, SECRET_KEY: roots[r]} for k, r in enumerate(services)})
    grid = LocalGrid(rc, configs, kill)
    return run_server(grid, rc), grid


def test_fcf_equals_simulator(tmp_path, ml100k_root) -> None:
    res, grid = local_run(tmp_path, ml100k_root, "fcf", FCF)
    sim = simulate("fcf", "ml-100k", data_dir=ml100k_root, overrides=FCF,
                   options=SIM).to_json()
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert rel_diff(a["eval"], b["eval"]) <= 1e-12
        assert a["train"] == b["train"] and a["communication"] == b["communication"]
    assert res["communication"]["by_step"] == sim["communication"]["by_step"]
    assert res["engine"]["clients"] == USERS and res["engine"]["dead_nodes"] == []
    # A broadcast travels once per SuperNode, not once per client: Flower's bytes are fewer
    # than the ledger's (which counts what each client receives, as in the simulator).
    wire = res["engine"]["wire"]
    assert sum(wire["sent"].values()) < res["communication"]["totals"]["bytes_down"] / 5
    # Client state persisted in each node's Context.state, not in the server.
    assert all("fedrec_states" in s for s in grid.states.values())


def test_fedgnn_equals_simulator_and_relay_sees_only_ciphertext(tmp_path, ml100k_root) -> None:
    res, grid = local_run(tmp_path, ml100k_root, "fedgnn", FEDGNN, services=("third_party",))
    sim = simulate("fedgnn", "ml-100k", data_dir=ml100k_root, overrides=FEDGNN,
                   options=SIM).to_json()
    assert res["history"][0]["train"]["expanded"] == 1.0
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert rel_diff(a["eval"], b["eval"]) <= 1e-6
        assert rel_diff(a["train"], b["train"]) <= 1e-6
        assert a["communication"] == b["communication"]  # routed messages metered alike
    assert res["communication"]["by_step"] == sim["communication"]["by_step"]
    # The user embeddings the clients route to the third party (and it routes back as
    # neighbours) never cross the relay in the clear.
    cfg = FedGNNConfig(**{**FEDGNN, "rounds": 2})
    relayed = b"".join(grid.relayed)
    for client in (0, 17, 39):
        gen = torch_generator(cfg.seed, "init-user", client)
        e_u = (torch.randn(cfg.dim, generator=gen) * cfg.init_std).numpy()
        assert e_u[:4].tobytes() not in relayed


def test_fedgnn_secure_sum_equals_simulator(tmp_path, ml100k_root) -> None:
    # item_privacy=secure_sum: the four secure-sum steps run over Flower's relay, each client's
    # protocol state kept in its SuperNode's Context.state between messages. The sums are exact
    # in the ring, so only the chunk padding's float32 rounding (see the module doc) differs.
    settings = dict(FEDGNN, item_privacy="secure_sum", neighbours=0)
    res, _ = local_run(tmp_path, ml100k_root, "fedgnn", settings)
    sim = simulate("fedgnn", "ml-100k", data_dir=ml100k_root, overrides=settings,
                   options=SIM).to_json()
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert a["train"]["clients"] == b["train"]["clients"] == 16
        assert rel_diff(a["eval"], b["eval"]) <= 1e-6
    steps = res["communication"]["by_step"]
    assert steps == sim["communication"]["by_step"]
    assert any(k.startswith("secagg_mask") for k in steps)


def test_dead_supernode_is_a_dropout(tmp_path, ml100k_root, simulate_lost) -> None:
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


GCN = {"rounds": 2, "eval_every": 1, "num_hosts": 4, "local_epochs": 2}


def cora_equals_simulator(tmp_path, data_root, algorithm: str, settings: dict,
                          services: tuple[str, ...] = ()):
    """``algorithm`` on Cora over 3 client SuperNodes (and one per service role) of an in-memory
    grid, the server built from the graph's public metadata; asserts it equals the simulator
    exactly (metrics, training statistics but timings, ledgers). Returns the run, the
    simulator's, the grid, the run config and the node configs."""
    if not (data_root / "planetoid" / "ind.cora.graph").is_file():
        pytest.skip("Cora is not staged")
    _, cfg = resolve(algorithm, "cora", None, settings)
    rc = {"algorithm": algorithm, "dataset": "cora", "config": encode_config(to_dict(cfg)),
          "max-users": 0, "num-nodes": 3 + len(services), "out-dir": str(tmp_path),
          "connect-timeout": 5.0, "call-timeout": 2.0, "straggler-timeout": 0.5}
    roots = node_roots(SECRETS, services)
    configs = {100 + i: {"role": "client", "partition-id": i, "num-partitions": 3,
                         "data-dir": str(data_root), SECRET_KEY: roots["client"]}
               for i in range(3)}
    configs.update({900 + k: {"role": r, SECRET_KEY: roots[r]} for k, r in enumerate(services)})
    grid = LocalGrid(rc, configs)
    res = run_server(grid, rc)
    sim = simulate(algorithm, "cora", data_dir=data_root, overrides=settings,
                   options=RunOptions.of(SIM, max_users=None)).to_json()
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert a["eval"] == b["eval"] and a["communication"] == b["communication"]
        assert {k: v for k, v in a["train"].items() if not k.startswith("time_")} == {
            k: v for k, v in b["train"].items() if not k.startswith("time_")}
    assert res["final"]["accuracy"] == sim["final"]["accuracy"]
    assert res["communication"]["by_step"] == sim["communication"]["by_step"]
    return res, sim, grid, rc, configs


def test_graph_hosts_on_supernodes_equal_simulator(tmp_path, data_root) -> None:
    """fedavg-gcn on Cora: 4 hosts (clients named ``host-i``, not users) over 3 SuperNodes,
    placed by the job's declaration; the server built from the graph's public metadata. Each
    host's step is its own computation and the server averages in host order: exact."""
    res, _, grid, rc, configs = cora_equals_simulator(tmp_path, data_root, "fedavg-gcn", GCN)
    assert res["engine"]["clients"] == 4 and res["engine"]["nodes"] == 3
    # Which SuperNode hosts which host: contiguous shares of the job's declared order.
    hosted = [NodeHost(rc, configs[n], grid.states[n])._info()["parties"] for n in configs]
    assert hosted == [["host-0", "host-1"], ["host-2"], ["host-3"]]


FERAS = {"rounds": 2, "eval_every": 1, "num_hosts": 4, "hidden": 16, "iterations_per_round": 2,
         "weight_every": 2, "presample": 20}


@pytest.mark.parametrize("schedule", ["sequential", "synchronous"])
def test_feras_hosts_and_aggregation_server_equal_simulator(tmp_path, data_root,
                                                            schedule: str) -> None:
    """feras on Cora: 4 hosts over 3 client SuperNodes and the aggregation server on a service
    SuperNode of its own (role ``aggregator``, built from the public metadata, no data).
    Embeddings and weights reach the AS as sealed mail through the relay. Every host's and the
    AS's computation is the simulator's, on the same inputs in the same order: exact (metrics,
    losses and ledgers equal to the last bit)."""
    settings = dict(FERAS, schedule=schedule)
    res, _, grid, rc, configs = cora_equals_simulator(tmp_path, data_root, "feras", settings,
                                                      services=("aggregator",))
    assert res["engine"]["clients"] == 4 and res["engine"]["nodes"] == 4
    steps = res["communication"]["by_step"]
    assert steps["embed (client->aggregator)"]["messages"] > 0
    hosted = [NodeHost(rc, configs[n], grid.states[n])._info()["parties"] for n in configs]
    assert hosted == [["host-0", "host-1"], ["host-2"], ["host-3"], ["aggregator"]]
    # The AS's embedding table persists in its own node's state (sequential schedule only).
    as_states = NodeHost(rc, configs[900], grid.states[900])._load_states()
    assert set(as_states) == {"aggregator"}
    assert len(as_states["aggregator"]["table"]) == (4 if schedule == "sequential" else 0)


def test_node_share_keeps_the_declared_order() -> None:
    ids = [f"host-{i}" for i in range(12)]
    assert node_share(ids, 0, 3) == ids[:4] and node_share(ids, 2, 3) == ids[8:]


# FedGRec, K = 1: round 1 holds the warm-up and a refresh round (refresh_period 2), round 2 a
# plain one. Small dim and steps keep it fast; 16 clients per round so warm-up sums and rounds
# have cohorts smaller than the 40 clients spread over the 3 SuperNodes.
FEDGREC = {"rounds": 2, "eval_every": 1, "dim": 8, "num_layers": 1, "refresh_period": 2,
           "local_steps": 2, "clients_per_round": 16}


@pytest.fixture
def load_once(monkeypatch):
    """Each in-memory "SuperNode" message parses ML-100K again, as a real SuperNode's process
    does; FedGRec's warm-up sends many messages, so here the nodes share one parse (a deep
    copy per message, so no message sees another's changes). Loading is deterministic, so this
    changes no value the test compares, only its time."""
    import copy

    from fedrec.engines.flower import node

    cache: dict[tuple, object] = {}

    def load_sliced(*args):
        if args not in cache:
            cache[args] = real(*args)
        return copy.deepcopy(cache[args])

    real = node.load_sliced
    monkeypatch.setattr(node, "load_sliced", load_sliced)


@pytest.mark.parametrize(("secure", "extra"), [
    (True, {}), (False, {}),
    # Our user fit: each client's fit is its own rows' computation, whichever node hosts it.
    (False, {"user_fit_train_steps": 3, "user_fit_steps": 3})], ids=["secure", "plain", "fit"])
def test_fedgrec_equals_simulator(tmp_path, ml100k_root, load_once, secure: bool,
                                  extra: dict) -> None:
    settings = dict(FEDGREC, secure_aggregation=secure, **extra)
    res, grid = local_run(tmp_path, ml100k_root, "fedgrec", settings)
    sim = simulate("fedgrec", "ml-100k", data_dir=ml100k_root, overrides=settings,
                   options=SIM).to_json()
    assert res["status"] == "complete" and res["engine"]["dead_nodes"] == []
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert a["eval"] == b["eval"]
        assert a["train"] == b["train"]
        assert a["communication"] == b["communication"]
    steps = res["communication"]["by_step"]
    assert steps == sim["communication"]["by_step"]
    assert any(k.startswith("warmup_latent") for k in steps)
    assert any(k.startswith("secagg_mask") for k in steps) == secure
    assert all("fedrec_states" in s for s in grid.states.values())


# FedAvg-NeuMF and FedMF: the real ServerApp and ClientApp code on the in-memory grid (each ran
# as a loopback deployment of its own before; the deployments' transport is the same for every
# algorithm, and test_flower_deploy*.py keep one per kind of party: clients, a third party,
# hosts with an aggregation server, a metadata-only server, secure sums). Tolerances as there:
# FedAvg-NeuMF 1e-6 relative (a SuperNode's cohort is padded to its own widest client; observed
# bit-identical), FedMF 1e-12 (fixed-point updates, exact ciphertext sums; observed identical).
FEDAVG = {"rounds": 2, "eval_every": 1, "local_epochs": 1}
FEDMF = {"rounds": 2, "eval_every": 1, "key_bits": 512, "clients_per_round": 3, "dim": 4,
         "upload": "part"}


@pytest.mark.parametrize(("algorithm", "settings", "tol"),
                         [("fedavg-ncf", FEDAVG, 1e-6), ("fedmf", FEDMF, 1e-12)],
                         ids=["fedavg-ncf", "fedmf"])
def test_fedavg_ncf_and_fedmf_equal_simulator(tmp_path, ml100k_root, algorithm: str,
                                              settings: dict, tol: float) -> None:
    res, grid = local_run(tmp_path, ml100k_root, algorithm, settings)
    sim = simulate(algorithm, "ml-100k", data_dir=ml100k_root, overrides=settings,
                   options=SIM).to_json()
    assert res["status"] == "complete" and res["engine"]["dead_nodes"] == []
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert set(a["eval"]) == set(b["eval"]) and rel_diff(a["eval"], b["eval"]) <= tol
        timing = {k for k in b["train"] if k.startswith("time_")}
        assert set(a["train"]) == set(b["train"])
        assert rel_diff({k: v for k, v in a["train"].items() if k not in timing},
                        {k: v for k, v in b["train"].items() if k not in timing}) <= tol
        assert a["communication"] == b["communication"]
    steps = res["communication"]["by_step"]
    assert steps == sim["communication"]["by_step"]
    if algorithm == "fedavg-ncf":
        assert res["final"]["eval_clients"] == USERS
    else:
        assert res["history"][0]["train"]["clients"] == 3
        assert steps["public_key (server->client)"]["messages"] == 1
    assert all("fedrec_states" in s for s in grid.states.values())


def test_secure_fcf_secagg_plus_equals_simulator(tmp_path, ml100k_root) -> None:
    # SecAgg+ (Bell et al. 2020) over the relay; its client state between the secure-sum steps
    # lives in each node's Context.state. A loopback deployment of Bonawitz et al.'s variant is
    # in test_flower_secagg.py; the variants differ only in the apps' code, which runs here.
    settings = {"rounds": 2, "eval_every": 1, "dim": 16, "secure_aggregation": True,
                "secagg_variant": "secagg+"}
    res, grid = local_run(tmp_path, ml100k_root, "fcf", settings)
    sim = simulate("fcf", "ml-100k", data_dir=ml100k_root, overrides=settings,
                   options=SIM).to_json()
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert a["train"] == b["train"] == {"clients": USERS, "dropped_after_keys": 0}
        assert rel_diff(a["eval"], b["eval"]) == 0.0
        assert a["communication"] == b["communication"]
    steps = res["communication"]["by_step"]
    assert steps == sim["communication"]["by_step"]
    # 40 clients, k = 14: each share upload holds 14 ciphertexts of 168 bytes, not 39.
    share_up = steps["secagg_share (client->server)"]
    assert share_up["messages"] == 2 * USERS
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


@pytest.mark.parametrize("secure", [True, False], ids=["secure", "plain"])
def test_fl_mv_dssm_views_on_their_devices_node_equal_simulator(
        tmp_path, ml100k_root, load_once, multiview_once, secure: bool) -> None:
    """The views of a device are co-located with it: hosted by its SuperNode, built from that
    node's own data, each with its own state and secret; their messages to the device travel as
    sealed mail through the relay and are metered as in the simulator. Tolerance 1e-6 relative:
    a node trains its share of the cohort's views in one stack
    (:mod:`fedrec.algorithms.methods.fl_mv_dssm.cohort`), padded to that share's widest batch, so
    float32
    reductions round differently from the simulator's stack of the whole cohort (observed
    ~1e-9 relative on the update norm; the ledgers are equal)."""
    from fedrec.algorithms.methods.fl_mv_dssm import multiview_of
    from fedrec.algorithms.methods.fl_mv_dssm.view import VIEW, device_of, name_of
    from fedrec.engines.common import load_sliced

    settings = dict(FLMV, secure_aggregation=secure)
    res, grid = local_run(tmp_path, ml100k_root, "fl-mv-dssm", settings)
    sim = simulate("fl-mv-dssm", "ml-100k", data_dir=ml100k_root, overrides=settings,
                   options=SIM).to_json()
    assert res["status"] == "complete" and res["engine"]["dead_nodes"] == []
    assert res["engine"]["nodes"] == 3  # no SuperNode of the views' own
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert set(a["eval"]) == set(b["eval"]) and rel_diff(a["eval"], b["eval"]) <= 1e-6
        timing = {k for k in b["train"] if k.startswith("time_")}
        assert set(a["train"]) == set(b["train"])
        assert rel_diff({k: v for k, v in a["train"].items() if k not in timing},
                        {k: v for k, v in b["train"].items() if k not in timing}) <= 1e-6
        assert a["train"]["clients"] == b["train"]["clients"] == 8
        assert a["communication"] == b["communication"]
    assert rel_diff(res["final"], sim["final"]) <= 1e-6
    steps = res["communication"]["by_step"]
    assert steps == sim["communication"]["by_step"]
    assert steps["view_train (view->client)"]["messages"] == 2 * 2 * 8  # metered mail
    assert any(k.startswith("secagg_mask") for k in steps) == secure
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
