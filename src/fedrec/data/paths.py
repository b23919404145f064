"""Where datasets live on disk.

Resolution order for the data root: the explicit ``data_dir`` argument, else the ``FEDREC_DATA``
environment variable, else the per-user cache directory ``<user cache>/fedrec/datasets`` (from
:mod:`platformdirs`). Each dataset lives in ``<data root>/<dirname>/`` with the file layout of the
original distribution (for example ``<root>/ml-100k/u.data`` or ``<root>/planetoid/ind.cora.x``).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

ENV_VAR = "FEDREC_DATA"


def default_data_dir() -> Path:
    """The per-user cache directory used when neither an argument nor ``$FEDREC_DATA`` is given."""
    return Path(platformdirs.user_cache_dir("fedrec")) / "datasets"


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Absolute data root: ``data_dir``, else ``$FEDREC_DATA``, else :func:`default_data_dir`."""
    if data_dir is not None and str(data_dir) != "":
        root = Path(data_dir)
    elif os.environ.get(ENV_VAR):
        root = Path(os.environ[ENV_VAR])
    else:
        root = default_data_dir()
    return root.expanduser().resolve()


def dataset_dir(dirname: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Directory of one dataset (``dirname`` is the folder name, e.g. ``"planetoid"`` for Cora)."""
    return resolve_data_dir(data_dir) / dirname
