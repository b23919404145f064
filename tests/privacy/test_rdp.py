"""RDP curves, the Poisson-subsampled bound and the conversion, against dp-accounting."""

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant

from fedrec.errors import ConfigError
from fedrec.privacy.rdp import (
    ORDERS,
    gaussian_rdp,
    poisson_subsampled_rdp,
    rdp_epsilon,
    skellam_rdp,
)


def _dp_accounting_epsilon(event: dp_accounting.DpEvent, delta: float) -> float:
    acct = RdpAccountant(orders=[float(o) for o in ORDERS])
    acct.compose(event)
    return float(acct.get_epsilon(delta))


@pytest.mark.parametrize("z,count", [(0.8, 1), (1.5, 50), (4.0, 600)])
def test_gaussian_curve_matches_dp_accounting(z: float, count: int) -> None:
    ours = rdp_epsilon(count * gaussian_rdp(z), 1e-5)
    theirs = _dp_accounting_epsilon(
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), count), 1e-5)
    assert ours == pytest.approx(theirs, rel=1e-9)


@pytest.mark.parametrize("q,z,count", [(0.1, 1.0, 100), (0.02, 2.0, 1000), (0.5, 1.5, 30)])
def test_subsampled_bound_is_above_and_close_to_the_gaussian_specific_one(
        q: float, z: float, count: int) -> None:
    """Zhu & Wang's general bound can only be looser than dp-accounting's bound for the
    Poisson-subsampled Gaussian (an upper bound that is valid and not vacuous)."""
    ours = rdp_epsilon(count * poisson_subsampled_rdp(gaussian_rdp(z), q), 1e-5)
    theirs = _dp_accounting_epsilon(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), count), 1e-5)
    assert theirs <= ours * (1 + 1e-9)
    assert ours <= 1.6 * theirs
    unamplified = rdp_epsilon(count * gaussian_rdp(z), 1e-5)
    assert ours < unamplified


def test_skellam_curve_tends_to_the_gaussian_and_is_above_it() -> None:
    l2, z = 1e6, 1.3
    sk = skellam_rdp(l2 * 100, l2, (z * l2) ** 2)
    g = gaussian_rdp(z)
    assert np.all(sk >= g) and np.allclose(sk, g, rtol=1e-3)
    # With small sensitivities in integer units the extra term is visible.
    assert np.all(skellam_rdp(1000.0, 10.0, (z * 10) ** 2) - g > 0.05)


def test_rdp_bad_input() -> None:
    with pytest.raises(ConfigError):
        gaussian_rdp(0.0)
    with pytest.raises(ConfigError):
        skellam_rdp(1.0, 2.0, 1.0)  # l1 < l2
    with pytest.raises(ConfigError):
        poisson_subsampled_rdp(gaussian_rdp(1.0), 0.0)
    with pytest.raises(ConfigError):
        rdp_epsilon(gaussian_rdp(1.0), 0.0)
    assert rdp_epsilon(np.zeros(len(ORDERS)), 1e-5) == 0.0
