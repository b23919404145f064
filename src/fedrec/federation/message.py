"""Parties and the messages they exchange.

A party is a client (identified by its integer client id) or a named role: ``"server"`` (the
recommendation / aggregation server that orchestrates rounds), ``"third_party"`` (FedGNN's
matcher), ``"aggregator"`` (Feras's aggregation server), ... Everything that crosses between two
parties is a :class:`Message`; its ``nbytes`` is the exact encoded payload size
(:mod:`fedrec.core.codec`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fedrec.core.codec import Payload, payload_size

PartyId = int | str
SERVER = "server"
THIRD_PARTY = "third_party"
AGGREGATOR = "aggregator"


def role_of(party: PartyId) -> str:
    """``"client"`` for client ids, else the role name (``"aggregator/2"`` -> ``"aggregator"``)."""
    if isinstance(party, int):
        return "client"
    return party.split("/", 1)[0]


@dataclass
class Message:
    """One payload from ``sender`` to ``receiver``, sent in ``round`` during ``step``."""

    sender: PartyId
    receiver: PartyId
    step: str
    round: int
    payload: Payload
    nbytes: int = field(default=-1)

    def __post_init__(self) -> None:
        if self.nbytes < 0:
            self.nbytes = payload_size(self.payload)

    @property
    def direction(self) -> str:
        """``up`` (client to a service), ``down`` (service to client), ``peer`` or ``service``."""
        s, r = role_of(self.sender), role_of(self.receiver)
        if s == "client" and r == "client":
            return "peer"
        if s == "client":
            return "up"
        if r == "client":
            return "down"
        return "service"
