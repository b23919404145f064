"""FedMF's server (:mod:`fedrec.algorithms.methods.fedmf`): holds ``Enc(V)`` and the public key,
only adds
ciphertexts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from phe import PaillierPublicKey

from fedrec.algorithms.base import RATING_EVALUATION, ServerLogic
from fedrec.algorithms.methods.fedmf.config import FedMFConfig
from fedrec.algorithms.methods.fedmf.steps import EVALUATE, PUBLIC_KEY, TRAIN
from fedrec.algorithms.mf_common import eval_request, reduce_client_metrics
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.errors import ProtocolError
from fedrec.federation.message import PartyId
from fedrec.federation.runtime import Runtime
from fedrec.models.mf import init_factors
from fedrec.privacy.paillier import EncryptedArray, public_key_from_bytes, public_key_to_bytes
from fedrec.privacy.report import NoGuarantee, PrivacyReport


class FedMFServer(ServerLogic):
    """Holds ``Enc(V)`` and the public key; adds ciphertexts; never holds a private key."""

    def __init__(self, cfg: FedMFConfig, num_items: int) -> None:
        self.cfg = cfg
        self.num_items = num_items
        self.public_key: PaillierPublicKey | None = None
        self.table: EncryptedArray | None = None

    def _setup(self, rt: Runtime, candidates: Sequence[int]) -> None:
        """Fetch the clients' public key; store the (public) initial table, encrypted."""
        replies: dict[PartyId, Payload] = {}
        for client in candidates:  # any key holder will do; the next one if it dropped out
            replies = rt.call(PUBLIC_KEY, {client: {}})
            if replies:
                break
        (reply,) = rt.updates(replies, PUBLIC_KEY).values()
        public = public_key_from_bytes(reply["n"])
        if public.n.bit_length() != self.cfg.key_bits:
            raise ProtocolError(
                f"public key has {public.n.bit_length()} bits, expected {self.cfg.key_bits}")
        # FCF's initial item factors (same seed and stream), zero biases.
        q0 = init_factors(self.num_items, self.cfg.dim, torch_generator(self.cfg.seed,
                                                                        "init-items"))
        v0 = np.concatenate([q0.double().numpy(), np.zeros((self.num_items, 1))], axis=1)
        self.public_key = public
        self.table = EncryptedArray.encode_public(public, v0)

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        selected = rt.cohort(self.cfg.clients_per_round)
        if self.table is None:
            self._setup(rt, selected)
        assert self.table is not None and self.public_key is not None
        # A client abstains (sends nothing) after a non-finite local update.
        replies = rt.updates(rt.broadcast(TRAIN, selected, {"table": self.table.to_wire()}),
                             TRAIN, "if updates diverge, lower lr_user or lr")
        table = self.table
        for client, reply in replies.items():
            table = self._add_update(table, client, reply)
        self.table = table
        return {"clients": len(replies)}

    def _add_update(self, table: EncryptedArray, client: int, reply: Payload) -> EncryptedArray:
        """``table ⊕ Enc(Δ_client)``; the shape is all the server can check."""
        update = EncryptedArray.from_wire(self.public_key, reply["update"])
        if self.cfg.upload == "full":
            if update.shape != table.shape:
                raise ProtocolError(f"client {client}: update of shape {update.shape}, "
                                    f"expected {table.shape}")
            return table + update
        items = np.asarray(reply["items"], dtype=np.int64)
        if (update.shape != (len(items), table.shape[1]) or len(np.unique(items)) != len(items)
                or (len(items) and (items.min() < 0 or items.max() >= self.num_items))):
            raise ProtocolError(f"client {client}: malformed partial update")
        return table.add_rows(items, update)

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        if self.table is None:  # before the first round: set up with the first clients
            self._setup(rt, rt.client_ids)
        assert self.table is not None
        replies = rt.broadcast(EVALUATE, rt.client_ids,
                               eval_request({"table": self.table.to_wire()}, split))
        return reduce_client_metrics(replies.values(), explicit=True)

    def receives(self) -> dict[str, str]:
        return {PUBLIC_KEY: "one client's Paillier public key n (shared by every client)",
                TRAIN: "each cohort client's item ids (upload=part) and its encrypted "
                       "item-factor gradients (Paillier ciphertexts)",
                EVALUATE: RATING_EVALUATION}

    def privacy(self) -> PrivacyReport:
        leak = ("the server sees only ciphertexts of a fixed shape" if self.cfg.upload == "full"
                else "each upload names the client's rated items in plaintext")
        return PrivacyReport((NoGuarantee(
            protection=f"Paillier encryption of item gradients ({self.cfg.key_bits}-bit n): "
                       "semantic security under DCR against an honest-but-curious server "
                       "holding only the public key",
            leakage=f"{leak}; every client (all share the private key) decrypts the item "
                    "table, hence each round's aggregate update",
            details={"encryption": f"Paillier ({self.cfg.key_bits}-bit n)",
                     "upload": self.cfg.upload}),))

    def state_dict(self) -> dict[str, Any]:
        if self.table is None or self.public_key is None:
            return {"n": None, "table": None}
        return {"n": public_key_to_bytes(self.public_key), "table": self.table.to_wire()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["n"] is None:
            self.public_key, self.table = None, None
            return
        self.public_key = public_key_from_bytes(state["n"])
        self.table = EncryptedArray.from_wire(self.public_key, state["table"])
