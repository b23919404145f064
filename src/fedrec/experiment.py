"""Running one experiment: build, train round by round, checkpoint, evaluate, write results.

The results file (``results.json``) is written once, at the end, with ``"status": "complete"``;
a run that stops early leaves only its last checkpoint (``checkpoint.pt``, written atomically
after every round), from which ``resume=True`` continues and ends with the same result as an
uninterrupted run (all randomness is keyed by (seed, round, party), see
:mod:`fedrec.federation.rng`).
"""

from __future__ import annotations

import json
import platform
import resource
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from fedrec.algorithms import get_algorithm
from fedrec.algorithms.base import Trainer
from fedrec.config import RunConfig, build_config, to_dict
from fedrec.data import load_dataset
from fedrec.data.types import GraphDataset, InteractionDataset, RatingDataset
from fedrec.errors import ConfigError, FedrecError
from fedrec.federation.checkpoint import CHECKPOINT_NAME, load_checkpoint, save_checkpoint
from fedrec.federation.runtime import seed_everything
from fedrec.privacy.report import no_guarantee

RESULTS_NAME = "results.json"


@dataclass
class RunResult:
    algorithm: str
    dataset: str
    config: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, float] = field(default_factory=dict)
    communication: dict[str, Any] = field(default_factory=dict)
    privacy: dict[str, Any] | None = None
    wall_time_s: float = 0.0
    peak_rss_mib: float = 0.0
    status: str = "running"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "algorithm": self.algorithm,
            "dataset": self.dataset,
            "config": self.config,
            "seed": self.config.get("seed"),
            "final": self.final,
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


def run_experiment(
    algorithm: str,
    dataset: str,
    *,
    data_dir: str | Path | None = None,
    config_file: str | Path | None = None,
    overrides: list[str] | dict[str, Any] = (),  # type: ignore[assignment]
    out_dir: str | Path | None = None,
    resume: bool = False,
    device: str = "cpu",
    progress: bool = True,
    stop_after: int | None = None,
) -> RunResult:
    """Train ``algorithm`` on ``dataset``; see the module docstring for files and resuming.

    ``stop_after`` ends the run after that many rounds *as if interrupted* (no results file):
    it exists to test resuming.
    """
    spec = get_algorithm(algorithm)
    cfg: RunConfig = build_config(spec.config_cls, algorithm, dataset, config_file, overrides)
    dev = resolve_device(device)
    ds = load_dataset(dataset, data_dir, download=True)
    kind = dataset_kind(ds)
    if kind not in spec.dataset_kinds:
        raise ConfigError(
            f"{algorithm} works on {'/'.join(spec.dataset_kinds)} data; {dataset} is {kind}"
        )
    seed_everything(cfg.seed)
    trainer = spec.build(cfg, ds, dev)
    result = RunResult(algorithm, dataset, to_dict(cfg))
    out = Path(out_dir) if out_dir is not None else None
    start_round, elapsed_before = 1, 0.0
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / RESULTS_NAME).unlink(missing_ok=True)
        if resume:
            state = load_checkpoint(out / CHECKPOINT_NAME)
            if state["config"] != result.config or state["algorithm"] != algorithm:
                raise FedrecError(
                    f"checkpoint in {out} was made with a different algorithm or configuration"
                )
            trainer.load_state_dict(state["trainer"])
            result.history = state["history"]
            start_round = state["round"] + 1
            elapsed_before = state["elapsed"]
    elif resume:
        raise ConfigError("--resume needs --out DIR (where the checkpoint is)")

    t0 = time.perf_counter()
    bar = _progress(range(start_round, cfg.rounds + 1), progress, f"{algorithm}/{dataset}")
    for rnd in bar:
        t_round = time.perf_counter()
        row: dict[str, Any] = {"round": rnd, "train": trainer.train_round(rnd)}
        if rnd % cfg.eval_every == 0 or rnd == cfg.rounds:
            row["eval"] = trainer.evaluate()
            if hasattr(bar, "set_postfix"):
                bar.set_postfix({k: f"{v:.4g}" for k, v in row["eval"].items() if k in _SHOWN})
        # Evaluation traffic is metered too: it is in this round's totals, under its own step.
        row["communication"] = trainer.ledger.totals(rnd)
        row["time_s"] = time.perf_counter() - t_round
        result.history.append(row)
        if out is not None:
            save_checkpoint(out / CHECKPOINT_NAME, {
                "algorithm": algorithm, "config": result.config, "round": rnd,
                "trainer": trainer.state_dict(), "history": result.history,
                "elapsed": elapsed_before + time.perf_counter() - t0,
            })
        if stop_after is not None and rnd >= stop_after and rnd < cfg.rounds:
            result.status = "interrupted"
            return result
    finish_result(result, trainer, t0, elapsed_before)
    if out is not None:
        tmp = out / (RESULTS_NAME + ".tmp")
        tmp.write_text(json.dumps(result.to_json(), indent=2, default=float))
        tmp.replace(out / RESULTS_NAME)
    return result


def finish_result(
    result: RunResult, trainer: Trainer, t0: float, elapsed_before: float = 0.0
) -> RunResult:
    """Complete ``result`` after its last round: the last evaluation, the ledger's totals, the
    privacy report, the wall time (``elapsed_before`` plus the time since ``t0``, a
    :func:`time.perf_counter` reading) and status ``complete``. Every engine ends a run so."""
    result.final = next((h["eval"] for h in reversed(result.history) if "eval" in h), {})
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
    result.wall_time_s = elapsed_before + time.perf_counter() - t0
    # The process's peak resident memory (Linux reports KiB): an upper bound on the run's own.
    result.peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result.status = "complete"
    return result


_SHOWN = ("rmse", "Recall@20", "NDCG@20", "accuracy", "f1_micro")


def _progress(it: range, enabled: bool, desc: str):
    if not enabled:
        return it
    from tqdm import tqdm

    return tqdm(it, desc=desc, unit="round", file=sys.stderr, dynamic_ncols=True)
