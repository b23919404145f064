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
    """The summary ``fedrec run`` and ``fedrec deploy`` print: the options not at their
    default and where each came from, final metrics, traffic, privacy, wall time. ``result`` is
    a :class:`~fedrec.rounds.RunResult` or its JSON form."""
    from fedrec.reproduce.report import format_bytes

    r = result if isinstance(result, Mapping) else vars(result)
    totals = r["communication"].get("totals", {})
    rows = [("algorithm", r["algorithm"]), ("dataset", r["dataset"]),
            ("rounds", str(r["config"]["rounds"]))]
    rows += config_source_rows(r["config"], r.get("config_sources") or {})
    rows += [(k, f"{v:.4f}" if not float(v).is_integer() else str(int(v)))
             for k, v in r["final"].items() if isinstance(v, int | float)]
    rows += [
        ("bytes up (clients->services)", format_bytes(totals.get("bytes_up", 0))),
        ("bytes down (services->clients)", format_bytes(totals.get("bytes_down", 0))),
        ("bytes total", format_bytes(totals.get("bytes_total", 0))),
    ]
    rows += privacy_rows(r.get("privacy") or {})
    rows.append(("wall time", f"{r['wall_time_s']:.1f} s"))
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
    """The summary's privacy lines (:mod:`fedrec.privacy.report`): the whole-run epsilon where
    there is a formal guarantee, else "no formal guarantee" and what protects the data; the
    measured attack F1 of every part that has no guarantee."""
    from fedrec.privacy.report import NO_GUARANTEE, per_upload_epsilon, run_epsilon

    eps, how = run_epsilon(privacy)
    released = privacy.get("epsilon_released_model")  # a DP aggregate's second threat
    if eps is None and released is not None:
        rows = [("epsilon against the server", f"none: {privacy.get('guarantee')}")]
    elif eps is None:
        what = (privacy.get("protection") or privacy.get("leakage") or privacy.get("note")
                or "none stated")  # the last two: results.json written before "protection"
        rows = [("privacy", f"{NO_GUARANTEE}: {what}")]
    else:
        rows = [("epsilon (whole run, per client)", f"{eps:.4g} ({how})")]
        if "epsilon_method" in privacy and privacy.get("delta") is not None:
            rows.append(("delta", f"{privacy['delta']:.4g}"))
        upload = per_upload_epsilon(privacy)  # an old report's "epsilon_per_upload" is not it
        if upload is not None:
            rows.append(("epsilon per upload", f"{upload:.4g}"))
    if released is not None:
        rows.append(("epsilon against the released model only", f"{released:.4g}"))
    parts = [("", privacy)] + [(f"{k.replace('_', ' ')}: ", v) for k, v in privacy.items()
                               if isinstance(v, Mapping)]
    for label, part in parts:
        if part.get("guarantee") == NO_GUARANTEE and part is not privacy:
            rows.append((label.rstrip(": "), NO_GUARANTEE))
        if "measured_attack" in part:
            f1 = part.get("measured_attack_f1")
            name = str(part["measured_attack"]).split(" ")[0]
            rows.append((f"{label}measured attack F1",
                         f"{f1:.3f} ({name})" if f1 is not None else str(part["measured_attack"])
                         .split(": ", 1)[-1]))
    return rows
