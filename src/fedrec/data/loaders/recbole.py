"""RecBole atomic files (``.inter``, ``.user``, ``.item``): tab-separated with a typed header.

The header names every column as ``name:type`` (for example ``user_id:token``); ``token_seq``
fields hold space-separated tokens. Used for ML-100K when the GroupLens files are absent (the
``recbole==1.2.1`` wheel ships them as ``recbole/dataset_example/ml-100k/``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fedrec.data.loaders._common import (
    content_lines,
    fail,
    load_numeric_table,
    read_text,
    split_fields,
)


def read_header(path: Path, expected: Sequence[str]) -> list[str]:
    """Column names of an atomic file; DataError unless they start with ``expected``."""
    lines = content_lines(read_text(path))
    if not lines:
        raise fail(f"{path}: empty file (expected a RecBole header line)")
    names = [col.split(":", 1)[0] for col in lines[0][1].rstrip("\r\n").split("\t")]
    if names[: len(expected)] != list(expected):
        raise fail(
            f"{path} line 1: expected RecBole header columns {', '.join(expected)}, "
            f"got {', '.join(names)}"
        )
    return names


def read_inter(path: Path) -> np.ndarray:
    """``(n, 4)`` float64 array of user_id, item_id, rating, timestamp."""
    read_header(path, ["user_id", "item_id", "rating", "timestamp"])
    return load_numeric_table(
        path,
        4,
        "\t",
        ["user_id", "item_id", "rating", "timestamp"],
        integer_cols=(0, 1),
        skip_header=True,
    )


def read_table(path: Path, expected: Sequence[str]) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` of every data row of a ``.user``/``.item`` file."""
    names = read_header(path, expected)
    rows = content_lines(read_text(path))[1:]
    return [(n, split_fields(path, n, line, "\t", len(names))) for n, line in rows]
