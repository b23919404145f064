"""SecAgg+ (fedrec.privacy.secagg_plus, secagg_graph): the sum, dropouts, the per-neighbourhood
threshold, what the server sees, and the degree formula."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedrec.core.codec import Payload, decode, encode
from fedrec.errors import ConfigError, ProtocolError
from fedrec.privacy.prg import prg_accumulate
from fedrec.privacy.secagg import _MASK_INFO, _kdf, _mask_sign, _pair
from fedrec.privacy.secagg_graph import (
    _log2_upper_tail,
    harary_neighbours,
    secaggplus_parameters,
)
from fedrec.privacy.secagg_plus import (
    SecAggPlusClient,
    SecAggPlusConfig,
    SecAggPlusServer,
    secure_sum_plus,
)

Hook = Callable[[str, dict[int, Payload]], dict[int, Payload]]


class Recorder:
    """A byte source per party that remembers its draws (to recompute a client's masks)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.draws: dict[int, list[bytes]] = {}

    def for_party(self, party: int) -> Callable[[int], bytes]:
        def rand(n: int) -> bytes:
            out = self.rng.bytes(n)
            self.draws.setdefault(party, []).append(out)
            return out
        return rand


def _run(xs: np.ndarray, degree: int, threshold: int, drop_before_masking: set[int] = frozenset(),
         drop_before_unmasking: set[int] = frozenset(), hook: Hook | None = None,
         seed: int = 0) -> tuple[np.ndarray, SecAggPlusServer, dict, Recorder]:
    """Drive the four rounds by hand; every message goes through the wire format."""
    rec = Recorder(seed)
    cfg = SecAggPlusConfig(dim=xs.shape[1], threshold=threshold, max_clients=len(xs),
                           degree=degree)
    clients = {i: SecAggPlusClient(i, cfg, rec.for_party(i)) for i in range(len(xs))}
    server = SecAggPlusServer(cfg, rec.for_party(-1))
    seen: dict = {}

    def wire(name: str, msgs: dict[int, Payload]) -> dict[int, Payload]:
        msgs = {i: decode(encode(m)) for i, m in msgs.items()}
        state = [v.copy() for v in vars(server).values() if isinstance(v, np.ndarray)]
        seen.setdefault("server_state", []).extend(state)
        if hook is not None:
            msgs = hook(name, msgs)
        seen[name] = msgs
        return msgs

    down = wire("keys_down", server.advertise_keys(
        wire("keys_up", {i: c.advertise_keys() for i, c in clients.items()})))
    down = wire("shares_down", server.share_keys(
        wire("shares_up", {i: clients[i].share_keys(m) for i, m in down.items()})))
    down = wire("survivors", server.masked_input_collection(
        wire("masked", {i: clients[i].masked_input_collection(m, xs[i])
                        for i, m in down.items() if i not in drop_before_masking})))
    result = server.unmasking(wire("unmask", {i: clients[i].unmasking(m) for i, m in down.items()
                                              if i not in drop_before_unmasking}))
    return result, server, seen, rec


def _inputs(n: int, dim: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, dim))


def _tol(n: int, m: int, clip: float = 1.0) -> float:
    return m * 0.5 / ((2**31 - 1) // n / clip) + 1e-12


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.3])
def test_sum_with_dropouts_after_key_sharing(fraction: float) -> None:
    # Degree and threshold from the formula for a 30% dropout budget: 100 clients, k = 48.
    n, dim = 100, 500
    params = secaggplus_parameters(n, 0.05, 0.3)
    assert params.degree < n - 1  # a sparse graph, not Bonawitz's complete one
    xs = _inputs(n, dim)
    dropped = set(np.random.default_rng(7).choice(n, round(fraction * n), replace=False).tolist())
    result, server, seen, _ = _run(xs, params.degree, params.threshold, dropped)
    alive = [i for i in range(n) if i not in dropped]
    assert server.dropped == sorted(dropped) and server.survivors == alive
    assert np.abs(result - xs[alive].sum(0)).max() <= _tol(n, len(alive))
    if dropped:
        assert np.abs(result - xs.sum(0)).max() > 0.1  # the dropped inputs are not in it
    # Each client shared with, and masked against, its k neighbours only.
    for u, msg in seen["shares_up"].items():
        assert {int(k[3:]) for k in msg} == set(server.neighbours[u])
        assert len(msg) == params.degree
    for msg in seen["unmask"].values():  # never both secrets of one client
        b_owners = {k[2:] for k in msg if k.startswith("b/")}
        s_owners = {k[2:] for k in msg if k.startswith("s/")}
        assert not b_owners & s_owners and {int(v) for v in s_owners} <= dropped


