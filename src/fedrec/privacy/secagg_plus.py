"""SecAgg+ (Bell et al., "Secure Single-Server Aggregation with (Poly)Logarithmic Overhead",
CCS 2020, semi-honest version): Bonawitz et al.'s protocol (:mod:`fedrec.privacy.secagg`) with
the complete graph of pairwise masks and key shares replaced by a sparse random graph of
degree ``k`` (:mod:`fedrec.privacy.secagg_graph`).

Protocol: as in :mod:`fedrec.privacy.secagg`, with ``N(u)`` the neighbours of ``u`` in the
randomly labelled Harary graph ``H(|U1|, k)`` on U1 and ``N[u] = N(u) ∪ {u}``:

0. ``advertise_keys``: as before; the server then draws the public ``graph_seed`` and sends
   ``u`` the seed, the ids of U1 and the public keys of ``N[u]`` only. ``u`` rebuilds the
   graph and refuses keys that are not exactly its neighbourhood's.
1. ``share_keys``: ``u`` Shamir-splits ``s_sk_u`` and ``b_u`` ``t``-of-``(k + 1)`` among
   ``N[u]`` (threshold per neighbourhood) and encrypts one share for each neighbour.
2. ``masked_input_collection``: ``y_u = x_u + PRG(b_u) + Σ_{v ∈ N(u) ∩ U2} ±PRG(s_uv)``:
   ``k`` pairwise masks instead of ``|U2| - 1``. The server checks that every neighbourhood
   still holds ``t`` survivors (``N[u] ∩ U3`` for a survivor's ``b_u``, ``N(v) ∩ U3`` for a
   dropped client's ``s_sk_v``) and stops with a one-line :class:`ProtocolError` otherwise.
3. ``unmasking``: ``u`` is told ``N[u] ∩ U3``, returns its shares of ``b_v`` for those and of
   ``s_sk_v`` for its dropped neighbours; the server rebuilds each secret from ``t`` shares
   and removes ``PRG(b_u)`` for ``u ∈ U3`` and ``PRG(s_uv)`` for ``u ∈ N(v) ∩ U3``, ``v``
   dropped. Pairwise masks of two surviving neighbours cancel in the sum.

Cost per client: ``k + 1`` PRG expansions of the vector and ``O(k)`` key agreements, shares and
bytes of keys (plus the ``4 |U1|``-byte id list), instead of ``O(n)``; the server does
``O(n + dropped · k)`` expansions. Guarantee, degree and threshold formulas:
:mod:`fedrec.privacy.secagg_graph` (semi-honest server, ``γ n`` corrupted clients, ``δ n``
dropouts, security ``2^-σ`` and correctness ``2^-η`` over the graph). Precision: as Bonawitz
(:class:`~fedrec.privacy.fixedpoint.FixedPointEncoder` for ``max_clients`` summands).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fedrec.core.codec import Payload
from fedrec.errors import BelowThreshold, ConfigError, ProtocolError
from fedrec.privacy.secagg import (
    RandBytes,
    SecAggClient,
    SecAggConfig,
    SecAggServer,
    run_in_process,
)
from fedrec.privacy.secagg_graph import (
    CORRECTNESS_BITS,
    GRAPH_SEED_BYTES,
    SECURITY_BITS,
    harary_neighbours,
    secaggplus_parameters,
)

__all__ = ["SecAggPlusClient", "SecAggPlusConfig", "SecAggPlusServer", "secaggplus_config",
           "secure_sum_plus"]


@dataclass(frozen=True)
class SecAggPlusConfig(SecAggConfig):
    """:class:`SecAggConfig` plus the graph ``degree`` k; ``threshold`` is then ``t`` per
    closed neighbourhood of ``k + 1`` clients (:func:`secaggplus_config` picks both)."""

    degree: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if int(self.degree) != self.degree or self.degree < 1:
            raise ConfigError(f"SecAgg+ graph degree must be a positive integer, got "
                              f"{self.degree}")
        if self.degree % 2 and self.degree < self.max_clients - 1:
            raise ConfigError(f"SecAgg+ graph degree must be even below the complete graph "
                              f"({self.max_clients - 1}), got {self.degree}")
        if self.threshold > min(self.degree, self.max_clients - 1) + 1:
            raise ConfigError(f"SecAgg+ threshold {self.threshold} exceeds the neighbourhood "
                              f"size {min(self.degree, self.max_clients - 1) + 1}")


def secaggplus_config(dim: int, max_clients: int, corrupt_fraction: float,
                      dropout_fraction: float, clip: float = 1.0, modulus_bits: int = 32,
                      security_bits: float = SECURITY_BITS,
                      correctness_bits: float = CORRECTNESS_BITS, *,
                      preencoded: bool = False) -> SecAggPlusConfig:
    """The config of a sum over ``max_clients``, degree and threshold from the formula of
    :func:`~fedrec.privacy.secagg_graph.secaggplus_parameters`."""
    params = secaggplus_parameters(max_clients, corrupt_fraction, dropout_fraction,
                                   security_bits, correctness_bits)
    return SecAggPlusConfig(dim=dim, threshold=params.threshold, max_clients=max_clients,
                            clip=clip, modulus_bits=modulus_bits, preencoded=preencoded,
                            degree=params.degree)


def _graph(seed: object, clients: object, degree: int, who: str) -> dict[int, list[int]]:
    if not isinstance(seed, bytes) or len(seed) != GRAPH_SEED_BYTES:
        raise ProtocolError(f"{who}: key message has no {GRAPH_SEED_BYTES}-byte graph seed")
    if not isinstance(clients, np.ndarray) or clients.ndim != 1:
        raise ProtocolError(f"{who}: key message has no client list")
    ids = [int(v) for v in clients]
    if len(set(ids)) != len(ids):
        raise ProtocolError(f"{who}: the client list repeats ids")
    return harary_neighbours(seed, ids, degree)


class SecAggPlusClient(SecAggClient):
    """A client of SecAgg+: Bonawitz's client restricted to its neighbourhood."""

    config_type = SecAggPlusConfig
    config: SecAggPlusConfig

    def _config_state(self) -> dict[str, object]:
        return dict(super()._config_state(), degree=self.config.degree)

    def _check_peers(self, broadcast: Payload) -> None:
        me = self.client_id
        graph = _graph(broadcast.get("graph_seed"), broadcast.get("clients"),
                       self.config.degree, f"client {me}")
        if me not in graph:
            raise ProtocolError(f"client {me}: not in the server's client list")
        if set(self._keys) != {me, *graph[me]}:
            raise ProtocolError(f"client {me}: the server sent keys of clients that are not "
                                "exactly my neighbourhood in the graph")


