"""A user's own ratings or implicit interactions, from a file: :func:`load_interaction_file`.

The file is a table (:mod:`fedrec.data.tables`: CSV, TSV, any delimited text, Parquet) with a
user column, an item column and, optionally, a rating column (without one every row is a
positive of implicit feedback) and a timestamp column. Options (``--data-opt KEY=VALUE``) name
the columns and the split; :data:`FILE_OPTIONS` describes each.

* **Columns** are never guessed: a column has a role when an option names it (``user_col``,
  ``item_col``, ``rating_col``, ``timestamp_col``) or when its header is one of that role's
  known names (:data:`KNOWN_COLUMNS`, any case: ``userId``, ``movieId``, ``score``, ...);
  a headerless file's user and item are columns 0 and 1. Two headers of one role, no user or
  item column, and a file without a rating column that has another numeric column (``stars``:
  it could be ratings) are one-line errors naming the option that settles it (``rating_col=``,
  or ``implicit=true`` to read the file as implicit feedback). Columns of text with no role
  are ignored.

* **Ids** of any type (numbers, text) become dense zero-based ids, in numeric order when every
  id of the column is an integer, else in text order; ``meta["user_ids"][u]`` and
  ``meta["item_ids"][i]`` are the raw ids of dense ``u`` and ``i`` (``fedrec run`` writes them
  beside ``results.json`` as ``id_map.json``).
* **Duplicate (user, item) pairs** are an error unless ``duplicates`` says which row to keep:
  ``last`` (the latest by timestamp, ties and files without timestamps: the later line) or
  ``first``; what was dropped is printed and kept in ``meta["duplicates"]``.
* **Splits**: ``random`` (default; per user, :func:`fedrec.data.splits.per_user_split` with
  ``test_fraction`` and ``seed``: a user with one row keeps it for training),
  ``leave_last_out`` (each user's latest row by timestamp, ties: the later line, is the test
  row, for users with two rows or more) and ``given`` (``test_file``, read with the same
  options: its rows are the test rows and the training rows are the data file's other pairs,
  so the data file may hold every row or the training rows only). A user whose rows are all
  test rows is an error: every user is a client and needs training data. A split that leaves
  no test rows at all (``test_fraction=0``, every user with one row)
  loads, its reason in ``meta["no_test_rows"]``, but a run refuses it
  (:func:`fedrec.experiment.check_test_rows`): it would have nothing to score.
* **Empty id cells** (blank, or missing in a Parquet file) are a DataError naming the line.

The validation split is carved from the training rows afterwards, as for every catalogue
dataset (:func:`fedrec.data.load_dataset`).
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from fedrec.data.loaders._common import fail, notice
from fedrec.data.splits import per_user_split
from fedrec.data.tables import Table, parse_numbers, read_table
from fedrec.data.types import InteractionDataset, Interactions, RatingDataset
from fedrec.errors import ConfigError

#: The options of a user's file, with what ``fedrec datasets info`` says of them.
FILE_OPTIONS = {
    "sep": "field separator: tab, comma, semicolon, pipe, space or the text itself "
    "(default: from the suffix, .csv comma, .tsv tab)",
    "header": "whether the first line names the columns (default true); without one, "
    "columns are named by their 0-based index",
    "user_col": "the user column, a name or a 0-based index (default: the column named user, "
    "user_id or userId, in any case; 0 without a header)",
    "item_col": "the item column (default: the column named item, item_id, itemId, movie_id or "
    "movieId, in any case; 1 without a header)",
    "rating_col": "the rating column (default: the column named rating, score or value, in any "
    "case; without one, every row is a positive of implicit feedback, but a file with another "
    "numeric column is an error asking for rating_col or implicit=true; false: as implicit=true)",
    "implicit": "true: implicit feedback, every row a positive, a rating column and any other "
    "column ignored; false: the file must have a rating column (default: it has one when one is "
    "named or found)",
    "timestamp_col": "the timestamp column, numbers or ISO-8601 dates (default: the column "
    "named timestamp, time, ts, date or datetime, in any case; false: none)",
    "split": "random (per user, the default), leave_last_out (by timestamp) or given "
    "(test_file)",
    "test_fraction": "random split: each user's test share (default 0.2)",
    "seed": "random split: its seed (default 0)",
    "test_file": "given split: a file of the test rows, read with the same options",
    "duplicates": "a (user, item) pair on several rows: error (default), last (the latest by "
    "timestamp, else the later line) or first",
    "rating_min": "lowest possible rating (default: the lowest in the files)",
    "rating_max": "highest possible rating (default: the highest in the files)",
    "encoding": "text encoding (default utf-8)",
}
#: The header names that give a column its role without an option, compared case-insensitively
#: (``userId`` is ``userid``); any other column is named by its option (:data:`FILE_OPTIONS`).
KNOWN_COLUMNS = {
    "user_col": ("user", "user_id", "userid"),
    "item_col": ("item", "item_id", "itemid", "movie_id", "movieid"),
    "rating_col": ("rating", "score", "value"),
    "timestamp_col": ("timestamp", "time", "ts", "date", "datetime"),
}
_ROLE = {"user_col": "the user column", "item_col": "the item column",
         "rating_col": "ratings", "timestamp_col": "timestamps"}
SPLITS = ("random", "leave_last_out", "given")
DUPLICATES = ("error", "last", "first")
_INTEGER = re.compile(r"[+-]?\d+")
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def is_file_name(name: str | os.PathLike[str], catalogue: object) -> bool:
    """Whether ``--dataset name`` names a file: a path object, or a name that is not in the
    ``catalogue`` and holds a path separator or a suffix, or names an existing file or folder
    (a user's graph, :mod:`fedrec.data.user_graph`; a catalogue name wins: write ``./ml-100k``
    for a file of that name)."""
    if isinstance(name, os.PathLike):
        return True
    if name in catalogue:  # type: ignore[operator]
        return False
    return "/" in name or os.sep in name or Path(name).suffix != "" or Path(name).exists()


class _Part:
    """One file's rows as parsed columns (raw id cells, ratings, timestamps, table rows)."""

    def __init__(self, table: Table, cols: dict[str, Any]) -> None:
        self.table = table
        self.users = _ids(table, cols["user_col"], "user")
        self.items = _ids(table, cols["item_col"], "item")
        rating = cols["rating_col"]
        self.ratings = (None if rating is None else
                        parse_numbers(table, table.column(rating, "rating_col"), "rating"))
        stamp = cols["timestamp_col"]
        self.stamps = None if stamp is None else _timestamps(table, stamp)
        self.rows = np.arange(len(table))

    def keep(self, rows: np.ndarray) -> None:
        self.rows = self.rows[rows]


