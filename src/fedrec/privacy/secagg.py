"""Secure aggregation: Bonawitz et al., "Practical Secure Aggregation for Privacy-Preserving
Machine Learning", CCS 2017 (the honest-but-curious protocol of its Figure 4, without the
signature / consistency-check round of the active-adversary version).

Protocol (clients ``u``, server ``S``; ``U1 ⊇ U2 ⊇ U3 ⊇ U5`` are the clients still present after
each round, each must have at least ``t`` members or the round fails with ``ProtocolError``):

0. ``advertise_keys``: ``u`` draws X25519 key pairs ``(c_pk_u, c_sk_u)`` (share encryption) and
   ``(s_pk_u, s_sk_u)`` (pairwise masks) and sends the public keys; ``S`` broadcasts all of U1's.
1. ``share_keys``: ``u`` draws a self-mask seed ``b_u`` (32 random bytes), Shamir-splits ``b_u``
   and ``s_sk_u`` t-of-|U1| (:mod:`fedrec.privacy.shamir`), and for each ``v`` encrypts
   ``(u, v, s_sk share, b_u share)`` with AES-256-GCM under
   ``HKDF-SHA256(X25519(c_sk_u, c_pk_v), info="fedrec/secagg/enc" || min(u,v) || max(u,v))``,
   with ``(u, v)`` as associated data. ``S`` forwards each ciphertext to its recipient; it sees
   only ciphertexts.
2. ``masked_input_collection``: ``u`` authenticates and decrypts the shares it holds, encodes its
   input (:mod:`fedrec.privacy.fixedpoint`) and sends, in Z_{2^k},

       y_u = x_u + PRG(b_u) + Σ_{v ∈ U2, v < u} PRG(s_uv) - Σ_{v ∈ U2, v > u} PRG(s_uv)

   with ``s_uv = HKDF-SHA256(X25519(s_sk_u, s_pk_v), info="fedrec/secagg/mask" || min || max)``
   (equal to ``s_vu``) and ``PRG`` = AES-256-CTR keystream (:mod:`fedrec.privacy.prg`).
   ``S`` keeps only the running ring sum of the y_u.
3. ``unmasking``: ``S`` sends U3; each ``u`` returns its share of ``b_v`` for every survivor
   ``v ∈ U3`` and of ``s_sk_v`` for every ``v ∈ U2 \\ U3`` (dropped after sharing). The two sets
   are disjoint and a client answers at most once, so no client ever reveals both ``b_v`` and
   ``s_sk_v``. ``S`` reconstructs them from ``t`` shares and computes

       Σ_{u ∈ U3} x_u = Σ_{u ∈ U3} y_u - Σ_{u ∈ U3} PRG(b_u)
                        - Σ_{u ∈ U3, v ∈ U2 \\ U3} sign(u, v) · PRG(s_uv)

   with ``sign(u, v) = +1 if v < u else -1`` (the sign of PRG(s_uv) in y_u),
   since the pairwise masks of two survivors cancel in the sum.

Guarantee (Bonawitz et al. 2017, §6, honest-but-curious security): the joint view of the
server and any set C of fewer than ``t`` clients reveals nothing about the inputs of the honest
clients beyond the sum of the honest survivors' inputs (X25519 as a DH key agreement, HKDF,
AES-GCM and AES-CTR as secure AEAD / PRG). Masks are uniform in Z_{2^k}, so every y_u the server
receives is computationally indistinguishable from uniform noise. Not covered: a malicious
server that lies about who dropped (needs the signed consistency-check round and t > 2n/3),
and what the sum itself reveals (add differential privacy for that). Choose ``t > n/2``.
"""

from __future__ import annotations

import hmac
import os
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fedrec.core.codec import Payload, payload_size
from fedrec.errors import BelowThreshold, ConfigError, ProtocolError
from fedrec.privacy.fixedpoint import FixedPointEncoder, RingIdentity
from fedrec.privacy.prg import SEED_BYTES, prg_accumulate
from fedrec.privacy.shamir import SHARE_BYTES, reconstruct_secret, split_secret

