"""Benchmark the secure aggregation protocol (fedrec.privacy.secagg) end to end, in process.

    python bench/bench_secagg.py --clients 100 --dim 1000000 --dropout 0.1

Clients drop after ``share_keys`` (the costly case: the server must reconstruct their mask keys
and regenerate their pairwise masks with every survivor). Prints per-client compute time and
traffic, server time, and checks the decoded sum against the plain float64 sum. Keys, seeds and
nonces come from os.urandom as in a deployment; only the inputs are seeded. Clients run one
after another, so "protocol compute" is the sum of every party's time (a real deployment runs
clients in parallel).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from fedrec.privacy import Message, SecAggClient, SecAggConfig, SecAggServer, serialized_size


def client_input(seed: int, client: int, dim: int, clip: float) -> np.ndarray:
    return np.random.default_rng([seed, client]).uniform(-clip, clip, dim).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Benchmark fedrec secure aggregation.")
    p.add_argument("--clients", type=int, default=100)
    p.add_argument("--dim", type=int, default=1_000_000)
    p.add_argument("--dropout", type=float, default=0.1, help="fraction dropping after sharing")
    p.add_argument("--threshold", type=int, default=None, help="default: floor(2n/3) + 1")
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--modulus-bits", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = p.parse_args(argv)

    n = args.clients
    threshold = args.threshold if args.threshold is not None else 2 * n // 3 + 1
    cfg = SecAggConfig(dim=args.dim, threshold=threshold, max_clients=n, clip=args.clip,
                       modulus_bits=args.modulus_bits)
    rng = np.random.default_rng(args.seed)
    dropped = set(rng.choice(n, size=round(args.dropout * n), replace=False).tolist())
    clients = {i: SecAggClient(i, cfg) for i in range(n)}
    server = SecAggServer(cfg)
    up: dict[int, int] = defaultdict(int)
    down: dict[int, int] = defaultdict(int)
    client_time: dict[str, list[float]] = defaultdict(list)
    server_time: dict[str, float] = {}
    expected = np.zeros(args.dim)

    def run_clients(step: str, inbox: dict[int, Message | None]) -> dict[int, Message]:
        out = {}
        for i, msg in inbox.items():
            call: Callable[[], Message]
            if step == "advertise_keys":
                call = clients[i].advertise_keys
            elif step == "masked_input_collection":
                x = client_input(args.seed, i, args.dim, args.clip)  # not timed
                np.add(expected, x, out=expected)
                call = lambda i=i, msg=msg, x=x: clients[i].masked_input_collection(msg, x)  # noqa: E731
            else:
                call = lambda i=i, msg=msg: getattr(clients[i], step)(msg)  # noqa: E731
            if msg is not None:
                down[i] += serialized_size(msg)
            start = time.perf_counter()
            out[i] = call()
            client_time[step].append(time.perf_counter() - start)
            up[i] += serialized_size(out[i])
        return out

    def run_server(step: str, msgs: dict[int, Message]) -> Any:
        start = time.perf_counter()
        result = getattr(server, step)(msgs)
        server_time[step] = time.perf_counter() - start
        return result

    inbox: dict[int, Any] = dict.fromkeys(clients)
    for step in ("advertise_keys", "share_keys", "masked_input_collection"):
        if step == "masked_input_collection":
            inbox = {i: m for i, m in inbox.items() if i not in dropped}
        inbox = run_server(step, run_clients(step, inbox))
    total = run_server("unmasking", run_clients("unmasking", inbox))

    err = float(np.abs(total - expected).max())
    bound = len(server.survivors) * 0.5 / cfg.encoder.scale
    ok = err <= bound + 1e-9
    masking = np.array(client_time["masked_input_collection"])
    per_client = {k: float(np.mean(v)) for k, v in client_time.items()}
    compute = sum(map(sum, client_time.values())) + sum(server_time.values())
    mb = 1e6
    figures = {
        "clients": n, "dim": args.dim, "threshold": threshold, "dropped": len(dropped),
        "survivors": len(server.survivors), "modulus_bits": args.modulus_bits,
        "client_mean_s": per_client,
        "client_masking_mean_s": float(masking.mean()),
        "client_masking_max_s": float(masking.max()),
        "server_s": server_time,
        "bytes_up_per_client_mean": float(np.mean(list(up.values()))),
        "bytes_down_per_client_mean": float(np.mean(list(down.values()))),
        "bytes_total": int(sum(up.values()) + sum(down.values())),
        "protocol_compute_s": compute,
        "max_abs_error": err, "error_bound": bound, "correct": ok,
    }
    print(f"secagg: {n} clients, dim {args.dim}, threshold {threshold}, "
          f"{len(dropped)} dropped after share_keys, ring 2^{args.modulus_bits}")
    for step, sec in per_client.items():
        print(f"  client {step:<24} mean {sec * 1e3:9.1f} ms")
    print(f"  client masking time: mean {masking.mean():.3f} s, max {masking.max():.3f} s")
    for step, sec in server_time.items():
        print(f"  server {step:<24} {sec:9.3f} s")
    print(f"  per client: up {figures['bytes_up_per_client_mean'] / mb:.3f} MB, "
          f"down {figures['bytes_down_per_client_mean'] / mb:.3f} MB (mean)")
    print(f"  total bytes {figures['bytes_total'] / mb:.1f} MB; protocol compute {compute:.1f} s "
          "(all parties, sequential)")
    print(f"  sum check: max |error| {err:.3e} (bound {bound:.3e}) -> {'OK' if ok else 'WRONG'}")
    if args.json:
        print(json.dumps(figures))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
