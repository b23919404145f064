"""FCF with secure aggregation on a real Flower deployment (loopback, 1 SuperLink, 3 client
SuperNodes, first 40 users of ML-100K, 2 rounds), against the simulator.

* The secure run equals the simulator's secure run bit for bit (the masks cancel exactly in the
  ring, whatever keys the nodes draw), with identical ledgers per step: the four secure-sum
  steps carry the same bytes over Flower as in the simulator.
* A SuperNode SIGKILLed when round 1 is done is absent from round 2: the secure sum finishes
  with the 26 survivors (>= t = 24 of the 40-client cohort), whichever step the kill landed in,
  and the result is the simulator's with those clients dropped.
* SecAgg+ (``secagg_variant: secagg+``) runs the same transport; its apps' code is compared
  with the simulator on the in-memory grid (test_flower_runtime.py).

The two deployments run concurrently (they mostly wait on Flower's polling).
"""

from __future__ import annotations

import concurrent.futures as cf

import pytest

from fedrec.engines.common import simulate
from fedrec.engines.flower.deploy import deploy
from fedrec.engines.flower.node import node_share
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import RunOptions

pytestmark = pytest.mark.slow  # real Flower deployments (SuperLink + SuperNode processes)

USERS = 40
# One client secret for the deployment and the simulator: compared draw for draw.
SECRETS = ClientSecrets(bytes(range(32)))
# The simulator twin of the deployments here: the same users, the same client secret.
SIM = RunOptions(max_users=USERS, client_secret=SECRETS, progress=False)
DEPLOY = RunOptions.of(SIM, engine="flower", nodes=3, timeout=600, call_timeout=300)
SECURE = {"rounds": 2, "eval_every": 1, "dim": 16, "secure_aggregation": True}
KILL = dict(SECURE, eval_every=2)


def _run(data_root, overrides: dict, watch, straggler: float) -> dict:
    return deploy("fcf", "ml-100k", data_dir=data_root, overrides=overrides,
                  options=RunOptions.of(DEPLOY, straggler_timeout=straggler), on_round=watch)


@pytest.fixture(scope="module")
def runs(ml100k_root, deploy_helpers):
    h = deploy_helpers
    watches = {"secure": h.Watch(), "kill": h.Watch(kill="supernode-2")}
    jobs = {"secure": (SECURE, 0.0), "kill": (KILL, 20.0)}
    with cf.ThreadPoolExecutor(len(jobs)) as pool:
        futs = {k: pool.submit(_run, ml100k_root, ov, watches[k], st)
                for k, (ov, st) in jobs.items()}
        results = {k: f.result() for k, f in futs.items()}
    return results, watches


def test_secure_fcf_deployment_equals_simulator(runs, ml100k_root, deploy_helpers) -> None:
    h = deploy_helpers
    results, watches = runs
    res = results["secure"]
    sim = simulate("fcf", "ml-100k", data_dir=ml100k_root, overrides=SECURE,
                   options=SIM).to_json()
    assert res["status"] == "complete" and res["engine"]["clients"] == USERS
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert a["train"] == b["train"] == {"clients": USERS, "dropped_after_keys": 0}
        assert h.rel_diff(a["eval"], b["eval"]) == 0.0
        assert a["communication"] == b["communication"]
    steps = res["communication"]["by_step"]
    assert steps == sim["communication"]["by_step"]
    assert any(k.startswith("secagg_unmask") for k in steps)
    h.no_process_left(watches["secure"])


def test_secure_run_survives_a_killed_supernode(runs, ml100k_root, simulate_lost,
                                                deploy_helpers) -> None:
    h = deploy_helpers
    results, watches = runs
    res, watch = results["kill"], watches["kill"]
    assert watch.killed
    lost = node_share(list(range(USERS)), 2, 3)
    assert res["status"] == "complete" and len(res["engine"]["dead_nodes"]) == 1
    assert res["history"][0]["train"] == {"clients": USERS, "dropped_after_keys": 0}
    # Whether the node answered round 2's first steps before dying or not, its clients are
    # not in the sum; if it had shared keys, the others' unmasking shares removed its masks.
    round2 = res["history"][1]["train"]
    assert round2["clients"] == USERS - len(lost)
    assert round2["dropped_after_keys"] in (0, len(lost))
    assert res["final"]["eval_clients"] == USERS - len(lost)
    expected = simulate_lost(ml100k_root, KILL, USERS, lost, train_lost=True,
                             client_secrets=SECRETS)
    assert h.rel_diff(res["final"], expected) <= 1e-12
    h.no_process_left(watch)