def _ids(table: Table, spec: str | int, what: str) -> np.ndarray:
    """The id cells of column ``spec``; an empty cell (blank text, or a missing value of a
    Parquet file) is a DataError naming its line: it would be the id of a user or item."""
    cells = table.column(spec, f"{what}_col")
    for row, cell in enumerate(cells):
        if cell is None or (isinstance(cell, str) and not cell.strip()) or (
                isinstance(cell, float | np.floating) and np.isnan(cell)):
            raise fail(f"{table.at(row)}: empty {what} id (column {spec!r}); every row needs "
                       "one")
    return cells


def _timestamps(table: Table, spec: str | int) -> np.ndarray:
    cells = table.column(spec, "timestamp_col")
    try:
        return parse_numbers(table, cells, "timestamp")
    except Exception as number_error:
        try:  # ISO-8601 dates, as seconds
            texts = np.array([str(c).strip() for c in cells])
            return np.array(texts, dtype="datetime64[s]").astype(np.int64).astype(np.float64)
        except ValueError:
            raise fail(f"{number_error} (nor an ISO-8601 date; timestamp_col=false reads "
                       "the file without timestamps)") from None


def _columns(table: Table, header: bool, implicit: Any, given: dict[str, Any]) -> dict[str, Any]:
    """Each column role's spec (a header name or a 0-based index; rating and timestamp: None
    when there is none): the options ``given``, else the header's one known name
    (:data:`KNOWN_COLUMNS`), else (user, item) columns 0 and 1 of a headerless file. Nothing is
    guessed: a role two headers could fill, a missing user or item column, and (unless
    ``implicit``) a numeric column of no role, which could be ratings, are one-line errors
    naming the option to set."""
    if implicit is not None and not isinstance(implicit, bool):
        raise ConfigError(f"implicit must be true or false, got {implicit!r}")
    if given["rating_col"] is False:  # the older spelling of implicit=true
        if implicit is False:
            raise ConfigError("rating_col=false and implicit=false contradict each other")
        implicit = True
    elif implicit is True and given["rating_col"] is not None:
        raise ConfigError(f"implicit=true ignores ratings, but rating_col="
                          f"{given['rating_col']!r} names a rating column: give one of them")
    if not header:
        for key, spec in given.items():
            if isinstance(spec, str):
                raise ConfigError(f"{key}={spec!r} with header=false: name columns by their "
                                  "0-based index")
    out: dict[str, Any] = {}
    claimed: set[str] = set()
    for key, spec in given.items():
        if spec is None or (spec is False and key in ("rating_col", "timestamp_col")):
            continue  # false: no such column
        table.column(spec, key)  # a column that is not there: a DataError naming them
        claimed.add(list(table.columns)[spec] if isinstance(spec, int) else spec)
        out[key] = spec
    for key in KNOWN_COLUMNS:
        if key in out or given[key] is False or (key == "rating_col" and implicit):
            out.setdefault(key, None)
            continue
        if not header:
            out[key] = {"user_col": 0, "item_col": 1}.get(key)
        else:
            out[key] = _known_column(table, key, claimed)
        if out[key] is not None:
            claimed.add(list(table.columns)[out[key]] if isinstance(out[key], int) else out[key])
    if implicit:
        out["rating_col"] = None
    elif out["rating_col"] is None:
        if implicit is False:
            raise fail(f"{table.path}: implicit=false but no rating column is named or found "
                       f"(a header of {_names('rating_col')}); set --data-opt rating_col=NAME")
        _refuse_unnamed_numbers(table, header, claimed)
    return {key: out[key] for key in KNOWN_COLUMNS}


