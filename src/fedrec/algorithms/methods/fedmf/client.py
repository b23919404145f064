"""FedMF's client (:mod:`fedrec.algorithms.methods.fedmf`): the shared Paillier key pair, FCF's
local
step on the decrypted table, the encrypted update."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from phe import PaillierPrivateKey, PaillierPublicKey

from fedrec.algorithms.item_gradient import LocalMF
from fedrec.algorithms.methods.fedmf.config import FedMFConfig
from fedrec.algorithms.methods.fedmf.steps import EVALUATE, PUBLIC_KEY, TRAIN
from fedrec.core.codec import Payload
from fedrec.data.types import RatingDataset
from fedrec.federation.runtime import Outgoing, PartyContext, PartyLogic
from fedrec.federation.secrets import PartySecret
from fedrec.federation.steps import step
from fedrec.privacy.paillier import (
    EncryptedArray,
    generate_keypair,
    max_abs_value,
    public_key_to_bytes,
)


class FedMFClient(PartyLogic):
    """A device: FCF's local step (:class:`~fedrec.algorithms.item_gradient.LocalMF`), with the
    item table arriving and its update leaving encrypted."""

    def __init__(self, cfg: FedMFConfig, dataset: RatingDataset) -> None:
        self.cfg = cfg
        self.local = LocalMF(dataset)
        self.num_items = dataset.num_items
        self._keys: dict[PartySecret, tuple[PaillierPublicKey, PaillierPrivateKey]] = {}

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        return self.local.init_state(self.cfg, secret)

    def keys(self, ctx: PartyContext) -> tuple[PaillierPublicKey, PaillierPrivateKey]:
        """The key pair every client shares: drawn by a CSPRNG keyed by the clients' role secret
        (which the server never holds), so every client derives the same pair on its own."""
        secret = ctx.role_secret
        if secret not in self._keys:
            self._keys[secret] = generate_keypair(self.cfg.key_bits,
                                                  secret.csprng("fedmf-paillier-key"))
        return self._keys[secret]

    def item_parameters(
        self, payload: Payload, ctx: PartyContext
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        public, private = self.keys(ctx)
        table = EncryptedArray.from_wire(public, payload["table"]).decrypt(private)
        v = torch.as_tensor(table, dtype=torch.float32, device=ctx.device)
        return v[:, :-1].contiguous(), v[:, -1].contiguous()

    @step(PUBLIC_KEY)
    def public_key(self, ctx: PartyContext, payload: Payload) -> Payload:
        return {"n": public_key_to_bytes(self.keys(ctx)[0])}

    # Both steps are broadcasts: the table is decrypted once for the whole cohort.
    @step(TRAIN, cohort=True, broadcast=True)
    def train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Outgoing]:
        q, b_i = self.item_parameters(payload, ctxs[0])
        out = self.local.train(self.cfg, ctxs, q, b_i)
        return [self._encrypt_update(c, msg) for c, msg in zip(ctxs, out, strict=True)]

    @step(EVALUATE, cohort=True, broadcast=True)
    def evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Outgoing]:
        q, b_i = self.item_parameters(payload, ctxs[0])
        return list(self.local.evaluate(self.cfg, ctxs, q, b_i, payload))

    def _encrypt_update(self, ctx: PartyContext, msg: Payload) -> Payload | None:
        """FCF's plaintext upload ``(items, grad_q, grad_b)`` -> ``Enc(-lr · g)``."""
        items = torch.as_tensor(msg["items"]).cpu().numpy().astype(np.int64)
        grad = torch.cat([torch.as_tensor(msg["grad_q"]),
                          torch.as_tensor(msg["grad_b"]).unsqueeze(1)], dim=1)
        delta = -self.cfg.lr * grad.detach().cpu().double().numpy()
        if not (np.isfinite(delta).all() and np.abs(delta).max(initial=0.0) < max_abs_value()):
            return None  # abstain: a diverged update would poison the encrypted table unseen
        public = self.keys(ctx)[0]
        if self.cfg.upload == "part":
            return {"items": items, "update": EncryptedArray.encrypt(public, delta).to_wire()}
        dense = np.zeros((self.num_items, delta.shape[1]))
        dense[items] = delta
        return {"update": EncryptedArray.encrypt(public, dense).to_wire()}
