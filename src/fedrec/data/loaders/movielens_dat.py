"""MovieLens-1M / -10M ``::``-separated ``.dat`` files.

* ``ratings.dat``: ``UserID::MovieID::Rating::Timestamp`` (ML-1M: 1..5 stars; ML-10M: half stars
  0.5..5).
* ``movies.dat``: ``MovieID::Title::Genre|Genre|...`` (latin-1) -> item genre flags.
* ``users.dat`` (ML-1M only): ``UserID::Gender::Age::Occupation::Zip`` -> user features
  ``[gender one-hot (F, M), age-group one-hot (7), occupation one-hot (21)]`` (30 columns).

Items are the movies listed in ``movies.dat`` (so features align with ids) and users those of
``users.dat``, when present; otherwise the ids seen in ``ratings.dat``. Dense ids follow raw-id
order; ``meta["user_ids"]``/``meta["item_ids"]`` map back. The split is a seeded random split of
all ratings (default 90/10).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedrec.data.loaders._common import (
    IdMap,
    check_unique_ids,
    check_values,
    fail,
    load_numeric_table,
    one_hot,
    parse_number,
    read_records,
    require_files,
)
from fedrec.data.splits import random_split
from fedrec.data.types import Interactions, RatingDataset

ML1M_GENRES = (
    "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime", "Documentary", "Drama",
    "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller", "War",
    "Western",
)  # fmt: skip
AGE_GROUPS = (1, 18, 25, 35, 45, 50, 56)
GENDERS = ("F", "M")
NUM_OCCUPATIONS = 21


def read_dat_ratings(path: Path, half_stars: bool) -> np.ndarray:
    """``(n, 4)`` float64 ``user, movie, rating, timestamp``; range 1..5 (or 0.5..5 by halves)."""
    arr = load_numeric_table(
        path, 4, "::", ("UserID", "MovieID", "Rating", "Timestamp"), integer_cols=(0, 1)
    )
    if half_stars:
        check_values(path, arr[:, 2], 0.5, 5.0, 0.5)
    else:
        check_values(path, arr[:, 2], 1.0, 5.0, 1.0)
    return arr


def read_users_dat(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """ML-1M ``users.dat`` -> (sorted raw user ids, ``(n, 30)`` float32 features)."""
    records = read_records(path, "::", 5, encoding="latin-1")
    n = len(records)
    ids = np.empty(n, np.int64)
    gender, age, occ = (np.empty(n, np.int64) for _ in range(3))
    for k, (line, f) in enumerate(records):
        ids[k] = int(parse_number(path, line, f[0], "UserID", integer=True))
        if f[1] not in GENDERS:
            raise fail(f"{path} line {line}: gender {f[1]!r} is not one of F, M")
        gender[k] = GENDERS.index(f[1])
        a = int(parse_number(path, line, f[2], "age", integer=True))
        if a not in AGE_GROUPS:
            raise fail(f"{path} line {line}: age code {a} is not one of {AGE_GROUPS}")
        age[k] = AGE_GROUPS.index(a)
        o = int(parse_number(path, line, f[3], "occupation", integer=True))
        if not 0 <= o < NUM_OCCUPATIONS:
            raise fail(f"{path} line {line}: occupation code {o} outside 0..20")
        occ[k] = o
    check_unique_ids(path, ids, records, "UserID")
    feats = np.hstack([one_hot(gender, 2), one_hot(age, len(AGE_GROUPS)), one_hot(occ, 21)])
    order = np.argsort(ids)
    return ids[order], feats[order]


def read_movies_dat(path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``movies.dat`` -> (sorted raw movie ids, genre flags, genre names).

    Genres are the 18 ML-1M genres followed by any others in the file (ML-10M adds ``IMAX`` and
    ``(no genres listed)``), sorted.
    """
    records = read_records(path, "::", 3, encoding="latin-1")
    ids = np.empty(len(records), np.int64)
    genre_lists = []
    for k, (line, f) in enumerate(records):
        ids[k] = int(parse_number(path, line, f[0], "MovieID", integer=True))
        genre_lists.append([g for g in f[2].strip().split("|") if g])
    extra = sorted({g for gl in genre_lists for g in gl} - set(ML1M_GENRES))
    genres = [*ML1M_GENRES, *extra]
    index = {g: i for i, g in enumerate(genres)}
    flags = np.zeros((len(records), len(genres)), np.float32)
    for k, gl in enumerate(genre_lists):
        flags[k, [index[g] for g in gl]] = 1.0
    check_unique_ids(path, ids, records, "MovieID")
    order = np.argsort(ids)
    return ids[order], flags[order], genres


def load_movielens_dat(
    root: Path, name: str, half_stars: bool, test_fraction: float = 0.1, seed: int = 0
) -> RatingDataset:
    """Load ML-1M (``half_stars=False``) or ML-10M (``True``) from ``root``."""
    require_files(name, root, ["ratings.dat"])
    ratings_path = root / "ratings.dat"
    users_path, movies_path = root / "users.dat", root / "movies.dat"
    ratings = read_dat_ratings(ratings_path, half_stars)
    used = [ratings_path]
    user_feats = item_feats = None
    genres: list[str] | None = None
    if users_path.is_file():
        user_raw, user_feats = read_users_dat(users_path)
        used.append(users_path)
    else:
        user_raw = ratings[:, 0].astype(np.int64)
    if movies_path.is_file():
        item_raw, item_feats, genres = read_movies_dat(movies_path)
        used.append(movies_path)
    else:
        item_raw = ratings[:, 1].astype(np.int64)
    umap, imap = IdMap(user_raw), IdMap(item_raw)
    everything = Interactions(
        umap.encode(ratings[:, 0].astype(np.int64), ratings_path, "user"),
        imap.encode(ratings[:, 1].astype(np.int64), ratings_path, "movie"),
        ratings[:, 2].astype(np.float32),
    )
    train, test = random_split(everything, test_fraction, seed)
    return RatingDataset(
        name=name,
        num_users=len(umap),
        num_items=len(imap),
        train=train,
        test=test,
        user_features=user_feats,
        item_features=item_feats,
        rating_min=0.5 if half_stars else 1.0,
        rating_max=5.0,
        meta={
            "source": "GroupLens .dat files",
            "split": f"random {1 - test_fraction:.0%}/{test_fraction:.0%}, seed {seed}",
            "files": [str(p) for p in used],
            "user_ids": umap.raw,
            "item_ids": imap.raw,
            "item_feature_names": genres,
        },
    )
