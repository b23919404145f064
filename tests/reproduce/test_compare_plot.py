"""``fedrec results DIR... --plot FILE.png``: the figure's panels, legend and size, on runs
committed under ``results/`` (methods and datasets mixed) and on two tiny PMF runs made here."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import matplotlib.pyplot as plt

from fedrec.cli.main import main
from fedrec.reproduce.compare import find_runs, reported
from fedrec.reproduce.compare import test_metrics as metrics_of
from fedrec.reproduce.compare_plot import COLUMNS, MAX_PANELS_HEIGHT, PANEL, figure

RESULTS = Path(__file__).resolve().parents[2] / "results"
#: Committed runs: two methods on each of two datasets, every one a ranking run (four metrics).
TWO_DATASETS = [RESULTS / name for name in ("lightgcn-ml-100k", "fedgrec-ml-100k", "fcf-gowalla",
                                            "pmf-gowalla")]
MIXED = [RESULTS / f"{m}-ml-100k" for m in ("fcf", "pmf", "fedgnn", "lightgcn", "fedgrec")]


def _panels(fig) -> list[str]:
    return [ax.get_title() for ax in fig.axes if ax.axison]


def test_a_panel_per_metric_and_dataset_each_with_its_own_axes() -> None:
    runs = find_runs(TWO_DATASETS)
    metrics = metrics_of(runs)
    assert len(metrics) == 4
    fig = figure(runs)
    try:
        titles = _panels(fig)
        assert sorted(titles) == sorted(f"{m}, {d}" for d in ("ml-100k", "gowalla")
                                        for m in metrics)
        shown = [ax for ax in fig.axes if ax.axison]
        # Own axes: gowalla's Recall@20 panel is not ML-100K's scale.
        limits = {ax.get_title(): ax.get_ylim() for ax in shown}
        assert limits["Recall@20, gowalla"] != limits["Recall@20, ml-100k"]
        width, height = fig.get_size_inches()
        assert width <= COLUMNS * PANEL[0] and height <= MAX_PANELS_HEIGHT + 3
    finally:
        plt.close(fig)


def test_legend_names_methods_not_folders_and_marks_the_chosen_round() -> None:
    runs = find_runs(MIXED)
    fig = figure(runs)
    try:
        assert len(_panels(fig)) == len(metrics_of(runs))  # one dataset: 2 rating + 4 ranking
        assert len(fig.legends) == 1
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert labels == ["fcf", "pmf", "fedgnn", "lightgcn", "fedgrec",
                          "round chosen on validation"]
        assert not any("/" in lab or "results" in lab for lab in labels)
        # The star of fedgrec's chosen round on its Recall@20 curve.
        fedgrec = next(r for r in runs if r.result["algorithm"] == "fedgrec")
        rep = reported(fedgrec.result)
        ax = next(a for a in fig.axes if a.get_title() == "Recall@20, ml-100k")
        stars = [line.get_xydata().tolist() for line in ax.get_lines()
                 if line.get_marker() == "*"]
        assert [rep["round"], rep["test"]["Recall@20"]] in [s[0] for s in stars]
    finally:
        plt.close(fig)


def test_runs_of_one_method_are_told_apart_by_the_options_that_differ(
        two_runs: Path, tmp_path: Path, capsys) -> None:
    png = tmp_path / "curves.png"
    assert main(["results", str(two_runs / "lr0.01"), str(two_runs / "lr0.02"), "--plot",
                 str(png), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| algorithm | dataset | rounds | chosen round |")
    assert f"plot: {png} (rmse, mae by round)" in out
    image = matplotlib.image.imread(png)  # rows, columns, channels
    assert image.shape[1] <= 2 * PANEL[0] * 110 + 1  # two panels a row
    fig = figure(find_runs([two_runs]))
    try:
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert labels[:2] == ["pmf lr=0.01", "pmf lr=0.02"]
    finally:
        plt.close(fig)
