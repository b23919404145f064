"""The reproduction runner: one run per effective configuration, resumable, report-only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedrec.config import to_dict
from fedrec.engines.common import resolve
from fedrec.errors import ConfigError
from fedrec.experiment import run_experiment
from fedrec.federation.checkpoint import CHECKPOINT_NAME, load_checkpoint
from fedrec.options import RunOptions
from fedrec.reproduce.report import metric
from fedrec.reproduce.runner import (
    SAME_AS_NAME,
    Candidates,
    RunSpec,
    check_only,
    choose_on_validation,
    run_all,
    status_of,
)
from fedrec.rounds import RESULTS_FORMAT


class Recorder:
    """Stands in for run_experiment: records calls and writes a complete results.json."""

    def __init__(self, scores: dict[float, tuple[float, float]] | None = None) -> None:
        self.calls: list[tuple[str, dict]] = []
        # {lr: (validation rmse at the selected round, test rmse there)}
        self.scores = scores or {}

    def __call__(self, algorithm, dataset, *, overrides, out_dir, **_) -> None:
        self.calls.append((algorithm, dict(overrides)))
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        # The config a run stores: resolved as fedrec run resolves it.
        config = to_dict(resolve(algorithm, dataset, None, overrides)[1])
        val, test = self.scores.get(overrides.get("lr"), (1.0, 1.0))
        selection = {"select_on": "val_rmse", "higher_is_better": False, "round": 2,
                     "val_rmse": val, "test": {"rmse": test}}
        (Path(out_dir) / "results.json").write_text(json.dumps(
            {"format": RESULTS_FORMAT, "status": "complete", "config": config,
             "final": {"rmse": 9.0}, "selection": selection}))


def test_equivalent_settings_run_once_and_runs_are_reused(tmp_path: Path) -> None:
    specs = [RunSpec("a", "fedgnn", "ml-100k", {}, (0, 1)),
             # clip 0.1 is the packaged default: the same run as "a"
             RunSpec("b", "fedgnn", "ml-100k", {"clip": 0.1}, (0,)),
             RunSpec("c", "fedgnn", "ml-100k", {"clip": 0.2}, (0,))]
    rec = Recorder()
    res = run_all(specs, tmp_path, runner=rec)
    assert len(rec.calls) == 3  # a/0, a/1, c/0
    assert res["b"] == [res["a"][0]]
    assert {c[1]["seed"] for c in rec.calls} == {0, 1}
    again = Recorder()
    assert run_all(specs, tmp_path, runner=again) == res and again.calls == []


def test_a_run_made_with_another_packaged_config_is_run_again(tmp_path: Path) -> None:
    """A finished run whose stored config differs from what the setting resolves to today
    (the packaged per-dataset section changed since) is re-run, not reported as current."""
    specs = [RunSpec("a", "fedgnn", "ml-100k", {"clip": 0.2}, (0,)),
             RunSpec("twin", "fedgnn", "ml-100k", {"clip": 0.2, "laplace": 0.2}, (0,))]
    rec = Recorder()
    run_all(specs, tmp_path, runner=rec)
    assert len(rec.calls) == 1
    assert (tmp_path / "runs/twin/seed-0" / SAME_AS_NAME).is_file()
    path = tmp_path / "runs/a/seed-0/results.json"
    old = json.loads(path.read_text())
    old["config"]["rounds"] += 1  # what the packaged config said when it ran
    path.write_text(json.dumps(old))
    again = Recorder()
    res = run_all(specs, tmp_path, runner=again)
    assert [c[1] for c in again.calls] == [{"clip": 0.2, "seed": 0}]
    assert res["a"][0]["config"]["rounds"] == old["config"]["rounds"] - 1
    assert status_of(tmp_path, specs[1]) == "seed 0: same run as a/seed-0"


def test_a_run_stored_before_an_option_existed_counts_as_its_default(tmp_path: Path) -> None:
    """An option added since a run finished (its default keeps the old behaviour) does not make
    the run stale; a setting that gives the new option another value still runs."""
    specs = [RunSpec("a", "fedgnn", "ml-100k", {}, (0,))]
    run_all(specs, tmp_path, runner=Recorder())
    path = tmp_path / "runs/a/seed-0/results.json"
    old = json.loads(path.read_text())
    del old["config"]["secagg_variant"]  # as a run made before SecAgg+ stored it
    path.write_text(json.dumps(old))
    again = Recorder()
    assert run_all(specs, tmp_path, runner=again)["a"] == [old] and again.calls == []
    other = [RunSpec("a", "fedgnn", "ml-100k", {"secagg_variant": "secagg+"}, (0,))]
    third = Recorder()
    run_all(other, tmp_path, runner=third)
    assert [c[1] for c in third.calls] == [{"secagg_variant": "secagg+", "seed": 0}]


def test_report_only_runs_nothing(tmp_path: Path) -> None:
    rec = Recorder()
    res = run_all([RunSpec("a", "fcf", "ml-100k", {"rounds": 3}, (0,))], tmp_path, runner=rec,
                  run_missing=False)
    assert res == {} and rec.calls == []


def test_only_runs_the_settings_with_a_given_key_prefix_and_loads_the_rest(
        tmp_path: Path) -> None:
    specs = [RunSpec("table/a", "fcf", "ml-100k", {"rounds": 3}, (0, 1)),
             RunSpec("table/b", "fcf", "ml-100k", {"rounds": 4}, (0,)),
             RunSpec("sweep/a", "fcf", "ml-100k", {"rounds": 5}, (0,))]
    rec = Recorder()
    res = run_all(specs, tmp_path, runner=rec, run_missing=("table/a", "sweep/"))
    assert [c[1]["rounds"] for c in rec.calls] == [3, 3, 5] and set(res) == {"table/a", "sweep/a"}
    later = Recorder()  # the next part: the rest runs, the first part's runs are loaded
    res = run_all(specs, tmp_path, runner=later, run_missing=("table/",))
    assert [c[1]["rounds"] for c in later.calls] == [4] and set(res) == set(k.key for k in specs)


def test_an_only_prefix_that_matches_no_setting_is_refused_before_anything_runs(
        tmp_path: Path) -> None:
    specs = [RunSpec("table/a", "fcf", "ml-100k", {"rounds": 3}, (0,)),
             RunSpec("sweep/a", "fcf", "ml-100k", {"rounds": 5}, (0,))]
    calls: list = []

    def reproduce(out: Path, *, quick: bool, run_missing=True) -> Path:
        calls.append((out, quick, run_missing))
        run_all(specs[:1], out, runner=Recorder(), run_missing=run_missing)
        run_all(specs[1:], out, runner=Recorder(), run_missing=run_missing)  # a later part
        out.mkdir(parents=True, exist_ok=True)
        return out / "README.md"

    check_only(reproduce, ("table/", "sweep/a"), quick=True)
    assert [c[1:] for c in calls] == [(True, False)]  # a report-only pass...
    assert calls[0][0] != tmp_path and not calls[0][0].exists()  # ...into a temporary folder
    with pytest.raises(ConfigError, match=r"^--only 'tabel/' matches no setting; the keys start "
                                          r"with sweep/, table/ \(the report's Runs table"):
        check_only(reproduce, ("table/", "tabel/"), quick=True)
    assert not (tmp_path / "runs").exists()


def test_a_failed_setting_is_recorded_and_the_grid_goes_on(tmp_path: Path) -> None:
    from fedrec.errors import ProtocolError

    rec = Recorder()

    def runner(algorithm, dataset, *, overrides, out_dir, **kw):
        if overrides.get("lr") == 9.0:
            raise ProtocolError("round 3: no client update arrived")
        rec(algorithm, dataset, overrides=overrides, out_dir=out_dir, **kw)

    specs = [RunSpec("bad", "fcf", "ml-100k", {"lr": 9.0}), RunSpec("good", "fcf", "ml-100k")]
    res = run_all(specs, tmp_path, runner=runner)
    assert list(res) == ["good"] and len(rec.calls) == 1
    assert status_of(tmp_path, specs[0]) == "seed 0: failed: round 3: no client update arrived"
    assert status_of(tmp_path, specs[1]) == "seed 0: complete"
    run_all(specs, tmp_path, runner=runner)  # not retried
    assert len(rec.calls) == 1


def test_a_full_disk_stops_the_grid_and_is_not_recorded_as_the_setting_s_failure(
        tmp_path: Path) -> None:
    """A run that could not write its files failed for the machine, not for its settings: the
    grid stops with that one line, and nothing marks the setting failed (it runs next time)."""
    from fedrec.errors import WriteError

    def runner(algorithm, dataset, *, overrides, out_dir, **kw):
        raise WriteError(f"could not write the run's results to {out_dir} (No space left on "
                         "device)")

    specs = [RunSpec("full", "fcf", "ml-100k"), RunSpec("next", "fcf", "ml-100k")]
    with pytest.raises(WriteError, match="No space left"):
        run_all(specs, tmp_path, runner=runner)
    assert status_of(tmp_path, specs[0]) == "seed 0: not run"
    rec = Recorder()
    assert list(run_all(specs, tmp_path, runner=rec)) == ["full", "next"]


def test_a_checkpoint_of_other_settings_is_started_again(data_root: Path, tmp_path: Path) -> None:
    # The real runner: its refusal to resume (ResumeRefused) makes run_all start afresh.
    if not (data_root / "ml-100k/u.data").is_file():
        pytest.skip("staged ml-100k not available")
    quick = {"dim": 4, "batch_size": 4096}
    folder = tmp_path / "runs" / "k" / "seed-0"
    run_experiment("pmf", "ml-100k", data_dir=data_root, overrides={**quick, "rounds": 3},
                   out_dir=folder, options=RunOptions(progress=False, stop_after=1))
    res = run_all([RunSpec("k", "pmf", "ml-100k", {**quick, "rounds": 2})], tmp_path,
                  data_dir=data_root, options=RunOptions(progress=False))
    assert res["k"][0]["status"] == "complete" and res["k"][0]["config"]["rounds"] == 2
    assert load_checkpoint(folder / CHECKPOINT_NAME)["made_from"]["config"]["rounds"] == 2


def test_a_run_of_an_older_results_format_is_run_again(tmp_path: Path) -> None:
    """A run made before the validation split (format 1) trained on today's validation rows:
    it is not reported as a current run."""
    spec = RunSpec("a", "fcf", "ml-100k", {"rounds": 3}, (0,))
    run_all([spec], tmp_path, runner=Recorder())
    path = tmp_path / "runs/a/seed-0/results.json"
    old = json.loads(path.read_text())
    del old["format"]
    path.write_text(json.dumps(old))
    again = Recorder()
    run_all([spec], tmp_path, runner=again)
    assert len(again.calls) == 1


def test_choice_on_validation_ignores_test_and_reuses_its_trial(tmp_path: Path) -> None:
    # lr 0.3 has the best test RMSE but the worst validation RMSE: validation decides.
    scores = {0.1: (0.90, 0.95), 0.2: (0.91, 0.93), 0.3: (0.99, 0.80)}
    cands = Candidates("table/ml-100k/fcf", "fcf", "ml-100k",
                       {f"lr {lr}": {"rounds": 3, "lr": lr} for lr in scores}, (0, 1))
    rec = Recorder(scores)
    choice = choose_on_validation(cands, tmp_path, runner=rec)
    assert choice.label == "lr 0.1" and choice.select_on == "val_rmse"
    assert choice.validation == {"lr 0.1": 0.90, "lr 0.2": 0.91, "lr 0.3": 0.99}
    assert choice.spec == RunSpec("table/ml-100k/fcf", "fcf", "ml-100k",
                                  {"rounds": 3, "lr": 0.1}, (0, 1))
    assert len(rec.calls) == 3
    # The chosen cell's seed 0 is its trial's run; only seed 1 runs.
    res = run_all([*choice.trials, choice.spec], tmp_path, runner=rec)
    assert len(rec.calls) == 4 and rec.calls[-1][1]["seed"] == 1
    # Tables report the test metric at the validation-chosen round, not the last round's.
    assert metric(res["table/ml-100k/fcf"], "rmse") == [0.95, 0.95]


def test_choice_waits_for_its_trials_in_a_report_only_run(tmp_path: Path) -> None:
    cands = Candidates("k", "fcf", "ml-100k", {"a": {"lr": 0.1}, "b": {"lr": 0.2}})
    choice = choose_on_validation(cands, tmp_path, runner=Recorder(), run_missing=False)
    assert choice.label == "a" and choice.select_on is None
    assert choice.validation == {"a": None, "b": None}


class OptionsRecorder(Recorder):
    """A :class:`Recorder` that also stores the dataset options, as ``results.json`` does."""

    def __call__(self, algorithm, dataset, *, overrides, out_dir, **kwargs) -> None:
        super().__call__(algorithm, dataset, overrides=overrides, out_dir=out_dir)
        self.calls[-1] = (*self.calls[-1], kwargs.get("dataset_options"))
        path = Path(out_dir) / "results.json"
        stored = json.loads(path.read_text())
        stored["dataset_options"] = kwargs.get("dataset_options") or {}
        path.write_text(json.dumps(stored))


def test_dataset_options_reach_the_run_and_tell_runs_apart(tmp_path: Path) -> None:
    specs = [RunSpec("public", "gcn-central", "cora", {}, (0,)),
             RunSpec("random", "gcn-central", "cora", {}, (0,), {"split": "random", "seed": 0})]
    rec = OptionsRecorder()
    res = run_all(specs, tmp_path, runner=rec)
    assert [c[2] for c in rec.calls] == [None, {"split": "random", "seed": 0}]
    assert res["public"] != res["random"]
    again = OptionsRecorder()
    assert run_all(specs, tmp_path, runner=again) == res and again.calls == []
