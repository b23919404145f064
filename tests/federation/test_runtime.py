"""The in-process runtime, driven by small party logics written here (testing the runtime itself,
not an algorithm): metering, routing, observers, rejection, dropouts, sampling, state."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.errors import ConfigError, NoUpdateError, ProtocolError
from fedrec.federation import (
    SERVER,
    THIRD_PARTY,
    InProcessRuntime,
    Message,
    PartyContext,
    PartyLogic,
    Routed,
    payload_size,
)
from fedrec.federation.runtime import (
    cohort_chunks,
    cohort_size,
    declare_parties,
    fixed_subset,
    sample_cohort,
)
from fedrec.federation.secrets import ClientSecrets


class Client(PartyLogic):
    """Replies to ``ping`` with its id and call count; routes to the third party on ``report``;
    echoes its inbox on ``read``; sends NaN on ``train`` when its data says so."""

    def __init__(self) -> None:
        self.seen: dict[int, list[tuple[str, dict, list[Message]]]] = {}
        self.cohort_sizes: list[int] = []

    def init_state(self, party, data, secret):
        return {"calls": 0, "created_round": None}

    def handle(self, step: str, ctx: PartyContext, payload: dict):
        ctx.state["calls"] += 1
        if ctx.state["created_round"] is None:
            ctx.state["created_round"] = ctx.round
        self.seen.setdefault(ctx.party, []).append((step, payload, list(ctx.inbox)))
        if step == "ping":
            return {"who": ctx.party, "calls": ctx.state["calls"],
                    "vec": np.full(ctx.data["size"], float(ctx.party), np.float32)}
        if step == "report":
            return Routed({THIRD_PARTY: {"from": ctx.party, "secret": ctx.data["secret"]}})
        if step == "read":
            return {"inbox": [m.payload["x"] for m in ctx.inbox],
                    "senders": [m.sender for m in ctx.inbox]}
        if step == "train":
            g = torch.full((3,), float(ctx.party))
            if ctx.data.get("bad") == "nan":
                g[1] = float("nan")
            if ctx.data.get("bad") == "inf":
                return {"g": g, "nested": [{"deep": np.array([np.inf])}]}
            return {"g": g}
        if step == "silent":
            return None
        raise ValueError(step)

    def handle_cohort(self, step, ctxs, payloads):
        self.cohort_sizes.append(len(ctxs))
        return super().handle_cohort(step, ctxs, payloads)


class Matcher(PartyLogic):
    """A third party: collects routed reports; on ``answer`` sends each reporter a message."""

    def handle(self, step: str, ctx: PartyContext, payload: dict):
        ctx.state.setdefault("got", []).extend(ctx.inbox)
        if step == "collect":
            return {"senders": sorted(m.sender for m in ctx.state["got"])}
        if step == "answer":
            return Routed({m.sender: {"x": np.array([m.payload["from"] * 10])}
                           for m in ctx.state["got"]})
        raise ValueError(step)


def make_runtime(n: int = 10, *, dropout: float = 0.0, seed: int = 0, bad=None, services=True):
    data = {c: {"size": c + 1, "secret": f"s{c}", "bad": (bad or {}).get(c)} for c in range(n)}
    logic = Client()
    rt = InProcessRuntime(
        parties=declare_parties(
            data, logic, {THIRD_PARTY: (Matcher(), {"matcher": True})} if services else None),
        seed=seed, dropout=dropout,
    )
    return rt, logic


def bare_runtime(ids, **kw) -> InProcessRuntime:
    """Clients ``ids`` with empty data, no service."""
    return InProcessRuntime(parties=declare_parties({c: {} for c in ids}, Client()), **kw)


def test_broadcast_is_metered_per_receiver_and_replies_reach_the_caller() -> None:
    rt, logic = make_runtime(10)
    rt.begin_round(1)
    payload = {"q": torch.zeros(50, 8), "note": "hello"}
    targets = [0, 2, 3, 7, 9]
    replies = rt.broadcast("ping", targets, payload)
    assert sorted(replies) == targets
    for c in targets:
        assert replies[c]["who"] == c and replies[c]["calls"] == 1
        assert replies[c]["vec"].shape == (c + 1,)
    # Only the targets ran, in one vectorised cohort call.
    assert sorted(logic.seen) == targets and logic.cohort_sizes == [5]
    t = rt.ledger.totals(1)
    assert t["messages_down"] == len(targets)
    assert t["bytes_down"] == len(targets) * payload_size(payload)
    assert t["bytes_up"] == sum(payload_size(r) for r in replies.values())
    assert t["bytes_total"] == t["bytes_down"] + t["bytes_up"]
    steps = rt.ledger.by_step()
    assert steps["ping (server->client)"]["messages"] == 5
    assert steps["ping (client->server)"]["messages"] == 5


def test_call_sends_each_party_its_own_request() -> None:
    rt, logic = make_runtime(4)
    rt.begin_round(1)
    requests = {c: {"i": c, "pad": np.zeros(c * 3)} for c in range(4)}
    rt.call("ping", requests)
    for c in range(4):
        assert logic.seen[c][0][1] is requests[c]
    assert rt.ledger.totals()["bytes_down"] == sum(payload_size(p) for p in requests.values())


def test_routed_messages_reach_the_service_inbox_not_the_server() -> None:
    rt, _ = make_runtime(6)
    rt.begin_round(1)
    server_seen: list[Message] = []
    rt.observers.append(lambda m: server_seen.append(m) if m.receiver == SERVER else None)
    replies = rt.broadcast("report", [1, 3, 4], {})
    assert replies == {}  # the reports went to the third party, not to the orchestrator
    assert server_seen == []
    routed_bytes = sum(payload_size({"from": c, "secret": f"s{c}"}) for c in (1, 3, 4))
    roles = rt.ledger.by_role()
    assert roles["third_party"]["received"] == routed_bytes
    assert rt.ledger.by_step()["report (client->third_party)"]["messages"] == 3
    # The third party finds them in its inbox the next time it is called.
    out = rt.call("collect", {THIRD_PARTY: {}})
    assert out == {THIRD_PARTY: {"senders": [1, 3, 4]}}
    assert rt.ledger.by_role()["third_party"]["sent"] == payload_size(out[THIRD_PARTY])
    # Third party -> clients: routed down, read from the clients' inboxes on their next call.
    assert rt.call("answer", {THIRD_PARTY: {}}) == {}
    got = rt.broadcast("read", [1, 2, 3, 4], {})
    assert [x.tolist() for x in got[3]["inbox"]] == [[30]]
    assert got[3]["senders"] == [THIRD_PARTY]
    assert got[2]["inbox"] == []
    assert rt.ledger.by_step()["answer (third_party->client)"]["direction"] == "down"
    # Inboxes are emptied once read.
    assert rt.broadcast("read", [3], {})[3]["inbox"] == []


def test_unknown_parties_are_config_errors() -> None:
    rt, _ = make_runtime(3)
    rt.begin_round(1)
    with pytest.raises(ConfigError, match="unknown client 7"):
        rt.broadcast("ping", [0, 7], {})
    with pytest.raises(ConfigError, match="aggregator"):
        rt.call("collect", {"aggregator": {}})
    rt_no_services, _ = make_runtime(3, services=False)
    with pytest.raises(ConfigError, match="third_party"):
        rt_no_services.call("collect", {THIRD_PARTY: {}})
    with pytest.raises(ConfigError):
        InProcessRuntime(parties=declare_parties({0: {}}, Client()), dropout=1.0)


def test_observers_see_exactly_what_each_party_receives() -> None:
    rt, logic = make_runtime(6)
    rt.begin_round(1)
    received: dict[object, list[Message]] = {}
    rt.observers.append(lambda m: received.setdefault(m.receiver, []).append(m))
    rt.broadcast("ping", range(6), {"a": 1})
    rt.broadcast("report", [0, 5], {"b": 2})
    rt.call("answer", {THIRD_PARTY: {"c": 3}})
    rt.broadcast("read", [0, 1, 5], {"d": 4})
    for c in range(6):
        # What the party's handle() was given: each request payload and each inbox message.
        seen = logic.seen[c]
        got = [p for _, p, _ in seen] + [m.payload for _, _, inbox in seen for m in inbox]
        observed = [m.payload for m in received[c]]
        assert sorted(map(repr, observed)) == sorted(map(repr, got))
    # Every message the orchestrator received was observed, and nothing else reached it.
    assert sorted(m.sender for m in received[SERVER]) == [0, 0, 1, 1, 2, 3, 4, 5, 5]
    assert {m.payload["from"] for m in received[THIRD_PARTY] if "from" in m.payload} == {0, 5}
    total_msgs = sum(len(v) for v in received.values())
    t = rt.ledger.totals()
    assert total_msgs == sum(v for k, v in t.items() if k.startswith("messages_"))


@pytest.mark.parametrize("kind", ["nan", "inf"])
def test_non_finite_replies_are_rejected_but_metered(kind: str) -> None:
    rt, _ = make_runtime(5, bad={2: kind})
    rt.begin_round(3)
    seen: list[Message] = []
    rt.observers.append(seen.append)
    replies = rt.broadcast("train", range(5), {})
    assert sorted(replies) == [0, 1, 3, 4]
    assert all(bool(torch.isfinite(r["g"]).all()) for r in replies.values())
    assert rt.ledger.rejected == [
        {"round": 3, "sender": "2", "step": "train", "reason": "non-finite values"}
    ]
    assert all(m.sender != 2 for m in seen)  # an attack never sees what was not delivered
    up = rt.ledger.totals()
    assert up["messages_up"] == 5  # transmitted, so counted
    sizes = [payload_size({"g": torch.zeros(3)})] * 4
    bad_size = payload_size({"g": torch.zeros(3)} if kind == "nan" else
                            {"g": torch.zeros(3), "nested": [{"deep": np.array([np.inf])}]})
    assert up["bytes_up"] == sum(sizes) + bad_size


def test_non_finite_request_is_not_delivered() -> None:
    rt, logic = make_runtime(3)
    rt.begin_round(1)
    assert rt.broadcast("ping", [0, 1], {"q": torch.tensor([float("nan")])}) == {}
    assert logic.seen == {}
    assert [r["sender"] for r in rt.ledger.rejected] == ["server", "server"]
    assert rt.ledger.totals()["messages_down"] == 2


def _responders(rt: InProcessRuntime, calls: int = 5) -> list[set[int]]:
    return [set(rt.broadcast("ping", rt.client_ids, {})) for _ in range(calls)]


def test_dropout_is_deterministic_per_seed_and_round() -> None:
    n = 200
    rt_a, _ = make_runtime(n, dropout=0.5, seed=1)
    rt_b, _ = make_runtime(n, dropout=0.5, seed=1)
    rt_c, _ = make_runtime(n, dropout=0.5, seed=2)
    rt_a.begin_round(4)
    rt_b.begin_round(4)
    rt_c.begin_round(4)
    a, b, c = _responders(rt_a), _responders(rt_b), _responders(rt_c)
    assert a == b  # same (seed, round), same dropouts, call by call
    assert a[-1] != c[-1]  # another seed, other dropouts
    # With dropout_after_calls=0 a dropped client is silent for the whole round: the same
    # survivors (about half) answer every call.
    assert all(x == a[0] for x in a)
    assert 60 < len(a[0]) < 140
    # The next round draws again: a different set, and dropped clients come back.
    rt_a.begin_round(5)
    nxt = _responders(rt_a, 4)
    assert nxt[3] != a[3]
    assert nxt[0] - a[3]
    # Requests to silent clients were still sent, hence metered.
    assert rt_a.ledger.totals(4)["messages_down"] == 5 * n
    assert rt_a.ledger.totals(4)["messages_up"] == sum(map(len, a))


def test_dropout_after_calls_drops_mid_round() -> None:
    n = 200
    rt = InProcessRuntime(
        parties=declare_parties({i: {"size": 1, "secret": "", "bad": None} for i in range(n)},
                                Client()),
        seed=1, dropout=0.5, dropout_after_calls=2,
    )
    rt.begin_round(1)
    a = _responders(rt, 4)
    # Everyone answers the first two calls; then the dropped half goes silent.
    assert a[0] == a[1] == set(range(n))
    assert a[2] == a[3] and 60 < len(a[2]) < 140


def test_no_dropout_means_everyone_answers() -> None:
    rt, _ = make_runtime(50)
    rt.begin_round(1)
    assert all(r == set(range(50)) for r in _responders(rt, 3))


def test_drop_after_one_call() -> None:
    rt, _ = make_runtime(5)
    rt.begin_round(1)
    rt.drop(3, after_calls=1)
    rt.drop(4)  # silent at once
    assert set(rt.broadcast("ping", range(5), {})) == {0, 1, 2, 3}
    assert set(rt.broadcast("ping", range(5), {})) == {0, 1, 2}
    assert set(rt.broadcast("ping", range(5), {})) == {0, 1, 2}
    rt.begin_round(2)  # a new round: back online
    assert set(rt.broadcast("ping", range(5), {})) == set(range(5))
    # Counting starts from the moment drop() is called.
    rt.drop(0, after_calls=1)
    assert 0 in rt.broadcast("ping", [0], {})
    assert 0 not in rt.broadcast("ping", [0], {})


def test_sample_clients_deterministic_without_replacement() -> None:
    ids = list(range(0, 300, 3))  # non-contiguous client ids
    rt = bare_runtime(ids, seed=5)
    picked = []
    for rnd in range(1, 201):
        rt.begin_round(rnd)
        s = rt.sample_clients(10)
        assert s == rt.sample_clients(10)  # same round, same draw
        assert len(s) == 10 == len(set(s)) and set(s) <= set(ids) and s == sorted(s)
        picked.append(tuple(s))
    assert len(set(picked)) == 200  # every round draws afresh
    counts = np.bincount(np.concatenate(picked), minlength=300)[ids]
    assert counts.min() >= 5 and counts.max() <= 45  # expected 20 each; all get picked
    other = bare_runtime(ids, seed=5)
    other.begin_round(17)
    assert tuple(other.sample_clients(10)) == picked[16]  # reproducible in a fresh runtime
    other_seed = bare_runtime(ids, seed=6)
    other_seed.begin_round(17)
    assert tuple(other_seed.sample_clients(10)) != picked[16]
    assert rt.sample_clients(100) == ids and rt.sample_clients(1000) == ids
    with pytest.raises(ConfigError):
        rt.sample_clients(0)
    # Drawing among a subset (the clients that can train): only from it, the same draw as
    # sample_cohort's on that subset, and all of it when the count covers it.
    among = ids[::2]
    rt.begin_round(7)
    s = rt.sample_clients(10, among=among)
    assert set(s) <= set(among) and len(set(s)) == 10
    assert s == sample_cohort(among, 10, 5, 7) and rt.sample_clients(60, among=among) == among


def test_cohort_size_is_the_one_reading_of_clients_per_round() -> None:
    assert cohort_size(0, 10) == 10  # 0: every client
    assert cohort_size(3, 10) == 3
    assert cohort_size(20, 10) == 10  # capped to the pool
    assert cohort_size(0, 0) == cohort_size(5, 0) == 0
    with pytest.raises(ConfigError, match="clients_per_round must be >= 0"):
        cohort_size(-1, 10)


def test_cohort_draws_the_option_s_count_with_sample_clients() -> None:
    ids = list(range(0, 40, 2))
    rt = bare_runtime(ids, seed=3)
    rt.begin_round(2)
    assert rt.cohort(0) == ids and rt.cohort(len(ids)) == ids and rt.cohort(1000) == ids
    assert rt.cohort(5) == rt.sample_clients(5) and len(rt.cohort(5)) == 5
    among = [2, 6, 10, 14]
    assert rt.cohort(0, among=among) == among == rt.cohort(9, among=among)
    assert rt.cohort(2, among=among) == rt.sample_clients(2, among=among)
    assert set(rt.cohort(2, among=among)) <= set(among)
    assert rt.cohort(0, among=[]) == [] == rt.cohort(3, among=[])
    with pytest.raises(ConfigError):
        rt.cohort(-1)


def test_updates_passes_replies_through_and_words_no_update_once() -> None:
    rt, _ = make_runtime(4, bad={1: "nan"})
    rt.begin_round(5)
    replies = rt.broadcast("ping", rt.client_ids, {})
    assert rt.updates(replies, "ping") is replies
    # Every client dropped out: nothing rejected.
    for c in rt.client_ids:
        rt.drop(c)
    with pytest.raises(NoUpdateError) as err:
        rt.updates(rt.broadcast("ping", rt.client_ids, {}), "ping", "lower lr")
    assert str(err.value) == ("round 5, step 'ping': no update arrived (0 rejected, the rest "
                              "dropped out or sent nothing); lower lr")
    assert isinstance(err.value, ProtocolError)
    # The one client asked sent NaN: counted among this round's rejections of the step.
    rt.begin_round(6)
    with pytest.raises(NoUpdateError, match=r"^round 6, step 'train': no update arrived \(1 "
                                            r"rejected as non-finite values, the rest"):
        rt.updates(rt.broadcast("train", [1], {}), "train")
    # Parties that reply nothing (a step with no answer) read the same.
    with pytest.raises(NoUpdateError, match="step 'silent': no update arrived \\(0 rejected"):
        rt.updates(rt.broadcast("silent", rt.client_ids, {}), "silent")


def test_fixed_subset_is_all_or_a_fixed_draw() -> None:
    ids = list(range(30))
    assert fixed_subset(ids, 0, 1, "eval") == ids == fixed_subset(ids, 30, 1, "eval")
    some = fixed_subset(ids, 7, 1, "eval")
    assert len(some) == 7 and some == sorted(some) and some == fixed_subset(ids, 7, 1, "eval")
    assert some != fixed_subset(ids, 7, 1, "other stream")


def test_client_state_persists_across_rounds_and_checkpoints() -> None:
    rt, _ = make_runtime(4)
    for rnd in (1, 2, 3):
        rt.begin_round(rnd)
        replies = rt.broadcast("ping", [0, 1] if rnd < 3 else [1], {})
    assert replies[1]["calls"] == 3
    assert rt.states[0] == {"calls": 2, "created_round": 1}
    assert 2 not in rt.states  # a party's state is created the first time it is reached
    saved = rt.state_dict()
    fresh, _ = make_runtime(4)
    fresh.load_state_dict(saved)
    fresh.begin_round(4)
    assert fresh.broadcast("ping", [0], {})[0]["calls"] == 3
    assert fresh.ledger.totals(2) == rt.ledger.totals(2)


def test_party_context_randomness_is_keyed_by_party_round_and_step() -> None:
    secrets = ClientSecrets(bytes(range(32)))

    def ctx(party, rnd, step):
        return PartyContext(party=party, data=None, state={}, round=rnd, step=step,
                            secret=secrets.party(party), role_secret=secrets.role("client"))

    def draw(c):
        return torch.rand(4, generator=c.generator()).tolist()

    assert draw(ctx(1, 1, "train")) == draw(ctx(1, 1, "train"))
    others = [ctx(2, 1, "train"), ctx(1, 2, "train"), ctx(1, 1, "eval")]
    assert all(draw(o) != draw(ctx(1, 1, "train")) for o in others)
    assert ctx(1, 1, "t").rng("x").random() == ctx(1, 1, "t").rng("x").random()
    assert ctx(1, 1, "t").rng("x").random() != ctx(1, 1, "t").rng("y").random()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cohort_chunks_cover_every_client_once_within_budget(seed):
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([rng.integers(1, 200, 300), rng.integers(2000, 4000, 5), [0]])
    budget = 20_000
    groups = cohort_chunks(sizes, budget)
    flat = np.concatenate(groups)
    assert sorted(flat.tolist()) == list(range(len(sizes)))  # each client exactly once
    for g in groups:
        padded = len(g) * max(int(sizes[g].max()), 1)
        # Within the memory budget, unless one client alone exceeds it.
        assert padded <= budget or len(g) == 1
        # Little padding: the large clients are not grouped with the small ones.
        assert padded <= 1.5 * max(int(sizes[g].sum()), 1) + 256 or len(g) == 1
