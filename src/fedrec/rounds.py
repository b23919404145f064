"""The round loop every engine shares, and the result it fills.

:func:`run_rounds` is the loop of ``fedrec run`` (:func:`fedrec.experiment.run_experiment`, with
checkpoints and a progress bar), of the in-process simulation
(:func:`fedrec.engines.common.simulate`) and of the Flower ServerApp (a per-round callback); every
engine ends a run with :func:`finish_result`, so every engine produces the same
:class:`RunResult`. The loop's checkpoint (:class:`RoundCheckpoint`) is written atomically after
the rounds it names; a loop given one to resume from continues to the same result as an
uninterrupted run (all randomness is keyed by (key, round, party), see :mod:`fedrec.core.rng`).

What surrounds the loop in ``fedrec run`` -- resolving the configuration, checking the output
directory, loading the data, refusing a resume made from other things, writing results.json --
is :mod:`fedrec.experiment`'s.
"""

from __future__ import annotations

import platform
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from fedrec.algorithms.base import VAL_PREFIX, Trainer, evaluate_splits
from fedrec.config import RunConfig
from fedrec.federation.checkpoint import save_checkpoint
from fedrec.options import RunOptions, check_checkpoint_every
from fedrec.privacy.report import CENTRALIZED

#: What a results.json's figures mean; a reader (the reproduction runner) does not reuse a run of
#: another format. 2: the data carries a validation split carved from the training rows, so a
#: run of format 1 trained on rows that are validation rows now.
RESULTS_FORMAT = 2


