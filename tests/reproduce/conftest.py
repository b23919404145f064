"""Runs the comparison tests read: two tiny PMF runs made here."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedrec.experiment import run_experiment
from fedrec.options import RunOptions


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of two completed PMF runs, ``lr0.01`` and ``lr0.02`` (a file of 8 users and 10
    items written here, 2 rounds, evaluated each round), and one stopped after its first round
    (``stopped``: not complete, so not compared)."""
    root = tmp_path_factory.mktemp("runs")
    data = root / "ratings.csv"
    data.write_text("user,item,rating\n" + "".join(
        f"{u},{i},{(u + 2 * i) % 5 + 1}\n" for u in range(8) for i in range(10)))
    for lr in (0.01, 0.02):
        run_experiment("pmf", str(data), overrides={"rounds": 2, "eval_every": 1, "dim": 4,
                                                    "lr": lr},
                       out_dir=root / f"lr{lr}", options=RunOptions(progress=False))
    run_experiment("pmf", str(data), overrides={"rounds": 3, "dim": 4}, out_dir=root / "stopped",
                   options=RunOptions(progress=False, stop_after=1))  # interrupted: not listed
    return root
