"""Deterministic randomness keyed by (key, round, party, ...), independent of call order.

The key is the run's public ``seed`` for what every party may know (shared initialisation,
the server's client sampling) and a party's own secret
(:class:`~fedrec.federation.secrets.PartySecret`) for anything private. A client's random draws
must depend only on its key, the round and the client itself,
never on which other clients share its cohort or how much data they hold: otherwise changing one
client's data would shift every other client's noise and the privacy-boundary property
("changing one client's data changes only that client's messages") could not hold. Two tools:

* :func:`derive_seed` hashes a tuple of keys into a 63-bit seed for a per-party generator;
* :func:`counter_uniform` is a counter-based generator (SplitMix64 finaliser) that gives, fully
  vectorised, a uniform in [0, 1) for every (key, counter) pair, so a cohort of thousands of
  clients draws its per-client randomness in one tensor operation.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

_MASK63 = (1 << 63) - 1


def derive_seed(*keys: object) -> int:
    """A 63-bit seed from any tuple of printable keys (stable across processes and platforms)."""
    digest = hashlib.blake2b(repr(keys).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _MASK63


def numpy_rng(*keys: object) -> np.random.Generator:
    return np.random.default_rng(derive_seed(*keys))


def torch_generator(*keys: object, device: str | torch.device = "cpu") -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(derive_seed(*keys))
    return gen


def _to_signed(x: int) -> int:
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >= 1 << 63 else x


_GOLDEN = _to_signed(0x9E3779B97F4A7C15)
_M1 = _to_signed(0xBF58476D1CE4E5B9)
_M2 = _to_signed(0x94D049BB133111EB)


def _srl(x: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 (torch's >> is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def _splitmix64(x: torch.Tensor) -> torch.Tensor:
    # int64 arithmetic wraps modulo 2^64 in torch, which is what SplitMix64 needs.
    z = x + _GOLDEN
    z = (z ^ _srl(z, 30)) * _M1
    z = (z ^ _srl(z, 27)) * _M2
    return z ^ _srl(z, 31)


def counter_bits(seed: int | torch.Tensor, *counters: torch.Tensor) -> torch.Tensor:
    """64 pseudo-random bits (as int64) for every broadcast combination of the counters.

    ``seed`` is one key or a tensor of keys broadcast with the counters (one per client: a
    cohort's draws, each from that client's own secret, in one tensor operation)."""
    if isinstance(seed, torch.Tensor):
        z = seed.to(torch.int64)
    else:
        z = torch.full((), _to_signed(seed), dtype=torch.int64)
    for c in counters:
        z = _splitmix64(z ^ c.to(torch.int64))
    return _splitmix64(z)


def counter_uniform(seed: int | torch.Tensor, *counters: torch.Tensor) -> torch.Tensor:
    """Uniform float64 in [0, 1) for every (seed, counters...) combination; 53 bits of precision."""
    bits = _srl(counter_bits(seed, *counters), 11)
    return bits.to(torch.float64) * (1.0 / (1 << 53))


def counter_randint(seed: int | torch.Tensor, high: torch.Tensor | int,
                    *counters: torch.Tensor) -> torch.Tensor:
    """Integers uniform in ``[0, high)`` (``high`` may differ per element)."""
    u = counter_uniform(seed, *counters)
    high_t = torch.as_tensor(high, dtype=torch.float64)
    return torch.minimum((u * high_t).floor(), high_t - 1).to(torch.int64)


def counter_normal(seed: int | torch.Tensor, *counters: torch.Tensor) -> torch.Tensor:
    """Standard normals via Box-Muller from two independent counter streams."""
    u1 = counter_uniform(seed, *counters, torch.tensor(0))
    u2 = counter_uniform(seed, *counters, torch.tensor(1))
    return torch.sqrt(-2.0 * torch.log1p(-u1)) * torch.cos(2 * torch.pi * u2)
