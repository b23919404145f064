"""``fedrec reproduce ptf-fedrec --quick`` on real ML-100K: tables and plots."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.reproduce.ptf_fedrec import (
    ALPHAS,
    BETAS,
    DISPERSALS,
    GAMMAS,
    LDP_SCALES,
    SWAPS,
    SWEEPS,
    defense_rows,
    plan,
    sweep_values,
)


def test_full_plan_sweeps_every_value_and_quick_a_subset_of_it() -> None:
    full = {s.key: s for s in plan(["ml-100k"], 2, 1, quick=False)}
    quick = {s.key: s for s in plan(["ml-100k"], 1, 1, quick=True)}
    swept = [k for k in full if not k.startswith(("table/", "defense/"))]
    assert len(swept) == len(DISPERSALS) + len(ALPHAS) + len(BETAS) + len(GAMMAS) + len(SWAPS)
    assert sum(k.startswith("defense/ldp-") for k in full) == len(LDP_SCALES)
    # The sweeps and the privacy table report the server's metrics: no client evaluation.
    assert full["beta/0.1-0.25"].overrides == {"eval_clients": False, "beta_range": [0.1, 0.25]}
    assert full["swap/0.0"].overrides == {"eval_clients": False, "swap_rate": 0.0}
    assert all(s.overrides.get("eval_clients", True) for k, s in full.items()
               if k.startswith("table/"))
    assert set(quick) < set(full)
    for key, spec in quick.items():  # the same setting, in fewer rounds of fewer clients
        assert spec.overrides.items() >= full[key].overrides.items(), key
        assert spec.overrides["rounds"] == 1
    assert all(full[k].seeds == (0, 1) for k in full if k.startswith("table/"))


@pytest.mark.slow  # a whole quick reproduction (19 runs)
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
    for _, label, _ in defense_rows(quick=True):  # none, one ldp scale, sampling, +swapping
        assert re.search(rf"^\| {re.escape(label)} \| \d\.\d{{4}} ± ", text, re.M), label
    for name, _, title, _, values in SWEEPS:  # every sweep's quick points, each measured
        section = text.split(f"## {title} (ML-100K)\n", 1)[1].split("\n## ", 1)[0]
        for label, _ in sweep_values(values, quick=True):
            assert re.search(rf"^\| {re.escape(label)} \| \d\.\d{{4}} ± .* \| \d\.\d{{4}} ± .* "
                             rf"\| \d\.\d{{4}} ± ", section, re.M), (name, label)
    for png in ("dispersal", "alpha", "beta", "gamma", "swap"):
        assert (tmp_path / f"{png}.png").read_bytes()[:4] == b"\x89PNG"
