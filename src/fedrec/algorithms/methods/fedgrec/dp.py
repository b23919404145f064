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

Options that trade the blocks against each other and bound the noise the tables carry (each a
public option, so whatever it changes is post-processing or a public rescaling; the guarantee
is unchanged: every client sends one vector of L2 norm at most ``C = dp_clip`` per round):

* per-block budgets (``dp_latent_clip: b > 0``, ``dp_latent_share: s``): the item and degree
  blocks are clipped together to ``C sqrt(1 - s)``, the latent block on its own to ``b`` and then
  multiplied by the public weight ``w = C sqrt(s) / b``, so the vector's norm is at most
  ``sqrt(C^2 (1 - s) + C^2 s) = C``. The server divides the decoded latent block by ``w``: in
  the latent block's own units its noise has standard deviation ``z C / w = z b / sqrt(s)``,
  whatever the item block's size, and a large item update no longer scales the latent change
  down (with ``b = 0`` the vector is clipped as a whole and one factor scales every block).
  The budgets are fixed for the run: outside refresh rounds the head keeps ``C sqrt(1 - s)``.
* latent re-estimation (``dp_latent: estimate``, ``dp_latent_decay: beta``): in a refresh round
  each sampled client sends its *whole* contribution ``s_u^{k-1} / sqrt(|N_u|)`` (clipped,
  scaled by the factor ``f_A`` of its block), not the change, and the server sets ``A <- (1 -
  beta) A + beta S / q`` with ``S`` the round's noised latent sum and ``q`` the public sampling
  rate (``S / q`` is the Horvitz-Thompson estimate of the sum over every client; at ``q = 1`` it
  is the sum). ``A`` is then a weighted sum of releases whose weights sum to at most 1 over
  ``q``, so its noise stays at ``z b / (sqrt(s) q) sqrt(beta / (2 - beta))`` per coordinate
  (``beta = 1``: the last round's noise alone) instead of growing like the square root of the
  refreshes, as the running sums of changes (``dp_latent: sums``) do. A client records ``f_A
  s_u`` as its share (exact at ``q = 1``, ``beta = 1``; an estimate otherwise, used only by
  ``own_edge_gradient``).
* no latent release (``dp_latent: none``): the vector has no latent block (no budget, no noise)
  and the item latent tables stay zero; a client still computes ``e_u^1`` from the downloaded
  ``e_t^0`` (and, with ``own_edge_gradient``, trains through it), so at ``K = 1`` the model
  keeps LightGCN's user-side layer and loses the item-side one for ranking. The own-edge term
  still adds the client's own share ``(e_u^0 - s_u^{0, sent}) / sqrt(|N_u| |N_t|)`` to its
  items' ``e_t^1`` while it trains (``s_u^{0, sent} = 0`` here), a term no ranking sees: kept
  because dropping it measured lower (``docs/fedgrec.md``). Why no latent release: the latent
  sums are sums over users of contributions of norm ``||s_u||`` (``docs/fedgrec.md`` measures
  it), so their noise ``z b / sqrt(s)`` per coordinate dwarfs a sum of a few tens of ``s_u /
  sqrt(|N_u|)`` rows at ML-100K's sizes.
* a public degree (``dp_degree: c > 0``): every ``|N_t|`` the tables carry is ``c`` (so ``e_t^k
  = A_t^k / sqrt(c)`` and a client's edge weight is ``1 / sqrt(|N_u| c)``) and the vector has no
  degree block (no budget, no noise). Why: a client's indicator has norm ``sqrt(|N_u|)``, so a
  noised degree sum carries noise ``z C`` per item against counts of tens (ML-100K's median
  item); ``c`` replaces LightGCN's per-item normalisation by a global one, which leaves popular
  items larger latent rows.

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

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedrec.privacy.clipping import clip_l2

#: Client state under DP: the share of its item indicator the server's degree sum holds.
DEGREE_SENT = "degree_sent"


@dataclass(frozen=True)
class DPLayout:
    """Offsets of the blocks of a DP round vector (module docstring): ``degrees`` is None
    without a degree block (a public ``dp_degree``), ``latent`` None without a latent block
    (``num_layers`` 0: no latent embeddings, or ``dp_latent: none``). A block a run does not
    release is not in the vector at all, so no coordinate of it is noised or sent."""

    num_items: int
    dim: int
    num_layers: int
    has_degrees: bool = True

    @classmethod
    def of(cls, cfg: Any, num_items: int) -> DPLayout:
        """The layout of a run's options."""
        return cls(num_items, cfg.dim, 0 if cfg.dp_latent == "none" else cfg.num_layers,
                   cfg.dp_degree <= 0)

    @property
    def degrees(self) -> int | None:
        return self.num_items * self.dim if self.has_degrees else None

    @property
    def latent(self) -> int | None:
        if not self.num_layers:
            return None
        return self.num_items * (self.dim + int(self.has_degrees))

    @property
    def size(self) -> int:
        return (self.num_items * (self.dim + int(self.has_degrees))
                + self.num_layers * self.num_items * self.dim)


def clipped(x: np.ndarray, clip: float) -> tuple[np.ndarray, float]:
    """``x`` clipped in L2 to ``clip`` (:func:`~fedrec.privacy.clipping.clip_l2`, so the DP
    aggregate's own clipping leaves it unchanged) and the factor ``f`` it was scaled by."""
    out = clip_l2(torch.from_numpy(x), clip).numpy()
    norm = float(np.linalg.norm(x))
    return out, (float(np.linalg.norm(out)) / norm if norm > 0 else 1.0)


@dataclass(frozen=True)
class DPBudget:
    """How a client's round vector is bounded (module docstring): ``clip`` is ``C``;
    ``latent_clip`` ``b`` (0: the vector clipped as a whole) and ``latent_share`` ``s``."""

    clip: float
    latent_clip: float = 0.0
    latent_share: float = 0.5

    @classmethod
    def of(cls, cfg: Any) -> DPBudget:
        return cls(float(cfg.dp_clip), float(cfg.dp_latent_clip), float(cfg.dp_latent_share))

    @property
    def latent_weight(self) -> float:
        """``w = C sqrt(s) / b`` (1 when the vector is clipped as a whole): the server divides
        the decoded latent block by it."""
        if self.latent_clip <= 0:
            return 1.0
        return self.clip * math.sqrt(self.latent_share) / self.latent_clip

    def bound(self, x: np.ndarray, lay: DPLayout) -> tuple[np.ndarray, float, float]:
        """``x`` bounded to L2 ``C``: clipped as a whole, or (per-block) its head (item and
        degree blocks) to ``C sqrt(1 - s)`` and its latent block to ``b``, then weighted by
        ``w``. Also the factors the head and the latent block were scaled by."""
        if self.latent_clip <= 0 or lay.latent is None:
            out, f = clipped(x, self.clip)
            return out, f, f
        head, f_head = clipped(x[: lay.latent], self.clip * math.sqrt(1.0 - self.latent_share))
        tail, f_tail = clipped(x[lay.latent:], self.latent_clip)
        return np.concatenate([head, self.latent_weight * tail]), f_head, f_tail


def recorded(state: dict[str, Any], f_degree: float, f_latent: float,
             change: torch.Tensor | None, whole: bool = False) -> dict[str, Any]:
    """What the client records once its vector is in a sum: ``f_degree`` times its degree
    change added to the share of its indicator the server held and, for its latent sources,
    ``f_latent`` times the change it sent added to what the server held (or, ``whole``: under
    re-estimation, ``f_latent`` times the whole sources it sent)."""
    out: dict[str, Any] = {DEGREE_SENT: state[DEGREE_SENT]
                           + f_degree * (1.0 - state[DEGREE_SENT])}
    if change is not None:
        out["sent"] = f_latent * change if whole else state["sent"] + f_latent * change
    return out


def dp_tables(item_emb: torch.Tensor, latent_sums: torch.Tensor,
              degree_sum: torch.Tensor, public_degree: float = 0.0) -> dict[str, torch.Tensor]:
    """The tables a DP run sends: ``e_t^0``, ``e_t^k = A_t^k / sqrt(|N_t|)`` and ``|N_t|``,
    with ``|N_t| = max(D_t, 1)`` (post-processing of the noised sums ``A`` and ``D``) or, with
    ``public_degree`` ``c > 0``, ``c`` for every item."""
    degrees = (torch.full_like(degree_sum, public_degree) if public_degree > 0
               else degree_sum.clamp(min=1.0))
    return {"item_emb": item_emb.float(),
            "latent": (latent_sums / degrees.sqrt()[None, :, None]).float(),
            "degrees": degrees.float()}
