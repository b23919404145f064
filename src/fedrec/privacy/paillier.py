"""Paillier additively homomorphic encryption of float arrays: a thin layer over ``phe``.

Scheme (Paillier, EUROCRYPT 1999, with ``g = n + 1`` as in ``phe``). The public key is
``n = p·q`` for random primes ``p, q`` of ``key_bits / 2`` bits; the private key is ``(p, q)``.
For a plaintext ``m ∈ Z_n`` and a fresh random ``r ∈ Z_n^*``::

    Enc(m) = (1 + n)^m · r^n  mod n²
    Dec(c) = L(c^λ mod n²) · μ  mod n,        L(x) = (x - 1) / n,  λ = lcm(p - 1, q - 1)
    Dec(Enc(a) · Enc(b) mod n²) = a + b  mod n

so anyone holding only ``n`` can add encrypted values (:meth:`EncryptedArray.__add__`,
:meth:`EncryptedArray.add_rows`); only the private key decrypts.

Floats are fixed point with **one fixed exponent**. ``phe`` writes a number as
``mantissa · 16^e``; we use the same ``e`` (default ``-8``: a resolution of ``16^-8 = 2^-32``)
for every value, so any two ciphertexts add directly (with mixed exponents ``phe`` first rescales
one operand, a modular exponentiation per value). ``mantissa = round(x · 2^32)`` is stored mod
``n``; decoding maps ``[0, n/3)`` to positives and ``(2n/3, n)`` to negatives and raises
``OverflowError`` in between. Error: one encoded value is within ``2^-33`` of ``x``, so a sum of
``k`` encryptions decrypts to within ``k · 2^-33`` of the sum of the floats.

Wire format: a ciphertext is an integer in ``[0, n²)``; it travels as exactly
``w = ceil(2 · bits(n) / 8)`` little-endian bytes (512 for a 2048-bit key), so an encrypted
array of shape ``S`` is a ``uint8`` array of shape ``S + (w,)`` -- what the codec sends and the
ledger counts. The exponent is a public protocol constant and is not sent.

Security assumption: Paillier is semantically secure (IND-CPA) under the decisional composite
residuosity (DCR) assumption, given that ``n`` cannot be factored: 2048-bit keys give about
112-bit security (NIST SP 800-57); 1024 bits is below current recommendations; 512 bits is for
tests only. The FedMF setting (Chai et al. 2020): an *honest-but-curious* server holds only the
public key and computes on ciphertexts; the clients share the private key. Not covered:
collusion of the server with any client (every client can decrypt everything), and integrity --
Paillier is malleable, so a malicious server or client can add values undetected. Fresh
encryptions are randomised with ``r`` from the OS CSPRNG (``phe``); :meth:`EncryptedArray.to_wire`
never re-randomises, because a homomorphic sum already carries the product of its terms'
random factors (see its docstring).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import gmpy2
import numpy as np
from phe import EncodedNumber, EncryptedNumber, PaillierPrivateKey, PaillierPublicKey
from phe import paillier as _phe

from fedrec.errors import ProtocolError

__all__ = [
    "DEFAULT_EXPONENT",
    "DEFAULT_KEY_BITS",
    "EncryptedArray",
    "ciphertext_width",
    "generate_keypair",
    "max_abs_value",
    "public_key_from_bytes",
    "public_key_to_bytes",
]

DEFAULT_KEY_BITS = 2048
DEFAULT_EXPONENT = -8  # base-16 exponent: resolution 16^-8 = 2^-32
MIN_KEY_BITS = 256  # below this n/3 cannot hold a 2^62 mantissa; sizes < 2048 are for tests
# Mantissas go through int64: |x · 16^-e| must stay below this.
_MAX_MANTISSA = float(1 << 62)


def _check_bits(bits: int) -> None:
    if int(bits) != bits or bits < MIN_KEY_BITS or bits % 8:
        raise ValueError(f"key_bits must be a multiple of 8 and >= {MIN_KEY_BITS}, got {bits}")


def _prime_over(bits: int, rng: random.Random) -> int:
    """The first prime at or above a random ``bits``-bit number (``phe``'s getprimeover)."""
    return int(gmpy2.next_prime(rng.getrandbits(bits) | (1 << (bits - 1))))


def generate_keypair(
    bits: int = DEFAULT_KEY_BITS, rng: random.Random | None = None
) -> tuple[PaillierPublicKey, PaillierPrivateKey]:
    """A Paillier key pair whose modulus ``n`` has exactly ``bits`` bits.

    ``rng=None`` (the default, and the only choice for real keys) draws the primes from the OS
    CSPRNG through ``phe``. A seeded ``rng`` reproduces the same key from the same seed -- for
    simulations that must be repeatable and resumable; such a key is only as secret as the seed.
    """
    _check_bits(bits)
    if rng is None:
        return _phe.generate_paillier_keypair(n_length=bits)
    while True:  # phe's loop: distinct primes whose product has exactly `bits` bits
        p, q = _prime_over(bits // 2, rng), _prime_over(bits // 2, rng)
        if p != q and (p * q).bit_length() == bits:
            break
    public = PaillierPublicKey(p * q)
    return public, PaillierPrivateKey(public, p, q)


def public_key_to_bytes(public_key: PaillierPublicKey) -> bytes:
    """``n`` as ``ceil(bits(n) / 8)`` little-endian bytes (all a public key is)."""
    return int(public_key.n).to_bytes((public_key.n.bit_length() + 7) // 8, "little")


def public_key_from_bytes(raw: bytes) -> PaillierPublicKey:
    n = int.from_bytes(bytes(raw), "little")
    if n.bit_length() < MIN_KEY_BITS or n % 2 == 0:
        raise ProtocolError(f"not a Paillier modulus ({n.bit_length()} bits)")
    return PaillierPublicKey(n)


def ciphertext_width(public_key: PaillierPublicKey) -> int:
    """Bytes per ciphertext on the wire: enough for any integer below ``n²``."""
    return (2 * public_key.n.bit_length() + 7) // 8


def max_abs_value(exponent: int = DEFAULT_EXPONENT) -> float:
    """The largest magnitude :meth:`EncryptedArray.encrypt` accepts at ``exponent``
    (``2^30`` at the default): mantissas are formed in int64."""
    return _MAX_MANTISSA / float(EncodedNumber.BASE) ** -exponent


def _mantissas(values: np.ndarray, exponent: int) -> list[int]:
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("cannot encrypt non-finite values (NaN or inf)")
    # 16^-e is a power of two, so the scaling is exact; rint is the only rounding.
    scaled = np.rint(x.ravel() * float(EncodedNumber.BASE) ** -exponent)
    if scaled.size and float(np.abs(scaled).max()) >= _MAX_MANTISSA:
        raise ValueError(f"values too large for exponent {exponent}: max |x| = {np.abs(x).max()}")
    return scaled.astype(np.int64).tolist()


class EncryptedArray:
    """A float array encrypted element-wise: ``phe`` EncryptedNumbers under one public key, all
    with the same exponent, in C order."""

    __slots__ = ("exponent", "numbers", "public_key", "shape")

    def __init__(
        self, public_key: PaillierPublicKey, numbers: Sequence[EncryptedNumber],
        shape: tuple[int, ...], exponent: int = DEFAULT_EXPONENT,
    ) -> None:
        if len(numbers) != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{len(numbers)} ciphertexts do not fill shape {shape}")
        self.public_key = public_key
        self.numbers = list(numbers)
        self.shape = tuple(int(s) for s in shape)
        self.exponent = exponent

    @property
    def size(self) -> int:
        return len(self.numbers)

    # -- making ciphertexts --------------------------------------------------------------------
    @classmethod
    def encrypt(
        cls, public_key: PaillierPublicKey, values: np.ndarray, exponent: int = DEFAULT_EXPONENT
    ) -> EncryptedArray:
        """Encrypt every value with fresh randomness (one ``r^n mod n²`` each: the cost)."""
        n = public_key.n
        numbers = [
            public_key.encrypt(EncodedNumber(public_key, m % n, exponent))
            for m in _mantissas(values, exponent)
        ]
        return cls(public_key, numbers, np.shape(values), exponent)

    @classmethod
    def encode_public(
        cls, public_key: PaillierPublicKey, values: np.ndarray, exponent: int = DEFAULT_EXPONENT
    ) -> EncryptedArray:
        """The trivial encryption ``(1 + n)^m mod n²`` (``r = 1``) of values that are *public*.

        Anyone can decrypt it (``m = (c - 1) / n``), so use it only for values every party may
        know; adding it to a randomised ciphertext gives a randomised ciphertext. It costs a
        multiplication instead of a modular exponentiation per value.
        """
        n = public_key.n
        numbers = [
            EncryptedNumber(public_key, public_key.raw_encrypt(m % n, r_value=1), exponent)
            for m in _mantissas(values, exponent)
        ]
        return cls(public_key, numbers, np.shape(values), exponent)

    # -- the wire ------------------------------------------------------------------------------
    @property
    def width(self) -> int:
        return ciphertext_width(self.public_key)

    def to_wire(self) -> np.ndarray:
        """``uint8`` array of shape ``shape + (width,)``: each ciphertext, little endian.

        Does not re-randomise: a fresh encryption was randomised when made, and the product of
        ciphertexts (a homomorphic sum) carries the product of their random factors ``r_i^n``,
        which is as uniform as a fresh one whenever one ``r_i`` is unknown to the observer.
        """
        w = self.width
        raw = b"".join(int(c.ciphertext(be_secure=False)).to_bytes(w, "little")
                       for c in self.numbers)
        return np.frombuffer(raw, dtype=np.uint8).reshape(*self.shape, w).copy()

    @classmethod
    def from_wire(
        cls, public_key: PaillierPublicKey, raw: np.ndarray, exponent: int = DEFAULT_EXPONENT
    ) -> EncryptedArray:
        """Inverse of :meth:`to_wire`; checks the width and that every value is below ``n²``."""
        arr = np.asarray(raw)
        w = ciphertext_width(public_key)
        if arr.dtype != np.uint8 or arr.ndim < 1 or arr.shape[-1] != w:
            raise ProtocolError(
                f"ciphertexts must be a uint8 array with last dimension {w}, "
                f"got {arr.dtype} {arr.shape}"
            )
        buf = np.ascontiguousarray(arr).tobytes()
        nsq = public_key.nsquare
        numbers = []
        for off in range(0, len(buf), w):
            c = int.from_bytes(buf[off : off + w], "little")
            if c >= nsq:
                raise ProtocolError("a ciphertext is not below n²")
            numbers.append(EncryptedNumber(public_key, c, exponent))
        return cls(public_key, numbers, arr.shape[:-1], exponent)

    # -- homomorphic addition (public key only) ------------------------------------------------
    def _check_compatible(self, other: EncryptedArray) -> None:
        if other.public_key != self.public_key:
            raise ValueError("cannot add ciphertexts under different public keys")
        if other.exponent != self.exponent:
            # phe would silently rescale, one modular exponentiation per value.
            raise ValueError(f"exponents differ ({self.exponent} vs {other.exponent})")

    def __add__(self, other: EncryptedArray) -> EncryptedArray:
        """Element-wise ``Enc(a + b) = Enc(a) · Enc(b) mod n²``."""
        self._check_compatible(other)
        if other.shape != self.shape:
            raise ValueError(f"shapes differ: {self.shape} vs {other.shape}")
        numbers = [a + b for a, b in zip(self.numbers, other.numbers, strict=True)]
        return EncryptedArray(self.public_key, numbers, self.shape, self.exponent)

    def add_rows(self, rows: Sequence[int] | np.ndarray, other: EncryptedArray) -> EncryptedArray:
        """``self[rows[j]] += other[j]`` for a 2-d array (rows may repeat; they accumulate)."""
        self._check_compatible(other)
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(self.shape) != 2 or other.shape != (len(rows), self.shape[1]):
            raise ValueError(f"cannot add rows of shape {other.shape} into {self.shape}")
        if len(rows) and (rows.min() < 0 or rows.max() >= self.shape[0]):
            raise ValueError(f"row index out of range [0, {self.shape[0]})")
        numbers = list(self.numbers)
        cols = self.shape[1]
        for j, row in enumerate(rows.tolist()):
            for k in range(cols):
                numbers[row * cols + k] = numbers[row * cols + k] + other.numbers[j * cols + k]
        return EncryptedArray(self.public_key, numbers, self.shape, self.exponent)

    @staticmethod
    def sum(arrays: Sequence[EncryptedArray]) -> EncryptedArray:
        if not arrays:
            raise ValueError("nothing to sum")
        total = arrays[0]
        for a in arrays[1:]:
            total = total + a
        return total

    # -- private key ---------------------------------------------------------------------------
    def decrypt(self, private_key: PaillierPrivateKey) -> np.ndarray:
        """The float64 array (raises ``OverflowError`` if a sum left the representable range)."""
        out = np.fromiter((private_key.decrypt(c) for c in self.numbers), dtype=np.float64,
                          count=len(self.numbers))
        return out.reshape(self.shape)
