"""Every method's privacy report, registry-wide: it names every kind of message its server
receives (``server_receives``, from :meth:`~fedrec.algorithms.base.ServerLogic.receives`), in
the contract's configuration and, where the method has them, with secure sums and with the DP
aggregate (a message kind the report leaves out is one a reader of the report cannot weigh);
and the :class:`~fedrec.privacy.report.PrivacyReport` it builds is the one its results.json
gives back (``from_json(to_json(r)) == r``, through JSON text), shown in short lines. (A
centralized baseline reports nothing: the runner's :data:`~fedrec.privacy.report.CENTRALIZED`,
tested in tests/privacy/test_report.py.)"""

from __future__ import annotations

import functools
import json

import pytest

from fedrec.errors import ConfigError
from fedrec.federation.message import SERVER
from fedrec.privacy.report import PrivacyReport
from fedrec.privacy.report_lines import LINE_WIDTH, lines

from .harness import (
    FEDERATED,
    applies,
    config_of,
    dataset_of,
    dp_settings,
    has_option,
    record,
    run,
    trainer_of,
)


def _modes(name: str) -> list[dict]:
    """The contract's settings, and with secure sums on and off and with the DP aggregate where
    the method's config has them and accepts them."""
    modes: list[dict] = [{}]
    if has_option(name, "secure_aggregation"):
        modes += [{"secure_aggregation": True}, {"secure_aggregation": False}]
    if has_option(name, "dp"):
        modes.append(dp_settings(name))
    accepted = []
    for mode in modes:
        try:
            config_of(name, **mode)
        except ConfigError:  # e.g. fedmf: secure sums are FCF's option, not its own
            continue
        accepted.append(mode)
    return accepted


@functools.cache
def _runs(name: str, data_root: str) -> list[tuple[dict, set[str], PrivacyReport]]:
    """Each mode's run of ``name`` (:data:`~.harness.ROUNDS` rounds): the steps whose
    messages reached the server, and the run's privacy report."""
    ds = dataset_of(name, data_root)
    out = []
    for mode in _modes(name):
        cfg = config_of(name, **mode)
        trainer = trainer_of(name, cfg, ds)
        seen = record(trainer)
        run(trainer, cfg)
        report = trainer.privacy()
        assert report is not None, f"{name} reports no privacy at all"
        out.append((mode, {m.step for m in seen if m.receiver == SERVER}, report))
    return out


@pytest.mark.parametrize("name", FEDERATED)
def test_the_report_names_every_message_the_server_receives(name: str, data_root) -> None:
    applies(name, "privacy_report")
    for mode, received, report in _runs(name, str(data_root)):
        named = report.to_json()["server_receives"]
        assert received <= set(named), (mode, sorted(received - set(named)))
        assert all(isinstance(v, str) and v.strip() for v in named.values())


@pytest.mark.parametrize("name", FEDERATED)
def test_the_report_round_trips_through_results_json_and_renders_short(name: str,
                                                                        data_root) -> None:
    applies(name, "privacy_report")
    for mode, _, report in _runs(name, str(data_root)):
        text = json.dumps(report.to_json())
        assert PrivacyReport.from_json(json.loads(text)) == report, mode
        shown = lines(report)
        assert len(shown) >= len(report.entries) + len(report.caveats)
        assert all(len(line) <= LINE_WIDTH for line in shown), (mode, shown)
