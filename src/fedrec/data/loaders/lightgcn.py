"""NGCF/LightGCN adjacency-list files: Gowalla, Yelp2018, Amazon-Book.

``train.txt``/``test.txt``: one line per user, ``user item item ...`` (space-separated, already
dense 0-based remapped ids; a line may hold a user with no items).
``user_list.txt``/``item_list.txt`` (``org_id remap_id`` with a header line) give the id
universe when present; otherwise it is ``max id + 1`` over both files. The ids are kept as they
are, so results are comparable with the published numbers. Every listed pair is a positive with
value 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedrec.data.loaders._common import content_lines, fail, read_text, require_files
from fedrec.data.types import InteractionDataset, Interactions


def read_adjacency_lists(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(users, items, line_of_row)`` int64 arrays, one row per (user, item) pair."""
    users: list[int] = []
    items: list[int] = []
    lines_of: list[int] = []
    for lineno, line in content_lines(read_text(path)):
        tokens = line.split()
        try:
            ids = [int(t) for t in tokens]
        except ValueError:
            bad = next(t for t in tokens if not _is_int(t))
            raise fail(f"{path} line {lineno}: {bad!r} is not an integer id") from None
        if min(ids) < 0:
            raise fail(f"{path} line {lineno}: negative id {min(ids)}")
        n = len(ids) - 1
        users.extend([ids[0]] * n)
        items.extend(ids[1:])
        lines_of.extend([lineno] * n)
    return (
        np.asarray(users, dtype=np.int64),
        np.asarray(items, dtype=np.int64),
        np.asarray(lines_of, dtype=np.int64),
    )


def _is_int(token: str) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


def count_list_rows(path: Path) -> int:
    """Number of data rows of ``user_list.txt``/``item_list.txt`` (header ``org_id remap_id``)."""
    lines = content_lines(read_text(path))
    if not lines or lines[0][1].split()[:2] != ["org_id", "remap_id"]:
        raise fail(f"{path} line 1: expected header 'org_id remap_id'")
    return len(lines) - 1


def _check_range(
    path: Path, ids: np.ndarray, lines: np.ndarray, n: int, what: str, src: str
) -> None:
    if len(ids) and ids.max() >= n:
        k = int(np.argmax(ids >= n))
        raise fail(f"{path} line {lines[k]}: {what} id {ids[k]} out of range 0..{n - 1} ({src})")


def load_lightgcn(root: Path, name: str) -> InteractionDataset:
    """Load ``train.txt``/``test.txt`` (and the id lists when present) from ``root``."""
    require_files(name, root, ["train.txt", "test.txt"])
    parts = {f: read_adjacency_lists(root / f) for f in ("train.txt", "test.txt")}
    counts = {}
    for what, list_file in (("user", "user_list.txt"), ("item", "item_list.txt")):
        col = 0 if what == "user" else 1
        if (root / list_file).is_file():
            n = count_list_rows(root / list_file)
            for f, arrs in parts.items():
                _check_range(root / f, arrs[col], arrs[2], n, what, f"{list_file} lists {n}")
        else:
            n = 1 + max(int(a[col].max(initial=-1)) for a in parts.values())
        counts[what] = n
    tr, te = parts["train.txt"], parts["test.txt"]
    used = [root / f for f in ("train.txt", "test.txt", "user_list.txt", "item_list.txt")]
    return InteractionDataset(
        name=name,
        num_users=counts["user"],
        num_items=counts["item"],
        train=Interactions(tr[0], tr[1], np.ones(len(tr[0]), np.float32)),
        test=Interactions(te[0], te[1], np.ones(len(te[0]), np.float32)),
        meta={
            "source": "LightGCN train.txt/test.txt",
            "split": "NGCF/LightGCN official 80/20",
            "files": [str(p) for p in used if p.is_file()],
            "ids": "LightGCN remapped ids (see user_list.txt/item_list.txt)",
        },
    )
