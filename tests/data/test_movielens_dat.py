"""ML-1M / ML-10M ``::`` loaders: staged users.dat/movies.dat, synthetic ratings.dat files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedrec.data import load_dataset
from fedrec.data.loaders.movielens_dat import read_movies_dat, read_users_dat
from fedrec.errors import DataError


def write_ratings(path: Path, rows: list[tuple]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(f"{u}::{i}::{r}::{978300760 + k}\n" for k, (u, i, r) in enumerate(rows))
    )


def test_staged_users_and_movies(data_root: Path, need) -> None:
    need(data_root / "ml-1m", "users.dat", "movies.dat")
    ids, feats = read_users_dat(data_root / "ml-1m/users.dat")
    assert len(ids) == 6040 and ids[0] == 1 and ids[-1] == 6040
    assert feats.shape == (6040, 30) and np.all(feats.sum(1) == 3)
    mids, flags, genres = read_movies_dat(data_root / "ml-1m/movies.dat")
    assert len(mids) == 3883 and mids[-1] == 3952 and flags.shape == (3883, 18)
    assert genres[0] == "Action" and flags[0, genres.index("Animation")] == 1  # Toy Story
    assert flags.sum(1).min() >= 1


def test_staged_ml1m_without_ratings_names_the_file(data_root: Path, need) -> None:
    need(data_root / "ml-1m", "users.dat", "movies.dat")
    if (data_root / "ml-1m/ratings.dat").exists():
        pytest.skip("ratings.dat is staged")
    with pytest.raises(DataError, match=r"ml-1m: missing ratings\.dat in .*ml-1m.*ml-1m\.zip"):
        load_dataset("ml-1m", data_root)


def test_ml1m_with_synthetic_ratings_and_staged_features(
    data_root: Path, tmp_path: Path, need, mirror
) -> None:
    need(data_root / "ml-1m", "users.dat", "movies.dat")
    mirror(data_root / "ml-1m", tmp_path / "ml-1m", ["users.dat", "movies.dat"])
    rng = np.random.default_rng(0)
    movies = read_movies_dat(data_root / "ml-1m/movies.dat")[0]
    rows = [(int(u), int(rng.choice(movies)), int(rng.integers(1, 6)))
            for u in rng.integers(1, 6041, size=1000)]  # fmt: skip
    write_ratings(tmp_path / "ml-1m/ratings.dat", rows)
    ds = load_dataset("ml-1m", tmp_path, seed=3, val_fraction=0.0)  # the loader's own split
    assert (ds.num_users, ds.num_items) == (6040, 3883)
    assert (len(ds.train), len(ds.test)) == (900, 100)
    assert ds.user_features.shape == (6040, 30) and ds.item_features.shape == (3883, 18)
    # raw ids map back through meta
    u0, i0, _ = rows[0]
    all_u = np.concatenate([ds.train.users, ds.test.users])
    all_i = np.concatenate([ds.train.items, ds.test.items])
    assert np.any((ds.meta["user_ids"][all_u] == u0) & (ds.meta["item_ids"][all_i] == i0))
    again = load_dataset("ml-1m", tmp_path, seed=3)
    assert np.array_equal(ds.test.users, again.test.users)


def test_ml10m_half_stars(tmp_path: Path) -> None:
    write_ratings(
        tmp_path / "ml-10m/ratings.dat", [(1, 10, 0.5), (1, 20, 4.5), (7, 10, 5), (9, 3, 3.5)]
    )
    (tmp_path / "ml-10m/movies.dat").write_text(
        "3::A (1995)::Comedy|IMAX\n10::B (1995)::(no genres listed)\n20::C (1996)::Drama\n"
    )
    ds = load_dataset("ml-10m", tmp_path, test_fraction=0.25, val_fraction=0.0)
    assert (ds.num_users, ds.num_items, ds.rating_min) == (3, 3, 0.5)
    assert sorted(np.concatenate([ds.train.values, ds.test.values])) == [0.5, 3.5, 4.5, 5.0]
    assert ds.meta["item_feature_names"][-2:] == ["(no genres listed)", "IMAX"]
    assert ds.item_features.shape == (3, 20)


@pytest.mark.parametrize(
    ("name", "rows_text", "message"),
    [
        ("ml-1m", "1::2::3::4\n1::2::3.5::4\n", "line 2: rating 3.5 outside 1..5 in steps of 1"),
        ("ml-10m", "1::2::3::4\n\n1::2::5.5::4\n", "line 3: rating 5.5 outside 0.5..5"),
        ("ml-10m", "1::2::3::4\n1::2::3\n", "line 2: expected 4 '::'-separated fields, got 3"),
        ("ml-1m", "1::2::3::4\n1::b::3::4\n", "line 2: MovieID 'b' is not an integer"),
        ("ml-1m", "1::2::3::4\n1::2::nan::4\n", "line 2: Rating 'nan' is not a number"),
    ],
)
def test_malformed_ratings(tmp_path: Path, name: str, rows_text: str, message: str) -> None:
    (tmp_path / name).mkdir()
    (tmp_path / name / "ratings.dat").write_text(rows_text)
    with pytest.raises(DataError) as err:
        load_dataset(name, tmp_path)
    assert "ratings.dat" in str(err.value) and message in str(err.value)


def test_unknown_movie_id(tmp_path: Path) -> None:
    write_ratings(tmp_path / "ml-10m/ratings.dat", [(1, 10, 1), (1, 99, 2)])
    (tmp_path / "ml-10m/movies.dat").write_text("10::B (1995)::Drama\n")
    with pytest.raises(DataError, match=r"ratings\.dat line 2: unknown movie id 99"):
        load_dataset("ml-10m", tmp_path)
