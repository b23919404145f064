"""The experiment runner on real ML-100K: results file, interruption and exact resumption."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from fedrec.errors import ConfigError, FedrecError
from fedrec.experiment import RESULTS_NAME, run_experiment
from fedrec.federation.checkpoint import CHECKPOINT_NAME, load_checkpoint

# Small but real: sampled cohorts and dropouts make the resumed rounds depend on the keyed RNG.
SETTINGS = {
    "fcf": {"rounds": 4, "eval_every": 2, "dim": 8, "clients_per_round": 300, "dropout": 0.2},
    "pmf": {"rounds": 4, "eval_every": 2, "dim": 8, "batch_size": 4096},
    # The server's NGCF draws message dropout from torch's global generator: resuming must
    # restore it too.
    "ptf-fedrec": {"rounds": 4, "eval_every": 2, "clients_per_round": 200, "local_epochs": 1,
                   "server_epochs": 1, "eval_clients": False},
    # Every client per round, so an epoch is one round: the graph expansion happens in round 2,
    # before the stop, and the resumed rounds need the neighbour means, the decayed lr and each
    # client's pseudo-set key (pseudo_set kept across rounds).
    "fedgnn": {"rounds": 4, "eval_every": 2, "dim": 8, "clients_per_round": 943,
               "dropout": 0.2, "pseudo_items": 50, "neighbours": 4, "expand_after": 1,
               "pseudo_set": "fixed_coupled"},
}


def _run(algorithm: str, data_root: Path, out: Path | None, **kw):
    return run_experiment(algorithm, "ml-100k", data_dir=data_root,
                          overrides=dict(SETTINGS[algorithm]), out_dir=out, progress=False, **kw)


def _strip_times(history: list[dict]) -> list[dict]:
    """Rows without wall-clock fields (``time_s``, and ``time_*`` training statistics)."""
    return [{k: ({s: x for s, x in v.items() if not s.startswith("time_")}
                 if k == "train" else v) for k, v in row.items() if k != "time_s"}
            for row in history]


@pytest.fixture(scope="module", params=list(SETTINGS))
def runs(request, data_root: Path, tmp_path_factory: pytest.TempPathFactory):
    """(algorithm, uninterrupted result+dir, interrupted dir after stop, resumed result)."""
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ml-100k not available")
    alg = request.param
    # Bit-exact comparisons need one thread: with more, torch's CPU index_put_(accumulate=True)
    # (the backward of row indexing) adds duplicate rows in a varying order, so even two
    # uninterrupted runs differ in the last bits.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _make_runs(alg, data_root, tmp_path_factory)
    finally:
        torch.set_num_threads(before)


def _make_runs(alg: str, data_root: Path, tmp_path_factory: pytest.TempPathFactory):
    full_dir = tmp_path_factory.mktemp(f"{alg}-full")
    full = _run(alg, data_root, full_dir)
    part_dir = tmp_path_factory.mktemp(f"{alg}-part")
    partial = _run(alg, data_root, part_dir, stop_after=2)
    after_stop = {
        "status": partial.status,
        "files": sorted(p.name for p in part_dir.iterdir()),
        "checkpoint_round": load_checkpoint(part_dir / CHECKPOINT_NAME)["round"],
    }
    resumed = _run(alg, data_root, part_dir, resume=True)
    return alg, full, full_dir, after_stop, resumed, part_dir


def test_interrupted_run_leaves_only_a_checkpoint(runs) -> None:
    _, _, _, after_stop, _, _ = runs
    assert after_stop["status"] == "interrupted"
    assert RESULTS_NAME not in after_stop["files"]
    assert CHECKPOINT_NAME in after_stop["files"]
    assert after_stop["checkpoint_round"] == 2


def test_resume_gives_exactly_the_uninterrupted_result(runs) -> None:
    alg, full, _, _, resumed, _ = runs
    assert full.status == resumed.status == "complete"
    assert resumed.final == full.final and full.final  # exactly, not approximately
    assert resumed.communication["totals"] == full.communication["totals"]
    assert resumed.communication["by_step"] == full.communication["by_step"]
    assert resumed.communication["rejected"] == full.communication["rejected"]
    assert _strip_times(resumed.history) == _strip_times(full.history)
    assert [row["round"] for row in full.history] == [1, 2, 3, 4]
    assert [("eval" in row) for row in full.history] == [False, True, False, True]
    if alg == "pmf":
        assert full.communication["totals"]["bytes_total"] == 0  # centralized: nothing sent
    else:
        assert full.communication["totals"]["bytes_up"] > 0
    if alg == "fedgnn":
        assert ["expanded" in row["train"] for row in full.history] == [False, True, False, False]
    if alg in ("fcf", "fedgnn"):
        # Dropouts and sampling happened (or the resume test would be too easy).
        clients = [row["train"]["clients"] for row in full.history]
        cohort = SETTINGS[alg]["clients_per_round"]
        assert all(0 < c < cohort for c in clients) and len(set(clients)) > 1
    for value in full.final.values():
        assert math.isfinite(value)


def test_results_file_contents(runs) -> None:
    alg, full, full_dir, _, _, part_dir = runs
    for d in (full_dir, part_dir):
        data = json.loads((d / RESULTS_NAME).read_text())
        assert data["status"] == "complete"
        assert data["algorithm"] == alg and data["dataset"] == "ml-100k"
        for key, value in SETTINGS[alg].items():
            assert data["config"][key] == value
        assert data["seed"] == data["config"]["seed"] == 0
        assert {"python", "fedrec", "torch", "numpy"} <= set(data["versions"])
        assert [row["round"] for row in data["history"]] == [1, 2, 3, 4]
        assert data["final"] == pytest.approx(full.final, rel=0, abs=0)
        totals = data["communication"]["totals"]
        assert totals == full.communication["totals"]
        assert {"bytes_up", "bytes_down", "bytes_total"} <= set(totals)
        assert sum(row["communication"]["bytes_total"] for row in data["history"]) == (
            totals["bytes_total"]
        )
        assert data["wall_time_s"] >= 0


def test_rerun_into_a_finished_directory_removes_the_old_results(runs, data_root: Path) -> None:
    alg, _, full_dir, _, _, _ = runs
    assert (full_dir / RESULTS_NAME).exists()
    out = _run(alg, data_root, full_dir, stop_after=1)
    assert out.status == "interrupted"
    assert not (full_dir / RESULTS_NAME).exists()  # nothing stale left looking complete


def test_resume_with_a_different_config_is_refused(runs, data_root: Path) -> None:
    alg, _, _, _, _, part_dir = runs
    changed = dict(SETTINGS[alg], alpha=7) if alg == "ptf-fedrec" else dict(SETTINGS[alg], dim=9)
    with pytest.raises(FedrecError, match="different"):
        run_experiment(alg, "ml-100k", data_dir=data_root, overrides=changed, out_dir=part_dir,
                       resume=True, progress=False)
    other = "pmf" if alg == "fcf" else "fcf"
    with pytest.raises(FedrecError, match="different"):
        run_experiment(other, "ml-100k", data_dir=data_root, overrides=dict(SETTINGS[other]),
                       out_dir=part_dir, resume=True, progress=False)


def test_resume_needs_a_checkpoint(data_root: Path, tmp_path: Path) -> None:
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ml-100k not available")
    with pytest.raises(FedrecError, match="no checkpoint"):
        _run("pmf", data_root, tmp_path / "empty", resume=True)
    with pytest.raises(ConfigError, match="--out"):
        _run("pmf", data_root, None, resume=True)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / CHECKPOINT_NAME).write_bytes(b"not a checkpoint")
    with pytest.raises(FedrecError, match="unreadable"):
        _run("pmf", data_root, tmp_path / "bad", resume=True)


def test_unknown_names_and_wrong_kind(data_root: Path) -> None:
    with pytest.raises(ConfigError, match="unknown algorithm"):
        run_experiment("nope", "ml-100k", data_dir=data_root, progress=False)
    with pytest.raises(ConfigError, match="unknown"):
        run_experiment("pmf", "no-such-data", data_dir=data_root, progress=False)
    if (data_root / "planetoid/ind.cora.x").is_file():
        with pytest.raises(ConfigError, match="graph"):
            run_experiment("pmf", "cora", data_dir=data_root, progress=False)
