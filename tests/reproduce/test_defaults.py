"""``fedrec reproduce defaults``: every method whose ``paper`` preset sets something is compared
with its defaults (or says why not), the measured privacy costs ship with the package, and a
run's summary quotes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedrec.algorithms import ALGORITHMS
from fedrec.cli.main import main
from fedrec.cli.summary import summary_rows
from fedrec.config import presets
from fedrec.configs.measured import (
    PRIVACY_COSTS_NAME,
    PRIVATE_MODES_NAME,
    measured_privacy_costs,
    privacy_cost,
)
from fedrec.reproduce.defaults import GENERALISATION, NOT_RUN, PRIVACY_COSTS, plan

REPO = Path(__file__).resolve().parents[2]


def test_every_method_whose_paper_preset_sets_something_has_a_generalisation_row() -> None:
    changed = {name for name in ALGORITHMS if presets(name)["paper"]}
    assert changed  # FedGRec, Feras, FL-MV-DSSM today
    compared = {g.algorithm for g in GENERALISATION}
    assert changed == compared | set(NOT_RUN)
    assert not compared & set(NOT_RUN)


def test_each_generalisation_runs_the_defaults_and_the_paper_preset_alike() -> None:
    specs = {s.key: s for s in plan(quick=False)}
    for g in GENERALISATION:
        default = specs[f"generalisation/{g.algorithm}/{g.dataset}/default"]
        paper = specs[f"generalisation/{g.algorithm}/{g.dataset}/paper"]
        assert (default.preset, paper.preset) == (None, "paper")
        assert default.overrides == paper.overrides and default.seeds == paper.seeds
        # Not a dataset a default was tuned on: no packaged section for it.
        from fedrec.config import packaged_sections_text

        assert f"  {g.dataset}:" not in packaged_sections_text(g.algorithm)


def test_the_packaged_privacy_costs_are_the_committed_reproductions() -> None:
    expected = []
    for name, folder in ((PRIVACY_COSTS_NAME, "defaults"), (PRIVATE_MODES_NAME, "privacy")):
        committed = REPO / "results" / folder / name
        if committed.is_file():
            expected += json.loads(committed.read_text())
    assert measured_privacy_costs() == expected  # nothing measured: nothing quoted


def test_a_run_with_a_measured_costly_setting_says_so_in_its_summary() -> None:
    cost = PRIVACY_COSTS[0]
    measured = [{"algorithm": cost.algorithm, "dataset": cost.dataset,
                 "mechanism": cost.mechanism, "line": "costly", "command": "made so"}]
    config = {"noise_multiplier": 1.0, "rounds": 3}
    assert privacy_cost(cost.algorithm, cost.dataset, config, measured) == "costly (made so)"
    assert privacy_cost(cost.algorithm, cost.dataset, {**config, "noise_multiplier": 0.5},
                        measured) is None
    assert privacy_cost(cost.algorithm, "douban", config, measured) is None
    # The summary quotes the packaged measurement for exactly that setting.
    packaged = privacy_cost(cost.algorithm, cost.dataset, config)
    if (REPO / "results" / "defaults" / PRIVACY_COSTS_NAME).is_file():
        assert packaged is not None and packaged.endswith("(fedrec reproduce defaults)")
    result = {"algorithm": cost.algorithm, "dataset": cost.dataset, "config": config,
              "final": {}, "communication": {}, "privacy": {}, "wall_time_s": 1.0}
    rows = dict(summary_rows(result))
    assert rows.get("privacy cost") == packaged


@pytest.mark.slow  # a quick reproduction: Feras on CiteSeer and FL-MV-DSSM, one round each
def test_quick_reproduction_writes_the_tables(tmp_path: Path, data_root: Path,
                                              one_thread_module) -> None:
    out = tmp_path / "defaults"
    assert main(["--data-dir", str(data_root), "reproduce", "defaults", "--quick",
                 "--out", str(out), "--threads", "1"]) == 0
    text = (out / "README.md").read_text()
    assert "## Generalisation" in text and "## What the paper's privacy setting costs" in text
    assert "feras | citeseer" in text and "Not run: fl-mv-dssm" in text
    costs = json.loads((out / PRIVACY_COSTS_NAME).read_text())
    assert [c["algorithm"] for c in costs] == [c.algorithm for c in PRIVACY_COSTS]


@pytest.mark.parametrize("quick", [False, True])
def test_a_reproduction_elsewhere_leaves_the_packaged_measurements_alone(
        tmp_path: Path, quick: bool) -> None:
    """Only the checkout's own results/<folder> (not --quick) rewrites the packaged copy: a
    user's --out, or the empty report-only pass that checks --only, must not erase it."""
    from fedrec import configs
    from fedrec.reproduce.report import write_measured

    packaged = Path(configs.__file__).parent / PRIVATE_MODES_NAME
    before = packaged.read_bytes() if packaged.is_file() else None
    (tmp_path / "privacy").mkdir()
    write_measured(tmp_path / "privacy", PRIVATE_MODES_NAME, "[]\n", "the private modes",
                   quick=quick)
    assert (tmp_path / "privacy" / PRIVATE_MODES_NAME).read_text() == "[]\n"
    assert (packaged.read_bytes() if packaged.is_file() else None) == before
