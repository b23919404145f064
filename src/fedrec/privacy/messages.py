"""Protocol messages of the privacy protocols (secure aggregation, ...).

They are ordinary federation payloads, ``dict[str, bytes | np.ndarray]``, so that the runtime
carries and meters them like any other message: one wire format, in
:mod:`fedrec.federation.codec`, serves both.
"""

from __future__ import annotations

from fedrec.federation.codec import Payload as Message
from fedrec.federation.codec import decode as decode_message
from fedrec.federation.codec import encode as encode_message
from fedrec.federation.codec import payload_size as serialized_size

__all__ = ["Message", "decode_message", "encode_message", "serialized_size"]
