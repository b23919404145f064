"""The distributed Skellam encoding: sensitivities, the decoded sum, the ring checks."""

import math

import numpy as np
import pytest

from fedrec.errors import ConfigError, ProtocolError
from fedrec.privacy.skellam import SkellamEncoding


def _ring_sum(enc: SkellamEncoding, xs: list[np.ndarray], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    total = np.zeros(enc.dim, dtype=enc.dtype)
    for x in xs:
        np.add(total, enc.encode(x, rng), out=total)
    return total


@pytest.mark.parametrize("bits", [32, 64])
def test_decoded_sum_is_the_clipped_sum_plus_noise_of_the_stated_variance(bits: int) -> None:
    dim, n, clip, z = 4000, 20, 1.0, 0.5
    enc = SkellamEncoding.for_sum(dim, n, n, clip, z, bits)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(dim) * (0.1 if i % 2 else 1.0) for i in range(n)]
    clipped = [x * min(1.0, clip / np.linalg.norm(x)) for x in xs]
    decoded = enc.decode(_ring_sum(enc, xs), n)
    err = decoded - np.sum(clipped, 0)
    std = math.sqrt(enc.sum_variance(n)) / enc.scale
    assert std >= z * clip  # at least the promised noise
    assert abs(err.mean()) < 4 * std / math.sqrt(dim)
    assert err.std() == pytest.approx(std, rel=0.05)


class _Noiseless(SkellamEncoding):
    """The encoding with its noise removed: what is left is the clipped, rounded vector."""

    @property
    def client_variance(self) -> float:
        return 0.0


def test_sensitivity_bounds_every_rounded_vector() -> None:
    dim, clip = 500, 2.0
    enc = _Noiseless.for_sum(dim, 10, 10, clip, 1.0, 64)
    rng = np.random.default_rng(2)
    for scale in (1e-3, 1.0, 10.0):
        x = rng.standard_normal(dim) * scale
        ints = enc.encode(x, rng).view(np.int64).astype(np.float64)
        assert np.linalg.norm(ints) <= enc.l2_sensitivity
        assert np.abs(ints / enc.scale - x * min(1, clip / np.linalg.norm(x))).max() \
            <= 1 / enc.scale


def test_overflow_is_detected_not_decoded() -> None:
    enc = SkellamEncoding.for_sum(100, 4, 4, 1.0, 1.0, 32)
    total = np.zeros(100, dtype=np.uint32)
    total[7] = np.uint32(1 << 31)  # a wrapped coordinate: the most negative value
    with pytest.raises(ProtocolError, match="overflowed"):
        enc.decode(total, 4)
    with pytest.raises(ProtocolError):
        enc.decode(np.zeros(99, dtype=np.uint32), 4)


def test_bad_input_is_a_one_line_error() -> None:
    with pytest.raises(ConfigError, match="too small"):
        SkellamEncoding.for_sum(10, 2_000_000, 1_200_000, 1.0, 50.0, 32)
    with pytest.raises(ConfigError):
        SkellamEncoding.for_sum(10, 10, 10, 0.0, 1.0, 64)
    with pytest.raises(ConfigError):
        SkellamEncoding.for_sum(10, 10, 10, 1.0, -1.0, 64)
    with pytest.raises(ConfigError):
        SkellamEncoding.for_sum(10, 10, 11, 1.0, 1.0, 64)
    enc = SkellamEncoding.for_sum(10, 10, 5, 1.0, 1.0, 64)
    with pytest.raises(ConfigError):
        enc.encode(np.full(10, np.nan), np.random.default_rng(0))
    with pytest.raises(ProtocolError):
        enc.rdp(4)  # fewer survivors than the noise was sized for


def test_noise_is_sized_for_the_threshold_and_accounted_at_the_survivors() -> None:
    enc = SkellamEncoding.for_sum(1000, 10, 6, 1.0, 2.0, 64)
    assert enc.sum_variance(6) == pytest.approx((2.0 * enc.l2_sensitivity) ** 2)
    assert np.all(enc.rdp(10) < enc.rdp(6))  # more survivors, more noise, less loss
