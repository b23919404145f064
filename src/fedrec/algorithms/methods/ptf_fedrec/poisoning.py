"""PTF-FedRec's side of a poisoning experiment (:mod:`fedrec.attacks.poisoning`): how a
malicious client speaks its protocol. A client uploads predictions, ``{"items", "scores"}``,
not parameters, so the adapter is a
:class:`~fedrec.attacks.poisoning.predictions.PredictionAdapter`: the benign upload is what
the client's own code computes on its profile (local NeuMF training, then the upload of the
run's ``defense`` or ``upload_dp``), and a crafted one is sent as it is (the attacker neither
samples, swaps nor noises it)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fedrec.algorithms.methods.ptf_fedrec.client import PTFClient
from fedrec.algorithms.methods.ptf_fedrec.steps import TRAIN
from fedrec.attacks.poisoning.predictions import Prediction, PredictionAdapter
from fedrec.core.codec import Payload
from fedrec.federation.runtime import Outgoing, PartyContext


class PTFPredictions(PredictionAdapter):
    """PTF-FedRec's prediction upload
    (:class:`~fedrec.attacks.poisoning.predictions.PredictionAdapter`)."""

    train_step = TRAIN

    def __init__(self, client: PTFClient) -> None:
        self.client = client

    def benign(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Prediction]:
        out = []
        for upload in self.client.train(ctxs, payload):  # one upload per client, in order
            assert upload is not None
            out.append((torch.as_tensor(upload["items"]).long(),
                        torch.as_tensor(upload["scores"]).float()))
        return out

    def upload(self, ctx: PartyContext, payload: Payload, items: torch.Tensor,
               scores: torch.Tensor) -> Outgoing:
        return {"items": items.to(torch.int64).clone(), "scores": scores.float().clone()}


def ptf_predictions(client: PTFClient) -> PTFPredictions:
    """The adapter of :attr:`~fedrec.algorithms.base.AlgorithmSpec.poisoning`."""
    return PTFPredictions(client)
