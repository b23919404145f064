"""Parties beyond FCF's and FedGNN's on a real Flower deployment (a metadata-only server with
PTF-FedRec, hosts and an aggregation server with feras): 1 SuperLink and 3 client SuperNodes on
loopback, 2 rounds on the first 40 users of ML-100K (feras: on Cora),
against the in-process simulator with the same seed. The ledgers (bytes and messages per round,
direction, step) must be identical; the metrics within:

* PTF-FedRec: 1e-6 relative (observed bit-identical), training statistics included (server
  loss, the top-guess attack's scores; not the wall-clock time split), for the same reason: same
  client code, and the server's model, graph and dispersal depend only on the uploads, which
  arrive in the simulator's order. Its server-model metrics (``Recall@20``, ...) need the
  experimenter's oracle (``experimenter_oracle=True``: the ServerApp loads the held-out data to
  score the hidden model and the attack, never to train; see
  :mod:`fedrec.engines.flower.server`).
* feras (3 hosts, one per client SuperNode, and the aggregation server on a service SuperNode
  of its own; the default sequential schedule, 2 rounds of one iteration, weights averaged in
  the second): exact. Each host's step is its own computation and the AS combines the uploads
  in the simulator's order.

The two deployments run concurrently (they mostly wait on Flower's polling); feras's starts
once PTF-FedRec's has finished its first round. FedAvg-NeuMF and FedMF run the same apps on the
in-memory grid (test_flower_runtime.py): their transport is this one.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.methods.ptf_fedrec import ptf_instruments
from fedrec.engines.common import load_sliced, metadata_dataset, public_meta, resolve, simulate
from fedrec.engines.flower.deploy import deploy
from fedrec.errors import ConfigError
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import RunOptions

pytestmark = pytest.mark.slow  # real Flower deployments (SuperLink + SuperNode processes)

USERS = 40
# One client secret for the deployment and the simulator: compared draw for draw.
SECRETS = ClientSecrets(bytes(range(32)))
PTF = {"rounds": 2, "eval_every": 1, "local_epochs": 1, "server_epochs": 1}
# Few exchanges (each waits on Flower's polling): one iteration a round, one evaluation.
FERAS = {"rounds": 2, "eval_every": 2, "num_hosts": 3, "hidden": 16, "iterations_per_round": 1,
         "weight_every": 2, "presample": 20}


@dataclass(frozen=True)
class Job:
    dataset: str
    overrides: dict
    oracle: bool = False
    max_users: int | None = USERS
    clients: int = USERS  # the clients the job declares
    services: int = 0  # service SuperNodes on top of the 3 client ones
    later: bool = False  # start after another job's first round (see the fixture)


JOBS = {"ptf-fedrec": Job("ml-100k", PTF, oracle=True),
        "feras": Job("cora", FERAS, max_users=None, clients=3, services=1, later=True)}


def _staged(root, job: Job) -> bool:
    return job.dataset != "cora" or (root / "planetoid" / "ind.cora.graph").is_file()


@pytest.fixture(scope="module")
def runs(ml100k_root, deploy_helpers):
    jobs = {alg: job for alg, job in JOBS.items() if _staged(ml100k_root, job)}
    watches = {alg: deploy_helpers.Watch() for alg in jobs}
    # The later jobs start once an earlier one has finished a round. With all four starting at
    # once on the two shared cores (load ~30), a ServerApp ended twice before fedrec's code ran,
    # the SuperLink refusing its task token; three starting together is what passed before.
    first_round = threading.Event()

    def run(alg: str) -> dict:
        job = jobs[alg]
        if job.later:
            first_round.wait(timeout=300)

        def on_round(row: dict, dep) -> None:
            watches[alg](row, dep)
            first_round.set()

        options = RunOptions(
            engine="flower", max_users=job.max_users, client_secret=SECRETS, nodes=3,
            timeout=600, call_timeout=300, straggler_timeout=0.0,
            experimenter_oracle=job.oracle, progress=False)
        return deploy(alg, job.dataset, data_dir=ml100k_root, overrides=job.overrides,
                      options=options, on_round=on_round)

    with cf.ThreadPoolExecutor(len(jobs)) as pool:
        futs = {alg: pool.submit(run, alg) for alg in jobs}
        results = {alg: f.result() for alg, f in futs.items()}
    return results, watches


def _compare(alg: str, runs, root, helpers, tol: float) -> tuple[dict, dict]:
    results, watches = runs
    if alg not in results:
        pytest.skip(f"{JOBS[alg].dataset} is not staged")
    res, job = results[alg], JOBS[alg]
    sim = simulate(alg, job.dataset, data_dir=root, overrides=job.overrides,
                   options=RunOptions(max_users=job.max_users, client_secret=SECRETS,
                                      progress=False)).to_json()
    assert res["engine"]["nodes"] == 3 + job.services
    assert res["engine"]["clients"] == job.clients
    assert res["engine"]["experimenter_oracle"] == job.oracle
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert (a.get("eval") is None) == (b.get("eval") is None)  # eval_every > 1: none
        if b.get("eval") is not None:
            assert set(a["eval"]) == set(b["eval"])
            assert helpers.rel_diff(a["eval"], b["eval"]) <= tol
        timing = {k for k in b["train"] if k.startswith("time_")}
        assert set(a["train"]) == set(b["train"])
        train = {k: v for k, v in a["train"].items() if k not in timing}
        assert helpers.rel_diff(train, {k: b["train"][k] for k in train}) <= tol
        assert a["communication"] == b["communication"]
    assert res["communication"]["by_step"] == sim["communication"]["by_step"]
    helpers.no_process_left(watches[alg])
    return res, sim


def test_ptf_fedrec_deployment_equals_simulator(runs, ml100k_root, deploy_helpers) -> None:
    res, _ = _compare("ptf-fedrec", runs, ml100k_root, deploy_helpers, 1e-6)
    final = res["final"]
    assert {"Recall@20", "NDCG@20", "client_Recall@20"} <= set(final)  # server + clients
    assert "attack_f1" in res["history"][0]["train"]
    assert res["history"][0]["train"]["dispersed_clients"] == USERS


def test_feras_deployment_equals_simulator(runs, ml100k_root, deploy_helpers) -> None:
    res, _ = _compare("feras", runs, ml100k_root, deploy_helpers, 0.0)
    assert res["final"]["eval_clients"] == 3 and 0.0 < res["final"]["accuracy"] < 1.0
    steps = res["communication"]["by_step"]
    assert steps["embed (client->aggregator)"]["messages"] == 2 * 3  # 2 iterations, 3 hosts
    assert steps["average_weights (aggregator->client)"]["messages"] == 3  # once, to each host


def test_ptf_server_built_from_metadata_holds_no_ground_truth(ml100k_root) -> None:
    """What a ServerApp builds: no oracle, no attack truth, until the experimenter attaches
    them; the clients' metrics alone are then reported."""
    spec, cfg = resolve("ptf-fedrec", "ml-100k", None, PTF)
    ds = load_sliced("ml-100k", ml100k_root, USERS)
    job = spec.build_job(cfg, metadata_dataset(public_meta(ds), range(USERS)),
                         torch.device("cpu"))
    server = job.server
    assert server.score_oracle is None and server.attack is None
    assert (server.num_users, server.num_items) == (USERS, ds.num_items)
    assert spec.instruments is ptf_instruments
    server.attach_instruments(ptf_instruments(cfg, ds))
    assert server.score_oracle is not None and server.attack is not None
    rated = np.concatenate([part.items[part.users == 0] for part in (ds.train, ds.valid, ds.test)])
    truth = server.attack.positives[0]  # user 0's positives of the per-user re-split
    assert 1 < len(truth) < len(np.unique(rated)) and np.isin(truth, rated).all()
    # The other algorithms take no instruments.
    _, cfg2 = resolve("fedavg-ncf", "ml-100k", None, {"rounds": 2})
    other = get_algorithm("fedavg-ncf").build_job(cfg2, ds, torch.device("cpu")).server
    with pytest.raises(TypeError):
        other.attach_instruments({"score_oracle": None})


@pytest.mark.parametrize("algorithm", ["pmf", "gnn-central", "lightgcn", "ngcf", "neumf"])
def test_centralized_algorithms_are_refused(algorithm, ml100k_root) -> None:
    with pytest.raises(ConfigError, match="not a federated algorithm"):
        deploy(algorithm, "ml-100k", data_dir=ml100k_root,
               options=RunOptions(engine="flower", max_users=USERS))
