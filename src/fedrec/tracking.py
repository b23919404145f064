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

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fedrec.errors import ConfigError, WriteError
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
        self.path, self.failed = path, False
        # The event file's writer thread re-raises a failed write (a full disk) after storing
        # it for the next write here: its traceback on stderr is kept quiet while the log is
        # open (the error is then one line, :meth:`_writing`).
        self._excepthook = threading.excepthook
        threading.excepthook = self._quiet_writer_thread
        try:
            with self._writing():
                self.writer = writer_class(log_dir=str(path))
        except BaseException:
            threading.excepthook = self._excepthook
            raise
        self.cumulative = dict.fromkeys(CUMULATIVE, 0.0)
        for row in history:
            self._add_up(row)
        self.last_round = int(history[-1]["round"]) if history else 0

    def _quiet_writer_thread(self, args: Any) -> None:
        if not (issubclass(args.exc_type, OSError)
                and type(args.thread).__name__ == "_AsyncWriterThread"):
            self._excepthook(args)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write that fails (a full disk; the event file's writer thread raises it at the
        next write or flush) is a one-line FedrecError, not a traceback."""
        try:
            yield
        except OSError as exc:
            self.failed = True
            raise WriteError(f"could not write the TensorBoard log in {self.path} "
                              f"({exc.strerror or exc})") from None

    def _add_up(self, row: dict[str, Any]) -> None:
        comm = _numbers(row.get("communication"))
        for key in CUMULATIVE:
            self.cumulative[key] += comm.get(key, 0.0)

    def on_round(self, row: dict[str, Any]) -> None:
        """Write one history row (the ``on_round`` hook of the round loop)."""
        with self._writing():
            self._write_round(row)

    def _write_round(self, row: dict[str, Any]) -> None:
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
        with self._writing():
            if epsilon is not None:
                self.writer.add_scalar("privacy/epsilon", epsilon, self.last_round)
            self.writer.flush()

    def close(self) -> None:
        """Close the event file; after a failed write (already reported) a second failure
        here is not raised over the first."""
        try:
            if self.failed:
                with contextlib.suppress(OSError):
                    self.writer.close()
                return
            with self._writing():
                self.writer.close()
        finally:
            if threading.excepthook == self._quiet_writer_thread:
                threading.excepthook = self._excepthook
