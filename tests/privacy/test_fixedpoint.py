import numpy as np
import pytest

from fedrec.errors import ConfigError
from fedrec.privacy import FixedPointEncoder


@pytest.mark.parametrize("bits", [8, 16, 32, 40, 64])
def test_sum_of_extremes_does_not_overflow(bits: int) -> None:
    enc = FixedPointEncoder(clip=2.0, max_summands=10, modulus_bits=bits)
    for value in (2.0, -2.0, 5.0, -5.0):  # +-5 is clipped to +-2
        total = np.zeros(3, dtype=enc.dtype)
        for _ in range(10):
            total += enc.encode(np.full(3, value))
        enc.reduce(total)
        assert np.allclose(enc.decode(total), 10 * np.clip(value, -2, 2), rtol=1e-6)


@pytest.mark.parametrize("bits", [16, 32, 64])
def test_rounding_error_bound(bits: int) -> None:
    enc = FixedPointEncoder(clip=1.0, max_summands=100, modulus_bits=bits)
    x = np.random.default_rng(0).uniform(-1, 1, (100, 1000))
    total = np.zeros(1000, dtype=enc.dtype)
    for row in x:
        total += enc.encode(row)
    err = np.abs(enc.decode(total) - x.sum(0)).max()
    assert err <= 100 * 0.5 / enc.scale + 1e-9
    assert np.abs(enc.decode(enc.encode(x[0])) - x[0]).max() <= 0.5 / enc.scale + 1e-12


def test_encodings_live_in_the_ring() -> None:
    enc = FixedPointEncoder(clip=1.0, max_summands=3, modulus_bits=12)
    v = enc.encode(np.linspace(-1, 1, 101))
    assert v.dtype == np.uint32 and v.max() < 2**12
    assert enc.level == (2**11 - 1) // 3


def test_errors() -> None:
    with pytest.raises(ConfigError, match="too small"):
        FixedPointEncoder(clip=1.0, max_summands=1000, modulus_bits=8)
    with pytest.raises(ConfigError, match="clip"):
        FixedPointEncoder(clip=0.0, max_summands=2)
    with pytest.raises(ConfigError, match="modulus_bits"):
        FixedPointEncoder(clip=1.0, max_summands=2, modulus_bits=65)
    with pytest.raises(ConfigError, match="non-finite"):
        FixedPointEncoder(clip=1.0, max_summands=2).encode(np.array([0.0, np.nan]))
