"""Comparing finished runs: what ``fedrec results DIR...`` prints.

:func:`find_runs` reads every completed ``results.json`` under some folders (or the files
named). :func:`render` prints them as text: a table per dataset and set of metrics reported
(:func:`tables`: every metric column filled; rating and ranking runs apart), a row per run with
its folder, algorithm, the options that differ between the table's runs (abbreviated,
:func:`abbreviations`, with what the short names stand for under the table), the round chosen
on validation of the rounds run, the test metrics there to 4 significant digits
(:func:`fedrec.reproduce.report.at_selected_round`; a run without a validation split: its last
round), the whole-run epsilon (:func:`fedrec.privacy.run_epsilon`; "none": no formal
guarantee), the bytes sent each way and wall seconds. Its markdown form is README's results
table: one table, with the command that re-makes each run (:func:`run_command`).
:func:`run_labels` names the runs in the plot's legend (:mod:`fedrec.reproduce.compare_plot`).
Everything shown is read from the files; nothing is recomputed.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import VAL_PREFIX
from fedrec.config import option_flags, to_dict
from fedrec.errors import ConfigError, FedrecError
from fedrec.experiment import RESULTS_NAME
from fedrec.privacy.report import run_epsilon
from fedrec.reproduce.report import at_selected_round, format_bytes, markdown_table
from fedrec.rounds import RESULTS_FORMAT, reported_round

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
        run_labels([run])
        for m in test_metrics([run]):
            curves(run, m)
    except FedrecError as exc:
        return f"{run.path}: cannot be shown ({exc})"
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        return f"{run.path}: a field of the wrong type ({type(exc).__name__}: {exc})"
    return None


def _shown(value: Any) -> str:
    """An option's value as the table and the legend show it: a float in at most 6 significant
    digits, a string as it is, anything else as compact JSON (``[64,64]``, ``true``)."""
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def differing_settings(runs: Sequence[Run]) -> list[str]:
    """The config and dataset options (``data.KEY``) and the preset whose values differ among
    the runs that have them, in first-seen order. An option of one algorithm only, the same in
    all its runs, is left out: the algorithm column already tells those runs apart."""
    values: dict[str, set[str]] = {}
    for r in runs:
        for key, value in _settings(r).items():
            values.setdefault(key, set()).add(json.dumps(value, sort_keys=True))
    return [k for k, seen in values.items() if len(seen) > 1]


def _settings(run: Run) -> dict[str, Any]:
    return {"preset": run.result.get("preset") or "none", **run.result.get("config", {}),
            **{f"data.{k}": v for k, v in run.result.get("dataset_options", {}).items()}}


def abbreviations(keys: Iterable[str]) -> dict[str, str]:
    """The short name of each option key that tables and legends show: a key of several
    snake_case words by their initials (``clients_per_round``: ``cpr``, ``data.split_seed``:
    ``data.ss``), any other as it is. Keys whose short names would coincide (with each other or
    with a key shown whole) stay whole, so a short name stands for one key."""
    short: dict[str, str] = {}
    for key in dict.fromkeys(keys):
        prefix, dot, name = key.rpartition(".")
        words = name.split("_")
        short[key] = prefix + dot + "".join(w[:1] for w in words) if len(words) > 1 else key
    taken = Counter(short.values())
    return {k: s if taken[s] == 1 else k for k, s in short.items()}


def options_text(run: Run, keys: Sequence[str], short: dict[str, str]) -> str:
    """``run``'s values of ``keys`` (those it has) as ``short=value`` separated by spaces."""
    settings = _settings(run)
    return " ".join(f"{short.get(k, k)}={_shown(settings[k])}" for k in keys if k in settings)


def abbreviated(short: dict[str, str], width: int | None = None) -> str:
    """What the short names in ``short`` (key: short name) stand for ("" if none): one line, or
    lines of at most ``width`` characters broken between names."""
    pairs = [f"{s}\xa0=\xa0{k}" for k, s in short.items() if s != k]  # no break inside a pair
    text = "options: " + ", ".join(pairs) if pairs else ""
    return (textwrap.fill(text, width) if width else text).replace("\xa0", " ")


def run_labels(runs: Sequence[Run]) -> tuple[list[str], dict[str, str]]:
    """Each run's name in a legend, and the option keys with their short names
    (:func:`abbreviations`).

    A run is named by its algorithm, then the options (:func:`differing_settings`) that differ
    among the runs of its algorithm on its dataset: what tells it apart from the other lines of
    its panels (another algorithm's are told apart by the name; another dataset's are in other
    panels). Never the folder. Runs of one algorithm and dataset with the same options (copies)
    are numbered ``#2``, ``#3``, ... in path order."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        groups.setdefault(_method_dataset(r), []).append(r)
    keys = {g: differing_settings(members) for g, members in groups.items()}
    short = abbreviations(k for ks in keys.values() for k in ks)
    labels: list[str] = []
    seen: Counter[tuple[tuple[str, str], str]] = Counter()
    for r in runs:
        group = _method_dataset(r)
        label = " ".join(filter(None, [group[0], options_text(r, keys[group], short)]))
        seen[group, label] += 1
        labels.append(label if seen[group, label] == 1 else f"{label} #{seen[group, label]}")
    return labels, short


def _method_dataset(run: Run) -> tuple[str, str]:
    return str(run.result.get("algorithm")), str(run.result.get("dataset"))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}"


def significant(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits, trailing zeros kept (``0.7400``); a whole
    number below ``10**digits`` as it is."""
    if float(value).is_integer() and abs(value) < 10**digits:
        return str(int(value))
    text = f"{value:#.{digits}g}"
    return text if "e" in text else text.rstrip(".")


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


