"""Steam-200K (Kaggle "Steam Video Games") csv.

Each row is ``user_id,"game title",behavior,value,0`` with ``behavior`` ``purchase`` (value 1.0)
or ``play`` (value = hours played); there is no header.

Which rows count: the rows whose ``behavior`` equals the ``behavior`` option (``"purchase"`` by
default, or ``"play"``) -- every such row is one positive (user, game) pair with value 1, whatever
its ``value`` column; repeated pairs are kept once. Users (by numeric id) and games (by exact
title) are then densified in sorted order (``meta["user_ids"]``, ``meta["item_ids"]`` hold the raw
id / title of each dense id). Optionally (``k_core=k``) the pairs are reduced to the k-core (every
user and game has at least k pairs) and re-densified. Finally every user's pairs are split at
random (seeded): ``floor(0.2 * n)`` of them, and at least one when ``n >= 2``, go to test; a user
with a single pair keeps it in train.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from fedrec.data.loaders._common import fail, parse_number, read_text, require_files
from fedrec.data.splits import k_core as k_core_mask
from fedrec.data.splits import per_user_split
from fedrec.data.types import InteractionDataset, Interactions
from fedrec.errors import ConfigError

BEHAVIORS = ("purchase", "play")
FILE = "steam-200k.csv"


def read_steam_csv(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All rows as ``(user ids int64, titles str, behaviors str, values float64)``."""
    text = read_text(path)
    users, titles, behaviors, values = [], [], [], []
    try:
        for row in csv.reader(io.StringIO(text, newline="")):
            if not row:
                continue
            if len(row) != 5:
                line = _line_of(text, len(users))
                raise fail(f"{path} line {line}: expected 5 comma-separated fields, got {len(row)}")
            if row[2] not in BEHAVIORS:
                line = _line_of(text, len(users))
                raise fail(f"{path} line {line}: behavior {row[2]!r} is not purchase or play")
            try:
                uid, val = int(row[0]), float(row[3])
            except ValueError:
                line = _line_of(text, len(users))
                uid = int(parse_number(path, line, row[0], "user id", integer=True))
                val = parse_number(path, line, row[3], "value")
            users.append(uid)
            titles.append(row[1])
            behaviors.append(row[2])
            values.append(val)
    except csv.Error as exc:
        raise fail(f"{path}: malformed csv ({exc})") from exc
    if not users:
        raise fail(f"{path}: file contains no rows")
    values_arr = np.asarray(values, dtype=np.float64)
    if not np.isfinite(values_arr).all() or (values_arr < 0).any():
        k = int(np.argmax(~np.isfinite(values_arr) | (values_arr < 0)))
        raise fail(f"{path} line {_line_of(text, k)}: value {values[k]} is negative or not finite")
    return (
        np.asarray(users, dtype=np.int64),
        np.asarray(titles, dtype=object),
        np.asarray(behaviors, dtype=object),
        values_arr,
    )


def _line_of(text: str, row: int) -> int:
    """Line number of the ``row``-th (0-based) csv record (titles never contain newlines)."""
    seen = -1
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            seen += 1
            if seen == row:
                return lineno
    return row + 1


def load_steam(
    root: Path,
    behavior: str = "purchase",
    k_core: int | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> InteractionDataset:
    """Load Steam-200K from ``root/steam-200k.csv`` (see the module docstring for the rules)."""
    if behavior not in BEHAVIORS:
        raise ConfigError(f"steam-200k: behavior must be 'purchase' or 'play', got {behavior!r}")
    require_files("steam-200k", root, [FILE])
    users, titles, behaviors, _ = read_steam_csv(root / FILE)
    keep = behaviors == behavior
    u_raw, t_raw = users[keep], titles[keep]
    user_ids, u = np.unique(u_raw, return_inverse=True)
    item_ids, i = np.unique(t_raw.astype(str), return_inverse=True)
    pairs = np.unique(np.stack([u, i], axis=1), axis=0)
    u, i = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    if k_core is not None:
        mask = k_core_mask(u, i, int(k_core))
        u, i = u[mask], i[mask]
        user_keep, u = np.unique(u, return_inverse=True)
        item_keep, i = np.unique(i, return_inverse=True)
        user_ids, item_ids = user_ids[user_keep], item_ids[item_keep]
    everything = Interactions(u.astype(np.int64), i.astype(np.int64), np.ones(len(u), np.float32))
    train, test = per_user_split(everything, test_fraction, seed)
    return InteractionDataset(
        name="steam-200k",
        num_users=len(user_ids),
        num_items=len(item_ids),
        train=train,
        test=test,
        meta={
            "source": f"{FILE} rows with behavior={behavior!r}, deduplicated",
            "split": f"per-user random {1 - test_fraction:.0%}/{test_fraction:.0%}, seed {seed}",
            "k_core": k_core,
            "files": [str(root / FILE)],
            "user_ids": user_ids,
            "item_ids": item_ids,
        },
    )