def _names(key: str) -> str:
    names = KNOWN_COLUMNS[key]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _known_column(table: Table, key: str, claimed: set[str]) -> str | None:
    """The one unclaimed header of ``key``'s known names (None: none; two: an error)."""
    found = [c for c in table.columns
             if c not in claimed and c.strip().lower() in KNOWN_COLUMNS[key]]
    option = f"--data-opt {key}=NAME"
    if len(found) > 1:
        raise fail(f"{table.path}: columns {' and '.join(map(repr, found))} could both be "
                   f"{_ROLE[key]}: set {option}")
    if not found and key in ("user_col", "item_col"):
        raise fail(f"{table.path}: no column is named as {_ROLE[key]} ({_names(key)}, in any "
                   f"case): set {option}; its columns are "
                   f"{', '.join(map(repr, table.columns))}")
    return found[0] if found else None


def _refuse_unnamed_numbers(table: Table, header: bool, claimed: set[str]) -> None:
    """A DataError when a column of no role holds numbers only: it could be ratings."""
    numeric = [c for c in table.columns if c not in claimed and _is_numeric(table.columns[c])]
    if not numeric:
        return
    spec = numeric[0]
    names = " and ".join((repr(c) if header else c) for c in numeric)
    these = "it" if len(numeric) == 1 else "them"
    raise fail(f"{table.path}: column{'s' if len(numeric) > 1 else ''} {names} could be "
               f"ratings: set --data-opt rating_col={spec}"
               f"{'' if len(numeric) == 1 else ' (or another of them)'}, or implicit=true to "
               f"ignore {these}")


def _is_numeric(cells: np.ndarray) -> bool:
    """Whether every non-blank cell is a finite number (and one cell at least is not blank)."""
    try:  # the fast path: every cell a number
        return bool(np.isfinite(np.asarray(cells, dtype=np.float64)).all())
    except (TypeError, ValueError):
        pass
    seen = False
    for cell in cells:
        text = cell.strip() if isinstance(cell, str) else cell
        if text is None or text == "":
            continue
        try:
            if not np.isfinite(float(text)):
                return False
        except (TypeError, ValueError):
            return False
        seen = True
    return seen


def _dense_ids(cells: np.ndarray, what: str = "id") -> tuple[np.ndarray, np.ndarray]:
    """``(raw ids in dense order, dense id of every cell)`` (module docstring: numeric order
    when every id is an integer); an integer id beyond int64 is a DataError naming ``what``."""
    texts = [c.strip() if isinstance(c, str) else c for c in cells]
    if all(isinstance(t, int | np.integer) or (isinstance(t, str) and _INTEGER.fullmatch(t))
           for t in texts):
        ints = [int(t) for t in texts]
        if ints and not _INT64_MIN <= min(ints) <= max(ints) <= _INT64_MAX:
            big = next(v for v in ints if not _INT64_MIN <= v <= _INT64_MAX)
            raise fail(f"{what} {big} is beyond the 64-bit integer range (at most "
                       f"{_INT64_MAX})")
        raw = np.array(ints, dtype=np.int64)
    else:
        raw = np.array([str(t) for t in texts], dtype=str)
    return np.unique(raw, return_inverse=True)


