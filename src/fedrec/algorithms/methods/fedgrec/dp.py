"""FedGRec under the DP aggregate (``dp: distributed | central``,
:mod:`fedrec.federation.dp_sum`; beyond the paper): the layout of a client's one round vector,
what the client records as sent, and the tables the server derives from the noised sums.

One **release** is one noised sum the server decodes: a round's sum of the Poisson cohort's
clipped vectors (Skellam noise from the clients inside the secure sum, or Gaussian noise from a
trusted server). There is no other: under DP there is no warm-up (its degree and latent sums
would be releases over every client, outside the sampled rounds the accounting composes), so a
client's whole contribution to a round is one vector

    ``[delta e_t^0 (N x d) | degree change (N) | latent change (K x N x d)]``

clipped in L2 to ``dp_clip`` as a whole:

* ``delta e_t^0``: the change of the item rows it trained (its positives and negatives);
* degree change: ``1 - g_u`` on each of its items, ``g_u`` the share of its indicator the
  server's degree sum already holds (0 before its first sampled round, then 1 unless clipping
  scaled it down; so the indicator arrives in its first sampled round);
* latent change (present when ``K > 0``; zero outside refresh rounds):
  ``(s_u^{k-1} - s_u^{k-1, sent}) / sqrt(|N_u|)`` on its items' rows, with the sources ``s_u``
  of :mod:`fedrec.algorithms.methods.fedgrec`. The ``1 / sqrt(|N_t|)`` of LightGCN's weight is
  the server's: it keeps the *unnormalised* sums ``A_t^k = sum_u s_u^{k-1} / sqrt(|N_u|)`` and
  ``D_t`` (the noised degree sum) and sends ``e_t^k = A_t^k / sqrt(max(D_t, 1))`` and
  ``|N_t| = max(D_t, 1)`` (:func:`dp_tables`), so a contribution never carries a stale degree.

A client that clips by ``f = min(1, dp_clip / ||x||)`` records ``f`` times each change as sent
(:func:`recorded`), so the server's sums stay, up to the noise and the rounding, the sums of
what every client recorded, and the rest of a change follows at its next sampled rounds.

Accounting: a client's vector is in exactly the releases of the rounds it was sampled in (and
survived); those are what :class:`~fedrec.federation.dp_sum.DPAggregate` records. Its latent
contribution persists in ``A`` across later rounds, but ``A`` and ``D`` are sums of released
noised sums, post-processing of releases already accounted: no later table is a new release of
it. The server adds ``server_lr`` times the noised ``delta e_t^0`` sum divided by the public
expected cohort to ``e_t^0`` (not FedAvg's per-row mean: the rows-trained counts are not sent),
and adds the degree and latent blocks (sums, not means) to ``D`` and ``A``; the latent block
only in refresh rounds (elsewhere it is zero and discarded). The training loss is not sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedrec.privacy.clipping import clip_l2

#: Client state under DP: the share of its item indicator the server's degree sum holds.
DEGREE_SENT = "degree_sent"


@dataclass(frozen=True)
class DPLayout:
    """Offsets of the blocks of a DP round vector (module docstring); ``latent`` is None
    without latent embeddings."""

    num_items: int
    dim: int
    num_layers: int

    @property
    def degrees(self) -> int:
        return self.num_items * self.dim

    @property
    def latent(self) -> int | None:
        return self.degrees + self.num_items if self.num_layers else None

    @property
    def size(self) -> int:
        return self.num_items * (self.dim + 1) + self.num_layers * self.num_items * self.dim


def clipped(x: np.ndarray, clip: float) -> tuple[np.ndarray, float]:
    """``x`` clipped in L2 to ``clip`` (:func:`~fedrec.privacy.clipping.clip_l2`, so the DP
    aggregate's own clipping leaves it unchanged) and the factor ``f`` it was scaled by."""
    out = clip_l2(torch.from_numpy(x), clip).numpy()
    norm = float(np.linalg.norm(x))
    return out, (float(np.linalg.norm(out)) / norm if norm > 0 else 1.0)


def recorded(state: dict[str, Any], factor: float,
             change: torch.Tensor | None) -> dict[str, Any]:
    """What the client records once its vector is in a sum: ``factor`` times each change it
    sent added to what the server already held."""
    out: dict[str, Any] = {DEGREE_SENT: state[DEGREE_SENT] + factor * (1.0 - state[DEGREE_SENT])}
    if change is not None:
        out["sent"] = state["sent"] + factor * change
    return out


def dp_tables(item_emb: torch.Tensor, latent_sums: torch.Tensor,
              degree_sum: torch.Tensor) -> dict[str, torch.Tensor]:
    """The tables a DP run sends: ``e_t^0``, ``e_t^k = A_t^k / sqrt(max(D_t, 1))`` and
    ``|N_t| = max(D_t, 1)`` (post-processing of the noised sums ``A`` and ``D``)."""
    degrees = degree_sum.clamp(min=1.0)
    return {"item_emb": item_emb.float(),
            "latent": (latent_sums / degrees.sqrt()[None, :, None]).float(),
            "degrees": degrees.float()}
