"""Where a run without ``--out`` goes (issue 41): a new ``runs/<algorithm>-<dataset>-<time>/``
under the current directory; a run that fails leaves no empty folder behind."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from fedrec.cli.outdir import RUNS_DIR, dataset_label, default_out_dir, out_dir_for

NOW = datetime(2026, 1, 2, 3, 4, 5)


@pytest.mark.parametrize(("given", "label"), [
    ("ml-100k", "ml-100k"), ("data/my-ratings.csv", "my-ratings"), ("graphs/mine/", "mine"),
    ("odd name (1).tsv", "odd_name_1"), ("/", "data"),
])
def test_the_dataset_part_of_the_name(given: str, label: str) -> None:
    assert dataset_label(given) == label


def test_a_new_folder_per_run_even_within_one_second(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = default_out_dir("fedgnn", "ml-100k", NOW, runs)
    second = default_out_dir("fedgnn", "ml-100k", NOW, runs)
    assert first == runs / "fedgnn-ml-100k-20260102-030405" and first.is_dir()
    assert second == runs / "fedgnn-ml-100k-20260102-030405-2" and second.is_dir()


def test_a_failed_run_leaves_no_empty_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError), out_dir_for(None, "pmf", "ml-100k") as out:
        assert out is not None and Path(out).parent == RUNS_DIR and Path(out).is_dir()
        raise RuntimeError("refused")
    assert list(tmp_path.iterdir()) == []  # runs/ too: this run made it
    # A folder the run wrote into is kept (it holds the checkpoint to resume from).
    with pytest.raises(KeyboardInterrupt), out_dir_for(None, "pmf", "ml-100k") as out:
        (Path(out) / "checkpoint.pt").write_bytes(b"state")
        raise KeyboardInterrupt
    assert [p.name for p in Path(out).iterdir()] == ["checkpoint.pt"]


def test_a_given_out_or_a_resume_takes_no_default(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with out_dir_for("mine", "pmf", "ml-100k") as out:
        assert out == "mine"
    with out_dir_for(None, "pmf", "ml-100k", default=False) as out:
        assert out is None
    assert list(tmp_path.iterdir()) == []
