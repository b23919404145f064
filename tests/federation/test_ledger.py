"""The communication ledger: exact counts and bytes by round, direction, step and role."""

from __future__ import annotations

import pickle

import numpy as np

from fedrec.core.codec import encode
from fedrec.federation.ledger import CommunicationLedger
from fedrec.federation.message import AGGREGATOR, SERVER, THIRD_PARTY, Message, role_of


def _msg(sender, receiver, step: str, rnd: int, n_floats: int) -> Message:
    return Message(sender, receiver, step, rnd, {"x": np.zeros(n_floats, np.float32)})


def test_message_size_and_direction() -> None:
    m = _msg(3, SERVER, "train", 1, 10)
    assert m.nbytes == len(encode(m.payload))
    assert m.direction == "up"
    assert _msg(SERVER, 3, "train", 1, 1).direction == "down"
    assert _msg(3, 4, "gossip", 1, 1).direction == "peer"
    assert _msg(SERVER, THIRD_PARTY, "match", 1, 1).direction == "service"
    assert _msg(f"{AGGREGATOR}/2", 7, "masks", 1, 1).direction == "down"
    assert _msg(7, f"{AGGREGATOR}/2", "masks", 1, 1).direction == "up"
    assert role_of(0) == "client" and role_of("aggregator/2") == "aggregator"
    assert role_of(SERVER) == "server"
    # An explicit size (a broadcast sized once) is kept as given.
    assert Message(SERVER, 1, "s", 1, {"x": 1}, nbytes=123).nbytes == 123


def _filled() -> tuple[CommunicationLedger, list[Message]]:
    ledger = CommunicationLedger()
    msgs = [
        _msg(SERVER, 0, "train", 1, 100),  # down
        _msg(SERVER, 1, "train", 1, 100),  # down
        _msg(0, SERVER, "train", 1, 7),  # up
        _msg(1, SERVER, "train", 1, 9),  # up
        _msg(0, THIRD_PARTY, "match", 1, 5),  # up, to a third party
        _msg(THIRD_PARTY, 1, "match", 1, 3),  # down, from a third party
        _msg(SERVER, THIRD_PARTY, "keys", 1, 2),  # service
        _msg(0, 1, "gossip", 2, 4),  # peer, round 2
        _msg(1, SERVER, "train", 2, 11),  # up, round 2
    ]
    for m in msgs:
        ledger.record(m)
    return ledger, msgs


def test_totals_by_direction_and_round() -> None:
    ledger, msgs = _filled()

    def size(pred) -> int:
        return sum(m.nbytes for m in msgs if pred(m))

    t = ledger.totals()
    for direction in ("up", "down", "service", "peer"):
        assert t[f"bytes_{direction}"] == size(lambda m, d=direction: m.direction == d)
        assert t[f"messages_{direction}"] == sum(m.direction == direction for m in msgs)
    assert t["bytes_total"] == size(lambda m: True)
    r1, r2 = ledger.totals(1), ledger.totals(2)
    assert r1["bytes_total"] == size(lambda m: m.round == 1)
    assert r2["bytes_total"] == size(lambda m: m.round == 2)
    assert r2["bytes_peer"] == msgs[7].nbytes and r2["bytes_up"] == msgs[8].nbytes
    assert r1["bytes_total"] + r2["bytes_total"] == t["bytes_total"]
    assert "bytes_peer" not in r1  # nothing peer-to-peer in round 1
    empty = ledger.totals(99)
    assert empty["bytes_up"] == empty["bytes_down"] == empty["bytes_total"] == 0


def test_by_role_gives_third_parties_their_own_rows() -> None:
    ledger, msgs = _filled()
    roles = ledger.by_role()
    assert set(roles) == {"server", "client", "third_party"}
    for role in roles:
        assert roles[role]["sent"] == sum(m.nbytes for m in msgs if role_of(m.sender) == role)
        assert roles[role]["received"] == sum(
            m.nbytes for m in msgs if role_of(m.receiver) == role
        )
    tp = roles["third_party"]
    assert tp["received"] == msgs[4].nbytes + msgs[6].nbytes
    assert tp["sent"] == msgs[5].nbytes


def test_by_step_splits_steps_and_endpoints() -> None:
    ledger, msgs = _filled()
    steps = ledger.by_step()
    train_down = steps["train (server->client)"]
    assert train_down == {"bytes": msgs[0].nbytes * 2, "messages": 2, "direction": "down"}
    train_up = steps["train (client->server)"]
    assert train_up["messages"] == 3 and train_up["direction"] == "up"
    assert train_up["bytes"] == msgs[2].nbytes + msgs[3].nbytes + msgs[8].nbytes
    assert steps["match (client->third_party)"]["messages"] == 1
    assert steps["match (third_party->client)"]["direction"] == "down"
    assert sum(v["bytes"] for v in steps.values()) == ledger.totals()["bytes_total"]


def test_record_bulk_equals_individual_records() -> None:
    one_by_one, bulk = CommunicationLedger(), CommunicationLedger()
    template = _msg(SERVER, 0, "train", 3, 50)
    for c in range(17):
        one_by_one.record(_msg(SERVER, c, "train", 3, 50))
    bulk.record_bulk(template, 17, template.nbytes)
    assert bulk.totals() == one_by_one.totals()
    assert bulk.by_step() == one_by_one.by_step() and bulk.by_role() == one_by_one.by_role()


def test_rejected_are_listed_and_still_counted() -> None:
    ledger = CommunicationLedger()
    bad = Message(5, SERVER, "train", 4, {"g": np.array([np.nan])})
    ledger.record(bad)
    ledger.reject(bad, "non-finite values")
    assert ledger.rejected == [
        {"round": 4, "sender": "5", "step": "train", "reason": "non-finite values"}
    ]
    assert ledger.totals()["bytes_up"] == bad.nbytes


def test_state_dict_round_trip() -> None:
    ledger, _ = _filled()
    bad = _msg(1, SERVER, "train", 2, 1)
    ledger.record(bad)
    ledger.reject(bad, "non-finite values")
    state = pickle.loads(pickle.dumps(ledger.state_dict()))  # as a checkpoint stores it
    restored = CommunicationLedger()
    restored.record(_msg(SERVER, 9, "stale", 1, 1000))  # overwritten, not merged
    restored.load_state_dict(state)
    assert restored.totals() == ledger.totals()
    assert restored.totals(1) == ledger.totals(1) and restored.totals(2) == ledger.totals(2)
    assert restored.by_step() == ledger.by_step()
    assert restored.by_role() == ledger.by_role()
    assert restored.rejected == ledger.rejected
    # The restored ledger keeps counting into the same rows.
    extra = _msg(0, SERVER, "train", 1, 7)
    restored.record(extra)
    ledger.record(extra)
    assert restored.by_step() == ledger.by_step()
    # The state is a copy: recording later does not change what was saved.
    before = ledger.state_dict()
    ledger.reject(extra, "x")
    assert len(before["rejected"]) == 1
