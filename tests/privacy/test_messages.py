import numpy as np
import pytest

from fedrec.errors import ProtocolError
from fedrec.privacy import decode_message, encode_message, serialized_size


def test_round_trip_and_size() -> None:
    msg = {"c_pk": b"\x00" * 32, "y": np.arange(10, dtype=np.uint32),
           "survivors": np.array([[1, 2], [3, 4]], dtype=np.int64), "empty": b""}
    wire = encode_message(msg)
    assert serialized_size(msg) == len(wire)
    back = decode_message(wire)
    assert back.keys() == msg.keys()
    assert back["c_pk"] == msg["c_pk"] and back["empty"] == b""
    for k in ("y", "survivors"):
        assert back[k].dtype == msg[k].dtype and np.array_equal(back[k], msg[k])


def test_truncated_or_padded_message() -> None:
    wire = encode_message({"a": b"xyz", "b": np.ones(4)})
    with pytest.raises(ProtocolError, match="truncated"):
        decode_message(wire[:-1])
    with pytest.raises(ProtocolError, match="trailing"):
        decode_message(wire + b"\x00")
