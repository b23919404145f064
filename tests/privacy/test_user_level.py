"""Per-threat user-level accounting and the noise-multiplier solver."""

import numpy as np
import pytest

from fedrec.errors import ConfigError
from fedrec.privacy.rdp import gaussian_rdp, poisson_subsampled_rdp, rdp_epsilon
from fedrec.privacy.user_level import UserLevelAccountant, solve_noise_multiplier


def test_server_figure_composes_the_most_participating_clients_rounds() -> None:
    acct = UserLevelAccountant("distributed", 0.25, lambda _k: gaussian_rdp(2.0))
    for r in range(40):
        acct.record("g", [0] + ([1] if r % 4 == 0 else []))  # client 0 in all, 1 in a quarter
    rep = acct.report(1e-5)
    assert acct.participations_max() == 40
    assert rep["epsilon_server_rdp"] == pytest.approx(rdp_epsilon(40 * gaussian_rdp(2.0), 1e-5))
    released = rdp_epsilon(40 * poisson_subsampled_rdp(gaussian_rdp(2.0), 0.25), 1e-5)
    assert rep["epsilon_released_model_rdp"] == pytest.approx(released)
    assert rep["epsilon_released_model_rdp"] < rep["epsilon_server_rdp"]


def test_central_mechanism_has_no_server_bound_and_a_pld_figure() -> None:
    acct = UserLevelAccountant("central", 0.1, lambda _k: gaussian_rdp(1.0))
    for _ in range(100):
        acct.record(None, [0, 1])
    rep = acct.report(1e-5, gaussian_reference=1.0)
    assert rep["epsilon_server_rdp"] is None and rep["epsilon_server_pld"] is None
    assert 0 < rep["epsilon_released_model_pld"] <= rep["epsilon_released_model_rdp"]


def test_per_round_curves_are_composed_per_client() -> None:
    curves = {"weak": gaussian_rdp(0.5), "strong": gaussian_rdp(5.0)}
    acct = UserLevelAccountant("distributed", 1.0, curves.__getitem__)
    acct.record("weak", [0])
    for _ in range(10):
        acct.record("strong", [1])
    expected = np.maximum(curves["weak"], 10 * curves["strong"])
    assert np.allclose(acct.server_curve(), expected)


def test_solver_reaches_the_target_and_refuses_the_unreachable() -> None:
    def eps(z: float) -> float:
        return rdp_epsilon(50 * gaussian_rdp(z), 1e-5)

    z = solve_noise_multiplier(4.0, eps)
    assert eps(z) <= 4.0 < eps(z / 1.01)
    with pytest.raises(ConfigError, match="target_epsilon"):
        solve_noise_multiplier(1e-4, eps, high=10.0)
    with pytest.raises(ConfigError):
        solve_noise_multiplier(0.0, eps)
