"""PTF-FedRec's formal upload mechanism (``upload_dp: gaussian``): a user-level (ε, δ)-DP
guarantee for everything a client uploads over the run, against the server.

Threat model: an honest-but-curious server (and anyone else who sees the uploads). It knows the
configuration, which clients uploaded in which round, and everything it sends them (the
dispersed items); it keeps every upload of the run. It does not know a client's secret key.
Client-side evaluation replies go to the experimenter, never the server
(:func:`fedrec.federation.dp_sum.evaluation_sender`).

Unit (neighbouring relation): one user's whole data -- its interactions, hence its negatives,
its trained model and everything derived from them -- replaced by any other; the participation
pattern (who uploaded when) is public.

The mechanism, per upload: the client draws ``m = min(upload_items, num_items)`` item ids
uniformly without replacement from the whole catalogue, keyed by its secret key and the round
(:func:`sample_items`: the draw does not depend on its data), scores them with its NeuMF,
``s = sigmoid(logits) in [0, 1]^m``, and uploads ``y = s + N(0, sigma^2 I_m)`` with ``sigma =
z sqrt(m)`` (:func:`release`; ``z`` the noise multiplier ``upload_noise``). The server clamps
``y`` to ``[0, 1]`` before using it as edge weights and soft labels (post-processing); the
unclamped values keep the scores' mean, so averaging them is unbiased (for the server's model and
for an attacker alike), and they are never tied.

Guarantee (computed in :meth:`UploadPlan.accountant`): the ids' distribution is the same for
every data of the user, so they carry no privacy loss; for two data of one user, ``s`` and
``s'`` lie in ``[0, 1]^m``, so ``||s - s'||_2 <= sqrt(m) = Δ₂`` (the sigmoid is the clipping):
each upload is a Gaussian mechanism of noise multiplier ``z`` (Balle & Wang 2018). A user's
uploads are an adaptive composition (each round's model depends on dispersals that depend on
earlier uploads); a user with ``n`` uploads is protected by the ``n``-fold composition, which
is exactly a Gaussian mechanism of multiplier ``z / sqrt(n)`` (``mu``-GDP with ``mu = sqrt(n) /
z``: Dong, Roth & Su 2022), whose exact (ε, δ) is Balle and Wang's (:func:`composed_epsilon`).
The report accounts for the most-participating client with
:func:`fedrec.privacy.accounting.worst_client_accountant` (PLD, RDP; the smaller is reported,
PLD, which matches the closed form); no amplification by sampling: the server knows who
uploaded. ``target_epsilon`` solves ``z`` before training for ``rounds`` uploads (at most one
per round): the run's ε is at most the target whatever the cohorts.

What it costs: the server learns each user's preferences only through noisy scores on random
items (measured accuracy: ``docs/ptf-fedrec.md``). :func:`audit_uploads` lower-bounds ε
empirically (Steinke, Nasr & Jagielski 2023) on canary users run through :func:`release`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import torch

from fedrec.core.rng import counter_normal, counter_uniform
from fedrec.errors import ConfigError
from fedrec.privacy.accounting import PrivacyAccountant, worst_client_accountant
from fedrec.privacy.audit import epsilon_lower_bound
from fedrec.privacy.mechanisms import GaussianMechanism
from fedrec.privacy.report import Attack, Guarantee
from fedrec.privacy.user_level import solve_noise_multiplier

UPLOAD_DP = ("none", "gaussian")
_SAMPLE_TAG, _NOISE_TAG = 6, 7  # counter tags after the client's upload draws 1-5


def composed_epsilon(noise_multiplier: float, uploads: int, delta: float) -> float:
    """Exact ε at ``delta`` of ``uploads`` Gaussian releases of multiplier ``noise_multiplier``:
    the Gaussian mechanism of multiplier ``noise_multiplier / sqrt(uploads)`` (module doc)."""
    if uploads <= 0:
        return 0.0
    return float(dp_accounting.get_epsilon_gaussian(noise_multiplier / math.sqrt(uploads),
                                                    delta))


@functools.lru_cache(maxsize=64)
def solve_upload_noise(target_epsilon: float, uploads: int, delta: float) -> float:
    """The smallest ``z`` (to 0.1%) whose ``uploads``-fold composition is at most
    ``target_epsilon`` at ``delta``; a one-line :class:`ConfigError` when none up to 1000 is."""
    return solve_noise_multiplier(target_epsilon,
                                  lambda z: composed_epsilon(z, uploads, delta))


@dataclass(frozen=True)
class UploadPlan:
    """The mechanism's parameters: ``items`` (``m``) per upload, the noise multiplier ``z``,
    the ``delta`` of every reported ε and the ``rounds`` it was planned for."""

    items: int
    noise_multiplier: float
    delta: float
    rounds: int

    @property
    def sensitivity(self) -> float:
        """``Δ₂ = sqrt(m)``: two score vectors in ``[0, 1]^m`` differ by at most this."""
        return math.sqrt(self.items)

    @property
    def sigma(self) -> float:
        return self.noise_multiplier * self.sensitivity

    def accountant(self, participations: Mapping[Any, int]) -> PrivacyAccountant:
        """The most-participating client's uploads, each one Gaussian release (module doc)."""
        mech = GaussianMechanism(self.sensitivity, noise_multiplier=self.noise_multiplier)
        return worst_client_accountant(mech, participations)

    def epsilon(self, uploads: int) -> float:
        """The accounted ε of a client with ``uploads`` uploads."""
        return self.accountant({0: uploads}).report(self.delta).epsilon if uploads else 0.0


