"""Norm clipping, the step that bounds a mechanism's sensitivity.

Guarantees (the only facts the mechanisms rely on):

* ``clip_linf(x, C)``: every coordinate of the result lies in ``[-C, C]``, so two clipped
  vectors differ by at most ``2C`` per coordinate, ``2C·D`` in L1 and ``2C·sqrt(D)`` in L2
  (``D`` coordinates).
* ``clip_l2(x, C)``: the result has ``||y||_2 <= C``. The scale factor is
  ``min(1, C (1 - m) / ||x||_2)`` with the norm accumulated in float64 and the margin
  ``m = 2·eps(x.dtype) + 1e-12`` absorbing the rounding of the norm, the factor and the products,
  so the returned values satisfy the bound exactly (a plain ``C / ||x||`` can overshoot by an
  ulp);
  under replace-one two clipped vectors differ by at most ``2C`` in L2, and under
  add/remove-one a single vector contributes at most ``C``.

The ``*_rows`` variants clip each row of a ``(B, D)`` tensor independently (per-client
clipping of a vectorised cohort). All functions work on any device and return new tensors.
"""

from __future__ import annotations

import torch

from fedrec.errors import ConfigError

__all__ = ["clip_l2", "clip_l2_rows", "clip_linf", "clip_linf_rows"]


def _l2_factors(x: torch.Tensor, bound: float, dim: int | None) -> torch.Tensor:
    acc = torch.float32 if x.device.type == "mps" else torch.float64  # MPS has no float64
    norms = torch.linalg.vector_norm(x, dim=dim, keepdim=dim is not None, dtype=acc)
    margin = 2.0 * torch.finfo(x.dtype).eps + (1e-12 if acc == torch.float64 else 1e-5)
    target = bound * (1.0 - margin)
    return (target / norms).clamp(max=1.0).to(x.dtype)  # norm 0 -> inf -> 1


def _check_bound(bound: float) -> float:
    bound = float(bound)
    if not bound > 0.0 or bound == float("inf"):
        raise ConfigError(f"clip bound must be a finite number > 0, got {bound}")
    return bound


def _check_rows(x: torch.Tensor) -> None:
    if x.dim() != 2:
        raise ConfigError(f"row-wise clipping needs a (B, D) tensor, got shape {tuple(x.shape)}")


def clip_linf(x: torch.Tensor, bound: float) -> torch.Tensor:
    """Clamp every element of ``x`` to ``[-bound, bound]``."""
    bound = _check_bound(bound)
    return torch.clamp(x, -bound, bound)


def clip_l2(x: torch.Tensor, bound: float) -> torch.Tensor:
    """Scale ``x`` (treated as one flat vector) so that ``||x||_2 <= bound``."""
    bound = _check_bound(bound)
    if not x.is_floating_point():
        raise ConfigError(f"L2 clipping needs a floating-point tensor, got {x.dtype}")
    return x * _l2_factors(x, bound, None)


def clip_linf_rows(x: torch.Tensor, bound: float) -> torch.Tensor:
    """Clamp each row of a ``(B, D)`` tensor to ``[-bound, bound]``.

    L-infinity clipping is elementwise, so this equals :func:`clip_linf`; it exists so a cohort
    can be clipped with the same call shape as :func:`clip_l2_rows`.
    """
    _check_rows(x)
    return clip_linf(x, bound)


def clip_l2_rows(x: torch.Tensor, bound: float) -> torch.Tensor:
    """Scale each row of a ``(B, D)`` tensor independently so that ``||x[i]||_2 <= bound``."""
    bound = _check_bound(bound)
    _check_rows(x)
    if not x.is_floating_point():
        raise ConfigError(f"L2 clipping needs a floating-point tensor, got {x.dtype}")
    return x * _l2_factors(x, bound, 1)
