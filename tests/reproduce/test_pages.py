"""``fedrec pages``: every generated page written again from what is committed, running nothing
(fedrec.reproduce.pages), and ``--check`` naming each committed file that differs."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.reproduce import REPRODUCTIONS
from fedrec.reproduce.bench_pages import BENCH_PAGES
from fedrec.reproduce.blocks import DOCS_HEADER
from fedrec.reproduce.pages import MADE_WITH, MadeWith, page_names, stale_pages, write_pages

BLOCK = ("<!-- fedrec-generated: fedrec results results/*/results.json --markdown "
         "--metrics rmse -->\n<!-- /fedrec-generated -->\n")


@pytest.fixture
def checkout(tmp_path: Path, two_runs: Path) -> Path:
    """A checkout with one reproduction's report (``defaults``: its report-only pass needs no
    data), made by ``fedrec reproduce --report-only`` with nothing run, two runs under
    ``results/`` and a docs page with a block of their table."""
    root = tmp_path / "repo"
    for name in ("lr0.01", "lr0.02"):
        shutil.copytree(two_runs / name, root / "results" / name)
    assert main(["reproduce", "defaults", "--quick", "--report-only", "--threads", "1",
                 "--out", str(root / "results" / "defaults")]) == 0
    (root / "docs").mkdir()
    (root / "docs" / "results.md").write_text(f"# Results\n\nProse.\n\n{BLOCK}")
    (root / "docs" / "other.md").write_text("# No block: not a page\n")
    return root


def test_fedrec_reproduce_records_how_it_made_the_report(checkout: Path) -> None:
    out = checkout / "results" / "defaults"
    made = MadeWith.read(out)
    assert made == MadeWith("defaults", seeds=3, sweep_seeds=1, quick=True)
    lines = (out / "README.md").read_text().splitlines()
    assert lines[0] == made.header()
    assert "`fedrec reproduce defaults --quick --seeds 3 --sweep-seeds 1`" in lines[0]
    assert lines[1].startswith("# ")


def test_pages_writes_every_page_then_check_passes(checkout: Path, capsys) -> None:
    assert main(["pages", "--root", str(checkout), "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "defaults: unchanged" in out  # the report as fedrec reproduce wrote it
    assert "results: docs/results.md" in out  # its block filled
    page = (checkout / "docs" / "results.md").read_text()
    assert page.startswith(DOCS_HEADER + "\n# Results\n\nProse.\n")
    assert "--out results/lr0.01`" in page
    assert main(["pages", "--root", str(checkout), "--check"]) == 0
    assert "up to date" in capsys.readouterr().out
    assert write_pages(checkout, ["results"]) == {"results": []}  # a second pass: unchanged


def test_a_docs_page_named_as_a_reproduction_is_docs_name(checkout: Path) -> None:
    """``docs/defaults.md`` with a block does not hide the ``defaults`` report: it is
    ``docs/defaults``, and each is written from its own source."""
    page = checkout / "docs" / "defaults.md"
    page.write_text(f"# Defaults, the method page\n\n{BLOCK}")
    assert write_pages(checkout, ["docs/defaults"]) == {"docs/defaults": ["docs/defaults.md"]}
    assert "--out results/lr0.01`" in page.read_text()
    assert write_pages(checkout, ["defaults"]) == {"defaults": []}


def test_check_names_each_stale_file_and_touches_none(checkout: Path, capsys) -> None:
    write_pages(checkout)
    page = checkout / "docs" / "results.md"
    typed = page.read_text().replace("| pmf |", "| pmf (typed by hand) |", 1)
    page.write_text(typed)
    report = checkout / "results" / "defaults" / "README.md"
    report.write_text(report.read_text().replace("# Defaults", "# Defaults, edited", 1))
    MadeWith("defaults", seeds=2, sweep_seeds=1, quick=True).write(report.parent)
    assert main(["pages", "--root", str(checkout), "--check"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["stale: results/defaults/README.md",
                                         "stale: docs/results.md"]
    assert captured.err.count("\n") == 1 and "run it and commit" in captured.err
    assert page.read_text() == typed  # --check writes into a temporary copy
    assert "# Defaults, edited" in report.read_text()
    # The report is made with the options its record names (seeds 2 now): written again, the
    # record is unchanged and the first line says so.
    assert stale_pages(checkout, ["defaults"]) == ["results/defaults/README.md"]
    write_pages(checkout, ["defaults"])
    assert "--seeds 2 " in report.read_text().splitlines()[0]
    assert stale_pages(checkout) == ["docs/results.md"]


@pytest.mark.parametrize(("case", "message"), [
    ("unknown", "unknown page 'nope'; the pages: defaults, results"),
    ("no-results", "no results/ folder in"),
    ("no-report", "no results/fedgnn/ in"),
    ("no-record", "made_with.json: missing"),
    ("bad-record", "made_with.json: not a record of `fedrec reproduce` options"),
])
def test_bad_input_is_one_line(checkout: Path, capsys, case: str, message: str) -> None:
    root, names = checkout, []
    if case == "unknown":
        names = ["nope"]
    elif case == "no-results":
        root = checkout / "docs"
    elif case == "no-report":
        names = ["fedgnn"]
    elif case == "no-record":
        (checkout / "results" / "defaults" / MADE_WITH).unlink()
    elif case == "bad-record":
        (checkout / "results" / "defaults" / MADE_WITH).write_text('{"name": "defaults"}')
    for check in ([], ["--check"]):
        assert main(["pages", "--root", str(root), *names, *check]) == 2
        err = capsys.readouterr().err
        assert err.startswith("fedrec: error: ") and message in err and err.count("\n") == 1


REPO = Path(__file__).resolve().parents[2]


def _results_copy(tmp_path: Path, *paths: str) -> Path:
    """A checkout holding only ``paths`` of this repository's committed ``results/``."""
    root = tmp_path / "repo"
    for rel in paths:
        src, dst = REPO / rel, root / rel
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.png"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
    return root


