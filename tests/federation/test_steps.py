"""Declared steps: dispatch to the declared method, a cohort method called once per cohort, a
broadcast said by the runtime (never inferred from payload identity), one-line errors."""

from __future__ import annotations

import pytest

from fedrec.errors import ProtocolError
from fedrec.federation import InProcessRuntime, PartyContext, PartyLogic, step
from fedrec.federation.runtime import declare_parties
from fedrec.federation.secure_sum import SECAGG_STEPS, SecureSumSteps


class Device(PartyLogic):
    def __init__(self) -> None:
        self.calls: list[tuple[str, list, object]] = []

    @step("echo")
    def echo(self, ctx: PartyContext, payload: dict) -> dict:
        return {"x": payload["x"] + ctx.party, "broadcast": ctx.broadcast}

    @step("sum", cohort=True, broadcast=True)
    def sum_all(self, ctxs, payload: dict) -> list[dict]:
        self.calls.append(("sum", [c.party for c in ctxs], payload))
        return [{"y": payload["x"] * c.party} for c in ctxs]

    @step("each", cohort=True)
    def each(self, ctxs, payloads) -> list[dict]:
        self.calls.append(("each", [c.party for c in ctxs], list(payloads)))
        return [{"y": p["x"]} for p in payloads]


def runtime(logic: PartyLogic, n: int = 4) -> InProcessRuntime:
    return InProcessRuntime(parties=declare_parties(dict.fromkeys(range(n)), logic))


def test_declared_steps_are_collected_per_class() -> None:
    assert set(Device.declared_steps) == {"echo", "sum", "each"}
    assert Device.declared_steps["sum"].cohort and Device.declared_steps["sum"].broadcast
    assert PartyLogic.declared_steps == {}


def test_broadcast_cohort_step_gets_the_one_payload_once() -> None:
    logic = Device()
    rt = runtime(logic)
    payload = {"x": 3}
    replies = rt.broadcast("sum", [0, 2, 3], payload)
    assert replies == {0: {"y": 0}, 2: {"y": 6}, 3: {"y": 9}}
    assert logic.calls == [("sum", [0, 2, 3], payload)]


def test_per_party_and_cohort_steps_get_their_own_requests() -> None:
    logic = Device()
    rt = runtime(logic)
    assert rt.call("echo", {1: {"x": 10}, 2: {"x": 20}}) == {
        1: {"x": 11, "broadcast": False}, 2: {"x": 22, "broadcast": False}}
    assert rt.call("each", {0: {"x": 5}, 3: {"x": 7}}) == {0: {"y": 5}, 3: {"y": 7}}
    assert logic.calls == [("each", [0, 3], [{"x": 5}, {"x": 7}])]


def test_the_runtime_says_broadcast_identity_does_not() -> None:
    rt = runtime(Device())
    shared = {"x": 1}
    # The same object sent by call is still a call; broadcast is what Runtime.broadcast sends.
    assert all(not r["broadcast"] for r in rt.call("echo", dict.fromkeys([0, 1], shared)).values())
    assert all(r["broadcast"] for r in rt.broadcast("echo", [0, 1], shared).values())
    with pytest.raises(ProtocolError, match="'sum' takes one payload broadcast"):
        rt.call("sum", dict.fromkeys([0, 1], shared))


def test_undeclared_step_is_one_line_naming_the_declared_ones() -> None:
    rt = runtime(Device())
    with pytest.raises(ProtocolError) as err:
        rt.broadcast("train", [0], {})
    assert str(err.value) == "Device has no step 'train' (declared: each, echo, sum)"


def test_subclass_override_runs_and_adds_steps() -> None:
    class Loud(Device):
        def echo(self, ctx, payload):  # the base's declaration, this method
            return {"loud": True}

        @step("extra")
        def extra(self, ctx, payload):
            return {"extra": ctx.party}

    rt = runtime(Loud())
    assert rt.call("echo", {1: {"x": 0}}) == {1: {"loud": True}}
    assert rt.call("extra", {2: {}}) == {2: {"extra": 2}}
    assert set(Loud.declared_steps) == {"echo", "sum", "each", "extra"}


def test_one_name_declared_twice_in_a_class_is_refused() -> None:
    with pytest.raises(TypeError, match="declares step 'a' twice"):
        class Twice(PartyLogic):
            @step("a")
            def one(self, ctx, payload):
                return None

            @step("a")
            def two(self, ctx, payload):
                return None


def test_secure_sum_steps_are_declared_by_the_mixin() -> None:
    class Summing(SecureSumSteps, PartyLogic):
        pass

    assert set(Summing.declared_steps) == set(SECAGG_STEPS)


def test_a_logic_that_overrides_handle_runs_undeclared_steps() -> None:
    class Legacy(PartyLogic):
        def handle(self, step_name, ctx, payload):
            return {"step": step_name}

    assert runtime(Legacy()).call("anything", {0: {}}) == {0: {"step": "anything"}}
