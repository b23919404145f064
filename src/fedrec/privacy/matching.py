"""Keyed private matching of item ids (FedGNN's graph expansion through a third party).

``token(id) = AES-256_K(id as 8 little-endian bytes || 8-byte context tag)``: one AES block per
id, computed for all ids in a single ECB call. ECB here is just the block cipher applied to
independent one-block messages, i.e. deterministic encryption with a pseudorandom permutation.

Key distribution: the recommendation server draws ``K`` (:meth:`ItemTokenizer.generate_key`)
and gives it to clients, never to the third party that matches tokens.

Guarantee (AES as a PRP): to anyone without ``K``, the tokens of distinct ids are
indistinguishable from distinct uniformly random 16-byte strings, so the third party cannot
recover ids from tokens nor compute the token of an id of its choice.

Leakage, stated plainly: tokens are deterministic, so equal ids give equal tokens. The third
party therefore learns the equality pattern of what it is sent: which clients share an item,
how often each (unknown) item occurs, co-occurrence counts, and hence anything frequency
analysis over those counts reveals against public popularity statistics. Anyone holding ``K``
(every client, the server) can invert tokens; the item id space is small anyway, so a key holder
colluding with the third party reveals everything. Use a fresh key (or context) per matching
session to avoid linking tokens across sessions.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from fedrec.errors import ConfigError

__all__ = ["TOKEN_BYTES", "ItemTokenizer"]

TOKEN_BYTES = 16
KEY_BYTES = 32


class ItemTokenizer:
    """Deterministic keyed tokens of integer item ids (``dtype 'S16'``)."""

    def __init__(self, key: bytes, context: str = "fedrec/item-token/v1") -> None:
        if not isinstance(key, bytes) or len(key) != KEY_BYTES:
            raise ConfigError(f"item token key must be {KEY_BYTES} bytes")
        self._cipher = Cipher(algorithms.AES(key), modes.ECB())
        # Domain separation: the same key gives unrelated tokens under another context.
        self._tag = hashlib.sha256(context.encode()).digest()[:8]

    @staticmethod
    def generate_key() -> bytes:
        return os.urandom(KEY_BYTES)

    def tokens(self, item_ids: np.ndarray) -> np.ndarray:
        """Tokens of ``item_ids`` (any shape, integer dtype) as an array of ``'S16'``.

        Note: numpy strips trailing NUL bytes when one ``'S16'`` element is read out as Python
        ``bytes``; comparisons between token arrays (and between the stripped values) are
        unaffected.
        """
        ids = np.asarray(item_ids)
        if ids.dtype.kind not in "iu":
            raise ConfigError(f"item ids must be an integer array, got dtype {ids.dtype}")
        wire = "<i8" if ids.dtype.kind == "i" else "<u8"
        words = np.asarray(ids, dtype=wire).reshape(-1).view("<u8")
        blocks = np.empty((words.size, 2), dtype="<u8")
        blocks[:, 0] = words
        blocks[:, 1] = np.frombuffer(self._tag, dtype="<u8")[0]
        out = bytearray(blocks.nbytes + TOKEN_BYTES - 1)  # update_into wants block_size - 1 spare
        encryptor = self._cipher.encryptor()
        encryptor.update_into(memoryview(blocks).cast("B"), out)
        encryptor.finalize()
        return np.frombuffer(out, dtype=f"S{TOKEN_BYTES}", count=words.size).reshape(ids.shape)
