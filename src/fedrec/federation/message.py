"""Parties and the messages they exchange.

A party has an id and a role. A job declares its parties
(:class:`~fedrec.federation.runtime.Party`); where nothing declares it, the role follows from the
id (:func:`role_of`): an integer id is a client (one per user of a recommendation dataset), a
name is a role: ``"server"`` (the recommendation / aggregation server that orchestrates rounds),
``"third_party"`` (FedGNN's matcher), ``"aggregator"`` (Feras's aggregation server), ... A
declared party's id need not say its role: the hosts of a graph are clients named ``"host-0"``,
``"host-1"``, ... Everything that crosses between two parties is a :class:`Message`, which
carries both parties' roles; its ``nbytes`` is the exact encoded payload size
(:mod:`fedrec.core.codec`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fedrec.core.codec import Payload, payload_size

PartyId = int | str
SERVER = "server"
#: The role cohorts are sampled from (:meth:`~fedrec.federation.runtime.Runtime.sample_clients`).
CLIENT = "client"
THIRD_PARTY = "third_party"
#: Whoever runs a simulation and measures it, not a party of the protocol: in a DP run the
#: evaluation requests come from and the replies go to the experimenter, never the server
#: (:mod:`fedrec.federation.dp_sum`).
EXPERIMENTER = "experimenter"
AGGREGATOR = "aggregator"


def role_of(party: PartyId) -> str:
    """``"client"`` for client ids, else the role name (``"aggregator/2"`` -> ``"aggregator"``)."""
    if isinstance(party, int):
        return CLIENT
    return party.split("/", 1)[0]


@dataclass
class Message:
    """One payload from ``sender`` to ``receiver``, sent in ``round`` during ``step``. The
    parties' roles are given by the runtime that knows them (a job's declared parties), else
    follow from the ids (:func:`role_of`)."""

    sender: PartyId
    receiver: PartyId
    step: str
    round: int
    payload: Payload
    nbytes: int = field(default=-1)
    sender_role: str = ""
    receiver_role: str = ""

    def __post_init__(self) -> None:
        if self.nbytes < 0:
            self.nbytes = payload_size(self.payload)
        if not self.sender_role:
            self.sender_role = role_of(self.sender)
        if not self.receiver_role:
            self.receiver_role = role_of(self.receiver)

    @property
    def direction(self) -> str:
        """``up`` (client to a service), ``down`` (service to client), ``peer`` or ``service``."""
        s, r = self.sender_role, self.receiver_role
        if s == CLIENT and r == CLIENT:
            return "peer"
        if s == CLIENT:
            return "up"
        if r == CLIENT:
            return "down"
        return "service"
