"""The round loop's hooks (:func:`fedrec.rounds.run_rounds`) on a counting trainer: the
evaluation schedule, the per-round callback, checkpoints and resuming, the early stop.

The loop on real algorithms, with its results files, is :mod:`tests.test_experiment`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fedrec.algorithms.base import Trainer
from fedrec.config import RunConfig
from fedrec.errors import ConfigError
from fedrec.federation.checkpoint import load_checkpoint
from fedrec.federation.ledger import CommunicationLedger
from fedrec.rounds import (
    LAST_ROUND_RULE,
    RoundCheckpoint,
    RunResult,
    is_eval_round,
    reported_round,
    run_rounds,
    select_round,
)


class CountingTrainer(Trainer):
    """Its model is the list of rounds it trained; it evaluates to that list's length."""

    def __init__(self) -> None:
        self.ledger = CommunicationLedger()
        self.trained: list[int] = []
        self.evaluated: list[str] = []

    def train_round(self, rnd: int) -> dict[str, float]:
        self.trained.append(rnd)
        return {"train_loss": 1.0 / rnd}

    def evaluate(self, split: str = "test") -> dict[str, float]:
        self.evaluated.append(split)
        return {"rmse": float(len(self.trained))}

    def state_dict(self) -> dict[str, Any]:
        return {"trained": list(self.trained)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.trained = list(state["trained"])


def _cfg(rounds: int, eval_every: int) -> RunConfig:
    return RunConfig(rounds=rounds, eval_every=eval_every)


def test_evaluates_every_eval_every_rounds_and_the_last():
    cfg = _cfg(7, 3)
    assert [r for r in range(1, 8) if is_eval_round(cfg, r)] == [3, 6, 7]
    trainer, seen = CountingTrainer(), []
    result = run_rounds(trainer, cfg, RunResult("count", "none", {}), on_round=seen.append)
    assert trainer.trained == [1, 2, 3, 4, 5, 6, 7]
    assert [row["round"] for row in result.history] == [1, 2, 3, 4, 5, 6, 7]
    assert [row["round"] for row in result.history if "eval" in row] == [3, 6, 7]
    # Validation first, then test, at each evaluation.
    assert trainer.evaluated == ["valid", "test"] * 3
    assert result.history[2]["eval"] == {"val_rmse": 3.0, "rmse": 3.0}
    assert seen == result.history  # the callback saw every row, in order
    assert result.status == "complete"
    assert result.final == {"val_rmse": 7.0, "rmse": 7.0}
    # val_rmse grows with the rounds: the lowest is the first evaluated round's.
    assert result.selection is not None and result.selection["round"] == 3


def test_checkpoint_stop_and_resume_continue_where_it_stopped(tmp_path: Path):
    cfg, path = _cfg(5, 2), tmp_path / "checkpoint.pt"
    first = CountingTrainer()
    stopped = run_rounds(first, cfg, RunResult("count", "none", {}),
                         checkpoint=RoundCheckpoint(path, {"what": "test"}), stop_after=2)
    assert stopped.status == "interrupted" and stopped.final == {}
    stored = load_checkpoint(path)
    assert stored["round"] == 2 and stored["made_from"] == {"what": "test"}
    assert stored["trainer"] == {"trained": [1, 2]}
    assert [row["round"] for row in stored["history"]] == [1, 2]

    second, seen = CountingTrainer(), []
    resumed = run_rounds(second, cfg, RunResult("count", "none", {}),
                         checkpoint=RoundCheckpoint(path, {"what": "test"}, resume_from=stored),
                         on_round=seen.append)
    assert second.trained == [1, 2, 3, 4, 5]  # restored, then rounds 3..5 only
    assert [row["round"] for row in seen] == [3, 4, 5]
    assert [row["round"] for row in resumed.history] == [1, 2, 3, 4, 5]
    assert resumed.status == "complete"
    assert resumed.wall_time_s >= stored["elapsed"]
    assert load_checkpoint(path)["round"] == 5


def test_stop_after_the_last_round_finishes_the_run():
    result = run_rounds(CountingTrainer(), _cfg(3, 1), RunResult("count", "none", {}),
                        stop_after=3)
    assert result.status == "complete"


def test_progress_bar_writes_its_label_to_stderr(capsys):
    run_rounds(CountingTrainer(), _cfg(2, 1), RunResult("count", "none", {}),
               progress="count/none")
    assert "count/none" in capsys.readouterr().err


def test_checkpoint_every_n_rounds_resumes_from_the_last_written_round(tmp_path: Path):
    cfg, path = _cfg(7, 4), tmp_path / "checkpoint.pt"
    written: list[int] = []
    first = CountingTrainer()
    checkpoint = RoundCheckpoint(path, {"what": "test"}, every=3)
    stopped = run_rounds(first, cfg, RunResult("count", "none", {}), checkpoint=checkpoint,
                         on_round=lambda row: written.append(
                             load_checkpoint(path)["round"] if path.exists() else 0),
                         stop_after=5)
    assert stopped.status == "interrupted"
    # Written at rounds 3 (every 3rd) and 4 (evaluated); round 5's state is not.
    assert written == [0, 0, 3, 4, 4]
    assert [checkpoint.due(cfg, r) for r in range(1, 8)] == [False, False, True, True, False,
                                                            True, True]
    stored = load_checkpoint(path)
    assert stored["round"] == 4 and stored["trainer"] == {"trained": [1, 2, 3, 4]}
    second = CountingTrainer()
    resumed = run_rounds(second, cfg, RunResult("count", "none", {}),
                         checkpoint=RoundCheckpoint(path, {"what": "test"}, resume_from=stored,
                                                    every=3))
    assert second.trained == [1, 2, 3, 4, 5, 6, 7]  # round 5 trained again, nothing lost twice
    assert [row["round"] for row in resumed.history] == [1, 2, 3, 4, 5, 6, 7]
    assert load_checkpoint(path)["round"] == 7  # the last round is always written


def test_checkpoint_every_below_one_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="checkpoint_every must be at least 1"):
        RoundCheckpoint(tmp_path / "checkpoint.pt", {}, every=0)