def reported(result: dict[str, Any]) -> dict[str, Any] | None:
    """The round a run reports (``results.json["reported_round"]``, or made from its selection
    and history for a run written before that field, :func:`fedrec.rounds.reported_round`)."""
    return result.get("reported_round") or reported_round(result.get("selection"),
                                                          result.get("history") or [])


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


@dataclass(frozen=True)
class Table:
    """One table of the text comparison: the runs on ``dataset`` whose shown round reports
    exactly ``metrics`` (of those asked for)."""

    dataset: str
    metrics: tuple[str, ...]
    runs: list[Run]


def tables(runs: Sequence[Run], metrics: Sequence[str] | None = None) -> list[Table]:
    """The runs split into tables whose every metric column is filled: one per dataset and set
    of metrics reported (of ``metrics``, default :func:`test_metrics`; rating runs report rmse
    and mae, ranking runs Recall@20, ...), a dataset's tables together, first seen first.
    ``--metrics rmse`` puts every run that reports rmse into one table."""
    wanted = list(metrics) if metrics is not None else test_metrics(runs)
    groups: dict[tuple[str, tuple[str, ...]], list[Run]] = {}
    for r in runs:
        shown = at_selected_round(r.result)
        have = tuple(m for m in wanted if isinstance(shown.get(m), int | float))
        groups.setdefault((_method_dataset(r)[1], have), []).append(r)
    datasets = list(dict.fromkeys(d for d, _ in groups))
    ordered = sorted(groups.items(), key=lambda g: datasets.index(g[0][0]))  # stable
    return [Table(d, have, members) for (d, have), members in ordered]


def common_folder(runs: Sequence[Run]) -> Path | None:
    """The folder all the runs' folders are under (``results`` for ``results/a`` and
    ``results/b``), or None (none in common, or the current one)."""
    try:
        common = Path(os.path.commonpath([r.path.parent.parent for r in runs]))
    except ValueError:  # absolute and relative paths mixed
        return None
    return None if common == Path() else common


def _selected_on(runs: Sequence[Run]) -> str | None:
    """The validation metric every run chose its round on, or None (mixed, or none chose)."""
    ons = {(reported(r.result) or {}).get("select_on") for r in runs}
    return ons.pop() if len(ons) == 1 else None


#: The widest line of a text table's options cell (longer ones wrap onto the next lines).
OPTIONS_WIDTH = 30


def comparison(runs: Sequence[Run], markdown: bool = False,
               metrics: Sequence[str] | None = None,
               base: Path | None = None) -> tuple[list[str], list[list[str]]]:
    """``(headers, rows)`` of the comparison table (module docstring). The metrics (default:
    every test metric the runs report, :func:`test_metrics`) are those of the round each run
    chose on validation (:func:`chosen_round`).

    The markdown table (README's results table) has a row per run with its algorithm and
    dataset and the command that re-makes it. The text table is meant for the runs of one
    :class:`Table` (one dataset): each run named by its folder (relative to ``base``), its
    algorithm, the options that differ between the runs (:func:`abbreviations`; ``rounds``
    has its own column, wrapped at :data:`OPTIONS_WIDTH`), ``round`` as chosen/rounds run
    (the validation metric beside it where the runs chose on different ones), the metrics to
    4 significant digits, epsilon and the bytes sent each way."""
    metrics = list(metrics) if metrics is not None else test_metrics(runs)
    if markdown:
        return _markdown_rows(runs, metrics)
    keys = [k for k in differing_settings(runs) if k != "rounds"]
    short = abbreviations(keys)
    same_rule = _selected_on(runs) is not None
    headers = ["run", "algorithm", "options", "round", *metrics, "epsilon", "up", "down",
               "wall s"]
    rows = []
    for r in runs:
        res = r.result
        shown = at_selected_round(res)
        rep = reported(res) or {}
        eps, _ = run_epsilon(res.get("privacy") or {})
        totals = res.get("communication", {}).get("totals", {})
        rule = "" if same_rule else f" ({rep.get('select_on') or 'last'})"
        rows.append([
            str(r.path.parent.relative_to(base)) if base else r.name,
            str(res.get("algorithm")),
            "\n".join(textwrap.wrap(options_text(r, keys, short), OPTIONS_WIDTH,
                                    break_long_words=False)) or "–",
            f"{rep.get('round', '–')}/{res.get('config', {}).get('rounds', '–')}{rule}",
            *(significant(shown[m]) if m in shown else "–" for m in metrics),
            f"{eps:.3g}" if eps is not None else "none",
            format_bytes(totals.get("bytes_up", 0)), format_bytes(totals.get("bytes_down", 0)),
            f"{res.get('wall_time_s', 0.0):,.0f}",
        ])
    return headers, rows


