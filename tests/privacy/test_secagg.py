from collections.abc import Callable

import numpy as np
import pytest

from fedrec.core.codec import Payload, decode, encode
from fedrec.errors import ConfigError, ProtocolError
from fedrec.privacy import (
    SecAggClient,
    SecAggConfig,
    SecAggServer,
    secure_sum,
)
from fedrec.privacy.prg import prg_expand
from fedrec.privacy.shamir import reconstruct_secret

Hook = Callable[[str, dict[int, Payload]], dict[int, Payload]]


def _run(
    xs: np.ndarray,
    threshold: int,
    drop_before_masking: set[int] = frozenset(),  # type: ignore[assignment]
    drop_before_unmasking: set[int] = frozenset(),  # type: ignore[assignment]
    hook: Hook | None = None,
    clip: float = 1.0,
    seed: int = 0,
) -> tuple[np.ndarray, SecAggServer, dict[str, dict[int, Payload]]]:
    """Drive the four rounds by hand; every message goes through the wire format."""
    rng = np.random.default_rng(seed)
    cfg = SecAggConfig(dim=xs.shape[1], threshold=threshold, max_clients=len(xs), clip=clip)
    clients = {i: SecAggClient(i, cfg, rng.bytes) for i in range(len(xs))}
    server = SecAggServer(cfg)
    seen: dict[str, dict[int, Payload]] = {}

    def wire(name: str, msgs: dict[int, Payload]) -> dict[int, Payload]:
        msgs = {i: decode(encode(m)) for i, m in msgs.items()}
        state = [v.copy() for v in vars(server).values() if isinstance(v, np.ndarray)]
        seen.setdefault("server_state", {})[len(seen)] = {str(i): a for i, a in enumerate(state)}
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
    result = server.unmasking(
        wire("unmask", {i: clients[i].unmasking(m)
                        for i, m in down.items() if i not in drop_before_unmasking}))
    return result, server, seen


def _inputs(n: int, dim: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, dim))


def _tol(cfg_n: int, m: int, clip: float = 1.0) -> float:
    scale = (2**31 - 1) // cfg_n / clip
    return m * 0.5 / scale + 1e-12


def test_sum_without_dropout() -> None:
    xs = _inputs(5, 300)
    result, server, _ = _run(xs, threshold=3)
    assert np.abs(result - xs.sum(0)).max() <= _tol(5, 5)
    assert server.survivors == [0, 1, 2, 3, 4] and server.dropped == []


@pytest.mark.parametrize("dropped", [{2}, {0, 6}, {1, 3, 5}])
def test_dropouts_after_sharing_are_excluded(dropped: set[int]) -> None:
    xs = _inputs(7, 200)
    result, server, seen = _run(xs, threshold=4, drop_before_masking=dropped)
    alive = [i for i in range(7) if i not in dropped]
    assert np.abs(result - xs[alive].sum(0)).max() <= _tol(7, len(alive))
    assert np.abs(result - xs.sum(0)).max() > 0.1  # the dropped inputs are really not in it
    assert server.dropped == sorted(dropped)
    for msg in seen["unmask"].values():  # never both secrets of one client
        b_owners = {k[2:] for k in msg if k.startswith("b/")}
        s_owners = {k[2:] for k in msg if k.startswith("s/")}
        assert not b_owners & s_owners
        assert s_owners == {str(d) for d in dropped}


def test_dropout_during_unmasking_keeps_inputs() -> None:
    xs = _inputs(6, 100)
    result, _, _ = _run(xs, threshold=3, drop_before_masking={0}, drop_before_unmasking={4, 5})
    assert np.abs(result - xs[1:].sum(0)).max() <= _tol(6, 5)


def test_too_few_survivors_fails() -> None:
    xs = _inputs(5, 50)
    with pytest.raises(ProtocolError, match="only 3 clients sent masked inputs, fewer than the "
                                            "threshold 4"):
        _run(xs, threshold=4, drop_before_masking={1, 2})
    with pytest.raises(ProtocolError, match="answered the unmasking round"):
        _run(xs, threshold=4, drop_before_unmasking={0, 3})


def test_masks_cancel_exactly_in_the_ring() -> None:
    # sum(y_u) - sum(PRG(b_u)) == sum(encode(x_u)) mod 2^32: the pairwise masks cancel.
    xs = _inputs(6, 500)
    _, server, seen = _run(xs, threshold=4)
    cfg = server.config
    total = np.zeros(500, dtype=np.uint32)
    for u, msg in seen["masked"].items():
        total += msg["y"]
        b_u = reconstruct_secret({w: m[f"b/{u}"] for w, m in seen["unmask"].items()}, 4)
        total -= prg_expand(b_u, 500, np.uint32)
    expected = np.zeros(500, dtype=np.uint32)
    for x in xs:
        expected += cfg.encoder.encode(x)
    assert np.array_equal(total, expected)


