"""``fedrec results DIR...``: the tables of completed runs, on two tiny PMF runs made here (a
file of 8 users written by the test, 2 rounds) and on runs committed under ``results/``
(methods mixed: their width, their columns). The PNG: tests/reproduce/test_compare_plot.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.reproduce.compare import (
    WIDTH,
    abbreviations,
    comparison,
    differing_settings,
    find_runs,
    render,
    significant,
    split_columns,
    tables,
)
from fedrec.reproduce.report import at_selected_round

REPO = Path(__file__).resolve().parents[2]
#: Committed runs of five methods on ML-100K: three rating (rmse, mae), two ranking (@20).
MIXED = [REPO / "results" / f"{m}-ml-100k" for m in ("fcf", "pmf", "fedgnn", "lightgcn",
                                                      "fedgrec")]


def test_table_lists_completed_runs_with_what_differs(two_runs: Path, capsys) -> None:
    assert main(["results", str(two_runs)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"{find_runs([two_runs])[0].result['dataset']}: 2 runs under {two_runs}/, "
                      "test metrics at the round chosen on val_rmse")
    assert out[1].split()[:4] == ["run", "algorithm", "options", "round"]
    assert "rmse" in out[1] and "mae" in out[1] and "epsilon" in out[1]
    rows = out[3:5]
    assert "stopped" not in "".join(out)
    for row, lr in zip(rows, ("0.01", "0.02"), strict=True):
        result = json.loads((two_runs / f"lr{lr}" / "results.json").read_text())
        chosen = result["selection"]
        shown = at_selected_round(result)  # the test metrics of the round chosen on validation
        assert shown["rmse"] == chosen["test"]["rmse"]
        assert row.startswith(f"lr{lr} ")  # the folder, under the one named in the title
        assert f" lr={lr} " in row and f" {significant(shown['rmse'])} " in row
        assert f" {chosen['round']}/2 " in row  # chosen of the rounds run
        assert "pmf" in row and " none " in row  # pmf: no formal guarantee
    assert out[5] == ""  # no short option name to explain: lr is shown whole


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
    assert [r[headers.index("options")] for r in rows] == ["lr=0.01", "lr=0.02"]


def test_mixed_methods_one_table_per_dataset_and_metrics_every_line_bounded() -> None:
    runs = find_runs(MIXED)
    groups = tables(runs)
    assert [(t.dataset, t.metrics, [r.result["algorithm"] for r in t.runs]) for t in groups] == [
        ("ml-100k", ("rmse", "mae"), ["fcf", "pmf", "fedgnn"]),
        ("ml-100k", ("Recall@20", "Precision@20", "NDCG@20", "HitRate@20"),
         ["lightgcn", "fedgrec"])]
    text = render(runs)
    assert max(map(len, text.splitlines())) <= WIDTH
    for t in groups:  # every metric cell filled: no column only some runs report
        headers, rows = comparison(t.runs, metrics=t.metrics)
        cols = [headers.index(m) for m in t.metrics]
        assert all(row[c] != "–" for row in rows for c in cols)
        assert "rounds" not in " ".join(row[headers.index("options")] for row in rows)
    # The options that differ are shown short, and what each short name stands for is said.
    assert "cpr=0 " in text and "cpr = clients_per_round" in text
    assert "results/fcf-ml-100k" not in text and "\nfcf-ml-100k " in text  # under results/


def test_a_table_too_wide_for_its_metrics_continues_in_another(two_runs: Path) -> None:
    runs = find_runs([two_runs])
    metrics = [f"a_metric_with_a_long_name_{i}" for i in range(12)]
    headers, rows = comparison(runs, metrics=metrics)
    parts = split_columns(headers, rows, metrics)
    assert len(parts) > 1 and [h[0] for h, _ in parts] == ["run"] * len(parts)
    assert [m for h, _ in parts for m in h if m in metrics] == metrics  # each once, in order
    assert "epsilon" in parts[0][0] and "epsilon" not in parts[1][0]
    for h, r in parts:
        assert len("  ".join(h)) <= WIDTH and all(len(row) == len(h) for row in r)


def test_numbers_have_four_significant_digits() -> None:
    assert [significant(v) for v in (0.74, 0.0051129, 0.93452, 214.0, 12345.6, 25169.2)] == [
        "0.7400", "0.005113", "0.9345", "214", "1.235e+04", "2.517e+04"]


def test_short_option_names_stand_for_one_key() -> None:
    short = abbreviations(["clients_per_round", "lr", "data.split_seed", "secagg_clip",
                           "secagg_corrupt", "ls", "local_steps"])
    assert short == {"clients_per_round": "cpr", "lr": "lr", "data.split_seed": "data.ss",
                     "secagg_clip": "secagg_clip", "secagg_corrupt": "secagg_corrupt",
                     "ls": "ls", "local_steps": "local_steps"}


@pytest.mark.parametrize(("args", "message"), [
    (["nowhere"], "nowhere: no such folder"),
    (["EMPTY"], "no completed run (results.json) under"),
    (["RUNS", "--plot", "x.pdf"], "--plot writes a PNG"),
    (["RUNS", "--plot", "x"], "--plot writes a PNG"),
    (["NOTJSON"], "not a readable results file"),
    (["RUNS", "--plot", "FILE/curves.png"], "cannot be written"),
])
def test_errors_are_one_line(two_runs: Path, tmp_path: Path, capsys, args: list[str],
                             message: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.json").write_text("{ not json")
    (tmp_path / "file").write_text("a file, not a folder")
    named = {"EMPTY": str(tmp_path / "empty"), "RUNS": str(two_runs),
             "NOTJSON": str(tmp_path / "bad"), "FILE/curves.png": str(tmp_path / "file" / "c.png")}
    args = [named.get(a, a) for a in args]
    assert main(["results", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
