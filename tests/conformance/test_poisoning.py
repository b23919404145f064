"""Every federated method with malicious clients (``poisoning`` in its config): malicious
clients are ordinary parties. Their messages are metered and observed like any other; a
benign client's messages in the first round are the same whoever else attacks, until a message
that differs reaches it; no malicious client answers an evaluation; and the run reports the
targets' exposure."""

from __future__ import annotations

import pytest

from fedrec.federation.message import CLIENT

from .harness import (
    CPU,
    FEDERATED,
    SECRETS,
    applies,
    config_of,
    dataset_of,
    has_option,
    record,
    spec_of,
)
from .test_privacy_boundary import _close


def _first_round(name: str, data_root, **extra):
    cfg = config_of(name, **extra)
    trainer = spec_of(name).trainer(cfg, dataset_of(name, data_root), CPU, SECRETS)
    seen = record(trainer)
    trainer.train_round(1)
    return trainer, seen


@pytest.mark.parametrize("name", FEDERATED)
def test_malicious_clients_are_ordinary_parties(name: str, data_root) -> None:
    if not has_option(name, "poisoning"):
        pytest.skip(f"{name} has no malicious clients yet (issue 40)")
    tolerance = applies(name, "poisoning").boundary_tolerance
    attacks = ["random"] + (["crafted"] if spec_of(name).poisoning is not None else [])
    clean, clean_seen = _first_round(name, data_root, poisoning="random",
                                     malicious_fraction=0.0)
    for attack in attacks:
        bad, bad_seen = _first_round(name, data_root, poisoning=attack,
                                     malicious_fraction=0.05)
        clients = set(bad.runtime.client_ids)
        malicious = clients - set(clean.runtime.client_ids)
        assert malicious, "fake users join the population"
        sent = {m.sender for m in bad_seen}
        assert malicious <= sent  # metered and observed as any party's
        # A benign client's message may differ only after it received one that differed (what
        # the attackers reach, they reach as messages: FedGNN's graph expansion hands benign
        # clients co-raters' embeddings, the attackers' among them), or by the float rounding
        # the contract declares for other parties' data (as the privacy-boundary check).
        before = {(m.sender, m.step, m.receiver): m for m in clean_seen}
        reached = set(malicious)
        for m in bad_seen:
            key = (m.sender, m.step, m.receiver)
            if key in before and before[key].payload == m.payload:
                continue
            if key in before and m.sender in clients and m.sender not in reached:
                assert _close(m.payload, before[key].payload, tolerance), key
            reached.add(m.receiver)
        later = record(bad)
        assert {"ER@5", "ER@10"} <= set(bad.evaluate("valid"))
        evaluated = {m.sender for m in later if m.step == "evaluate"}
        assert evaluated and not evaluated & malicious
        assert all(bad.runtime.role(c) == CLIENT for c in malicious)