@dataclass
class RunResult:
    algorithm: str
    dataset: str
    config: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, float] = field(default_factory=dict)
    selection: dict[str, Any] | None = None
    dataset_options: dict[str, Any] = field(default_factory=dict)
    communication: dict[str, Any] = field(default_factory=dict)
    privacy: dict[str, Any] | None = None
    wall_time_s: float = 0.0
    peak_rss_mib: float = 0.0
    status: str = "running"
    config_sources: dict[str, str] = field(default_factory=dict)  # fedrec.config.config_sources
    #: What the run ran on (:func:`fedrec.data.provenance.data_record`; None: not recorded).
    data: dict[str, Any] | None = None
    #: The name of the preset the configuration was resolved from (None: none).
    preset: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT,
            "status": self.status,
            "algorithm": self.algorithm,
            "dataset": self.dataset,
            "dataset_options": self.dataset_options,
            "config": self.config,
            "config_sources": self.config_sources,
            "preset": self.preset,
            "data": self.data,
            "seed": self.config.get("seed"),
            "reported_round": reported_round(self.selection, self.history),
            "final": self.final,
            "selection": self.selection,
            "history": self.history,
            "communication": self.communication,
            "privacy": self.privacy,
            "wall_time_s": self.wall_time_s,
            "peak_rss_mib": self.peak_rss_mib,
            "versions": package_versions(),
        }


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("fedrec", "torch", "torch-geometric", "numpy", "dp-accounting", "cryptography"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass
class RoundCheckpoint:
    """The round loop's checkpoint: written to ``path`` with the run's
    :func:`~fedrec.experiment.made_from` record after every ``every``-th round and every
    evaluated round (the last round is one); ``resume_from``, a checkpoint loaded from there, is
    the state the loop continues from (None: a fresh run from round 1).

    ``every`` is :attr:`RunOptions.checkpoint_every <fedrec.options.RunOptions>` (its default,
    and what a larger one trades): an interruption loses up to ``every - 1`` rounds, which a
    resumed run trains again, to the same result (its state is the checkpoint's, and every draw
    is keyed by round)."""

    path: Path
    made_from: dict[str, Any]
    resume_from: dict[str, Any] | None = None
    every: int = RunOptions.checkpoint_every
    #: Files removed just before the first checkpoint this loop writes (a finished run's
    #: ``results.json``: from then on the directory holds this run's state, and nothing stale
    #: may look complete beside it); untouched by a loop that fails, or writes none, before.
    replaces: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        check_checkpoint_every(self.every)

    def due(self, cfg: RunConfig, rnd: int) -> bool:
        """Whether round ``rnd``'s state is written."""
        return rnd % self.every == 0 or is_eval_round(cfg, rnd)


def is_eval_round(cfg: RunConfig, rnd: int) -> bool:
    """The evaluation schedule: every ``eval_every`` rounds, and the last round."""
    return rnd % cfg.eval_every == 0 or rnd == cfg.rounds


def run_rounds(
    trainer: Trainer,
    cfg: RunConfig,
    result: RunResult,
    *,
    checkpoint: RoundCheckpoint | None = None,
    progress: str | None = None,
    on_round: Callable[[dict[str, Any]], None] | None = None,
    stop_after: int | None = None,
) -> RunResult:
    """The round loop of every engine: rounds ``1..cfg.rounds`` of ``trainer``, a history row
    each appended to ``result`` (training statistics, an evaluation where
    :func:`is_eval_round`, the round's ledger totals, its wall time), then
    :func:`finish_result`.

    Hooks, all optional: ``checkpoint`` (saved after the rounds :meth:`RoundCheckpoint.due`
    names; with ``resume_from``, the trainer's state, the history and the elapsed time are
    restored first and the loop starts after the checkpoint's round), ``progress`` (a
    progress bar on stderr with this label),
    ``on_round`` (called with each history row, after its checkpoint). ``stop_after`` ends the
    loop after that round *as if interrupted* (``result.status`` ``"interrupted"``, not
    finished): it exists to test resuming.
    """
    start_round, elapsed_before = 1, 0.0
    stored = checkpoint.resume_from if checkpoint is not None else None
    if stored is not None:
        trainer.load_state_dict(stored["trainer"])
        result.history = stored["history"]
        start_round = stored["round"] + 1
        elapsed_before = stored["elapsed"]
    t0 = time.perf_counter()
    rounds = range(start_round, cfg.rounds + 1)
    bar = _progress(rounds, progress) if progress is not None else rounds
    for rnd in bar:
        t_round = time.perf_counter()
        row: dict[str, Any] = {"round": rnd, "train": trainer.train_round(rnd)}
        if is_eval_round(cfg, rnd):
            row["eval"] = evaluate_splits(trainer)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix({k: f"{v:.4g}" for k, v in row["eval"].items() if k in _SHOWN})
        # Evaluation traffic is metered too: it is in this round's totals, under its own step.
        row["communication"] = trainer.ledger.totals(rnd)
        row["time_s"] = time.perf_counter() - t_round
        result.history.append(row)
        if checkpoint is not None and checkpoint.due(cfg, rnd):
            for stale in checkpoint.replaces:
                stale.unlink(missing_ok=True)
            checkpoint.replaces = ()
            save_checkpoint(checkpoint.path, {
                "made_from": checkpoint.made_from, "round": rnd,
                "trainer": trainer.state_dict(), "history": result.history,
                "elapsed": elapsed_before + time.perf_counter() - t0,
            })
        if on_round is not None:
            on_round(row)
        if stop_after is not None and rnd >= stop_after and rnd < cfg.rounds:
            result.status = "interrupted"
            return result
    return finish_result(result, trainer, t0, elapsed_before)


def finish_result(
    result: RunResult, trainer: Trainer, t0: float, elapsed_before: float = 0.0
) -> RunResult:
    """Complete ``result`` after its last round: the last evaluation, the ledger's totals, the
    privacy report, the wall time (``elapsed_before`` plus the time since ``t0``, a
    :func:`time.perf_counter` reading) and status ``complete``. Every engine ends a run so."""
    result.final = next((h["eval"] for h in reversed(result.history) if "eval" in h), {})
    result.selection = select_round(result.history)
    result.communication = {
        "totals": trainer.ledger.totals(),
        "by_step": trainer.ledger.by_step(),
        "by_role": trainer.ledger.by_role(),
        "rejected": trainer.ledger.rejected,
    }
    # Every result states its privacy: an accountant's figures, or explicitly none.
    report = trainer.privacy() or CENTRALIZED
    reproducible = trainer.reproducible()
    if reproducible is not None:
        report = report.with_caveat("client_randomness", (
            "keyed by the experimenter's client secret (reproducible with it)" if reproducible
            else "fresh OS entropy: not reproducible (--client-secret repeats a run)"))
    result.privacy = report.to_json()
    result.wall_time_s = elapsed_before + time.perf_counter() - t0
    result.peak_rss_mib = peak_rss_mib()
    result.status = "complete"
    return result


def reset_peak_rss() -> None:
    """Start a new peak-memory window for :func:`peak_rss_mib` (Linux: ``clear_refs`` resets
    ``VmHWM``), so that runs made one after another in one process (a reproduction) each
    report their own peak; elsewhere a no-op."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def peak_rss_mib() -> float:
    """The process's peak resident memory since :func:`reset_peak_rss` (Linux ``VmHWM``), else
    since it started (``ru_maxrss``): the run's own peak, or an upper bound on it."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


#: What :func:`select_round` ranks evaluated rounds by, first present first: (validation
#: metric name without the prefix, whether higher is better).
SELECT_ON = (("rmse", False), ("Recall@", True), ("client_Recall@", True), ("accuracy", True),
             ("f1_micro", True))


def select_round(history: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The round a run would be stopped at, chosen on validation metrics only.

    Among the evaluated rounds, the one with the best ``val_<metric>`` (the first of
    :data:`SELECT_ON` the evaluations report; ties go to the earliest round), with its test
    metrics beside it. It is a report: training is not changed. None when no evaluation has
    validation metrics (a dataset loaded with ``val_fraction=0``)."""
    rows = [h for h in history if "eval" in h]
    if not rows:
        return None
    names = [k[len(VAL_PREFIX):] for k in rows[-1]["eval"] if k.startswith(VAL_PREFIX)]
    found = [(n, higher) for prefix, higher in SELECT_ON for n in names
             if n == prefix or (prefix.endswith("@") and n.startswith(prefix))]
    if not found:
        return None
    metric, higher = found[0]
    key = VAL_PREFIX + metric
    scored = [h for h in rows if key in h["eval"]]
    sign = -1.0 if higher else 1.0
    best = min(scored, key=lambda h: (sign * h["eval"][key], h["round"]))
    test = {k: v for k, v in best["eval"].items() if not k.startswith(VAL_PREFIX)}
    return {
        "select_on": key, "higher_is_better": higher, "round": best["round"],
        key: best["eval"][key], "test": test,
        "why": f"{'highest' if higher else 'lowest'} {key} of the {len(scored)} evaluated "
               f"rounds (earliest on a tie); test metrics are never read to choose",
    }


LAST_ROUND_RULE = "the last evaluated round (no validation metrics to choose on)"


def reported_round(selection: dict[str, Any] | None,
                   history: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The round whose metrics a run reports, and the last round's beside it: what
    ``results.json["reported_round"]``, ``fedrec run``'s summary and ``fedrec results`` show.

    ``round``, ``rule`` and ``test`` are :func:`select_round`'s choice (``selection``: the
    round with the best validation metric, its rule stated) with its test metrics, else
    (no validation metrics) the last evaluated round's, with :data:`LAST_ROUND_RULE`;
    ``select_on`` is the validation metric (None then); ``last_round`` is the last evaluated
    round with its test metrics, whichever round was chosen. None when no round was
    evaluated. Test metrics are an evaluation's entries without the ``val_`` prefix."""
    evaluated = [h for h in history if "eval" in h]
    if not evaluated:
        return None
    last = evaluated[-1]
    last_test = {k: v for k, v in last["eval"].items() if not k.startswith(VAL_PREFIX)}
    if selection is None:
        chosen = {"round": last["round"], "rule": LAST_ROUND_RULE, "select_on": None,
                  "test": last_test}
    else:
        on = selection.get("select_on")
        chosen = {"round": selection["round"], "select_on": on, "test": selection["test"],
                  "rule": selection.get("why", f"chosen on {on or 'validation'}")}
    return {**chosen, "last_round": {"round": last["round"], "test": last_test}}


_SHOWN = ("rmse", "Recall@20", "NDCG@20", "accuracy", "f1_micro")


def _progress(it: range, desc: str):
    from tqdm import tqdm

    return tqdm(it, desc=desc, unit="round", file=sys.stderr, dynamic_ncols=True)