def _dedupe(part: _Part, keys: np.ndarray, policy: str) -> int:
    """Apply the ``duplicates`` policy to ``part`` (whose rows have pair ``keys``); returns
    how many rows were dropped."""
    order = np.lexsort((np.arange(len(keys)),
                        part.stamps[part.rows] if part.stamps is not None else np.zeros(len(keys)),
                        keys))
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    if len(starts) == len(keys):
        return 0
    if policy == "error":
        dup = int(np.argmax(np.diff(np.r_[starts, len(keys)]) > 1))
        first, second = sorted(order[starts[dup]:starts[dup] + 2])
        t = part.table
        raise fail(f"{t.at(part.rows[second])}: duplicate (user, item) pair "
                   f"({part.users[part.rows[second]]}, {part.items[part.rows[second]]}), first "
                   f"on {t.where} {t.lines[part.rows[first]]}; give duplicates=last (keep the "
                   "latest by timestamp, else the later line) or duplicates=first")
    ends = np.r_[starts[1:], len(keys)] - 1
    kept = np.sort(order[starts if policy == "first" else ends])
    part.keep(kept)
    return len(keys) - len(kept)


def _leave_last_out(users: np.ndarray, stamps: np.ndarray) -> np.ndarray:
    """Test mask: each user's latest row (ties: the later one), for users with two or more."""
    n = len(users)
    order = np.lexsort((np.arange(n), stamps, users))
    sorted_users = users[order]
    last = np.flatnonzero(np.r_[sorted_users[1:] != sorted_users[:-1], True])
    counts = np.diff(np.r_[-1, last])
    mask = np.zeros(n, dtype=bool)
    mask[order[last[counts >= 2]]] = True
    return mask


