"""Running one experiment: build, train round by round, checkpoint, evaluate, write results.

The round loop itself, :func:`run_rounds`, is every engine's: ``fedrec run``
(:func:`run_experiment`, with checkpoints and a progress bar), the in-process simulation
(:func:`fedrec.engines.common.simulate`) and the Flower ServerApp (a per-round callback).

The results file (``results.json``) is written once, at the end, with ``"status": "complete"``;
a run that stops early leaves only its last checkpoint (``checkpoint.pt``, written atomically
after every round), from which ``resume=True`` continues and ends with the same result as an
uninterrupted run (all randomness is keyed by (key, round, party), see
:mod:`fedrec.core.rng`; the clients' keys come from the experimenter's client secret,
kept in the checkpoint, see :mod:`fedrec.federation.secrets`).

The checkpoint records what the run was made from (:func:`made_from`: algorithm, resolved
configuration, dataset name and options, the fingerprint of the loaded data); a resume that
differs in any of them is refused (:func:`check_resume`) before anything in the output directory
is touched. Everything that can be checked without the data (the configuration, the output
directory, the checkpoint's record) is checked before the data is loaded.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from fedrec.algorithms import get_algorithm, resolve_config
from fedrec.algorithms.base import VAL_PREFIX, Trainer, evaluate_splits
from fedrec.config import RunConfig, to_dict, with_new_defaults
from fedrec.data import is_user_file, load_dataset
from fedrec.data.catalog import get_spec
from fedrec.data.fingerprint import fingerprint
from fedrec.data.types import Dataset, GraphDataset, InteractionDataset, RatingDataset
from fedrec.errors import ConfigError, ResumeRefused
from fedrec.federation.checkpoint import CHECKPOINT_NAME, load_checkpoint, save_checkpoint
from fedrec.federation.runtime import seed_everything
from fedrec.federation.secrets import ClientSecrets
from fedrec.privacy.report import no_guarantee
from fedrec.tracking import TensorBoardLog, summary_writer_class

RESULTS_NAME = "results.json"
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

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT,
            "status": self.status,
            "algorithm": self.algorithm,
            "dataset": self.dataset,
            "dataset_options": self.dataset_options,
            "config": self.config,
            "seed": self.config.get("seed"),
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


def dataset_kind(ds: object) -> str:
    if isinstance(ds, RatingDataset):
        return "rating"
    if isinstance(ds, InteractionDataset):
        return "interaction"
    if isinstance(ds, GraphDataset):
        return "graph"
    raise TypeError(type(ds).__name__)


def resolve_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda was asked for but no CUDA device is available")
    try:
        return torch.device(name)
    except RuntimeError:
        raise ConfigError(f"unknown device {name!r}; use cpu or cuda") from None


def check_out_dir(out: Path, create: bool = True) -> None:
    """Raise ConfigError unless the run can write its files into ``out``: a directory (created
    when ``create``), writable, where none of the files it writes is a directory."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output directory {out} is a file, not a directory")
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"output directory {out} cannot be made: {existing} is a file")
    if create:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"output directory {out} cannot be made ({exc.strerror})") from None
    if out.is_dir() and not os.access(out, os.W_OK | os.X_OK):
        raise ConfigError(f"output directory {out} is not writable")
    for name in (RESULTS_NAME, RESULTS_NAME + ".tmp", CHECKPOINT_NAME):
        if (out / name).is_dir():
            raise ConfigError(f"{out / name} is a directory; the run writes a file there")


def made_from(
    algorithm: str, cfg: RunConfig, dataset: str, dataset_options: dict[str, Any],
    data: Dataset | None = None,
) -> dict[str, Any]:
    """What a run is made from, as its checkpoint records it and :func:`check_resume` compares.

    ``data_sha256`` (:func:`fedrec.data.fingerprint.fingerprint` of the loaded data) is there
    only when ``data`` is given: the record without it is compared before the data is loaded.
    """
    record: dict[str, Any] = {
        "algorithm": algorithm,
        "dataset": dataset,
        "dataset_options": dict(dataset_options),
        "config": to_dict(cfg),
    }
    if data is not None:
        record["data_sha256"] = fingerprint(data)
    return record


