"""The generated blocks of docs pages (fedrec.reproduce.blocks): a benchmark's JSON as tables
under its command, the results table with the checkout's paths, the prose left alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fedrec.errors import ConfigError
from fedrec.reproduce.blocks import DOCS_HEADER, bench_tables, fill_blocks, has_blocks


def _bench(root: Path, data: object) -> Path:
    path = root / "results" / "bench_x.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_a_benchmark_is_its_command_and_a_table_per_part(tmp_path: Path) -> None:
    path = _bench(tmp_path, {
        "command": "python bench/x.py --json results/bench_x.json", "threads": 1,
        "ml-100k": {"epoch_s": 1.23456, "clients": 943},
        "gowalla": {"epoch_s": 56789.4, "clients": 29858.0},
        "rows": [{"name": "a", "runs_s": [0.5, 0.25], "ok": True}, {"name": "b|c"}]})
    text = bench_tables(path, "results/bench_x.json")
    assert text.startswith("`python bench/x.py --json results/bench_x.json` "
                           "(`results/bench_x.json`):")
    assert "| threads | 1 |" in text
    # sibling mappings of values are one table, a row per key; numbers to 4 digits or whole
    assert "|  | epoch_s | clients |" in text
    assert "| ml-100k | 1.235 | 943 |" in text
    assert "| gowalla | 56,789 | 29,858 |" in text
    assert "**rows**" in text
    assert "| a | 0.5, 0.25 | true |" in text
    assert "| b\\|c | – | – |" in text  # a missing field, a pipe escaped


def test_nested_parts_are_titled_by_their_path(tmp_path: Path) -> None:
    path = _bench(tmp_path, {"command": "c", "epoch": {"ratio": 1.25, "after": {"built": 2.0}},
                             "samplers": {"rw": {"per_s": 10.0}}})
    text = bench_tables(path, "b.json")
    assert "**epoch**\n\n|  | value |\n|---|---|\n| ratio | 1.25 |" in text
    assert "**epoch / after**" in text and "| built | 2 |" in text
    assert "**samplers**\n\n|  | per_s |" in text


@pytest.mark.parametrize(("data", "message"), [
    ({"threads": 1}, "records the command that made it"),
    ([1, 2], "records the command that made it"),
    (None, "no such benchmark file"),
])
def test_a_benchmark_without_its_command_is_one_line(tmp_path: Path, data, message) -> None:
    path = tmp_path / "b.json" if data is None else _bench(tmp_path, data)
    with pytest.raises(ConfigError, match=message):
        bench_tables(path, "b.json")


def test_blocks_are_filled_and_the_prose_kept(tmp_path: Path, two_runs: Path) -> None:
    for name in ("lr0.01", "lr0.02"):
        shutil.copytree(two_runs / name, tmp_path / "results" / name)
    _bench(tmp_path, {"command": "python bench/x.py", "ratio": 1.5})
    page = ("# Page\n\nProse 1.\n\n"
            "<!-- fedrec-generated: fedrec results results/*/results.json --markdown "
            "--metrics rmse -->\nstale 0.99\n<!-- /fedrec-generated -->\n\nProse 2.\n\n"
            "<!-- fedrec-generated: bench results/bench_x.json -->\n<!-- /fedrec-generated -->\n")
    assert has_blocks(page) and not has_blocks("# Page\n")
    filled = fill_blocks(page, tmp_path, "docs/page.md")
    assert filled.startswith(DOCS_HEADER + "\n# Page\n\nProse 1.\n")
    assert "stale 0.99" not in filled and "Prose 2." in filled
    # the runs named by their checkout paths, so that each command's --out is the committed one
    assert "--out results/lr0.01`" in filled and str(tmp_path) not in filled
    assert "| ratio | 1.5 |" in filled
    assert fill_blocks(filled, tmp_path, "docs/page.md") == filled  # a second pass: the same


@pytest.mark.parametrize(("source", "message"), [
    ("fedrec results results/*/results.json", "needs --markdown"),
    ("fedrec results nothing/*.json --markdown", "no file matches nothing"),
    ("fedrec results results/*/results.json --markdown --plot x.png", "not --plot"),
    ("cat results.md", "not 'cat results.md'"),
])
def test_a_bad_block_source_is_one_line(tmp_path: Path, source: str, message: str) -> None:
    page = f"<!-- fedrec-generated: {source} -->\n<!-- /fedrec-generated -->\n"
    with pytest.raises(ConfigError, match=message):
        fill_blocks(page, tmp_path, "docs/page.md")
