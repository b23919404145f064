"""The one-run audit: below the accounted epsilon with the mechanism on, above it when the
noise is removed (the mutation an accounting or noise bug amounts to)."""

import numpy as np
import pytest

from fedrec.errors import ConfigError
from fedrec.privacy.audit import audit_aggregate, epsilon_lower_bound
from fedrec.privacy.rdp import gaussian_rdp, rdp_epsilon

AUDIT = {"canaries": 1000, "dim": 20000, "clip": 1.0, "ks": (50, 100, 250)}


@pytest.mark.parametrize("mechanism,z,rounds", [("distributed", 2.0, 1),
                                                ("distributed", 3.0, 4),
                                                ("central", 2.0, 1)])
def test_audited_bound_below_accounted_and_mutation_caught(mechanism: str, z: float,
                                                           rounds: int) -> None:
    res = audit_aggregate(mechanism, noise_multiplier=z, rounds=rounds,
                          rng=np.random.default_rng(0), **AUDIT)
    assert 0 < res.epsilon_lower_bound < res.accounted_epsilon
    broken = audit_aggregate(mechanism, noise_multiplier=z, rounds=rounds,
                             rng=np.random.default_rng(0), remove_noise=True, **AUDIT)
    assert broken.accounted_epsilon == res.accounted_epsilon
    assert broken.epsilon_lower_bound > res.accounted_epsilon


def test_accounted_figure_is_the_mechanisms() -> None:
    res = audit_aggregate("central", noise_multiplier=1.5, rounds=3,
                          rng=np.random.default_rng(1), **AUDIT)
    assert res.accounted_epsilon == pytest.approx(rdp_epsilon(3 * gaussian_rdp(1.5), 1e-5))


def test_lower_bound_statistics() -> None:
    included = np.arange(200) % 2 == 0
    perfect = np.where(included, 1.0, -1.0)
    assert epsilon_lower_bound(perfect, included, (100,)) > 3.0
    random = np.random.default_rng(0).standard_normal(200)
    assert epsilon_lower_bound(random, included, (50,)) < 0.5
    with pytest.raises(ConfigError):
        epsilon_lower_bound(perfect, included, (101,))
