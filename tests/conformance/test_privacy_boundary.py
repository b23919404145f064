"""Changing one party's data changes only that party's messages, for every federated method.

One client (the first that speaks in round 1) is given another client's data (every array of
it; its identity kept) -- and in turn one party of every other role that holds data (FL-MV-DSSM's
views) another's of its role --, and the whole run -- two rounds, each evaluated -- is replayed. The
property, read off the runtime's observers and nothing of the method's: a message of any other
party may differ only after that party received a message that differed (what the changed data
reaches, it reaches as messages the runtime meters and an attack sees), and the changed
client's own messages do differ (the check can fail). Methods whose simulator batches a
cohort's computation may move another party's message by float rounding, within the tolerance
their contract states with its reason.

Secure sums run in the clear here (``secure_aggregation: false``, same vectors summed): their
keys and self-mask seeds come from ``os.urandom`` by design, so two runs' masked messages differ
whatever the data; what they mask is what this check compares. Methods with the user-level DP
aggregate are checked in a DP run too, its sum unmasked (``dp_masking: false``) for the same
reason: each device's clipped, noised ring vector is then what crosses; there the experimenter,
not the server, asks for the evaluation, with the model the server released (what reached the
server reaches the experimenter's requests through that model).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fedrec.core.codec import decode
from fedrec.federation.message import CLIENT, EXPERIMENTER, SERVER

from .harness import (
    FEDERATED,
    WITH_DP,
    Wire,
    applies,
    config_of,
    contract_of,
    dataset_of,
    dp_settings,
    plain_sums,
    record,
    run,
    same_arrays,
    shape_likeness,
    spec_of,
    swapped_data,
    trainer_of,
    with_party_data,
)

pytestmark = pytest.mark.usefixtures("single_thread")  # bit-exact: see conftest.single_thread


def _close(a: bytes, b: bytes, tolerance: float) -> bool:
    """Two payloads equal up to ``tolerance`` relative in their floats, exactly otherwise."""
    def same(x, y) -> bool:
        if isinstance(x, dict):
            return isinstance(y, dict) and x.keys() == y.keys() and all(
                same(x[k], y[k]) for k in x)
        if isinstance(x, list | tuple):
            return (isinstance(y, list | tuple) and len(x) == len(y)
                    and all(same(i, j) for i, j in zip(x, y, strict=True)))
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.dtype.kind == "f":
            return bool(np.allclose(x, y, rtol=tolerance, atol=tolerance * 1e-1))
        return bool(np.array_equal(x, y))

    return tolerance > 0 and same(decode(a), decode(b))


def assert_only_through_messages(before: list[Wire], after: list[Wire], target: object,
                                 tolerance: float) -> None:
    """The causality property (see the module docstring) over two records of one run."""
    assert [m[:3] for m in before] == [m[:3] for m in after], \
        "the run's sequence of messages changed with one party's data"
    reached: set[object] = {target}  # parties that received a message that differed
    target_differs = False
    for b, a in zip(before, after, strict=True):
        if b.payload == a.payload:
            continue
        # The experimenter evaluates the model the server releases (a DP run's evaluation):
        # what reached the server reaches it with that model.
        released = b.sender == EXPERIMENTER and SERVER in reached
        if b.sender == target:
            target_differs = True
        elif b.sender not in reached and not released:
            assert _close(b.payload, a.payload, tolerance), (
                f"{b.sender!r} sent a different {b.step!r} message to {b.receiver!r} before "
                f"receiving any message that differed: it reached {target!r}'s data")
        reached.add(b.receiver)
    assert target_differs, f"{target!r}'s messages did not change with its data"


#: (method, dropout, settings over its contract's): the contract's settings with and without
#: dropouts, then each of its declared variants, then its DP run (unmasked).
CASES = [(name, dropout, {}) for name in FEDERATED for dropout in (0.0, 0.3)] + [
    (name, 0.0, dict(variant)) for name in FEDERATED
    for variant in contract_of(name).boundary_variants] + [
    (name, 0.0, {**dp_settings(name), "dp_masking": False}) for name in WITH_DP]


@pytest.mark.parametrize(("name", "dropout", "variant"), CASES,
                         ids=[f"{n}-{d}" + "".join(f"-{k}={v}" for k, v in s.items())
                              for n, d, s in CASES])
def test_changing_one_partys_data_changes_only_its_messages(name: str, dropout: float,
                                                            variant: dict, data_root) -> None:
    """With ``dropout``, clients drop out as the runtime draws it (from the public seed:
    data-blind, so the same clients answer in both runs); checked where the job has clients
    enough that a round keeps one (a round without is ``test_no_update``'s)."""
    contract = applies(name, "privacy_boundary")
    cfg = config_of(name, **{**variant, "dropout": dropout, **plain_sums(name)})
    ds = dataset_of(name, data_root)
    spec = spec_of(name)
    baseline = trainer_of(name, cfg, ds)
    if dropout and len(baseline.runtime.client_ids) < 10:
        pytest.skip(f"{name}: {len(baseline.runtime.client_ids)} clients, too few to keep one "
                    f"in every round at dropout {dropout}")
    before = record(baseline)
    run(baseline, cfg)
    spoke = {m.sender for m in before}
    # One party of every role that holds data (clients; FL-MV-DSSM's views too), in turn.
    roles = sorted({p.role for p in baseline.job.parties if dataclasses.is_dataclass(p.data)})
    assert CLIENT in roles
    for role in roles:
        parties = [p for p in baseline.job.parties if p.role == role]
        target = next(p for p in parties if p.id in spoke)
        others = [p for p in reversed(parties)
                  if p.id != target.id and not same_arrays(p.data, target.data)]
        # The other party whose arrays have the target's shapes most alike, float arrays first
        # (a view's features have its view's width; clients' numbers of rows differ).
        donor = max(others, key=lambda p: shape_likeness(p.data, target.data))
        job = spec.build_job(cfg, ds, baseline.runtime.device)
        changed = trainer_of(name, cfg, ds,
                             with_party_data(job, {target.id: swapped_data(target, donor)}))
        after = record(changed)
        run(changed, cfg)
        assert_only_through_messages(before, after, target.id, contract.boundary_tolerance)
