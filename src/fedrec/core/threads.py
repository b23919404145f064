"""Torch's thread count for a run: the one rule ``fedrec run``, ``fedrec reproduce`` and
:func:`fedrec.run` share (:func:`default_threads`, :func:`set_threads`).

A process's setting (``torch.set_num_threads``), not a run's: not a
:class:`~fedrec.options.RunOptions` field, and not recorded in results (it changes the wall
time, not what is computed).
"""

from __future__ import annotations

import os

from fedrec.errors import ConfigError


def default_threads(cores: int | None = None) -> int:
    """Torch threads when none are asked for: half the cores we were given, at least one.
    Measured on 2 cores (``bench/bench_threads.py``, results/threads.json): a second thread
    gains 6% on an idle machine but costs 2.7x per round beside one other busy process (OpenMP
    threads waiting on a core that the other process holds), so a run leaves room for one."""
    n = len(os.sched_getaffinity(0)) if cores is None else cores
    return max(1, n // 2)


def check_threads(n: int | None, name: str = "threads") -> None:
    """ConfigError (one line, naming the option ``name``) unless ``n`` is None or at least 1."""
    if n is None:
        return
    if isinstance(n, bool) or not isinstance(n, int):
        raise ConfigError(f"{name} must be an integer >= 1, got {n!r}")
    if n < 1:
        raise ConfigError(f"{name} must be >= 1, got {n}")


def set_threads(n: int | None, name: str = "threads") -> int:
    """Set torch's threads to ``n`` (None: :func:`default_threads`) and return the count set."""
    check_threads(n, name)
    import torch

    count = n or default_threads()
    torch.set_num_threads(count)
    return count
