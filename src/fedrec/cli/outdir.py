"""Where ``fedrec run`` and ``fedrec deploy`` write when no ``--out`` is given.

A run without ``--out`` goes to ``runs/<algorithm>-<dataset>-<YYYYmmdd-HHMMSS>/`` under the
current directory (:func:`default_out_dir`; ``-2``, ``-3``, ... when that folder exists, e.g.
two runs started in the same second), which the summary prints; the folder is made when it is
chosen, so two runs cannot pick the same one. A run that fails leaves nothing behind it there:
:func:`out_dir_for` removes the folder, and ``runs/`` if it made it, when they are still empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

#: The folder, under the current directory, that holds the runs made without ``--out``.
RUNS_DIR = Path("runs")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def dataset_label(dataset: str) -> str:
    """The dataset's part of a folder name: a catalogue name as it is, a user's file or folder
    by its name without the suffix (``data/my-ratings.csv`` -> ``my-ratings``), characters
    other than letters, digits, ``.``, ``_`` and ``-`` replaced by ``_``."""
    return _UNSAFE.sub("_", Path(dataset.rstrip("/\\")).stem).strip("._") or "data"


def default_out_dir(algorithm: str, dataset: str, now: datetime | None = None,
                    runs: Path = RUNS_DIR) -> Path:
    """A new folder ``runs/<algorithm>-<dataset>-<YYYYmmdd-HHMMSS>`` (module docstring), made
    here (with ``runs/``): the first of that name, ``-2``, ``-3``, ... that did not exist."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    base = f"{_UNSAFE.sub('_', algorithm)}-{dataset_label(dataset)}-{stamp}"
    runs.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        path = runs / (base if n == 1 else f"{base}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{runs / base}: every numbered folder is taken")


@contextmanager
def out_dir_for(given: str | None, algorithm: str, dataset: str,
                default: bool = True) -> Iterator[str | None]:
    """``given`` (``--out``), else (where ``default``) a new :func:`default_out_dir`; a
    default folder that the run left empty (it failed before writing) is removed when the
    body raises, and ``runs/`` too when this made it and it is empty."""
    if given is not None or not default:
        yield given
        return
    made_runs = not RUNS_DIR.exists()
    path = default_out_dir(algorithm, dataset)
    try:
        yield str(path)
    except BaseException:
        for folder in (path, RUNS_DIR) if made_runs else (path,):
            try:
                folder.rmdir()  # only an empty folder
            except OSError:
                break
        raise
