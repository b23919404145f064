"""How far target items reach the benign users' top-K: the measure of an item-promotion attack
(:mod:`fedrec.attacks.poisoning`).

For a target item ``t``, the users *eligible* for it are those who have not interacted with it
(it is not among their known items). With ``top_K(u)`` the ``K`` best-scored items of ``u``
among the items it does not know (the ranking every top-K metric uses),

* ``ER@K`` (exposure ratio; FedRecAttack, PipAttack) ``= mean_t |{u eligible for t : t in
  top_K(u)}| / |{u eligible for t}|``;
* ``target_HR@K`` (hit ratio of the targets) ``= |{u : some target t it is eligible for is in
  top_K(u)}| / |{u eligible for some target}|``.

Computed where the scores are: :func:`exposure_sums` gives each user's share (what a client
returns from its own scores), :func:`reduce_exposure` the ratios from everyone's shares.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import torch

#: The cut-offs the exposure is measured at.
EXPOSURE_KS = (5, 10)
ELIGIBLE = "exposure_eligible"
#: The key of an evaluation request that carries the target items.
EXPOSURE_TARGETS = "exposure_targets"


def is_exposure_share(key: str) -> bool:
    """Whether a client's evaluation key is an exposure share (not a per-user metric)."""
    return key == ELIGIBLE or key.startswith("exposure_hits@")


def exposure_sums(scores: torch.Tensor, known_local: torch.Tensor, known_items: torch.Tensor,
                  targets: torch.Tensor, ks: Sequence[int] = EXPOSURE_KS
                  ) -> list[dict[str, np.ndarray]]:
    """Each user's (row's) exposure shares: ``exposure_eligible`` (1 per target it has not
    interacted with) and ``exposure_hits@K`` (1 per such target in its top ``K``), arrays of one
    entry per target. ``scores``: ``[users, items]``; ``(known_local, known_items)``: the rows'
    known items, excluded from the ranking."""
    scores = scores.clone()
    scores[known_local, known_items] = -torch.inf
    eligible = torch.isfinite(scores[:, targets])
    kmax = min(max(ks), scores.shape[1])
    top = torch.topk(scores, kmax, dim=1).indices
    shares = {ELIGIBLE: eligible.double()}
    for k in ks:
        inside = (top[:, : min(k, kmax), None] == targets[None, None, :]).any(1)
        shares[f"exposure_hits@{k}"] = (inside & eligible).double()
    return [{name: v[i].cpu().numpy() for name, v in shares.items()}
            for i in range(scores.shape[0])]


def reduce_exposure(replies: Iterable[Mapping[str, object]]) -> dict[str, float]:
    """``ER@K`` and ``target_HR@K`` (module docstring) from the users' :func:`exposure_sums`
    (replies without them are skipped); ``{}`` when no reply has any."""
    shares = [r for r in replies if ELIGIBLE in r]
    if not shares:
        return {}
    eligible = np.stack([np.asarray(r[ELIGIBLE], dtype=np.float64) for r in shares])
    out: dict[str, float] = {}
    any_eligible = eligible.any(1)
    for name in shares[0]:
        if not str(name).startswith("exposure_hits@"):
            continue
        k = str(name).split("@", 1)[1]
        hits = np.stack([np.asarray(r[name], dtype=np.float64) for r in shares])
        per_target = hits.sum(0) / np.maximum(eligible.sum(0), 1.0)
        out[f"ER@{k}"] = float(per_target.mean())
        out[f"target_HR@{k}"] = float(hits.any(1)[any_eligible].mean()) if any_eligible.any() \
            else 0.0
    return out
