"""The measurements a run's summary quotes, packaged beside the configs they are about: what the
paper's privacy setting costs where it costs a method most of its accuracy
(:data:`PRIVACY_COSTS_NAME`, written by ``fedrec reproduce defaults``), and which mode is private
and at what accuracy, for a run with no DP (:data:`PRIVATE_MODES_NAME`, written by ``fedrec
reproduce privacy``), and what each defense against malicious clients achieves
(:data:`ROBUSTNESS_NAME`, written by ``fedrec reproduce poisoning``). Each file is written by its
reproduction, never by hand, and a test checks it equals the committed results
(tests/reproduce/test_defaults.py, tests/reproduce/test_poisoning.py).
"""

from __future__ import annotations

import json
import typing
from importlib import resources
from typing import Any

PRIVACY_COSTS_NAME = "privacy_costs.json"
PRIVATE_MODES_NAME = "private_modes.json"
ROBUSTNESS_NAME = "robustness.json"


def _packaged(*names: str) -> list[dict[str, Any]]:
    """The entries of the packaged measurement files ``names`` (none where one is missing)."""
    entries: list[dict[str, Any]] = []
    for name in names:
        try:
            entries += json.loads(resources.files("fedrec.configs").joinpath(name).read_text())
        except FileNotFoundError:
            continue
    return entries


def measured_privacy_costs() -> list[dict[str, Any]]:
    """The entries of the packaged :data:`PRIVACY_COSTS_NAME` and :data:`PRIVATE_MODES_NAME`
    (none where a file is missing): ``algorithm``, ``dataset``, ``mechanism`` (the option values
    a run must have for the entry to apply), ``line`` and ``command``."""
    return _packaged(PRIVACY_COSTS_NAME, PRIVATE_MODES_NAME)


def privacy_cost(algorithm: str, dataset: str, values: typing.Mapping[str, Any],
                 costs: typing.Sequence[typing.Mapping[str, Any]] | None = None) -> str | None:
    """The summary line of the first measured entry (``costs``, default
    :func:`measured_privacy_costs`) for ``algorithm`` on ``dataset`` whose ``mechanism`` the
    configuration ``values`` has, with the command that measured it; None when none applies."""
    return _first_line(measured_privacy_costs() if costs is None else costs, algorithm,
                       dataset, values)


def robustness(algorithm: str, dataset: str, values: typing.Mapping[str, Any],
               entries: typing.Sequence[typing.Mapping[str, Any]] | None = None) -> str | None:
    """The summary line of the packaged :data:`ROBUSTNESS_NAME` entry (or ``entries``') for
    ``algorithm`` on ``dataset`` whose defense the configuration ``values`` has: what the
    defense resists and the exposure measured at its attack; None when none applies."""
    return _first_line(_packaged(ROBUSTNESS_NAME) if entries is None else entries, algorithm,
                       dataset, values)


def _first_line(entries: typing.Iterable[typing.Mapping[str, Any]], algorithm: str,
                dataset: str, values: typing.Mapping[str, Any]) -> str | None:
    """The line of the entry for ``algorithm`` on ``dataset`` whose mechanism ``values`` has;
    where several have it, the one that names the most options (the most specific: a
    bounded variant of a defense over the defense alone), the first of those."""
    found = [c for c in entries if (c["algorithm"], c["dataset"]) == (algorithm, dataset)
             and all(values.get(k) == v for k, v in c["mechanism"].items())]
    if not found:
        return None
    c = max(found, key=lambda c: len(c["mechanism"]))
    return f"{c['line']} ({c['command']})"
