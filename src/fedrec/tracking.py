"""Experiment tracking: a TensorBoard log of a run (``fedrec run --log-dir DIR``).

:class:`TensorBoardLog` observes the round loop (:func:`fedrec.rounds.run_rounds`'s
``on_round`` hook) and writes, at step = round, every number of each history row:

* ``train/KEY``: the round's training statistics (``row["train"]``);
* ``eval/KEY``: an evaluated round's metrics, validation (``eval/val_rmse``, ...) and test;
* ``ledger/KEY``: the round's ledger totals (``bytes_up``, ``bytes_down``, ``bytes_total``,
  message counts) and ``ledger/cumulative_KEY`` for the bytes since round 1;
* ``time/round_s``: the round's wall time;

and, when the run ends, ``privacy/epsilon`` (the whole run's, :func:`fedrec.privacy.run_epsilon`)
at the last round, where the run reports a formal guarantee: the runs report privacy for the
whole run only, never per round. What is written is what ``results.json`` holds; nothing is
recomputed, and no random number is drawn (a run with a log is the run without one).

The ``tensorboard`` package is an optional extra (``pip install 'fedrec[tensorboard]'``); the
events are written with ``torch.utils.tensorboard``, which needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedrec.errors import ConfigError
from fedrec.privacy.report import run_epsilon

#: The history sections written, and the tag prefix of each.
SECTIONS = (("train", "train"), ("eval", "eval"), ("communication", "ledger"))
CUMULATIVE = ("bytes_up", "bytes_down", "bytes_total")


def summary_writer_class() -> Any:
    """``torch.utils.tensorboard.SummaryWriter``; a one-line ConfigError naming the extra when
    the ``tensorboard`` package is missing."""
    try:
        import tensorboard  # noqa: F401  (torch's writer needs it; a clear message if absent)
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise ConfigError("--log-dir needs the tensorboard package: pip install "
                          "'fedrec[tensorboard]'") from None
    return SummaryWriter


def _numbers(section: Any) -> dict[str, float]:
    if not isinstance(section, dict):
        return {}
    return {k: float(v) for k, v in section.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


class TensorBoardLog:
    """A run's TensorBoard event file in ``log_dir`` (module docstring). ``history``: rows
    already run (a resumed run), so that the cumulative bytes continue from them."""

    def __init__(self, log_dir: str | Path, history: Sequence[dict[str, Any]] = ()) -> None:
        writer_class = summary_writer_class()
        path = Path(log_dir)
        if path.exists() and not path.is_dir():
            raise ConfigError(f"--log-dir {path}: a file is there, not a folder")
        self.writer = writer_class(log_dir=str(path))
        self.cumulative = dict.fromkeys(CUMULATIVE, 0.0)
        for row in history:
            self._add_up(row)
        self.last_round = int(history[-1]["round"]) if history else 0

    def _add_up(self, row: dict[str, Any]) -> None:
        comm = _numbers(row.get("communication"))
        for key in CUMULATIVE:
            self.cumulative[key] += comm.get(key, 0.0)

    def on_round(self, row: dict[str, Any]) -> None:
        """Write one history row (the ``on_round`` hook of the round loop)."""
        step = int(row["round"])
        for section, prefix in SECTIONS:
            for key, value in _numbers(row.get(section)).items():
                self.writer.add_scalar(f"{prefix}/{key}", value, step)
        self._add_up(row)
        for key, value in self.cumulative.items():
            self.writer.add_scalar(f"ledger/cumulative_{key}", value, step)
        if "time_s" in row:
            self.writer.add_scalar("time/round_s", float(row["time_s"]), step)
        self.last_round = step
        self.writer.flush()

    def finish(self, privacy: dict[str, Any] | None) -> None:
        """Write the run's epsilon (if it has a formal guarantee) at its last round."""
        epsilon, _ = run_epsilon(privacy)
        if epsilon is not None:
            self.writer.add_scalar("privacy/epsilon", epsilon, self.last_round)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