# -- issue 41: the round a run reports, named, with the last round's beside it ---------------

def _history(val: list[float], test: list[float]) -> list[dict[str, Any]]:
    return [{"round": k + 1, "eval": {"val_rmse": v, "rmse": t, "eval_clients": 3.0}}
            for k, (v, t) in enumerate(zip(val, test, strict=True))]


def test_the_reported_round_is_the_validation_chosen_one_with_the_last_beside_it():
    history = _history([1.2, 0.9, 1.0], [1.1, 0.95, 0.91])  # test is best at round 3
    rep = reported_round(select_round(history), history)
    assert rep["round"] == 2 and rep["select_on"] == "val_rmse"
    assert rep["rule"] == ("lowest val_rmse of the 3 evaluated rounds (earliest on a tie); "
                           "test metrics are never read to choose")
    assert rep["test"] == {"rmse": 0.95, "eval_clients": 3.0}
    assert rep["last_round"] == {"round": 3, "test": {"rmse": 0.91, "eval_clients": 3.0}}


def test_without_validation_metrics_the_last_round_is_reported_and_says_why():
    history = [{"round": r, "eval": {"rmse": 1.0 / r}} for r in (1, 2)]
    rep = reported_round(select_round(history), history)
    assert rep["round"] == 2 and rep["select_on"] is None and rep["rule"] == LAST_ROUND_RULE
    assert rep["test"] == rep["last_round"]["test"] == {"rmse": 0.5}
    assert reported_round(None, [{"round": 1, "train": {}}]) is None


def test_a_result_records_its_reported_round_data_and_preset():
    cfg = RunConfig(rounds=3, eval_every=1)
    result = run_rounds(CountingTrainer(), cfg, RunResult("counting", "none", {"rounds": 3}))
    data = result.to_json()
    assert data["reported_round"] == reported_round(result.selection, result.history)
    assert data["reported_round"]["last_round"]["round"] == 3
    assert data["data"] is None and data["preset"] is None  # none given: recorded as none