def test_server_never_sees_an_unmasked_input() -> None:
    n, dim = 5, 20_000
    xs = np.zeros((n, dim))  # the most structured input: all encodings are the zero vector
    xs[1] = 0.5
    cfg_encoder = SecAggConfig(dim=dim, threshold=3, max_clients=n).encoder
    encoded = [cfg_encoder.encode(x) for x in xs]
    snapshots: list[np.ndarray] = []

    def spy(name: str, msgs: dict[int, Payload]) -> dict[int, Payload]:
        for msg in msgs.values():
            snapshots.extend(v for v in msg.values() if isinstance(v, np.ndarray))
        return msgs

    _, _, seen = _run(xs, threshold=3, hook=spy, drop_before_masking={4})
    for state in seen["server_state"].values():  # the server's arrays after every step
        snapshots.extend(state.values())
    assert any(a.shape == (dim,) for a in snapshots)  # the masked sum was inspected
    for arr in snapshots:
        for enc in encoded:
            assert arr.shape != enc.shape or np.mean(arr == enc) < 1e-3
    for msg in seen["masked"].values():
        y = msg["y"].astype(np.float64) / 2**32
        assert abs(y.mean() - 0.5) < 0.01  # uniform on [0, 1)
        counts = np.bincount((msg["y"] >> 28).astype(np.int64), minlength=16)
        chi2 = ((counts - dim / 16) ** 2 / (dim / 16)).sum()
        assert chi2 < 50  # 15 d.o.f.: p < 1e-5 to fail by chance


def test_tampered_share_fails_authentication() -> None:
    def tamper(name: str, msgs: dict[int, Payload]) -> dict[int, Payload]:
        if name == "shares_down":
            blob = bytearray(msgs[2]["from/0"])
            blob[-1] ^= 1
            msgs[2]["from/0"] = bytes(blob)
        return msgs

    with pytest.raises(ProtocolError, match=r"client 2: share ciphertext from client 0 failed "
                                            r"authentication"):
        _run(_inputs(4, 10), threshold=3, hook=tamper)


def test_misrouted_share_fails_authentication() -> None:
    def swap(name: str, msgs: dict[int, Payload]) -> dict[int, Payload]:
        if name == "shares_down":  # give client 1 the ciphertext client 0 meant for client 3
            msgs[1]["from/0"] = msgs[3]["from/0"]
        return msgs

    with pytest.raises(ProtocolError, match="failed authentication"):
        _run(_inputs(4, 10), threshold=3, hook=swap)


def test_client_refuses_inconsistent_survivor_list_and_replays() -> None:
    cfg = SecAggConfig(dim=4, threshold=2, max_clients=3)
    clients = [SecAggClient(i, cfg) for i in range(3)]
    server = SecAggServer(cfg)
    down = server.advertise_keys({c.client_id: c.advertise_keys() for c in clients})
    down = server.share_keys({i: clients[i].share_keys(m) for i, m in down.items()})
    for i, m in down.items():
        clients[i].masked_input_collection(m, np.zeros(4))
    with pytest.raises(ProtocolError, match="not a subset"):
        clients[0].unmasking({"survivors": np.array([0, 1, 7])})
    with pytest.raises(ProtocolError, match="out of order"):  # at most one unmasking answer
        clients[0].unmasking({"survivors": np.array([0, 1])})
    with pytest.raises(ProtocolError, match="not listed as a survivor"):
        clients[1].unmasking({"survivors": np.array([0, 2])})
    with pytest.raises(ProtocolError, match="out of order"):
        server.unmasking({})


def test_secure_sum_matches_plain_sum_and_is_reproducible() -> None:
    xs = _inputs(8, 1000, seed=3) * 3
    total, nbytes = secure_sum(xs, threshold=5, dropout_ids=[2, 7],
                               rng=np.random.default_rng(0))
    alive = [0, 1, 3, 4, 5, 6]
    clip = float(np.abs(xs).max())
    assert np.abs(total - xs[alive].sum(0)).max() <= _tol(8, 6, clip)
    again, nbytes2 = secure_sum(xs, 5, [2, 7], np.random.default_rng(0))
    assert np.array_equal(total, again) and nbytes == nbytes2
    # 8 masked vectors of 4 bytes per element dominate the transcript
    assert 6 * 4000 < nbytes < 6 * 4000 + 50_000


@pytest.mark.parametrize("bits", [16, 64])
def test_secure_sum_other_moduli(bits: int) -> None:
    xs = _inputs(4, 100)
    total, _ = secure_sum(xs, 3, [1], modulus_bits=bits, clip=1.0)
    level = min((2 ** (bits - 1) - 1) // 4, 2**53)
    assert np.abs(total - xs[[0, 2, 3]].sum(0)).max() <= 3 * 0.5 / level + 1e-12


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="threshold"):
        SecAggConfig(dim=10, threshold=1, max_clients=5)
    with pytest.raises(ConfigError, match="threshold"):
        SecAggConfig(dim=10, threshold=6, max_clients=5)
    with pytest.raises(ConfigError, match="dim"):
        SecAggConfig(dim=0, threshold=2, max_clients=5)
    cfg = SecAggConfig(dim=3, threshold=2, max_clients=2)
    with pytest.raises(ConfigError, match="client ids"):
        SecAggClient(-1, cfg)