__all__ = ["SecAggClient", "SecAggConfig", "SecAggServer", "run_in_process", "secure_sum"]

RandBytes = Callable[[int], bytes]

_KEY_BYTES = 32
_NONCE_BYTES = 12
_MAX_ID = (1 << 32) - 2
_ENC_INFO = b"fedrec/secagg/enc"
_MASK_INFO = b"fedrec/secagg/mask"
_SHARE_AAD = b"fedrec/secagg/share"


@dataclass(frozen=True)
class SecAggConfig:
    """Public parameters every party agrees on before the protocol starts.

    ``max_clients`` bounds how many inputs are summed, which sizes the fixed-point encoding
    (see :class:`~fedrec.privacy.fixedpoint.FixedPointEncoder`); inputs are clipped to
    ``[-clip, clip]`` coordinate-wise before encoding.
    """

    dim: int
    threshold: int
    max_clients: int
    clip: float = 1.0
    modulus_bits: int = 32
    #: The inputs are ring elements already (:class:`~fedrec.privacy.fixedpoint.RingIdentity`):
    #: the sum is returned in the ring, for the caller to decode (distributed DP).
    preencoded: bool = False
    encoder: FixedPointEncoder | RingIdentity = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if int(self.dim) != self.dim or self.dim < 1:
            raise ConfigError(f"secagg dim must be a positive integer, got {self.dim}")
        if int(self.max_clients) != self.max_clients or self.max_clients < 2:
            raise ConfigError(f"secagg needs max_clients >= 2, got {self.max_clients}")
        if int(self.threshold) != self.threshold or not 2 <= self.threshold <= self.max_clients:
            raise ConfigError(f"secagg threshold must be an integer in [2, {self.max_clients}], "
                              f"got {self.threshold}")
        encoder = (RingIdentity(self.modulus_bits) if self.preencoded else
                   FixedPointEncoder(self.clip, self.max_clients, self.modulus_bits))
        object.__setattr__(self, "encoder", encoder)


def _pair(u: int, v: int) -> bytes:
    return struct.pack(">II", min(u, v), max(u, v))


_HKDF_SALT = bytes(32)  # RFC 5869: no salt = HashLen zero bytes


