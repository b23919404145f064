"""Malicious clients as ordinary parties (:mod:`fedrec.attacks.poisoning`).

:class:`MaliciousClients` is the logic of the whole client role in a poisoning experiment: it
runs the method's own client logic for the benign clients and the attack's for the malicious
ones. Nothing else changes: a malicious client is sampled, metered, checked (a non-finite update
is rejected) and observed as any other, and it reaches only its own data and what the protocol
sends it. A malicious client answers no evaluation (its metrics are not the benign users'), so
every metric of the run, the targets' exposure included, is over the benign users.

Attacks (:class:`ClientAttack`):

* data poisoning (``random``, ``popular``): the method's own client code on the fake profile
  (:mod:`~fedrec.attacks.poisoning.population`), the base :class:`ClientAttack`;
* model poisoning (:class:`CraftedPromotion`, :class:`Untargeted`): in the method's training
  step, an update the attack crafts in the method's upload format (the method's
  :class:`ItemTableAdapter`); in every other step (the secure sum's key exchange, ...) the
  method's own code, so the protocol runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from typing import Any

import torch

from fedrec.core.codec import Payload
from fedrec.federation.runtime import Outgoing, PartyContext, PartyLogic
from fedrec.federation.secrets import PartySecret

#: A client's update of an item table: ``(item ids, q-row gradients, b gradients or None)``.
RowUpdate = tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]
#: The step every method's client-side evaluation uses.
EVALUATION_STEP = "evaluate"


class ItemTableAdapter(ABC):
    """How a method's client downloads an item table and uploads updates of its rows: what a
    model-poisoning attack needs to speak the method's protocol. The method provides it
    (:attr:`~fedrec.algorithms.base.AlgorithmSpec.poisoning`).

    Scores are ``p_u . q_i + b_i`` (an item bias where the method has one): the attack crafts
    updates of ``q`` and ``b`` rows in the direction the server *descends* (gradients)."""

    #: The step whose reply carries a client's item-table update.
    train_step: str

    @abstractmethod
    def item_table(self, payload: Payload) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The item factors ``q`` (and biases ``b``, or None) the training request carries."""

    @abstractmethod
    def benign(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[RowUpdate]:
        """What each client's own code would upload, as ``(item ids, q-row gradients, b
        gradients or None)``, computed without sending anything."""

    @abstractmethod
    def upload(self, ctx: PartyContext, payload: Payload, ids: torch.Tensor,
               grad_q: torch.Tensor, grad_b: torch.Tensor | None, clip: bool = True
               ) -> Outgoing:
        """The message the client sends for these row gradients, in the method's format (and
        through its mode: in clear, or into the secure sum). ``clip`` False: the client skips
        the bound its own code applies in a secure mode (the DP aggregate's ``dp_clip``)."""


class ClientAttack:
    """The malicious clients' logic in one step; by default the method's own code (a data
    attack: the code is honest, the profile is not)."""

    def act(self, step: str, ctxs: Sequence[PartyContext], payloads: Sequence[Payload],
            benign: PartyLogic) -> list[Outgoing]:
        return benign.handle_cohort(step, ctxs, payloads)


class ModelPoisoning(ClientAttack, ABC):
    """An attack that replaces the training step's upload with a crafted one, of L2 norm
    ``scale`` times the median norm of the malicious clients' own benign updates (what their
    profiles would send): large enough to matter, a multiple of what the attacker can measure.
    In a secure mode the client's own code bounds what it sends; ``clip`` False skips that
    bound, which nothing in a secure sum can check."""

    def __init__(self, adapter: ItemTableAdapter, scale: float, clip: bool = True) -> None:
        self.adapter = adapter
        self.scale = scale
        self.clip = clip

    def act(self, step: str, ctxs: Sequence[PartyContext], payloads: Sequence[Payload],
            benign: PartyLogic) -> list[Outgoing]:
        if step != self.adapter.train_step:
            return super().act(step, ctxs, payloads, benign)
        own = own_uploads(self.adapter, ctxs, payloads)
        norms = torch.stack([_norm(gq, gb) for _, gq, gb in own])
        target_norm = self.scale * float(norms.median())
        out = []
        for ctx, payload, crafted in zip(ctxs, payloads, self.craft(ctxs, payloads, own),
                                         strict=True):
            ids, gq, gb = crafted
            factor = target_norm / max(float(_norm(gq, gb)), 1e-12)
            out.append(self.adapter.upload(ctx, payload, ids, gq * factor,
                                           None if gb is None else gb * factor, self.clip))
        return out

    @abstractmethod
    def craft(self, ctxs: Sequence[PartyContext], payloads: Sequence[Payload],
              own: Sequence[RowUpdate]) -> list[RowUpdate]:
        """Each malicious client's crafted ``(ids, q-row gradients, b gradients)`` (any norm:
        :meth:`act` scales it), given its request and its own benign update. The malicious
        clients collude (one attacker's accounts): they may share what they compute."""


def own_uploads(adapter: ItemTableAdapter | Any, ctxs: Sequence[PartyContext],
                payloads: Sequence[Payload]) -> list[Any]:
    """What each malicious client's own code would upload (``adapter.benign``): a broadcast
    (one payload for the whole cohort) in one call, other requests one client at a time."""
    if all(p is payloads[0] for p in payloads):
        return adapter.benign(ctxs, payloads[0])
    return [adapter.benign([c], p)[0] for c, p in zip(ctxs, payloads, strict=True)]


def _norm(grad_q: torch.Tensor, grad_b: torch.Tensor | None) -> torch.Tensor:
    sq = grad_q.double().pow(2).sum()
    if grad_b is not None:
        sq = sq + grad_b.double().pow(2).sum()
    return sq.sqrt()


class MaliciousClients(PartyLogic):
    """The client role's logic in a poisoning experiment (module docstring): ``benign`` for
    every client but ``malicious``, whose steps ``attack`` runs."""

    def __init__(self, benign: PartyLogic, malicious: Collection[int],
                 attack: ClientAttack) -> None:
        self.benign = benign
        self.malicious = frozenset(malicious)
        self.attack = attack

    def init_state(self, party: int, data: object, secret: PartySecret) -> dict:
        return self.benign.init_state(party, data, secret)

    def handle_cohort(self, step: str, ctxs: Sequence[PartyContext],
                      payloads: Sequence[Payload]) -> list[Outgoing]:
        bad = [i for i, c in enumerate(ctxs) if c.party in self.malicious]
        if not bad:
            return self.benign.handle_cohort(step, ctxs, payloads)
        good = [i for i in range(len(ctxs)) if i not in set(bad)]
        out: list[Outgoing] = [None] * len(ctxs)
        if good:
            replies = self.benign.handle_cohort(step, [ctxs[i] for i in good],
                                                [payloads[i] for i in good])
            for i, reply in zip(good, replies, strict=True):
                out[i] = reply
        if step != EVALUATION_STEP:  # a malicious client's metrics are not a benign user's
            replies = self.attack.act(step, [ctxs[i] for i in bad], [payloads[i] for i in bad],
                                      self.benign)
            for i, reply in zip(bad, replies, strict=True):
                out[i] = reply
        return out
