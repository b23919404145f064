"""What ``fedrec run`` and ``fedrec deploy`` share: the summary table they print (their options'
flags are :mod:`fedrec.cli.options`). Importing it is cheap: what the rows need is imported
when they are made."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fedrec.rounds import RunResult


def table(rows: Sequence[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in rows)


def summary_rows(result: RunResult | Mapping[str, Any]) -> list[tuple[str, str]]:
    """The summary ``fedrec run`` and ``fedrec deploy`` print: the preset, the options not at
    their default and where each came from, the data read (:func:`data_rows`), the reported
    round's test metrics with the last round's beside them (:func:`metric_rows`), traffic,
    privacy, wall time. ``result`` is a :class:`~fedrec.rounds.RunResult` or its JSON form."""
    from fedrec.reproduce.report import format_bytes

    r = result if isinstance(result, Mapping) else vars(result)
    totals = r["communication"].get("totals", {})
    rows = [("algorithm", r["algorithm"]), ("dataset", r["dataset"]),
            ("preset", r.get("preset") or "none"), ("rounds", str(r["config"]["rounds"]))]
    rows += config_source_rows(r["config"], r.get("config_sources") or {})
    rows += data_rows(r.get("data"))
    rows += metric_rows(r)
    rows += [
        ("bytes up (clients->services)", format_bytes(totals.get("bytes_up", 0))),
        ("bytes down (services->clients)", format_bytes(totals.get("bytes_down", 0))),
        ("bytes total", format_bytes(totals.get("bytes_total", 0))),
    ]
    rows += privacy_rows(r.get("privacy") or {})
    from fedrec.configs.measured import privacy_cost, robustness

    cost = privacy_cost(r["algorithm"], r["dataset"], r["config"])
    if cost is not None:
        rows.append(("privacy cost", cost))
    resists = robustness(r["algorithm"], r["dataset"], r["config"])
    if resists is not None:
        rows.append(("robustness", resists))
    rows.append(("wall time", f"{r['wall_time_s']:.1f} s"))
    return rows


def _number(v: float) -> str:
    return f"{v:.4f}" if not float(v).is_integer() else str(int(v))


def metric_rows(r: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The round whose metrics are shown, with the rule that chose it, then a row per test
    metric there with the last round's value beside it where that is another round
    (``results.json["reported_round"]``, :func:`fedrec.rounds.reported_round`: the round
    chosen on validation, else the last). A result without an evaluated round: its final
    figures as they are."""
    from fedrec.rounds import reported_round

    rep = r.get("reported_round") or reported_round(r.get("selection"), r.get("history") or [])
    if rep is None:
        return [(k, _number(v)) for k, v in r["final"].items() if isinstance(v, int | float)]
    last = rep["last_round"]
    rows = [("reported round", f"{rep['round']}: {rep['rule']}")]
    for k, v in rep["test"].items():
        if not isinstance(v, int | float):
            continue
        then = last["test"].get(k)
        beside = (f"  (last round {last['round']}: {_number(then)})"
                  if last["round"] != rep["round"] and isinstance(then, int | float) else "")
        rows.append((k, _number(v) + beside))
    return rows


def data_rows(data: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """What the run read (``results.json["data"]``, :func:`fedrec.data.provenance.data_record`):
    the name given and the loader, a row per file (its size and the head of its sha256; the
    whole digest is in results.json), or that the data were made in memory; the split with its
    options and validation split; the counts."""
    if not data:
        return []
    from fedrec.reproduce.report import format_bytes

    rows = [("data", f"{data['given']}: {data.get('loader') or 'loader not stated'}")]
    if not data.get("files"):
        rows.append(("data files", str(data.get("origin"))))
    for f in data.get("files", []):
        rows.append(("data file", f"{f['path']}  {format_bytes(f['bytes'])}  "
                                  f"sha256 {f['sha256'][:16]}..."))
    split = data.get("split") or {}
    parts = [str(split.get("name") or "not stated")]
    if split.get("options"):
        parts.append("options " + ", ".join(f"{k}={v}" for k, v in split["options"].items()))
    val = split.get("validation")
    if val:
        parts.append("validation " + (", ".join(f"{k}={v}" for k, v in val.items())
                                      if isinstance(val, Mapping) else str(val)))
    rows.append(("split", "; ".join(parts)))
    counts = data.get("counts") or {}
    rows.append(("data counts", ", ".join(f"{k.replace('_', ' ')} {v:,}"
                                          for k, v in counts.items())))
    return rows


def config_source_rows(config: Mapping[str, Any],
                       sources: Mapping[str, str]) -> list[tuple[str, str]]:
    """A row per source of the options not at their default (``results.json``'s
    ``config_sources``, :func:`fedrec.config.config_sources`): ``from packaged ml-100k
    section  rounds=640, lr=0.2``, ``from file my.yaml  rounds=2``, ``from --set  dim=8``."""
    by_source: dict[str, list[str]] = {}
    for key, source in sources.items():
        value = config.get(key)
        shown = value if isinstance(value, str) else json.dumps(value)
        by_source.setdefault(source, []).append(f"{key}={shown}")
    return [(f"from {source}", ", ".join(items)) for source, items in by_source.items()]


def privacy_rows(privacy: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The summary's privacy lines: every entry of the run's report, each measured attack
    beside a guarantee and every caveat, one short line each
    (:func:`fedrec.privacy.report_lines.rows`); ``privacy`` is ``results.json["privacy"]``, of
    this version or older (:meth:`~fedrec.privacy.report.PrivacyReport.from_json`)."""
    from fedrec.privacy.report import PrivacyReport
    from fedrec.privacy.report_lines import rows

    return rows(PrivacyReport.from_json(privacy))
