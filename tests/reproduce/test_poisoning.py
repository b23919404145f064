"""``fedrec reproduce poisoning``: the grid's rows, and a quick reproduction on real ML-100K."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

from fedrec.cli.main import main
from fedrec.cli.summary import summary_rows
from fedrec.configs.measured import ROBUSTNESS_NAME, robustness
from fedrec.reproduce.poisoning import (
    ATTACK_OPTIONS,
    ATTACKS,
    DEFENDED_FRACTION,
    FRACTIONS,
    TARGETS,
    DefenseRow,
    plan,
    recommended,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_grid_has_every_attack_fraction_and_defense() -> None:
    keys = {s.key: s for s in plan(seeds=1, quick=False)}
    for t in TARGETS:
        for ds in t.datasets:
            for d in t.defenses:
                clean = keys[f"clean/{t.method}/{ds}/{d}"].overrides
                assert clean["malicious_fraction"] == 0.0
            for a in ATTACKS:
                for f in FRACTIONS:
                    row = keys[f"attack/{t.method}/{ds}/{a}/{f}"].overrides
                    assert ATTACK_OPTIONS[a].items() <= row.items()
                for d, ov in t.defenses.items():
                    if d != "none":
                        row = keys[f"defended/{t.method}/{ds}/{a}/{d}"].overrides
                        assert row["malicious_fraction"] == DEFENDED_FRACTION
                        assert ov.items() <= row.items()


def test_quick_reproduction_writes_its_tables(tmp_path: Path, data_root: Path,
                                              single_thread: None) -> None:
    out = tmp_path / "poisoning"
    assert main(["--data-dir", str(data_root), "reproduce", "poisoning", "--quick", "--out",
                 str(out), "--threads", "1", "--quiet"]) == 0
    text = (out / "README.md").read_text()
    assert "## fcf on ml-100k" in text and "### Defenses at 1% attackers" in text
    assert "| crafted | 1% |" in text and "| item_median |" in text
    assert (out / "fcf-ml-100k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert text.count("seed 0: complete") == len(plan(seeds=1, quick=True))


def test_the_packaged_robustness_is_the_committed_reproduction() -> None:
    committed = REPO / "results" / "poisoning" / ROBUSTNESS_NAME
    expected = json.loads(committed.read_text()) if committed.is_file() else []
    packaged = resources.files("fedrec.configs").joinpath(ROBUSTNESS_NAME)
    assert (json.loads(packaged.read_text()) if packaged.is_file() else []) == expected
    for entry in expected:  # a run with that defense prints the entry's line
        config = {"defense": "none", **entry["mechanism"]}
        line = robustness(entry["algorithm"], entry["dataset"], config)
        result = {"algorithm": entry["algorithm"], "dataset": entry["dataset"],
                  "config": {"rounds": 1, **config}, "final": {}, "communication": {},
                  "privacy": {}, "wall_time_s": 1.0}
        assert dict(summary_rows(result)).get("robustness") == line
        assert line is not None and line.startswith(entry["line"])


def test_the_recommended_defense_is_the_most_robust_within_the_cost() -> None:
    rows = [DefenseRow("none", 0.0, 0.6, 0.6), DefenseRow("krum", 0.001, 0.0, 0.6),
            DefenseRow("item_median", 0.05, 0.0, 0.6), DefenseRow("norm_bound", 0.0, 0.3, 0.6)]
    assert recommended(rows).defense == "krum"  # item_median costs more than 2%
    assert recommended([rows[0], DefenseRow("krum", math.nan, 0.0, 0.6)]) is None
