"""Input coercion shared by the metric modules (private).

Every metric accepts NumPy arrays, torch tensors (on any device, with or without autograd) or plain
Python sequences; these helpers turn them into NumPy arrays and raise :class:`ConfigError` with a
one-line message when the input is unusable.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fedrec.errors import ConfigError

ArrayLike = np.ndarray | torch.Tensor | Any


def to_numpy(x: ArrayLike, name: str) -> np.ndarray:
    """Return ``x`` as a NumPy array (a torch tensor is detached and copied to the CPU)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} is not array-like: {exc}") from None


def to_float64(x: ArrayLike, name: str) -> np.ndarray:
    """Return ``x`` as a float64 array, rejecting non-numeric data and NaN."""
    arr = to_numpy(x, name)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise ConfigError(f"{name} must be numeric, got dtype {arr.dtype}")
    out = arr.astype(np.float64, copy=False)
    if np.isnan(out).any():
        raise ConfigError(f"{name} contains NaN")
    return out


def check_same_shape(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    """Raise unless ``a`` and ``b`` are non-empty with exactly equal shapes (no broadcasting)."""
    if a.shape != b.shape:
        raise ConfigError(
            f"{name_a} and {name_b} have mismatched shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    if a.size == 0:
        raise ConfigError(f"{name_a} and {name_b} are empty")
