"""Turning a reproduction's results into markdown tables and PNG plots.

Every figure written here is computed from the ``results.json`` files of the runs (mean and
sample standard deviation over seeds); published numbers are labelled as such.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedrec import configs
from fedrec.core.files import write_atomic, writing
from fedrec.reproduce.runner import RunSpec, status_of

Results = list[dict[str, Any]]


def write_measured(out: Path, name: str, text: str, what: str, *, quick: bool) -> None:
    """Write ``OUT/name`` (a measurement a run's summary quotes, :mod:`fedrec.configs.measured`)
    and, when ``out`` is this checkout's ``results/<folder>`` and the run is not ``--quick``, the
    packaged copy runs read. A reproduction into any other folder (a user's ``--out``, the
    temporary report-only pass of ``--only``) leaves the package as it is: the package quotes
    the committed results, which a test checks it equals."""
    write_atomic(out / name, text, what)
    checkout = Path(configs.__file__).resolve().parents[3]  # src/fedrec/configs/__init__.py
    if not quick and out.resolve().parent == checkout / "results":
        write_atomic(Path(configs.__file__).parent / name, text, f"the packaged copy of {what}")


def at_selected_round(run: dict[str, Any]) -> dict[str, Any]:
    """A run's test metrics at the round chosen on validation (``results.json["selection"]``),
    or its final metrics where it has no validation split. Training-side figures that the
    selection does not carry (``final`` keys that are not test metrics) are kept."""
    sel = run.get("selection")
    return {**run.get("final", {}), **sel["test"]} if sel else run.get("final", {})


def metric(runs: Results, name: str) -> list[float]:
    """``name`` of each seed's run at its validation-chosen round (:func:`at_selected_round`;
    missing values dropped)."""
    return [float(m[name]) for m in map(at_selected_round, runs) if name in m]


def paired_differences(runs: Results, base: Results, name: str) -> list[float]:
    """``name`` of each seed's run in ``runs`` minus the same seed's in ``base``, at their
    validation-chosen rounds (seeds only one of them has, or without the metric, left out):
    paired by seed, so the spread between seeds is not counted as a difference."""
    by_seed = {r["seed"]: metric([r], name) for r in base}
    return [a[0] - b[0] for r in runs if (a := metric([r], name))
            and (b := by_seed.get(r["seed"]))]


def best_test_metric(runs: Results, name: str, higher_is_better: bool) -> list[float]:
    """Each seed's best *test* ``name`` over its evaluated rounds: what choosing the round on
    the test set would report. Not a result: its distance from :func:`metric` measures the
    optimism of reading the test set to choose."""
    pick = max if higher_is_better else min
    out = []
    for r in runs:
        vals = [float(h["eval"][name]) for h in r.get("history", [])
                if name in h.get("eval", {})]
        if vals:
            out.append(pick(vals))
    return out


def selected_rounds(runs: Results) -> str:
    """The validation-chosen round of each seed's run, ``"r1/r2 of R"`` (``–`` if none)."""
    rounds = [str(r["selection"]["round"]) for r in runs if r.get("selection")]
    if not rounds:
        return "–"
    return "/".join(rounds) + f" of {runs[0]['config']['rounds']}"


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single seed; NaN when empty)."""
    if not values:
        return math.nan, math.nan
    arr = np.asarray(values, dtype=np.float64)
    return float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else 0.0


def fmt(values: Sequence[float], digits: int = 4) -> str:
    """``mean ± std (n)`` of the seeds' values, or ``–`` when there are none."""
    if not values:
        return "–"
    m, s = mean_std(values)
    return f"{m:.{digits}f} ± {s:.{digits}f} ({len(values)})"


def train_bytes_per_round(run: dict[str, Any]) -> float:
    """Bytes of the ``train`` step (both directions) per round, from the run's ledger."""
    by_step = run["communication"]["by_step"]
    total = sum(v["bytes"] for k, v in by_step.items() if k.startswith("train "))
    return total / run["config"]["rounds"]


def format_bytes(n: float) -> str:
    """``n`` bytes in B, KiB, MiB, GiB or TiB (what every summary and table prints)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return str(n)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def command_of(spec: RunSpec) -> str:
    """The ``fedrec run`` command of a setting at seed ``S``, its values written as ``--set``
    reads them (:func:`fedrec.config.option_flags`)."""
    return spec.command() + " --set seed=S"


def finish_report(out: Path, lines: list[str], specs: Iterable[RunSpec]) -> Path:
    """Write ``lines`` and the ``## Runs`` section (each setting's key, its ``fedrec run``
    command and each seed's status) to ``OUT/README.md``; return its path."""
    rows = [[s.key, "`" + command_of(s) + "`", status_of(out, s)] for s in specs]
    out.mkdir(parents=True, exist_ok=True)  # a report-only pass may have run nothing
    path = out / "README.md"
    write_atomic(path, "\n".join([*lines, "## Runs\n",
                                  markdown_table(["key", "command", "status"], rows)]),
                 "the reproduction's report")
    return path


def ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (Student's t, sample std; NaN
    half-width for fewer than two values)."""
    if not values:
        return math.nan, math.nan
    arr = np.asarray(values, dtype=np.float64)
    if len(arr) < 2:
        return float(arr.mean()), math.nan
    from scipy.stats import t

    half = float(t.ppf(0.975, len(arr) - 1) * arr.std(ddof=1) / math.sqrt(len(arr)))
    return float(arr.mean()), half


def fmt_ci(values: Sequence[float], digits: int = 3, signed: bool = False) -> str:
    """``mean ± half-width of the 95% CI (n)``; ``mean (1)`` for one value, ``–`` for none;
    ``signed``: the mean with its sign (a difference)."""
    if not values:
        return "–"
    m, half = ci95(values)
    mean = f"{m:+.{digits}f}" if signed else f"{m:.{digits}f}"
    if half != half:  # one run: no interval
        return f"{mean} ({len(values)})"
    return f"{mean} ± {half:.{digits}f} ({len(values)})"


def plot(path: Path, panels: Sequence[Callable[[Any], None]], title: str) -> None:
    """Draw ``panels`` (each a function of a matplotlib Axes) side by side into ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8), squeeze=False)
    for ax, draw in zip(axes[0], panels, strict=True):
        draw(ax)
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    save_png(fig, path)


def save_png(fig: Any, path: Path) -> None:
    """Render the matplotlib figure ``fig`` as a PNG, close it and write it to ``path``: rendered
    in memory and written whole (a full disk: one line, no half PNG), its folder made."""
    import matplotlib.pyplot as plt

    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    with writing("a plot", path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, png.getvalue(), "a plot")
