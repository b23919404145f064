"""Atomic checkpoints: a failed save keeps the previous one; unreadable files are clear errors."""

from __future__ import annotations

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
