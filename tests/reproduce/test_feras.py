"""``fedrec reproduce feras --quick`` on real Cora: tables and plots from real runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.reproduce.feras import (
    HOSTS,
    METHODS,
    NOISES,
    PRIVATE,
    SAMPLERS,
    main_plan,
    sampler_plan,
)


def test_the_full_plan_covers_the_grid_and_quick_is_a_subset_of_it() -> None:
    full = main_plan("rw", (0, 1, 2), quick=False)
    keys = {s.key for s in full}
    assert sum(k.startswith("table/") for k in keys) == 2 * len(METHODS) * len(HOSTS) * \
        len(PRIVATE) + 2 * len(HOSTS)  # and pi = 0 per N
    assert {f"{prefix}/noise-{s}" for s in NOISES for prefix in ("attack", "attack/projection")} \
        <= keys
    random = [s for s in full if s.key == "table/random/feras/N8-pi0.8"]
    assert [(s.seeds, s.dataset_options) for s in random] == [
        ((i,), {"split": "random", "seed": i}) for i in range(3)]  # split seed = run seed
    assert len(sampler_plan((0,), quick=False)) == 2 * len(SAMPLERS)
    quick = {s.key for s in main_plan("rw", (0,), quick=True)}
    assert quick < keys


@pytest.mark.slow  # a whole quick reproduction (22 runs, about a minute)
def test_quick_writes_tables_and_plots(tmp_path: Path, data_root: Path, cora,
                                       one_thread_module) -> None:
    rc = main(["--data-dir", str(data_root), "reproduce", "feras", "--quick", "--out",
               str(tmp_path), "--threads", "1", "--quiet"])
    assert rc == 0
    text = (tmp_path / "README.md").read_text()
    rows = [line for line in text.splitlines() if re.match(r"^\| (public|random) \| 2 \|", line)]
    assert len(rows) == 2  # one (N, pi) per split, every method measured
    assert all(len(re.findall(r"\| \d\.\d{3} \(1\)", line)) == len(METHODS) + 3
               for line in rows), rows
    for sampler in SAMPLERS:
        assert re.search(rf"^\| {sampler} \| – \| \d\.\d{{3}} \(1\) \| \d\.\d{{3}} \(1\) \|$",
                         text, re.M), sampler
    attack = [line for line in text.splitlines()
              if re.match(r"^\| (H1|X W1)[^|]* \| (0\.0|1\.0) \| ", line)]
    assert len(attack) == 4 and all(len(re.findall(r"\d\.\d{3} \(1\)", a)) == 7 for a in attack)
    for png in ("samplers", "f1_vs_kappa", "attack"):
        assert (tmp_path / f"{png}.png").read_bytes()[:4] == b"\x89PNG"
    run = json.loads((tmp_path / "runs/table/random/feras/N2-pi0.5/seed-0/results.json")
                     .read_text())
    assert run["dataset_options"] == {"split": "random", "seed": 0}