def test_in_process_sum_matches_plain_sum_and_is_reproducible() -> None:
    xs = _inputs(40, 300, seed=3) * 2
    total, nbytes = secure_sum_plus(xs, 0.05, 0.1, [3, 17, 25], np.random.default_rng(0))
    alive = [i for i in range(40) if i not in (3, 17, 25)]
    assert np.abs(total - xs[alive].sum(0)).max() <= _tol(40, 37, float(np.abs(xs).max()))
    again, nbytes2 = secure_sum_plus(xs, 0.05, 0.1, [3, 17, 25], np.random.default_rng(0))
    assert np.array_equal(total, again) and nbytes == nbytes2
    with pytest.raises(ConfigError, match="both"):
        secure_sum_plus(xs, 0.05, 0.1, degree=10)


def test_neighbourhood_below_threshold_is_an_error_not_a_wrong_sum() -> None:
    n = 20
    xs = _inputs(n, 50)
    # The same seed draws the same keys and graph seed, so the graph of a clean run is the
    # graph of the runs below.
    _, server, _, _ = _run(xs, 4, 4)
    assert all(len(vs) == 4 for vs in server.neighbours.values())
    # Client 0 keeps itself and 2 of its 4 neighbours: 3 < t = 4, although 18 of 20 survive.
    with pytest.raises(ProtocolError, match=r"^only 3 clients of client \d+'s neighbourhood "
                                            r"sent masked inputs, fewer than the threshold 4"):
        _run(xs, 4, 4, drop_before_masking=set(server.neighbours[0][:2]))
    # Client 5 and two of its neighbours stop answering in the unmasking round: 2 shares of
    # its self-mask seed reach the server.
    with pytest.raises(ProtocolError, match=r"^only 2 shares of client 5's self-mask seed, "
                                            r"fewer than the threshold 4$"):
        _run(xs, 4, 4, drop_before_unmasking=set(server.neighbours[5][:2]) | {5})


def test_server_sees_no_unmasked_vector() -> None:
    n, dim, degree = 30, 20_000, 6
    xs = np.zeros((n, dim))  # the most structured input: the zero vector, and one constant
    xs[1] = 0.5
    cfg = SecAggPlusConfig(dim=dim, threshold=4, max_clients=n, degree=degree)
    encoded = [cfg.encoder.encode(x) for x in xs]
    arrays: list[np.ndarray] = []

    def spy(name: str, msgs: dict[int, Payload]) -> dict[int, Payload]:
        for msg in msgs.values():
            arrays.extend(v for v in msg.values() if isinstance(v, np.ndarray))
        return msgs

    result, server, seen, rec = _run(xs, degree, 4, drop_before_masking={7}, hook=spy)
    arrays.extend(seen["server_state"])
    assert np.abs(result - xs.sum(0)).max() <= _tol(n, n - 1)
    assert sum(a.shape == (dim,) for a in arrays) >= n - 1  # the masked inputs were inspected
    for arr in arrays:
        for enc in encoded:
            assert arr.shape != enc.shape or np.mean(arr == enc) < 1e-3
    pub = {u: X25519PrivateKey.from_private_bytes(d[1]).public_key().public_bytes_raw()
           for u, d in rec.draws.items() if u >= 0}
    for u, msg in seen["masked"].items():
        y = msg["y"]
        counts = np.bincount((y >> 28).astype(np.int64), minlength=16)
        assert ((counts - dim / 16) ** 2 / (dim / 16)).sum() < 50  # uniform; p < 1e-5 to fail
        # The masks are real: removing PRG(b_u) and the k pairwise masks with u's neighbours,
        # from u's true secrets, gives exactly its encoded input.
        s_sk, b_seed = rec.draws[u][1], rec.draws[u][2]
        unmasked = y.copy()
        prg_accumulate(unmasked, b_seed, -1)
        mine = X25519PrivateKey.from_private_bytes(s_sk)
        for v in server.neighbours[u]:
            prg_accumulate(unmasked, _kdf(mine, pub[v], _MASK_INFO + _pair(u, v)),
                           -_mask_sign(u, v))
        np.testing.assert_array_equal(unmasked, encoded[u])
    for msg in seen["unmask"].values():  # unmasking answers are shares (bytes) only
        assert all(isinstance(v, bytes) for v in msg.values())


