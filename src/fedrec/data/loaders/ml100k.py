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

Side information (:mod:`fedrec.data.side_info`), beside the arrays so that fingerprints and
every existing consumer are unchanged: ``meta["item_info"]`` (titles without the year, the
title's year, GroupLens's release dates, genre flags) and ``meta["user_info"]`` (age, gender,
occupation, zip code), from either source; both sources give the same titles, years, genres
and demographics (RecBole has no release dates).
"""

from __future__ import annotations

import re
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
from fedrec.data.side_info import ItemInfo, UserInfo
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
_TRAILING_GROUP = re.compile(r"(.*?)\s*\(([^()]*)\)")

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


def _user_info(
    records: list[tuple[int, list[str]]], path: Path
) -> tuple[np.ndarray, UserInfo]:
    """Sorted raw ids and the demographics of ``(line, [id, age, gender, occ, zip])`` records."""
    ids = np.empty(len(records), dtype=np.int64)
    ages = np.empty(len(records), dtype=np.int64)
    gender = np.empty(len(records), dtype=np.int64)
    occ = np.empty(len(records), dtype=np.int64)
    for k, (line, f) in enumerate(records):
        ids[k] = int(parse_number(path, line, f[0], "user id", integer=True))
        ages[k] = int(parse_number(path, line, f[1], "age", integer=True))
        if f[2] not in GENDERS:
            raise fail(f"{path} line {line}: gender {f[2]!r} is not one of F, M")
        gender[k] = GENDERS.index(f[2])
        if f[3] not in OCCUPATIONS:
            raise fail(f"{path} line {line}: unknown occupation {f[3]!r}")
        occ[k] = OCCUPATIONS.index(f[3])
    check_unique_ids(path, ids, records, "user id")
    order = np.argsort(ids)
    zips = tuple(records[k][1][4] for k in order)
    info = UserInfo(ages=ages[order], genders=gender[order], occupations=occ[order],
                    zip_codes=zips, gender_names=GENDERS, occupation_names=OCCUPATIONS)
    return ids[order], info


def user_feature_matrix(info: UserInfo) -> np.ndarray:
    """The loader's ``(n, 24)`` float32 user features of ``info`` (module docstring): age
    min-max scaled over the users, gender one-hot (F, M), occupation one-hot (21)."""
    ages = info.ages.astype(np.float64)
    span = ages.max() - ages.min() if len(ages) else 0.0
    age = (ages - ages.min()) / span if span > 0 else np.zeros_like(ages)
    return np.hstack([age[:, None].astype(np.float32), one_hot(info.genders, 2),
                      one_hot(info.occupations, 21)])


def read_user_info(path: Path) -> tuple[np.ndarray, UserInfo]:
    """GroupLens ``u.user`` -> (sorted raw user ids, their demographics)."""
    return _user_info(read_records(path, "|", 5), path)


def read_users(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """GroupLens ``u.user`` -> (sorted raw user ids, ``(943, 24)`` float32 features)."""
    ids, info = read_user_info(path)
    return ids, user_feature_matrix(info)


def split_title_year(title: str) -> tuple[str, int]:
    """``"Toy Story (1995)"`` -> ``("Toy Story", 1995)``: the trailing parenthesised group is cut
    off (as RecBole did when it wrote ``movie_title``; checked on the staged files: equal names
    for every item but 267, see :func:`_recbole_title`), its year kept when it is 4 digits, else
    0 (``"... (1995) (V)"`` -> ``("... (1995)", 0)``, as RecBole's year ``V``)."""
    stripped = title.strip()
    match = _TRAILING_GROUP.fullmatch(stripped)
    if match is None:
        return stripped, 0
    return match.group(1), _year(match.group(2))


def _year(token: str) -> int:
    return int(token) if len(token) == 4 and token.isdigit() else 0


def _recbole_title(title: str) -> str:
    # RecBole's file spells the placeholder title of item 267 (GroupLens: "unknown") "unkonwn";
    # read as GroupLens spells it so that both sources give the same titles (and trigrams).
    return "unknown" if title == "unkonwn" else title


def _sorted_item_info(
    ids: np.ndarray, flags: np.ndarray, titles: list[str], years: list[int],
    dates: list[str] | None,
) -> tuple[np.ndarray, ItemInfo]:
    order = np.argsort(ids)
    info = ItemInfo(titles=tuple(titles[k] for k in order),
                    years=np.asarray(years, dtype=np.int16)[order], genres=flags[order],
                    genre_names=GENRES,
                    release_dates=None if dates is None else tuple(dates[k] for k in order))
    return ids[order], info


def read_item_info(path: Path) -> tuple[np.ndarray, ItemInfo]:
    """GroupLens ``u.item`` (latin-1) -> (sorted raw item ids, titles, years, dates, genres)."""
    records = read_records(path, "|", 5 + len(GENRES), encoding="latin-1")
    ids = np.empty(len(records), dtype=np.int64)
    flags = np.zeros((len(records), len(GENRES)), dtype=np.float32)
    titles, years, dates = [], [], []
    for k, (line, f) in enumerate(records):
        ids[k] = int(parse_number(path, line, f[0], "item id", integer=True))
        for g, text in enumerate(f[5:]):
            if text not in ("0", "1"):
                raise fail(f"{path} line {line}: genre flag {GENRES[g]!r} is {text!r}, not 0/1")
            flags[k, g] = float(text)
        title, year = split_title_year(f[1])
        titles.append(title)
        years.append(year)
        dates.append(f[2].strip())
    check_unique_ids(path, ids, records, "item id")
    return _sorted_item_info(ids, flags, titles, years, dates)


def read_items(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """GroupLens ``u.item`` (latin-1) -> (sorted raw item ids, ``(1682, 19)`` genre flags)."""
    ids, info = read_item_info(path)
    return ids, info.genres


def read_recbole_user_info(path: Path) -> tuple[np.ndarray, UserInfo]:
    """RecBole ``ml-100k.user`` -> same as :func:`read_user_info`."""
    rows = recbole.read_table(path, ["user_id", "age", "gender", "occupation"])
    return _user_info([(n, f[:5]) for n, f in rows], path)


def read_recbole_users(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """RecBole ``ml-100k.user`` -> same as :func:`read_users`."""
    ids, info = read_recbole_user_info(path)
    return ids, user_feature_matrix(info)


RECBOLE_TITLE_COLUMNS = ("movie_title", "release_year")


def _read_recbole_item_rows(
    path: Path,
) -> tuple[np.ndarray, np.ndarray, list[str], list[tuple[int, list[str]]]]:
    """Sorted-as-read raw ids, genre flags, header names and rows of a RecBole ``.item``."""
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
    return ids, flags, names, rows


def recbole_has_titles(path: Path) -> bool:
    """Whether a RecBole ``.item`` header has the title and year columns (the wheel's has)."""
    names = recbole.read_header(path, ["item_id"])
    return all(c in names for c in RECBOLE_TITLE_COLUMNS)


def read_recbole_item_info(path: Path) -> tuple[np.ndarray, ItemInfo]:
    """RecBole ``ml-100k.item`` (``movie_title``, ``release_year``, ``class`` = genre tokens) ->
    same as :func:`read_item_info`, without release dates (RecBole has none)."""
    ids, flags, names, rows = _read_recbole_item_rows(path)
    missing = [c for c in RECBOLE_TITLE_COLUMNS if c not in names]
    if missing:
        raise fail(f"{path} line 1: no {' or '.join(map(repr, missing))} column in the RecBole "
                   "header")
    title_col, year_col = (names.index(c) for c in RECBOLE_TITLE_COLUMNS)
    titles = [_recbole_title(f[title_col].strip()) for _, f in rows]
    years = [_year(f[year_col].strip()) for _, f in rows]
    return _sorted_item_info(ids, flags, titles, years, None)


def read_recbole_items(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """RecBole ``ml-100k.item`` (``class`` = genre tokens) -> same as :func:`read_items`; needs
    no title column."""
    ids, flags, _, _ = _read_recbole_item_rows(path)
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

    users: UserInfo | None = None
    items: ItemInfo | None = None
    if user_path:
        user_reader = read_recbole_user_info if user_path.name != "u.user" else read_user_info
        user_raw, users = user_reader(user_path)
    else:
        user_raw = ratings[:, 0].astype(np.int64)
    if item_path is None:
        item_raw, item_feats = ratings[:, 1].astype(np.int64), None
    elif item_path.name == "u.item" or recbole_has_titles(item_path):
        reader = read_recbole_item_info if item_path.name != "u.item" else read_item_info
        item_raw, items = reader(item_path)
        item_feats = items.genres
    else:  # a RecBole item file with genres only: no item metadata kept
        item_raw, item_feats = read_recbole_items(item_path)
    user_feats = None if users is None else user_feature_matrix(users)
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
        if test_p.with_suffix(".base").is_file():  # read to check it holds the other pairs
            used.append(test_p.with_suffix(".base"))
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
            **({"user_info": users} if users is not None else {}),
            **({"item_info": items} if items is not None else {}),
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
