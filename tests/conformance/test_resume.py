"""Every federated method resumes to the uninterrupted run, bit for bit: the round loop stopped
after round 1 as if interrupted, a fresh trainer resumed from the checkpoint file it wrote, and
the finished result (every round's training statistics but wall times, evaluations, ledger
totals, the final metrics and the privacy report) equals the one of a run that never stopped.
Methods with the user-level DP aggregate are checked in a DP run too (its accountant is in the
checkpoint; the masks differ between runs, their sums do not)."""

from __future__ import annotations

from typing import Any

import pytest

from fedrec.config import to_dict
from fedrec.federation.checkpoint import load_checkpoint
from fedrec.rounds import RoundCheckpoint, RunResult, run_rounds

from .harness import (
    FEDERATED,
    WITH_DP,
    applies,
    config_of,
    dataset_of,
    dp_settings,
    trainer_of,
    without_timings,
)

pytestmark = pytest.mark.usefixtures("single_thread")  # bit-exact: see conftest.single_thread


def _comparable(result: RunResult) -> dict[str, Any]:
    data = result.to_json()
    return {
        "history": [{"train": without_timings(r["train"]), "eval": r.get("eval"),
                     "communication": r["communication"]} for r in data["history"]],
        "final": data["final"], "privacy": data.get("privacy"),
        "communication": data["communication"],
    }


#: (method, settings over its contract's): every method, then each one's DP run.
CASES = [(name, {}) for name in FEDERATED] + [(name, dp_settings(name)) for name in WITH_DP]


@pytest.mark.parametrize(("name", "settings"), CASES,
                         ids=[n + ("-dp" if s else "") for n, s in CASES])
def test_resume_equals_the_uninterrupted_run(name: str, settings: dict, data_root,
                                             tmp_path) -> None:
    applies(name, "resume")
    cfg = config_of(name, **settings)
    ds = dataset_of(name, data_root)

    def result() -> RunResult:
        return RunResult(name, ds.name, to_dict(cfg))

    whole = run_rounds(trainer_of(name, cfg, ds), cfg, result())
    path = tmp_path / "checkpoint.pt"
    stopped = run_rounds(trainer_of(name, cfg, ds), cfg, result(),
                         checkpoint=RoundCheckpoint(path, {}), stop_after=1)
    assert stopped.status == "interrupted" and len(stopped.history) == 1
    resumed = run_rounds(trainer_of(name, cfg, ds), cfg, result(),
                         checkpoint=RoundCheckpoint(path, {}, load_checkpoint(path)))
    assert whole.status == resumed.status == "complete"
    assert _comparable(resumed) == _comparable(whole)
