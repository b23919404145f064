"""Protocol messages: flat ``dict[str, bytes | np.ndarray]`` and their byte-exact wire format.

A federation runtime may carry the dicts as they are and count ``serialized_size(msg)`` bytes,
or send ``encode_message(msg)`` and rebuild with ``decode_message``; both agree exactly.

Wire format (little-endian): ``u32 entry count``, then per entry ``u16 key length, key (UTF-8),
u8 kind``; kind 0 (bytes): ``u64 length, payload``; kind 1 (array): ``u8 dtype length, dtype
string (e.g. '<u4'), u8 ndim, u64 × ndim shape, C-order data``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

import numpy as np

from fedrec.errors import ProtocolError

__all__ = ["Message", "decode_message", "encode_message", "serialized_size"]

Message = dict[str, bytes | np.ndarray]


def _array_header(a: np.ndarray) -> bytes:
    code = a.dtype.newbyteorder("<").str.encode()
    return (struct.pack("<B", len(code)) + code + struct.pack("<B", a.ndim)
            + struct.pack(f"<{a.ndim}Q", *a.shape))


def serialized_size(msg: Mapping[str, bytes | np.ndarray]) -> int:
    """Number of bytes of ``encode_message(msg)``, computed without building it."""
    size = 4
    for key, value in msg.items():
        size += 2 + len(key.encode()) + 1
        if isinstance(value, np.ndarray):
            size += len(_array_header(value)) + value.nbytes
        else:
            size += 8 + len(value)
    return size


def encode_message(msg: Mapping[str, bytes | np.ndarray]) -> bytes:
    parts = [struct.pack("<I", len(msg))]
    for key, value in msg.items():
        k = key.encode()
        parts.append(struct.pack("<H", len(k)) + k)
        if isinstance(value, np.ndarray):
            a = np.ascontiguousarray(value)
            parts += [b"\x01", _array_header(a), a.astype(a.dtype.newbyteorder("<")).tobytes()]
        else:
            parts += [b"\x00", struct.pack("<Q", len(value)), bytes(value)]
    return b"".join(parts)


def decode_message(data: bytes) -> Message:
    """Inverse of :func:`encode_message`; arrays are read-only views into ``data``."""
    view = memoryview(data)
    pos = 0

    def take(n: int) -> memoryview:
        nonlocal pos
        if pos + n > len(view):
            raise ProtocolError("truncated protocol message")
        chunk = view[pos:pos + n]
        pos += n
        return chunk

    msg: Message = {}
    (count,) = struct.unpack("<I", take(4))
    for _ in range(count):
        (klen,) = struct.unpack("<H", take(2))
        key = bytes(take(klen)).decode()
        kind = take(1)[0]
        if kind == 0:
            (n,) = struct.unpack("<Q", take(8))
            msg[key] = bytes(take(n))
        elif kind == 1:
            (dlen,) = struct.unpack("<B", take(1))
            dtype = np.dtype(bytes(take(dlen)).decode())
            (ndim,) = struct.unpack("<B", take(1))
            shape = struct.unpack(f"<{ndim}Q", take(8 * ndim))
            n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            msg[key] = np.frombuffer(take(n), dtype=dtype).reshape(shape)
        else:
            raise ProtocolError(f"unknown entry kind {kind} in protocol message")
    if pos != len(view):
        raise ProtocolError("trailing bytes after protocol message")
    return msg
