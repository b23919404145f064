"""What the reproduction tables read from a run: the validation-chosen round's test metrics."""

from __future__ import annotations

from typing import Any

import pytest

from fedrec.reproduce.report import (
    at_selected_round,
    best_test_metric,
    metric,
    paired_differences,
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


def test_paired_differences_pair_by_seed_at_the_chosen_round() -> None:
    def seeded(seed: int, test: list[float], chosen: int) -> dict[str, Any]:
        return {**_run([0.9] * len(test), test, chosen), "seed": seed}

    runs = [seeded(0, [0.5, 0.80], 2), seeded(1, [0.70, 0.1], 1), seeded(2, [0.90], 1)]
    base = [seeded(1, [0.60], 1), seeded(0, [0.75, 0.0], 1)]
    # seed 0: 0.80 (round 2) - 0.75 (round 1); seed 1: 0.70 - 0.60; seed 2 has no pair
    assert paired_differences(runs, base, "rmse") == pytest.approx([0.05, 0.10])
    assert paired_differences(runs, [], "rmse") == []


def test_a_full_disk_while_writing_the_report_or_a_plot_is_one_line(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: the report and the plots of a reproduction wrote with write_text/savefig, and
    a full disk ended in a traceback; now one WriteError, and no half file under the name."""
    import errno
    import os
    from pathlib import Path

    from fedrec.errors import WriteError
    from fedrec.reproduce.report import finish_report, plot

    def enospc(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", enospc)
    monkeypatch.setattr(Path, "write_bytes", enospc)
    with pytest.raises(WriteError, match=r"^could not write the reproduction's report to "
                                         r".*README\.md \(No space left on device\)$"):
        finish_report(tmp_path, ["# A table"], [])
    with pytest.raises(WriteError, match=r"^could not write a plot to .*curve\.png \(No space "
                                         r"left on device\)$"):
        plot(tmp_path / "curve.png", [lambda ax: ax.plot([0, 1], [1, 0])], "a curve")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
