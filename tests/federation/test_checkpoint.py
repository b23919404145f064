"""Atomic checkpoints: a failed save keeps the previous one; unreadable files are clear errors."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from fedrec.errors import FedrecError
from fedrec.federation.checkpoint import load_checkpoint, save_checkpoint
from fedrec.federation.ledger import CommunicationLedger
from fedrec.federation.message import SERVER, Message


class FailsWhilePickling:
    """Raises from inside torch.save, after part of the file has been written."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __reduce__(self):
        raise self.exc


def _state(value: float) -> dict:
    ledger = CommunicationLedger()
    ledger.record(Message(SERVER, 1, "train", 1, {"q": np.zeros(5)}))
    return {"round": 3, "q": torch.full((200, 16), value), "np": np.arange(4),
            "ledger": ledger.state_dict(), "history": [{"round": 1, "eval": {"rmse": 1.0}}]}


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "checkpoint.pt"  # the directory is created
    state = _state(1.5)
    save_checkpoint(path, state)
    back = load_checkpoint(path)
    assert torch.equal(back["q"], state["q"]) and np.array_equal(back["np"], state["np"])
    assert back["ledger"] == state["ledger"] and back["history"] == state["history"]
    save_checkpoint(path, _state(2.5))  # overwriting works
    assert float(load_checkpoint(path)["q"][0, 0]) == 2.5


@pytest.mark.parametrize("exc", [RuntimeError("disk full"), KeyboardInterrupt()],
                         ids=["error", "interrupt"])
def test_failure_mid_save_keeps_the_previous_checkpoint(tmp_path: Path, exc) -> None:
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, _state(1.0))
    before = path.read_bytes()
    bad = _state(2.0)
    bad["zz_last"] = FailsWhilePickling(exc)  # fails while the new file is being written
    with pytest.raises(type(exc)):
        save_checkpoint(path, bad)
    assert path.read_bytes() == before
    assert float(load_checkpoint(path)["q"][0, 0]) == 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]  # no temp files left


def test_first_save_failing_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(RuntimeError):
        save_checkpoint(path, {"x": FailsWhilePickling(RuntimeError("boom"))})
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(FedrecError, match="no checkpoint"):
        load_checkpoint(path)


def test_unreadable_checkpoints_raise_fedrec_error(tmp_path: Path) -> None:
    good = tmp_path / "good.pt"
    save_checkpoint(good, _state(1.0))
    data = good.read_bytes()
    cases = {
        "truncated.pt": data[: len(data) // 2],
        "empty.pt": b"",
        "garbage.pt": bytes(range(256)) * 10,
        "text.pt": b"rounds: 4\n",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(FedrecError, match="unreadable"):
            load_checkpoint(tmp_path / name)
    with pytest.raises(FedrecError):
        load_checkpoint(tmp_path / "missing.pt")
    with pytest.raises(FedrecError):
        load_checkpoint(tmp_path)  # a directory


def test_packed_party_states_round_trip_through_a_file(tmp_path: Path) -> None:
    from fedrec.federation.checkpoint import _Leaf, pack_states, unpack_states

    states = {
        c: {"rows": torch.randn(c + 1, 4), "items": torch.arange(c, dtype=torch.int64),
            "scalar": torch.tensor(float(c)), "empty": torch.empty(0, 4),
            "params": {"w": torch.randn(2, 3), "b": torch.zeros(3, dtype=torch.float64)},
            "n": c, "beta": 0.5 * c, "np": np.arange(c), "tag": ("x", c)}
        for c in range(5)
    }
    states[9] = {"only": torch.ones(2, dtype=torch.bool)}  # a party with other keys
    save_checkpoint(tmp_path / "c.pt", {"states": pack_states(states)})
    back = unpack_states(load_checkpoint(tmp_path / "c.pt")["states"])
    assert list(back) == list(states)

    def same(a, b) -> bool:
        if isinstance(a, torch.Tensor):
            return (a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b))
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, np.ndarray):
            return np.array_equal(a, b)
        return a == b

    assert all(same(states[c], back[c]) for c in states)
    # The packed copy and the unpacked states share nothing with the live states.
    packed = pack_states(states)
    states[1]["rows"].add_(1.0)
    states[1]["params"]["w"].zero_()
    again = unpack_states(packed)
    assert torch.equal(again[1]["rows"], back[1]["rows"])
    again[2]["rows"].add_(1.0)
    assert torch.equal(unpack_states(packed)[2]["rows"], back[2]["rows"])
    # Packs written before the skeleton was pickled hold it as a dict.
    dict_skeleton = {**packed, "skeleton": pickle.loads(packed["skeleton"])}
    assert all(same(back[c], v) for c, v in unpack_states(dict_skeleton).items())
    # Checkpoints written before packing hold the plain states.
    assert unpack_states({3: {"x": 1}}) == {3: {"x": 1}}
    # Packs from before keys held the device: (path, dtype, trailing shape).
    old = {"format": packed["format"],
           "skeleton": {0: {"s": _Leaf((("s",), torch.float32, None), 0),
                            "r": _Leaf((("r",), torch.float32, (2,)), 0)}},
           "groups": {(("s",), torch.float32, None): (torch.tensor([3.0]), [1]),
                      (("r",), torch.float32, (2,)): (torch.ones(1, 2), [1])}}
    restored = unpack_states(old)[0]
    assert restored["s"].shape == () and float(restored["s"]) == 3.0
    assert restored["r"].shape == (1, 2)
