"""The one-run audit: below the accounted epsilon with the mechanism on, above it when the
noise is removed (the mutation an accounting or noise bug amounts to)."""

import numpy as np
import pytest

from fedrec.errors import ConfigError
from fedrec.privacy.audit import audit_aggregate, epsilon_lower_bound
from fedrec.privacy.rdp import gaussian_rdp, rdp_epsilon
from fedrec.privacy.skellam import SkellamEncoding

AUDIT = {"canaries": 1000, "dim": 20000, "clip": 1.0, "ks": (50, 100, 250)}


class _Noiseless(SkellamEncoding):
    @property
    def client_variance(self) -> float:
        return 0.0


def _accounted(mechanism: str, z: float, rounds: int, members: int) -> float:
    if mechanism == "central":
        return rdp_epsilon(rounds * gaussian_rdp(z), 1e-5)
    enc = SkellamEncoding.for_sum(AUDIT["dim"], members, members, 1.0, z, 64)
    return rdp_epsilon(rounds * enc.rdp(members), 1e-5)


@pytest.mark.parametrize("mechanism,z,rounds", [("distributed", 2.0, 1),
                                                ("distributed", 3.0, 4),
                                                ("central", 2.0, 1)])
def test_audited_bound_below_accounted_and_mutation_caught(mechanism: str, z: float,
                                                           rounds: int) -> None:
    res = audit_aggregate(mechanism, noise_multiplier=z, rounds=rounds,
                          rng=np.random.default_rng(0), **AUDIT)
    accounted = _accounted(mechanism, z, rounds, res.included)
    assert res.epsilon_lower_bound < accounted
    if mechanism == "distributed":
        broken = audit_aggregate(mechanism, noise_multiplier=z, rounds=rounds,
                                 rng=np.random.default_rng(0), encoding_type=_Noiseless,
                                 **AUDIT)
    else:
        broken = audit_aggregate(mechanism, noise_multiplier=1e-9, rounds=rounds,
                                 rng=np.random.default_rng(0), **AUDIT)
    assert broken.epsilon_lower_bound > accounted


def test_lower_bound_statistics() -> None:
    included = np.arange(200) % 2 == 0
    perfect = np.where(included, 1.0, -1.0)
    assert epsilon_lower_bound(perfect, included, (100,)) > 3.0
    random = np.random.default_rng(0).standard_normal(200)
    assert epsilon_lower_bound(random, included, (50,)) < 0.5
    with pytest.raises(ConfigError):
        epsilon_lower_bound(perfect, included, (101,))
