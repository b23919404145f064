"""``fedrec reproduce fedgrec --quick`` on real ML-100K: tables and plots."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from fedrec.cli.main import main
from fedrec.reproduce.fedgrec import (
    CANDIDATES,
    DROPOUTS,
    LAYERS,
    METHODS,
    QUICK_LAYERS,
    REFRESH,
    paired_gain,
    paired_recall_loss,
    plan,
    round_bytes,
)


def test_full_plan_runs_every_setting_and_quick_a_shorter_subset() -> None:
    full = {s.key: s for s in plan(["ml-100k", "gowalla"], 3, 1, quick=False)}
    quick = {s.key: s for s in plan(["ml-100k"], 1, 1, quick=True)}
    assert {k for k in full if k.startswith("ablation/")} == {
        f"ablation/K-{k}/refresh-{p}" for k in LAYERS for p in REFRESH}
    assert all(f"table/{ds}/{m}" in full for ds in ("ml-100k", "gowalla") for m in METHODS)
    assert set(quick) < set(full)
    assert sum(k.startswith("ablation/") for k in quick) == len(QUICK_LAYERS) * len(REFRESH)
    # Same rows for every model on ML-100K: the per-user split (PMF and FCF read it as implicit
    # positives); accuracy runs with the plain sum, the comm/dropout runs with the secure one.
    ml = {m: full[f"table/ml-100k/{m}"].overrides for m in METHODS}
    assert ml["pmf"]["implicit"] == ml["fcf"]["implicit"] == "per-user"
    assert ml["fedgrec"]["secure_aggregation"] is False and ml["fedgrec-k0"]["num_layers"] == 0
    assert ml["fedgrec-k0"]["lr"] == next(iter(CANDIDATES["fedgrec-k0"].values()))["lr"]
    # The own-edge row is FedGRec's with one option changed, on both datasets.
    for ds in ("ml-100k", "gowalla"):
        own, paper = (full[f"table/{ds}/{m}"] for m in ("fedgrec-own", "fedgrec"))
        assert own.algorithm == paper.algorithm == "fedgrec"
        assert own.overrides == {**paper.overrides, "own_edge_gradient": True}
        fit = full[f"table/{ds}/fedgrec-fit"]
        assert fit.algorithm == "fedgrec" and fit.overrides["own_edge_gradient"] is True
        assert fit.overrides["user_fit_train_steps"] > 0 and fit.overrides["user_fit_steps"] > 0
    assert full["table/gowalla/fedgrec-fit"].overrides["rounds"] == 300  # 10 epochs
    assert full["comm/secure"].overrides["secure_aggregation"] is True
    assert full["comm/plain"].overrides["secure_aggregation"] is False
    for p in DROPOUTS:
        o = full[f"dropout/{p}"].overrides
        assert (o["dropout"], o["dropout_after_calls"], o["secure_aggregation"]) == (p, 2, True)
    assert full["table/gowalla/lightgcn"].overrides == {"split": "given"}
    assert all(full[k].seeds == (0, 1, 2) for k in full if k.startswith("table/"))
    for key, spec in quick.items():  # the same setting, on a shorter schedule
        assert spec.overrides["rounds"] <= 4, key
    chosen = {s.key: s for s in plan(["ml-100k"], 1, 1, False, {"fedgrec-k0": "lr 0.0125"})}
    assert chosen["table/ml-100k/fedgrec-k0"].overrides["lr"] == 0.0125


def test_round_bytes_splits_the_warm_up_from_refresh_and_plain_rounds() -> None:
    def row(rnd: int, up: int, refresh: bool, evaluated: bool = False) -> dict:
        h = {"round": rnd, "train": {"refresh": float(refresh)},
             "communication": {"bytes_up": up, "bytes_down": 2 * up}}
        return {**h, "eval": {}} if evaluated else h

    run = {"config": {"clients_per_round": 10},
           "history": [row(1, 1000, True), row(2, 30, False), row(3, 70, True),
                       row(4, 999, False, evaluated=True)]}
    assert round_bytes(run, num_clients=100) == {
        "round 1 (warm-up)": (10.0, 20.0), "plain round": (3.0, 6.0),
        "refresh round": (7.0, 14.0)}


def test_paired_gain_needs_a_shared_seed_and_the_same_schedule() -> None:
    def run(seed: int, recall: float, rounds: int = 300) -> dict:
        return {"seed": seed, "config": {"rounds": rounds},
                "selection": {"round": 1, "test": {"Recall@20": recall}}}

    base = [run(0, 0.30), run(1, 0.34)]
    assert paired_gain([run(1, 0.36)], base) == (
        "+0.0200 Recall@20 (mean over seeds [1], paired by seed)")
    assert paired_gain([run(2, 0.36)], base) is None  # no shared seed
    assert paired_gain([run(1, 0.36, rounds=2400)], base) is None  # 80 epochs against 10


def test_dropout_cost_is_paired_by_seed() -> None:
    def run(seed: int, recall: float) -> dict:
        return {"seed": seed, "selection": {"round": 1, "test": {"Recall@20": recall}}}

    reference = [run(0, 0.30), run(1, 0.34), run(2, 0.32)]
    # Against seed 0 alone (0.30), not the three seeds' mean (0.32).
    assert paired_recall_loss(reference, [run(0, 0.29)]) == pytest.approx(0.01)
    assert paired_recall_loss(reference, [run(0, 0.29), run(1, 0.33)]) == pytest.approx(0.01)
    assert math.isnan(paired_recall_loss(reference, [run(5, 0.29)]))  # no shared seed


@pytest.mark.slow  # a whole quick reproduction (12 runs)
def test_quick_writes_tables_and_plots(tmp_path: Path, data_root: Path, ml100k,
                                       one_thread_module) -> None:
    rc = main(["--data-dir", str(data_root), "reproduce", "fedgrec", "--quick", "--out",
               str(tmp_path), "--threads", "1", "--quiet"])
    assert rc == 0
    text = (tmp_path / "README.md").read_text()
    acc = text.split("## Accuracy\n", 1)[1].split("\n## ", 1)[0]
    acc_rows = [line for line in acc.splitlines() if line.startswith("| ml-100k |")]
    # 5 models with measured Recall and NDCG (mean ± std (1)), and the popularity floor.
    assert sum(len(re.findall(r"\d\.\d{4} ± \d\.\d{4} \(1\)", line)) == 2
               for line in acc_rows) == len(METHODS)
    assert any("most popular" in line for line in acc_rows)
    ablation = text.split("## Ablation", 1)[1].split("\n## ", 1)[0]
    for p in REFRESH:
        assert re.search(rf"^\| {QUICK_LAYERS[0]} \| {p} \| \d\.\d{{4}} ± ", ablation, re.M)
    comm = text.split("## Communication", 1)[1].split("\n## ", 1)[0]
    up = {(m[1], m[2]): int(m[3].replace(",", "")) for m in re.finditer(
        r"^\| (secure|plain) \| (round 1 \(warm-up\)|refresh round|plain round) \| ([\d,]+) \|",
        comm, re.M)}
    assert len(up) == 6
    for kind in ("round 1 (warm-up)", "refresh round", "plain round"):
        assert up["secure", kind] > up["plain", kind]  # the key exchange and the masked sum
    assert up["plain", "refresh round"] > up["plain", "plain round"]  # + the latent changes
    drop = text.split("## Dropout", 1)[1].split("\n## ", 1)[0]
    for p in DROPOUTS:
        assert re.search(rf"^\| {p:.0%} \| \d\.\d{{4}} ± .* \| \d+\.\d \| [+-]\d\.\d{{4}} \|$",
                         drop, re.M), p
    assert "failed" not in text.split("## Runs", 1)[1]
    for png in ("accuracy", "ablation", "communication", "dropout"):
        assert (tmp_path / f"{png}.png").read_bytes()[:4] == b"\x89PNG"


def test_report_only_on_an_empty_folder_writes_every_section(tmp_path: Path) -> None:
    """``--report-only`` before any run finished: the report and its plots, every cell '–'."""
    from fedrec.reproduce.fedgrec import reproduce

    report = reproduce(tmp_path, seeds=3, run_missing=False).read_text()
    for section in ("## Accuracy", "## Ablation", "## Communication", "## Dropout"):
        assert section in report
    assert "no spread measured" not in report  # no pair of rows to compare yet
    assert all((tmp_path / f"{name}.png").is_file()
               for name in ("accuracy", "ablation", "communication", "dropout"))
