"""A user's own file as ``--dataset``: columns, ids, duplicates, splits, one-line errors, and
ML-100K's ``u.data`` read as a plain TSV equal to the catalogue's ``ml-100k``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fedrec.cli.main import main
from fedrec.data import InteractionDataset, RatingDataset, is_user_file, load_dataset
from fedrec.data.splits import per_user_split
from fedrec.errors import ConfigError, DataError

from .conftest import need

RATINGS = """user,item,rating,timestamp
alice,matrix,5,100
alice,up,3,300
alice,heat,4,200
bob,up,2,50
bob,matrix,1,60
carol,heat,4,10
"""


def write(tmp_path: Path, text: str, name: str = "r.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def triples(part) -> list[tuple[int, int, float]]:
    return list(zip(part.users.tolist(), part.items.tolist(), part.values.tolist(), strict=True))


def test_a_path_is_a_user_file_and_a_catalogue_name_is_not(tmp_path: Path) -> None:
    assert is_user_file("runs/x.csv") and is_user_file(tmp_path / "x") and is_user_file("a.tsv")
    assert not is_user_file("ml-100k") and not is_user_file("cora")


def test_text_ids_are_mapped_in_order_and_the_mapping_is_kept(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path, RATINGS), val_fraction=0.0, test_fraction=0.0)
    assert isinstance(ds, RatingDataset)
    assert ds.meta["user_ids"].tolist() == ["alice", "bob", "carol"]
    assert ds.meta["item_ids"].tolist() == ["heat", "matrix", "up"]
    # File order is kept; alice=0, matrix=1 ...
    assert triples(ds.train) == [(0, 1, 5.0), (0, 2, 3.0), (0, 0, 4.0), (1, 2, 2.0),
                                 (1, 1, 1.0), (2, 0, 4.0)]
    assert (ds.rating_min, ds.rating_max) == (1.0, 5.0)  # observed, unless given


def test_integer_ids_are_ordered_as_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "u\ti\n10\t7\n2\t7\n10\t30\n", "r.tsv")
    ds = load_dataset(path, user_col="u", item_col="i", test_fraction=0.0, val_fraction=0.0)
    assert isinstance(ds, InteractionDataset)  # no rating column: implicit feedback
    assert ds.meta["user_ids"].tolist() == [2, 10] and ds.meta["item_ids"].tolist() == [7, 30]
    assert triples(ds.train) == [(1, 0, 1.0), (0, 0, 1.0), (1, 1, 1.0)]


def test_rating_col_false_reads_a_rated_file_as_implicit(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path, RATINGS), rating_col=False, test_fraction=0.0)
    assert isinstance(ds, InteractionDataset)
    ds = load_dataset(write(tmp_path, RATINGS), implicit=True, test_fraction=0.0)
    assert isinstance(ds, InteractionDataset)


STARS = "user,item,stars\na,x,5\na,y,2\nb,x,4\n"
STARS_ERROR = ("column 'stars' could be ratings: set --data-opt rating_col=stars, or "
               "implicit=true to ignore it")


def test_a_numeric_column_of_no_role_is_refused_naming_the_option(tmp_path: Path) -> None:
    """A rating column not called ``rating`` was dropped and the file read as implicit
    feedback, silently; now it is an error until an option says what the column is."""
    path = write(tmp_path, STARS)
    with pytest.raises(DataError) as err:
        load_dataset(path)
    assert str(err.value) == f"{path}: {STARS_ERROR}"
    ds = load_dataset(path, rating_col="stars", test_fraction=0.0, val_fraction=0.0)
    assert isinstance(ds, RatingDataset) and (ds.rating_min, ds.rating_max) == (2.0, 5.0)
    assert triples(ds.train) == [(0, 0, 5.0), (0, 1, 2.0), (1, 0, 4.0)]  # the values are kept
    ds = load_dataset(path, implicit=True, test_fraction=0.0, val_fraction=0.0)
    assert isinstance(ds, InteractionDataset)
    assert triples(ds.train) == [(0, 0, 1.0), (0, 1, 1.0), (1, 0, 1.0)]


def test_known_headers_in_any_case_and_files_without_ratings(tmp_path: Path) -> None:
    plain = load_dataset(write(tmp_path, "user,item,rating\na,x,5\nb,x,3\n"), test_fraction=0.0,
                         val_fraction=0.0)
    assert isinstance(plain, RatingDataset) and triples(plain.train) == [(0, 0, 5.0),
                                                                         (1, 0, 3.0)]
    assert plain.meta["columns"] == {"user_col": "user", "item_col": "item",
                                     "rating_col": "rating", "timestamp_col": None}
    movielens = write(tmp_path, "userId,movieId,Rating,Timestamp\n1,10,4,9\n1,11,2,8\n", "m.csv")
    ds = load_dataset(movielens, test_fraction=0.0, val_fraction=0.0)
    assert isinstance(ds, RatingDataset) and triples(ds.train) == [(0, 0, 4.0), (0, 1, 2.0)]
    assert ds.meta["columns"] == {"user_col": "userId", "item_col": "movieId",
                                  "rating_col": "Rating", "timestamp_col": "Timestamp"}
    for text in ("user,item\na,x\nb,x\n", "user,item,genre\na,x,drama\nb,x,comedy\n"):
        ds = load_dataset(write(tmp_path, text), test_fraction=0.0, val_fraction=0.0)
        assert isinstance(ds, InteractionDataset)  # no numbers beside the ids: implicit
        assert triples(ds.train) == [(0, 0, 1.0), (1, 0, 1.0)]


AMBIGUOUS = {
    "two rating headers": ("user,item,rating,score\na,x,1,2\n", {},
                           "columns 'rating' and 'score' could both be ratings: set --data-opt "
                           "rating_col=NAME"),
    "no user column": ("who,item\na,x\n", {},
                       "no column is named as the user column (user, user_id or userid, in any "
                       "case): set --data-opt user_col=NAME; its columns are 'who', 'item'"),
    "headerless numbers": ("a,x,3,100\n", {"header": False},
                           "columns 2 and 3 could be ratings: set --data-opt rating_col=2 (or "
                           "another of them), or implicit=true to ignore them"),
    "implicit=false without ratings": ("user,item\na,x\n", {"implicit": False},
                                       "implicit=false but no rating column is named or found"),
}


@pytest.mark.parametrize("case", sorted(AMBIGUOUS))
def test_columns_are_not_guessed(tmp_path: Path, case: str) -> None:
    text, options, message = AMBIGUOUS[case]
    with pytest.raises(DataError) as err:
        load_dataset(write(tmp_path, text), **options)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_an_option_settles_what_the_header_leaves_open(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path, "user,item,rating,score\na,x,1,2\n"), rating_col="score",
                      test_fraction=0.0, val_fraction=0.0)
    assert triples(ds.train) == [(0, 0, 2.0)]  # 'rating' is then a column of no role
    ds = load_dataset(write(tmp_path, "a,x,3,100\n"), header=False, rating_col=2,
                      test_fraction=0.0, val_fraction=0.0)
    assert triples(ds.train) == [(0, 0, 3.0)]


def test_given_rating_bounds_are_checked(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path, RATINGS), rating_min=0, rating_max=10, test_fraction=0.0)
    assert (ds.rating_min, ds.rating_max) == (0.0, 10.0)
    with pytest.raises(DataError, match=r"r.csv line 2: rating 5 outside 1..4"):
        load_dataset(write(tmp_path, RATINGS), rating_max=4)


def test_random_split_is_per_user_and_seeded(tmp_path: Path) -> None:
    rows = "".join(f"{u},{i},{(u + i) % 5 + 1}\n" for u in range(6) for i in range(10))
    path = write(tmp_path, "user,item,rating\n" + rows)
    a = load_dataset(path, test_fraction=0.3, seed=4, val_fraction=0.0)
    everything = load_dataset(path, test_fraction=0.0, val_fraction=0.0).train
    train, test = per_user_split(everything, 0.3, 4)
    assert triples(a.test) == triples(test) and triples(a.train) == triples(train)
    assert np.bincount(a.test.users).tolist() == [3] * 6
    b = load_dataset(path, test_fraction=0.3, seed=5, val_fraction=0.0)
    assert triples(b.test) != triples(a.test)


def test_leave_last_out_takes_each_users_latest_row(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path, RATINGS), split="leave_last_out", val_fraction=0.0)
    # alice's latest is (alice, up) at 300, bob's (bob, matrix) at 60; carol has one row only.
    assert triples(ds.test) == [(0, 2, 3.0), (1, 1, 1.0)]
    assert (2, 0, 4.0) in triples(ds.train) and len(ds.train) == 4
    with pytest.raises(ConfigError, match="needs a timestamp column"):
        load_dataset(write(tmp_path, "user,item\na,b\n"), split="leave_last_out")


def test_iso_dates_are_timestamps(tmp_path: Path) -> None:
    text = "user,item,timestamp\na,x,2024-03-01\na,y,2024-01-05T10:00:00\na,z,2023-12-31\n"
    ds = load_dataset(write(tmp_path, text), split="leave_last_out", val_fraction=0.0)
    assert ds.meta["item_ids"][ds.test.items].tolist() == ["x"]


def test_given_test_file_removes_its_pairs_from_training(tmp_path: Path) -> None:
    test_file = write(tmp_path, "user,item,rating,timestamp\nalice,up,3,300\nbob,heat,5,1\n",
                      "test.csv")
    ds = load_dataset(write(tmp_path, RATINGS), test_file=str(test_file), val_fraction=0.0)
    assert ds.meta["item_ids"].tolist() == ["heat", "matrix", "up"]
    assert triples(ds.test) == [(0, 2, 3.0), (1, 0, 5.0)]
    assert len(ds.train) == 5 and (0, 2, 3.0) not in triples(ds.train)


def test_validation_is_carved_from_training_rows(tmp_path: Path) -> None:
    rows = "".join(f"{u},{i},3\n" for u in range(4) for i in range(10))
    ds = load_dataset(write(tmp_path, "user,item,rating\n" + rows), test_fraction=0.2)
    assert ds.meta["validation"] == {"fraction": 0.1, "seed": 0, "rows": 4}
    assert len(ds.train) + len(ds.valid) + len(ds.test) == 40 and len(ds.test) == 8


def test_duplicates_are_an_error_unless_a_row_to_keep_is_named(tmp_path: Path) -> None:
    text = "user,item,rating,timestamp\na,x,1,50\nb,x,2,1\na,x,4,10\na,y,3,5\n"
    path = write(tmp_path, text)
    with pytest.raises(DataError, match=r"r.csv line 4: duplicate \(user, item\) pair \(a, x\), "
                       r"first on line 2; give duplicates=last"):
        load_dataset(path)
    last = load_dataset(path, duplicates="last", test_fraction=0.0, val_fraction=0.0)
    first = load_dataset(path, duplicates="first", test_fraction=0.0, val_fraction=0.0)
    assert triples(last.train) == [(0, 0, 1.0), (1, 0, 2.0), (0, 1, 3.0)]  # latest: t=50
    assert triples(first.train) == [(1, 0, 2.0), (0, 0, 4.0), (0, 1, 3.0)]  # earliest: t=10
    assert last.meta["duplicates"] == ["r.csv: dropped 1 duplicate (user, item) rows, kept "
                                       "the last of each pair"]
    no_time = write(tmp_path, "user,item,rating\na,x,1\na,x,4\n", "n.csv")
    assert triples(load_dataset(no_time, duplicates="last", test_fraction=0.0).train) == [
        (0, 0, 4.0)]  # without timestamps: the later line


BAD_FILES = {
    "missing column": ("user,item,score\na,b,1\n", {"rating_col": "rating"},
                       "r.csv: no column 'rating' (rating_col); its columns are 'user', 'item', "
                       "'score'"),
    "non-numeric rating": ("user,item,rating\na,b,1\na,c,good\n", {},
                           "r.csv line 3: rating 'good' is not a number"),
    "empty file": ("", {}, "r.csv: the file is empty"),
    "header only": ("user,item\n", {}, "r.csv: no data rows (only a header)"),
    "ragged row": ("user,item\na,b\na,b,c\n", {}, "r.csv line 3: 3 fields, but the header names 2"),
    "index out of range": ("a,b\n", {"header": False, "rating_col": 5},
                           "rating_col=5 but the file has 2 columns"),
    # An empty id cell is not user '' (issue 42): it names its line.
    "empty user id": ("user,item,rating\na,b,1\n,c,2\n", {},
                      "r.csv line 3: empty user id (column 'user'); every row needs one"),
    "blank item id": ("user,item,rating\na,b,1\na, ,2\n", {},
                      "r.csv line 3: empty item id (column 'item')"),
    "empty id without a header": ("a,b\n,c\n", {"header": False, "implicit": True},
                                  "r.csv line 2: empty user id (column 0)"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_are_one_line_data_errors(tmp_path: Path, case: str) -> None:
    text, options, message = BAD_FILES[case]
    with pytest.raises(DataError) as err:
        load_dataset(write(tmp_path, text), **options)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_user_with_test_rows_only_is_an_error(tmp_path: Path) -> None:
    test_file = write(tmp_path, "user,item\ndave,x\n", "test.csv")
    with pytest.raises(DataError, match=r"test.csv line 2: user dave has test rows but no "
                       r"training rows \(1 such users\)"):
        load_dataset(write(tmp_path, "user,item\na,x\n"), test_file=str(test_file))


BAD_OPTIONS = {
    "unknown option": ({"colour": 1}, "unknown option(s) colour; accepted: sep"),
    "split": ({"split": "temporal"}, "split must be one of random, leave_last_out, given"),
    "test_file without given": ({"split": "random", "test_file": "t.csv"},
                                "test_file is for split=given"),
    "given without test_file": ({"split": "given"}, "split=given needs test_file=PATH"),
    "duplicates": ({"duplicates": "mean"}, "duplicates must be one of error, last, first"),
    "name without header": ({"header": False, "user_col": "user"},
                            "with header=false: name columns by their 0-based index"),
    "implicit not a bool": ({"implicit": "yes"}, "implicit must be true or false, got 'yes'"),
    "implicit and rating_col": ({"implicit": True, "rating_col": "rating"},
                                "implicit=true ignores ratings, but rating_col='rating'"),
}


@pytest.mark.parametrize("case", sorted(BAD_OPTIONS))
def test_bad_options_are_config_errors(tmp_path: Path, case: str) -> None:
    options, message = BAD_OPTIONS[case]
    with pytest.raises(ConfigError) as err:
        load_dataset(write(tmp_path, RATINGS), **options)
    assert message in str(err.value)


def test_an_unknown_suffix_needs_a_separator(tmp_path: Path) -> None:
    path = write(tmp_path, "1\t2\t3\n", "u.data")
    with pytest.raises(ConfigError, match=r"cannot tell the field separator .* give sep=tab"):
        load_dataset(path, header=False)
    ds = load_dataset(path, sep="tab", header=False, rating_col=2, test_fraction=0.0)
    assert triples(ds.train) == [(0, 0, 3.0)]


def test_parquet(tmp_path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        path = write(tmp_path, "", "r.parquet")
        with pytest.raises(ConfigError, match=r"reading Parquet needs pyarrow: pip install "
                           r"'fedrec\[parquet\]'"):
            load_dataset(path)
        return
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({"user": [3, 1, 3], "item": ["b", "a", "a"],
                             "rating": [1.0, 2.0, 3.0]}), path)
    ds = load_dataset(path, test_fraction=0.0, val_fraction=0.0)
    assert ds.meta["user_ids"].tolist() == [1, 3]
    assert triples(ds.train) == [(1, 1, 1.0), (0, 0, 2.0), (1, 0, 3.0)]


def test_cli_runs_a_file_and_writes_its_id_map(tmp_path: Path, capsys) -> None:
    rows = "".join(f"u{u};i{i};{(u * i) % 5 + 1}\n" for u in range(8) for i in range(12))
    path = write(tmp_path, "who;what;stars\n" + rows, "mine.txt")
    opts = ["sep=;", "user_col=who", "item_col=what", "rating_col=stars"]
    flags = [x for o in opts for x in ("--data-opt", o)]
    assert main(["datasets", "info", str(path), *flags]) == 0
    out = capsys.readouterr().out
    assert "num_users" in out and "rating" in out and "random per user" in in_line(out, "split")
    options = out.split("options (--data-opt KEY=VALUE)\n")[1]  # the file options, documented
    assert in_line(options, "rating_col").split(None, 1)[1].startswith("the rating column")
    assert "implicit" in options and "val_fraction" in options
    out_dir = tmp_path / "run"
    assert main(["run", "pmf", "--dataset", str(path), *flags, "--set", "rounds=2",
                 "--set", "dim=4", "--out", str(out_dir), "--quiet", "--threads", "1"]) == 0
    result = json.loads((out_dir / "results.json").read_text())
    assert result["dataset"] == str(path) and result["status"] == "complete"
    assert result["dataset_options"]["user_col"] == "who" and "rmse" in result["final"]
    ids = json.loads((out_dir / "id_map.json").read_text())
    assert ids["user_ids"] == [f"u{u}" for u in range(8)]
    assert ids["item_ids"] == sorted(f"i{i}" for i in range(12))


def in_line(text: str, key: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(key))


def test_cli_bad_file_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "user,item,rating\na,b,x\n")
    assert main(["run", "pmf", "--dataset", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"fedrec: error: {path} line 2: rating 'x' is not a number"]
    assert main(["run", "pmf", "--dataset", str(tmp_path / "none.csv"), "--quiet"]) == 2
    assert capsys.readouterr().err.strip().endswith("none.csv: no such file")


NO_TEST_ROWS = {
    "test_fraction=0": (RATINGS, ["--data-opt", "test_fraction=0"],
                        "no test rows: test_fraction=0 holds none out"),
    "one row per user": ("user,item,rating\na,x,1\nb,y,2\nc,x,3\n", [],
                         "no test rows: every user has one row, which stays in training"),
}


@pytest.mark.parametrize("case", sorted(NO_TEST_ROWS))
def test_a_file_without_test_rows_is_refused_by_a_run(tmp_path: Path, capsys, case) -> None:
    # Loadable, to look at, but a run of it would say "complete" with no test metrics.
    text, flags, message = NO_TEST_ROWS[case]
    path = write(tmp_path, text)
    out = tmp_path / "out"
    assert main(["run", "pmf", "--dataset", str(path), *flags, "--set", "rounds=1",
                 "--out", str(out), "--quiet", "--threads", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"fedrec: error: {path}: {message}"), err
    assert not (out / "results.json").exists()


def test_cli_refuses_an_unnamed_rating_column_in_one_line(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, STARS)
    for argv in (["run", "pmf", "--dataset", str(path), "--quiet", "--threads", "1"],
                 ["datasets", "info", str(path)]):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.err.strip().splitlines() == [f"fedrec: error: {path}: {STARS_ERROR}"]
    rows = "".join(f"u{u},i{i},{(u + i) % 5 + 1}\n" for u in range(6) for i in range(8))
    path = write(tmp_path, "user,item,stars\n" + rows)
    assert main(["datasets", "info", str(path), "--data-opt", "rating_col=stars"]) == 0
    out = capsys.readouterr().out
    assert in_line(out, "kind").split() == ["kind", "rating"]
    assert in_line(out, "rating_range").split(None, 1)[1] == "(1.0, 5.0)"


def test_ml100k_u_data_as_a_plain_tsv_equals_the_catalogue(data_root: Path) -> None:
    """``u.data`` with ``u1.test`` as the given test file is the catalogue's default split
    (GroupLens u1: train = every other rating), bit for bit, validation rows included."""
    need(data_root, "ml-100k/u.data", "ml-100k/u1.test", "ml-100k/u.user", "ml-100k/u.item")
    catalogue = load_dataset("ml-100k", data_root)
    assert catalogue.meta["split"].startswith("GroupLens u1")
    mine = load_dataset(data_root / "ml-100k/u.data", sep="tab", header=False, rating_col=2,
                        timestamp_col=3, test_file=str(data_root / "ml-100k/u1.test"))
    assert (mine.num_users, mine.num_items) == (catalogue.num_users, catalogue.num_items)
    assert (mine.rating_min, mine.rating_max) == (catalogue.rating_min, catalogue.rating_max)
    for part in ("train", "valid", "test"):
        for field in ("users", "items", "values"):
            a, b = getattr(getattr(catalogue, part), field), getattr(getattr(mine, part), field)
            assert a.dtype == b.dtype and np.array_equal(a, b), (part, field)
    assert np.array_equal(mine.meta["user_ids"], catalogue.meta["user_ids"])
    assert np.array_equal(mine.meta["item_ids"], catalogue.meta["item_ids"])
