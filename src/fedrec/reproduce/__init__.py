"""Reproductions of the papers' tables and figures: ``fedrec reproduce NAME``.

Each module builds a grid of :class:`~fedrec.reproduce.runner.RunSpec`, runs it with
:func:`~fedrec.reproduce.runner.run_all` (resumable) and writes markdown tables and PNG plots
from the runs' ``results.json`` files (:mod:`fedrec.reproduce.report`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fedrec.errors import ConfigError


def _fedgnn() -> Callable[..., Path]:
    from fedrec.reproduce.fedgnn import reproduce

    return reproduce


def _fedgrec() -> Callable[..., Path]:
    from fedrec.reproduce.fedgrec import reproduce

    return reproduce


def _ptf_fedrec() -> Callable[..., Path]:
    from fedrec.reproduce.ptf_fedrec import reproduce

    return reproduce


REPRODUCTIONS: dict[str, Callable[[], Callable[..., Path]]] = {
    "fedgnn": _fedgnn, "fedgrec": _fedgrec, "ptf-fedrec": _ptf_fedrec}


def get_reproduction(name: str) -> Callable[..., Path]:
    if name not in REPRODUCTIONS:
        raise ConfigError(f"unknown reproduction {name!r}; known: {', '.join(REPRODUCTIONS)}")
    return REPRODUCTIONS[name]()
