"""How fedrec's messages ride in Flower messages (shared by the ServerApp and the ClientApp).

One Flower message per SuperNode and protocol step; its :class:`~flwr.app.RecordDict` holds

* ``"fedrec"``: a :class:`~flwr.app.ConfigRecord` with one JSON ``header`` (step, round, which
  hosted party gets which payload, byte-string schemas, relayed mail, setup data);
* ``"blobs"``: an :class:`~flwr.app.ArrayRecord` holding one raw byte array, the
  concatenation of codec-encoded payloads (a broadcast is encoded once and shared by the node's
  parties) and sealed mail; the header's ``offsets`` say where each one is.

Party ids travel in JSON, where client ids stay integers and roles strings.
"""

from __future__ import annotations

import json
from typing import Any

from flwr.app import Array, ArrayRecord, ConfigRecord, RecordDict

MESSAGE_TYPE = "query"
STYPE = "fedrec.bytes"
HELLO = "fedrec.hello"  # setup: which parties a node hosts, their public keys, public metadata


def to_content(header: dict[str, Any], blobs: dict[str, bytes]) -> RecordDict:
    """All blobs go into one byte array (one Flower object, chunked by Flower): hundreds of
    small arrays would cost an HTTP round trip each."""
    offsets, pos = {}, 0
    for k, v in blobs.items():
        offsets[k] = [pos, pos + len(v)]
        pos += len(v)
    data = b"".join(blobs.values())
    record = {"header": json.dumps(header), "offsets": json.dumps(offsets)}
    return RecordDict({
        "fedrec": ConfigRecord(record),
        "blobs": ArrayRecord({"data": Array(dtype="uint8", shape=(len(data),), stype=STYPE,
                                            data=data)}),
    })


def from_content(content: RecordDict) -> tuple[dict[str, Any], dict[str, bytes]]:
    rec = content["fedrec"]
    header = json.loads(str(rec["header"]))
    offsets = json.loads(str(rec["offsets"]))
    data = memoryview(content["blobs"]["data"].data)
    return header, {k: bytes(data[a:b]) for k, (a, b) in offsets.items()}


def wire_size(message: Any) -> int:
    """Bytes of a Flower message's serialised objects (what its transport carries, without
    HTTP framing)."""
    from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects

    return sum(len(o.deflate()) for o in get_all_nested_objects(message).values())
