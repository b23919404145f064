"""What the reproduction tables read from a run: the validation-chosen round's test metrics."""

from __future__ import annotations

from typing import Any

from fedrec.reproduce.report import (
    at_selected_round,
    best_test_metric,
    metric,
    selected_rounds,
)


def _run(val: list[float], test: list[float], chosen: int | None) -> dict[str, Any]:
    history = [{"round": r + 1, "eval": {"val_rmse": v, "rmse": t}}
               for r, (v, t) in enumerate(zip(val, test, strict=True))]
    selection = None if chosen is None else {
        "select_on": "val_rmse", "higher_is_better": False, "round": chosen,
        "val_rmse": val[chosen - 1], "test": {"rmse": test[chosen - 1]}}
    return {"config": {"rounds": len(val)}, "history": history, "selection": selection,
            "final": {"rmse": test[-1], "train_loss": 0.5}}


def test_tables_read_the_validation_chosen_round_not_the_best_test_round() -> None:
    # Validation is best at round 2; test would be best at round 3.
    run = _run([0.95, 0.90, 0.93], [1.00, 0.97, 0.96], chosen=2)
    assert metric([run], "rmse") == [0.97]
    assert best_test_metric([run], "rmse", higher_is_better=False) == [0.96]
    assert best_test_metric([run], "rmse", higher_is_better=True) == [1.00]
    # Figures the selection does not carry stay the final ones.
    assert at_selected_round(run) == {"rmse": 0.97, "train_loss": 0.5}
    assert selected_rounds([run, _run([0.9, 0.8], [1.0, 0.9], chosen=2)]) == "2/2 of 3"


def test_a_run_without_a_validation_split_reports_its_last_round() -> None:
    run = _run([0.95, 0.90], [1.00, 0.97], chosen=None)
    assert metric([run], "rmse") == [0.97] and selected_rounds([run]) == "–"
    assert metric([], "rmse") == [] and best_test_metric([], "rmse", False) == []
