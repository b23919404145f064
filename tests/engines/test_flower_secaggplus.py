"""FCF with SecAgg+ (``secagg_variant: secagg+``) on a real Flower deployment (loopback, 1
SuperLink, 3 client SuperNodes, first 40 users of ML-100K, 2 rounds), against the simulator:
equal metrics bit for bit and identical ledgers per step (the masks cancel exactly in the ring,
whatever keys and graph seed the parties draw; each client's state between the secure-sum steps
lives in its SuperNode's persistent state). About 4 minutes on two busy cores.
"""

from __future__ import annotations

import pytest

from fedrec.engines.common import simulate
from fedrec.engines.flower.deploy import deploy
from fedrec.federation.secrets import ClientSecrets

pytestmark = pytest.mark.slow  # a real Flower deployment (SuperLink + SuperNode processes)

USERS = 40
SECRETS = ClientSecrets(bytes(range(32)))
PLUS = {"rounds": 2, "eval_every": 1, "dim": 16, "secure_aggregation": True,
        "secagg_variant": "secagg+"}


def test_secaggplus_fcf_deployment_equals_simulator(ml100k_root, deploy_helpers) -> None:
    h = deploy_helpers
    watch = h.Watch()
    res = deploy("fcf", "ml-100k", data_dir=ml100k_root, overrides=PLUS, max_users=USERS,
                 client_secrets=SECRETS, nodes=3, timeout=600, call_timeout=300,
                 straggler_timeout=0.0, on_round=watch)
    sim = simulate("fcf", "ml-100k", data_dir=ml100k_root, overrides=PLUS, max_users=USERS,
                   client_secrets=SECRETS).to_json()
    assert res["status"] == "complete" and res["engine"]["clients"] == USERS
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert a["train"] == b["train"] == {"clients": USERS, "dropped_after_keys": 0}
        assert h.rel_diff(a["eval"], b["eval"]) == 0.0
        assert a["communication"] == b["communication"]
    steps = res["communication"]["by_step"]
    assert steps == sim["communication"]["by_step"]
    # 40 clients, k = 14: each share upload holds 14 ciphertexts of 168 bytes, not 39.
    share_up = steps["secagg_share (client->server)"]
    assert share_up["messages"] == 2 * USERS
    assert 14 * 168 < share_up["bytes"] / share_up["messages"] < 20 * 168
    h.no_process_left(watch)
