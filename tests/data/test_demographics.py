"""View 1: age, gender bit and occupation one-hot, from each user's own demographics."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.data import RatingDataset
from fedrec.data.demographics import demographic_view
from fedrec.data.side_info import UserInfo, user_info
from fedrec.errors import ConfigError


def _info(ages: list[int], genders: list[int], occupations: list[int]) -> UserInfo:
    return UserInfo(ages=np.array(ages), genders=np.array(genders),
                    occupations=np.array(occupations), zip_codes=("0",) * len(ages),
                    gender_names=("F", "M"), occupation_names=("a", "b", "c"))


def test_view_1_rows() -> None:
    features, names = demographic_view(_info([30, 120], [0, 1], [2, 0]))
    assert names == ("age", "gender=M", "occ=a", "occ=b", "occ=c")
    # age / 100, capped at 1: a public constant, so another user's age changes no row but its own
    assert features.tolist() == [[np.float32(0.3), 0, 0, 0, 1], [1, 1, 1, 0, 0]]
    assert np.array_equal(demographic_view(_info([30, 50], [0, 1], [2, 0]))[0][0], features[0])


def test_bad_demographics() -> None:
    with pytest.raises(ConfigError, match="user 1: negative age"):
        demographic_view(_info([3, -1], [0, 1], [0, 0]))


def test_ml100k_has_23_dimensions(ml100k: RatingDataset) -> None:
    features, names = demographic_view(user_info(ml100k))
    assert features.shape == (943, 23) and features.dtype == np.float32 and len(names) == 23
    assert features[:, 0].min() == np.float32(0.07) and features[:, 0].max() == np.float32(0.73)
    assert set(np.unique(features[:, 1])) == {0.0, 1.0}
    assert (features[:, 2:].sum(1) == 1).all()
    assert features[0, 0] == np.float32(0.24) and features[0, 1] == 1  # user 1: 24, M
    assert features[0, 2 + names[2:].index("occ=technician")] == 1
