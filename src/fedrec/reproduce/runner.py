"""Running a reproduction's grid of experiments: one :func:`~fedrec.experiment.run_experiment`
per (setting, seed), each in its own folder, resumable.

A reproduction is a list of :class:`RunSpec`. :func:`run_all` runs each into
``OUT/runs/KEY/seed-S/`` and skips a run whose ``results.json`` is complete, so a reproduction
interrupted after hours continues where it stopped (a run interrupted mid-way resumes from its
own checkpoint).

A setting that was tuned is a :class:`Candidates`: :func:`choose_on_validation` runs each
candidate once (seed ``tune_seed``, under ``OUT/runs/tune/KEY/``) and keeps the one whose
validation metric, at the round its own run selects on validation, is best. Test metrics are
never read to choose; the tables report the test metrics at the validation-chosen round
(:func:`fedrec.reproduce.report.metric`).
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedrec.config import RunConfig, option_flags, to_dict, with_new_defaults
from fedrec.core.files import write_atomic, writing
from fedrec.errors import ConfigError, FedrecError, ResumeRefused, WriteError
from fedrec.experiment import RESULTS_NAME, run_experiment
from fedrec.federation.checkpoint import CHECKPOINT_NAME
from fedrec.options import RunOptions
from fedrec.rounds import RESULTS_FORMAT

FAILED_NAME = "failed.json"
SAME_AS_NAME = "same-as.txt"  # a setting whose resolved config equals an earlier one's


@dataclass(frozen=True)
class RunSpec:
    """One setting of a reproduction; ``key`` names it in tables and folders."""

    key: str
    algorithm: str
    dataset: str
    overrides: dict[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)
    #: ``fedrec run --data-opt`` (e.g. ``{"split": "random", "seed": 0}``); part of the run's
    #: identity (stored as ``dataset_options`` in ``results.json``).
    dataset_options: dict[str, Any] = field(default_factory=dict)
    #: ``fedrec run --preset`` (``"paper"`` for the rows that reproduce the paper's method:
    #: :mod:`fedrec.config`), under the overrides.
    preset: str | None = None

    def command(self) -> str:
        """The ``fedrec run`` command of this setting (without its seed)."""
        preset = f" --preset {self.preset}" if self.preset else ""
        return (f"fedrec run {self.algorithm} --dataset {self.dataset}{preset}"
                + option_flags("--data-opt", self.dataset_options)
                + option_flags("--set", self.overrides))


def _log(msg: str) -> None:
    print(f"[reproduce {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


#: Which missing runs a reproduction may run: all (True), none (False: a report of what is
#: done so far), or those whose setting's key starts with one of the given prefixes
#: (``fedrec reproduce --only``: a long grid split into parts that each finish).
RunMissing = bool | tuple[str, ...]


def may_run(key: str, run_missing: RunMissing) -> bool:
    """Whether the setting ``key`` may run under ``run_missing``. Asking names a setting the
    reproduction has (a run outside :func:`run_all`, e.g. FL-MV-DSSM's ``central/<view>``):
    :func:`recording_keys` blocks record it."""
    for keys in _RECORDERS:
        keys.add(key)
    if isinstance(run_missing, bool):
        return run_missing
    return any(key.startswith(prefix) for prefix in run_missing)


#: The key sets of :func:`recording_keys` blocks in progress: :func:`run_all` adds the key of
#: every setting it is given to each, :func:`may_run` every key it is asked about.
_RECORDERS: list[set[str]] = []


@contextlib.contextmanager
def recording_keys() -> Iterator[set[str]]:
    """A set that collects the key of every setting :func:`run_all` is given inside the block
    (run, loaded or not): the settings a reproduction has."""
    keys: set[str] = set()
    _RECORDERS.append(keys)
    try:
        yield keys
    finally:
        _RECORDERS.remove(keys)


def check_only(reproduce: Callable[..., Path], prefixes: Sequence[str], **kwargs: Any) -> None:
    """ConfigError naming the first of ``prefixes`` (``fedrec reproduce --only``) that no
    setting's key starts with: the reproduction's settings are found by a report-only pass of
    ``reproduce`` (``kwargs``: its options) into a temporary folder, which runs nothing."""
    with tempfile.TemporaryDirectory() as tmp, recording_keys() as keys:
        reproduce(Path(tmp), **kwargs, run_missing=False)
    for prefix in prefixes:
        if not any(key.startswith(prefix) for key in keys):
            tops = sorted({key.split("/")[0] + ("/" if "/" in key else "") for key in keys})
            raise ConfigError(f"--only {prefix!r} matches no setting; the keys start with "
                              f"{', '.join(tops)} (the report's Runs table lists them)")


def run_all(specs: Sequence[RunSpec], out: Path, *, data_dir: str | Path | None = None,
            options: RunOptions | None = None,
            runner: Callable[..., Any] = run_experiment, run_missing: RunMissing = True,
            ) -> dict[str, list[dict[str, Any]]]:
    """Run (or load) every (spec, seed); return ``{key: [results.json of each seed]}``.

    ``options``: how every run executes (device, progress, ...; the grid resumes each run
    itself, and writes no TensorBoard log). ``run_missing``: which missing runs to run
    (:data:`RunMissing`); the others are only loaded where complete."""
    base = options or RunOptions()
    base.refuse(["resume", "stop_after", "log_dir"], "a reproduction (it resumes every run "
                "from its own folder)")
    results: dict[str, list[dict[str, Any]]] = {}
    # Settings written differently can be the same run (an override equal to the default):
    # one run per effective configuration, found by the resolved config of each setting.
    by_config: dict[str, tuple[dict[str, Any], str]] = {}
    for recorder in _RECORDERS:
        recorder.update(s.key for s in specs)
    total = sum(len(s.seeds) for s in specs)
    done = 0
    for spec in specs:
        for seed in spec.seeds:
            done += 1
            folder = out / "runs" / spec.key / f"seed-{seed}"
            path = folder / RESULTS_NAME
            cfg = _resolved(spec, seed)
            resolved = to_dict(cfg)
            identity: list[Any] = [spec.algorithm, spec.dataset, resolved]
            if spec.dataset_options:  # (kept out otherwise: the key of every earlier spec)
                identity.append(spec.dataset_options)
            canon = json.dumps(identity, sort_keys=True, default=str)
            stored = json.loads(path.read_text()) if path.is_file() else {}
            # Reused only if made with today's resolved config: a changed packaged config (a
            # dataset's tuned section) must re-run the setting, not report the old run.
            if (stored.get("status") == "complete" and stored.get("format") == RESULTS_FORMAT
                    and _same(with_new_defaults(stored["config"], cfg), resolved)
                    and _same(stored.get("dataset_options") or {}, spec.dataset_options)):
                results.setdefault(spec.key, []).append(stored)
                by_config.setdefault(canon, (stored, f"{spec.key}/seed-{seed}"))
                continue
            if canon in by_config:
                results.setdefault(spec.key, []).append(by_config[canon][0])
                with writing("a run's folder", folder):
                    folder.mkdir(parents=True, exist_ok=True)
                write_atomic(folder / SAME_AS_NAME, by_config[canon][1] + "\n", "a twin's note")
                continue
            if not may_run(spec.key, run_missing):
                continue
            _log(f"{done}/{total} {spec.key} seed {seed}: {spec.command()}")
            if (folder / FAILED_NAME).is_file():
                continue  # failed before (e.g. diverged): reported, not retried
            (folder / SAME_AS_NAME).unlink(missing_ok=True)  # it was another run's twin
            resume = (folder / CHECKPOINT_NAME).is_file()
            kwargs: dict[str, Any] = dict(data_dir=data_dir,
                                          overrides={**spec.overrides, "seed": seed},
                                          out_dir=folder)
            if spec.dataset_options:
                kwargs["dataset_options"] = dict(spec.dataset_options)
            if spec.preset is not None:
                kwargs["preset"] = spec.preset
            # A finished run still here is stale (another format or config: not reused above),
            # so the grid replaces it.
            fresh = RunOptions.of(base, overwrite=True)
            try:
                try:
                    runner(spec.algorithm, spec.dataset,
                           options=RunOptions.of(fresh, resume=resume), **kwargs)
                except ResumeRefused:
                    # A checkpoint from other settings or data: start the run again from scratch.
                    (folder / CHECKPOINT_NAME).unlink()
                    runner(spec.algorithm, spec.dataset, options=fresh, **kwargs)
            except WriteError:
                raise  # the machine's (a full disk), not the setting's: the grid stops
            except FedrecError as exc:
                # One setting failing (a diverged run: no finite update arrived) must not stop
                # the grid; the report shows the failure in that setting's place.
                _log(f"{spec.key} seed {seed} failed: {exc}")
                with writing("a run's folder", folder):
                    folder.mkdir(parents=True, exist_ok=True)
                write_atomic(folder / FAILED_NAME, json.dumps({"error": str(exc)}),
                             "a failed run's note")
                continue
            res = json.loads(path.read_text())
            results.setdefault(spec.key, []).append(res)
            by_config[canon] = (res, f"{spec.key}/seed-{seed}")
    return results


@dataclass(frozen=True)
class Candidates:
    """Settings to choose between on validation for one cell of a table, ``{label: overrides}``
    in order of preference on a tie; the chosen one runs with ``seeds`` as the cell ``key``."""

    key: str
    algorithm: str
    dataset: str
    options: dict[str, dict[str, Any]]
    seeds: tuple[int, ...] = (0,)
    tune_seed: int = 0
    preset: str | None = None

    def spec(self, label: str) -> RunSpec:
        return RunSpec(self.key, self.algorithm, self.dataset, self.options[label], self.seeds,
                       preset=self.preset)

    def trial(self, label: str) -> RunSpec:
        return RunSpec(f"tune/{self.key}/{label}", self.algorithm, self.dataset,
                       self.options[label], (self.tune_seed,), preset=self.preset)


@dataclass(frozen=True)
class Choice:
    """What :func:`choose_on_validation` chose: the label, its spec, and every candidate's
    validation figure (``None`` where its trial is not done)."""

    label: str
    spec: RunSpec
    select_on: str | None
    validation: dict[str, float | None]
    trials: list[RunSpec]


def validation_score(run: dict[str, Any]) -> tuple[str, float, bool] | None:
    """``(metric, value, higher_is_better)`` of a run's validation-selected round, or None."""
    sel = run.get("selection")
    if not sel:
        return None
    return sel["select_on"], float(sel[sel["select_on"]]), bool(sel["higher_is_better"])


def validation_values(runs: Sequence[dict[str, Any]]) -> list[float]:
    """The validation figure of each run that has a selected round (:func:`validation_score`)."""
    return [sc[1] for r in runs if (sc := validation_score(r)) is not None]


def choose_on_validation(cands: Candidates, out: Path, before: Sequence[RunSpec] = (),
                         **run_kwargs: Any) -> Choice:
    """Run every candidate's trial (resumable, as :func:`run_all`) and choose on validation.

    ``before``: runs already made (earlier choices' trials): a trial with the same effective
    configuration reuses one instead of running again. With ``run_missing=False`` only
    finished trials compete; with none finished the first candidate is returned (and the
    report says the choice is not made yet)."""
    trials = [cands.trial(label) for label in cands.options]
    res = run_all([*before, *trials], out, **run_kwargs)
    scores = {label: validation_score(res[t.key][0]) if t.key in res else None
              for label, t in zip(cands.options, trials, strict=True)}
    done = {label: sc for label, sc in scores.items() if sc is not None}
    if not done:
        first = next(iter(cands.options))
        return Choice(first, cands.spec(first), None, dict.fromkeys(scores), trials)
    names = {sc[0] for sc in done.values()}
    if len(names) != 1:
        raise FedrecError(f"{cands.key}: candidates select on different metrics {sorted(names)}")
    sign = -1.0 if next(iter(done.values()))[2] else 1.0
    order = list(cands.options)
    best = min(done, key=lambda label: (sign * done[label][1], order.index(label)))
    return Choice(best, cands.spec(best), names.pop(),
                  {label: sc[1] if sc else None for label, sc in scores.items()}, trials)


def _resolved(spec: RunSpec, seed: int) -> RunConfig:
    """The configuration ``spec`` runs with at ``seed``, resolved as ``fedrec run`` resolves it
    (the config class's defaults, the dataset's packaged section, the overrides): what a run
    stores (as a dict) as ``config``."""
    from fedrec.engines.common import resolve

    return resolve(spec.algorithm, spec.dataset, None, {**spec.overrides, "seed": seed},
                   spec.preset)[1]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return a == b


def status_of(out: Path, spec: RunSpec) -> str:
    """``complete``, ``failed: REASON`` or ``not run`` for each seed of ``spec``, joined."""
    states = []
    for seed in spec.seeds:
        folder = out / "runs" / spec.key / f"seed-{seed}"
        if (folder / RESULTS_NAME).is_file():
            states.append("complete")
        elif (folder / SAME_AS_NAME).is_file():
            states.append("same run as " + (folder / SAME_AS_NAME).read_text().strip())
        elif (folder / FAILED_NAME).is_file():
            states.append("failed: " + json.loads((folder / FAILED_NAME).read_text())["error"])
        else:
            states.append("not run")
    return "; ".join(f"seed {s}: {st}" for s, st in zip(spec.seeds, states, strict=True))
