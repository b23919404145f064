"""A malicious view reads an innocent view's gradient from the device's local aggregate.

Target: FL-MV-DSSM (:mod:`fedrec.algorithms.methods.fl_mv_dssm`), whose threat model (Huang et al.,
Section IV) includes a view that sends *null updates* of the shared item sub-model so that the
device's aggregate of the views' item updates is the innocent views' alone. With two views and
``|B| = N = 2`` the local aggregate is ``(clip(g_innocent) + clip(0) + noise) / 2``, so the
malicious view recovers ``2 * aggregate - 0 = clip(g_innocent) + noise``.

Two pieces, used together:

* :class:`NullUpdates` (the malicious party's behaviour): wraps the views' logic and replaces
  the ``key`` field (``"item"``) of what the ``malicious`` parties send in ``step`` by zeros;
  everything else they do is the honest protocol.
* :class:`MaliciousViewAttack` (what it reads; a runtime observer): the local aggregate is read
  from the device's upload (``decode`` turns an upload payload into its vector: the public
  fixed-point decoding of a plain upload; a secure-sum upload is masked and cannot be read
  this way, so the experiment runs with the plain sum and the aggregate stands for what the
  paper's local framework shares with its views). The innocent view's true update is read from
  its own message only to *score* the recovery.

Scores per (round, device): the cosine of the recovered and the true innocent item update
(clipping only rescales, so without noise it is 1 up to fixed-point rounding), and a
label-inference AUC: each item is scored by how much the recovered update moves its first-layer
output (``|| x_i dW1 ||``, ``x_i`` its public features; the rows of ``W1`` a batch touches are
those of the features of its positives and negatives) and ranked against the device's training
positives. In FL-MV-DSSM every view of a device is given those positives (Algorithm 1), so the
AUC measures how much of the gradient's signal survives the Gaussian mechanism rather than a
secret the malicious view lacks; the innocent view's own secret (its feature row) shapes the
same gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fedrec.core.codec import Payload
from fedrec.federation.message import Message, PartyId
from fedrec.federation.runtime import Outgoing, PartyContext, PartyLogic, Routed
from fedrec.federation.secrets import PartySecret
from fedrec.metrics.classification import auc


class NullUpdates(PartyLogic):
    """``inner``'s behaviour, except that the ``malicious`` parties send zeros in the ``key``
    field of their ``step`` messages (module docstring)."""

    def __init__(self, inner: PartyLogic, malicious: Collection[PartyId], step: str,
                 key: str) -> None:
        self.inner, self.malicious, self.step, self.key = inner, set(malicious), step, key

    def init_state(self, party: PartyId, data: Any, secret: PartySecret) -> dict[str, Any]:
        return self.inner.init_state(party, data, secret)

    def handle_cohort(self, step: str, ctxs: Sequence[PartyContext],
                      payloads: Sequence[Payload]) -> list[Outgoing]:
        outs = self.inner.handle_cohort(step, ctxs, payloads)
        if step != self.step:
            return outs
        for c, out in zip(ctxs, outs, strict=True):
            if c.party in self.malicious and isinstance(out, Routed):
                for msg in out.to.values():
                    msg[self.key] = torch.zeros_like(torch.as_tensor(msg[self.key]))
        return outs


@dataclass
class MaliciousViewAttack:
    """Observer of one malicious view per device (``pairs``: device -> (malicious view,
    innocent view)); module docstring. ``update_step``/``key``: the views' item updates;
    ``aggregate_step``: the devices' uploads, whose first ``item_size`` values (after
    ``decode``) are the local aggregate, ``sample_size`` (``|B|``) views' mean;
    ``item_features`` and ``first_layer``: the public item features and the shape of the item
    tower's first weight (the first values of an item update); ``labels``: each device's
    training positives, for scoring only."""

    pairs: Mapping[PartyId, tuple[PartyId, PartyId]]
    update_step: str
    key: str
    aggregate_step: str
    decode: Callable[[Payload], np.ndarray]
    item_size: int
    sample_size: int
    item_features: np.ndarray
    first_layer: tuple[int, int]
    labels: Mapping[PartyId, np.ndarray]
    results: list[dict[str, float]] = field(default_factory=list)
    _updates: dict[tuple[int, PartyId], np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._role = {v: (d, k) for d, views in self.pairs.items()
                      for k, v in zip(("malicious", "innocent"), views, strict=True)}

    def __call__(self, msg: Message) -> None:
        if msg.step == self.update_step and msg.sender in self._role:
            vec = torch.as_tensor(msg.payload[self.key]).double().numpy()
            self._updates[(msg.round, msg.sender)] = vec
        elif msg.step == self.aggregate_step and msg.sender in self.pairs and "x" in msg.payload:
            self._attack(msg.round, msg.sender, self.decode(msg.payload)[: self.item_size])

    def _attack(self, rnd: int, device: PartyId, aggregate: np.ndarray) -> None:
        malicious, innocent = self.pairs[device]
        own = self._updates.pop((rnd, malicious))
        truth = self._updates.pop((rnd, innocent))
        recovered = self.sample_size * aggregate - own
        cosine = float(recovered @ truth / max(np.linalg.norm(recovered)
                                               * np.linalg.norm(truth), 1e-300))
        rows, width = self.first_layer
        moved = np.linalg.norm(self.item_features @ recovered[: rows * width].reshape(rows, width),
                               axis=1)
        labels = np.zeros(len(moved))
        labels[np.asarray(self.labels[device], dtype=np.int64)] = 1.0
        score = auc(moved, labels) if 0 < labels.sum() < len(labels) else float("nan")
        self.results.append({"round": float(rnd), "device": float(device), "cosine": cosine,
                             "label_auc": score})

    def summary(self) -> dict[str, float]:
        """Means over the attacked (round, device) pairs."""
        if not self.results:
            return {"attacked": 0.0}
        cos = np.array([r["cosine"] for r in self.results])
        aucs = np.array([r["label_auc"] for r in self.results])
        return {"attacked": float(len(cos)), "cosine_mean": float(cos.mean()),
                "cosine_min": float(cos.min()), "label_auc_mean": float(np.nanmean(aucs))}
