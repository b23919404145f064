"""Feras's calibrated mode for the embedding uploads (``embedding_dp = node``), and its report.

**Unit.** A private node's attribute row ``x_v`` (one row of ``X``, held by the one host that
owns ``v``). Neighbouring datasets replace ``x_v`` by any other row (replace-one); everything
else, labels included, is the same. Public nodes' attributes are public and not protected.
With a handful of hosts, host-level DP on averages of N = 4 uploads would need noise that
drowns every average, so the host is not the unit.

**Mechanism** (``share_at = projection`` only). A host's upload of node ``v`` is
``u_v = clip_C(drop(x_v) W1) + N(0, (sigma C)^2 I)`` where ``clip_C`` scales a row to L2 norm at
most ``C`` (``embedding_clip``) and the noise is drawn from the host's secret for every private
row (public rows are uploaded clipped, without noise: they hold no protected data). For fixed
first-layer weights ``W1`` and dropout mask, row ``u`` of the upload depends on ``x_u`` alone
(the row normalisation of ``X`` and the dropout are row-wise), so replacing ``x_v`` changes row
``v`` only, by at most ``2C`` in L2 (both rows lie in the ball of radius ``C``): one Gaussian
mechanism of L2 sensitivity ``2C`` and noise multiplier ``z = sigma C / 2C = sigma / 2``.
With ``share_at = layer`` the uploaded ``H1 = ReLU(A P + b1)`` mixes ``x_v`` into every
neighbour's row (``A`` is the sampled subgraph's operator, whose entries GraphSAINT's
normalisation rescales by ``1 / alpha``), so the mode refuses it (:func:`check`).

**Composition.** A private node is uploaded at most once per iteration (its owner's subgraph
holds it at most once) and once per evaluated round (the round's validation and test passes
upload the same noise on the same weights, one release): ``n = rounds * iterations_per_round +
evaluated rounds`` releases, composed adaptively (each later upload is computed from weights
that saw the earlier averages). The sampler is public randomness (the AS can recompute every
subgraph), so no amplification is claimed. ``epsilon`` at ``delta``: the smallest of the PLD and
RDP bounds of ``n`` Gaussian releases at ``z`` (:class:`fedrec.privacy.PrivacyAccountant`);
``sigma`` is given, or solved from ``embedding_target_epsilon`` on the RDP bound of the planned
``n`` (:func:`fedrec.privacy.user_level.solve_noise_multiplier`), before training, the same at
every party.

**What it does not cover.** The bound is for the embedding uploads *given the weights* they were
computed with: ``W1`` (and the rest of the network) is trained on every visible training node,
so it depends on ``x_v`` too, and the host sends its weights to the AS in clear every ``q``
iterations. Neither the weights sent nor the weights' influence on the other rows of an upload
is bounded (that would need DP-SGD with per-node clipping, not built): the run as a whole has
**no formal guarantee**; the report gives the uploads' figure under its own name and the
weights' status with the measured attribute-inference attack.

**Training.** A host feeds its second layer its own clipped projections of the nodes it sees
and the AS's averages of the others (in the other modes the AS's averages of every node it
has): averaging its own rows with the other hosts' noisy ones would only add noise.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import torch

from fedrec.errors import ConfigError
from fedrec.privacy.accounting import PrivacyAccountant, Release
from fedrec.privacy.clipping import clip_l2_rows
from fedrec.privacy.rdp import gaussian_rdp, rdp_epsilon
from fedrec.privacy.report import Attack, Guarantee, NoGuarantee, PrivacyReport
from fedrec.privacy.user_level import solve_noise_multiplier

if TYPE_CHECKING:
    from fedrec.algorithms.methods.feras.config import FerasConfig

__all__ = ["UNIT", "check", "clip_rows", "noise_multiplier", "planned_uploads",
           "privacy_report", "upload_accountant", "upload_noise"]

UNIT = ("node-level: one private node's attribute row x_v (replace-one; held by the one host "
        "that owns v; public nodes' attributes are public)")
THREAT = ("against the aggregation server and the other hosts: the AS sees every upload of every "
          "host, the other hosts the AS's averages; honest-but-curious")


def planned_uploads(cfg: FerasConfig) -> int:
    """``n``: the most uploads of one private node over the run (module docstring): one per
    iteration and one per evaluated round (every ``eval_every`` rounds and the last, as
    :func:`fedrec.rounds.is_eval_round`)."""
    evaluated = cfg.rounds // cfg.eval_every + (1 if cfg.rounds % cfg.eval_every else 0)
    return cfg.rounds * cfg.iterations_per_round + evaluated


@lru_cache(maxsize=64)
def _solve(target: float, uploads: int, delta: float) -> float:
    def epsilon_of(sigma: float) -> float:
        return rdp_epsilon(uploads * gaussian_rdp(sigma / 2.0), delta)
    return solve_noise_multiplier(target, epsilon_of, low=0.05, high=1e4)


def noise_multiplier(cfg: FerasConfig) -> float:
    """``sigma`` (noise std / C): ``embedding_noise_multiplier``, or solved from
    ``embedding_target_epsilon`` over :func:`planned_uploads` (a one-line
    :class:`ConfigError` when no ``sigma`` up to 10^4 reaches it)."""
    if cfg.embedding_noise_multiplier > 0:
        return float(cfg.embedding_noise_multiplier)
    return _solve(float(cfg.embedding_target_epsilon), planned_uploads(cfg),
                  float(cfg.embedding_delta))


def check(cfg: FerasConfig) -> None:
    """The mode's one-line errors, before training (called by :meth:`FerasConfig.validate`)."""
    if cfg.embedding_dp == "none":
        return
    if not cfg.shares_embeddings:
        raise ConfigError(f"embedding_dp={cfg.embedding_dp} calibrates the embedding uploads; "
                          f"share={cfg.share} uploads none")
    if cfg.share_at != "projection":
        raise ConfigError("embedding_dp=node needs share_at=projection: with share_at=layer "
                          "each uploaded H1 row mixes the node's neighbours' attributes, so one "
                          "node's row changes several uploaded rows")
    given, target = cfg.embedding_noise_multiplier > 0, cfg.embedding_target_epsilon > 0
    if given == target:
        raise ConfigError("embedding_dp=node needs exactly one of embedding_noise_multiplier "
                          "> 0 and embedding_target_epsilon > 0")
    if not 0 < cfg.embedding_delta < 1:
        raise ConfigError(f"embedding_delta must be in (0, 1), got {cfg.embedding_delta}")
    noise_multiplier(cfg)  # a target its rounds cannot meet fails here


