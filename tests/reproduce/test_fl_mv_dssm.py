"""``fedrec reproduce fl-mv-dssm --quick`` on real ML-100K: tables, Fig. 2, privacy table."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from fedrec.cli.main import build_parser, main
from fedrec.config import parse_options
from fedrec.reproduce import REPRODUCTIONS
from fedrec.reproduce.fl_mv_dssm import (
    COLD_STARTS,
    MVMF_ROWS,
    NOISE_OFF,
    QUICK_EVAL_DEVICES,
    VARIANTS,
    plan,
    variant_rows,
)
from fedrec.reproduce.report import command_of


def test_plan_covers_every_table_and_quick_is_the_same_settings_in_fewer_rounds() -> None:
    assert REPRODUCTIONS["fl-mv-dssm"] == "fedrec.reproduce.fl_mv_dssm"
    full = {s.key: s for s in plan(3, quick=False)}
    quick = {s.key: s for s in plan(1, quick=True)}
    assert {f"cold/{c}" for c in COLD_STARTS} <= set(full)
    for key, _, ov in VARIANTS:  # each variant with the paper's sigma 1 and with noise off
        assert full[f"variant/{key}/sigma-1"].overrides == {"secure_aggregation": False, **ov}
        assert full[f"variant/{key}/noise-off"].overrides == {"secure_aggregation": False,
                                                              **ov, **NOISE_OFF}
    assert full["variant/semi/sigma-1"].overrides["aggregate_user_sub_model"] is False
    assert full["variant/fl-dssm-svd/sigma-1"].overrides["views"] == ["svd"]
    assert full["variant/fcf"].algorithm == "fcf"
    assert full["variant/fcf"].overrides == {"implicit": "per-user", "topk": 10}
    # FED-MVMF on FL-MV-DSSM's own split (its defaults), with and without side information
    assert full["variant/fed-mvmf"].algorithm == "fed-mvmf"
    assert full["variant/fed-mvmf"].overrides == {}
    assert full["variant/fed-mvmf-no-side"].overrides == {"user_view_weight": 0.0,
                                                          "item_view_weight": 0.0}
    assert full["cold/items"].overrides["cold_start"] == "items"
    for c in COLD_STARTS:  # FED-MVMF beside FL-MV-DSSM in every cold-start scenario
        assert full[f"cold/fed-mvmf/{c}"].algorithm == "fed-mvmf"
        assert full[f"cold/fed-mvmf/{c}"].overrides == {"cold_start": c}
    assert all(s.seeds == (0, 1, 2) for s in full.values())
    assert not any("eval_devices" in s.overrides for s in full.values())  # every device
    assert set(quick) < set(full)
    assert len(variant_rows(quick=True)) < len(variant_rows(quick=False))
    for key, spec in quick.items():
        assert spec.overrides.items() >= full[key].overrides.items(), key
        assert spec.overrides["rounds"] == 1 and spec.seeds == (0,)
        assert spec.overrides["clients_per_round"] <= 32
        if spec.algorithm in ("fl-mv-dssm", "fed-mvmf"):
            assert spec.overrides["eval_devices"] == QUICK_EVAL_DEVICES


def test_the_runs_table_commands_parse_back_to_the_settings() -> None:
    parser = build_parser()
    for spec in [*plan(3, quick=False), *plan(1, quick=True)]:
        words = shlex.split(command_of(spec))
        assert words[:2] == ["fedrec", "run"]
        args = parser.parse_args(words[1:])
        assert (args.algorithm, args.dataset) == (spec.algorithm, spec.dataset)
        assert parse_options(args.set, "--set") == {**spec.overrides, "seed": "S"}, spec.key


@pytest.mark.slow  # a whole quick reproduction (14 runs, 2 short centralized DSSMs, 2 attacks)
def test_quick_writes_tables_fig2_and_privacy(tmp_path: Path, data_root: Path, ml100k,
                                              one_thread_module) -> None:
    argv = ["--data-dir", str(data_root), "reproduce", "fl-mv-dssm", "--quick", "--out",
            str(tmp_path), "--threads", "1", "--quiet"]
    assert main(argv) == 0
    text = (tmp_path / "README.md").read_text()
    measured = r"\d\.\d{4} ± \d\.\d{4} \(1\)"
    for c in COLD_STARTS:
        assert re.search(rf"^\| FL-MV-DSSM, cold {c} .*(\| {measured} ){{4}}\|$", text, re.M), c
        assert re.search(rf"^\| FED-MVMF, cold {c} .*(\| {measured} ){{4}}\|$", text, re.M), c
        assert re.search(rf"^\| most popular, cold {c} \(fallback.*(\| \d\.\d{{4}} ){{3}}", text,
                         re.M), c
    for _, label, _ in variant_rows(quick=True):
        assert re.search(rf"^\| {re.escape(label)} (\| {measured} ){{4}}\|", text, re.M), label
    assert re.search(rf"^\| {re.escape('FL-MV-DSSM, sigma 1')} .*\| \d+\.\d\d ± ", text, re.M)
    for view in ("demographics", "svd"):  # centralized DSSM: Precision/Recall/NDCG, no AUC
        assert re.search(rf"^\| centralized DSSM \({view};.*(\| {measured} ){{3}}", text, re.M)
    assert re.search(rf"^\| FCF .*\| {measured} ", text, re.M)
    for _, label, _ in MVMF_ROWS:
        assert re.search(rf"^\| {re.escape(label)} (\| {measured} ){{4}}\| none \|$", text,
                         re.M), label
    assert f"sample of {QUICK_EVAL_DEVICES} of the 943 devices" in text
    attack = text.split("## Privacy", 1)[1].split("\n## ", 1)[0]
    # sigma 0: the malicious view reads the other's update exactly; sigma 1: noise hides it
    assert re.search(r"^\| 0 \| 0\.1 \| 4 \| 1\.0000 \| ", attack, re.M)
    assert re.search(r"^\| 1 \| 0\.1 \| 4 \| -?0\.\d{4} \| .* \| \d+\.\d\d \| \d+\.\d\d \|$",
                     attack, re.M)
    assert "`fedrec run fl-mv-dssm --dataset ml-100k" in text
    assert "--set 'views=[demographics]'" in text
    assert text.count("| seed 0: complete |") == len(plan(1, quick=True))
    assert (tmp_path / "fig2.png").read_bytes()[:4] == b"\x89PNG"

    # A second run reuses every finished run and centralized result: nothing is rewritten.
    made = sorted([*tmp_path.glob("runs/**/results.json"), *tmp_path.glob("central/*.json")])
    assert len(made) == len(plan(1, quick=True)) + 2
    stamps = {p: p.stat().st_mtime_ns for p in made}
    assert main(argv) == 0
    assert {p: p.stat().st_mtime_ns for p in made} == stamps
    assert (tmp_path / "README.md").read_text() == text


def test_only_central_and_attack_run_those_and_no_setting_of_the_grid(
        tmp_path: Path, data_root: Path, ml100k, one_thread_module) -> None:
    argv = ["--data-dir", str(data_root), "reproduce", "fl-mv-dssm", "--quick", "--out",
            str(tmp_path), "--threads", "1", "--quiet", "--only", "central/svd,attack"]
    assert main(argv) == 0
    assert sorted(p.name for p in tmp_path.glob("central/*.json")) == ["svd-seed-0.json"]
    assert not list(tmp_path.glob("runs/**/results.json"))
    text = (tmp_path / "README.md").read_text()
    attack = text.split("## Privacy", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^\| 0 \| 0\.1 \| 4 \| 1\.0000 \| ", attack, re.M)
    assert re.search(r"^\| centralized DSSM \(svd;.*\| \d\.\d{4} ± ", text, re.M)
    assert re.search(r"^\| centralized DSSM \(demographics;[^\d]*$", text, re.M)
    # A later report that runs neither keeps both (cached in OUT).
    assert main([*argv[:-2], "--report-only"]) == 0
    later = (tmp_path / "README.md").read_text()
    assert later.split("## Privacy", 1)[1].split("\n## ", 1)[0] == attack
    assert re.search(r"^\| centralized DSSM \(svd;.*\| \d\.\d{4} ± ", later, re.M)
