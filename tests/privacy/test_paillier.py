"""Paillier layer: exact key sizes, encrypt/decrypt within the fixed-point resolution, homomorphic
sums with the public key alone, and a fixed-width wire format that the codec meters exactly."""

from __future__ import annotations

import random

import numpy as np
import pytest
from phe import EncryptedNumber, PaillierPrivateKey

from fedrec.core.codec import decode, encode, payload_size
from fedrec.errors import ProtocolError
from fedrec.privacy.paillier import (
    DEFAULT_EXPONENT,
    DEFAULT_KEY_BITS,
    EncryptedArray,
    ciphertext_width,
    generate_keypair,
    max_abs_value,
    public_key_from_bytes,
    public_key_to_bytes,
)

BITS = 512  # tests only: far too small for real use
RES = 2.0**-32  # 16^DEFAULT_EXPONENT


@pytest.fixture(scope="module")
def keys():
    return generate_keypair(BITS, random.Random(7))


def _values(seed: int, shape=(40, 5), scale: float = 3.0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(0.0, scale, size=shape)
    x[0] = [0.0, -0.0, 1e-12, -1e-12, 2.0**-33][: shape[1]]  # zeros and sub-resolution values
    x[1, 0], x[1, 1] = 12345.678901234, -98765.4321
    return x


def test_keygen_sizes_and_seeding() -> None:
    pub, priv = generate_keypair(BITS, random.Random(1))
    assert pub.n.bit_length() == BITS and priv.p * priv.q == pub.n and priv.p != priv.q
    again, _ = generate_keypair(BITS, random.Random(1))
    other, _ = generate_keypair(BITS, random.Random(2))
    assert again.n == pub.n and other.n != pub.n  # a seed reproduces its key, only its key
    fresh, fresh_priv = generate_keypair(BITS)  # OS CSPRNG through phe
    assert fresh.n.bit_length() == BITS and fresh.n != pub.n
    assert isinstance(fresh_priv, PaillierPrivateKey)
    assert DEFAULT_KEY_BITS == 2048
    for bad in (255, 100, 516 + 1, 520.5):
        with pytest.raises(ValueError, match="key_bits"):
            generate_keypair(bad, random.Random(0))


def test_roundtrip_within_fixed_point_resolution(keys) -> None:
    pub, priv = keys
    x = _values(0)
    enc = EncryptedArray.encrypt(pub, x)
    assert enc.shape == x.shape and enc.exponent == DEFAULT_EXPONENT
    assert all(c.exponent == DEFAULT_EXPONENT for c in enc.numbers)  # one fixed exponent
    out = enc.decrypt(priv)
    assert out.dtype == np.float64 and out.shape == x.shape
    assert np.abs(out - x).max() <= RES / 2
    # The rounding is to the grid: values on it come back exactly.
    grid = np.round(x * 2**32) / 2**32
    assert np.array_equal(out, grid)


def test_encryption_is_randomised_and_public_encoding_is_not(keys) -> None:
    pub, priv = keys
    x = np.zeros((3, 4))
    a, b = EncryptedArray.encrypt(pub, x), EncryptedArray.encrypt(pub, x)
    ca = [c.ciphertext(be_secure=False) for c in a.numbers]
    cb = [c.ciphertext(be_secure=False) for c in b.numbers]
    # Fresh randomness per value: equal plaintexts, all-different ciphertexts, none trivial.
    assert len(set(ca) | set(cb)) == 24 and 1 not in ca
    trivial = EncryptedArray.encode_public(pub, x + 1.5)
    assert {c.ciphertext(be_secure=False) for c in trivial.numbers} == {1 + pub.n * (3 << 31)}
    np.testing.assert_array_equal(trivial.decrypt(priv), x + 1.5)


def test_homomorphic_sum_equals_plaintext_sum(keys) -> None:
    pub, priv = keys
    xs = [_values(s) for s in range(12)]
    total = EncryptedArray.sum([EncryptedArray.encrypt(pub, x) for x in xs])
    exact = np.sum(xs, axis=0)
    assert np.abs(total.decrypt(priv) - exact).max() <= len(xs) * RES / 2
    # Public values add in too, and subtraction is addition of a negation.
    base = np.full(xs[0].shape, -7.25)
    mixed = EncryptedArray.encode_public(pub, base) + EncryptedArray.encrypt(pub, -xs[0])
    assert np.abs(mixed.decrypt(priv) - (base - xs[0])).max() <= RES / 2


def test_add_rows_accumulates_repeated_rows(keys) -> None:
    pub, priv = keys
    table = np.arange(12.0).reshape(6, 2)
    rows = np.array([4, 1, 4])
    upd = np.array([[0.5, -1.0], [2.0, 3.0], [0.25, 0.25]])
    got = EncryptedArray.encode_public(pub, table).add_rows(rows, EncryptedArray.encrypt(pub, upd))
    want = table.copy()
    np.add.at(want, rows, upd)
    np.testing.assert_array_equal(got.decrypt(priv), want)
    with pytest.raises(ValueError, match="out of range"):
        EncryptedArray.encode_public(pub, table).add_rows([6], EncryptedArray.encrypt(pub, upd[:1]))


def test_wire_format_is_fixed_width_and_metered_exactly(keys) -> None:
    pub, priv = keys
    x = _values(3, shape=(7, 3))
    enc = EncryptedArray.encrypt(pub, x)
    wire = enc.to_wire()
    w = ciphertext_width(pub)
    assert w == 2 * BITS // 8 == 128  # n² < 2^(2·bits)
    assert wire.dtype == np.uint8 and wire.shape == (7, 3, w)
    payload = {"update": wire}
    # Every ciphertext takes exactly w bytes: the codec's size is header + cells · w.
    assert payload_size(payload) == len(encode(payload)) == 9 + 2 + 6 + 3 + 8 * 3 + 7 * 3 * w
    back = EncryptedArray.from_wire(pub, decode(encode(payload))["update"])
    assert [c.ciphertext(False) for c in back.numbers] == [c.ciphertext(False) for c in enc.numbers]
    np.testing.assert_array_equal(back.decrypt(priv), enc.decrypt(priv))
    # The public key is n and nothing else.
    raw = public_key_to_bytes(pub)
    assert len(raw) == BITS // 8 and public_key_from_bytes(raw) == pub


def test_server_side_sum_needs_only_the_public_key(keys, monkeypatch) -> None:
    pub, priv = keys
    xs = [_values(s, shape=(5, 4)) for s in range(4)]
    uploads = [EncryptedArray.encrypt(pub, x).to_wire() for x in xs]
    server_key = public_key_from_bytes(public_key_to_bytes(pub))  # all the server receives

    def forbidden(*args, **kwargs):
        raise AssertionError("the private key was used")

    with monkeypatch.context() as m:
        for name in ("decrypt", "decrypt_encoded", "raw_decrypt", "__init__"):
            m.setattr(PaillierPrivateKey, name, forbidden)
        summed = EncryptedArray.sum([EncryptedArray.from_wire(server_key, u) for u in uploads])
        out = summed.to_wire()
    result = EncryptedArray.from_wire(pub, out).decrypt(priv)
    assert np.abs(result - np.sum(xs, axis=0)).max() <= len(xs) * RES / 2


def test_rejects_bad_inputs(keys) -> None:
    pub, priv = keys
    enc = EncryptedArray.encrypt(pub, np.ones((2, 2)))
    wire = enc.to_wire()
    with pytest.raises(ProtocolError, match="last dimension"):
        EncryptedArray.from_wire(pub, wire[..., :-1])
    with pytest.raises(ProtocolError, match="uint8"):
        EncryptedArray.from_wire(pub, wire.astype(np.int64))
    big = wire.copy()
    big[0, 0] = 255  # 2^(8w) - 1 > n²
    with pytest.raises(ProtocolError, match="below n"):
        EncryptedArray.from_wire(pub, big)
    with pytest.raises(ProtocolError, match="modulus"):
        public_key_from_bytes(b"\x01\x02")
    other, _ = generate_keypair(BITS, random.Random(99))
    with pytest.raises(ValueError, match="different public keys"):
        enc + EncryptedArray.encrypt(other, np.ones((2, 2)))
    with pytest.raises(ValueError, match="exponents differ"):
        enc + EncryptedArray.encrypt(pub, np.ones((2, 2)), exponent=-9)
    with pytest.raises(ValueError, match="shapes differ"):
        enc + EncryptedArray.encrypt(pub, np.ones((1, 2)))
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="non-finite"):
            EncryptedArray.encrypt(pub, np.array([1.0, bad]))
    assert max_abs_value() == 2.0**30
    with pytest.raises(ValueError, match="too large"):
        EncryptedArray.encrypt(pub, np.array([2.0**30]))
    # A plaintext in the gap (n/3, 2n/3) is an overflow, not a silently wrong float.
    gap = EncryptedNumber(pub, pub.raw_encrypt(pub.n // 2, r_value=1), DEFAULT_EXPONENT)
    with pytest.raises(OverflowError):
        EncryptedArray(pub, [gap], (1,)).decrypt(priv)
