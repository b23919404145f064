"""``fedrec results DIR...``: the table of completed runs and the PNG of their curves, on two
tiny PMF runs made here (a file of 8 users written by the test, 2 rounds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.experiment import run_experiment
from fedrec.options import RunOptions
from fedrec.reproduce.compare import comparison, differing_settings, find_runs
from fedrec.reproduce.report import at_selected_round


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
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


def test_table_lists_completed_runs_with_what_differs(two_runs: Path, capsys) -> None:
    assert main(["results", str(two_runs)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["run", "algorithm", "dataset", "settings"]
    assert "rmse" in out[0] and "mae" in out[0] and "epsilon" in out[0]
    rows = out[2:]
    assert len(rows) == 2 and "stopped" not in "".join(rows)
    for row, lr in zip(rows, ("0.01", "0.02"), strict=True):
        result = json.loads((two_runs / f"lr{lr}" / "results.json").read_text())
        chosen = result["selection"]
        shown = at_selected_round(result)  # the test metrics of the round chosen on validation
        assert shown["rmse"] == chosen["test"]["rmse"]
        assert f"lr={lr}" in row and f"{shown['rmse']:.4f}" in row
        assert f" {chosen['round']} ({chosen['select_on']}) " in row
        assert "pmf" in row and " none " in row  # pmf: no formal guarantee


def test_markdown_is_the_readme_table_with_each_run_s_command(two_runs: Path, capsys) -> None:
    assert main(["results", str(two_runs), "--markdown", "--metrics", "rmse,NDCG@20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("| algorithm | dataset | rounds | chosen round | rmse | NDCG@20 | "
                        "epsilon | MiB up | MiB down | wall s | command |")
    for line, lr in zip(lines[2:], ("0.01", "0.02"), strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        result = json.loads((two_runs / f"lr{lr}" / "results.json").read_text())
        assert cells[2] == "2" and cells[4] == f"{at_selected_round(result)['rmse']:.4f}"
        assert cells[5] == "–"  # a metric the run does not report
        # The settings that differ from pmf's defaults, and the folder.
        assert cells[-1] == (f"`fedrec run pmf --dataset {result['dataset']} --set rounds=2 "
                             f"--set eval_every=1 --set dim=4 --set lr={lr} --out "
                             f"{two_runs / f'lr{lr}'}`")


def test_only_differing_settings_are_shown(two_runs: Path) -> None:
    runs = find_runs([two_runs])
    assert differing_settings(runs) == ["lr"]
    headers, rows = comparison(runs)
    assert "eval_clients" not in headers  # a count, not a metric
    assert [r[headers.index("settings")] for r in rows] == ["lr=0.01", "lr=0.02"]


def test_plot_writes_a_png_of_the_curves(two_runs: Path, tmp_path: Path, capsys) -> None:
    png = tmp_path / "curves.png"
    assert main(["results", str(two_runs / "lr0.01"), str(two_runs / "lr0.02"), "--plot",
                 str(png), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| algorithm | dataset | rounds | chosen round |")
    assert f"plot: {png} (rmse, mae by round)" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("args", "message"), [
    (["nowhere"], "nowhere: no such folder"),
    (["EMPTY"], "no completed run (results.json) under"),
    (["RUNS", "--plot", "x.pdf"], "--plot writes a PNG"),
])
def test_errors_are_one_line(two_runs: Path, tmp_path: Path, capsys, args: list[str],
                             message: str) -> None:
    args = [str(tmp_path) if a == "EMPTY" else str(two_runs) if a == "RUNS" else a for a in args]
    assert main(["results", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