def _check_options(split: str | None, test_fraction: Any, seed: Any, test_file: Any,
                   duplicates: str) -> str:
    if split is None:
        split = "given" if test_file is not None else "random"
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if duplicates not in DUPLICATES:
        raise ConfigError(f"duplicates must be one of {', '.join(DUPLICATES)}, got "
                          f"{duplicates!r}")
    if (split == "given") != (test_file is not None):
        raise ConfigError("split=given needs test_file=PATH" if split == "given" else
                          f"test_file is for split=given, not split={split}")
    if test_fraction is not None and split != "random":
        raise ConfigError(f"test_fraction is for split=random, not split={split}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    return split


def load_interaction_file(
    path: Path, sep: str | None = None, header: bool = True, user_col: Any = None,
    item_col: Any = None, rating_col: Any = None, timestamp_col: Any = None,
    split: str | None = None, test_fraction: float | None = None, seed: int = 0,
    test_file: str | None = None, duplicates: str = "error", rating_min: float | None = None,
    rating_max: float | None = None, encoding: str = "utf-8", implicit: bool | None = None,
) -> RatingDataset | InteractionDataset:
    """Load a user's file (module docstring; the options are :data:`FILE_OPTIONS`)."""
    path = Path(path)
    split = _check_options(split, test_fraction, seed, test_file, duplicates)
    data_table = read_table(path, sep, header, encoding)
    cols = _columns(data_table, header, implicit,
                    {"user_col": user_col, "item_col": item_col, "rating_col": rating_col,
                     "timestamp_col": timestamp_col})
    if split == "leave_last_out" and cols["timestamp_col"] is None:
        raise ConfigError("split=leave_last_out needs a timestamp column (timestamp_col=...)")
    parts = [_Part(data_table, cols)]
    if test_file is not None:
        parts.append(_Part(read_table(Path(test_file), sep, header, encoding), cols))
    files = " or ".join(str(p.table.path) for p in parts)
    user_raw, user_all = _dense_ids(np.concatenate([p.users for p in parts]), f"{files}: user id")
    item_raw, item_all = _dense_ids(np.concatenate([p.items for p in parts]), f"{files}: item id")
    bounds = np.cumsum([0, *(len(p.rows) for p in parts)])
    user_of = [user_all[a:b] for a, b in itertools.pairwise(bounds)]
    item_of = [item_all[a:b] for a, b in itertools.pairwise(bounds)]
    dropped = [_dedupe(p, user_of[k] * len(item_raw) + item_of[k], duplicates)
               for k, p in enumerate(parts)]
    inters = [Interactions(user_of[k][p.rows], item_of[k][p.rows],
                           (np.ones(len(p.rows)) if p.ratings is None else p.ratings[p.rows])
                           .astype(np.float32)) for k, p in enumerate(parts)]
    notes: list[str] = []
    for p, n in zip(parts, dropped, strict=True):
        if n:
            notes.append(f"{p.table.path.name}: dropped {n} duplicate (user, item) rows, kept "
                         f"the {duplicates} of each pair")
            notice(notes[-1])
    train, test, split_desc = _split(parts, inters, split, test_fraction, seed, len(item_raw))
    _check_training_users(parts, test, train, user_raw)
    is_rating = parts[0].ratings is not None
    common: dict[str, Any] = {
        "name": path.name, "num_users": len(user_raw), "num_items": len(item_raw),
        "train": train, "test": test,
        "meta": {"source": f"user file {path}", "split": split_desc,
                 "files": [str(p.table.path) for p in parts], "user_ids": user_raw,
                 "item_ids": item_raw, "columns": cols, "duplicates": notes, "warnings": []},
    }
    if len(test) == 0:  # loadable (to look at), but a run refuses it: fedrec.experiment
        common["meta"]["no_test_rows"] = _why_no_test(inters[0], split, test_fraction)
    if not is_rating:
        return InteractionDataset(**common)
    lo, hi = _rating_bounds(parts, rating_min, rating_max)
    return RatingDataset(**common, rating_min=lo, rating_max=hi)


def _split(parts: list[_Part], inters: list[Interactions], split: str,
           test_fraction: float | None, seed: int, num_items: int,
           ) -> tuple[Interactions, Interactions, str]:
    everything = inters[0]
    if split == "given":
        test = inters[1]
        in_test = np.isin(everything.users * num_items + everything.items,
                          test.users * num_items + test.items)
        removed = int(in_test.sum())
        desc = (f"given: test = {parts[1].table.path.name} ({len(test)} rows), train = the other "
                f"rows of {parts[0].table.path.name} ({removed} of its rows are test pairs)")
        return everything.select(~in_test), test, desc
    if split == "leave_last_out":
        stamps = parts[0].stamps[parts[0].rows]  # type: ignore[index]
        mask = _leave_last_out(everything.users, stamps)
        return (everything.select(~mask), everything.select(mask),
                "leave-last-out by timestamp (users with two rows or more)")
    frac = 0.2 if test_fraction is None else test_fraction
    if isinstance(frac, bool) or not isinstance(frac, int | float):
        raise ConfigError(f"test_fraction must be a number, got {frac!r}")
    train, test = per_user_split(everything, float(frac), seed)
    return train, test, f"random per user, test fraction {frac:g}, seed {seed}"


def _why_no_test(everything: Interactions, split: str, test_fraction: float | None) -> str:
    if split == "given":
        return "the test_file holds none"
    if split == "random" and test_fraction == 0:
        return "test_fraction=0 holds none out (give a fraction above 0)"
    if len(np.unique(everything.users)) == len(everything):
        return ("every user has one row, which stays in training (a user needs two rows or "
                "more for a test row)")
    return f"split={split} held none out"


def _check_training_users(parts: list[_Part], test: Interactions, train: Interactions,
                          user_raw: np.ndarray) -> None:
    lacking = np.setdiff1d(test.users, train.users)
    if len(lacking):
        part = parts[-1]
        row = int(np.flatnonzero(test.users == lacking[0])[0])
        raise fail(f"{part.table.at(part.rows[row])}: user {user_raw[lacking[0]]} has test rows "
                   f"but no training rows ({len(lacking)} such users); every user is a client "
                   "and needs training data")


def _rating_bounds(parts: list[_Part], rating_min: Any, rating_max: Any) -> tuple[float, float]:
    for key, value in (("rating_min", rating_min), ("rating_max", rating_max)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ConfigError(f"{key} must be a number, got {value!r}")
    values = np.concatenate([p.ratings[p.rows] for p in parts])  # type: ignore[index]
    lo = float(values.min()) if rating_min is None else float(rating_min)
    hi = float(values.max()) if rating_max is None else float(rating_max)
    if lo > hi:
        raise ConfigError(f"rating_min {lo:g} is above rating_max {hi:g}")
    for p in parts:
        r = p.ratings[p.rows]  # type: ignore[index]
        bad = np.flatnonzero((r < lo) | (r > hi))
        if len(bad):
            raise fail(f"{p.table.at(p.rows[bad[0]])}: rating {r[bad[0]]:g} outside "
                       f"{lo:g}..{hi:g}")
    return lo, hi

