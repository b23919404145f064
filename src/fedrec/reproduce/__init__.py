"""Reproductions of the papers' tables and figures: ``fedrec reproduce NAME``.

Each module builds a grid of :class:`~fedrec.reproduce.runner.RunSpec`, runs it with
:func:`~fedrec.reproduce.runner.run_all` (resumable) and writes markdown tables and PNG plots
from the runs' ``results.json`` files (:mod:`fedrec.reproduce.report`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from fedrec.errors import ConfigError

#: Each reproduction's module, imported on first use (each pulls in its algorithms), which
#: defines ``reproduce(out, *, quick, seeds, ...)``.
REPRODUCTIONS: dict[str, str] = {
    "defaults": "fedrec.reproduce.defaults",
    "fedgnn": "fedrec.reproduce.fedgnn",
    "fedgrec": "fedrec.reproduce.fedgrec",
    "feras": "fedrec.reproduce.feras",
    "fl-mv-dssm": "fedrec.reproduce.fl_mv_dssm",
    "poisoning": "fedrec.reproduce.poisoning",
    "privacy": "fedrec.reproduce.privacy",
    "ptf-fedrec": "fedrec.reproduce.ptf_fedrec",
}


def get_reproduction(name: str) -> Callable[..., Path]:
    if name not in REPRODUCTIONS:
        raise ConfigError(f"unknown reproduction {name!r}; known: {', '.join(REPRODUCTIONS)}")
    reproduce: Callable[..., Path] = importlib.import_module(REPRODUCTIONS[name]).reproduce
    return reproduce
