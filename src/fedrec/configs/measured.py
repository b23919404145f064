"""The measurements a run's summary quotes, packaged beside the configs they are about: what the
paper's privacy setting costs where it costs a method most of its accuracy
(:data:`PRIVACY_COSTS_NAME`, written by ``fedrec reproduce defaults``), and which mode is private
and at what accuracy, for a run with no DP (:data:`PRIVATE_MODES_NAME`, written by ``fedrec
reproduce privacy``). Each file is written by its reproduction, never by hand, and a test checks
it equals the committed results (tests/reproduce/test_defaults.py).
"""

from __future__ import annotations

import json
import typing
from importlib import resources
from typing import Any

PRIVACY_COSTS_NAME = "privacy_costs.json"
PRIVATE_MODES_NAME = "private_modes.json"


def measured_privacy_costs() -> list[dict[str, Any]]:
    """The entries of the packaged :data:`PRIVACY_COSTS_NAME` and :data:`PRIVATE_MODES_NAME`
    (none where a file is missing): ``algorithm``, ``dataset``, ``mechanism`` (the option values
    a run must have for the entry to apply), ``line`` and ``command``."""
    costs: list[dict[str, Any]] = []
    for name in (PRIVACY_COSTS_NAME, PRIVATE_MODES_NAME):
        try:
            costs += json.loads(resources.files("fedrec.configs").joinpath(name).read_text())
        except FileNotFoundError:
            continue
    return costs


def privacy_cost(algorithm: str, dataset: str, values: typing.Mapping[str, Any],
                 costs: typing.Sequence[typing.Mapping[str, Any]] | None = None) -> str | None:
    """The summary line of the first measured entry (``costs``, default
    :func:`measured_privacy_costs`) for ``algorithm`` on ``dataset`` whose ``mechanism`` the
    configuration ``values`` has, with the command that measured it; None when none applies."""
    for c in measured_privacy_costs() if costs is None else costs:
        if (c["algorithm"], c["dataset"]) == (algorithm, dataset) and all(
                values.get(k) == v for k, v in c["mechanism"].items()):
            return f"{c['line']} ({c['command']})"
    return None