def upload_plan(cfg: Any, num_items: int) -> UploadPlan | None:
    """The plan of ``cfg`` (a :class:`PTFFedRecConfig`) over ``num_items`` items (None without
    ``upload_dp``); ``z`` is ``upload_noise`` or solved from ``target_epsilon``."""
    if cfg.upload_dp == "none":
        return None
    z = (cfg.upload_noise if cfg.upload_noise > 0
         else solve_upload_noise(float(cfg.target_epsilon), int(cfg.rounds), float(cfg.dp_delta)))
    return UploadPlan(min(int(cfg.upload_items), int(num_items)), float(z),
                      float(cfg.dp_delta), int(cfg.rounds))


def check_upload_dp(cfg: Any) -> None:
    """One-line :class:`ConfigError` for a combination the mechanism cannot take, and for a
    ``target_epsilon`` no noise up to 1000 reaches in ``rounds`` uploads (before training)."""
    formal = cfg.upload_noise > 0 or cfg.target_epsilon > 0
    if cfg.upload_dp == "none":
        if formal:
            raise ConfigError("upload_noise / target_epsilon need upload_dp=gaussian (PTF-FedRec's "
                              "only formal mode; its defenses give no epsilon)")
        return
    if cfg.defense != "none":
        raise ConfigError(f"upload_dp={cfg.upload_dp} uploads a public-size random item sample, "
                          f"not the trained items defense={cfg.defense!r} samples: set "
                          "defense=none")
    if cfg.upload_noise > 0 and cfg.target_epsilon > 0:
        raise ConfigError("give upload_noise or target_epsilon, not both")
    if not formal:
        raise ConfigError(f"upload_dp={cfg.upload_dp} needs upload_noise > 0 or "
                          "target_epsilon > 0")
    if not 0 < cfg.dp_delta < 1:
        raise ConfigError(f"upload_dp needs 0 < dp_delta < 1, got {cfg.dp_delta}")
    if cfg.target_epsilon > 0:
        solve_upload_noise(float(cfg.target_epsilon), int(cfg.rounds), float(cfg.dp_delta))


