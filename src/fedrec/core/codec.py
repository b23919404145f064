"""The wire format of a message payload, and its exact size.

A payload is a ``dict[str, Value]`` where a value is a NumPy array, a torch tensor, ``bytes``,
``str``, ``int``, ``float``, ``bool``, ``None``, or a list / dict of values. The encoding is
deliberately simple and self-describing so that the byte count the ledger reports is the number
of bytes a real transport carries, not an estimate::

    value  := tag:u8 body
    array  := dtype:u8 ndim:u8 shape:u64*ndim raw-bytes (C order, little endian)
    bytes  := len:u64 raw
    str    := len:u64 utf-8
    int    := i64          float := f64          bool := u8          None := (empty)
    list   := len:u64 value*
    dict   := len:u64 (keylen:u16 key-utf8 value)*

:func:`payload_size` computes ``len(encode(payload))`` without building the buffer, so that the
simulator can meter gigabytes of broadcasts without copying them.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import torch

from fedrec.errors import ProtocolError

Payload = dict[str, Any]

_T_NONE, _T_BOOL, _T_INT, _T_FLOAT, _T_STR, _T_BYTES, _T_ARRAY, _T_LIST, _T_DICT = range(9)

_DTYPES: list[np.dtype] = [
    np.dtype(t)
    for t in (
        "float32", "float64", "float16", "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64", "bool",
    )
]
_DTYPE_CODE = {dt: i for i, dt in enumerate(_DTYPES)}
# Fixed-width byte strings ('S16', 'S32': keyed tokens) are encoded as uint8 with a trailing dim.


def _as_numpy(value: np.ndarray | torch.Tensor) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach()
        if value.dtype == torch.bfloat16:
            value = value.float()
        value = value.cpu().numpy()
    if value.dtype.kind == "S":
        value = value.view(np.uint8).reshape(*value.shape, value.dtype.itemsize)
    # ascontiguousarray turns a 0-d array into shape (1,); keep the shape payload_size counts.
    return np.ascontiguousarray(value).reshape(value.shape)


def _array_header_size(ndim: int) -> int:
    return 1 + 1 + 1 + 8 * ndim


_TORCH_SENDABLE = {
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16,
    torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32, torch.uint64, torch.bool,
}
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _unsendable(what: str) -> ProtocolError:
    return ProtocolError(f"cannot send {what} in a message")


def _check_dtype(value: np.ndarray | torch.Tensor) -> None:
    """The meter must refuse exactly what the encoder refuses (object arrays, complex, ...)."""
    if isinstance(value, torch.Tensor):
        if value.dtype not in _TORCH_SENDABLE:
            raise _unsendable(f"a tensor of dtype {value.dtype}")
    elif value.dtype.kind != "S" and value.dtype.newbyteorder("=") not in _DTYPE_CODE:
        raise _unsendable(f"an array of dtype {value.dtype}")


def value_size(value: Any) -> int:
    """Exact encoded size of one value in bytes."""
    if value is None:
        return 1
    if isinstance(value, bool | np.bool_):
        return 2
    if isinstance(value, int | np.integer):
        if not _INT64[0] <= int(value) <= _INT64[1]:
            raise _unsendable(f"the integer {value} (outside int64)")
        return 9
    if isinstance(value, float | np.floating):
        return 9
    if isinstance(value, str):
        return 9 + len(value.encode())
    if isinstance(value, bytes | bytearray):
        return 9 + len(value)
    if isinstance(value, torch.Tensor):
        _check_dtype(value)
        extra = 1 if value.dtype == torch.bfloat16 else 0  # bf16 travels as f32
        ndim = value.dim()
        return _array_header_size(ndim) + value.numel() * value.element_size() * (1 + extra)
    if isinstance(value, np.ndarray):
        _check_dtype(value)
        ndim = value.ndim + (1 if value.dtype.kind == "S" else 0)
        return _array_header_size(ndim) + value.nbytes
    if isinstance(value, list | tuple):
        return 9 + sum(value_size(v) for v in value)
    if isinstance(value, dict):
        return 9 + sum(2 + len(str(k).encode()) + value_size(v) for k, v in value.items())
    raise ProtocolError(f"cannot send a value of type {type(value).__name__} in a message")


def payload_size(payload: Payload) -> int:
    """``len(encode(payload))``, computed without encoding."""
    return value_size(payload)


def _encode(value: Any, out: list[bytes]) -> None:
    if value is None:
        out.append(bytes([_T_NONE]))
    elif isinstance(value, bool | np.bool_):
        out.append(bytes([_T_BOOL, int(bool(value))]))
    elif isinstance(value, int | np.integer):
        value_size(value)  # range check
        out.append(bytes([_T_INT]) + struct.pack("<q", int(value)))
    elif isinstance(value, float | np.floating):
        out.append(bytes([_T_FLOAT]) + struct.pack("<d", float(value)))
    elif isinstance(value, str):
        raw = value.encode()
        out.append(bytes([_T_STR]) + struct.pack("<Q", len(raw)) + raw)
    elif isinstance(value, bytes | bytearray):
        out.append(bytes([_T_BYTES]) + struct.pack("<Q", len(value)) + bytes(value))
    elif isinstance(value, np.ndarray | torch.Tensor):
        arr = _as_numpy(value)
        dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
        code = _DTYPE_CODE.get(dtype)
        if code is None:
            raise ProtocolError(f"cannot send an array of dtype {arr.dtype} in a message")
        out.append(bytes([_T_ARRAY, code, arr.ndim]) + struct.pack(f"<{arr.ndim}Q", *arr.shape))
        out.append(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
    elif isinstance(value, list | tuple):
        out.append(bytes([_T_LIST]) + struct.pack("<Q", len(value)))
        for v in value:
            _encode(v, out)
    elif isinstance(value, dict):
        out.append(bytes([_T_DICT]) + struct.pack("<Q", len(value)))
        for k, v in value.items():
            key = str(k).encode()
            out.append(struct.pack("<H", len(key)) + key)
            _encode(v, out)
    else:
        raise ProtocolError(f"cannot send a value of type {type(value).__name__} in a message")


def encode(payload: Payload) -> bytes:
    """Serialise a payload to bytes (the format in the module docstring)."""
    out: list[bytes] = []
    _encode(payload, out)
    return b"".join(out)


def _need(buf: memoryview, pos: int, n: int) -> None:
    if pos + n > len(buf):
        raise ProtocolError("corrupt message: truncated")


def _decode(buf: memoryview, pos: int) -> tuple[Any, int]:
    _need(buf, pos, 1)
    tag = buf[pos]
    pos += 1
    if tag == _T_NONE:
        return None, pos
    if tag == _T_BOOL:
        return bool(buf[pos]), pos + 1
    if tag == _T_INT:
        return struct.unpack_from("<q", buf, pos)[0], pos + 8
    if tag == _T_FLOAT:
        return struct.unpack_from("<d", buf, pos)[0], pos + 8
    if tag in (_T_STR, _T_BYTES):
        (n,) = struct.unpack_from("<Q", buf, pos)
        _need(buf, pos + 8, n)
        raw = bytes(buf[pos + 8 : pos + 8 + n])
        return (raw.decode() if tag == _T_STR else raw), pos + 8 + n
    if tag == _T_ARRAY:
        dtype = _DTYPES[buf[pos]]
        ndim = buf[pos + 1]
        shape = struct.unpack_from(f"<{ndim}Q", buf, pos + 2)
        pos += 2 + 8 * ndim
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        _need(buf, pos, n)
        arr = np.frombuffer(buf[pos : pos + n], dtype=dtype).reshape(shape).copy()
        return arr, pos + n
    if tag == _T_LIST:
        (n,) = struct.unpack_from("<Q", buf, pos)
        pos += 8
        items = []
        for _ in range(n):
            v, pos = _decode(buf, pos)
            items.append(v)
        return items, pos
    if tag == _T_DICT:
        (n,) = struct.unpack_from("<Q", buf, pos)
        pos += 8
        d: dict[str, Any] = {}
        for _ in range(n):
            (klen,) = struct.unpack_from("<H", buf, pos)
            key = bytes(buf[pos + 2 : pos + 2 + klen]).decode()
            d[key], pos = _decode(buf, pos + 2 + klen)
        return d, pos
    raise ProtocolError(f"corrupt message: unknown value tag {tag}")


def decode(data: bytes) -> Payload:
    """Inverse of :func:`encode`; arrays come back as NumPy arrays."""
    try:
        value, pos = _decode(memoryview(data), 0)
    except (struct.error, IndexError, ValueError, RecursionError) as exc:  # deep nesting too
        raise ProtocolError(f"corrupt message: {exc}") from None
    if pos != len(data) or not isinstance(value, dict):
        raise ProtocolError("corrupt message: trailing bytes (padded) or not a payload dict")
    return value


def iter_float_arrays(value: Any):
    """Yield every floating-point array inside a payload (for the finiteness check)."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            yield value
    elif isinstance(value, float | np.floating):  # np.float32 is not a float subclass
        yield np.asarray(value)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from iter_float_arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from iter_float_arrays(v)


def all_finite(payload: Payload) -> bool:
    """True when no float in the payload is NaN or +-Inf."""
    for arr in iter_float_arrays(payload):
        empty = arr.size == 0 if isinstance(arr, np.ndarray) else arr.numel() == 0
        if empty:
            continue
        # min and max propagate NaN and show an infinity at one end: two scalars to test
        # instead of a boolean mask the size of the payload (~10x faster on large uploads).
        if isinstance(arr, torch.Tensor):
            lo, hi = torch.aminmax(arr.detach())
            if not bool(torch.isfinite(lo) & torch.isfinite(hi)):
                return False
        elif not (np.isfinite(arr.min()) and np.isfinite(arr.max())):
            return False
    return True
