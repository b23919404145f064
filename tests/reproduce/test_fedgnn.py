"""``fedrec reproduce fedgnn --quick`` on real ML-100K: tables, plots, resumability."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.reproduce.fedgnn import (
    delta_lambdas,
    ladder_candidates,
    plan,
    pseudo_item_counts,
    variants,
)
from fedrec.reproduce.runner import run_all

pytestmark = pytest.mark.slow  # a whole quick reproduction (tens of runs)


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory, data_root: Path, ml100k, one_thread_module) -> Path:
    out = tmp_path_factory.mktemp("reproduce-fedgnn")
    rc = main(["--data-dir", str(data_root), "reproduce", "fedgnn", "--quick", "--out", str(out),
               "--threads", "1", "--quiet"])
    assert rc == 0
    return out


def test_quick_writes_tables_and_plots(quick_report: Path) -> None:
    text = (quick_report / "README.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| ml-100k |"))
    # Every method has a measured RMSE (mean ± std (seeds)) and the published columns.
    assert len(re.findall(r"\d\.\d{4} ± \d\.\d{4} \(1\)", row)) == 5, row
    assert "| 0.910 | 0.910 |" in row
    for name in variants(quick=True):
        assert f"| {name} | " in text
    assert text.count("(1) |") >= 5 + len(variants(True)) + len(delta_lambdas(True)) + len(
        pseudo_item_counts(True))
    for png in ("fig4_variants.png", "fig5_delta_lambda.png", "fig6_pseudo_items.png"):
        assert (quick_report / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Fig. 6's bytes per round come from the ledger and grow with M.
    mib = [float(m) for m in re.findall(r"^\| (?:0|100|500|1000|2000) \| .*? \| ([\d,.]+) \|$",
                                        text, re.M)]
    assert len(mib) == len(pseudo_item_counts(True)) and mib == sorted(mib) and mib[0] < mib[-1]


def test_second_run_reuses_completed_runs(quick_report: Path, data_root: Path) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError(f"run {args} was repeated")

    # As reproduce() runs them: the choices' trials first (a table cell that equals a trial
    # is recorded as the same run as that trial).
    ladder = ladder_candidates(quick=True)
    specs = [*(ladder.trial(label) for label in ladder.options),
             *plan(["ml-100k"], 1, 1, quick=True)]
    res = run_all(specs, quick_report, data_dir=data_root, runner=refuse)
    assert set(res) == {s.key for s in specs}
