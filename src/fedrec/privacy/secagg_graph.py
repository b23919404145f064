"""The communication graph of SecAgg+ (Bell et al., "Secure Single-Server Aggregation with
(Poly)Logarithmic Overhead", CCS 2020) and the choice of its degree ``k`` and threshold ``t``.

Graph: a Harary graph ``H(m, k)`` on the ``m`` clients that advertised keys, with randomly
permuted labels, as in Bell et al.'s semi-honest construction. The server draws a 32-byte
public ``graph_seed``; the ring order of the clients is their ids sorted by
``HMAC-SHA256(graph_seed, id as 4 bytes big-endian)`` (a random permutation, given HMAC as a
PRF), and the client at ring position ``p`` is joined to the ``k`` clients at positions
``p ± 1, ..., p ± k/2 (mod m)`` (``k`` even). When ``k >= m - 1`` the graph is complete, which
is Bonawitz et al.'s protocol. Every party rebuilds the graph from the seed and the id list, so
a client checks the neighbours the server gives it.

Facts from Bell et al. 2020 (stated, not re-derived): a random ``k``-regular graph of degree
``k = O(log n)`` suffices for security against a semi-honest server colluding with a
``γ``-fraction of the clients and for correctness with a ``δ``-fraction of dropouts, giving
per-client cost polylogarithmic in ``n`` (their semi-honest protocol handles a billion clients
at the per-client cost of Bonawitz et al.'s for a thousand; their semi-malicious one, with
``10^4`` clients, talks to 3% of them while withstanding 5% corrupted clients and 5% dropouts).
The concrete ``(k, t)`` here are not the paper's tables: we bound the three graph conditions
below ourselves (our derivation, conservative union bounds).

Degree formula (:func:`secaggplus_parameters`). With ``n`` clients, ``C = ceil(γ n)``
corrupted, ``D = ceil(δ n)`` dropped (both chosen independently of the graph seed) and
``B = min(n, C + D)``, a client's ``k`` neighbours are a uniformly random ``k``-subset of the
other ``n - 1`` clients (random labels), so the number of corrupted / dropped neighbours is
hypergeometric, ``Hyp(n - 1, C, k)`` / ``Hyp(n - 1, D, k)``. By the union bound over the ``n``
clients:

* secrecy of every honest client's two secrets (its mask key and self-mask seed are shared
  ``t``-of-``k + 1`` among itself and its neighbours):
  ``p_share = n · P[Hyp(n - 1, C, k) >= t]``;
* no split of the honest survivors into components with separately revealed sums (the
  remaining nodes of ``H(n, k)`` stay connected unless ``k/2`` consecutive ring positions are
  all corrupted or dropped): ``p_split = n · Π_{j < k/2} (B - j) / (n - j)`` (0 for the
  complete graph);
* correctness (every neighbourhood keeps ``t`` survivors to rebuild its secrets):
  ``p_fail = n · P[Hyp(n - 1, D, k) > k - t]``.

``k`` is the smallest even degree (else ``n - 1``, the complete graph) for which some ``t`` in
``[2, k + 1]`` meets ``p_share + p_split <= 2^-σ`` and ``p_fail <= 2^-η``; ``t`` is the largest
such one (the most corrupted neighbours tolerated). Defaults ``σ = 40`` (security) and
``η = 30`` (correctness).
Guarantee (semi-honest server and at most ``γ n`` corrupted clients, at most ``δ n`` dropouts):
except with probability ``2^-σ`` over the graph, the server's view reveals only the sum of the
honest survivors' inputs; except with probability ``2^-η`` the sum is computed; when it is not,
the protocol stops with a one-line :class:`~fedrec.errors.ProtocolError`, never a wrong sum.
Unlike the Bonawitz path (``t > n/2``), ``t`` is not kept above half the neighbourhood: the
semi-honest analysis needs only ``t`` above the corrupted neighbours. Not covered: a server
that deviates from the protocol (lying about who dropped: Bell et al.'s semi-malicious variant,
not built here), and what the sum itself reveals.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import math
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from fedrec.errors import ConfigError

__all__ = ["GraphParameters", "harary_neighbours", "secaggplus_parameters"]

SECURITY_BITS = 40
CORRECTNESS_BITS = 30
GRAPH_SEED_BYTES = 32


@dataclass(frozen=True)
class GraphParameters:
    """A chosen ``(degree k, threshold t)`` and the bounds it meets (as ``log2`` of the failure
    probabilities, ``-inf`` when a failure is impossible)."""

    clients: int
    degree: int
    threshold: int
    log2_security_failure: float
    log2_correctness_failure: float


def _log_comb(a: int, b: int) -> float:
    return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)


def _log2_upper_tail(population: int, marked: int, draws: int, at_least: int) -> float:
    """``log2 P[Hyp(population, marked, draws) >= at_least]`` (``-inf`` if impossible)."""
    low = max(at_least, 0, draws - (population - marked))
    high = min(marked, draws)
    if low > high:
        return -math.inf
    base = _log_comb(population, draws)
    logs = [_log_comb(marked, x) + _log_comb(population - marked, draws - x) - base
            for x in range(low, high + 1)]
    top = max(logs)
    return (top + math.log(sum(math.exp(v - top) for v in logs))) / math.log(2)


def _log2_add(a: float, b: float) -> float:
    if a == -math.inf or b == -math.inf:
        return max(a, b)
    top = max(a, b)
    return top + math.log2(2 ** (a - top) + 2 ** (b - top))


def _log2_split(n: int, bad: int, degree: int) -> float:
    """``log2`` of ``n · Π_{j < k/2} (B - j)/(n - j)``: some ``k/2`` consecutive positions bad."""
    if degree >= n - 1:
        return -math.inf
    half = degree // 2
    if bad < half:
        return -math.inf
    return math.log2(n) + sum(math.log2((bad - j) / (n - j)) for j in range(half))


@functools.lru_cache(maxsize=256)  # every client of a cohort derives the same pair
def secaggplus_parameters(clients: int, corrupt_fraction: float, dropout_fraction: float,
                          security_bits: float = SECURITY_BITS,
                          correctness_bits: float = CORRECTNESS_BITS) -> GraphParameters:
    """The degree ``k`` and threshold ``t`` of the module docstring's formula."""
    n = int(clients)
    if n != clients or n < 2:
        raise ConfigError(f"SecAgg+ needs at least 2 clients, got {clients}")
    if not 0.0 <= corrupt_fraction < 1.0 or not 0.0 <= dropout_fraction < 1.0:
        raise ConfigError("SecAgg+ corrupt and dropout fractions must be in [0, 1), got "
                          f"{corrupt_fraction} and {dropout_fraction}")
    if not security_bits > 0 or not correctness_bits > 0:
        raise ConfigError("SecAgg+ security and correctness parameters must be > 0 bits")
    corrupt = math.ceil(corrupt_fraction * n - 1e-9)
    dropped = math.ceil(dropout_fraction * n - 1e-9)
    log2_n = math.log2(n)
    for k in [*range(2, n - 1, 2), n - 1]:
        split = _log2_split(n, min(n, corrupt + dropped), k)
        if split > -security_bits:
            continue
        # The largest t that stays correct: p_fail grows as t does, p_share shrinks.
        t = k + 1
        while t >= 2 and log2_n + _log2_upper_tail(n - 1, dropped, k, k - t + 1) \
                > -correctness_bits:
            t -= 1
        if t < 2:
            continue
        fail = log2_n + _log2_upper_tail(n - 1, dropped, k, k - t + 1)
        security = _log2_add(log2_n + _log2_upper_tail(n - 1, corrupt, k, t), split)
        if security <= -security_bits:
            return GraphParameters(n, k, t, security, fail)
    raise ConfigError(f"no SecAgg+ graph on {n} clients keeps {corrupt} corrupted and "
                      f"{dropped} dropped clients within 2^-{security_bits:g} / "
                      f"2^-{correctness_bits:g} (lower secagg_corrupt or secagg_dropout)")


def _ring_key(graph_seed: bytes, client: int) -> bytes:
    return hmac.digest(graph_seed, struct.pack(">I", client), hashlib.sha256)


def harary_neighbours(graph_seed: bytes, clients: Iterable[int], degree: int
                      ) -> dict[int, list[int]]:
    """Each client's neighbours (sorted ids, itself excluded) in the randomly labelled
    Harary graph ``H(m, degree)`` on ``clients`` (module docstring)."""
    if len(graph_seed) != GRAPH_SEED_BYTES:
        raise ConfigError(f"graph seeds are {GRAPH_SEED_BYTES} bytes, got {len(graph_seed)}")
    ids = sorted(set(clients))
    m = len(ids)
    if degree >= m - 1:
        return {u: [v for v in ids if v != u] for u in ids}
    if degree < 2 or degree % 2:
        raise ConfigError(f"a Harary graph below the complete one needs an even degree >= 2, "
                          f"got {degree}")
    ring = sorted(ids, key=lambda u: _ring_key(graph_seed, u))
    half = degree // 2
    return {u: sorted(ring[(p + j) % m] for j in range(-half, half + 1) if j)
            for p, u in enumerate(ring)}
