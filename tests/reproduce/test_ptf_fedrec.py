"""``fedrec reproduce ptf-fedrec --quick`` on real ML-100K: tables and plots."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.reproduce.ptf_fedrec import ALPHAS, BETAS, DISPERSALS, GAMMAS, SWAPS, defense_rows

pytestmark = pytest.mark.slow  # a whole quick reproduction (tens of runs)


def test_quick_writes_tables_and_plots(tmp_path: Path, data_root: Path, ml100k,
                                       one_thread_module) -> None:
    rc = main(["--data-dir", str(data_root), "reproduce", "ptf-fedrec", "--quick", "--out",
               str(tmp_path), "--threads", "1", "--quiet"])
    assert rc == 0
    text = (tmp_path / "README.md").read_text()
    acc = [line for line in text.splitlines() if line.startswith("| ml-100k |")]
    # 6 models with measured Recall and NDCG (mean ± std (1)), and the popularity floor.
    assert sum(len(re.findall(r"\d\.\d{4} ± \d\.\d{4} \(1\)", line)) == 2 for line in acc) == 6
    assert any("most popular" in line for line in acc)
    comm = re.search(r"^\| ml-100k \| ([\d,]+) \| ([\d,]+) \| (\d+)x \|$", text, re.M)
    assert comm is not None and int(comm.group(3)) >= 10  # the "at most a tenth"
    for _, label, _ in defense_rows():  # none, ldp at each scale, sampling, sampling+swapping
        assert re.search(rf"^\| {re.escape(label)} \| \d\.\d{{4}} ± ", text, re.M), label
    swept = len(DISPERSALS) + len(ALPHAS) + len(BETAS) + len(GAMMAS) + len(SWAPS)
    assert len(re.findall(r"^\| [\w.-]+ \| \d\.\d{4} ± .* \| \d\.\d{4} ± .* \| \d\.\d{4} ± ",
                          text, re.M)) >= swept
    for png in ("dispersal", "alpha", "beta", "gamma", "swap"):
        assert (tmp_path / f"{png}.png").read_bytes()[:4] == b"\x89PNG"
