"""``fedrec deploy --out DIR`` and a finished result already there (issue 42).

``deploy`` deleted ``DIR/results.json`` before it started anything, so a deployment that then
failed (a process that did not start, a ServerApp error, a job the nodes refused) lost the
finished result it was meant to replace. Now every check is made before anything in ``DIR``
is touched, and ``results.json`` is replaced only by the new run's, when it completes. The
failures here are a SuperLink that does not start (``Deployment.start_listening`` made to
fail: the first thing after the point where the deletion was), refused jobs, and, in the slow
test, a real deployment that completes and replaces the old result (given ``overwrite``:
without it a finished run is refused before anything starts, issue 41).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedrec.engines.flower.deploy import DeployError, Deployment, deploy
from fedrec.errors import ConfigError
from fedrec.options import RunOptions

OLD = {"status": "complete", "final": {"rmse": 0.5}, "note": "a finished run's result"}
QUIET = RunOptions(engine="flower", progress=False, timeout=120)
#: A finished run in the output directory is refused without it (issue 41).
REPLACE = RunOptions.of(QUIET, overwrite=True)


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    """An output directory holding a finished run's files."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text(json.dumps(OLD))
    (out / "progress.jsonl").write_text('{"round": 1}\n')
    return out


@pytest.fixture
def no_start(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No process of the deployment starts: each attempt fails as a SuperLink that exits at
    start does (and is recorded)."""
    started: list[str] = []

    def fail(self: Deployment, name: str, argv, **kwargs):
        started.append(name)
        raise DeployError(f"{name} exited with status 1 at start")

    monkeypatch.setattr(Deployment, "start_listening", fail)
    return started


def test_a_deployment_that_fails_leaves_the_finished_result(
        finished: Path, no_start: list[str], ml100k_root: Path) -> None:
    before = (finished / "results.json").read_bytes()
    with pytest.raises(DeployError, match="superlink exited with status 1 at start"):
        deploy("fcf", "ml-100k", data_dir=ml100k_root, overrides={"rounds": 1},
               out_dir=finished, options=REPLACE)
    assert no_start == ["superlink"]  # it failed after the checks, once it had started
    assert (finished / "results.json").read_bytes() == before


def test_a_finished_run_is_refused_without_overwrite_before_any_process(
        finished: Path, no_start: list[str], ml100k_root: Path) -> None:
    files = {p.name: p.read_bytes() for p in finished.iterdir()}
    with pytest.raises(ConfigError, match=r"holds a finished run \(results.json\); give another "
                                          r"--out, or --overwrite to replace it$"):
        deploy("fcf", "ml-100k", data_dir=ml100k_root, overrides={"rounds": 1},
               out_dir=finished, options=QUIET)
    assert no_start == []
    assert {p.name: p.read_bytes() for p in finished.iterdir()} == files


@pytest.mark.parametrize(("algorithm", "dataset", "overrides", "message"), [
    ("fcf", "cora", {}, "fcf works on rating/interaction data; cora is graph"),
    ("pmf", "ml-100k", {}, "pmf is not a federated algorithm"),
    ("fcf", "ml-100k", {"dropout": 0.1}, "dropout is simulated"),
])
def test_a_refused_deployment_touches_nothing(finished: Path, no_start: list[str],
                                              ml100k_root: Path, algorithm: str, dataset: str,
                                              overrides: dict, message: str) -> None:
    files = {p.name: p.read_bytes() for p in finished.iterdir()}
    with pytest.raises(ConfigError, match=message):
        deploy(algorithm, dataset, data_dir=ml100k_root, overrides=overrides,
               out_dir=finished, options=QUIET)
    assert no_start == []  # refused before any process
    assert {p.name: p.read_bytes() for p in finished.iterdir()} == files


def test_an_output_directory_it_cannot_write_is_refused_before_any_process(
        tmp_path: Path, no_start: list[str], ml100k_root: Path) -> None:
    (tmp_path / "results.json").mkdir()
    (tmp_path / "a-file").write_text("x")
    for out, message in ((tmp_path, "results.json is a directory"),
                         (tmp_path / "a-file", "is a file, not a directory")):
        with pytest.raises(ConfigError, match=message):
            deploy("fcf", "ml-100k", data_dir=ml100k_root, overrides={"rounds": 1},
                   out_dir=out, options=QUIET)
    assert no_start == []
    assert (tmp_path / "a-file").read_text() == "x"


@pytest.mark.slow
def test_a_completed_deployment_replaces_the_finished_result(
        finished: Path, ml100k_root: Path) -> None:
    result = deploy("fcf", "ml-100k", data_dir=ml100k_root,
                    overrides={"rounds": 1, "dim": 4}, out_dir=finished,
                    options=RunOptions.of(REPLACE, nodes=2, max_users=20, call_timeout=120))
    written = json.loads((finished / "results.json").read_text())
    assert written != OLD and written["status"] == "complete"
    assert written["final"] == result["final"]
    # What the nodes ran on, recorded by the experimenter's process (issue 41).
    assert written["data"] == result["data"] and written["preset"] is None
    assert written["data"]["split"]["options"] == {"max_users": 20}
    assert written["data"]["counts"]["users"] == 20
    assert "ml-100k/u.data" in [f["path"] for f in written["data"]["files"]]
    assert written["reported_round"]["last_round"]["round"] == 1
    rows = [json.loads(x) for x in (finished / "progress.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rows] == [1]  # this run's progress only
