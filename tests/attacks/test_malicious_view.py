"""FL-MV-DSSM's malicious view (issue item 8): null item updates, the innocent view's update
read from the device's local aggregate, without and with the Gaussian mechanism."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.algorithms import resolve_config
from fedrec.algorithms.methods.fl_mv_dssm import FLMVDSSMConfig, multiview_of
from fedrec.algorithms.methods.fl_mv_dssm.attack import malicious_view_attack
from fedrec.data import RatingDataset
from fedrec.data.multiview import MultiViewData
from fedrec.errors import ConfigError
from fedrec.federation.secrets import ClientSecrets

pytestmark = pytest.mark.usefixtures("single_thread")

SECRET = ClientSecrets(bytes(range(32)))


def config(**overrides: object) -> FLMVDSSMConfig:
    base = {"clients_per_round": 4, "secure_aggregation": False}
    return resolve_config("fl-mv-dssm", "ml-100k",  # type: ignore[return-value]
                          overrides={**base, **overrides})


@pytest.fixture(scope="module")
def mv(ml100k: RatingDataset) -> MultiViewData:
    return multiview_of(config(), ml100k)


def test_without_noise_the_malicious_view_reads_the_innocent_update(mv: MultiViewData) -> None:
    out = malicious_view_attack(config(noise_multiplier=0.0), mv, "demographics", 1, SECRET)
    assert out["attacked"] == 4 and out["innocent"] == "svd"
    # the aggregate is clip(g_innocent) / 2: only fixed-point rounding separates the two
    assert out["cosine_min"] > 0.999
    assert out["label_auc_mean"] > 0.7  # the update points at the device's positives
    assert out["epsilon_T100"] == float("inf")


def test_the_gaussian_mechanism_hides_it(mv: MultiViewData) -> None:
    out = malicious_view_attack(config(noise_multiplier=1.0), mv, "svd", 1, SECRET)
    assert out["attacked"] == 4 and out["innocent"] == "demographics"
    assert abs(out["cosine_mean"]) < 0.05
    assert out["label_auc_mean"] < 0.6
    assert np.isfinite(out["epsilon_rounds"]) and out["epsilon_T100"] > out["epsilon_rounds"]


def test_bad_input(mv: MultiViewData) -> None:
    with pytest.raises(ConfigError, match="plain upload"):
        malicious_view_attack(config(secure_aggregation=True), mv, "svd")
    with pytest.raises(ConfigError, match="two views"):
        malicious_view_attack(config(views=["svd"]), mv, "svd")
