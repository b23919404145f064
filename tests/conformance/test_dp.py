"""Every federated method with the user-level DP aggregate (``dp`` in its config): in a DP run
the server receives no clear value derived from client data -- only the secure sum's public
keys, encrypted shares, masked vectors (uniform in the ring) and mask shares -- and evaluation
goes to the experimenter, never the server."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.core.codec import decode
from fedrec.federation.message import EXPERIMENTER, SERVER
from fedrec.federation.secure_sum import SECAGG_STEPS, STEP_MASK, STEP_SHARE, STEP_UNMASK

from .harness import (
    FEDERATED,
    applies,
    config_of,
    dataset_of,
    dp_settings,
    has_option,
    record,
    run,
    trainer_of,
)

#: Every key a message to the server may hold in a DP run, by step (a secure sum's; the keys
#: are advertised in the method's own step): key names ending in "/" are prefixes.
ALLOWED = {STEP_SHARE: {"to/"}, STEP_MASK: {"y"}, STEP_UNMASK: {"b/", "s/"}}
ADVERTISED = {"c_pk", "s_pk"}


@pytest.mark.parametrize("name", FEDERATED)
def test_a_dp_run_sends_the_server_no_clear_value(name: str, data_root) -> None:
    if not has_option(name, "dp"):
        pytest.skip(f"{name} has no DP aggregate yet (issue 38)")
    applies(name, "dp")
    cfg = config_of(name, **dp_settings(name))
    trainer = trainer_of(name, cfg, dataset_of(name, data_root))
    seen = record(trainer)
    run(trainer, cfg)
    to_server = [m for m in seen if m.receiver == SERVER]
    assert to_server and set(SECAGG_STEPS) <= {m.step for m in to_server}
    for m in to_server:
        allowed = ALLOWED.get(m.step, ADVERTISED)
        payload = decode(m.payload)
        for key in payload:
            assert any(key == a or (a.endswith("/") and key.startswith(a)) for a in allowed), \
                (m.step, key)
        if m.step == STEP_MASK:  # masked: uniform in the ring, nothing in clear
            y = np.asarray(payload["y"])
            assert y.dtype.kind == "u" and np.unique(y).size > 0.99 * y.size
    evaluated = [m for m in seen if EXPERIMENTER in (m.sender, m.receiver)]
    assert evaluated and all(m.step == "evaluate" for m in evaluated)
    assert not any(m.step == "evaluate" for m in to_server)
    report = trainer.privacy_report()
    assert report["epsilon"] == report["epsilon_server"] > 0