def _markdown_rows(runs: Sequence[Run], metrics: list[str]) -> tuple[list[str], list[list[str]]]:
    headers = ["algorithm", "dataset", "rounds", "chosen round", *metrics, "epsilon", "MiB up",
               "MiB down", "wall s", "command"]
    rows = []
    for r in runs:
        res = r.result
        shown = at_selected_round(res)
        eps, _ = run_epsilon(res.get("privacy") or {})
        totals = res.get("communication", {}).get("totals", {})
        rows.append([
            str(res.get("algorithm")), str(res.get("dataset")),
            str(res.get("config", {}).get("rounds", "–")), chosen_round(res),
            *(_number(shown[m]) if m in shown else "–" for m in metrics),
            f"{eps:.3g}" if eps is not None else "none",
            _mib(totals.get("bytes_up", 0)), _mib(totals.get("bytes_down", 0)),
            f"{res.get('wall_time_s', 0.0):.1f}", f"`{run_command(r)}`",
        ])
    return headers, rows


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest line; a cell of several lines (``\\n``) makes its row as
    many lines high, the row's other cells blank below their first."""
    cells = [[str(c).split("\n") for c in row] for row in [headers, *rows]]
    widths = [max(len(line) for cell in col for line in cell)
              for col in zip(*cells, strict=True)]
    lines = []
    for row in cells:
        for i in range(max(len(cell) for cell in row)):
            lines.append("  ".join((cell[i] if i < len(cell) else "").ljust(w)
                                   for cell, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]]) + "\n"


#: Printed under the text tables: what their columns mean.
KEY = ("round: the round whose test metrics are shown / the rounds run. epsilon: the whole "
       "run's (none: no formal guarantee). up, down: bytes sent to and from the server. "
       "options: those that differ between a table's runs (rounds aside).")


#: The widest a text table is made where it can be: metric columns past it go to another.
WIDTH = 160


def split_columns(headers: Sequence[str], rows: Sequence[Sequence[str]],
                  metrics: Sequence[str]) -> list[tuple[list[str], list[list[str]]]]:
    """A text table of ``metrics`` columns (after ``round``) as tables of at most :data:`WIDTH`
    characters where that can be: the first with every other column and as many metrics as
    fit, then tables of the run column and the next metrics that fit; at least one metric a
    table, so a table wider than that has no other way to be shown."""
    widths = [max(len(line) for cell in col for line in str(cell).split("\n"))
              for col in zip(headers, *rows, strict=True)]
    first = list(headers).index("round") + 1
    todo = list(range(first, first + len(metrics)))
    fixed = [i for i in range(len(headers)) if i not in todo]
    parts = []
    while True:
        take: list[int] = []
        for i in todo:
            cols = [*fixed, *take, i]
            if take and sum(widths[j] for j in cols) + 2 * (len(cols) - 1) > WIDTH:
                break
            take.append(i)
        cols = sorted([*fixed, *take])
        parts.append(([headers[i] for i in cols], [[row[i] for i in cols] for row in rows]))
        todo = todo[len(take):]
        if not todo:
            return parts
        fixed = [0]  # the run column names the rows of the next


def render(runs: Sequence[Run], markdown: bool = False,
           metrics: Sequence[str] | None = None) -> str:
    """The comparison as markdown (one table, :func:`comparison`), or as text: a table per
    dataset and set of metrics (:func:`tables`; metric columns past :data:`WIDTH` characters in
    the next, :func:`split_columns`), each under a line naming its dataset, its runs, the
    folder they are under (:func:`common_folder`) and the rule that chose their round, and over
    what its short option names stand for; then :data:`KEY`."""
    if markdown:
        return markdown_table(*comparison(runs, True, metrics))
    parts = []
    for t in tables(runs, metrics):
        on = _selected_on(t.runs)
        base = common_folder(t.runs)
        title = (f"{t.dataset}: {len(t.runs)} run{'s' if len(t.runs) > 1 else ''}"
                 f"{f' under {base}/' if base else ''}, test metrics at the round "
                 f"{f'chosen on {on}' if on else 'shown in the round column'}")
        note = abbreviated(abbreviations(k for k in differing_settings(t.runs) if k != "rounds"),
                           100)
        shown = split_columns(*comparison(t.runs, metrics=t.metrics, base=base), t.metrics)
        tabled = [text_table(*part).rstrip("\n") for part in shown]
        parts.append("\n".join(filter(None, [title, "\nmore metrics of these runs:\n".join(tabled),
                                              note])) + "\n")
    return "\n".join([*parts, textwrap.fill(KEY, 100) + "\n"])


def curves(run: Run, metric: str) -> tuple[list[int], list[float]]:
    """``(rounds, values)`` of ``metric`` over the evaluated rounds of ``run``'s history."""
    points = [(int(h["round"]), float(h["eval"][metric])) for h in run.result.get("history", [])
              if metric in h.get("eval", {})]
    return [p[0] for p in points], [p[1] for p in points]