def _hkdf_sha256(secret: bytes, info: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869) with no salt, 32 output bytes: ``T(1) = HMAC(HMAC(0^32, secret),
    info || 0x01)``. The same bytes as ``cryptography``'s HKDF, at a fifth of its cost (two
    stdlib HMAC calls; ~2n derivations per client and sum)."""
    prk = hmac.digest(_HKDF_SALT, secret, "sha256")
    return hmac.digest(prk, info + b"\x01", "sha256")


def _kdf(private: X25519PrivateKey, public: bytes, info: bytes) -> bytes:
    try:
        shared = private.exchange(X25519PublicKey.from_public_bytes(public))
    except ValueError as exc:  # low-order point: the agreed secret would be all zeros
        raise ProtocolError(f"invalid X25519 public key in key agreement: {exc}") from exc
    return _hkdf_sha256(shared, info)


def _mask_sign(u: int, v: int) -> int:
    """Sign of PRG(s_uv) in y_u: + for v < u, - for v > u."""
    return 1 if v < u else -1


def _check_id(client_id: int) -> int:
    if int(client_id) != client_id or not 0 <= client_id <= _MAX_ID:
        raise ConfigError(f"client ids must be integers in [0, {_MAX_ID}], got {client_id}")
    return int(client_id)


def _ids_with_prefix(msg: Mapping[str, object], prefix: str) -> dict[int, str]:
    out = {}
    for key in msg:
        if key.startswith(prefix):
            try:
                out[int(key[len(prefix):])] = key
            except ValueError as exc:
                raise ProtocolError(f"malformed message key {key!r}") from exc
    return out


def _bytes_field(msg: Mapping[str, bytes | np.ndarray], key: str, size: int, who: str) -> bytes:
    value = msg.get(key)
    if not isinstance(value, bytes) or len(value) != size:
        raise ProtocolError(f"{who}: message field {key!r} missing or not {size} bytes")
    return value


def _require_quorum(count: int, threshold: int, what: str) -> None:
    if count < threshold:
        raise BelowThreshold(f"only {count} clients {what}, fewer than the threshold "
                             f"{threshold}", count, threshold)


class SecAggClient:
    """One client's side of the protocol; call the four steps in order, once each.

    Its peers are the clients whose keys the server's broadcast holds (all of U1 here; the
    SecAgg+ subclass checks them against its neighbourhood in :meth:`_check_peers`)."""

    config_type: ClassVar[type[SecAggConfig]] = SecAggConfig

    def __init__(self, client_id: int, config: SecAggConfig,
                 rand_bytes: RandBytes = os.urandom) -> None:
        self.client_id = _check_id(client_id)
        self.config = config
        self._rand = rand_bytes
        self._step = 0
        self._c_sk: X25519PrivateKey | None = None
        self._s_sk: X25519PrivateKey | None = None
        self._b_seed = b""
        self._keys: dict[int, tuple[bytes, bytes]] = {}
        self._u2: set[int] = set()
        self._held: dict[int, tuple[bytes, bytes]] = {}  # owner id -> (s_sk share, b share)
        # Share-encryption key per peer, kept from share_keys to open its shares in the next
        # step: the same key both ways, so one X25519 agreement instead of two per peer.
        self._enc: dict[int, bytes] = {}

    def export_state(self) -> dict[str, object]:
        """The client's protocol state as plain values (bytes, ints, dicts), so that a party
        whose process ends between steps (a Flower SuperNode) can keep it in its persistent
        state; it holds the client's secret keys and self-mask seed, so it never leaves the
        client. :meth:`from_state` rebuilds an equivalent client."""

        def raw(key: X25519PrivateKey | None) -> bytes:
            return b"" if key is None else key.private_bytes_raw()

        return {
            "config": self._config_state(),
            "client_id": self.client_id, "step": self._step, "c_sk": raw(self._c_sk),
            "s_sk": raw(self._s_sk), "b_seed": self._b_seed, "keys": dict(self._keys),
            "u2": sorted(self._u2), "held": dict(self._held), "enc": dict(self._enc),
        }

    def _config_state(self) -> dict[str, object]:
        cfg = self.config
        return {"dim": cfg.dim, "threshold": cfg.threshold, "max_clients": cfg.max_clients,
                "clip": cfg.clip, "modulus_bits": cfg.modulus_bits, "preencoded": cfg.preencoded}

    @classmethod
    def from_state(cls, state: Mapping[str, object],
                   rand_bytes: RandBytes = os.urandom) -> SecAggClient:
        """The client :meth:`export_state` described (its config included)."""

        def key(raw: object) -> X25519PrivateKey | None:
            return X25519PrivateKey.from_private_bytes(raw) if raw else None  # type: ignore[arg-type]

        client = cls(int(state["client_id"]),  # type: ignore[call-overload]
                     cls.config_type(**state["config"]), rand_bytes)  # type: ignore[arg-type]
        client._step = int(state["step"])  # type: ignore[call-overload]
        client._c_sk, client._s_sk = key(state["c_sk"]), key(state["s_sk"])
        client._b_seed = bytes(state["b_seed"])  # type: ignore[arg-type]
        client._keys = dict(state["keys"])  # type: ignore[call-overload]
        client._u2 = set(state["u2"])  # type: ignore[call-overload]
        client._held = dict(state["held"])  # type: ignore[call-overload]
        client._enc = dict(state.get("enc", {}))  # type: ignore[call-overload]
        return client

    def _advance(self, expected: int, name: str) -> None:
        if self._step != expected:
            raise ProtocolError(f"client {self.client_id}: {name} called out of order "
                                f"(step {self._step}, expected {expected})")
        self._step += 1

    def advertise_keys(self) -> Payload:
        """Round 0: draw the two key pairs; send ``{"c_pk", "s_pk"}`` (32 bytes each)."""
        self._advance(0, "advertise_keys")
        self._c_sk = X25519PrivateKey.from_private_bytes(self._rand(_KEY_BYTES))
        self._s_sk = X25519PrivateKey.from_private_bytes(self._rand(_KEY_BYTES))
        return {"c_pk": self._c_sk.public_key().public_bytes_raw(),
                "s_pk": self._s_sk.public_key().public_bytes_raw()}

    def share_keys(self, broadcast: Payload) -> Payload:
        """Round 1: Shamir-share ``s_sk`` and ``b``; send ``{"to/<v>": AES-GCM ciphertext}``."""
        self._advance(1, "share_keys")
        assert self._c_sk is not None and self._s_sk is not None
        me, t = self.client_id, self.config.threshold
        who = f"client {me}"
        ids = _ids_with_prefix(broadcast, "c_pk/")
        self._keys = {v: (_bytes_field(broadcast, f"c_pk/{v}", _KEY_BYTES, who),
                          _bytes_field(broadcast, f"s_pk/{v}", _KEY_BYTES, who)) for v in ids}
        _require_quorum(len(self._keys), t, "advertised keys")
        if len(self._keys) > self.config.max_clients:
            raise ProtocolError(f"{len(self._keys)} clients advertised keys, more than "
                                f"max_clients {self.config.max_clients}")
        mine = (self._c_sk.public_key().public_bytes_raw(),
                self._s_sk.public_key().public_bytes_raw())
        if self._keys.get(me) != mine:
            raise ProtocolError(f"{who}: the server's key broadcast does not contain my keys")
        all_keys = [k for pair in self._keys.values() for k in pair]
        if len(set(all_keys)) != len(all_keys):
            raise ProtocolError(f"{who}: the key broadcast contains repeated public keys")
        self._check_peers(broadcast)

        self._b_seed = self._rand(SEED_BYTES)
        holders = sorted(self._keys)
        s_shares = split_secret(self._s_sk.private_bytes_raw(), t, holders, self._rand)
        b_shares = split_secret(self._b_seed, t, holders, self._rand)
        self._held = {me: (s_shares[me], b_shares[me])}
        out: Payload = {}
        for v in holders:
            if v == me:
                continue
            key = self._enc[v] = _kdf(self._c_sk, self._keys[v][0], _ENC_INFO + _pair(me, v))
            nonce = self._rand(_NONCE_BYTES)
            route = struct.pack(">II", me, v)
            plaintext = route + s_shares[v] + b_shares[v]
            out[f"to/{v}"] = nonce + AESGCM(key).encrypt(nonce, plaintext, _SHARE_AAD + route)
        return out

    def _check_peers(self, broadcast: Payload) -> None:
        """Hook: raise :class:`ProtocolError` unless ``self._keys`` are the peers this client
        should share with (every advertised client here)."""

    def masked_input_collection(self, routed: Payload, x: np.ndarray) -> Payload:
        """Round 2: check the shares sent to me; send ``{"y": masked encoded input}``."""
        me, cfg = self.client_id, self.config
        x = np.asarray(x)
        if x.shape != (cfg.dim,):
            raise ConfigError(f"client {me}: input has shape {x.shape}, expected ({cfg.dim},)")
        self._advance(2, "masked_input_collection")
        assert self._c_sk is not None and self._s_sk is not None
        senders = _ids_with_prefix(routed, "from/")
        unknown = set(senders) - set(self._keys) | ({me} & set(senders))
        if unknown:
            raise ProtocolError(f"client {me}: shares from unexpected clients {sorted(unknown)}")
        _require_quorum(len(senders) + 1, cfg.threshold, "shared their keys")
        for v, key_name in senders.items():
            self._held[v] = self._open_share(v, routed[key_name])
        self._u2 = set(senders) | {me}

        y = cfg.encoder.encode(x)
        prg_accumulate(y, self._b_seed, +1)
        for v in sorted(senders):
            seed = _kdf(self._s_sk, self._keys[v][1], _MASK_INFO + _pair(me, v))
            prg_accumulate(y, seed, _mask_sign(me, v))
        self._b_seed = b""  # only the Shamir shares are needed from now on
        self._enc = {}
        return {"y": cfg.encoder.reduce(y)}

    def _open_share(self, sender: int, blob: bytes | np.ndarray) -> tuple[bytes, bytes]:
        me = self.client_id
        assert self._c_sk is not None
        if not isinstance(blob, bytes) or len(blob) <= _NONCE_BYTES:
            raise ProtocolError(f"client {me}: malformed share ciphertext from client {sender}")
        key = self._enc.get(sender) or _kdf(self._c_sk, self._keys[sender][0],
                                            _ENC_INFO + _pair(me, sender))
        route = struct.pack(">II", sender, me)
        try:
            plain = AESGCM(key).decrypt(blob[:_NONCE_BYTES], blob[_NONCE_BYTES:],
                                        _SHARE_AAD + route)
        except InvalidTag:
            raise ProtocolError(f"client {me}: share ciphertext from client {sender} failed "
                                "authentication (tampered or misrouted)") from None
        if plain[:8] != route or len(plain) != 8 + 2 * SHARE_BYTES:
            raise ProtocolError(f"client {me}: share from client {sender} has a wrong header")
        return plain[8:8 + SHARE_BYTES], plain[8 + SHARE_BYTES:]

    def unmasking(self, request: Payload) -> Payload:
        """Round 3: given the survivors U3, send ``{"b/<v>"}`` for v in U3 and ``{"s/<v>"}``
        for v in U2 \\ U3 (never both for one v)."""
        self._advance(3, "unmasking")
        me = self.client_id
        survivors_arr = request.get("survivors")
        if not isinstance(survivors_arr, np.ndarray) or survivors_arr.ndim != 1:
            raise ProtocolError(f"client {me}: unmasking request has no survivor list")
        survivors = {int(v) for v in survivors_arr}
        if len(survivors) != survivors_arr.size or not survivors <= self._u2:
            raise ProtocolError(f"client {me}: survivor list is not a subset of the clients "
                                "that shared keys")
        if me not in survivors:
            raise ProtocolError(f"client {me}: asked to unmask but not listed as a survivor")
        _require_quorum(len(survivors), self.config.threshold, "sent masked inputs")
        out: Payload = {}
        for v in sorted(self._u2):
            s_share, b_share = self._held[v]
            if v in survivors:
                out[f"b/{v}"] = b_share
            else:
                out[f"s/{v}"] = s_share
        self._held = {}
        return out


class SecAggServer:
    """The server's side; each step takes the messages of the clients that answered
    (``{client id: message}``; a missing client has dropped) and returns the messages to send
    (``{client id: message}``). It only ever holds public keys, ciphertexts and masked sums."""

    def __init__(self, config: SecAggConfig) -> None:
        self.config = config
        self._step = 0
        self._keys: dict[int, tuple[bytes, bytes]] = {}
        self._u2: list[int] = []
        self._u3: list[int] = []
        self._masked_sum: np.ndarray | None = None

    @property
    def survivors(self) -> list[int]:
        """U3: the clients whose inputs are in the sum (known after masked_input_collection)."""
        return list(self._u3)

    @property
    def dropped(self) -> list[int]:
        """U2 \\ U3: clients that shared keys but sent no masked input (their x is excluded)."""
        return sorted(set(self._u2) - set(self._u3))

    def _advance(self, expected: int, name: str) -> None:
        if self._step != expected:
            raise ProtocolError(f"server: {name} called out of order (step {self._step}, "
                                f"expected {expected})")
        self._step += 1

    def advertise_keys(self, messages: Mapping[int, Payload]) -> dict[int, Payload]:
        self._advance(0, "advertise_keys")
        cfg = self.config
        for u, msg in messages.items():
            _check_id(u)
            self._keys[u] = (_bytes_field(msg, "c_pk", _KEY_BYTES, f"client {u}"),
                             _bytes_field(msg, "s_pk", _KEY_BYTES, f"client {u}"))
        _require_quorum(len(self._keys), cfg.threshold, "advertised keys")
        if len(self._keys) > cfg.max_clients:
            raise ProtocolError(f"{len(self._keys)} clients advertised keys, more than "
                                f"max_clients {cfg.max_clients}")
        return self._key_messages()

    def _key_messages(self) -> dict[int, Payload]:
        """Hook: what each client of U1 receives after the keys are in (all of U1's keys)."""
        broadcast: Payload = {}
        for u in sorted(self._keys):
            broadcast[f"c_pk/{u}"], broadcast[f"s_pk/{u}"] = self._keys[u]
        return {u: broadcast for u in sorted(self._keys)}

    def _peers(self, u: int) -> set[int]:
        """Hook: the clients ``u`` shares its secrets and pairwise masks with (U1 but ``u``)."""
        return set(self._keys) - {u}

    def share_keys(self, messages: Mapping[int, Payload]) -> dict[int, Payload]:
        self._advance(1, "share_keys")
        u1 = set(self._keys)
        if not set(messages) <= u1:
            raise ProtocolError(f"shares from clients that advertised no keys: "
                                f"{sorted(set(messages) - u1)}")
        for u, msg in messages.items():
            peers = self._peers(u)
            if set(_ids_with_prefix(msg, "to/")) != peers or len(msg) != len(peers):
                raise ProtocolError(f"client {u} did not send exactly one share to every other "
                                    "client")
        self._u2 = sorted(messages)
        _require_quorum(len(self._u2), self.config.threshold, "shared their keys")
        return self._route_shares(messages)

    def _route_shares(self, messages: Mapping[int, Payload]) -> dict[int, Payload]:
        """Hook: each client of U2 gets the ciphertexts the other clients of U2 sent it."""
        return {v: {f"from/{u}": messages[u][f"to/{v}"] for u in self._u2 if u != v}
                for v in self._u2}

    def masked_input_collection(self, messages: Mapping[int, Payload]) -> dict[int, Payload]:
        self._advance(2, "masked_input_collection")
        enc = self.config.encoder
        if not set(messages) <= set(self._u2):
            raise ProtocolError(f"masked inputs from clients that did not share keys: "
                                f"{sorted(set(messages) - set(self._u2))}")
        _require_quorum(len(messages), self.config.threshold, "sent masked inputs")
        total = np.zeros(self.config.dim, dtype=enc.dtype)
        for u, msg in messages.items():
            y = msg.get("y")
            if not isinstance(y, np.ndarray) or y.dtype != enc.dtype or y.shape != total.shape:
                raise ProtocolError(f"client {u}: masked input is not a {enc.dtype.__name__} "
                                    f"vector of length {self.config.dim}")
            np.add(total, y, out=total)
        self._masked_sum = total
        self._u3 = sorted(messages)
        return self._survivor_messages()

    def _survivor_messages(self) -> dict[int, Payload]:
        """Hook: what each survivor is told before unmasking (the whole of U3)."""
        request: Payload = {"survivors": np.array(self._u3, dtype=np.int64)}
        return {u: request for u in self._u3}

    def _surviving_peers(self, dropped: int) -> list[int]:
        """Hook: the survivors whose inputs carry a pairwise mask with ``dropped`` (all)."""
        return self._u3

    def unmasking(self, messages: Mapping[int, Payload]) -> np.ndarray:
        """Reconstruct the masks and return the decoded sum of the survivors' inputs."""
        self._advance(3, "unmasking")
        assert self._masked_sum is not None
        cfg, t = self.config, self.config.threshold
        if not set(messages) <= set(self._u3):
            raise ProtocolError("unmasking answers from clients that are not survivors")
        _require_quorum(len(messages), t, "answered the unmasking round")
        total = self._masked_sum

        def shares_of(kind: str, owner: int) -> dict[int, bytes]:
            found = {w: msg[f"{kind}/{owner}"] for w, msg in messages.items()
                     if isinstance(msg.get(f"{kind}/{owner}"), bytes)}
            if len(found) < t:
                raise ProtocolError(f"only {len(found)} shares of client {owner}'s "
                                    f"{'self-mask seed' if kind == 'b' else 'mask key'}, "
                                    f"fewer than the threshold {t}")
            return found

        for u in self._u3:
            prg_accumulate(total, reconstruct_secret(shares_of("b", u), t), -1)
        for v in self.dropped:
            s_sk = X25519PrivateKey.from_private_bytes(reconstruct_secret(shares_of("s", v), t))
            if s_sk.public_key().public_bytes_raw() != self._keys[v][1]:
                raise ProtocolError(f"reconstructed mask key of dropped client {v} does not "
                                    "match its public key (bad shares)")
            for u in self._surviving_peers(v):
                seed = _kdf(s_sk, self._keys[u][1], _MASK_INFO + _pair(u, v))
                prg_accumulate(total, seed, -_mask_sign(u, v))
        self._masked_sum = None
        return cfg.encoder.decode(cfg.encoder.reduce(total))


def secure_sum(
    vectors: Sequence[np.ndarray] | np.ndarray,
    threshold: int,
    dropout_ids: Iterable[int] = (),
    rng: np.random.Generator | None = None,
    *,
    clip: float | None = None,
    modulus_bits: int = 32,
) -> tuple[np.ndarray, int]:
    """Run the whole protocol in-process; return (sum of survivors' inputs, transcript bytes).

    Client ``i`` holds ``vectors[i]``; clients in ``dropout_ids`` drop after ``share_keys``, so
    their inputs are excluded from the sum. ``clip`` defaults to the largest absolute input
    (a simulation convenience: a real deployment fixes it in advance). ``rng`` makes a run
    reproducible by drawing all keys, seeds and nonces from it: that is NOT cryptographically
    secure and is meant for simulators and tests; the default uses ``os.urandom``. Transcript
    bytes count every message in both directions (:func:`~fedrec.core.codec.payload_size`).
    """
    xs = [np.asarray(v, dtype=np.float64) for v in vectors]
    if len(xs) < 2 or xs[0].ndim != 1 or any(x.shape != xs[0].shape for x in xs):
        raise ConfigError("secure_sum needs at least two 1-D vectors of the same length")
    if clip is None:
        clip = max(float(np.max(np.abs(np.stack(xs)))), 1e-12)
    config = SecAggConfig(dim=xs[0].size, threshold=threshold, max_clients=len(xs),
                          clip=clip, modulus_bits=modulus_bits)
    rand: RandBytes = os.urandom if rng is None else (lambda n: rng.bytes(n))
    return run_in_process(xs, config, SecAggClient, SecAggServer(config), dropout_ids, rand)


def run_in_process(xs: Sequence[np.ndarray], config: SecAggConfig,
                   client_type: type[SecAggClient], server: SecAggServer,
                   dropout_ids: Iterable[int], rand: RandBytes) -> tuple[np.ndarray, int]:
    """The four rounds between ``client_type`` clients ``0..len(xs)-1`` and ``server``, clients
    in ``dropout_ids`` dropping after ``share_keys``; (decoded sum, transcript bytes)."""
    dropouts = set(dropout_ids)
    if not dropouts <= set(range(len(xs))):
        raise ConfigError(f"dropout ids {sorted(dropouts - set(range(len(xs))))} are not clients")
    clients = {i: client_type(i, config, rand) for i in range(len(xs))}
    nbytes = 0

    def carry(out: Mapping[int, Payload]) -> dict[int, Payload]:
        nonlocal nbytes
        nbytes += sum(payload_size(m) for m in out.values())
        return dict(out)

    up = carry({i: c.advertise_keys() for i, c in clients.items()})
    down = carry(server.advertise_keys(up))
    up = carry({i: clients[i].share_keys(m) for i, m in down.items()})
    down = carry(server.share_keys(up))
    up = carry({i: clients[i].masked_input_collection(m, xs[i])
                for i, m in down.items() if i not in dropouts})
    down = carry(server.masked_input_collection(up))
    up = carry({i: clients[i].unmasking(m) for i, m in down.items()})
    return server.unmasking(up), nbytes
