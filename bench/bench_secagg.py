"""Benchmark secure aggregation end to end, in process: Bonawitz et al. 2017
(fedrec.privacy.secagg) against SecAgg+ (Bell et al. 2020, fedrec.privacy.secagg_plus).

    python bench/bench_secagg.py --clients 200 --dim 100000 --dropout 0.1
    python bench/bench_secagg.py --clients 1000 --dim 10000000 --dropout 0.1 --variant secagg+
    python bench/bench_secagg.py --clients 1000 --dim 10000000 --one-client

Clients drop after ``share_keys`` (the costly case: the server must reconstruct their mask keys
and regenerate their pairwise masks with their surviving peers). Prints, per variant, per-client
masking time (the ``masked_input_collection`` step: encoding plus every PRG expansion) and the
other steps, per-client traffic, server time, and checks the decoded sum against the plain
float64 sum. Keys, seeds and nonces come from os.urandom as in a deployment; only the inputs and
the dropouts are seeded. Clients run one after another (a deployment runs them in parallel), and
their masked vectors are handed to the server one at a time, so memory stays at a few vectors.

SecAgg+'s degree ``k`` and threshold ``t`` come from ``--corrupt`` and ``--graph-dropout``
(default ``--dropout``) by fedrec.privacy.secagg_graph's formula (2^-40 security, 2^-30
correctness); Bonawitz's threshold is ``floor(2n/3) + 1`` unless ``--threshold`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedrec.core.codec import Payload, payload_size
from fedrec.privacy import (
    SecAggClient,
    SecAggConfig,
    SecAggPlusClient,
    SecAggPlusServer,
    SecAggServer,
    secaggplus_config,
)
from fedrec.privacy.prg import SEED_BYTES, prg_accumulate
from fedrec.privacy.secagg import _MASK_INFO, _kdf, _mask_sign, _pair


def client_input(seed: int, client: int, dim: int, clip: float) -> np.ndarray:
    return np.random.default_rng([seed, client]).uniform(-clip, clip, dim).astype(np.float32)


class Meter:
    """Per-client compute time per step and bytes each way."""

    def __init__(self) -> None:
        self.time: dict[str, list[float]] = defaultdict(list)
        self.up: dict[int, int] = defaultdict(int)
        self.down: dict[int, int] = defaultdict(int)

    def run(self, step: str, client: int, inbox: Payload | None,
            call: Callable[[], Payload]) -> Payload:
        if inbox is not None:
            self.down[client] += payload_size(inbox)
        start = time.perf_counter()
        out = call()
        self.time[step].append(time.perf_counter() - start)
        self.up[client] += payload_size(out)
        return out


class LazyMasked(Mapping[int, Payload]):
    """The masked inputs, each computed when the server reads it (the server reads each
    value once, adding it to its running sum), so that at most one input vector and one
    masked vector exist at a time; the clients' time is metered apart from the server's."""

    def __init__(self, inbox: Mapping[int, Payload], clients: Mapping[int, SecAggClient],
                 meter: Meter, args: argparse.Namespace, expected: np.ndarray) -> None:
        self._inbox, self._clients, self._meter = inbox, clients, meter
        self._args, self._expected = args, expected
        self.client_seconds = 0.0

    def __len__(self) -> int:
        return len(self._inbox)

    def __iter__(self) -> Iterator[int]:
        return iter(self._inbox)

    def __getitem__(self, i: int) -> Payload:
        a = self._args
        start = time.perf_counter()  # all of this is the clients' time, not the server's
        x = client_input(a.seed, i, a.dim, a.clip)  # not in the client's metered time either
        np.add(self._expected, x, out=self._expected)
        out = self._meter.run("masked_input_collection", i, self._inbox[i],
                              lambda: self._clients[i].masked_input_collection(self._inbox[i], x))
        self.client_seconds += time.perf_counter() - start
        return out


def run_variant(variant: str, args: argparse.Namespace, dropped: set[int]) -> dict[str, Any]:
    n = args.clients
    cfg: SecAggConfig
    if variant == "secagg+":
        cfg = secaggplus_config(args.dim, n, args.corrupt, args.graph_dropout, args.clip,
                                args.modulus_bits)
        clients: dict[int, SecAggClient] = {i: SecAggPlusClient(i, cfg) for i in range(n)}
        server: SecAggServer = SecAggPlusServer(cfg)  # type: ignore[arg-type]
        peers = cfg.degree  # type: ignore[attr-defined]
    else:
        threshold = args.threshold if args.threshold is not None else 2 * n // 3 + 1
        cfg = SecAggConfig(dim=args.dim, threshold=threshold, max_clients=n, clip=args.clip,
                           modulus_bits=args.modulus_bits)
        clients = {i: SecAggClient(i, cfg) for i in range(n)}
        server = SecAggServer(cfg)
        peers = n - 1
    meter = Meter()
    server_time: dict[str, float] = {}
    expected = np.zeros(args.dim)

    def timed_server(step: str, msgs: Mapping[int, Payload], client_seconds: float = 0.0) -> Any:
        start = time.perf_counter()
        result = getattr(server, step)(msgs)
        server_time[step] = time.perf_counter() - start - client_seconds
        return result

    inbox: dict[int, Any] = timed_server("advertise_keys", {
        i: meter.run("advertise_keys", i, None, c.advertise_keys) for i, c in clients.items()})
    inbox = timed_server("share_keys", {
        i: meter.run("share_keys", i, m, lambda i=i, m=m: clients[i].share_keys(m))
        for i, m in inbox.items()})
    lazy = LazyMasked({i: m for i, m in inbox.items() if i not in dropped}, clients, meter,
                      args, expected)
    start = time.perf_counter()
    inbox = server.masked_input_collection(lazy)
    server_time["masked_input_collection"] = time.perf_counter() - start - lazy.client_seconds
    total = timed_server("unmasking", {
        i: meter.run("unmasking", i, m, lambda i=i, m=m: clients[i].unmasking(m))
        for i, m in inbox.items()})

    err = float(np.abs(total - expected).max())
    bound = len(server.survivors) * 0.5 / cfg.encoder.scale
    masking = np.array(meter.time["masked_input_collection"])
    return {
        "variant": variant, "clients": n, "dim": args.dim, "threshold": cfg.threshold,
        "peers_per_client": peers, "dropped": len(dropped), "survivors": len(server.survivors),
        "modulus_bits": args.modulus_bits,
        "client_mean_s": {k: float(np.mean(v)) for k, v in meter.time.items()},
        "client_masking_mean_s": float(masking.mean()),
        "client_masking_max_s": float(masking.max()),
        "client_total_mean_s": float(sum(np.mean(v) for v in meter.time.values())),
        "server_s": server_time,
        "bytes_up_per_client_mean": float(np.mean(list(meter.up.values()))),
        "bytes_down_per_client_mean": float(np.mean(list(meter.down.values()))),
        "bytes_total": int(sum(meter.up.values()) + sum(meter.down.values())),
        "vector_bytes": args.dim * cfg.encoder.dtype(0).itemsize,
        "max_abs_error": err, "error_bound": bound, "correct": err <= bound + 1e-9,
    }


def one_client_masking(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    """``--one-client``: the masking arithmetic of one client at full size, without running
    the other clients: what masked_input_collection does (fixed-point encoding, one X25519
    agreement + HKDF per peer, the self mask and one AES-CTR expansion per peer), with fresh
    keys and seeds, for ``n - 1`` peers (Bonawitz) or the formula's ``k`` (SecAgg+)."""
    n = args.clients
    if variant == "secagg+":
        cfg: SecAggConfig = secaggplus_config(args.dim, n, args.corrupt, args.graph_dropout,
                                              args.clip, args.modulus_bits)
        peers = cfg.degree  # type: ignore[attr-defined]
    else:
        cfg = SecAggConfig(dim=args.dim, threshold=2 * n // 3 + 1, max_clients=n,
                           clip=args.clip, modulus_bits=args.modulus_bits)
        peers = n - 1
    mine = X25519PrivateKey.generate()
    peer_keys = [X25519PrivateKey.generate().public_key().public_bytes_raw()
                 for _ in range(peers)]
    x = client_input(args.seed, 0, args.dim, args.clip)
    start = time.perf_counter()
    y = cfg.encoder.encode(x)
    prg_accumulate(y, os.urandom(SEED_BYTES), +1)
    for v, public in enumerate(peer_keys, start=1):
        seed = _kdf(mine, public, _MASK_INFO + _pair(0, v))
        prg_accumulate(y, seed, _mask_sign(0, v))
    cfg.encoder.reduce(y)
    seconds = time.perf_counter() - start
    return {"variant": variant, "clients": n, "dim": args.dim, "peers_per_client": peers,
            "threshold": cfg.threshold, "one_client_masking_s": seconds,
            "masked_vector_bytes": int(y.nbytes)}


