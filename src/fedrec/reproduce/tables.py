"""The tables of hand-written results pages, for their generated blocks
(``<!-- fedrec-generated: table NAME ARG... -->``, :mod:`fedrec.reproduce.blocks`).

Each of :data:`TABLES` renders a markdown table from committed files under the checkout
``root`` (its arguments are paths relative to it) and computes nothing but means and sample
standard deviations over seeds (``statistics.stdev``, n - 1 in the denominator); the prose around
a block stays a person's.
"""

from __future__ import annotations

import inspect
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fedrec.errors import ConfigError
from fedrec.reproduce.bench_pages import read_json
from fedrec.reproduce.report import at_selected_round, markdown_table


def _run(root: Path, folder: str) -> dict[str, Any]:
    return read_json(root, f"{folder}/results.json")


def _mean_std(values: Sequence[float], fmt: str) -> tuple[str, str]:
    """Mean and sample std of ``values`` in ``fmt`` (std blank for a single value)."""
    std = statistics.stdev(values) if len(values) > 1 else None
    return (format(statistics.mean(values), fmt), "" if std is None else format(std, fmt))


def gcn_seeds(root: Path, folder: str) -> str:
    """A run per seed under ``folder`` (``seed*/results.json``): test accuracy after the last
    epoch, the epoch chosen on validation and its test accuracy; then mean (std) over seeds."""
    runs = [_run(root, p.parent.relative_to(root).as_posix())
            for p in sorted((root / folder).glob("seed*/results.json"))]
    if not runs:
        raise ConfigError(f"{folder}: no seed*/results.json")
    last = [r["final"]["accuracy"] for r in runs]
    chosen = [at_selected_round(r)["accuracy"] for r in runs]
    rows = [[r["seed"], f"{a:.3f}", r["selection"]["round"], f"{c:.3f}"]
            for r, a, c in zip(runs, last, chosen, strict=True)]
    (m1, s1), (m2, s2) = _mean_std(last, ".3f"), _mean_std(chosen, ".3f")
    rows.append(["mean (std)", f"{m1} ({s1})", "", f"{m2} ({s2})"])
    epochs = {len(r["history"]) for r in runs}
    return markdown_table(["seed", f"test accuracy, epoch {'/'.join(map(str, sorted(epochs)))}",
                           "epoch chosen on validation", "its test accuracy"], rows)


#: Ledger steps that are not training traffic (evaluation, FedGNN's graph expansion).
NOT_TRAINING = ("evaluate", "expand_")


def _traffic_per_round(run: dict[str, Any]) -> tuple[float, float]:
    """MiB up and down per round over the ledger's training steps (:data:`NOT_TRAINING` left
    out), the mean over the run's rounds."""
    total = {"up": 0, "down": 0}
    for step, v in run["communication"]["by_step"].items():
        if not step.startswith(NOT_TRAINING):
            total["up" if v["direction"] == "up" else "down"] += v["bytes"]
    up, down = total["up"], total["down"]
    rounds = len(run["history"])
    return up / rounds / 2**20, down / rounds / 2**20


def fedgnn_secure_sum(root: Path, folder: str) -> str:
    """FedGNN's pseudo items beside ``item_privacy=secure_sum``: a row per run of
    ``FOLDER/runs.json`` (its command and labels) from ``FOLDER/NAME/results.json``: the test
    metrics at the validation-chosen round, the RMSE at round 40, traffic per round, the median
    round time (``history[].time_s``) and the whole-run and per-coordinate epsilon where the run
    claims local DP. A run not there yet is listed as not finished."""
    from fedrec.privacy import run_epsilon

    rows = []
    for spec in read_json(root, f"{folder}/runs.json")["runs"]:
        labels = [spec["dataset"], spec["item_privacy"], spec["ldp"]]
        if not (root / folder / spec["folder"] / "results.json").is_file():
            rows.append([*labels, "not finished", *[""] * 9, f"`{spec['command']}`"])
            continue
        run = _run(root, f"{folder}/{spec['folder']}")
        up, down = _traffic_per_round(run)
        shown = at_selected_round(run)
        sel = run.get("selection")
        chosen = (f"{sel['round']} ({sel['select_on']})" if sel
                  else "last (older run: no validation split)")
        at40 = next((h["eval"]["rmse"] for h in run["history"]
                     if h["round"] == 40 and h.get("eval")), None)
        eps, _ = run_epsilon(run.get("privacy"))
        coord = (run.get("privacy") or {}).get("epsilon_per_coordinate_per_upload")
        rows.append([*labels, len(run["history"]), chosen, f"{shown['rmse']:.4f}",
                     f"{shown['mae']:.4f}", "" if at40 is None else f"{at40:.4f}",
                     f"{up:,.2f}", f"{down:,.2f}",
                     f"{statistics.median(h['time_s'] for h in run['history']):.1f}",
                     "none" if eps is None else f"{eps:.3g}",
                     "" if coord is None else f"{coord:g} per upload",
                     f"`{spec['command']}`"])
    return markdown_table(
        ["dataset", "item privacy", "LDP", "rounds", "round (chosen on)", "RMSE", "MAE",
         "RMSE @40", "MiB up / round", "MiB down / round", "s / round (median)",
         "epsilon, whole run", "epsilon per coordinate (secondary)", "command"], rows)


