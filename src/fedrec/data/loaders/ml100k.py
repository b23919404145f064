"""MovieLens-100K, from the GroupLens files or from RecBole's atomic files.

GroupLens layout (``ml-100k.zip``): ``u.data`` (tab-separated ``user item rating timestamp``),
``u.user`` (``id|age|gender|occupation|zip``), ``u.item`` (``id|title|release|video|url|`` + 19
genre flags, latin-1) and the five 80/20 splits ``u1..u5.base/.test``. Split ``uK`` takes its
test rows from ``uK.test`` and trains on every other rating of ``u.data`` (which is how GroupLens
built ``uK.base``); ``uK.base`` is only checked to hold exactly those pairs, its rating column is
not used (the staged reference ``u1.base`` has per-user rescaled ratings; a note is printed and
kept in ``meta["warnings"]``). This equals mgcnn's ``split_1.mat``.

RecBole layout (``recbole/ml-100k.{inter,user,item}``, from the ``recbole==1.2.1`` wheel): the same
100,000 ratings and 943 users (byte-identical once the header is dropped), and items with their
genres as a token list. The GroupLens ``uK`` splits cannot be recovered from these files, so when
``u1.test`` is absent the default split is a seeded random 80/20 split of all ratings
(``split="random"``, ``test_fraction=0.2``); the chosen source and split are printed and stored in
``meta["source"]``/``meta["split"]``. Each feature file falls back independently (e.g. ``u.data`` +
``recbole/ml-100k.item`` after :func:`fedrec.data.download.ensure_files` used the RecBole wheel).

Ids are 1-based in the files and become dense 0-based ids in raw-id order;
``meta["user_ids"][u]``/``meta["item_ids"][i]`` give the raw id of dense id ``u``/``i``.

Features: users get ``[age scaled to 0..1, gender one-hot (F, M), occupation one-hot (21)]`` (24
columns), items the 19 genre flags.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from fedrec.data.loaders import mgcnn, recbole
from fedrec.data.loaders._common import (
    IdMap,
    check_unique_ids,
    check_values,
    fail,
    load_numeric_table,
    notice,
    one_hot,
    parse_number,
    read_records,
    require_files,
    row_line_number,
)
from fedrec.data.splits import random_split
from fedrec.data.types import Interactions, RatingDataset
from fedrec.errors import ConfigError

NAME = "ml-100k"
OCCUPATIONS = (
    "administrator", "artist", "doctor", "educator", "engineer", "entertainment", "executive",
    "healthcare", "homemaker", "lawyer", "librarian", "marketing", "none", "other", "programmer",
    "retired", "salesman", "scientist", "student", "technician", "writer",
)  # fmt: skip
GENRES = (
    "unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime", "Documentary",
    "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi",
    "Thriller", "War", "Western",
)  # fmt: skip
GENDERS = ("F", "M")
USER_FEATURE_NAMES = ("age", *(f"gender={g}" for g in GENDERS), *(f"occ={o}" for o in OCCUPATIONS))
RATING_COLS = ("user id", "item id", "rating", "timestamp")

_RECBOLE = {
    "inter": ("recbole/ml-100k.inter", "ml-100k.inter"),
    "user": ("recbole/ml-100k.user", "ml-100k.user"),
    "item": ("recbole/ml-100k.item", "ml-100k.item"),
}


def _find(root: Path, candidates: tuple[str, ...]) -> Path | None:
    for rel in candidates:
        if (root / rel).is_file():
            return root / rel
    return None


def read_ratings(path: Path) -> np.ndarray:
    """``(n, 4)`` float64 ``user, item, rating, timestamp`` of a GroupLens ``u.data``-style file."""
    arr = load_numeric_table(path, 4, "\t", RATING_COLS, integer_cols=(0, 1))
    check_values(path, arr[:, 2], 1, 5, 1)
    return arr


def _user_features(
    records: list[tuple[int, list[str]]], path: Path
) -> tuple[np.ndarray, np.ndarray]:
    """Raw ids and the 24-column feature matrix from ``(line, [id, age, gender, occ, zip])``."""
    ids = np.empty(len(records), dtype=np.int64)
    ages = np.empty(len(records), dtype=np.float64)
    gender = np.empty(len(records), dtype=np.int64)
    occ = np.empty(len(records), dtype=np.int64)
    for k, (line, f) in enumerate(records):
        ids[k] = int(parse_number(path, line, f[0], "user id", integer=True))
        ages[k] = parse_number(path, line, f[1], "age", integer=True)
        if f[2] not in GENDERS:
            raise fail(f"{path} line {line}: gender {f[2]!r} is not one of F, M")
        gender[k] = GENDERS.index(f[2])
        if f[3] not in OCCUPATIONS:
            raise fail(f"{path} line {line}: unknown occupation {f[3]!r}")
        occ[k] = OCCUPATIONS.index(f[3])
    check_unique_ids(path, ids, records, "user id")
    span = ages.max() - ages.min() if len(ages) else 0.0
    age = (ages - ages.min()) / span if span > 0 else np.zeros_like(ages)
    feats = np.hstack([age[:, None].astype(np.float32), one_hot(gender, 2), one_hot(occ, 21)])
    order = np.argsort(ids)
    return ids[order], feats[order]


def read_users(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """GroupLens ``u.user`` -> (sorted raw user ids, ``(943, 24)`` float32 features)."""
    return _user_features(read_records(path, "|", 5), path)


def read_items(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """GroupLens ``u.item`` (latin-1) -> (sorted raw item ids, ``(1682, 19)`` genre flags)."""
    records = read_records(path, "|", 5 + len(GENRES), encoding="latin-1")
    ids = np.empty(len(records), dtype=np.int64)
    flags = np.zeros((len(records), len(GENRES)), dtype=np.float32)
    for k, (line, f) in enumerate(records):
        ids[k] = int(parse_number(path, line, f[0], "item id", integer=True))
        for g, text in enumerate(f[5:]):
            if text not in ("0", "1"):
                raise fail(f"{path} line {line}: genre flag {GENRES[g]!r} is {text!r}, not 0/1")
            flags[k, g] = float(text)
    check_unique_ids(path, ids, records, "item id")
    order = np.argsort(ids)
    return ids[order], flags[order]


def read_recbole_users(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """RecBole ``ml-100k.user`` -> same as :func:`read_users`."""
    rows = recbole.read_table(path, ["user_id", "age", "gender", "occupation"])
    return _user_features([(n, f[:5]) for n, f in rows], path)


def read_recbole_items(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """RecBole ``ml-100k.item`` (``class`` = genre tokens) -> same as :func:`read_items`."""
    names = recbole.read_header(path, ["item_id"])
    if "class" not in names:
        raise fail(f"{path} line 1: no 'class' (genre) column in the RecBole header")
    col = names.index("class")
    rows = recbole.read_table(path, ["item_id"])
    ids = np.empty(len(rows), dtype=np.int64)
    flags = np.zeros((len(rows), len(GENRES)), dtype=np.float32)
    for k, (line, f) in enumerate(rows):
        ids[k] = int(parse_number(path, line, f[0], "item id", integer=True))
        for token in f[col].split():
            if token not in GENRES:
                raise fail(f"{path} line {line}: unknown genre {token!r}")
            flags[k, GENRES.index(token)] = 1.0
    check_unique_ids(path, ids, rows, "item id")
    order = np.argsort(ids)
    return ids[order], flags[order]


def _grouplens_split(
    everything: Interactions,
    encode: Callable[[np.ndarray, Path], Interactions],
    ratings_path: Path,
    test_path: Path,
    num_items: int,
) -> tuple[Interactions, Interactions, str]:
    """The GroupLens ``uK`` split: test = the rows of ``uK.test``; train = every other rating.

    GroupLens built ``uK.base`` as ``u.data`` minus ``uK.test``. ``uK.test`` must agree with the
    ratings file (same pairs and ratings); ``uK.base``, when present, must hold exactly the other
    pairs (its rating column is not used: the staged copy of ``u1.base`` carries per-user rescaled
    ratings). When the two split files hold pairs the ratings file lacks and nothing else, the
    ratings file is the one at fault (a truncated ``u.data``) and is named. Returns ``(train,
    test, note)`` where ``note`` reports a ``uK.base`` rating mismatch.
    """
    test = encode(read_ratings(test_path), test_path)
    all_keys = everything.users * num_items + everything.items
    test_keys = test.users * num_items + test.items
    base_path = test_path.with_suffix(".base")
    base = None
    if base_path.is_file():
        base = encode(load_numeric_table(base_path, 4, "\t", RATING_COLS, (0, 1)), base_path)
        base_keys = base.users * num_items + base.items
        split_keys = np.concatenate([test_keys, base_keys])
        lacking = int((~np.isin(split_keys, all_keys)).sum())
        if lacking and np.isin(all_keys, split_keys).all():
            raise fail(
                f"{ratings_path}: {lacking} of the {len(split_keys)} ratings of {test_path.name} "
                f"and {base_path.name} are not in it (it has {len(all_keys)}): a truncated or "
                "incomplete ratings file"
            )
    order = np.argsort(all_keys)
    pos = np.searchsorted(all_keys[order], test_keys)
    pos = np.minimum(pos, len(order) - 1)
    found = all_keys[order][pos] == test_keys
    same = found & (everything.values[order][pos] == test.values)
    if not same.all():
        k = int(np.argmax(~same))
        line = row_line_number(test_path, k)
        what = "rating differs from" if found[k] else "pair is not in"
        raise fail(f"{test_path} line {line}: {what} the ratings file {ratings_path.name}")
    in_test = np.zeros(len(everything), dtype=bool)
    in_test[order[pos]] = True
    train = everything.select(~in_test)
    note = ""
    if base is not None:
        if not np.array_equal(np.sort(base_keys), np.sort(all_keys[~in_test])):
            raise fail(
                f"{base_path}: its pairs are not exactly the ratings missing from {test_path.name}"
            )
        sorted_keys = all_keys[order]
        data_values = everything.values[order][np.searchsorted(sorted_keys, base_keys)]
        differ = int((data_values != base.values).sum())
        if differ:
            note = (
                f"{base_path.name}: {differ} of its ratings differ from the ratings file (not the "
                "GroupLens original); its rating column is ignored"
            )
    return train, test, note


def load_ml100k(
    root: Path,
    split: str | None = None,
    test_fraction: float | None = None,
    seed: int = 0,
    source: str = "auto",
) -> RatingDataset:
    """Load ML-100K from ``root`` (see the module docstring for sources, splits and features).

    ``split``: ``"u1".."u5"`` (GroupLens files), ``"random"`` (seeded, ``test_fraction`` default
    0.1) or ``"mgcnn"`` (``mgcnn/split_1.mat``, with side graphs). Default: ``"u1"`` when
    ``u1.test`` exists, else ``"random"`` with ``test_fraction=0.2``; giving only
    ``test_fraction`` selects ``"random"``.
    """
    if source not in ("auto", "grouplens", "recbole"):
        raise ConfigError(
            f"ml-100k: source must be 'auto', 'grouplens' or 'recbole', got {source!r}"
        )
    valid_splits = ("u1", "u2", "u3", "u4", "u5", "random", "mgcnn")
    if split is not None and split not in valid_splits:
        raise ConfigError(f"ml-100k: split must be one of {', '.join(valid_splits)}, got {split!r}")

    inter_path = _pick(root, "u.data", _RECBOLE["inter"], source)
    user_path = _pick(root, "u.user", _RECBOLE["user"], source, required=False)
    item_path = _pick(root, "u.item", _RECBOLE["item"], source, required=False)
    is_recbole = inter_path.name != "u.data"
    ratings = recbole.read_inter(inter_path) if is_recbole else read_ratings(inter_path)
    if is_recbole:
        check_values(inter_path, ratings[:, 2], 1, 5, 1, skip_header=True)

    user_raw, user_feats = (
        (read_recbole_users if user_path.name != "u.user" else read_users)(user_path)
        if user_path
        else (ratings[:, 0].astype(np.int64), None)
    )
    item_raw, item_feats = (
        (read_recbole_items if item_path.name != "u.item" else read_items)(item_path)
        if item_path
        else (ratings[:, 1].astype(np.int64), None)
    )
    umap, imap = IdMap(user_raw), IdMap(item_raw)

    def encode(arr: np.ndarray, path: Path, skip_header: bool = False) -> Interactions:
        return Interactions(
            umap.encode(arr[:, 0].astype(np.int64), path, "user", skip_header),
            imap.encode(arr[:, 1].astype(np.int64), path, "item", skip_header),
            arr[:, 2].astype(np.float32),
        )

    everything = encode(ratings, inter_path, is_recbole)
    used = [inter_path, *(p for p in (user_path, item_path) if p)]
    have_u1 = (root / "u1.test").is_file()
    if test_fraction is not None and split not in (None, "random"):
        raise ConfigError(f"ml-100k: test_fraction only applies to split='random', not {split!r}")
    if split is None:  # a given test_fraction implies the random split
        split = "u1" if have_u1 and test_fraction is None else "random"
        if split == "random" and test_fraction is None:
            test_fraction = 0.2
    graphs: tuple = (None, None)
    warnings: list[str] = []
    if split in ("u1", "u2", "u3", "u4", "u5"):
        require_files(NAME, root, [f"{split}.test"])
        test_p = root / f"{split}.test"
        train, test, base_note = _grouplens_split(everything, encode, inter_path, test_p,
                                                   len(imap))
        used.append(test_p)
        split_desc = f"GroupLens {split}: {split}.test, train = the other ratings"
        if base_note:
            notice(f"ml-100k: {base_note}")
            warnings.append(base_note)
    elif split == "random":
        frac = 0.1 if test_fraction is None else float(test_fraction)
        train, test = random_split(everything, frac, seed)
        split_desc = f"random {1 - frac:.0%}/{frac:.0%}, seed {seed}"
    else:
        require_files(NAME, root, ["mgcnn/split_1.mat"])
        mg = mgcnn.load_mgcnn(root / "mgcnn" / "split_1.mat", NAME, 1, 5, 1)
        if (mg.num_users, mg.num_items) != (len(umap), len(imap)):
            raise fail(
                f"{root / 'mgcnn/split_1.mat'}: shape {mg.num_users}x{mg.num_items} does not "
                f"match {len(umap)} users x {len(imap)} items"
            )
        train, test, graphs = mg.train, mg.test, (mg.user_graph, mg.item_graph)
        used.append(root / "mgcnn" / "split_1.mat")
        split_desc = "mgcnn split_1.mat"

    read = [p.relative_to(root).as_posix() for p in (inter_path, user_path, item_path) if p]
    kind = "RecBole atomic files" if is_recbole else "GroupLens files"
    source_desc = f"{kind} ({', '.join(read)})"
    if is_recbole or item_path is None or item_path.name != "u.item" or not have_u1:
        notice(f"ml-100k: read {source_desc} in {root}; split: {split_desc}")
    return RatingDataset(
        name=NAME,
        num_users=len(umap),
        num_items=len(imap),
        train=train,
        test=test,
        user_features=user_feats,
        item_features=item_feats,
        user_graph=graphs[0],
        item_graph=graphs[1],
        rating_min=1.0,
        rating_max=5.0,
        meta={
            "source": source_desc,
            "split": split_desc,
            "files": [str(p) for p in used],
            "user_ids": umap.raw,
            "item_ids": imap.raw,
            "user_feature_names": list(USER_FEATURE_NAMES) if user_feats is not None else None,
            "item_feature_names": list(GENRES) if item_feats is not None else None,
            "warnings": warnings,
        },
    )


def _pick(
    root: Path, grouplens: str, recbole_names: tuple[str, ...], source: str, required: bool = True
) -> Path | None:
    if source in ("auto", "grouplens") and (root / grouplens).is_file():
        return root / grouplens
    if source in ("auto", "recbole"):
        found = _find(root, recbole_names)
        if found is not None:
            return found
    if not required:
        return None
    wanted = {"grouplens": [grouplens], "recbole": [recbole_names[0]]}.get(
        source, [grouplens, recbole_names[0]]
    )
    from fedrec.data.download import missing_files_message

    raise fail(missing_files_message(NAME, root, wanted, any_of=source == "auto"))
