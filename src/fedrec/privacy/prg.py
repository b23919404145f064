"""Pseudorandom mask expansion: a 32-byte seed -> a vector of ring elements.

``PRG(seed) = AES-256-CTR_seed(nonce = 0, counter from 0)`` applied to zero bytes, i.e. the raw
keystream, read as little-endian ``uint32`` (ring 2^k, k <= 32) or ``uint64`` (k <= 64) words.

Guarantee: AES-256 is assumed a pseudorandom permutation, so for a uniformly random secret
seed the keystream (at most 2^32 blocks here, far below the PRP/PRF switching bound) is
computationally indistinguishable from uniform bytes, hence each word is indistinguishable
from uniform in Z_{2^32} / Z_{2^64} and, after reduction, in Z_{2^k}. A zero nonce is safe
because each seed keys exactly one keystream (seeds are fresh per protocol run and are never
reused for another purpose).
"""

from __future__ import annotations

import threading

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = ["SEED_BYTES", "prg_accumulate", "prg_expand"]

SEED_BYTES = 32
_ZERO_NONCE = bytes(16)
_BLOCK = 16


class _Scratch(threading.local):
    """Per-thread reusable zero input and output buffers (~100 PRG calls per client)."""

    def __init__(self) -> None:
        self.zeros = b""
        self.out = bytearray()

    def get(self, nbytes: int) -> tuple[bytes, bytearray]:
        if len(self.zeros) != nbytes:
            self.zeros = bytes(nbytes)
            self.out = bytearray(nbytes + _BLOCK - 1)  # update_into wants block_size - 1 spare
        return self.zeros, self.out


_scratch = _Scratch()


def _keystream_into(seed: bytes, nbytes: int) -> memoryview:
    if len(seed) != SEED_BYTES:
        raise ValueError(f"PRG seeds must be {SEED_BYTES} bytes, got {len(seed)}")
    zeros, out = _scratch.get(nbytes)
    encryptor = Cipher(algorithms.AES(seed), modes.CTR(_ZERO_NONCE)).encryptor()
    written = encryptor.update_into(zeros, out)
    return memoryview(out)[:written]


def prg_expand(seed: bytes, length: int, dtype: type[np.unsignedinteger]) -> np.ndarray:
    """``length`` pseudorandom words of ``dtype`` (a fresh, writable array)."""
    nbytes = length * np.dtype(dtype).itemsize
    return np.frombuffer(_keystream_into(seed, nbytes), dtype=np.dtype(dtype).newbyteorder("<"),
                         count=length).astype(dtype)


def prg_accumulate(acc: np.ndarray, seed: bytes, sign: int) -> None:
    """``acc += sign · PRG(seed)`` in place, wrapping mod 2^(8·itemsize); ``sign`` is ±1."""
    nbytes = acc.size * acc.itemsize
    words = np.frombuffer(_keystream_into(seed, nbytes), dtype=acc.dtype.newbyteorder("<"),
                          count=acc.size)
    if sign > 0:
        np.add(acc, words, out=acc, casting="unsafe")
    else:
        np.subtract(acc, words, out=acc, casting="unsafe")