def check_resume(stored: dict[str, Any], record: dict[str, Any], out: Path | None,
                 cfg: RunConfig | None = None) -> None:
    """Raise :class:`ResumeRefused` naming the first entry of ``record`` (a :func:`made_from`)
    that the checkpoint ``stored`` records differently; entries ``record`` lacks are not
    compared. With ``cfg`` (the run's config), options that the checkpoint's config lacks count
    as their defaults (:func:`fedrec.config.with_new_defaults`: an option added since)."""
    then = stored.get("made_from")
    if not isinstance(then, dict):
        raise ResumeRefused(f"--resume refused: the checkpoint in {out} does not record what its "
                            "run was made from (an older fedrec wrote it); run without --resume")
    for key, now in record.items():
        old = then.get(key, _ABSENT)
        if key == "config" and cfg is not None and isinstance(old, dict):
            old = with_new_defaults(old, cfg)
        if key in _NAMED_BY_ENTRY and isinstance(old, dict):
            # Options are named as --set names them: "rounds is 20 in the checkpoint, 10 now".
            diffs = [(_NAMED_BY_ENTRY[key] + k, old.get(k, _ABSENT), now.get(k, _ABSENT))
                     for k in [*now, *(k for k in old if k not in now)]
                     if old.get(k, _ABSENT) != now.get(k, _ABSENT)]
        elif old == now:
            diffs = []
        elif key == "data_sha256":  # a digest's head identifies it
            diffs = [("the data's sha256", f"{str(old)[:12]}...", f"{now[:12]}...")]
        else:
            diffs = [(key, old, now)]
        if diffs:
            name, a, b = diffs[0]
            more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
            raise ResumeRefused(f"--resume refused: {name} is {_shown(a)} in the checkpoint, "
                                f"{_shown(b)} now{more}")


_ABSENT = object()
#: Record entries compared entry by entry, and the prefix naming one of their entries.
_NAMED_BY_ENTRY = {"config": "", "dataset_options": "dataset option "}


def _shown(value: Any) -> str:
    return "not set" if value is _ABSENT else str(value)


def check_clients_per_round(cfg: RunConfig, ds: Dataset) -> None:
    """Raise ConfigError when ``clients_per_round`` asks for more clients than ``ds`` has (one
    client per user with training data); 0 means all of them."""
    if isinstance(ds, GraphDataset):
        return
    clients = len(ds.user_ids())
    if cfg.clients_per_round > clients:
        raise ConfigError(
            f"clients_per_round is {cfg.clients_per_round} but {ds.name} has {clients} clients "
            f"(users with training data); use at most {clients}, or 0 for all"
        )


def run_experiment(
    algorithm: str,
    dataset: str | os.PathLike[str],
    *,
    data_dir: str | Path | None = None,
    config_file: str | Path | None = None,
    overrides: list[str] | dict[str, Any] = (),  # type: ignore[assignment]
    out_dir: str | Path | None = None,
    resume: bool = False,
    device: str = "cpu",
    progress: bool = True,
    stop_after: int | None = None,
    client_secrets: ClientSecrets | None = None,
    dataset_options: dict[str, Any] | None = None,
    log_dir: str | Path | None = None,
    checkpoint_every: int = 1,
) -> RunResult:
    """Train ``algorithm`` on ``dataset``; see the module docstring for files and resuming.

    ``dataset``: a catalogue name or a user's file (:func:`~fedrec.data.load_dataset`); the run
    of a file also writes :data:`ID_MAP_NAME` (its raw ids) beside ``results.json``.

    ``client_secrets``: the experimenter's root of every client's private randomness
    (:mod:`fedrec.federation.secrets`); None draws fresh OS entropy, and the run is then not
    reproducible (a resumed run continues with the checkpoint's root).

    ``dataset_options`` go to :func:`~fedrec.data.load_dataset` (e.g. ``{"split": "random"}``).

    ``log_dir``: also write a TensorBoard log of every round there
    (:class:`fedrec.tracking.TensorBoardLog`; needs the ``tensorboard`` extra).

    ``checkpoint_every``: write the checkpoint after every this many rounds (and each
    evaluated round) instead of every round (:class:`RoundCheckpoint`).

    ``stop_after`` ends the run after that many rounds *as if interrupted* (no results file):
    it exists to test resuming.
    """
    check_checkpoint_every(checkpoint_every)  # before the data is loaded
    reset_peak_rss()  # this run's peak memory, not an earlier run's in the same process
    spec = get_algorithm(algorithm)
    cfg: RunConfig = resolve_config(algorithm, dataset, config_file, overrides)
    dev = resolve_device(device)
    user_file = is_user_file(dataset)
    dataset = os.fspath(dataset)
    if not user_file:  # a user's file says its kind once it is read
        check_kind(algorithm, spec.dataset_kinds, dataset, get_spec(dataset).kind)
    options = dict(dataset_options or {})
    if log_dir is not None:
        summary_writer_class()  # a missing extra is said before the data is loaded
    out = Path(out_dir) if out_dir is not None else None
    if resume and out is None:
        raise ConfigError("--resume needs --out DIR (where the checkpoint is)")
    stored = None
    if out is not None:
        check_out_dir(out, create=not resume)
        if resume:
            stored = load_checkpoint(out / CHECKPOINT_NAME)
            check_resume(stored, made_from(algorithm, cfg, dataset, options), out, cfg)
    ds = load_dataset(Path(dataset) if user_file else dataset, data_dir, download=True,
                      **options)
    if user_file:
        check_kind(algorithm, spec.dataset_kinds, dataset, dataset_kind(ds))
    check_clients_per_round(cfg, ds)
    # Only a run with a checkpoint needs the record (the fingerprint is a pass over the data).
    record = made_from(algorithm, cfg, dataset, options, ds) if out is not None else {}
    if stored is not None:
        check_resume(stored, record, out, cfg)
    # Opened before the seeding, so that nothing it does can touch a seeded generator.
    log = (TensorBoardLog(log_dir, stored["history"] if stored is not None else ())
           if log_dir is not None else None)
    try:
        seed_everything(cfg.seed)
        trainer = spec.trainer(cfg, ds, dev, client_secrets)
        result = RunResult(algorithm, dataset, to_dict(cfg), dataset_options=dict(options))
        checkpoint = None
        if out is not None:
            # Only now, with every check passed: a refused run leaves a finished result in place.
            (out / RESULTS_NAME).unlink(missing_ok=True)
            checkpoint = RoundCheckpoint(out / CHECKPOINT_NAME, record, resume_from=stored,
                                         every=checkpoint_every)
        run_rounds(trainer, cfg, result, checkpoint=checkpoint,
                   progress=f"{algorithm}/{dataset}" if progress else None,
                   on_round=log.on_round if log is not None else None, stop_after=stop_after)
        if log is not None and result.status == "complete":
            log.finish(result.privacy)
    finally:
        if log is not None:
            log.close()
    if out is not None and result.status == "complete":
        tmp = out / (RESULTS_NAME + ".tmp")
        tmp.write_text(json.dumps(result.to_json(), indent=2, default=float))
        tmp.replace(out / RESULTS_NAME)
        if user_file:
            write_id_map(out, ds)
    return result


