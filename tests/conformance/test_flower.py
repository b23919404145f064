"""Every federated method on Flower gives what the simulator gives: the real ServerApp (its
server built from the nodes' public metadata) and ClientApp code over an in-memory grid of
three client SuperNodes and one per service role
(:func:`fedrec.engines.flower.grid.run_in_memory`), against the simulator under the same client
secret. Metrics and training statistics agree within the tolerance the method's contract
states with its reason (0: to the last bit); every round's ledger, and the run's by step,
exactly; no SuperNode is lost."""

from __future__ import annotations

import pytest

from fedrec.engines.common import simulate
from fedrec.options import RunOptions

from .harness import (
    FEDERATED,
    ROUNDS,
    SECRETS,
    applies,
    config_of,
    contract_of,
    dataset_of,
    relative_difference,
    spec_of,
    without_timings,
)

pytest.importorskip("flwr", reason="the Flower engine needs flwr (pip install .[flower])")
pytestmark = pytest.mark.usefixtures("one_thread_module")


@pytest.mark.parametrize("name", FEDERATED)
def test_flower_equals_the_simulator(name: str, data_root, tmp_path, load_once) -> None:
    from fedrec.config import to_dict
    from fedrec.engines.flower.grid import run_in_memory

    contract = applies(name, "flower")
    dataset_of(name, data_root)  # skips if not staged
    settings = to_dict(config_of(name))
    oracle = spec_of(name).instruments is not None
    options = RunOptions(engine="flower", nodes=3, max_users=contract.max_users,
                         client_secret=SECRETS, experimenter_oracle=oracle, progress=False,
                         connect_timeout=5.0, call_timeout=2.0, straggler_timeout=0.5)
    flower, _ = run_in_memory(name, contract.dataset, data_root, tmp_path, overrides=settings,
                              options=options)
    sim = simulate(name, contract.dataset, data_dir=data_root, overrides=settings,
                   options=RunOptions(max_users=contract.max_users, client_secret=SECRETS,
                                      progress=False)).to_json()
    tolerance = contract_of(name).flower_tolerance
    assert flower["status"] == "complete" and flower["engine"]["dead_nodes"] == []
    assert len(flower["history"]) == len(sim["history"]) == ROUNDS
    for a, b in zip(flower["history"], sim["history"], strict=True):
        assert relative_difference(a["eval"], b["eval"]) <= tolerance
        assert relative_difference(without_timings(a["train"]),
                                   without_timings(b["train"])) <= tolerance
        assert a["communication"] == b["communication"]
    assert relative_difference(flower["final"], sim["final"]) <= tolerance
    assert flower["communication"]["by_step"] == sim["communication"]["by_step"]
