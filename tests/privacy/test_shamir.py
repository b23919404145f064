import itertools
import os

import pytest

from fedrec.errors import ConfigError, ProtocolError
from fedrec.privacy.shamir import PRIME, SHARE_BYTES, reconstruct_secret, split_secret


def test_any_t_shares_reconstruct() -> None:
    secret = os.urandom(32)
    shares = split_secret(secret, 3, range(6))  # holder 0 is allowed (point 1)
    assert all(len(s) == SHARE_BYTES for s in shares.values())
    for subset in itertools.combinations(range(6), 3):
        assert reconstruct_secret({h: shares[h] for h in subset}, 3) == secret
    assert reconstruct_secret(shares, 3) == secret  # more than t is fine


def test_too_few_shares() -> None:
    shares = split_secret(bytes(32), 4, [3, 9, 11, 20, 21])
    with pytest.raises(ProtocolError, match="need 4 shares"):
        reconstruct_secret({h: shares[h] for h in (3, 9, 11)}, 4)


def test_t_minus_one_shares_fit_every_secret() -> None:
    # With t-1 shares, every candidate secret is consistent with some polynomial: interpolate
    # through (0, candidate) and the t-1 shares; the result is a valid degree t-1 sharing.
    shares = split_secret(b"\x01" * 32, 3, [1, 2, 3])
    for candidate in (bytes(32), b"\xff" * 32):
        pts = {-1: int.from_bytes(candidate, "big").to_bytes(SHARE_BYTES, "big"),
               1: shares[1], 2: shares[2]}  # holder -1 is the point x = 0
        rebuilt = reconstruct_secret(pts, 3)
        assert rebuilt == candidate


def test_corrupted_share_is_detected_or_gives_garbage() -> None:
    secret = os.urandom(32)
    shares = split_secret(secret, 2, [1, 2, 3])
    bad = dict(shares)
    bad[1] = ((int.from_bytes(bad[1], "big") + 1) % PRIME).to_bytes(SHARE_BYTES, "big")
    try:
        assert reconstruct_secret({1: bad[1], 2: bad[2]}, 2) != secret
    except ProtocolError:
        pass


def test_split_errors() -> None:
    with pytest.raises(ConfigError, match="32 bytes"):
        split_secret(b"short", 2, [1, 2])
    with pytest.raises(ConfigError, match="threshold"):
        split_secret(bytes(32), 3, [1, 2])
    with pytest.raises(ConfigError, match="distinct"):
        split_secret(bytes(32), 2, [1, 1, 2])