def report(f: dict[str, Any]) -> None:
    mb = 1e6
    print(f"{f['variant']}: {f['clients']} clients, dim {f['dim']}, {f['peers_per_client']} "
          f"peers per client, threshold {f['threshold']}, {f['dropped']} dropped after "
          f"share_keys, ring 2^{f['modulus_bits']}")
    for step, sec in f["client_mean_s"].items():
        print(f"  client {step:<24} mean {sec * 1e3:9.1f} ms")
    print(f"  client masking time: mean {f['client_masking_mean_s']:.3f} s, "
          f"max {f['client_masking_max_s']:.3f} s; all steps {f['client_total_mean_s']:.3f} s")
    for step, sec in f["server_s"].items():
        print(f"  server {step:<24} {sec:9.3f} s")
    print(f"  per client: up {f['bytes_up_per_client_mean'] / mb:.3f} MB, down "
          f"{f['bytes_down_per_client_mean'] / mb:.3f} MB (mean; the masked vector is "
          f"{f['vector_bytes'] / mb:.3f} MB)")
    print(f"  sum check: max |error| {f['max_abs_error']:.3e} (bound {f['error_bound']:.3e}) "
          f"-> {'OK' if f['correct'] else 'WRONG'}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Benchmark fedrec secure aggregation.")
    p.add_argument("--clients", type=int, default=100)
    p.add_argument("--dim", type=int, default=1_000_000)
    p.add_argument("--dropout", type=float, default=0.1, help="fraction dropping after sharing")
    p.add_argument("--variant", choices=("bonawitz", "secagg+", "both"), default="both")
    p.add_argument("--threshold", type=int, default=None,
                   help="bonawitz threshold; default floor(2n/3) + 1")
    p.add_argument("--corrupt", type=float, default=0.05,
                   help="secagg+: fraction of clients colluding with the server")
    p.add_argument("--graph-dropout", type=float, default=None,
                   help="secagg+: dropout fraction the graph tolerates; default --dropout")
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--modulus-bits", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--one-client", action="store_true",
                   help="time one client's masking arithmetic only (full sizes on one core)")
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = p.parse_args(argv)
    if args.graph_dropout is None:
        args.graph_dropout = args.dropout
    variants = ("bonawitz", "secagg+") if args.variant == "both" else (args.variant,)
    if args.one_client:
        rows = [one_client_masking(v, args) for v in variants]
        for r in rows:
            print(f"{r['variant']}: one client of {r['clients']}, dim {r['dim']}, "
                  f"{r['peers_per_client']} peers: masking {r['one_client_masking_s']:.3f} s, "
                  f"masked vector {r['masked_vector_bytes'] / 1e6:.1f} MB")
        if args.json:
            print(json.dumps(rows))
        return 0

    rng = np.random.default_rng(args.seed)
    n = args.clients
    dropped = set(rng.choice(n, size=round(args.dropout * n), replace=False).tolist())
    figures = [run_variant(v, args, dropped) for v in variants]
    for f in figures:
        report(f)
    if len(figures) == 2:
        b, s = figures
        print(f"secagg+ / bonawitz per client: masking time "
              f"{s['client_masking_mean_s'] / b['client_masking_mean_s']:.3f}x, all steps "
              f"{s['client_total_mean_s'] / b['client_total_mean_s']:.3f}x, bytes up "
              f"{s['bytes_up_per_client_mean'] / b['bytes_up_per_client_mean']:.3f}x, down "
              f"{s['bytes_down_per_client_mean'] / b['bytes_down_per_client_mean']:.3f}x")
    if args.json:
        print(json.dumps(figures))
    return 0 if all(f["correct"] for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
