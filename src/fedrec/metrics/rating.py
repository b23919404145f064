"""Error metrics for explicit-rating prediction.

For predictions ``p_i`` and targets ``r_i``, ``i = 1..N``:

* ``rmse = sqrt( (1/N) * sum_i (p_i - r_i)^2 )``
* ``mae  = (1/N) * sum_i |p_i - r_i|``

Both are computed in float64 on exactly what they are given. Clamping predictions to the rating
range (for example ``pred.clamp(rating_min, rating_max)`` with the bounds of a
:class:`fedrec.data.types.RatingDataset`) is the caller's job: do it before calling, because it
changes the result.
"""

from __future__ import annotations

import numpy as np

from fedrec.errors import ConfigError
from fedrec.metrics._inputs import ArrayLike, check_same_shape, to_float64


def _diff(pred: ArrayLike, target: ArrayLike) -> np.ndarray:
    p = to_float64(pred, "pred")
    t = to_float64(target, "target")
    check_same_shape(p, t, "pred", "target")
    if not np.isfinite(p).all():
        raise ConfigError("pred contains infinite values")
    if not np.isfinite(t).all():
        raise ConfigError("target contains infinite values")
    return p - t


def rmse(pred: ArrayLike, target: ArrayLike) -> float:
    """Root mean squared error ``sqrt(mean((pred - target)^2))``.

    ``pred`` and ``target`` are NumPy arrays, torch tensors or sequences of the same shape
    (no broadcasting). Raises :class:`~fedrec.errors.ConfigError` on mismatched shapes, empty
    inputs, NaN or infinite values. No clamping is applied.
    """
    d = _diff(pred, target)
    return float(np.sqrt(np.mean(d * d)))


def mae(pred: ArrayLike, target: ArrayLike) -> float:
    """Mean absolute error ``mean(|pred - target|)``; same input rules as :func:`rmse`."""
    d = _diff(pred, target)
    return float(np.mean(np.abs(d)))
