"""Federation runtime: parties and their declared steps, metered messages, the in-process
simulator, checkpoints."""

from fedrec.core.codec import decode, encode, payload_size
from fedrec.federation.checkpoint import load_checkpoint, save_checkpoint
from fedrec.federation.ledger import CommunicationLedger
from fedrec.federation.message import AGGREGATOR, SERVER, THIRD_PARTY, Message, PartyId, role_of
from fedrec.federation.runtime import (
    InProcessRuntime,
    PartyContext,
    PartyLogic,
    Routed,
    Runtime,
)
from fedrec.federation.steps import step

__all__ = [
    "AGGREGATOR",
    "SERVER",
    "THIRD_PARTY",
    "CommunicationLedger",
    "InProcessRuntime",
    "Message",
    "PartyContext",
    "PartyId",
    "PartyLogic",
    "Routed",
    "Runtime",
    "decode",
    "encode",
    "load_checkpoint",
    "payload_size",
    "role_of",
    "save_checkpoint",
    "step",
]
