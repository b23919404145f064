"""The wire format: exact round trips, exact sizes, corrupt input, the finiteness check."""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest
import torch

from fedrec.core.codec import all_finite, decode, encode, payload_size
from fedrec.errors import ProtocolError

NP_DTYPES = [
    "float32", "float64", "float16", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool",
]
TORCH_DTYPES = [
    torch.float32, torch.float64, torch.float16, torch.int8, torch.int16, torch.int32,
    torch.int64, torch.uint8, torch.bool,
]


def _np_array(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        out = rng.random(shape) < 0.5
    elif dt.kind == "f":
        out = rng.standard_normal(shape) * 1e3
    else:
        info = np.iinfo(dt)
        out = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    return np.asarray(out, dtype=dt)  # a 0-d array, not a NumPy scalar, for shape ()


def _assert_same_array(back: object, orig: np.ndarray) -> None:
    assert isinstance(back, np.ndarray)
    assert back.dtype == orig.dtype.newbyteorder("=")
    assert back.shape == orig.shape
    assert back.tobytes() == np.ascontiguousarray(orig, dtype=back.dtype).tobytes()  # bitwise


@pytest.mark.parametrize("dtype", NP_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 4), (2, 0, 5), (2, 3, 4)])
def test_numpy_round_trip_every_dtype(dtype: str, shape: tuple[int, ...]) -> None:
    arr = _np_array(dtype, shape, np.random.default_rng(len(shape)))
    wire = encode({"a": arr})
    assert len(wire) == payload_size({"a": arr})
    _assert_same_array(decode(wire)["a"], arr)


def test_float_special_values_survive_bitwise() -> None:
    arr = np.array([np.nan, np.inf, -np.inf, -0.0, np.finfo(np.float64).tiny], dtype=np.float64)
    back = decode(encode({"a": arr}))["a"]
    assert back.tobytes() == arr.tobytes()