def _tuning_runs(root: Path, folder: str) -> list[tuple[str, list[str], dict[str, Any]]]:
    """``(name, settings, results)`` of each run under ``FOLDER/runs``, by name; its settings
    from ``FOLDER/settings.json`` (a run it does not name is a ConfigError)."""
    settings = read_json(root, f"{folder}/settings.json")["settings"]
    out = []
    for path in sorted((root / folder / "runs").glob("*/results.json")):
        name = path.parent.name
        if name not in settings:
            raise ConfigError(f"{folder}/settings.json: no settings for the run {name}")
        out.append((name, settings[name], _run(root, path.parent.relative_to(root).as_posix())))
    return out


def fl_mv_dssm_tuning(root: Path, folder: str, metric: str = "Recall@10") -> str:
    """A row per run under ``FOLDER/runs``: its seed and settings, the round chosen on
    validation ``metric``, that round's validation and test ``metric`` and the wall time."""
    rows = [[name, run["seed"], " ".join(sets) or "(defaults)", run["selection"]["round"],
             f"{run['selection'][f'val_{metric}']:.4f}",
             f"{at_selected_round(run)[metric]:.4f}", f"{run['wall_time_s']:.0f}"]
            for name, sets, run in _tuning_runs(root, folder)]
    return markdown_table(["run", "seed", "settings", "round", f"validation {metric}",
                           f"test {metric}", "wall s"], rows)


def fl_mv_dssm_seeds(root: Path, folder: str, metric: str = "Recall@10") -> str:
    """Mean ± sample std (number of seeds) of the validation-chosen ``metric`` of the settings
    run at more than one seed by both models (``views=[svd]``: FL-DSSM on the SVD view)."""
    groups: dict[str, dict[bool, list[dict[str, Any]]]] = {}
    for _, sets, run in _tuning_runs(root, folder):
        svd = "views=[svd]" in sets
        key = " ".join(s for s in sets if s != "views=[svd]") or "(defaults)"
        groups.setdefault(key, {False: [], True: []})[svd].append(run)

    def cell(runs: list[dict[str, Any]], value: Callable[[dict[str, Any]], float]) -> str:
        mean, std = _mean_std([value(r) for r in runs], ".4f")
        return f"{mean} ± {std} ({len(runs)})"

    rows = []
    for key, by in sorted(groups.items()):
        if min(len(by[False]), len(by[True])) > 1:
            rows.append([key, *(cell(by[svd], f) for svd in (False, True) for f in (
                lambda r: r["selection"][f"val_{metric}"],
                lambda r: at_selected_round(r)[metric]))])
    return markdown_table(["settings", "FL-MV-DSSM validation", "FL-MV-DSSM test",
                           "FL-DSSM (SVD) validation", "FL-DSSM (SVD) test"], rows)


def fl_mv_dssm_complementary(root: Path, folder: str) -> str:
    """Per model of ``FOLDER/complementary-seed-*.json``: mean ± sample std over the seeds of the
    validation and test figure, then each seed's ``validation / test``."""
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for path in sorted((root / folder).glob("complementary-seed-*.json")):
        for model, seeds in read_json(root, path.relative_to(root).as_posix())["runs"].items():
            runs.setdefault(model, {}).update(seeds)
    rows = []
    for model, seeds in runs.items():
        per = [seeds[s] for s in sorted(seeds, key=int)]
        valid, test = (_mean_std([r[k] for r in per], ".4f") for k in ("valid", "test"))
        rows.append([model, f"{valid[0]} ± {valid[1]}", f"{test[0]} ± {test[1]}",
                     ", ".join(f"{r['valid']:.4f} / {r['test']:.4f}" for r in per)])
    return markdown_table(["model", "validation", "test", "per seed"], rows)


#: Every table a block can name, by name: ``table NAME ARG...`` calls ``TABLES[NAME](root,
#: *ARGS)``.
TABLES: dict[str, Callable[..., str]] = {
    "gcn-seeds": gcn_seeds,
    "fedgnn-secure-sum": fedgnn_secure_sum,
    "fl-mv-dssm-tuning": fl_mv_dssm_tuning,
    "fl-mv-dssm-seeds": fl_mv_dssm_seeds,
    "fl-mv-dssm-complementary": fl_mv_dssm_complementary,
}


def render_table(args: Sequence[str], root: Path, page: str) -> str:
    """The table ``args[0]`` of :data:`TABLES` with the arguments ``args[1:]`` (a ConfigError
    naming the page for an unknown table or the wrong arguments)."""
    if not args or args[0] not in TABLES:
        raise ConfigError(f"{page}: a generated `table` block names one of "
                          f"{', '.join(TABLES)}, not {' '.join(args[:1]) or 'none'}")
    table = TABLES[args[0]]
    try:
        inspect.signature(table).bind(root, *args[1:])
    except TypeError as exc:
        raise ConfigError(f"{page}: table {args[0]}: wrong arguments ({exc})") from None
    return table(root, *args[1:])
