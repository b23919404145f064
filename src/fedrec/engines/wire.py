"""Payloads on a real wire, and end-to-end sealed messages between parties.

**Payload bytes.** A payload travels as :func:`fedrec.core.codec.encode` bytes, so the
ledger of a deployment counts exactly the bytes the simulator's ledger counts
(``payload_size(p) == len(encode(p))``). The codec sends fixed-width byte strings (``S16`` keyed
tokens) as ``uint8`` with a trailing dimension; :func:`byte_string_paths` lists where they are so
that :func:`restore_byte_strings` gives the receiving party the same dtype the simulator hands
it (FedGNN's matcher groups tokens with ``np.unique``, which needs ``S16``, not ``uint8`` rows).

**Sealed messages.** Flower only links the server with each node, so a message one party
*routes* to another (:class:`~fedrec.federation.runtime.Routed`: client -> third party,
third party -> client) is relayed by the ServerApp. :func:`seal` encrypts it end-to-end:
X25519 agreement between the sender's and the receiver's static keys, HKDF-SHA256, AES-256-GCM
with a random nonce, the routing header ``(sender, receiver, step, round)`` as associated data.
The relay holds only ciphertext; a receiver rejects anything not sealed by the claimed sender
for it, in that step and round. Public keys reach the parties through the server at setup (an
honest-but-curious server; a malicious one could substitute keys -- a real deployment would
certify them).
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedrec.core.codec import Payload, decode, encode
from fedrec.errors import ProtocolError
from fedrec.federation.message import PartyId

Path_ = list[str | int]


def byte_string_paths(value: Any, path: Path_ | None = None) -> list[list[Any]]:
    """``[[path, itemsize], ...]`` of every ``S``-dtype NumPy array inside ``value``."""
    path = path or []
    out: list[list[Any]] = []
    if isinstance(value, np.ndarray) and value.dtype.kind == "S":
        out.append([list(path), int(value.dtype.itemsize)])
    elif isinstance(value, dict):
        for k, v in value.items():
            out += byte_string_paths(v, [*path, str(k)])
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            out += byte_string_paths(v, [*path, i])
    return out


def restore_byte_strings(payload: Payload, paths: list[list[Any]]) -> Payload:
    """Turn the ``uint8 (..., n)`` arrays at ``paths`` back into ``S{n}`` arrays, in place."""
    for path, size in paths:
        parent: Any = payload
        for key in path[:-1]:
            parent = parent[key]
        arr = parent[path[-1]]
        if not isinstance(arr, np.ndarray) or arr.dtype != np.uint8 or arr.shape[-1:] != (size,):
            raise ProtocolError("corrupt message: byte-string schema does not match payload")
        parent[path[-1]] = np.ascontiguousarray(arr).view(f"S{size}").reshape(arr.shape[:-1])
    return payload


def pack(payload: Payload) -> tuple[bytes, list[list[Any]]]:
    """(codec bytes, byte-string schema)."""
    return encode(payload), byte_string_paths(payload)


def unpack(blob: bytes, schema: list[list[Any]]) -> Payload:
    return restore_byte_strings(decode(blob), schema)


# -- end-to-end sealing -------------------------------------------------------------------------
class PartyKeys:
    """A party's X25519 key pair (private key stays on its node)."""

    def __init__(self, private: X25519PrivateKey | None = None) -> None:
        self.private = private or X25519PrivateKey.generate()

    @property
    def public_bytes(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    def private_bytes(self) -> bytes:
        return self.private.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
            serialization.NoEncryption())

    @classmethod
    def from_private_bytes(cls, raw: bytes) -> PartyKeys:
        return cls(X25519PrivateKey.from_private_bytes(raw))


def _aad(sender: PartyId, receiver: PartyId, step: str, rnd: int) -> bytes:
    return json.dumps([sender, receiver, step, rnd]).encode()


def _key(own: PartyKeys, peer_public: bytes, sender: PartyId, receiver: PartyId) -> bytes:
    shared = own.private.exchange(X25519PublicKey.from_public_bytes(peer_public))
    info = b"fedrec-routed/v1" + json.dumps([sender, receiver]).encode()
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)


def seal(payload: Payload, own: PartyKeys, peer_public: bytes, *, sender: PartyId,
         receiver: PartyId, step: str, rnd: int) -> tuple[bytes, int]:
    """Encrypt ``payload`` for ``receiver``: (ciphertext, codec size of the payload)."""
    blob, schema = pack(payload)
    head = json.dumps(schema).encode()
    plain = struct.pack("<I", len(head)) + head + blob
    nonce = os.urandom(12)
    ct = AESGCM(_key(own, peer_public, sender, receiver)).encrypt(
        nonce, plain, _aad(sender, receiver, step, rnd))
    return nonce + ct, len(blob)


def open_sealed(ciphertext: bytes, own: PartyKeys, peer_public: bytes, *, sender: PartyId,
                receiver: PartyId, step: str, rnd: int) -> Payload:
    """Decrypt and decode a sealed payload; :class:`ProtocolError` if it was tampered with."""
    from cryptography.exceptions import InvalidTag

    try:
        plain = AESGCM(_key(own, peer_public, sender, receiver)).decrypt(
            ciphertext[:12], ciphertext[12:], _aad(sender, receiver, step, rnd))
    except (InvalidTag, ValueError):
        raise ProtocolError(f"sealed message from {sender!r} failed authentication") from None
    (n,) = struct.unpack_from("<I", plain, 0)
    schema = json.loads(plain[4 : 4 + n])
    return unpack(plain[4 + n :], schema)