class SecAggPlusServer(SecAggServer):
    """The server of SecAgg+; ``rand_bytes`` draws the public graph seed."""

    config: SecAggPlusConfig

    def __init__(self, config: SecAggPlusConfig, rand_bytes: RandBytes = os.urandom) -> None:
        if not isinstance(config, SecAggPlusConfig):
            raise ConfigError("SecAggPlusServer needs a SecAggPlusConfig")
        super().__init__(config)
        self._rand = rand_bytes
        self._neighbours: dict[int, list[int]] = {}

    @property
    def neighbours(self) -> dict[int, list[int]]:
        """``N(u)`` for every client of U1 (known after advertise_keys)."""
        return {u: list(vs) for u, vs in self._neighbours.items()}

    def _key_messages(self) -> dict[int, Payload]:
        seed = self._rand(GRAPH_SEED_BYTES)
        ids = sorted(self._keys)
        self._neighbours = harary_neighbours(seed, ids, self.config.degree)
        clients = np.array(ids, dtype=np.int64)
        out: dict[int, Payload] = {}
        for u in ids:
            msg: Payload = {"graph_seed": seed, "clients": clients}
            for v in sorted([u, *self._neighbours[u]]):
                msg[f"c_pk/{v}"], msg[f"s_pk/{v}"] = self._keys[v]
            out[u] = msg
        return out

    def _peers(self, u: int) -> set[int]:
        return set(self._neighbours[u])

    def _route_shares(self, messages: Mapping[int, Payload]) -> dict[int, Payload]:
        inbox: dict[int, Payload] = {v: {} for v in self._u2}
        for u in self._u2:
            for v in self._neighbours[u]:
                if v in inbox:
                    inbox[v][f"from/{u}"] = messages[u][f"to/{v}"]
        return {v: dict(sorted(m.items())) for v, m in inbox.items()}

    def _survivor_messages(self) -> dict[int, Payload]:
        u3, t = set(self._u3), self.config.threshold
        for u in sorted(set(self._u2)):
            alive = sum(v in u3 for v in self._neighbours[u]) + (u in u3)
            if alive < t:
                what = "self-mask seed" if u in u3 else "mask key"
                raise BelowThreshold(f"only {alive} clients of client {u}'s neighbourhood "
                                     f"sent masked inputs, fewer than the threshold {t} that "
                                     f"rebuilds its {what}", alive, t)
        return {u: {"survivors": np.array(sorted(v for v in [u, *self._neighbours[u]]
                                                 if v in u3), dtype=np.int64)}
                for u in self._u3}

    def _surviving_peers(self, dropped: int) -> list[int]:
        u3 = set(self._u3)
        return [u for u in self._neighbours[dropped] if u in u3]


def secure_sum_plus(
    vectors: Sequence[np.ndarray] | np.ndarray,
    corrupt_fraction: float,
    dropout_fraction: float,
    dropout_ids: Iterable[int] = (),
    rng: np.random.Generator | None = None,
    *,
    clip: float | None = None,
    modulus_bits: int = 32,
    degree: int | None = None,
    threshold: int | None = None,
) -> tuple[np.ndarray, int]:
    """:func:`fedrec.privacy.secagg.secure_sum` for SecAgg+: degree and threshold from the
    formula for ``corrupt_fraction`` / ``dropout_fraction``, unless both are given."""
    xs = [np.asarray(v, dtype=np.float64) for v in vectors]
    if len(xs) < 2 or xs[0].ndim != 1 or any(x.shape != xs[0].shape for x in xs):
        raise ConfigError("secure_sum_plus needs at least two 1-D vectors of the same length")
    if clip is None:
        clip = max(float(np.max(np.abs(np.stack(xs)))), 1e-12)
    if (degree is None) != (threshold is None):
        raise ConfigError("give both the SecAgg+ degree and threshold, or neither")
    if degree is None or threshold is None:
        config = secaggplus_config(xs[0].size, len(xs), corrupt_fraction, dropout_fraction,
                                   clip, modulus_bits)
    else:
        config = SecAggPlusConfig(dim=xs[0].size, threshold=threshold, max_clients=len(xs),
                                  clip=clip, modulus_bits=modulus_bits, degree=degree)
    rand: RandBytes = os.urandom if rng is None else (lambda n: rng.bytes(n))
    return run_in_process(xs, config, SecAggPlusClient, SecAggPlusServer(config, rand),
                          dropout_ids, rand)

