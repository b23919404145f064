"""Every federated method with malicious clients (``poisoning`` in its config): malicious
clients are ordinary parties. Their messages are metered and observed like any other; in the
first round a benign client's message differs from the clean run's only after it received a
message that differed (what the attackers change reaches it as messages; a method whose first
round sends nothing shaped by others, as FCF's, sends the same messages whoever else attacks);
no malicious client answers an evaluation; and the run reports the targets' exposure. A
message of a sender not yet reached may still differ by the float rounding the method's contract
declares for other parties' data (as the privacy-boundary check: a cohort batched with the
attackers rounds differently).

Secure sums run in the clear (``plain_sums``): their masks come from ``os.urandom``, so two
runs' masked messages differ whatever the data."""

from __future__ import annotations

from collections import Counter

import pytest

from fedrec.federation.message import CLIENT, SERVER

from .harness import (
    CPU,
    FEDERATED,
    SECRETS,
    Wire,
    applies,
    config_of,
    dataset_of,
    has_option,
    plain_sums,
    record,
    spec_of,
)
from .test_privacy_boundary import _close


def _first_round(name: str, data_root, **extra):
    cfg = config_of(name, **{**plain_sums(name), **extra})
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
        _differs_only_through_messages(clean_seen, bad_seen, malicious, tolerance)
        later = record(bad)
        assert {"ER@5", "ER@10"} <= set(bad.evaluate("valid"))
        evaluated = {m.sender for m in later if m.step == "evaluate"}
        assert evaluated and not evaluated & malicious
        # The exposure shares (whether a client rated a target) are the experimenter's.
        assert not any(m.receiver == SERVER or m.sender == SERVER
                       for m in later if m.step == "evaluate")
        assert all(bad.runtime.role(c) == CLIENT for c in malicious)


def _differs_only_through_messages(clean: list[Wire], attacked: list[Wire],
                                   malicious: set, tolerance: float) -> None:
    """A message of the attacked run differs from its counterpart in the clean run (the same
    sender, step, receiver and occurrence) only if its sender is malicious or received, earlier,
    a message that differed or that the clean run did not have. The server counts as reached
    from the start: the fake users' registration changes the population it samples (and, in a
    method with a warm-up over every client, chunks)."""
    def keyed(seen: list[Wire]) -> list[tuple[tuple, bytes]]:
        count: Counter = Counter()
        out = []
        for m in seen:
            key = (m.sender, m.step, m.receiver)
            out.append(((*key, count[key]), m.payload))
            count[key] += 1
        return out

    before = dict(keyed(clean))
    reached = set(malicious) | {SERVER}
    for (sender, step, receiver, n), payload in keyed(attacked):
        if (sender, step, receiver, n) not in before:
            reached.add(receiver)
        elif before[(sender, step, receiver, n)] != payload:
            if sender not in reached:
                assert _close(payload, before[(sender, step, receiver, n)], tolerance), \
                    (sender, step, receiver, n)
            reached.add(receiver)