def test_client_refuses_keys_outside_its_neighbourhood() -> None:
    def extra_key(name: str, msgs: dict[int, Payload]) -> dict[int, Payload]:
        if name == "keys_down":
            strangers = sorted(set(range(10)) - {int(k[5:]) for k in msgs[0] if
                                                 k.startswith("c_pk/")})
            msgs[0][f"c_pk/{strangers[0]}"] = msgs[strangers[0]][f"c_pk/{strangers[0]}"]
            msgs[0][f"s_pk/{strangers[0]}"] = msgs[strangers[0]][f"s_pk/{strangers[0]}"]
        return msgs

    with pytest.raises(ProtocolError, match="client 0: the server sent keys of clients that "
                                            "are not exactly my neighbourhood"):
        _run(_inputs(10, 5), 4, 3, hook=extra_key)


def test_client_state_round_trips() -> None:
    cfg = SecAggPlusConfig(dim=3, threshold=2, max_clients=5, degree=2)
    client = SecAggPlusClient(1, cfg)
    client.advertise_keys()
    again = SecAggPlusClient.from_state(client.export_state())
    assert again.config == cfg and again.export_state() == client.export_state()


def test_harary_graph() -> None:
    ids = [3, 8, 11, 20, 21, 40, 41, 50, 77]
    g = harary_neighbours(bytes(range(32)), ids, 4)
    assert sorted(g) == ids
    assert all(len(vs) == 4 and u not in vs for u, vs in g.items())
    assert all(u in g[v] for u, vs in g.items() for v in vs)  # undirected
    assert g == harary_neighbours(bytes(range(32)), reversed(ids), 4)  # order-free
    assert g != harary_neighbours(bytes(32), ids, 4)  # the seed relabels the ring
    assert harary_neighbours(bytes(32), ids, 8) == {u: [v for v in ids if v != u] for u in ids}
    with pytest.raises(ConfigError, match="even degree"):
        harary_neighbours(bytes(32), ids, 3)
    with pytest.raises(ConfigError, match="32 bytes"):
        harary_neighbours(bytes(8), ids, 4)


def test_degree_formula_meets_its_bounds_and_grows_logarithmically() -> None:
    degrees = {}
    for n in (200, 1_000, 10_000, 100_000):
        p = secaggplus_parameters(n, 0.05, 0.1)
        degrees[n] = p.degree
        assert p.degree % 2 == 0 and 2 <= p.threshold <= p.degree + 1
        assert p.log2_security_failure <= -40 and p.log2_correctness_failure <= -30
        # The threshold is the largest correct one: one more breaks correctness.
        corrupt, dropped = math.ceil(0.05 * n), math.ceil(0.1 * n)
        worse = math.log2(n) + _log2_upper_tail(n - 1, dropped, p.degree,
                                                p.degree - p.threshold)
        assert worse > -30
        assert math.log2(n) + _log2_upper_tail(n - 1, corrupt, p.degree, p.threshold) <= -40
    assert degrees[1_000] < 50 and degrees[100_000] < 2 * degrees[1_000]
    assert secaggplus_parameters(10, 0.0, 0.1).degree < 9
    small = secaggplus_parameters(6, 0.2, 0.3)  # complete graph: exact counts
    assert small.degree == 5 and small.threshold == 3  # 5 - 2 dropped neighbours
    with pytest.raises(ConfigError, match="no SecAgg\\+ graph on 10 clients"):
        secaggplus_parameters(10, 0.5, 0.5)
    with pytest.raises(ConfigError, match="fractions"):
        secaggplus_parameters(100, 0.05, 1.0)
    with pytest.raises(ConfigError, match="at least 2"):
        secaggplus_parameters(1, 0.05, 0.1)


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="degree"):
        SecAggPlusConfig(dim=3, threshold=2, max_clients=5, degree=0)
    with pytest.raises(ConfigError, match="must be even"):
        SecAggPlusConfig(dim=3, threshold=2, max_clients=10, degree=5)
    assert SecAggPlusConfig(dim=3, threshold=2, max_clients=6, degree=5).degree == 5  # complete
    with pytest.raises(ConfigError, match="neighbourhood size 3"):
        SecAggPlusConfig(dim=3, threshold=4, max_clients=5, degree=2)