def test_non_contiguous_and_big_endian_arrays() -> None:
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for arr in (base.T, base[:, ::2], base[::-1]):
        assert not arr.flags.c_contiguous
        back = decode(encode({"a": arr}))["a"]
        assert back.shape == arr.shape and np.array_equal(back, arr)
        assert payload_size({"a": arr}) == len(encode({"a": arr}))
    big = np.arange(5, dtype=">i4")
    back = decode(encode({"a": big}))["a"]
    assert back.dtype == np.dtype("<i4") and back.tolist() == [0, 1, 2, 3, 4]
    assert payload_size({"a": big}) == len(encode({"a": big}))


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_torch_round_trip(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(0)
    if dtype.is_floating_point:
        t = torch.randn(3, 5, generator=gen).to(dtype)
    elif dtype == torch.bool:
        t = torch.rand(3, 5, generator=gen) < 0.5
    else:
        t = torch.randint(-100 if dtype != torch.uint8 else 0, 100, (3, 5), generator=gen).to(dtype)
    wire = encode({"t": t})
    assert len(wire) == payload_size({"t": t})
    back = decode(wire)["t"]
    assert isinstance(back, np.ndarray) and back.shape == (3, 5)
    assert torch.equal(torch.from_numpy(back), t)
    assert torch.from_numpy(back).dtype == dtype


def test_torch_non_contiguous_and_requires_grad() -> None:
    t = torch.arange(12.0).reshape(3, 4).requires_grad_(True)
    view = t.T[1:]
    payload = {"v": view}
    assert payload_size(payload) == len(encode(payload))
    assert np.array_equal(decode(encode(payload))["v"], view.detach().numpy())


def test_bfloat16_travels_as_float32() -> None:
    t = torch.tensor([[1.5, -2.25, 3.0e10], [0.0, 1.0 / 3, -7.0]], dtype=torch.bfloat16)
    payload = {"t": t}
    wire = encode(payload)
    assert len(wire) == payload_size(payload)
    back = decode(wire)["t"]
    assert back.dtype == np.float32 and back.shape == (2, 3)
    assert np.array_equal(back, t.float().numpy())  # exact: bf16 values are float32 values
    # The header is that of a 2-d array; the body is 4 bytes per element.
    assert len(wire) - len(encode({"t": np.zeros((2, 0), np.float32)})) == 6 * 4


def test_fixed_width_byte_strings() -> None:
    tokens = np.array([b"a" * 16, b"\x00\x01secret-token\xff\xfe", b"short"], dtype="S16")
    payload = {"tok": tokens}
    wire = encode(payload)
    assert len(wire) == payload_size(payload)
    back = decode(wire)["tok"]
    # Documented: they travel as uint8 with a trailing dimension of the item size.
    assert back.dtype == np.uint8 and back.shape == (3, 16)
    assert back.tobytes() == tokens.tobytes()
    assert np.array_equal(np.ascontiguousarray(back).view("S16").reshape(3), tokens)
    grid = np.array([[b"x" * 32, b"y"], [b"", b"z" * 31]], dtype="S32")
    back = decode(encode({"g": grid}))["g"]
    assert back.shape == (2, 2, 32) and back.tobytes() == grid.tobytes()
    assert payload_size({"g": grid}) == len(encode({"g": grid}))


def test_scalars_and_containers() -> None:
    payload = {
        "none": None, "t": True, "f": False, "i": -(2**63), "imax": 2**63 - 1,
        "x": 0.1, "nan_float": math.inf, "s": "héllo ✓", "empty_s": "", "b": b"\x00\xff",
        "empty_b": b"", "lst": [1, "a", None, [2.5, b"z"], {"k": False}],
        "nested": {"a": {"b": {"c": [np.arange(3, dtype=np.int16)]}}}, "empty_l": [],
        "empty_d": {}, "ü-key": 7,
    }
    wire = encode(payload)
    assert len(wire) == payload_size(payload)
    back = decode(wire)
    arr = back["nested"]["a"]["b"]["c"][0]
    assert arr.dtype == np.int16 and arr.tolist() == [0, 1, 2]
    back["nested"]["a"]["b"]["c"][0] = "checked"
    expected = dict(payload)
    expected["nested"] = {"a": {"b": {"c": ["checked"]}}}
    assert back == expected
    for key in ("t", "f"):
        assert type(back[key]) is bool
    assert type(back["i"]) is int and type(back["x"]) is float


def test_numpy_scalars_and_tuples_decode_as_python_values() -> None:
    payload = {"a": np.int32(-5), "b": np.float32(0.5), "c": np.bool_(True), "d": (1, 2)}
    wire = encode(payload)
    assert len(wire) == payload_size(payload)
    assert decode(wire) == {"a": -5, "b": 0.5, "c": True, "d": [1, 2]}
    assert type(decode(wire)["c"]) is bool


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(12 if depth < 3 else 9)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.randrange(-(2**63), 2**63)
    if kind == 3:
        return rng.uniform(-1e9, 1e9)
    if kind == 4:
        return "".join(rng.choice("ab✓é\x00 ") for _ in range(rng.randrange(20)))
    if kind == 5:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
    if kind in (6, 7):
        shape = tuple(rng.randrange(4) for _ in range(rng.randrange(4)))
        arr = _np_array(rng.choice(NP_DTYPES), shape, np.random.default_rng(rng.randrange(1 << 30)))
        torch_ok = arr.dtype.kind != "u" or arr.dtype == np.uint8  # torch lacks wide uints
        return torch.from_numpy(arr) if kind == 7 and torch_ok else arr
    if kind == 8:
        n = rng.randrange(4)
        return np.array([bytes([rng.randrange(256)]) * rng.randrange(9) for _ in range(n)], "S8")
    if kind in (9, 10):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {f"k{j}{'é' * rng.randrange(3)}": _random_value(rng, depth + 1)
            for j in range(rng.randrange(5))}


def test_payload_size_is_exact_for_random_payloads() -> None:
    rng = random.Random(1234)
    for _ in range(400):
        payload = {f"f{j}": _random_value(rng) for j in range(rng.randrange(1, 6))}
        wire = encode(payload)
        assert payload_size(payload) == len(wire)
        # Decoding and re-encoding gives the same bytes (tensors come back as arrays).
        assert encode(decode(wire)) == wire


def test_unsupported_values_raise_protocol_error() -> None:
    for bad in ({"x": {1, 2}}, {"x": object()}, {"x": np.array([1 + 2j])},
                {"x": torch.zeros(2, dtype=torch.complex64)}, {"x": np.array(["unicode"])}):
        with pytest.raises(ProtocolError):
            encode(bad)
    with pytest.raises(ProtocolError):
        payload_size({"x": {1, 2}})


def _frame(body: bytes) -> bytes:
    """A one-key payload dict whose value is the raw encoded ``body``."""
    return bytes([8]) + struct.pack("<Q", 1) + struct.pack("<H", 1) + b"k" + body


def test_truncated_garbage_and_padded_bytes_raise_protocol_error() -> None:
    wire = encode({"a": np.arange(10.0), "b": [1, "x", None, {"c": b"zz"}], "t": torch.ones(3, 4)})
    for cut in range(len(wire)):
        with pytest.raises(ProtocolError):
            decode(wire[:cut])
    with pytest.raises(ProtocolError):
        decode(wire + b"\x00")
    with pytest.raises(ProtocolError):
        decode(encode({"a": 1})[1:])  # not a dict at the top level (and misaligned)
    with pytest.raises(ProtocolError):
        decode(bytes([7]) + struct.pack("<Q", 0))  # a list, not a payload dict
    crafted = [
        _frame(bytes([200])),  # unknown tag
        _frame(bytes([6, 99, 1]) + struct.pack("<Q", 1) + b"\x00" * 8),  # unknown dtype code
        _frame(bytes([6, 0, 2]) + struct.pack("<2Q", 2**64 - 1, 2**64 - 1)),  # absurd shape
        _frame(bytes([6, 0, 1]) + struct.pack("<Q", 2**40)),  # shape larger than the buffer
        _frame(bytes([4]) + struct.pack("<Q", 2) + b"\xff\xfe"),  # invalid UTF-8
        _frame(bytes([5]) + struct.pack("<Q", 2**62)),  # bytes length past the end
        bytes([8]) + struct.pack("<Q", 1) + struct.pack("<H", 50) + b"k",  # key past the end
    ]
    for data in crafted:
        with pytest.raises(ProtocolError):
            decode(data)


# A garbage shape may overflow NumPy's product of the dimensions before the length check.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_random_corruption_never_escapes_as_another_exception() -> None:
    rng = random.Random(7)
    wire = encode({"a": np.arange(10.0), "b": [1, "x", None, {"c": b"zz"}], "t": torch.ones(3, 4)})
    for _ in range(3000):
        kind = rng.randrange(3)
        if kind == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(80)))
        else:
            buf = bytearray(wire)
            for _ in range(rng.randrange(1, 4)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            data = bytes(buf)
        try:
            out = decode(data)
        except ProtocolError:
            continue
        assert isinstance(out, dict)  # a flip inside raw bytes may still decode


def test_deeply_nested_message_is_a_protocol_error_not_a_crash() -> None:
    depth = 10_000  # a hostile sender's nesting, far past Python's recursion limit
    data = _frame((bytes([7]) + struct.pack("<Q", 1)) * depth + bytes([0]))
    with pytest.raises(ProtocolError):
        decode(data)


def test_all_finite_finds_nan_and_inf_anywhere() -> None:
    clean = {
        "t": torch.ones(3), "a": np.zeros((2, 2)), "x": 1.5, "i": np.array([1, 2]),
        "l": [torch.zeros(2, dtype=torch.float16), {"deep": np.float64(2.0)}], "s": "nan",
    }
    assert all_finite(clean)
    assert all_finite({})
    bad_values = [
        {"t": torch.tensor([1.0, float("nan")])},
        {"t": torch.tensor([float("inf")], dtype=torch.bfloat16)},
        {"a": np.array([[0.0], [-np.inf]], dtype=np.float32)},
        {"x": float("nan")},
        {"x": np.float32("inf")},
        {"l": [1, [2, {"d": torch.tensor([[0.0, float("-inf")]], dtype=torch.float64)}]]},
        {"d": {"e": {"f": [np.array([np.nan], dtype=np.float16)]}}},
        {"tup": (0.0, math.nan)},
    ]
    for payload in bad_values:
        assert not all_finite(payload), payload
    # Integers, booleans and byte strings cannot hold NaN and are not mistaken for it.
    assert all_finite({"i": np.iinfo(np.int64).max, "b": True, "tok": np.array([b"nan"], "S3")})


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_all_finite_finds_one_bad_value_in_a_large_upload(dtype: torch.dtype) -> None:
    # Large enough for the vectorised reductions; the bad value at the start, in the middle of
    # a SIMD block, at a block's edge and at the end (a reduction that skipped any of them, or
    # a NaN lost in min/max, would pass it).
    n = 70_001
    assert all_finite({"g": torch.randn(n, dtype=dtype), "e": torch.zeros(0), "a": np.zeros(0)})
    for pos in (0, 5, 4095, 4096, n // 2, n - 1):
        for bad in (float("nan"), float("inf"), float("-inf")):
            t = torch.randn(n, dtype=dtype)
            t[pos] = bad
            assert not all_finite({"g": t}), (pos, bad)
            assert not all_finite({"g": t.numpy()}), (pos, bad)


def test_secagg_message_round_trip_and_size() -> None:
    msg = {"c_pk": b"\x00" * 32, "y": np.arange(10, dtype=np.uint32),
           "survivors": np.array([[1, 2], [3, 4]], dtype=np.int64), "empty": b""}
    wire = encode(msg)
    assert payload_size(msg) == len(wire)
    back = decode(wire)
    assert back.keys() == msg.keys()
    assert back["c_pk"] == msg["c_pk"] and back["empty"] == b""
    for k in ("y", "survivors"):
        assert back[k].dtype == msg[k].dtype and np.array_equal(back[k], msg[k])


def test_truncated_or_padded_wire_is_refused() -> None:
    wire = encode({"a": b"xyz", "b": np.ones(4)})
    with pytest.raises(ProtocolError, match="truncated"):
        decode(wire[:-1])
    with pytest.raises(ProtocolError, match="trailing"):
        decode(wire + b"\x00")
