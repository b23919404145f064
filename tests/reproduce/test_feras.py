"""``fedrec reproduce feras --quick`` on real Cora: tables and plots from real runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.reproduce.feras import (
    CENTRAL,
    HOSTS,
    METHODS,
    NETWORK_DROPOUT,
    NETWORK_HIDDEN,
    NOISES,
    PRIVATE,
    SAMPLERS,
    TARGET_COMPARED,
    TARGET_METHODS,
    TARGET_PRIVATE,
    best_network,
    main_plan,
    network_plan,
    sampler_plan,
    target_plan,
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
    assert {f"central/{split}/{key}" for split in ("public", "random") for key, *_ in CENTRAL} \
        <= keys
    networks = network_plan("rw", (0, 1, 2), quick=False)
    assert len(networks) == len(NETWORK_HIDDEN) * len(NETWORK_DROPOUT)
    assert all(s.algorithm == "saint-central" and s.overrides["network"] == "gcn-dense"
               for s in networks)
    target = target_plan("rw", (128, 0.5), (0, 1, 2), quick=False)
    # the methods at each pi, SW at pi = 0, centralized, the attack (2 share points x 3 noises)
    assert len(target) == len(TARGET_METHODS) * len(TARGET_PRIVATE) + 2 + 6
    assert {s.key for s in target if s.overrides.get("attack")} == {
        f"target/{p}/noise-{n}" for p in ("attack", "attack/projection") for n in (0.0, 0.03, 0.1)}
    defended = [s for s in target if s.key.startswith("target/feras-projection-noise0.03/")]
    assert [s.overrides["embedding_noise"] for s in defended] == [0.03, 0.03]
    assert all(s.overrides["hidden"] == 128 and s.overrides["feature_dropout"] == 0.5
               and s.overrides["sampler"] == "rw" for s in target)
    assert {s.overrides.get("num_hosts") for s in target} == {4, None}


def _run(seed: int, val: float, test: float) -> dict:
    return {"seed": seed, "selection": {"select_on": "val_accuracy", "higher_is_better": True,
                                        "round": 1, "val_accuracy": val,
                                        "test": {"accuracy": test}},
            "history": [{"round": 1, "eval": {"val_accuracy": val, "accuracy": test}}]}


def test_the_network_is_chosen_on_mean_validation() -> None:
    res = {"network/h16-d0.1": [_run(0, 0.80, 0.10), _run(1, 0.74, 0.10)],
           "network/h128-d0.5": [_run(0, 0.76, 0.99), _run(1, 0.76, 0.99)]}
    assert best_network(res, quick=False) == (16, 0.1)  # validation 0.77 > 0.76; test unread
    res["network/h16-d0.1"][1] = _run(1, 0.71, 0.10)  # 0.755 < 0.76
    assert best_network(res, quick=False) == (128, 0.5)
    assert best_network({}, quick=False) == (16, 0.1)


@pytest.mark.slow  # a whole quick reproduction (22 runs, about a minute)
def test_quick_writes_tables_and_plots(tmp_path: Path, data_root: Path, cora,
                                       one_thread_module) -> None:
    rc = main(["--data-dir", str(data_root), "reproduce", "feras", "--quick", "--out",
               str(tmp_path), "--threads", "1", "--quiet"])
    assert rc == 0
    text = (tmp_path / "README.md").read_text()
    rows = [line for line in text.splitlines() if re.match(r"^\| (public|random) \| 2 \|", line)]
    assert len(rows) == 2  # one (N, pi) per split, every method measured
    assert all(len(re.findall(r"\| \d\.\d{3} \(1\)", line)) == len(METHODS) + 1 + len(CENTRAL)
               for line in rows), rows
    target = [line for line in text.splitlines() if re.match(r"^\| 0\.5 \| 0\.250 \|", line)]
    assert len(target) == 1
    # every method, a paired difference per Feras variant, pi = 0, centralized
    assert len(re.findall(r"\| [+-]?\d\.\d{3} \(1\)", target[0])) == \
        len(TARGET_METHODS) + len(TARGET_COMPARED) + 2, target
    assert re.search(r"^\| 128 \(chosen\)|^\| 16 \(chosen\)", text, re.M)
    for sampler in SAMPLERS:
        assert re.search(rf"^\| {sampler} \| – \| \d\.\d{{3}} \(1\) \| \d\.\d{{3}} \(1\) \|$",
                         text, re.M), sampler
    attack = [line for line in text.splitlines()
              if re.match(r"^\| (H1|X W1)[^|]* \| (0\.0|1\.0) \| ", line)]
    # the attack table's 4 rows and the chosen network's 2 (sigma 0 only, --quick)
    assert len(attack) == 6 and all(len(re.findall(r"\d\.\d{3} \(1\)", a)) == 7 for a in attack)
    for png in ("samplers", "f1_vs_kappa", "attack"):
        assert (tmp_path / f"{png}.png").read_bytes()[:4] == b"\x89PNG"
    run = json.loads((tmp_path / "runs/table/random/feras/N2-pi0.5/seed-0/results.json")
                     .read_text())
    assert run["dataset_options"] == {"split": "random", "seed": 0}