def clip_rows(cfg: FerasConfig, rows: torch.Tensor) -> torch.Tensor:
    """Each row scaled by ``min(1, C / ||row||)`` (``C = embedding_clip``), differentiable with
    a finite gradient at zero rows (the unseen nodes'): the host trains on what it uploads.
    The bound itself is enforced again on the uploaded rows by :func:`upload_noise`."""
    norms = torch.linalg.vector_norm(rows, dim=1, keepdim=True).clamp_min(1e-12)
    return rows * (cfg.embedding_clip / norms).clamp(max=1.0)


def upload_noise(cfg: FerasConfig, rows: torch.Tensor, private: np.ndarray,
                 generator: torch.Generator) -> torch.Tensor:
    """``rows`` clipped to L2 norm ``C`` (:func:`fedrec.privacy.clipping.clip_l2_rows`, whose
    bound holds exactly), with ``N(0, (sigma C)^2)`` on every coordinate of the ``private``
    rows; the public rows without noise."""
    rows = clip_l2_rows(rows, cfg.embedding_clip)
    noise = torch.randn(rows.shape, generator=generator) * (noise_multiplier(cfg)
                                                           * cfg.embedding_clip)
    keep = torch.from_numpy(np.asarray(private, dtype=bool))[:, None]
    return rows + noise * keep


def upload_accountant(cfg: FerasConfig) -> PrivacyAccountant:
    """:func:`planned_uploads` Gaussian releases at ``z = sigma / 2`` (sensitivity ``2C``)."""
    acct = PrivacyAccountant()
    acct.record_release(Release("gaussian", noise_multiplier(cfg) / 2.0,
                                count=planned_uploads(cfg)))
    return acct


def _attack(metrics: dict[str, float] | None) -> Attack:
    """The AS's attribute inference (AUC, not F1), or how to measure it."""
    name = "the AS's attribute inference"
    if not metrics:
        return Attack(name, how_to_measure="run with --set attack=true (AUC, chance 0.5)")
    auc = {rule: metrics.get(f"attack_auc_private_{rule}", float("nan"))
           for rule in ("inversion", "decoder", "prior")}
    return Attack(name, outcome=(
        f"AUC on private nodes: inversion {auc['inversion']:.3f}, decoder "
        f"{auc['decoder']:.3f} (chance 0.5; the word-frequency prior, which reads no upload, "
        f"{auc['prior']:.3f})"))


def privacy_report(cfg: FerasConfig, leakage: str,
                   attack: dict[str, float] | None) -> PrivacyReport:
    """The run's report: no formal guarantee as a whole (the weights); with ``embedding_dp``,
    the embedding uploads' (epsilon, delta) as the part ``embedding_uploads``, never as the
    run's ``epsilon``."""
    aucs = {k: v for k, v in attack.items() if k.startswith("attack_auc_")} if attack else {}
    if cfg.embedding_dp == "none":
        return PrivacyReport((NoGuarantee(
            protection="node attributes and labels stay on their host", leakage=leakage,
            attack=_attack(attack), details=aucs),))
    rep = upload_accountant(cfg).report(float(cfg.embedding_delta))
    sigma = noise_multiplier(cfg)
    uploads = Guarantee(
        f"({rep.epsilon:.4g}, {rep.delta:g})-DP for {UNIT}, of every embedding upload of the "
        "run, for the weights each was computed with", rep.epsilon, rep.delta, rep.method,
        unit=UNIT, threat=THREAT, part="embedding_uploads", details={
            "epsilon_pld": rep.epsilon_pld, "epsilon_rdp": rep.epsilon_rdp,
            "mechanism": "Gaussian on each private row clipped to C in L2: sensitivity 2C, "
                         "noise std sigma C",
            "clip": float(cfg.embedding_clip), "noise_multiplier_sigma": sigma,
            "noise_multiplier_of_sensitivity": sigma / 2.0,
            "uploads_per_node": planned_uploads(cfg),
            "sampling": "none claimed (public sampler)"})
    weights = NoGuarantee(
        protection="none: sent in clear to the AS every q iterations",
        leakage="the weights depend on every visible training node's attributes and labels; "
                "DP-SGD with per-node clipping would be needed to bound them (not built)",
        attack=_attack(attack), part="weights", details=aucs)
    return PrivacyReport((NoGuarantee(
        protection=(f"embedding uploads ({rep.epsilon:.4g}, {rep.delta:g})-DP per private "
                    "node given the weights; no formal guarantee for the weights"),
        leakage=leakage, unit=UNIT, threat=THREAT), uploads, weights))
