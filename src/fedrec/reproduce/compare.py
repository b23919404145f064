"""Comparing finished runs: what ``fedrec results DIR...`` prints and plots.

:func:`find_runs` reads every completed ``results.json`` under some folders (or the files
named); :func:`comparison` makes one row per run: algorithm, dataset, the settings that differ
between the runs, rounds, the round chosen on validation and the test metrics there
(:func:`fedrec.reproduce.report.at_selected_round`; a run without a validation split: its last
round, and an older run says so), the whole-run epsilon (:func:`fedrec.privacy.run_epsilon`;
"none": no formal guarantee), MiB up and down, wall seconds; its markdown form is README's
results table, with the command that re-makes each run (:func:`run_command`).
:func:`plot_curves` draws every test metric of the runs' histories over the rounds. Everything
shown is read from the files; nothing is recomputed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import VAL_PREFIX
from fedrec.config import option_flags, to_dict
from fedrec.errors import ConfigError, FedrecError
from fedrec.experiment import RESULTS_NAME
from fedrec.privacy.report import run_epsilon
from fedrec.reproduce.report import at_selected_round, markdown_table, plot
from fedrec.rounds import RESULTS_FORMAT

#: The suffix of an evaluation's count of clients (``eval_clients``): a count, not a metric.
COUNT = "eval_clients"


@dataclass(frozen=True)
class Run:
    """One completed run: where its ``results.json`` is, and its contents."""

    path: Path
    result: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.path.parent)


def find_runs(dirs: Sequence[str | Path], skipped: list[str] | None = None) -> list[Run]:
    """Every completed run (``"status": "complete"``) whose ``results.json`` is in or under
    ``dirs``, in path order; a missing folder or none found is a ConfigError.

    A file that cannot be read or shown (not JSON, or a field of the wrong type) is a
    ConfigError naming it; given a ``skipped`` list, it is left out instead and the reason,
    naming the file, is appended to the list (``fedrec results`` shows the others and warns)."""
    runs: list[Run] = []
    bad: list[str] = []
    for d in map(Path, dirs):
        if not d.exists():
            raise ConfigError(f"{d}: no such folder")
        files = [d] if d.is_file() else sorted(d.rglob(RESULTS_NAME))
        for f in files:
            try:
                result = json.loads(f.read_text())
            except (OSError, ValueError) as exc:
                problem = f"{f}: not a readable results file ({exc})"
            else:
                if isinstance(result, dict) and result.get("status") != "complete":
                    continue  # a run stopped or still going: not one to compare
                problem = _unshowable(Run(f, result))
                if problem is None:
                    runs.append(Run(f, result))
                    continue
            if skipped is None:
                raise ConfigError(problem)
            bad.append(problem)
    if skipped is not None:
        skipped.extend(bad)
    if not runs:
        left = f" ({len(bad)} unreadable: {bad[0]}{' ...' if len(bad) > 1 else ''})" if bad else ""
        raise ConfigError(f"no completed run (results.json) under {', '.join(map(str, dirs))}"
                          f"{left}")
    return runs


def _unshowable(run: Run) -> str | None:
    """Why ``run`` cannot be shown (a results.json edited or written by something else: a
    field of the wrong type), or None: it is put through the table and the curves alone."""
    if not isinstance(run.result, dict):
        return f"{run.path}: not a results file (a JSON {type(run.result).__name__})"
    try:
        comparison([run])
        comparison([run], markdown=True)
        for m in test_metrics([run]):
            curves(run, m)
    except FedrecError as exc:
        return f"{run.path}: cannot be shown ({exc})"
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        return f"{run.path}: a field of the wrong type ({type(exc).__name__}: {exc})"
    return None


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value)


def differing_settings(runs: Sequence[Run]) -> list[str]:
    """The config and dataset options (``data.KEY``) whose values differ among the runs that
    have them, in first-seen order. An option of one algorithm only, the same in all its runs,
    is left out: the algorithm column already tells those runs apart."""
    values: dict[str, set[str]] = {}
    for r in runs:
        for key, value in _settings(r).items():
            values.setdefault(key, set()).add(json.dumps(value, sort_keys=True))
    return [k for k, seen in values.items() if len(seen) > 1]


def _settings(run: Run) -> dict[str, Any]:
    return {**run.result.get("config", {}),
            **{f"data.{k}": v for k, v in run.result.get("dataset_options", {}).items()}}


_MISSING = object()


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}"


def test_metrics(runs: Sequence[Run]) -> list[str]:
    """The test metrics the runs' final evaluations report (not validation, not the count of
    clients evaluated), first seen first."""
    names: dict[str, None] = {}
    for r in runs:
        names.update(dict.fromkeys(k for k, v in r.result.get("final", {}).items()
                                   if not k.startswith(VAL_PREFIX) and not k.endswith(COUNT)
                                   and isinstance(v, int | float)))
    return list(names)


def chosen_round(result: dict[str, Any]) -> str:
    """Which round a run's metrics are of: the one chosen on validation (``selection``), else
    its last (a run made before the validation split existed, results format 1, says so)."""
    sel = result.get("selection")
    if sel:
        return f"{sel['round']} ({sel['select_on']})"
    return ("last" if result.get("format") == RESULTS_FORMAT
            else "last (no validation split: older run)")


def run_command(run: Run) -> str:
    """The ``fedrec run`` command that re-makes ``run``: its dataset options and the config
    entries that differ from the algorithm's resolved defaults on that dataset (as ``--set``),
    and ``--out`` its folder."""
    res = run.result
    algorithm, dataset = str(res["algorithm"]), str(res["dataset"])
    preset = res.get("preset")
    # Through JSON, as results.json was written (tuples become lists).
    defaults = json.loads(json.dumps(to_dict(resolve_config(algorithm, dataset, preset=preset))))
    opts = option_flags("--data-opt", res.get("dataset_options", {}))
    sets = option_flags("--set", {k: v for k, v in res.get("config", {}).items()
                                  if defaults.get(k) != v})
    named = f" --preset {preset}" if preset else ""
    return (f"fedrec run {algorithm} --dataset {dataset}{named}{opts}{sets} "
            f"--out {run.path.parent}")


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f}"


def comparison(runs: Sequence[Run], markdown: bool = False,
               metrics: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """``(headers, rows)`` of the comparison table (module docstring). The metrics (default:
    every test metric the runs report, :func:`test_metrics`) are those of the round each run
    chose on validation (:func:`chosen_round`). The text table names each run by its folder
    and shows the settings that differ; the markdown one (README's results table) shows the
    command that re-makes each run instead, which names both."""
    settings = differing_settings(runs)
    metrics = list(metrics) if metrics is not None else test_metrics(runs)
    first = [] if markdown else ["run"]
    between = [] if markdown else ["settings"]
    headers = [*first, "algorithm", "dataset", *between, "rounds", "chosen round", *metrics,
               "epsilon", "MiB up", "MiB down", "wall s", *(["command"] if markdown else [])]
    rows = []
    for r in runs:
        res = r.result
        shown = at_selected_round(res)
        eps, _ = run_epsilon(res.get("privacy") or {})
        totals = res.get("communication", {}).get("totals", {})
        named = [] if markdown else [r.name]
        differing = [] if markdown else [
            ", ".join(f"{k}={_shown(v)}" for k in settings
                      if (v := _settings(r).get(k, _MISSING)) is not _MISSING) or "–"]
        rows.append([
            *named, str(res.get("algorithm")), str(res.get("dataset")), *differing,
            str(res.get("config", {}).get("rounds", "–")), chosen_round(res),
            *(_number(shown[m]) if m in shown else "–" for m in metrics),
            f"{eps:.3g}" if eps is not None else "none",
            _mib(totals.get("bytes_up", 0)), _mib(totals.get("bytes_down", 0)),
            f"{res.get('wall_time_s', 0.0):.1f}",
            *([f"`{run_command(r)}`"] if markdown else []),
        ])
    return headers, rows


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=True)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in [headers, *rows]]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]]) + "\n"


def render(runs: Sequence[Run], markdown: bool = False,
           metrics: Sequence[str] | None = None) -> str:
    """The comparison as aligned text, or as a markdown table (:func:`comparison`)."""
    headers, rows = comparison(runs, markdown, metrics)
    return markdown_table(headers, rows) if markdown else text_table(headers, rows)


def curves(run: Run, metric: str) -> tuple[list[int], list[float]]:
    """``(rounds, values)`` of ``metric`` over the evaluated rounds of ``run``'s history."""
    points = [(int(h["round"]), float(h["eval"][metric])) for h in run.result.get("history", [])
              if metric in h.get("eval", {})]
    return [p[0] for p in points], [p[1] for p in points]


def plot_curves(runs: Sequence[Run], path: Path) -> list[str]:
    """One panel per test metric of :func:`test_metrics`, a line per run over its evaluated
    rounds, written to ``path`` (PNG); returns the metrics drawn."""
    if path.suffix.lower() != ".png":
        raise ConfigError(f"--plot writes a PNG: give a file name ending in .png, not {path}")
    metrics = [m for m in test_metrics(runs) if any(curves(r, m)[0] for r in runs)]
    if not metrics:
        raise ConfigError("no evaluated round in the runs' histories to plot")

    def panel(metric: str):
        def draw(ax: Any) -> None:
            for r in runs:
                xs, ys = curves(r, metric)
                if xs:
                    ax.plot(xs, ys, marker="o", markersize=3, label=r.name)
            ax.set_xlabel("round")
            ax.set_ylabel(metric)
            ax.legend(fontsize=7)
        return draw

    try:
        plot(path, [panel(m) for m in metrics], f"{len(runs)} runs")
    except OSError as exc:
        raise ConfigError(f"--plot {path}: cannot be written ({exc.strerror or exc})") from None
    return metrics
