"""Every federated method's builder works from the dataset's public metadata alone -- what a
Flower ServerApp builds its server from, with the public facts the clients' nodes report -- and
the server it builds starts exactly where the one built beside the data starts: the server's
initial state depends on no client's data. (The experimenter's instruments, which only compute
metrics, are handed to it as a deployment's ServerApp hands them: ``--experimenter-oracle``.)"""

from __future__ import annotations

import pytest

from fedrec.engines.common import metadata_dataset, node_meta

from .harness import CPU, FEDERATED, applies, config_of, dataset_of, equal_state, spec_of


@pytest.mark.parametrize("name", FEDERATED)
def test_the_server_builds_from_public_metadata(name: str, data_root) -> None:
    applies(name, "public_meta")
    cfg = config_of(name)
    ds = dataset_of(name, data_root)
    spec = spec_of(name)
    real = spec.build_job(cfg, ds, CPU)
    served = spec.build_job(cfg, metadata_dataset(node_meta(ds, real), real.client_ids), CPU)
    if spec.instruments is not None:
        served.server.attach_instruments(spec.instruments(cfg, ds))
    assert served.client_ids == real.client_ids
    assert served.service_roles == real.service_roles
    assert equal_state(served.server.state_dict(), real.server.state_dict())
