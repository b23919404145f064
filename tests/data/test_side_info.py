"""The side-information accessors: what a dataset without item metadata or demographics says."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.data import Interactions, RatingDataset
from fedrec.data.side_info import ItemInfo, UserInfo, item_info, user_info
from fedrec.errors import ConfigError


def _dataset(meta: dict) -> RatingDataset:
    rows = Interactions(np.array([0]), np.array([0]), np.array([5.0], np.float32))
    return RatingDataset(name="tiny", num_users=1, num_items=1, train=rows, test=rows, meta=meta)


def test_accessors_return_what_the_loader_kept() -> None:
    items = ItemInfo(titles=("A",), years=np.array([1995], np.int16),
                     genres=np.ones((1, 1), np.float32), genre_names=("Drama",))
    users = UserInfo(ages=np.array([30]), genders=np.array([0]), occupations=np.array([0]),
                     zip_codes=("12345",), gender_names=("F", "M"), occupation_names=("x",))
    ds = _dataset({"item_info": items, "user_info": users})
    assert item_info(ds) is items and user_info(ds) is users
    assert len(items) == 1 and len(users) == 1


def test_a_dataset_without_side_information_is_one_line_error() -> None:
    ds = _dataset({})
    with pytest.raises(ConfigError, match=r"^tiny: no user demographics .*ml-100k") as err:
        user_info(ds)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=r"^tiny: no item titles and genres"):
        item_info(ds)
