import hashlib

import numpy as np
import pytest

from fedrec.errors import ConfigError
from fedrec.privacy import ItemTokenizer

KEY = bytes(range(32))


def test_equal_ids_equal_tokens_distinct_ids_distinct_tokens() -> None:
    tok = ItemTokenizer(KEY)
    ids = np.array([[5, 17, 5], [17, 99, 5]])
    t = tok.tokens(ids)
    assert t.shape == ids.shape and t.dtype == np.dtype("S16")
    assert t[0, 0] == t[0, 2] == t[1, 2] and t[0, 1] == t[1, 0]
    assert t[0, 0] != t[0, 1] != t[1, 1]
    many = tok.tokens(np.arange(200_000))
    assert np.unique(many).size == 200_000
    # same id in another integer dtype -> same token (clients need not agree on dtypes)
    assert np.array_equal(tok.tokens(np.array([5, 17], dtype=np.int32)), t[0, :2])
    assert np.array_equal(tok.tokens(np.array([5, 17], dtype=np.uint64)), t[0, :2])


def test_tokens_depend_on_key_and_context() -> None:
    ids = np.arange(1000)
    base = ItemTokenizer(KEY).tokens(ids)
    other_key = ItemTokenizer(bytes(32)).tokens(ids)
    other_ctx = ItemTokenizer(KEY, context="session-2").tokens(ids)
    assert not np.any(base == other_key)
    assert not np.any(base == other_ctx)


def test_tokens_do_not_reveal_ids() -> None:
    ids = np.arange(10_000, dtype=np.int64)
    t = ItemTokenizer(KEY).tokens(ids)
    encodings = {
        "le16": np.array([int(i).to_bytes(16, "little") for i in ids], dtype="S16"),
        "be16": np.array([int(i).to_bytes(16, "big") for i in ids], dtype="S16"),
        "sha256": np.array([hashlib.sha256(int(i).to_bytes(8, "little")).digest()[:16]
                            for i in ids], dtype="S16"),
        "ascii": np.array([str(i).encode() for i in ids], dtype="S16"),
    }
    for name, enc in encodings.items():
        assert not np.isin(t, enc).any(), name
    # bits look balanced and the id's low byte is not carried through
    raw = np.frombuffer(t.tobytes(), dtype=np.uint8).reshape(-1, 16)
    assert abs(np.unpackbits(raw).mean() - 0.5) < 0.01
    assert np.mean(raw[:, 0] == (ids % 256)) < 0.02


def test_one_million_ids_get_one_token_each() -> None:
    # Its speed (under 1 s for a million ids) is a benchmark: bench/bench_matching.py.
    ids = np.random.default_rng(0).integers(0, 5_000_000, 1_000_000)
    tok = ItemTokenizer(ItemTokenizer.generate_key())
    t = tok.tokens(ids)
    assert t.shape == (1_000_000,)


def test_errors() -> None:
    with pytest.raises(ConfigError, match="32 bytes"):
        ItemTokenizer(b"short")
    with pytest.raises(ConfigError, match="integer"):
        ItemTokenizer(KEY).tokens(np.array([1.0, 2.0]))
