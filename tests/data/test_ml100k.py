"""ML-100K loader: staged GroupLens, RecBole and mgcnn files, and corrupted copies."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedrec.data import RatingDataset, load_dataset
from fedrec.errors import ConfigError, DataError

GROUPLENS = ["u.data", "u.user", "u.item", "u1.test", "u1.base"]
RECBOLE = ["recbole/ml-100k.inter", "recbole/ml-100k.user", "recbole/ml-100k.item"]


@pytest.fixture(scope="module")
def ml(data_root: Path) -> Path:
    missing = [f for f in GROUPLENS if not (data_root / "ml-100k" / f).is_file()]
    if missing:
        pytest.skip(f"staged ML-100K files not available: {', '.join(missing)}")
    return data_root


@pytest.fixture(scope="module")
def u1(ml: Path) -> RatingDataset:
    return load_dataset("ml-100k", ml, val_fraction=0.0)  # the loader's own split


def keys(inter, num_items: int = 2000) -> np.ndarray:
    return np.sort(inter.users * num_items + inter.items)


def test_u1_counts_and_features(u1: RatingDataset) -> None:
    assert (u1.num_users, u1.num_items) == (943, 1682)
    assert (len(u1.train), len(u1.test)) == (80_000, 20_000)
    assert u1.user_features.shape == (943, 24) and u1.item_features.shape == (1682, 19)
    assert u1.user_features[:, 0].min() == 0 and u1.user_features[:, 0].max() == 1
    assert np.all(u1.user_features[:, 1:3].sum(1) == 1) and np.all(
        u1.user_features[:, 3:].sum(1) == 1
    )
    assert set(np.unique(u1.train.values)) == {1, 2, 3, 4, 5}
    assert u1.train.users.dtype == np.int64 and u1.train.users.max() == 942
    # 1-based raw ids -> 0-based dense ids, mapping kept in meta
    assert u1.meta["user_ids"][0] == 1 and u1.meta["item_ids"][-1] == 1682
    assert np.intersect1d(keys(u1.train), keys(u1.test)).size == 0


def test_u1_first_test_row_matches_file(u1: RatingDataset, ml: Path) -> None:
    first = (ml / "ml-100k/u1.test").read_text().split("\n", 1)[0].split("\t")
    assert (u1.test.users[0] + 1, u1.test.items[0] + 1) == (int(first[0]), int(first[1]))
    assert u1.test.values[0] == float(first[2])


def test_u1_base_rescaled_ratings_are_ignored_with_a_note(u1: RatingDataset) -> None:
    # the staged u1.base has per-user rescaled ratings: pairs are used, ratings come from u.data
    assert any("u1.base" in w for w in u1.meta["warnings"])


def test_other_splits_and_random(ml: Path, need) -> None:
    need(ml / "ml-100k", "u3.test", "u3.base")
    u3 = load_dataset("ml-100k", ml, split="u3", val_fraction=0.0)
    assert (len(u3.train), len(u3.test)) == (80_000, 20_000) and u3.meta["warnings"] == []
    r1 = load_dataset("ml-100k", ml, split="random", seed=1, val_fraction=0.0)
    r2 = load_dataset("ml-100k", ml, split="random", seed=1, val_fraction=0.0)
    assert (len(r1.train), len(r1.test)) == (90_000, 10_000)
    assert np.array_equal(keys(r1.test), keys(r2.test))


def test_mgcnn_split_equals_u1(u1: RatingDataset, ml: Path, need) -> None:
    need(ml / "ml-100k", "mgcnn/split_1.mat")
    mg = load_dataset("ml-100k", ml, split="mgcnn", val_fraction=0.0)
    assert np.array_equal(keys(mg.test), keys(u1.test))
    assert np.array_equal(keys(mg.train), keys(u1.train))
    assert mg.user_graph.shape == (943, 943) and mg.item_graph.shape == (1682, 1682)
    assert mg.user_graph.nnz == 12_594 and mg.item_graph.nnz == 28_928


def test_recbole_source_on_staged_files(ml: Path, u1: RatingDataset, need) -> None:
    need(ml / "ml-100k", *RECBOLE)
    rb = load_dataset("ml-100k", ml, source="recbole", split="random", test_fraction=0.0,
                      val_fraction=0.0)
    assert (rb.num_users, rb.num_items, len(rb.train)) == (943, 1682, 100_000)
    assert rb.meta["source"].startswith("RecBole")
    assert np.array_equal(rb.user_features, u1.user_features)
    assert np.array_equal(rb.item_features, u1.item_features)


def test_recbole_only_directory_defaults_to_random_80_20(
    ml: Path, tmp_path: Path, capsys, need, mirror
) -> None:
    need(ml / "ml-100k", *RECBOLE)
    mirror(ml / "ml-100k", tmp_path / "ml-100k", RECBOLE)
    ds = load_dataset("ml-100k", tmp_path, val_fraction=0.0)
    assert (len(ds.train), len(ds.test)) == (80_000, 20_000)
    assert ds.meta["split"].startswith("random 80%/20%")
    assert "RecBole" in capsys.readouterr().err
    with pytest.raises(DataError, match=r"u1\.test"):
        load_dataset("ml-100k", tmp_path, split="u1")


def _corrupt(ml: Path, tmp_path: Path, name: str, edit, mirror, replace_file) -> Path:
    mirror(ml / "ml-100k", tmp_path / "ml-100k", GROUPLENS)
    text = (ml / "ml-100k" / name).read_text(encoding="latin-1").split("\n")
    edit(text)
    replace_file(tmp_path / "ml-100k" / name, "\n".join(text).encode("latin-1"))
    return tmp_path


@pytest.mark.parametrize(
    ("name", "line", "edit", "message"),
    [
        (
            "u.data",
            17,
            lambda t: t.__setitem__(16, "1\t2\t3"),
            "expected 4 tab-separated fields, got 3",
        ),
        ("u.data", 5, lambda t: t.__setitem__(4, "1\tx\t3\t4"), "'x' is not an integer"),
        ("u.data", 9, lambda t: t.__setitem__(8, "1\t2\t7\t4"), "rating 7 outside 1..5"),
        ("u1.test", 3, lambda t: t.__setitem__(2, "1\t1700\t3\t4"), "unknown item id 1700"),
        ("u.user", 2, lambda t: t.__setitem__(1, "2|53|X|other|94043"), "gender 'X'"),
        ("u.item", 4, lambda t: t.__setitem__(3, t[3] + "|0"), "expected 24 pipe-separated"),
    ],
)
def test_corrupted_files(
    ml: Path, tmp_path: Path, name, line, edit, message, mirror, replace_file
) -> None:
    root = _corrupt(ml, tmp_path, name, edit, mirror, replace_file)
    with pytest.raises(DataError) as err:
        load_dataset("ml-100k", root)
    text = str(err.value)
    assert "\n" not in text and name in text and f"line {line}" in text and message in text


@pytest.mark.parametrize("cut", [1, 1000])
def test_truncated_ratings_file_is_named(
    ml: Path, tmp_path: Path, cut: int, mirror, replace_file
) -> None:
    # u1.test and u1.base together are u.data: a u.data short of some of their ratings is the
    # file at fault (it was blamed on u1.base), whichever rows the truncation took.
    root = _corrupt(ml, tmp_path, "u.data", lambda t: t.__delitem__(slice(-1 - cut, -1)),
                    mirror, replace_file)
    with pytest.raises(DataError) as err:
        load_dataset("ml-100k", root)
    text = str(err.value)
    assert text.startswith(str(root / "ml-100k" / "u.data") + ":"), text
    assert f"{cut} of the 100000 ratings of u1.test and u1.base are not in it" in text
    assert "u1.base:" not in text


def test_truncated_base_file_is_still_named(
    ml: Path, tmp_path: Path, mirror, replace_file
) -> None:
    root = _corrupt(ml, tmp_path, "u1.base", lambda t: t.__delitem__(slice(-11, -1)),
                    mirror, replace_file)
    with pytest.raises(DataError, match=r"u1\.base: its pairs are not exactly"):
        load_dataset("ml-100k", root)


def test_bad_options(ml: Path) -> None:
    with pytest.raises(ConfigError, match="split must be one of"):
        load_dataset("ml-100k", ml, split="u9")
    with pytest.raises(ConfigError, match="test_fraction only applies"):
        load_dataset("ml-100k", ml, split="u2", test_fraction=0.3)
    assert len(load_dataset("ml-100k", ml, test_fraction=0.3).test) == 30_000
    with pytest.raises(ConfigError, match="unknown option"):
        load_dataset("ml-100k", ml, colour="red")


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"u\.data or recbole/ml-100k\.inter"):
        load_dataset("ml-100k", tmp_path)


# --- side information: titles, years, release dates, genres and demographics, beside the arrays

# Fingerprints (fedrec.data.fingerprint) of loads made before the loader kept side information:
# keeping it must leave every array as it was.
U1_FINGERPRINT = "bf3290202be2dcb23c12371c5ce54cdad462dd82c7cbcca1a81ce1bce2d6a02f"
RANDOM_SEED3_FINGERPRINT = "2a60a418622bae11c50485fc939fe46fecb6d19aae617ea16f2f597a917502eb"


def test_side_information_leaves_the_arrays_and_fingerprints_unchanged(ml: Path) -> None:
    from fedrec.data.fingerprint import fingerprint

    assert fingerprint(load_dataset("ml-100k", ml)) == U1_FINGERPRINT
    seeded = load_dataset("ml-100k", ml, split="random", seed=3)
    assert fingerprint(seeded) == RANDOM_SEED3_FINGERPRINT


def test_grouplens_side_information(u1: RatingDataset) -> None:
    from fedrec.data.side_info import item_info, user_info

    items, users = item_info(u1), user_info(u1)
    assert len(items) == 1682 and len(users) == 943
    assert (items.titles[0], int(items.years[0]), items.release_dates[0]) == (
        "Toy Story", 1995, "01-Jan-1995")
    # "unknown" (item 267) has no year and no date; "... (1995) (V)" keeps its inner year
    assert (items.titles[266], int(items.years[266]), items.release_dates[266]) == (
        "unknown", 0, "")
    assert items.titles[1411].endswith("(1995)") and items.years[1411] == 0
    assert items.genres is u1.item_features and items.genre_names[1] == "Action"
    assert (int(users.ages[0]), users.gender_names[users.genders[0]],
            users.occupation_names[users.occupations[0]], users.zip_codes[0]) == (
        24, "M", "technician", "85711")
    assert len(users.occupation_names) == 21 and np.bincount(users.occupations).size == 21


def test_recbole_side_information_equals_grouplens(ml: Path, u1: RatingDataset, need) -> None:
    from fedrec.data.side_info import item_info, user_info

    need(ml / "ml-100k", *RECBOLE)
    rb = load_dataset("ml-100k", ml, source="recbole", val_fraction=0.0)
    gl_items, rb_items = item_info(u1), item_info(rb)
    assert rb_items.titles == gl_items.titles  # item 267's "unkonwn" read as "unknown"
    assert np.array_equal(rb_items.years, gl_items.years)
    assert np.array_equal(rb_items.genres, gl_items.genres) and rb_items.release_dates is None
    gl_users, rb_users = user_info(u1), user_info(rb)
    for name in ("ages", "genders", "occupations"):
        assert np.array_equal(getattr(rb_users, name), getattr(gl_users, name))
    assert rb_users.zip_codes == gl_users.zip_codes


def _write_small(root: Path, recbole: bool) -> Path:
    """Three users and four items, as GroupLens or as RecBole (recbole==1.2.1) writes them."""
    ratings = [(1, 1, 5, 881250949), (1, 2, 3, 881250950), (2, 3, 4, 881250951),
               (3, 4, 1, 881250952), (2, 1, 2, 881250953), (3, 2, 4, 881250954)]
    users = [(1, 24, "M", "technician", "85711"), (2, 53, "F", "other", "94043"),
             (3, 23, "M", "writer", "32067")]
    # (title as GroupLens writes it, date, RecBole's title, RecBole's year, genres)
    items = [("Toy Story (1995)", "01-Jan-1995", "Toy Story", "1995", ["Animation", "Comedy"]),
             ("Misérables, Les (1995)", "01-Jan-1995", "Misérables, Les", "1995", ["Drama"]),
             ("unknown", "", "unkonwn", "unkonwn", ["unknown"]),
             ("Land Before Time III (1995) (V)", "01-Jan-1995", "Land Before Time III (1995)",
              "V", ["Children's"])]
    d = root / "ml-100k"
    (d / "recbole").mkdir(parents=True)
    if recbole:
        inter = ["user_id:token\titem_id:token\trating:float\ttimestamp:float"]
        inter += ["\t".join(map(str, r)) for r in ratings]
        user = ["user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token"]
        user += ["\t".join(map(str, u)) for u in users]
        item = ["item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq"]
        item += [f"{k}\t{t}\t{y}\t{' '.join(g)}" for k, (_, _, t, y, g) in enumerate(items, 1)]
        for ext, lines in (("inter", inter), ("user", user), ("item", item)):
            (d / f"recbole/ml-100k.{ext}").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return root
    from fedrec.data.loaders.ml100k import GENRES

    (d / "u.data").write_text("".join("\t".join(map(str, r)) + "\n" for r in ratings))
    (d / "u.user").write_text("".join("|".join(map(str, u)) + "\n" for u in users))
    rows = [f"{k}|{t}|{date}||http://x|" + "|".join("1" if g in gs else "0" for g in GENRES)
            for k, (t, date, _, _, gs) in enumerate(items, 1)]
    (d / "u.item").write_bytes(("\n".join(rows) + "\n").encode("latin-1"))
    return root


def test_both_sources_on_small_written_files(tmp_path: Path) -> None:
    from fedrec.data.fingerprint import fingerprint
    from fedrec.data.side_info import item_info, user_info

    gl = load_dataset("ml-100k", _write_small(tmp_path / "gl", recbole=False), test_fraction=0.5)
    rb = load_dataset("ml-100k", _write_small(tmp_path / "rb", recbole=True), test_fraction=0.5)
    assert rb.meta["source"].startswith("RecBole") and gl.meta["source"].startswith("GroupLens")
    assert fingerprint(gl) == fingerprint(rb)
    for ds in (gl, rb):
        items, users = item_info(ds), user_info(ds)
        assert items.titles == ("Toy Story", "Misérables, Les", "unknown",
                                "Land Before Time III (1995)")
        assert items.years.tolist() == [1995, 1995, 0, 0]
        assert items.genres[2].tolist() == [1.0] + [0.0] * 18
        assert users.ages.tolist() == [24, 53, 23] and users.genders.tolist() == [1, 0, 1]
    assert item_info(gl).release_dates == ("01-Jan-1995", "01-Jan-1995", "", "01-Jan-1995")
    assert item_info(rb).release_dates is None


def test_recbole_item_file_without_titles_keeps_genres_only(tmp_path: Path) -> None:
    from fedrec.data.loaders.ml100k import read_recbole_item_info
    from fedrec.data.side_info import item_info

    root = _write_small(tmp_path, recbole=True)
    path = root / "ml-100k/recbole/ml-100k.item"
    path.write_text("item_id:token\tclass:token_seq\n1\tDrama\n2\tDrama\n3\tDrama\n4\tDrama\n")
    ds = load_dataset("ml-100k", root)  # loads as before: genre features, no item metadata
    assert ds.item_features[:, 8].tolist() == [1.0] * 4 and "item_info" not in ds.meta
    with pytest.raises(ConfigError, match="ml-100k: no item titles and genres"):
        item_info(ds)
    with pytest.raises(DataError, match=r"ml-100k\.item line 1: no 'movie_title' or "
                                        r"'release_year' column"):
        read_recbole_item_info(path)
