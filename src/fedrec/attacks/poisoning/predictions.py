"""Model poisoning of prediction uploads (:mod:`fedrec.attacks.poisoning`): for methods whose
clients upload scores on items instead of parameters or gradients (PTF-FedRec's
``{"items", "scores"}``), the sibling of
:class:`~fedrec.attacks.poisoning.clients.ItemTableAdapter` and
:class:`~fedrec.attacks.poisoning.clients.ModelPoisoning`.

A prediction upload is ``(item ids, scores)``, each score a probability in ``[0, 1]`` that the
client's user likes the item; the server trains its model on them as soft labels. The attacker
chooses both the ids (any items: the server cannot tell which items a client trained on) and
the scores (within ``[0, 1]``: the top of the scale is 1), and nothing else, so the
``poisoning_scale`` of gradient attacks has no counterpart here: a score cannot be made larger
than 1, only placed on more items or sent by more clients.

* **Promotion** (:class:`PromotedPredictions`, ``crafted``): the malicious client's own upload
  (what the method's code computes on its ``random`` profile, so that it looks like a user's),
  with every target added at score 1 and the ``MIMIC_POPULAR`` most popular items (the public
  popularity the crafted gradient attack uses to approximate the users) at score 1 too. The
  server learns "users who like what most users like also like the targets": its model moves
  the targets towards the popular items and so into benign users' top scores, from where the
  method's own channel back to the clients (PTF-FedRec's dispersal) carries them.
* **Inversion** (:class:`InvertedPredictions`, ``untargeted``): the client's own upload with
  every score ``s`` replaced by ``1 - s``: the server learns the opposite of the user's taste
  on exactly the items it would have learned it on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import torch

from fedrec.attacks.poisoning.clients import ClientAttack, own_uploads
from fedrec.core.codec import Payload
from fedrec.federation.runtime import Outgoing, PartyContext, PartyLogic

#: A client's prediction upload: ``(item ids int64[n], scores float[n] in [0, 1])``.
Prediction = tuple[torch.Tensor, torch.Tensor]
#: The popular items a promoting client rates at the top beside the targets.
MIMIC_POPULAR = 20


class PredictionAdapter(ABC):
    """How a method's client computes and uploads its predictions: what a model-poisoning
    attack needs to speak a prediction-upload protocol. The method provides it
    (:attr:`~fedrec.algorithms.base.AlgorithmSpec.poisoning`)."""

    #: The step whose reply carries a client's prediction upload.
    train_step: str

    @abstractmethod
    def benign(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Prediction]:
        """What each client's own code would upload, as ``(item ids, scores)``, computed
        without sending anything (the clients' local training happens as it would)."""

    @abstractmethod
    def upload(self, ctx: PartyContext, payload: Payload, items: torch.Tensor,
               scores: torch.Tensor) -> Outgoing:
        """The message the client sends for these predictions, in the method's format."""


class PoisonedPredictions(ClientAttack, ABC):
    """An attack that replaces the training step's upload with a crafted prediction upload;
    every other step runs the method's own code, so the protocol runs."""

    def __init__(self, adapter: PredictionAdapter) -> None:
        self.adapter = adapter

    def act(self, step: str, ctxs: Sequence[PartyContext], payloads: Sequence[Payload],
            benign: PartyLogic) -> list[Outgoing]:
        if step != self.adapter.train_step:
            return super().act(step, ctxs, payloads, benign)
        own = own_uploads(self.adapter, ctxs, payloads)
        return [self.adapter.upload(ctx, payload, items, scores)
                for ctx, payload, (items, scores) in zip(ctxs, payloads, self.craft(own),
                                                          strict=True)]

    @abstractmethod
    def craft(self, own: Sequence[Prediction]) -> list[Prediction]:
        """Each malicious client's crafted upload, given its own benign one."""


def _with_top_scores(items: torch.Tensor, scores: torch.Tensor, top: torch.Tensor
                     ) -> Prediction:
    """``(items, scores)`` with every item of ``top`` at score 1 (added when absent), sorted by
    item id as an honest upload is."""
    keep = ~torch.isin(items, top)
    all_items = torch.cat([items[keep], top.to(items.dtype)])
    all_scores = torch.cat([scores[keep], torch.ones(len(top), dtype=scores.dtype)])
    order = torch.argsort(all_items)
    return all_items[order], all_scores[order]


class PromotedPredictions(PoisonedPredictions):
    """Promote ``targets`` (module docstring): the own upload, the targets and the
    ``MIMIC_POPULAR`` most popular other items at score 1."""

    def __init__(self, adapter: PredictionAdapter, targets: torch.Tensor,
                 by_popularity: torch.Tensor) -> None:
        super().__init__(adapter)
        self.targets = targets.to(torch.int64)
        popular = by_popularity[~torch.isin(by_popularity, self.targets)][:MIMIC_POPULAR]
        self.top = torch.unique(torch.cat([self.targets, popular.to(torch.int64)]))

    def craft(self, own: Sequence[Prediction]) -> list[Prediction]:
        return [_with_top_scores(items, scores, self.top) for items, scores in own]


class InvertedPredictions(PoisonedPredictions):
    """Each malicious client's own upload with its scores inverted, ``1 - s`` (module
    docstring)."""

    def craft(self, own: Sequence[Prediction]) -> list[Prediction]:
        return [(items, 1.0 - scores) for items, scores in own]
