import math

import numpy as np
import pytest
import torch
from scipy import stats

from fedrec.errors import ConfigError
from fedrec.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    analytic_gaussian_delta,
    clip_linf,
    linf_laplace_epsilon,
)


def test_laplace_epsilon_is_sensitivity_over_scale() -> None:
    mech = LaplaceMechanism(sensitivity_l1=2.0, scale=4.0)
    assert mech.epsilon() == 0.5
    assert mech.epsilon(delta=1e-5) == 0.5  # pure DP: same for every delta
    assert mech.noise_multiplier == 2.0


def _generator(kind: str, seed: int) -> torch.Generator | np.random.Generator:
    return torch.Generator().manual_seed(seed) if kind == "torch" else np.random.default_rng(seed)


@pytest.mark.parametrize("gen", ["torch", "numpy"])
def test_laplace_noise_is_reproducible_and_laplace_distributed(gen: str) -> None:
    mech = LaplaceMechanism(1.0, 0.5)
    x = torch.zeros(200_000)
    a = mech.add_noise(x, _generator(gen, 7))
    b = mech.add_noise(x, _generator(gen, 7))
    assert torch.equal(a, b)
    assert not torch.equal(a, mech.add_noise(x, _generator(gen, 8)))
    assert a.abs().mean().item() == pytest.approx(0.5, rel=0.02)  # E|Lap(b)| = b
    assert a.mean().item() == pytest.approx(0.0, abs=0.01)
    assert a.dtype == x.dtype and a.shape == x.shape
    # The whole law, not two moments: Kolmogorov-Smirnov against Laplace(0, 0.5).
    assert stats.kstest(a.numpy(), stats.laplace(scale=0.5).cdf).pvalue > 1e-3


def test_gaussian_noise_has_sigma() -> None:
    mech = GaussianMechanism(2.0, noise_multiplier=1.5)
    assert mech.sigma == 3.0
    for gen in ("torch", "numpy"):
        y = mech.add_noise(torch.ones(200_000, dtype=torch.float64), _generator(gen, 0))
        assert y.dtype == torch.float64
        assert (y - 1).std().item() == pytest.approx(3.0, rel=0.02)
        assert stats.kstest((y - 1).numpy(), stats.norm(scale=3.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("nm", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_gaussian_epsilon_solves_the_analytic_equation(nm: float, delta: float) -> None:
    eps = GaussianMechanism(1.0, noise_multiplier=nm).epsilon(delta)
    assert analytic_gaussian_delta(nm, eps) == pytest.approx(delta, rel=1e-3)
    # and it is the smallest such epsilon: delta(eps) decreases in eps
    assert analytic_gaussian_delta(nm, eps * 0.99) > delta


def test_gaussian_epsilon_scales_with_sensitivity() -> None:
    a = GaussianMechanism(1.0, sigma=2.0).epsilon(1e-5)
    b = GaussianMechanism(3.0, sigma=6.0).epsilon(1e-5)
    assert a == pytest.approx(b)


def test_parameter_errors() -> None:
    with pytest.raises(ConfigError, match="scale"):
        LaplaceMechanism(1.0, -1.0)
    with pytest.raises(ConfigError, match="sensitivity"):
        LaplaceMechanism(0.0, 1.0)
    with pytest.raises(ConfigError, match="exactly one"):
        GaussianMechanism(1.0)
    with pytest.raises(ConfigError, match="exactly one"):
        GaussianMechanism(1.0, 1.0, noise_multiplier=1.0)
    with pytest.raises(ConfigError, match="sigma"):
        GaussianMechanism(1.0, sigma=-0.1)
    with pytest.raises(ConfigError, match="delta"):
        GaussianMechanism(1.0, 1.0).epsilon(0.0)
    with pytest.raises(ConfigError, match="floating-point"):
        LaplaceMechanism(1.0, 1.0).add_noise(torch.ones(3, dtype=torch.int64))


def test_fedgnn_epsilon_per_coordinate_and_per_vector() -> None:
    eps = linf_laplace_epsilon(clip_bound=0.1, laplace_scale=0.2, dim=64)
    assert eps.per_coordinate == pytest.approx(1.0)  # 2δ/λ
    assert eps.per_vector == pytest.approx(64.0)  # 2δD/λ
    # the whole-vector figure is the Laplace mechanism with the L1 sensitivity 2δD
    assert eps.per_vector == pytest.approx(LaplaceMechanism(2 * 0.1 * 64, 0.2).epsilon())
    # and 2δD is attained by two clipped gradients
    g, g2 = clip_linf(torch.full((64,), 5.0), 0.1), clip_linf(torch.full((64,), -5.0), 0.1)
    assert (g - g2).abs().sum().item() == pytest.approx(2 * 0.1 * 64)
    assert (g - g2).abs().max().item() == pytest.approx(2 * 0.1)
    with pytest.raises(ConfigError):
        linf_laplace_epsilon(0.1, 0.2, 0)


def test_analytic_delta_known_value() -> None:
    # m = 1, eps = 0: delta = Φ(1/2) - Φ(-1/2) = erf(1/(2√2))
    assert analytic_gaussian_delta(1.0, 0.0) == pytest.approx(math.erf(0.5 / math.sqrt(2)))


def test_fedgnn_vector_mechanism_is_the_whole_upload_from_its_definition() -> None:
    # d = 3 clipped coordinates, δ = 0.1, λ = 0.2. By hand: the extreme neighbours are the
    # clipped vectors +δ·1 and -δ·1; the log density ratio of their noised releases at an output
    # y >= δ (every coordinate) is Σ (|y - x'| - |y - x|) / λ = d · 2δ / λ = 3, the largest
    # over all outputs (each term is at most |x_i - x'_i| / λ = 2δ/λ).
    clip, lam, d = 0.1, 0.2, 3
    x = clip_linf(torch.full((d,), 7.0, dtype=torch.float64), clip)
    x2 = clip_linf(torch.full((d,), -7.0, dtype=torch.float64), clip)
    lap = torch.distributions.Laplace(torch.tensor(0.0, dtype=torch.float64), lam)
    ys = torch.tensor([[0.1, 0.1, 0.1], [0.5, 2.0, 0.3], [0.0, 0.2, -0.4], [-1.0, 1.0, 0.1]],
                      dtype=torch.float64)
    ratios = (lap.log_prob(ys - x) - lap.log_prob(ys - x2)).sum(1)
    by_hand = d * 2 * clip / lam
    assert ratios.max().item() == pytest.approx(by_hand) == pytest.approx(3.0)
    assert (ratios <= by_hand + 1e-12).all()
    eps = linf_laplace_epsilon(clip, lam, d)
    mech = eps.vector_mechanism  # what the accountant composes for one upload
    assert mech.epsilon() == pytest.approx(by_hand) == pytest.approx(eps.per_vector)
    assert mech.noise_multiplier == pytest.approx(lam / (2 * clip * d))
    assert mech.scale == lam  # the noise actually added per coordinate
    assert eps.per_coordinate == pytest.approx(2 * clip / lam)
    assert eps.per_coordinate < mech.epsilon()
