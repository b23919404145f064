"""Every federated method's privacy report names every kind of message its server receives
(``server_receives``, from :meth:`~fedrec.algorithms.base.ServerLogic.receives`), in the
contract's configuration and, where the method has them, with secure sums and with the DP
aggregate: a message kind the report leaves out is one a reader of the report cannot weigh."""

from __future__ import annotations

import pytest

from fedrec.errors import ConfigError
from fedrec.federation.message import SERVER

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


@pytest.mark.parametrize("name", FEDERATED)
def test_the_report_names_every_message_the_server_receives(name: str, data_root) -> None:
    applies(name, "privacy_report")
    ds = dataset_of(name, data_root)
    for mode in _modes(name):
        cfg = config_of(name, **mode)
        trainer = trainer_of(name, cfg, ds)
        seen = record(trainer)
        run(trainer, cfg)
        received = {m.step for m in seen if m.receiver == SERVER}
        report = trainer.privacy_report()
        assert report is not None, f"{name} reports no privacy at all"
        named = report["server_receives"]
        assert received <= set(named), (mode, sorted(received - set(named)))
        assert all(isinstance(v, str) and v.strip() for v in named.values())
