"""``fedrec pages``: every generated page written again from what is committed, running nothing
(fedrec.reproduce.pages), and ``--check`` naming each committed file that differs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.reproduce.blocks import DOCS_HEADER
from fedrec.reproduce.pages import MADE_WITH, MadeWith, stale_pages, write_pages

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