def sample_items(keys: torch.Tensor, rnd: int, num_items: int, m: int,
                 chunk_cells: int = 1 << 24) -> tuple[torch.Tensor, torch.Tensor]:
    """Per client ``c`` (its secret key ``keys[c]``): the ``m`` items with the smallest
    ``counter_uniform(key, rnd, tag, item)``, a uniform sample without replacement independent
    of its data. Returns ``(local, items)`` sorted by client, then item."""
    m = min(m, num_items)
    all_items = torch.arange(num_items)
    rows = max(1, chunk_cells // max(num_items, 1))
    parts = []
    for start in range(0, len(keys), rows):
        key = counter_uniform(keys[start : start + rows, None], torch.tensor(rnd),
                              torch.tensor(_SAMPLE_TAG), all_items[None, :])
        parts.append(torch.sort(torch.topk(key, m, dim=1, largest=False).indices, dim=1).values)
    items = torch.cat(parts) if parts else torch.empty(0, m, dtype=torch.int64)
    local = torch.arange(len(keys))[:, None].expand(-1, m)
    return local.reshape(-1), items.reshape(-1)


def release(raw: torch.Tensor, keys: torch.Tensor, rnd: int, items: torch.Tensor,
            sigma: float) -> torch.Tensor:
    """``raw + sigma N(0, 1)`` per row (float32), the noise keyed by the row's client key
    ``keys``, the round and the item (so a client's noise is its own, whatever its cohort)."""
    noise = counter_normal(keys, torch.tensor(rnd), torch.tensor(_NOISE_TAG), items)
    return (raw.double() + sigma * noise).float()


@dataclass(frozen=True)
class UploadAudit:
    """The audited lower bound on ε and the accounted ε of the same uploads."""

    epsilon_lower_bound: float
    accounted_epsilon: float
    canaries: int
    uploads: int


def audit_uploads(plan: UploadPlan, canaries: int, uploads: int, seed: int,
                  ks: tuple[int, ...] = (25, 50, 100), beta: float = 0.05,
                  remove_noise: bool = False) -> UploadAudit:
    """The one-run audit (:mod:`fedrec.privacy.audit`) of :func:`release` on canary users.

    Each canary is a user included with probability 1/2: included, its model scores every
    uploaded item 1, else 0 (the two data at the sensitivity's distance ``sqrt(m)``). It uploads
    ``uploads`` times through :func:`release` with its own key; its audit score is the sum of
    everything it uploaded. ``remove_noise``: the mutation (sigma 0) that the audit must catch
    wherever the accounted ε is below what it can certify."""
    rng = np.random.default_rng(seed)
    included = rng.random(canaries) < 0.5
    keys = torch.from_numpy(rng.integers(0, 2**62, canaries))
    sigma = 0.0 if remove_noise else plan.sigma
    scores = np.zeros(canaries)
    for rnd in range(1, uploads + 1):
        local, items = sample_items(keys, rnd, plan.items, plan.items)
        raw = torch.from_numpy(included.astype(np.float64))[local]
        up = release(raw, keys[local], rnd, items, sigma)
        scores += np.bincount(local.numpy(), weights=up.double().numpy(), minlength=canaries)
    return UploadAudit(epsilon_lower_bound(scores, included, ks, beta), plan.epsilon(uploads),
                       canaries, uploads)


def upload_dp_report(plan: UploadPlan, participations: Mapping[Any, int],
                     attack: Attack | None = None, **details: Any) -> Guarantee:
    """The run's guarantee (:mod:`fedrec.privacy.report`), with the ``attack`` measured on the
    uploads and its ``details``."""
    rep = plan.accountant(participations).report(plan.delta)
    most = max(participations.values(), default=0)
    guarantee = (
        f"user-level ({rep.epsilon:.4g}, {plan.delta:g})-DP against the server: every upload "
        f"is the client model's scores on {plan.items} items drawn uniformly from the catalogue "
        f"(independent of its data) plus Gaussian noise sigma {plan.sigma:.4g} = "
        f"{plan.noise_multiplier:.4g} x sqrt({plan.items}); composed over "
        f"the {most} uploads of the most-participating client")
    return Guarantee(
        guarantee, rep.epsilon, plan.delta,
        f"{rep.method} (Gaussian composed over the most-participating client's uploads; no "
        "amplification: the server knows who uploaded)",
        unit="user-level: one user's whole data (interactions, hence its model and every "
             "upload of the run) replaced by any other; who uploaded when is public",
        threat="against the server: honest-but-curious, it keeps every upload, knows the "
               "configuration, the participation and what it dispersed (not the client's "
               "key); client evaluation replies go to the experimenter",
        attack=attack, details={
        "protection": guarantee,
        "epsilon_per_upload": plan.epsilon(1),
        "epsilon_pld": rep.epsilon_pld,
        "epsilon_rdp": rep.epsilon_rdp,
        "epsilon_closed_form": composed_epsilon(plan.noise_multiplier, most, plan.delta),
        "upload_dp": "gaussian",
        "upload_items": plan.items,
        "noise_multiplier": plan.noise_multiplier,
        "sigma": plan.sigma,
        "sensitivity_l2": plan.sensitivity,
        "participations_max": most,
        "planned_uploads": plan.rounds,
        **details})
