"""The PNG of ``fedrec results DIR... --plot FILE.png``: each run's test metrics over the rounds.

One panel per (dataset, test metric), each with its own axes, in a grid of at most
:data:`COLUMNS` columns: a dataset's panels start a new row, and so do the metrics of each set
reported together (rating runs' rmse and mae, then ranking runs' Recall@20, ...). A line per
run that evaluated the metric, named in one legend under the panels by its algorithm and the
options that tell it apart (:func:`fedrec.reproduce.compare.run_labels`; never its folder), the
same colour in every panel; a star on the round the run chose on validation
(``results.json["reported_round"]``; a run without a validation split has none). The figure is
at most ``COLUMNS * PANEL[0]`` inches wide and :data:`MAX_PANELS_HEIGHT` inches of panels high
(panels shrink in height past that). Everything drawn is read from the files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedrec.errors import ConfigError
from fedrec.reproduce.compare import (
    Run,
    abbreviated,
    curves,
    reported,
    run_labels,
    test_metrics,
)
from fedrec.reproduce.report import save_png

#: Panels in a row, at most.
COLUMNS = 4
#: Width and height of a panel, inches (the PNG has 110 pixels an inch).
PANEL = (4.2, 3.1)
#: The panels' total height past which each panel is made lower, inches.
MAX_PANELS_HEIGHT = 18.0
#: The star marking the round chosen on validation.
CHOSEN = {"marker": "*", "markersize": 13, "markeredgecolor": "black", "linestyle": "none"}


def panels(runs: Sequence[Run]) -> list[list[tuple[str, str]]]:
    """The grid's rows before wrapping: for each dataset (first seen first), a row of
    ``(dataset, metric)`` per set of test metrics its runs report together, each metric once,
    only metrics some run's history evaluated."""
    rows: list[list[tuple[str, str]]] = []
    for dataset in dict.fromkeys(str(r.result.get("dataset")) for r in runs):
        placed: set[str] = set()
        for r in runs:
            if str(r.result.get("dataset")) != dataset:
                continue
            new = [m for m in test_metrics([r]) if m not in placed and curves(r, m)[0]]
            placed.update(new)
            if new:
                rows.append([(dataset, m) for m in new])
    return rows


def plot_curves(runs: Sequence[Run], path: Path) -> list[str]:
    """Draw :func:`figure` of ``runs`` into ``path`` (a PNG); return the test metrics drawn,
    first seen first. A path not ending in ``.png``, no evaluated round or a file that cannot
    be written: a ConfigError."""
    if path.suffix.lower() != ".png":
        raise ConfigError(f"--plot writes a PNG: give a file name ending in .png, not {path}")
    fig = figure(runs)
    try:
        save_png(fig, path)
    except OSError as exc:
        raise ConfigError(f"--plot {path}: cannot be written ({exc.strerror or exc})") from None
    return list(dict.fromkeys(m for row in panels(runs) for _, m in row))


def figure(runs: Sequence[Run]) -> Any:
    """The matplotlib Figure of the module docstring: a panel (an Axes titled
    ``"METRIC, DATASET"``) per entry of :func:`panels`, wrapped at :data:`COLUMNS`, the grid's
    unused cells hidden, one legend. No evaluated round in any history: a ConfigError."""
    rows = panels(runs)
    if not rows:
        raise ConfigError("no evaluated round in the runs' histories to plot")
    columns = min(COLUMNS, max(len(row) for row in rows))
    grid = [row[i:i + columns] for row in rows for i in range(0, len(row), columns)]
    labels, short = run_labels(runs)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    colours = _colours(list(dict.fromkeys(labels)))
    height = min(PANEL[1], MAX_PANELS_HEIGHT / len(grid))
    # The legend's rows under the panels: as many entries a row as its longest label allows.
    marked = _any_chosen(runs)
    entries = [*dict.fromkeys(labels), *(["round chosen on validation"] if marked else [])]
    fit = max(1, min(len(entries), int(columns * PANEL[0] * 11 // (max(map(len, entries)) + 8))))
    per_row = math.ceil(len(entries) / math.ceil(len(entries) / fit))  # rows evenly filled
    note = abbreviated(short)
    legend = 0.2 * math.ceil(len(entries) / per_row) + 0.25 + (0.25 if note else 0)
    fig, axes = plt.subplots(len(grid), columns, squeeze=False,
                             figsize=(columns * PANEL[0], len(grid) * height + legend + 0.5))
    for ax_row, row in zip(axes, grid, strict=True):
        for ax, (dataset, metric) in zip(ax_row, row, strict=False):
            _panel(ax, runs, labels, colours, dataset, metric)
        for ax in ax_row[len(row):]:
            ax.set_axis_off()
    handles = [Line2D([], [], color=colours[lab], marker="o", markersize=4, label=lab)
               for lab in dict.fromkeys(labels)]
    if marked:
        handles.append(Line2D([], [], color="black", markerfacecolor="white", **CHOSEN,
                              label=entries[-1]))
    inches = fig.get_figheight()
    fig.legend(handles=handles, loc="lower center", ncol=per_row, fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, (0.25 if note else 0.05) / inches))
    if note:
        fig.text(0.5, 0.08 / inches, note, ha="center", fontsize=8)
    fig.suptitle(f"{len(runs)} run{'s' if len(runs) > 1 else ''}: test metrics by round")
    fig.tight_layout(rect=(0, legend / inches, 1, 1 - 0.1 / inches))
    return fig


def _panel(ax: Any, runs: Sequence[Run], labels: Sequence[str], colours: dict[str, Any],
           dataset: str, metric: str) -> None:
    """``metric`` on ``dataset`` over the rounds: a line per run that evaluated it, a star on
    its round chosen on validation."""
    for run, label in zip(runs, labels, strict=True):
        xs, ys = curves(run, metric)
        if str(run.result.get("dataset")) != dataset or not xs:
            continue
        ax.plot(xs, ys, marker="o", markersize=3, color=colours[label])
        chosen = _chosen(run, metric, xs, ys)
        if chosen is not None:
            ax.plot(*chosen, color=colours[label], **CHOSEN, zorder=3)
    ax.set_title(f"{metric}, {dataset}", fontsize=10)
    ax.set_xlabel("round")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)


def _chosen(run: Run, metric: str, xs: list[int], ys: list[float]) -> tuple[int, float] | None:
    """The round ``run`` chose on validation and ``metric`` there, or None (no validation
    split, or the metric not evaluated then)."""
    rep = reported(run.result)
    if not rep or rep.get("select_on") is None:
        return None
    at = int(rep["round"])
    if at in xs:
        return at, ys[xs.index(at)]
    value = rep.get("test", {}).get(metric)
    return (at, float(value)) if isinstance(value, int | float) else None


def _any_chosen(runs: Sequence[Run]) -> bool:
    return any((reported(r.result) or {}).get("select_on") is not None for r in runs)


def _colours(labels: Sequence[str]) -> dict[str, Any]:
    """A colour per legend label: tab10's, tab20's past ten labels (repeating past twenty)."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if len(labels) <= 10 else "tab20"]
    return {lab: cmap(i % cmap.N) for i, lab in enumerate(labels)}
