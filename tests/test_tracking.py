"""``fedrec run --log-dir``: the TensorBoard log of a run holds what its results.json holds, round
by round (read back with TensorBoard's own reader), and a missing package is a one-line error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from fedrec.cli.main import main
from fedrec.experiment import run_experiment
from fedrec.options import RunOptions
from fedrec.privacy import run_epsilon


def ratings(tmp_path: Path) -> Path:
    path = tmp_path / "ratings.csv"
    path.write_text("user,item,rating\n" + "".join(
        f"{u},{i},{(u + 2 * i) % 5 + 1}\n" for u in range(8) for i in range(10)))
    return path


def scalars(log_dir: Path) -> dict[str, dict[int, float]]:
    """Every scalar of the event files in ``log_dir``: ``{tag: {step: value}}``."""
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    events = accumulator.EventAccumulator(str(log_dir))
    events.Reload()
    return {tag: {e.step: e.value for e in events.Scalars(tag)}
            for tag in events.Tags()["scalars"]}


def expected(history: list[dict]) -> dict[str, dict[int, float]]:
    """What the log should hold of ``history``, as TensorBoard stores it (float32)."""
    out: dict[str, dict[int, float]] = {}
    cumulative = dict.fromkeys(("bytes_up", "bytes_down", "bytes_total"), 0)
    for row in history:
        step = row["round"]
        for section, prefix in (("train", "train"), ("eval", "eval"),
                                ("communication", "ledger")):
            for key, value in row.get(section, {}).items():
                out.setdefault(f"{prefix}/{key}", {})[step] = np.float32(value)
        for key in cumulative:
            cumulative[key] += row["communication"][key]
            out.setdefault(f"ledger/cumulative_{key}", {})[step] = np.float32(cumulative[key])
        out.setdefault("time/round_s", {})[step] = np.float32(row["time_s"])
    return out


def test_the_log_holds_every_round_of_results_json(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    out, logs = tmp_path / "run", tmp_path / "logs"
    assert main(["run", "pmf", "--dataset", str(ratings(tmp_path)), "--out", str(out),
                 "--log-dir", str(logs), "--set", "rounds=3", "--set", "eval_every=2",
                 "--set", "dim=4"]) == 0
    history = json.loads((out / "results.json").read_text())["history"]
    logged = scalars(logs)
    assert logged == expected(history)
    assert "eval/val_rmse" in logged and set(logged["eval/rmse"]) == {2, 3}
    assert "privacy/epsilon" not in logged  # pmf: no formal guarantee


def test_a_resumed_run_continues_its_log_and_the_epsilon_is_logged(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    data, out, logs = ratings(tmp_path), tmp_path / "run", tmp_path / "logs"
    settings = {"rounds": 2, "eval_every": 1, "pseudo_items": 4, "neighbours": 3,
                "clients_per_round": 4}
    logged_quietly = RunOptions(log_dir=logs, progress=False)
    run_experiment("fedgnn", str(data), overrides=settings, out_dir=out,
                   options=RunOptions.of(logged_quietly, stop_after=1))  # interrupted: round 1
    result = run_experiment("fedgnn", str(data), overrides=settings, out_dir=out,
                            options=RunOptions.of(logged_quietly, resume=True))
    logged = scalars(logs)
    epsilon, _ = run_epsilon(result.privacy)
    assert epsilon is not None and logged.pop("privacy/epsilon") == {2: np.float32(epsilon)}
    # Round 2's cumulative bytes count round 1's, which the first process logged.
    assert logged == expected(result.history)
    assert logged["ledger/cumulative_bytes_up"][2] > logged["ledger/bytes_up"][2] > 0


def test_without_tensorboard_the_error_names_the_extra(tmp_path: Path, monkeypatch, capsys
                                                       ) -> None:
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard fails
    assert main(["run", "pmf", "--dataset", str(ratings(tmp_path)),
                 "--log-dir", str(tmp_path / "logs"), "--set", "rounds=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["fedrec: error: --log-dir needs the tensorboard package: pip install "
                   "'fedrec[tensorboard]'"]
    assert not (tmp_path / "logs").exists()