ID_MAP_NAME = "id_map.json"


def write_id_map(out: Path, ds: Dataset) -> None:
    """``ID_MAP_NAME`` in ``out``: the raw ids of a user's file by dense id
    (``{"user_ids": [...], "item_ids": [...]}``, entry ``u`` the raw id of dense id ``u``; a
    user's graph: ``node_ids`` and ``class_names`` where its files name them), so that what a
    run reports per user, item, node or class can be named in the file's own ids."""
    keys = ("user_ids", "item_ids", "node_ids", "class_names")
    ids = {key: ds.meta[key].tolist() for key in keys if key in ds.meta}
    tmp = out / (ID_MAP_NAME + ".tmp")
    tmp.write_text(json.dumps(ids))
    tmp.replace(out / ID_MAP_NAME)


def check_kind(algorithm: str, kinds: tuple[str, ...], dataset: str, kind: str) -> None:
    """ConfigError unless ``algorithm`` (working on ``kinds``) can run on ``kind`` data."""
    if kind not in kinds:
        raise ConfigError(f"{algorithm} works on {'/'.join(kinds)} data; {dataset} is {kind}")


def check_checkpoint_every(every: int) -> None:
    if every < 1:
        raise ConfigError(f"checkpoint_every must be at least 1, got {every}")


@dataclass
class RoundCheckpoint:
    """The round loop's checkpoint: written to ``path`` with the run's :func:`made_from`
    record after every ``every``-th round, every evaluated round and the last round;
    ``resume_from``, a checkpoint loaded from there, is the state the loop continues from
    (None: a fresh run from round 1).

    ``every`` 1 (the default) loses no completed round to an interruption. A larger one trades
    that for time where writing every client's state costs as much as a round (Gowalla's
    FedGRec: ~2.2 s of checkpoint against ~2.3 s of round): an interruption then loses up to
    ``every - 1`` rounds, which a resumed run trains again, to the same result (its state is
    the checkpoint's, and every draw is keyed by round)."""

    path: Path
    made_from: dict[str, Any]
    resume_from: dict[str, Any] | None = None
    every: int = 1

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
    result.privacy = trainer.privacy_report() or no_guarantee(
        protection="none (centralized: all data at one party)",
        leakage="the trainer holds every rating")
    reproducible = trainer.reproducible()
    if reproducible is not None:
        result.privacy["client_randomness"] = (
            "keyed by the experimenter's client secret (reproducible with it)" if reproducible
            else "fresh OS entropy (not reproducible: give --client-secret to repeat a run)")
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


_SHOWN = ("rmse", "Recall@20", "NDCG@20", "accuracy", "f1_micro")


def _progress(it: range, desc: str):
    from tqdm import tqdm

    return tqdm(it, desc=desc, unit="round", file=sys.stderr, dynamic_ncols=True)
