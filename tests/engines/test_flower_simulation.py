"""Flower's simulation engine (Ray, :func:`fedrec.engines.flower.simulation.simulate_on_flower`)
runs fedavg-gcn's graph hosts as virtual SuperNodes and equals fedrec's simulator exactly (each
host's step is its own computation; the server averages in the job's host order)."""

from __future__ import annotations

import pytest

from fedrec.engines.common import simulate
from fedrec.federation.secrets import ClientSecrets

pytest.importorskip("ray", reason="Flower's simulation engine needs ray (pip install .[flower])")
pytestmark = pytest.mark.slow  # starts Ray and a virtual SuperNode per partition

SECRETS = ClientSecrets(bytes(range(32)))
GCN = {"rounds": 2, "eval_every": 1, "num_hosts": 4, "local_epochs": 2}


def test_fedavg_gcn_on_flower_simulation_equals_simulator(data_root) -> None:
    from fedrec.engines.flower.simulation import simulate_on_flower

    if not (data_root / "planetoid" / "ind.cora.graph").is_file():
        pytest.skip("Cora is not staged")
    res = simulate_on_flower("fedavg-gcn", "cora", data_dir=data_root, overrides=GCN, nodes=2,
                             client_secrets=SECRETS, timeout=600)
    sim = simulate("fedavg-gcn", "cora", data_dir=data_root, overrides=GCN,
                   client_secrets=SECRETS).to_json()
    assert res["engine"]["name"] == "flower-simulation" and res["engine"]["clients"] == 4
    for a, b in zip(res["history"], sim["history"], strict=True):
        assert a["eval"] == b["eval"] and a["communication"] == b["communication"]
    assert res["communication"]["by_step"] == sim["communication"]["by_step"]
