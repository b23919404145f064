"""A round in which no update arrives stops every federated method with the runtime's one
error (:class:`~fedrec.errors.NoUpdateError`), never a crash of the method's own, a silent
empty step or a hang: once with every client dropped out before the round, once with every
client's message rejected by the runtime (as it rejects NaN/Inf)."""

from __future__ import annotations

import pytest

from fedrec.algorithms.base import observe
from fedrec.errors import NoUpdateError
from fedrec.federation.message import CLIENT, Message
from fedrec.federation.runtime import InProcessRuntime

from .harness import FEDERATED, applies, config_of, dataset_of, trainer_of


class RejectingClients(InProcessRuntime):
    """The simulator, rejecting every message a client sends (through the runtime's own
    rejection: metered, listed in the ledger's rejections, never delivered)."""

    def _deliver(self, msg: Message, finite: bool | None = None) -> bool:
        return super()._deliver(msg, False if msg.sender_role == CLIENT else finite)


@pytest.mark.parametrize("how", ["dropped", "rejected"])
@pytest.mark.parametrize("name", FEDERATED)
def test_a_round_without_updates_stops_with_the_runtimes_error(name: str, how: str,
                                                              data_root) -> None:
    applies(name, "no_update")
    cfg = config_of(name)
    trainer = trainer_of(name, cfg, dataset_of(name, data_root))
    rt = trainer.runtime
    if how == "rejected":
        rt.__class__ = RejectingClients
    rt.begin_round(1)
    if how == "dropped":
        for client in rt.client_ids:
            rt.drop(client)
    observe(trainer.job.server, rt)
    with pytest.raises(NoUpdateError, match="round 1"):
        trainer.job.server.run_round(rt, 1)
    if how == "rejected":
        assert rt.ledger.rejected
