"""Party secrets: the private root of every draw a party makes for privacy.

A party's noise, sampling, pseudo items, private initialisation and keys must be unpredictable
to every other party, the server included. The run's ``seed`` is public (it is in the config,
which the server holds), so nothing private may be derived from it: a curious server could
replay the draws and subtract the noise. Instead:

* the **experimenter** holds a root secret (:class:`ClientSecrets`): 32 bytes given to the
  clients' side of a run (``fedrec run --client-secret HEX``; a Flower SuperNode's own
  ``client-secret-file``, an owner-only file its node config names), or fresh OS entropy per run
  when none is given (the run then says it is not reproducible). It never reaches server-side
  code: the simulator keeps it in the runtime's private client section, a deployment in the
  SuperNodes' own files, never on a command line;
* each party ``p`` gets ``PartySecret(HMAC(root, p))`` (keyed BLAKE2b), reachable only through
  that party's :class:`~fedrec.federation.runtime.PartyContext` and ``init_state``: one party's
  draws never depend on another's, and knowing one party's secret tells nothing of the others';
* the parties of one role share ``PartySecret(HMAC(root, ("role", role)))``, for what all
  clients must agree on without the server (FedMF's shared Paillier key pair);
* a service party (FedGNN's third party) and the server's own draws (FedGNN's expansion key,
  which the third party must not know) use the root ``HMAC(root, ("service", role))``
  (:meth:`ClientSecrets.for_service`): a service's node is given that root, never the clients'.

Guarantee: for a uniformly random root, the derived secrets are pseudorandom (BLAKE2b as a PRF)
to anyone without the root, so a server holding the config, the seed and every message cannot
regenerate a client's draws (``tests/federation/test_secrets.py`` plays that server). Draws for
statistics (noise, sampling) come from torch/numpy generators seeded with 63 bits of a party's
secret, as DP libraries do by default (not cryptographically unpredictable from many outputs);
keys come from :meth:`PartySecret.csprng`, a keyed SHAKE-256 stream, or from ``os.urandom``.
"""

from __future__ import annotations

import hashlib
import os
import random
from typing import Any

import numpy as np
import torch

from fedrec.errors import ConfigError

ROOT_BYTES = 32
_MASK63 = (1 << 63) - 1


class PartySecret:
    """One party's secret key and the draws keyed by it; never printed, never serialised by
    accident (``repr`` hides it; :meth:`key_bytes` is the only way out)."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if len(key) != ROOT_BYTES:
            raise ValueError(f"a party secret has {ROOT_BYTES} bytes")
        self._key = bytes(key)

    def __repr__(self) -> str:
        return "PartySecret(<hidden>)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartySecret) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def key_bytes(self, *keys: object, size: int = ROOT_BYTES) -> bytes:
        """``size`` pseudorandom bytes: the keyed hash of ``keys``."""
        return hashlib.blake2b(repr(keys).encode(), key=self._key, digest_size=size).digest()

    def seed(self, *keys: object) -> int:
        """A 63-bit seed for a torch/numpy generator or a counter stream."""
        return int.from_bytes(self.key_bytes(*keys, size=8), "little") & _MASK63

    def generator(self, *keys: object, device: str | torch.device = "cpu") -> torch.Generator:
        gen = torch.Generator(device=device)
        gen.manual_seed(self.seed(*keys))
        return gen

    def rng(self, *keys: object) -> np.random.Generator:
        return np.random.default_rng(self.seed(*keys))

    def csprng(self, *keys: object) -> random.Random:
        """A cryptographically secure :class:`random.Random` keyed by this secret and ``keys``
        (for key generation that must be reproducible from the secret)."""
        return KeyedCSPRNG(self.key_bytes(*keys))


class KeyedCSPRNG(random.Random):
    """``random.Random`` whose bits are SHAKE-256(key || counter): a CSPRNG for a secret key.

    Only :meth:`getrandbits` and :meth:`random` are drawn from the stream (``randrange``,
    ``choice`` and friends are built on them by :class:`random.Random`); it cannot be re-seeded.
    """

    def __init__(self, key: bytes) -> None:
        self._stream_key = bytes(key)
        self._counter = 0
        self._ready = False
        super().__init__()  # calls seed() once
        self._ready = True

    def seed(self, *args: Any, **kwargs: Any) -> None:
        if getattr(self, "_ready", False):
            raise TypeError("a KeyedCSPRNG cannot be re-seeded")

    def _bytes(self, n: int) -> bytes:
        block = hashlib.shake_256(self._stream_key + self._counter.to_bytes(8, "little"))
        self._counter += 1
        return block.digest(n)

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        value = int.from_bytes(self._bytes((k + 7) // 8), "little")
        return value >> ((8 - k % 8) % 8) if k else 0

    def random(self) -> float:
        return (self.getrandbits(53)) * (1.0 / (1 << 53))

    def getstate(self) -> Any:
        raise TypeError("a KeyedCSPRNG has no state to save")

    def setstate(self, state: Any) -> None:
        raise TypeError("a KeyedCSPRNG has no state to restore")


class ClientSecrets:
    """The experimenter's root secret, from which every non-server party's secret derives."""

    __slots__ = ("_root", "given")

    def __init__(self, root: bytes | None = None) -> None:
        #: Whether the experimenter gave the root (the run is then reproducible) or it is fresh
        #: OS entropy (a rerun draws other noise, other samples).
        self.given = root is not None
        root = os.urandom(ROOT_BYTES) if root is None else bytes(root)
        if len(root) != ROOT_BYTES:
            raise ConfigError(f"a client secret has {ROOT_BYTES} bytes ({2 * ROOT_BYTES} hex "
                              f"digits), got {len(root)}")
        self._root = root

    @classmethod
    def from_hex(cls, text: str | None) -> ClientSecrets:
        """From ``2 * ROOT_BYTES`` hex digits (``None`` or empty: fresh entropy)."""
        if not text:
            return cls()
        try:
            raw = bytes.fromhex(text.strip())
        except ValueError:
            raise ConfigError(f"the client secret must be hex digits ({2 * ROOT_BYTES} of "
                              "them)") from None
        return cls(raw)

    def __repr__(self) -> str:
        return f"ClientSecrets(<hidden>, given={self.given})"

    def root_bytes(self) -> bytes:
        """The root itself: for the clients' side only (checkpoints, SuperNode configs)."""
        return self._root

    def party(self, party: object) -> PartySecret:
        """Party ``party``'s own secret."""
        return PartySecret(hashlib.blake2b(repr(("party", party)).encode(), key=self._root,
                                           digest_size=ROOT_BYTES).digest())

    def role(self, role: str) -> PartySecret:
        """The secret every party of ``role`` shares (not the server's: it has no root)."""
        return PartySecret(hashlib.blake2b(repr(("role", role)).encode(), key=self._root,
                                           digest_size=ROOT_BYTES).digest())

    def for_service(self, role: str) -> ClientSecrets:
        """The root handed to the parties of service ``role`` (a third party, the server's own
        draws): derived one way from this root, so a service holding it cannot derive any
        client's secret (the clients, who hold this root, can derive it)."""
        derived = ClientSecrets(hashlib.blake2b(repr(("service", role)).encode(),
                                                key=self._root, digest_size=ROOT_BYTES).digest())
        derived.given = self.given
        return derived
