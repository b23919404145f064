"""Atomic checkpoints: a run can be stopped at any moment and resumed without losing a round."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from fedrec.errors import FedrecError

CHECKPOINT_NAME = "checkpoint.pt"


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically: a crash leaves the previous checkpoint intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FedrecError(f"no checkpoint to resume from at {path}")
    try:
        # weights_only=False: checkpoints hold our own plain containers (dicts of tensors,
        # numpy arrays and ledgers) written by save_checkpoint, never files from elsewhere.
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # a truncated or foreign file
        raise FedrecError(f"checkpoint {path} is unreadable ({type(exc).__name__})") from None
