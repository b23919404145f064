"""FL-MV-DSSM's view 1: a user's demographics as a feature vector.

Each row is a function of that user's own demographics only (age, gender, occupation of
:class:`~fedrec.data.side_info.UserInfo`) and of public constants, so a device can compute it
from what it holds: ``[age / 100 (capped at 1), gender bit (1 = M, 0 = F), occupation one-hot]``.
Age is divided by the public constant :data:`AGE_SCALE` rather than scaled by the users' own
minimum and maximum (what the ML-100K loader's ``user_features`` do), which would be a statistic
across users. ML-100K: ages 7..73 give 0.07..0.73; 21 occupations, so **23** dimensions, the
23 of FL-MV-DSSM's Table I.
"""

from __future__ import annotations

import numpy as np

from fedrec.data.side_info import UserInfo
from fedrec.errors import ConfigError

#: Ages are divided by this (and capped at 1): a public constant, not a statistic of the users.
AGE_SCALE = 100.0


def demographic_view(info: UserInfo) -> tuple[np.ndarray, tuple[str, ...]]:
    """``(features, names)``: the ``(num_users, 2 + num_occupations)`` float32 view-1 matrix
    (module docstring) and its column names (``age``, ``gender=M``, ``occ=<name>``...)."""
    if "M" not in info.gender_names or len(info.gender_names) != 2:
        raise ConfigError(f"view 1 needs the genders F and M, got {info.gender_names}")
    if (info.ages < 0).any():
        raise ConfigError(f"user {int(np.argmax(info.ages < 0))}: negative age")
    n, n_occ = len(info), len(info.occupation_names)
    age = np.minimum(info.ages.astype(np.float64) / AGE_SCALE, 1.0)
    male = (info.genders == info.gender_names.index("M")).astype(np.float32)
    occupation = np.zeros((n, n_occ), dtype=np.float32)
    occupation[np.arange(n), info.occupations] = 1.0
    features = np.hstack([age[:, None].astype(np.float32), male[:, None], occupation])
    names = ("age", "gender=M", *(f"occ={o}" for o in info.occupation_names))
    return features, names