def test_a_bench_page_is_written_from_its_json_and_a_typed_figure_is_stale(
        tmp_path: Path) -> None:
    """``results/dp-audit`` is written whole from ``audit.json``: the committed page is what
    the renderer writes, a figure typed into it is stale, and a changed JSON changes the page."""
    root = _results_copy(tmp_path, "results/dp-audit")
    assert "results/dp-audit" in page_names(root)
    assert stale_pages(root, ["results/dp-audit"]) == []
    page = root / "results/dp-audit/README.md"
    page.write_text(page.read_text().replace("| 4.753 |", "| 4.700 |", 1))
    assert stale_pages(root, ["results/dp-audit"]) == ["results/dp-audit/README.md"]
    audit = json.loads((root / "results/dp-audit/audit.json").read_text())
    audit[0]["accounted_epsilon"] = 1.25
    (root / "results/dp-audit/audit.json").write_text(json.dumps(audit))
    assert write_pages(root, ["results/dp-audit"]) == {
        "results/dp-audit": ["results/dp-audit/README.md"]}
    text = page.read_text()
    assert text.startswith(BENCH_PAGES["results/dp-audit"].header("results/dp-audit"))
    assert "| distributed | 1 | 1 | 1 | 1.250 |" in text


def test_a_table_block_of_a_results_page_is_filled_from_its_runs(tmp_path: Path) -> None:
    """A hand-written results page with a ``table`` block is ``results/NAME``: its prose is
    kept, its table read from the runs (mean and sample std over the seeds)."""
    root = _results_copy(tmp_path, "results/gcn-central-cora-public")
    page = root / "results/gcn-central-cora-public/README.md"
    assert stale_pages(root) == []
    prose = page.read_text().split("<!-- fedrec-generated")[0]
    page.write_text(prose + "<!-- fedrec-generated: table gcn-seeds "
                    "results/gcn-central-cora-public -->\n<!-- /fedrec-generated -->\n")
    assert stale_pages(root) == ["results/gcn-central-cora-public/README.md"]
    write_pages(root, ["results/gcn-central-cora-public"])
    text = page.read_text()
    assert text.startswith(prose)
    runs = [json.loads((root / f"results/gcn-central-cora-public/seed{s}/results.json")
                       .read_text()) for s in range(3)]
    last = [r["final"]["accuracy"] for r in runs]
    assert f"| 0 | {last[0]:.3f} | {runs[0]['selection']['round']} |" in text
    assert f"| mean (std) | {statistics.mean(last):.3f} ({statistics.stdev(last):.3f}) |" in text


@pytest.mark.parametrize(("source", "message"), [
    ("table nope", "a generated `table` block names one of gcn-seeds"),
    ("table gcn-seeds", "table gcn-seeds: wrong arguments"),
    ("table gcn-seeds results/none", "results/none: no seed*/results.json"),
])
def test_a_bad_table_block_is_one_line(tmp_path: Path, capsys, source: str,
                                       message: str) -> None:
    root = _results_copy(tmp_path, "results/gcn-central-cora-public")
    (root / "results" / "mine.md").write_text(
        f"# Mine\n\n<!-- fedrec-generated: {source} -->\n<!-- /fedrec-generated -->\n")
    assert main(["pages", "--root", str(root), "results/mine"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_help_lists_the_pages_from_the_code(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["pages", "--help"])
    out = "".join(capsys.readouterr().out.split())  # argparse wraps at hyphens
    for name in [*REPRODUCTIONS, *BENCH_PAGES]:
        assert name in out
