"""Payload bytes on the wire and sealed routed messages (fedrec.engines.wire)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.core.codec import encode, payload_size
from fedrec.engines import wire
from fedrec.errors import ProtocolError
from fedrec.privacy import ItemTokenizer


def _payload():
    tokens = ItemTokenizer(bytes(range(32))).tokens(np.arange(7, dtype=np.int64))
    return {"tokens": tokens, "embedding": torch.randn(5), "nested": [{"t": tokens[:2]}, 3],
            "x": 1.5}


def test_pack_unpack_keeps_byte_strings_and_sizes() -> None:
    p = _payload()
    blob, schema = wire.pack(p)
    assert len(blob) == payload_size(p) == len(encode(p))  # the ledger's bytes
    back = wire.unpack(blob, schema)
    assert back["tokens"].dtype == p["tokens"].dtype and np.array_equal(back["tokens"], p["tokens"])
    assert back["nested"][0]["t"].dtype == np.dtype("S16")
    assert np.array_equal(back["embedding"], p["embedding"].numpy())
    with pytest.raises(ProtocolError):
        wire.unpack(blob, [[["x"], 16]])  # schema that does not fit the payload


def test_seal_is_end_to_end_and_authenticated() -> None:
    alice, bob, eve = wire.PartyKeys(), wire.PartyKeys(), wire.PartyKeys()
    p = _payload()
    head = dict(sender=3, receiver="third_party", step="expand_key", rnd=2)
    ct, n = wire.seal(p, alice, bob.public_bytes, **head)
    assert n == payload_size(p)
    # The relay holds ciphertext only: no plaintext token or float row appears in it.
    assert p["tokens"].tobytes()[:16] not in ct and p["embedding"].numpy().tobytes() not in ct
    back = wire.open_sealed(ct, bob, alice.public_bytes, **head)
    assert np.array_equal(back["tokens"], p["tokens"]) and back["x"] == 1.5
    with pytest.raises(ProtocolError):  # someone else's key
        wire.open_sealed(ct, eve, alice.public_bytes, **head)
    with pytest.raises(ProtocolError):  # replayed into another round
        wire.open_sealed(ct, bob, alice.public_bytes, **dict(head, rnd=3))
    with pytest.raises(ProtocolError):  # claimed by another sender
        wire.open_sealed(ct, bob, eve.public_bytes, **dict(head, sender=4))
    tampered = bytearray(ct)
    tampered[20] ^= 1
    with pytest.raises(ProtocolError):
        wire.open_sealed(bytes(tampered), bob, alice.public_bytes, **head)
    key = wire.PartyKeys.from_private_bytes(bob.private_bytes())
    assert key.public_bytes == bob.public_bytes
