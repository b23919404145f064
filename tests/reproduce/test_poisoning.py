"""``fedrec reproduce poisoning``: the grid's rows, and a quick reproduction on real ML-100K."""

from __future__ import annotations

from pathlib import Path

from fedrec.cli.main import main
from fedrec.reproduce.poisoning import (
    ATTACKS,
    DEFENDED_FRACTION,
    FRACTIONS,
    TARGETS,
    plan,
)


def test_the_grid_has_every_attack_fraction_and_defense() -> None:
    keys = {s.key: s for s in plan(seeds=1, quick=False)}
    for t in TARGETS:
        for ds in t.datasets:
            for d in t.defenses:
                clean = keys[f"clean/{t.method}/{ds}/{d}"].overrides
                assert clean["malicious_fraction"] == 0.0
            for a in ATTACKS:
                for f in FRACTIONS:
                    assert keys[f"attack/{t.method}/{ds}/{a}/{f}"].overrides["poisoning"] == a
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
